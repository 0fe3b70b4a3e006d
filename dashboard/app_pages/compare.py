"""Compare page: several models on identical bins, paired differences, where rankings disagree."""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd
import streamlit as st

from core.analyses.calibration_tests import TESTS
from core.analyses.findings import comparison_finding
from core.analyses.model_comparison import (
    DEFAULT_METRICS,
    ModelComparison,
    metric_choices,
    parse_metric,
)
from core.base.export import safe_csv
from core.base.numbers import format_frame, format_pvalue
from core.report import DEFAULT_TEST  # the report's headline test (docs/formulas.md)
from dashboard import cache, calls, errors, state, widgets
from dashboard.text import literal

DEFAULT_RESAMPLES = 1000
AUTO = ""  # reference choice: the best model by the first metric


def _metric_label(key: str) -> str:
    return parse_metric(key).label


def _highlight_best(frame: pd.DataFrame, best: pd.DataFrame) -> pd.DataFrame:
    style = "background-color: rgba(47, 133, 90, 0.18); font-weight: 600"
    out = pd.DataFrame("", index=frame.index, columns=frame.columns)
    for key in best.columns:
        out.loc[best[key].to_numpy(dtype=bool), key] = style
    return out


def _metrics_display(cmp: ModelComparison) -> tuple[Any, dict[str, Any]]:
    """Model rows × each metric's value, low and high (numbers), the best value shaded.

    Returns the styled table and its column config (a metric's bounds headed "low" and
    "high" under the metric's label).
    """
    columns: dict[str, Any] = {}
    best: dict[str, Any] = {}
    frame = pd.DataFrame(index=pd.Index(cmp.models, name="model"))
    frame["n"] = [cmp.n[m] for m in cmp.models]
    for spec in cmp.metrics:
        part = cmp.table[cmp.table.metric == spec.key].set_index("model").reindex(cmp.models)
        frame[spec.label] = part.value.to_numpy(dtype=float)
        best[spec.label] = part.best.to_numpy(dtype=bool)
        if cmp.n_resamples:
            for bound in ("low", "high"):
                frame[f"{spec.label} {bound}"] = part[bound].to_numpy(dtype=float)
                columns[f"{spec.label} {bound}"] = st.column_config.NumberColumn(bound)
    bounds = pd.Series(False, index=frame.index)
    if len(cmp.tests):
        pv = cmp.tests.set_index("model").reindex(cmp.models)
        frame["p-value"] = pv.pvalue.to_numpy(dtype=float)
        bounds = pv.bound.fillna(False).astype(bool)
    best_frame = pd.DataFrame(best, index=frame.index)
    styled = frame.style.format(format_frame(frame)).apply(
        _highlight_best, best=best_frame, axis=None
    )
    if bounds.any():  # a distribution-free bound of the p-value
        styled = styled.format(
            lambda p: f"≤ {format_pvalue(p)}",
            subset=pd.IndexSlice[bounds[bounds].index, ["p-value"]],
        )
    return styled, columns


st.title("Compare", anchor=False)
st.caption(
    "Several models on **identical bins**: every calibration error and score with a "
    "bootstrap interval, differences to a reference model with **paired** "
    "intervals (the same resampled rows for every model), a calibration test per model, the "
    "reliability curves overlaid, and where the rankings by different estimators disagree. "
    "Lens, binning, number of bins, norm, interval level and kind, and seed come from the "
    "sidebar; the "
    "sidebar's model picker is ignored here."
)

if state.all_predictions() is None:
    state.require_predictions()
pred = state.all_predictions()
names = state.model_names()
if len(names) < 2:
    st.info(
        "Comparing needs at least two models. Load a file with a **`model`** column (one "
        "block of rows per model, e.g. `id, model, label, p` with the same ids for every "
        "model), or pick a bundled sample on the Data page: both samples hold four models "
        "evaluated on the same rows."
        + (" The loaded data has one model only." if pred is not None else ""),
        icon=":material/info:",
    )
    st.page_link("app_pages/data.py", label="Go to the Data page", icon=":material/upload_file:")
    st.stop()

config = state.require_binned_lens(state.require_config(), "compare models on identical bins")
# the headline estimator does not enter the comparison: keep it out of the cache key
config = dataclasses.replace(config, estimator="plugin")

