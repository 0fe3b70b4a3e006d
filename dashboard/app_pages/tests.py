"""Tests page: p-values of "the model is calibrated", the null distribution, a teaching mode."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core.analyses.calibration_tests import (
    DEFAULT_SUITE,
    PAGE_ROW_WORK,
    TESTS,
    CalibrationTestResult,
    test_settings,
)
from core.analyses.findings import suite_finding
from core.base.numbers import format_frame, format_number, format_pvalue
from core.estimators.kernel import MAX_EXACT_N
from core.stats.lenses import data_lens
from core.worlds import DirichletWorld
from dashboard import cache, calls, errors, state, widgets
from dashboard.text import literal

MESSAGE = (
    "A raw calibration error has no unit: whether 0.0003 or 0.03 is a lot depends on the "
    "number of predictions, the classes and the estimator. The p-value under the hypothesis "
    "**“the model is calibrated”** is the interpretable number: a small p-value means data "
    "this miscalibrated would rarely come from a calibrated model."
)
ALPHAS = [0.001, 0.01, 0.05, 0.1]
KERNEL_LENS_LABELS = {
    "canonical": "Canonical (full probability vector)",
    "top-label": "Top-label (confidence)",
    "binary": "Binary P(y=1)",
}
#: Generative models of Widmann et al. (2019): m = 10 classes, Dir(0.1) predictions.
WORLDS = {
    "M1: calibrated (π = 0)": DirichletWorld(10, 0.1, 0.0),
    "M2: half the labels are class 1 (π = 0.5, β = e₁)": DirichletWorld(10, 0.1, 0.5, "first"),
    "M3: labels uniform (π = 1)": DirichletWorld(10, 0.1, 1.0),
}
TEACHING_RESAMPLES = 200


def _pvalue_text(r: CalibrationTestResult) -> str:
    shown = format_pvalue(r.pvalue)
    text = f"≤ {shown}" if r.pvalue_is_bound and not shown.startswith("<") else shown
    if r.mc_error is not None:
        text += f" ± {format_number(r.mc_error, 2)}"
    return text


st.title("Calibration tests", anchor=False)
finding_slot = st.empty()  # what the tests found, in one sentence, once they ran
st.info(MESSAGE, icon=":material/lightbulb:")

pred = state.current_predictions()
if pred is None:
    state.point_to_data_page(
        "No predictions are loaded yet, so there is nothing to test. Upload a file or pick a "
        "bundled sample on the Data page; the teaching mode below works without data."
    )
else:
    config = state.analysis_config()
    c1, c2, c3 = st.columns(3)
    alpha = widgets.choice(
        c1, "Significance level α", ALPHAS, default=0.05, key="tests_alpha", kind="select_slider"
    )
    lens_options = ["canonical", "top-label"] + (["binary"] if pred.n_classes == 2 else [])
    kernel_lens = widgets.choice(
        c2,
        "Lens of the kernel tests",
        lens_options,
        format_func=KERNEL_LENS_LABELS.get,
        key="tests_kernel_lens",
        help="Canonical tests strong calibration of the whole vector; top-label tests the "
        "confidence only.",
    )
    n_resamples = int(
        widgets.number_input(
            c3,
            "Resamples (bootstrap, consistency)",
            min_value=100,
            max_value=10_000,
            value=1000,
            step=100,
            key="tests_resamples",
        )
    )
    if config is None:
        st.stop()
    default_lens = data_lens(pred.n_classes)
    lens, consistency = test_settings("consistency", config)
    lens = lens or default_lens
    classical_lens = test_settings("spiegelhalter", config)[0] or default_lens

    max_exact_n = MAX_EXACT_N
    if pred.n > MAX_EXACT_N:
        st.warning(
            f"{pred.n:,} predictions: the quadratic tests (bootstrap, distribution-free bounds "
            f"of SKCE_b and SKCE_uq) cost n² kernel evaluations and are skipped above "
            f"{MAX_EXACT_N:,} rows. The linear and block tests run in linear time.",
            icon=":material/speed:",
        )
        if st.checkbox("Run the quadratic tests anyway (slow)", key="tests_force_quadratic"):
            max_exact_n = pred.n

    # a test that cannot be fast on these settings waits for a click and names the fast ones;
    # asked for, the whole suite runs with progress, the time left and a Stop button, and is kept
    cache.stopped_notice()
    asked = {
        "tests": DEFAULT_SUITE,
        "kernel_lens": kernel_lens,
        "n_resamples": n_resamples,
        "max_exact_n": max_exact_n,
        "max_row_work": None,
    }
    slow = calls.slow_tests_note(pred, config, DEFAULT_SUITE, n_resamples, PAGE_ROW_WORK)
    suite = cache.recall(calls.tests_key(pred, config, **asked)) if slow else None
    notes = st.container()  # the notes above the button
    if (
        slow
        and suite is None
        and st.button("Run it anyway (slow)", key="tests_force_slow", icon=":material/play_arrow:")
    ):
        suite = calls.tests_with_progress(pred, config, **asked)
    if suite is not None:
        slow = {}
    for name, reason in slow.items():
        notes.warning(
            f"**{TESTS.get(name).label}** waits for you: {literal(reason)}",
            icon=":material/speed:",
        )
    if suite is None:
        with errors.show_errors(stop=True):
            suite = calls.tests(pred, config, **{**asked, "max_row_work": PAGE_ROW_WORK})

    finding_slot.markdown(f"**{literal(suite_finding(suite, alpha))}**")
    frame = suite.to_frame(alpha)
    table = frame.assign(
        **{
            "p-value": [r.pvalue for r in suite.results],
            f"reject at α = {alpha:g}": np.where(frame["reject"], "reject", "keep"),
        }
    )[
        [
            "label",
            "statistic",
            "p-value",
            f"reject at α = {alpha:g}",
            "caveat",
            "method",
            "assumptions",
        ]
    ]
    # the p-values stay numbers; a bound shows "≤", a resampled one its Monte-Carlo error
    shown = table.style.format(format_frame(table))
    for row, result in zip(table.index, suite.results, strict=True):
        text = _pvalue_text(result)
        shown = shown.format(lambda _, text=text: text, subset=pd.IndexSlice[[row], ["p-value"]])
    st.subheader("One row per test", anchor=False)
    widgets.table(
        shown,
        hide_index=True,
        key="tests_table",
        column_config={
            "label": st.column_config.TextColumn("test"),
            "statistic": st.column_config.NumberColumn("statistic"),
            "caveat": st.column_config.TextColumn("read with care", width="large"),
            "method": st.column_config.TextColumn("method", width="large"),
            "assumptions": st.column_config.TextColumn("assumptions", width="large"),
        },
    )
    st.caption(
        f"Kernel tests on the {kernel_lens} lens with exp(−TV/ν)·I and ν by the median "
        f"heuristic; Hosmer–Lemeshow and Spiegelhalter on the {classical_lens} lens; "
        f"consistency resampling on the {lens} lens ({consistency['estimator']} estimator, "
        f"{consistency['n_bins']} {consistency['binning']} bins). “≤” marks a "
        "distribution-free upper bound of the "
        "p-value; “±” the Monte-Carlo standard error of a resampled p-value, counted as "
        f"(1 + #{{T* ≥ T}})/(1 + R). Seed {config.seed}."
    )
    for name, reason in suite.skipped.items():
        if name in slow:  # said above, in the page's words
            continue
        st.caption(f"**{TESTS.get(name).label}** did not run: {literal(reason)}")

    resampled = [r for r in suite.results if r.null_distribution is not None]
    if resampled:
        st.subheader("Null distribution", anchor=False)
        choice = widgets.choice(
            st,
            "Resampling test",
            [r.test for r in resampled],
            format_func=lambda t: TESTS.get(t).label,
            key="tests_null_choice",
        )
        chosen = next(r for r in resampled if r.test == choice)
        widgets.chart(calls.null_chart(chosen), "tests_null_chart")
        st.caption(
            f"Histogram of the {chosen.n_resamples:,} statistics resampled under “calibrated”; "
            "the red line is the observed statistic and the shaded region the resamples at "
            "least as large, whose share is the p-value."
        )

st.divider()
with st.expander("Teaching mode: how often does each test err?", icon=":material/school:"):
    st.markdown(
        "Draw many data sets from a generative model with known calibration "
        "(Widmann et al. 2019, §6: predictions ~ Dir(0.1) over 10 classes; with probability π "
        "the label ignores the prediction) and test each one. Under the calibrated model M1 a "
        "valid test rejects at most a share α (its curve stays on or below the diagonal); "
        "under M2 and M3 a powerful test's type-II error drops to 0 quickly."
    )
    t1, t2, t3 = st.columns(3)
    world = widgets.choice(t1, "Model", list(WORLDS), key="tests_teach_world")
    n = int(
        widgets.number_input(t2, "Rows per data set", 20, 2000, 250, step=10, key="tests_teach_n")
    )
    n_resamples = int(
        widgets.number_input(t3, "Data sets", 20, 2000, 200, step=20, key="tests_teach_datasets")
    )
    chosen_tests = widgets.choices(
        st,
        "Tests",
        list(DEFAULT_SUITE),
        default=["skce-ul-asymptotic", "skce-uq-bootstrap", "skce-bound-b", "consistency"],
        format_func=lambda t: TESTS.get(t).label,
        key="tests_teach_tests",
    )
    if st.toggle("Run the simulation", key="tests_teach_run") and chosen_tests:
        with errors.show_errors():
            sim = calls.test_errors(
                WORLDS[world], tuple(chosen_tests), n, n_resamples, 0, TEACHING_RESAMPLES
            )
            widgets.chart(calls.error_rate_chart(sim), "tests_teach_chart")
            st.caption(
                f"{n_resamples} data sets of {n} rows, seed 0; resampling tests use "
                f"{TEACHING_RESAMPLES} resamples here. The paper's Figure 2 shows the same "
                "curves for 10,000 data sets."
            )
            for name, count in sim.not_applicable.items():
                st.caption(
                    f"{TESTS.get(name).label}: not applicable on {count} of {n_resamples} data "
                    "sets (too few expected counts); its curve uses the others."
                )
