"""Recalibration page: fit recalibrators on calibration rows, judge them on test rows."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from core.analyses.findings import recalibration_finding
from core.base.export import safe_csv
from core.estimators import ESTIMATORS
from core.recalibration import RECALIBRATORS
from dashboard import calls, errors, state, widgets
from dashboard.sections import recalibration as sections
from dashboard.text import literal

PROTOCOL_LABELS = {
    "fraction": "Random split (calibration fraction)",
    "column": "The data's split column",
    "repeated": "Repeated random splits",
    "cross-fit": "Cross-fitting (out-of-fold)",
    "in-sample": "In-sample (fit and judge on the same rows)",
}
DEFAULT_METHODS = ["temperature", "platt", "histogram-umd"]
RESULT_KEY = "recal_request"


def _label(name: str) -> str:
    return RECALIBRATORS.get(name).label


st.title("Recalibration", anchor=False)
st.caption(
    "Fit recalibrators on calibration rows and judge them on rows they never saw: reliability "
    "before and after, calibration errors with bootstrap intervals, Brier score, log loss and "
    "accuracy, and, for Meta-Cal, coverage. Lens, binning, norm, seed and intervals come from "
    "the sidebar."
)

pred = state.require_predictions()
config = state.require_config()

# the ℓp-scale estimators (binned, smooth): the table's calibration errors share one scale
binned = ESTIMATORS.names(lp_scale=True)
default_est = ["plugin", "debiased"]
if config.estimator in binned and config.estimator not in default_est:
    default_est.insert(0, config.estimator)
protocols = [p for p in PROTOCOL_LABELS if p != "column" or pred.split is not None]
summary = calls.summary(pred)

with st.form("recal_form"):
    methods = widgets.choices(
        st,
        "Recalibrators",
        RECALIBRATORS.names(),
        default=DEFAULT_METHODS,
        format_func=_label,
        key="recal_methods",
        help="; ".join(f"{e.label}: {e.description}" for e in RECALIBRATORS),
    )
    c1, c2, c3 = st.columns(3)
    protocol = widgets.choice(
        c1,
        "Split protocol",
        protocols,
        default="column",
        format_func=PROTOCOL_LABELS.get,
        key="recal_protocol",
    )
    fraction = widgets.slider(c2, "Calibration fraction", 0.1, 0.9, 0.5, 0.05, key="recal_fraction")
    repeats = widgets.number_input(c3, "Repeats / folds", 2, 50, 5, key="recal_repeats")
    estimators = widgets.choices(
        st,
        "Calibration errors in the table",
        binned,
        default=[e for e in default_est if e in binned],
        format_func=lambda n: ESTIMATORS.get(n).label,
        key="recal_estimators",
    )
    with st.expander("Recalibrator options"):
        o1, o2 = st.columns(2)
        rec_bins = widgets.number_input(
            o1,
            "Bins of the binning recalibrators",
            1,
            500,
            10,
            key="recal_bins",
            help="n_bins of every recalibrator that takes it: "
            + ", ".join(e.label for e in RECALIBRATORS if "n_bins" in e.options),
        )
        eval_binning = widgets.choice(
            o2,
            "Evaluation binning",
            ["auto", "config"],
            format_func={
                "auto": "discrete for few-valued outputs",
                "config": "the sidebar binning for all",
            }.get,
            key="recal_eval_binning",
        )
        settings = sections.recalibrator_settings(summary)
    in_sample_ok = st.checkbox(
        "I understand in-sample numbers are optimistic (only for the in-sample protocol)",
        key="recal_in_sample_ok",
    )
    submitted = st.form_submit_button("Fit and compare", type="primary")

if submitted:
    if not methods:
        st.warning("Choose at least one recalibrator.")
    elif protocol == "in-sample" and not in_sample_ok:
        st.warning("Tick the box to confirm in-sample evaluation, or choose another protocol.")
    else:
        options: dict[str, dict[str, Any]] = {}
        for name in methods:
            opt = dict(settings.get(name, {}))
            if "n_bins" in RECALIBRATORS.get(name).options:
                opt["n_bins"] = int(rec_bins)
            options[name] = opt
        st.session_state[RESULT_KEY] = {
            "digest": pred.digest,
            "request": {
                "methods": [[name, options[name]] for name in methods],
                "protocol": protocol,
                "calibration_fraction": float(fraction),
                "n_repeats": int(repeats),
                "n_folds": int(repeats),
                "estimators": list(estimators) or ["plugin"],
                "lens": config.lens if config.lens != "canonical" else "top-label",
                "binning": config.binning,
                "n_bins": int(config.n_bins),
                "norm": float(config.norm) if config.norm != float("inf") else "inf",
                "evaluation_binning": eval_binning,
                "n_resamples": int(config.n_resamples) or 1,
                "confidence_level": float(config.confidence_level),
                "seed": int(config.seed),
                "bootstrap_interval": config.bootstrap_interval,
            },
        }

saved = st.session_state.get(RESULT_KEY)
if not saved or saved["digest"] != pred.digest:
    st.info(
        "Choose recalibrators and a split protocol, then press **Fit and compare**.",
        icon=":material/info:",
    )
    st.stop()

request = saved["request"]
with errors.show_errors(stop=True):
    result = calls.recalibration(pred, json.dumps(request, sort_keys=True))

st.markdown(f"**{literal(recalibration_finding(result))}**")  # what helps most
n_eval = len(result.rows)
where = {
    "test": f"{n_eval:,} test rows the recalibrators never saw",
    "out-of-fold": f"all {n_eval:,} rows, each predicted by recalibrators fitted on the other folds",
    "in-sample": f"the same {n_eval:,} rows they were fitted on — **in-sample**, optimistic",
}[result.evaluation]
st.markdown(
    f"**{PROTOCOL_LABELS[result.protocol]}** · judged on {where} · seed {request['seed']} · "
    f"{widgets.interval_words(request['confidence_level'], request['bootstrap_interval'])} "
    f"from {request['n_resamples']:,} resamples"
)
if result.evaluation == "in-sample":
    st.warning("In-sample: these numbers use the rows the recalibrators were fitted on.")
for key, message in result.errors.items():
    st.warning(literal(f"{result.labels_of.get(key, key)} could not be fitted: {message}"))

discrete = [result.labels_of[k] for k, b in result.evaluation_binning.items() if b == "discrete"]
if discrete:
    st.info(
        f"{', '.join(discrete)} output only a few distinct values, so they are judged with "
        "**discrete** bins (one bin per distinct output). Re-binning them with "
        f"{request['binning']} bins would pool different outputs into one bin and hide or "
        "invent calibration error.",
        icon=":material/info:",
    )

st.subheader("Reliability before and after", anchor=False)
lens_view = request["lens"] if request["lens"] in ("binary", "top-label") else "top-label"
widgets.chart(calls.before_after_chart(result, lens_view, request["n_bins"]), "recal_reliability")
if request["lens"] == "classwise":
    st.caption("Classwise comparisons are drawn through the top-label lens.")

st.subheader("Comparison on held-out rows", anchor=False)
table = result.metrics.copy()
repeated = result.protocol == "repeated"


def _metrics_table(metrics: pd.DataFrame, methods: list[str]) -> tuple[pd.DataFrame, dict]:
    """Methods × each metric's value (and interval, and mean and sd over repeated splits).

    Numbers, formatted by the table; returns the table and its column config (a metric's
    extra columns headed "low", "high", "mean over splits", "sd over splits").
    """
    wide = pd.DataFrame(index=pd.Index(methods, name="method"))
    columns = {}
    extras = (
        ("low", "low"),
        ("high", "high"),
        ("mean_over_splits", "mean over splits"),
        ("sd_over_splits", "sd over splits"),
    )
    for label, part in metrics.groupby("metric_label", sort=False):
        part = part.set_index("method_label").reindex(methods)
        wide[label] = part["value"].to_numpy(dtype=float)
        for field, heading in extras:
            values = part[field].to_numpy(dtype=float)
            if np.isfinite(values).any():
                wide[f"{label} {heading}"] = values
                columns[f"{label} {heading}"] = st.column_config.NumberColumn(heading)
    return wide, columns


wide, wide_columns = _metrics_table(table, [result.labels_of[m] for m in result.methods])
widgets.table(wide, key="recal_table", column_config=wide_columns)
st.caption(
    "Value, then its bootstrap interval (low, high)"
    + (", then the mean and sd over the repeated splits" if repeated else "")
    + ". Notes: "
    + "; ".join(sorted({n for n in result.metrics.note if n and "miscoverage" not in n}))
)

st.subheader("MSE versus calibration error", anchor=False)
x_metric = request["estimators"][0]
x_label = table.loc[table.metric == x_metric, "metric_label"].iloc[0]
widgets.chart(calls.tradeoff_chart(result, x_metric, x_label), "recal_tradeoff")
st.caption("Lower left is better on both counts; bars are the bootstrap intervals.")

if result.selective:
    st.subheader("Meta-Cal: selective recalibration", anchor=False)
    for key, view in result.selective.items():
        m = view.metrics
        st.markdown(
            f"**{result.labels_of[key]}** — coverage {m.coverage:.3f} "
            f"({m.n_accepted:,} of {m.n:,} rows accepted), miscoverage {m.miscoverage:.3f}, "
            f"accuracy among accepted {m.coverage_accuracy:.3f}. Rejected rows output the "
            "uniform distribution; judge its calibration error together with its coverage."
        )
        st.caption(f"Guarantee: {view.guarantee}")
        opts = dict(next(o for n, o in request["methods"] if n == key.split(" #")[0]))
        a, b = st.columns(2)
        widgets.chart(calls.separation_chart(view), f"recal_sep_{key}", container=a)
        alpha = opts.get("alpha") if opts.get("mode", "miscoverage") == "miscoverage" else None
        widgets.chart(
            calls.threshold_chart(view, alpha=alpha, beta=opts.get("beta")),
            f"recal_thr_{key}",
            container=b,
        )
    widgets.chart(calls.coverage_chart(result), "recal_cov_acc")

st.subheader("Downloads", anchor=False)
frame = result.predictions_frame(pred.class_names)
d1, d2, d3 = st.columns(3)
widgets.download(
    d1,
    "Recalibrated predictions (CSV)",
    safe_csv(frame).encode(),
    file_name="recalibrated_predictions.csv",
    key="recal_download_csv",
)
fitted_keys = list(result.fitted)
if fitted_keys:
    pick = widgets.choice(
        d2,
        "Fitted parameters of",
        fitted_keys,
        format_func=result.labels_of.get,
        key="recal_json_pick",
    )
    widgets.download(
        d2,
        "Parameters (JSON)",
        result.parameters_json(pick).encode(),
        file_name=f"{pick.replace(' ', '_')}_parameters.json",
        key="recal_download_json",
    )
    with st.expander("Fitted parameters (first split)"):
        st.json(result.fitted[pick][0].to_dict(), expanded=False)
if d3.button(
    "Use as models on every page",
    key="recal_send",
    help="Replace the loaded data by these evaluation rows, one model per method; the sidebar "
    "model picker then switches between them. Reload the original file on the Data page.",
):
    from core.data import load_predictions

    with errors.show_errors():
        names = [str(c) for c in pred.class_names]
        new = load_predictions(
            frame.drop(columns=["row", "evaluation", "accepted"]),
            prob_columns=names,
            label_column="label",
        )
        state.set_predictions(new, source=f"recalibrated ({PROTOCOL_LABELS[result.protocol]})")
        st.success(
            f"Loaded {len(result.predictions)} models on {n_eval:,} rows: "
            + ", ".join(result.labels_of[k] for k in result.predictions)
        )