# ---------------------------------------------------------------- settings
choices = metric_choices(config.lens)
c1, c2 = st.columns([3, 2])
chosen_models = widgets.choices(
    c1,
    "Models",
    names,
    default=names,
    key="compare_models",
    help="Models of the loaded file's `model` column; all by default.",
)
metrics = widgets.choices(
    c2,
    "Metrics",
    choices,
    default=[m for m in DEFAULT_METRICS if m in choices],
    format_func=_metric_label,
    key="compare_metrics",
    help="Calibration errors (with their ℓp norm) and scores. The first one orders the "
    "models and picks the default reference.",
)
c3, c4, c5 = st.columns(3)
reference = widgets.choice(
    c3,
    "Reference model",
    [AUTO, *names],
    format_func=lambda m: "best by the first metric" if m == AUTO else m,
    key="compare_reference",
    help="Differences are each model minus this one.",
)
n_resamples = widgets.number_input(
    c4,
    "Bootstrap resamples",
    min_value=0,
    max_value=20_000,
    value=DEFAULT_RESAMPLES,
    step=100,
    key="compare_resamples",
    help="Percentile bootstrap over rows; 0 turns intervals off.",
)
test = widgets.test_picker(c5, key="compare_test", default=DEFAULT_TEST)

if len(chosen_models) < 2:
    st.info("Pick at least two models to compare.", icon=":material/info:")
    st.stop()
if not metrics:
    st.info("Pick at least one metric.", icon=":material/info:")
    st.stop()
if reference and reference not in chosen_models:
    st.warning(
        f"The reference “{literal(reference)}” is not among the chosen models; the "
        "best model by the "
        "first metric is used instead.",
        icon=":material/warning:",
    )
    reference = AUTO

picked = {m: state.models_of(pred)[m] for m in chosen_models}
options = {
    "metrics": tuple(metrics),
    "reference": reference or None,
    "n_resamples": int(n_resamples),
    "test": test or None,
}
# the same rule as every page: a quick bootstrap runs at once, a longer one behind a progress
# bar with a Stop button, a very long one (or a stopped one) waits for a click
rows = sum(p.n for p in picked.values())
work = calls.comparison_work(picked, dataclasses.replace(config, n_resamples=int(n_resamples)))
cache.stopped_notice()
slow = work > cache.AUTO_BOOTSTRAP_BUDGET
if slow and cache.bootstrap_gate(
    calls.comparison_key(picked, config, **options),
    work,
    what=f"{rows:,} rows × {int(n_resamples):,} resamples",
    button_key="compare_run_bootstrap",
    budget=cache.PROGRESS_BOOTSTRAP_BUDGET,
):
    cmp = calls.comparison_with_progress(picked, config, **options)
    if cmp is None:
        st.stop()  # the error is shown
else:
    if slow:
        options["n_resamples"] = 0  # the point estimates while the intervals wait
    with errors.show_errors(stop=True):
        cmp = calls.comparison(picked, config, **options)

st.markdown(f"**{literal(comparison_finding(cmp))}**")  # what the comparison found

# ---------------------------------------------------------------- metrics table
for note in cmp.notes:
    st.caption(literal(note))
st.subheader("Metrics", anchor=False)
interval_text = (
    f"{widgets.interval_words(cmp.confidence_level, cmp.config.bootstrap_interval)} from "
    f"{cmp.n_resamples:,} resamples (seed {cmp.seed})"
    if cmp.n_resamples
    else "no intervals (0 resamples)"
)
st.markdown(
    f"Value, then its interval (low, high), per model; {interval_text}. Lower is better "
    "(accuracy: higher); the "
    "best value of each column is shaded."
    + (f" p-values: {TESTS.get(cmp.test).label}." if cmp.test else "")
)
shown, shown_columns = _metrics_display(cmp)
widgets.table(shown, key="compare_table", column_config=shown_columns)
if cmp.test:
    entry = TESTS.get(cmp.test)
    st.caption(
        f"p-values: {entry.label} (assumes {entry.assumptions})."
        + (f" **Read with care:** {entry.power}" if entry.power else "")
    )
noted = cmp.table[cmp.table.note.str.len() > 0]
if len(noted):
    with st.expander(f"Notes on {len(noted)} value(s)", icon=":material/sticky_note_2:"):
        for row in noted.itertuples(index=False):
            st.markdown(f"- **{literal(row.model)}** · {literal(row.label)}: {literal(row.note)}")
if len(cmp.tests) and cmp.tests.note.str.len().gt(0).any():
    with st.expander("How the p-values were computed", icon=":material/science:"):
        widgets.table(
            cmp.tests[["model", "lens", "statistic", "pvalue", "note"]],
            hide_index=True,
            key="compare_tests_table",
        )
widgets.download(
    st,
    "Download the table (CSV)",
    lambda: safe_csv(cmp.wide()).encode(),
    file_name="model_comparison.csv",
    key="compare_download",
    icon=":material/download:",
)
widgets.chart(calls.forest_chart(cmp), "compare_forest_chart")

