"""Bias page: how wrong is an estimator at a given sample size? Worlds with known truth.

Widgets → one core call (:mod:`core.bias`, :mod:`core.worlds`) → layout. Simulations run
when asked (button or teaching preset), show progress, stop on the Stop button (any click
reruns the script, which interrupts the running simulation) and are kept per parameter set.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from core.analyses.findings import bias_finding
from core.bias import (
    DEFAULT_NS,
    TEACHING_PRESETS,
    EstimatorSpec,
    TeachingPreset,
    consistent_tce_range,
    data_source,
    estimator_choices,
    least_biased_bins,
    n_for_power,
    option_label,
    simulation_lens,
    specs_with_bins,
)
from core.stats.binning import BINNINGS
from core.worlds import PRESET_WORLDS, BetaScores, UniformScores
from dashboard import cache, calls, errors, state, widgets
from dashboard.text import literal

#: Rows up to which the Fit diagnostics tab fits a world on first render (above: a button).
FIT_AUTO_ROWS = 100_000

NS_CHOICES = [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600]
#: Fewest rows simulated from: the smallest n of the ECE-vs-true-CE study (fewer rows fit no
#: world and leave nothing to subsample).
MIN_DATA_ROWS = 20
SOURCES = {
    "world": "Preset world (known truth)",
    "fitted": "World fitted to my data",
    "subsample": "Subsamples of my data",
}
NORMS = {"2": "ℓ2 (the paper's choice)", "1": "ℓ1 (ECE)", "inf": "ℓ∞ (MCE)"}
#: The estimator labels that links made before the controls showed labels carry ("plugin EW").
OLD_LABELS = {
    (spec := EstimatorSpec.parse(o)).label.replace(f"-{spec.n_bins}", ""): o
    for o in estimator_choices()
}
#: What the bias heat map colours its cells by.
HEATMAP_VALUES = {"bias": "bias", "sd": "standard deviation", "rmse": "RMSE"}
SCORE_FAMILIES = {
    "Uniform(0, 1)": UniformScores(),
    "Beta(1.1, 0.1) (CIFAR-100-like)": BetaScores(1.1, 0.1),
    "Beta(2.8, 0.05) (CIFAR-10-like)": BetaScores(2.8, 0.05),
}


# ---------------------------------------------------------------- helpers


def _norm(value: str) -> float:
    return float("inf") if value == "inf" else float(value)


# ---------------------------------------------------------------- teaching presets


def _lesson(preset: TeachingPreset, seed: int, user_n: int | None) -> None:
    st.markdown(f"#### {preset.title}")
    st.info(preset.lesson, icon=":material/school:")
    if preset.view == "power":
        key = ("lesson", preset.key, seed)
        tables = calls.detection_powers(
            key,
            preset.title,
            UniformScores(),
            {option_label(e): e for e in preset.estimators},
            targets=(0.02, 0.05, 0.10),
            ns=preset.ns,
            n_resamples=preset.n_resamples,
            seed=seed,
        )
        if tables:
            widgets.chart(calls.power_chart(tables, user_n=user_n), "lesson_chart")
            for label, t in tables.items():
                found = n_for_power(t, target=0.02, rate=0.8)
                need = f"n ≈ {found:,}" if found is not None else "more than the largest n"
                st.markdown(f"- **{label}** detects a 2 % true CE 80 % of the time from {need}.")
        return
    world = PRESET_WORLDS[preset.world]
    if preset.view == "heatmap":
        key = ("lesson", preset.key, seed)
        table = calls.heatmap(
            key, preset.title, world, ns=preset.ns, n_resamples=preset.n_resamples, seed=seed
        )
        if table is not None:
            widgets.chart(calls.heatmap_chart(table, title=world.label), "lesson_chart")
            best = least_biased_bins(table)
            st.markdown(
                "Least-biased number of bins per n: "
                + ", ".join(
                    f"n = {n:,}: **{b}**" for n, b in zip(best["n"], best["n_bins"], strict=True)
                )
                + "."
            )
        return
    key = ("lesson", preset.key, seed)
    result = calls.simulation(
        key,
        preset.title,
        preset.estimators,
        world,
        ns=preset.ns,
        n_resamples=preset.n_resamples,
        seed=seed,
    )
    if result is None:
        return
    if preset.view == "distribution":
        n = preset.ns[0]
        hist = calls.distribution({s.display: result.estimates(s, n) for s in result.specs})
        fig = calls.distribution_chart(hist, reference=float(result.reference[0]))
        widgets.chart(fig, "lesson_chart")
        st.markdown(
            f"Mean **{hist.labels[0]}** over {result.n_resamples:,} perfectly calibrated "
            f"datasets of n = {n}: **{100 * hist.means[0]:.2f} %** (true CE 0 %)."
        )
    else:
        widgets.chart(calls.bias_chart(result.summary(), user_n=user_n), "lesson_chart")


# ---------------------------------------------------------------- page

st.title("Bias vs n", anchor=False)
st.caption(
    "Every calibration-error estimate is off by some amount that depends on the sample size, "
    "the binning and the model. Here datasets are simulated from worlds whose true calibration "
    "error is known (or subsampled from your data), so you can see each estimator's bias, "
    "spread and RMSE at your n. Errors are in percent; the reference line is the true CE."
)
cache.stopped_notice()

pred = state.current_predictions()
config = state.analysis_config()
seed = int(config.seed) if config is not None else 0
too_few = pred.n if pred is not None and pred.n < MIN_DATA_ROWS else None
if too_few is not None:
    pred = None  # every part below that reads the data treats it as absent
user_n = int(pred.n) if pred is not None else None

st.subheader("Teaching presets", anchor=False)
cols = st.columns(len(TEACHING_PRESETS))
for col, preset in zip(cols, TEACHING_PRESETS.values(), strict=True):
    if col.button(preset.title, key=f"preset_{preset.key}", help=preset.lesson, width="stretch"):
        st.session_state["bias_lesson"] = preset.key
lesson = st.session_state.get("bias_lesson")
if lesson in TEACHING_PRESETS:
    with st.container(border=True):
        _lesson(TEACHING_PRESETS[lesson], seed, user_n)
        if st.button("Close the lesson", key="bias_close_lesson"):
            st.session_state.pop("bias_lesson", None)
            st.rerun()

st.subheader("Simulate", anchor=False)
if too_few is not None:
    st.warning(
        f"The current data ({literal(state.data_source())}"
        + (f", model {literal(st.session_state.get(state.MODEL))}" if state.model_names() else "")
        + f") has {too_few} rows: simulating from it needs at least {MIN_DATA_ROWS}, so the "
        "preset worlds and teaching presets are offered alone. Pick another model in the "
        "sidebar or load more rows to fit a world to your data or subsample it.",
        icon=":material/warning:",
    )
elif pred is None:
    st.info(
        "No predictions are loaded: the preset worlds and teaching presets work without data. "
        "Load a file or a bundled sample on the Data page to simulate a world fitted to your "
        "data or to subsample it.",
        icon=":material/info:",
    )
    st.page_link("app_pages/data.py", label="Go to the Data page", icon=":material/upload_file:")

source_options = list(SOURCES) if pred is not None else ["world"]
with st.form("bias_form", border=True):
    c1, c2 = st.columns([1, 2])
    source = widgets.choice(
        c1,
        "Source",
        source_options,
        format_func=SOURCES.get,
        key="bias_source",
        kind="radio",
        help="A preset world has a known true CE; a fitted world has the true CE of the fit; "
        "subsampling compares with the estimate on all rows (a reference, not the truth).",
    )
    world_name = widgets.choice(
        c2,
        "Preset world",
        list(PRESET_WORLDS),
        format_func=lambda k: f"{k} — {PRESET_WORLDS[k].description}",
        key="bias_world",
    )
    options = estimator_choices()
    default_six = [
        f"{e}:{b}" for e in ("plugin", "debiased", "sweep") for b in ("equal-width", "equal-mass")
    ]
    chosen = widgets.choices(
        st,
        "Estimators",
        options,
        default=[o for o in default_six if o in options],
        format_func=option_label,
        url_aliases=OLD_LABELS,
        key="bias_estimators",
        help="Equal width is drawn dashed, equal mass solid. Kernel estimators run one dataset "
        "at a time and estimate another quantity, so they have no true-CE reference in a world.",
    )
    c3, c4, c5, c6 = st.columns([2, 1, 1, 1])
    ns = widgets.choices(c3, "Sample sizes n", NS_CHOICES, default=list(DEFAULT_NS), key="bias_ns")
    n_resamples = widgets.number_input(
        c4, "Replicates per n", 10, 10_000, 1000, step=100, key="bias_replicates"
    )
    n_bins = widgets.number_input(c5, "Bins (fixed-bin estimators)", 1, 200, 15, key="bias_n_bins")
    norm_key = widgets.choice(c6, "Norm", list(NORMS), format_func=NORMS.get, key="bias_norm")
    run = st.form_submit_button("Run simulation", type="primary", icon=":material/play_arrow:")
st.caption(f"Seed {seed} (from the sidebar); datasets are shared by all estimators and sizes.")

lens = simulation_lens(pred, config.lens if config else "top-label") if pred else "top-label"
if pred is not None:
    st.caption(
        f"Your data is used through the **{lens}** lens (one score and one outcome per row); "
        "the classwise and canonical lenses have no single score to simulate."
    )
specs = specs_with_bins(chosen, int(n_bins))
norm = _norm(norm_key)
ns_run = tuple(sorted(ns))
if source == "subsample" and pred is not None and ns_run and ns_run[-1] > pred.n:
    st.warning(f"Subsampling cannot exceed the {pred.n:,} rows; larger sizes are left out.")
    ns_run = tuple(n for n in ns_run if n <= pred.n)


def _fit() -> Any:
    return calls.fitted_world(fit_key, pred, lens, f"fitted to {state.data_source()}")


# keyed like every cached call: a fit is named after the data's source
data_key = cache.data_key(pred) if pred is not None else None
fit_key = ("fit", data_key, lens)
src_key = world_name if source == "world" else (source, data_key, lens)
sim_key = ("sim", src_key, tuple(s.label for s in specs), ns_run, int(n_resamples), seed, norm_key)
result = cache.recall(sim_key)
if run and result is None:
    if not specs or not ns_run:
        st.error("Choose at least one estimator and one sample size.", icon=":material/error:")
    else:
        if source == "world":
            src: Any = PRESET_WORLDS[world_name]
        elif source == "fitted":
            fitted_data = _fit()
            src = None if fitted_data is None else fitted_data.fit
        else:
            src = data_source(
                pred.probs, pred.labels, lens=lens, name=state.data_source() or "data"
            )
        if src is not None:
            result = calls.simulation(
                sim_key,
                f"Simulating {int(n_resamples):,} datasets per n",
                specs,
                src,
                ns=ns_run,
                n_resamples=int(n_resamples),
                seed=seed,
                norm=norm,
            )

tabs = st.tabs(
    ["Bias vs n", "Distribution at one n", "Heat map (n × bins)", "ECE vs true CE",
     "Detecting miscalibration", "Fit diagnostics"]
)  # fmt: skip

with tabs[0]:
    if result is None:
        st.info("Set the options above and press **Run simulation**.", icon=":material/info:")
    else:
        table = result.summary()
        st.markdown(f"**{literal(bias_finding(result, user_n))}**")  # in one sentence
        st.markdown(
            f"**{literal(result.source_label)}** — reference: {result.reference_kind}"
            + (
                f" = {100 * np.nanmax(result.reference):.3f} %"
                if result.reference_kind != "full-data estimate"
                and np.isfinite(result.reference).any()
                else ""
            )
            + f"; {result.n_resamples:,} replicates per n; ℓ{norm_key}."
        )
        sub = st.tabs(["Bias ± 1.96·SE", "SD", "RMSE", "Table"])
        for tab, metric in zip(sub[:3], ("bias", "sd", "rmse"), strict=True):
            with tab:
                widgets.chart(
                    calls.bias_chart(table, metric=metric, user_n=user_n), f"bias_{metric}"
                )
        with sub[3]:
            # the label says estimator, binning and bins: the shorthand key and codes stay in the CSV
            shown = table.drop(columns=["estimator", "name", "binning", "n_bins"])
            for col in ("mean", "reference", "bias", "sd", "se", "rmse", "bias_low", "bias_high"):
                shown[col] = 100 * shown[col]
            widgets.table(
                shown,
                hide_index=True,
                key="bias_vs_n",
                csv=table,  # every column, in the API's units (the table shows percentages)
                column_config={
                    c: st.column_config.NumberColumn()
                    for c in (
                        "mean",
                        "reference",
                        "bias",
                        "sd",
                        "se",
                        "rmse",
                        "bias_low",
                        "bias_high",
                    )
                },
            )

with tabs[1]:
    if result is None:
        st.info("Run a simulation first; its datasets are shown here.", icon=":material/info:")
    else:
        labels = [s.label for s in result.specs]
        display = {s.label: s.display for s in result.specs}
        c1, c2 = st.columns([2, 1])
        picked = widgets.choices(
            c1,
            "Estimators",
            labels,
            default=labels[:1],
            key="bias_dist_est",
            format_func=display.get,
        )
        n_pick = widgets.choice(c2, "n", list(result.ns), key="bias_dist_n")
        if picked:
            est = {display[lab]: result.estimates(lab, n_pick) for lab in picked}
            ref = result.reference[labels.index(picked[0])]
            ref_label = (
                "full-data estimate" if result.reference_kind == "full-data estimate" else "true CE"
            )
            widgets.chart(
                calls.distribution_chart(
                    calls.distribution(est), reference=ref, reference_label=ref_label
                ),
                "bias_dist_chart",
            )
            st.caption(
                "The debiased estimator is clipped at 0, so part of its distribution is a point "
                "mass at exactly 0 (the spike); other estimators are never exactly 0."
            )

with tabs[2]:
    st.caption(
        "Bias of the plug-in estimator for each number of bins and n, with the sweep's "
        "adaptive choice as the last row; the least-biased bin count per n is outlined."
    )
    c1, c2, c3 = st.columns(3)
    hm_binning = widgets.choice(
        c1,
        "Binning",
        ["equal-width", "equal-mass"],
        format_func=lambda name: BINNINGS.get(name).label,
        key="bias_hm_binning",
        kind="radio",
        horizontal=True,
    )
    hm_value = widgets.choice(
        c2,
        "Colour by",
        list(HEATMAP_VALUES),
        format_func=HEATMAP_VALUES.get,
        key="bias_hm_value",
        kind="radio",
        horizontal=True,
    )
    hm_reps = widgets.number_input(c3, "Replicates", 10, 5000, 500, step=100, key="bias_hm_reps")
    hm_world = world_name if source == "world" else None
    if hm_world is None and source == "fitted":
        fitted = cache.recall(fit_key)
        hm_src = fitted.fit.world if fitted is not None else None
    else:
        hm_src = PRESET_WORLDS[world_name] if source == "world" else None
    hm_key = ("heat", src_key, hm_binning, int(hm_reps), seed, norm_key)
    heat = cache.recall(hm_key)
    if heat is None and st.button("Run the heat map", key="bias_hm_run"):
        if hm_src is None:
            st.info("The heat map needs a world: pick a preset, or run a fitted world first.")
        else:
            heat = calls.heatmap(
                hm_key, "Simulating the heat map", hm_src, binning=hm_binning,
                n_resamples=int(hm_reps), seed=seed, norm=norm,
            )  # fmt: skip
    if heat is not None:
        widgets.chart(calls.heatmap_chart(heat, value=hm_value), "bias_heatmap")

with tabs[3]:
    st.caption(
        "Worlds μ(c) = c^d with the chosen score distribution: the mean estimate and its "
        "5–95 % band against the true ℓ2 CE. Reading across at your observed value gives the "
        "true CEs it is consistent with."
    )
    families = dict(SCORE_FAMILIES)
    fitted = cache.recall(fit_key)
    if fitted is not None:
        families["Beta fitted to my data"] = fitted.fit.world.scores
    c1, c2, c3, c4 = st.columns(4)
    fam = widgets.choice(c1, "Score distribution", list(families), key="bias_tce_family")
    tce_est = widgets.choice(
        c2,
        "Estimator",
        estimator_choices(binned_only=True),
        format_func=option_label,
        url_aliases=OLD_LABELS,
        key="bias_tce_est",
    )
    tce_n = widgets.number_input(c3, "n", 20, 50_000, min(user_n or 200, 50_000), key="bias_tce_n")
    tce_reps = widgets.number_input(c4, "Replicates", 50, 5000, 300, step=50, key="bias_tce_reps")
    observed_default = 12.0
    if pred is not None:
        spec = specs_with_bins([tce_est], int(n_bins))[0]
        with errors.show_errors():
            observed_default = 100 * calls.observed(
                pred, spec, config.lens if config else "top-label"
            )
    observed = widgets.number_input(
        st,
        "Observed estimate (%)",
        0.0,
        100.0,
        round(observed_default, 3),
        key="bias_tce_obs",
    )
    tce_key = ("tce", fam, tce_est, int(n_bins), int(tce_n), int(tce_reps), seed)
    tce_table = cache.recall(tce_key)
    if tce_table is None and st.button("Run ECE vs true CE", key="bias_tce_run"):
        spec = specs_with_bins([tce_est], int(n_bins))[0]
        tce_table = calls.tce_table(
            tce_key, "Simulating a family of worlds", families[fam], estimator=spec,
            n=int(tce_n), n_resamples=int(tce_reps), seed=seed,
        )  # fmt: skip
    if tce_table is not None:
        low, high, open_above = consistent_tce_range(tce_table, observed / 100)
        widgets.chart(
            calls.tce_chart({fam: tce_table}, observed=observed / 100, consistent=(low, high)),
            "bias_tce_chart",
        )
        if np.isnan(low):
            st.markdown(
                f"No world of this family gives an estimate of {observed:.2f} % at n = {int(tce_n):,}."
            )
        else:
            more = " or more (widen the family)" if open_above else ""
            st.success(
                f"An observed {option_label(tce_est)} of **{observed:.2f} %** at n = {int(tce_n):,} is "
                f"consistent with a true CE in **[{100 * low:.2f} %, {100 * high:.2f} %{more}]** "
                f"(5–95 % bands, {fam}).",
                icon=":material/straighten:",
            )

with tabs[4]:
    st.caption(
        "How often an estimator flags a model whose true CE is 2, 5 or 10 %, at a 5 % false-alarm "
        "rate set by simulating a calibrated model with the same scores (μ(c) = c^d worlds)."
    )
    c1, c2, c3 = st.columns(3)
    pw_fam = widgets.choice(c1, "Score distribution", list(SCORE_FAMILIES), key="bias_pw_family")
    pw_est = widgets.choices(
        c2,
        "Estimators",
        estimator_choices(binned_only=True),
        default=["sweep:equal-mass", "plugin:equal-width"],
        format_func=option_label,
        url_aliases=OLD_LABELS,
        key="bias_pw_est",
    )
    pw_reps = widgets.number_input(c3, "Replicates", 50, 5000, 300, step=50, key="bias_pw_reps")
    pw_ns = (200, 500, 1000, 2000, 5000, 10000, 20000)
    pw_key = ("power", pw_fam, tuple(pw_est), int(n_bins), int(pw_reps), seed)
    power = cache.recall(pw_key)
    if power is None and st.button("Run the detection study", key="bias_pw_run"):
        pw_specs = specs_with_bins(pw_est, int(n_bins))
        power = calls.detection_powers(
            pw_key, "Simulating calibrated and miscalibrated worlds", SCORE_FAMILIES[pw_fam],
            {s.display: s for s in pw_specs}, say_estimator=False, ns=pw_ns,
            n_resamples=int(pw_reps), seed=seed,
        )  # fmt: skip
    if power:
        widgets.chart(calls.power_chart(power, user_n=user_n), "bias_power_chart")
        for label, t in power.items():
            widgets.table(t, hide_index=True, key=f"bias_power_{label}")

with tabs[5]:
    if too_few is not None:
        st.info(
            f"Fit diagnostics need at least {MIN_DATA_ROWS} rows; the current data has {too_few}.",
            icon=":material/info:",
        )
    elif pred is None:
        st.info(
            "Fit diagnostics need data: load predictions on the Data page.", icon=":material/info:"
        )
    elif pred.n > FIT_AUTO_ROWS and cache.recall(fit_key) is None and not cache.asked(fit_key):
        # the maximum-likelihood fits read every row many times: a click, not every first render
        st.info(
            f"Fitting a world to {pred.n:,} rows (a Beta law of the scores and a maximum-"
            "likelihood GLM per link) takes a while; it runs when asked and is kept for this data.",
            icon=":material/hourglass:",
        )
        widgets.ask_button(st, "Fit a world to my data", fit_key, key="bias_fit_button")
    else:
        cache.ask(fit_key)
        fitted = _fit()
        if fitted is not None:
            b, glms = fitted.fit.beta, fitted.fit.glms
            st.markdown(
                f"**Scores** ({fitted.lens} lens): Beta MLE α̂ = {b.alpha:.4f}, β̂ = "
                f"{b.beta:.4f} ({b.n:,} scores; {b.n_exact_one:,} exactly 1.0, clipped to "
                f"1 − {b.clip:g}). **Curve**: AIC-best GLM `{glms.best.name}`; true CE of the "
                f"fitted world {100 * fitted.true_calibration_error:.2f} % (ℓ2)."
            )
            widgets.chart(calls.beta_fit_chart(fitted), "bias_beta_fit")
            widgets.table(glms.table, hide_index=True, key="bias_glm_table")
            st.caption(
                f"{glms.n_dropped:,} scores of exactly 1.0 are left out of the GLM fits "
                "(their transforms are infinite), as in the reference implementation."
            )
            widgets.chart(calls.fitted_curve_chart(fitted), "bias_fitted_curve")