# ---------------------------------------------------------------- paired differences
st.subheader(f"Differences to {literal(cmp.reference)}", anchor=False)
st.markdown(
    (
        "Each model minus the reference on the **same resampled rows** (paired bootstrap), "
        "the interval that answers “is this model better?”. Checking whether the two models' "
        "own intervals overlap is too cautious: what the shared rows add to both models "
        "cancels in the difference, so a paired interval can exclude 0 while the models' own "
        "intervals overlap."
        if cmp.paired
        else "The models were not evaluated on the same rows, so each was resampled on its "
        "own and the intervals are those of independent bootstraps."
    )
    + " Green: significantly better than the reference; red: significantly worse; grey: "
    "the interval contains 0."
)
diff = cmp.differences.copy()
diff["metric"] = diff.label
widgets.table(
    diff[["model", "metric", "difference", "low", "high", "significant", "better"]],
    hide_index=True,
    key="compare_differences",
    signed=("difference", "low", "high"),
    column_config={
        "difference": st.column_config.NumberColumn(f"model − {cmp.reference}"),
        "low": st.column_config.NumberColumn("low"),
        "high": st.column_config.NumberColumn("high"),
    },
)
widgets.chart(calls.difference_chart(cmp), "compare_diff_chart")

# ---------------------------------------------------------------- overlaid diagrams
st.subheader("Reliability on the shared bins", anchor=False)
component = 0
if len(cmp.component_names) > 1:
    component = widgets.choice(
        st,
        "Class",
        list(range(len(cmp.component_names))),
        format_func=lambda i: cmp.component_names[i],
        key="compare_component",
    )
widgets.chart(calls.overlay_chart(cmp, component=component), "compare_overlay_chart")
st.caption(widgets.bin_convention(config))

# ---------------------------------------------------------------- rankings
st.subheader("Where the rankings disagree", anchor=False)
st.markdown(
    "Rank 1 is the best model by each metric. Kendall's τ between two metrics' rankings is 1 "
    "when they order the models identically and −1 when they reverse them."
)
left, right = st.columns([3, 2])
with left:
    widgets.chart(calls.rank_chart(cmp), "compare_rank_chart")
with right:
    widgets.table(
        cmp.kendall.rename(index=_metric_label, columns=_metric_label).style.format("{:.2f}"),
        key="compare_kendall",
    )
flips = cmp.flips
if flips.empty:
    st.success(
        "Every metric orders every pair of models the same way.",
        icon=":material/check_circle:",
    )
else:
    n_sig = int(flips.significant.fillna(False).astype(bool).sum())
    st.markdown(
        f"**{len(flips)} order flip(s)** between metrics; {n_sig} significant (both "
        "differences' intervals exclude 0), the others within the bootstrap noise."
    )
    shown = flips.assign(
        metric_a=flips.metric_a.map(_metric_label),
        metric_b=flips.metric_b.map(_metric_label),
        verdict=[
            "unknown (no bootstrap)"
            if pd.isna(s)
            else ("significant: the metrics disagree" if s else "within noise")
            for s in flips.significant
        ],
    )
    widgets.table(
        shown[
            ["model_a", "model_b", "metric_a", "better_by_a", "metric_b", "better_by_b", "verdict"]
        ],
        hide_index=True,
        key="compare_flips",
        column_config={
            "better_by_a": st.column_config.TextColumn("better by metric a"),
            "better_by_b": st.column_config.TextColumn("better by metric b"),
        },
    )
with st.expander("Formulas and sources", icon=":material/functions:"):
    st.markdown(
        "Plug-in ℓp error on bins b with n_b rows, mean score s̄_b and observed frequency ȳ_b: "
        "(Σ_b (n_b/n)·|ȳ_b − s̄_b|^p)^(1/p); label-binned: ((1/n) Σ_i |s_i − ȳ_b(i)|^p)^(1/p); "
        "debiased ℓ2: Σ_b (n_b/n)[(s̄_b − ȳ_b)² − ȳ_b(1 − ȳ_b)/(n_b − 1)], clipped at 0, "
        "square root; ECE_sweep: the plug-in error at the largest number of bins whose bin "
        "frequencies are monotone. Paired difference interval: percentiles of "
        "θ*_model − θ*_reference over resamples that draw the same rows for both (basic: "
        "that spread reflected around the difference, pivoting on the difference of the "
        "models' values in their bootstrap worlds). "
        "Kendall's τ-b between the rankings (scipy.stats.kendalltau). Sources: "
        + "; ".join(f"[{title}]({url})" for title, url in widgets.PAPERS.values())
        + "."
    )
