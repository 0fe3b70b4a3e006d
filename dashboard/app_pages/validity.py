"""Validity page: validity plots of binned recalibrators, and the guarantee calculator.

Widgets → :func:`core.stats.guarantees.guarantee_calculator` (no data needed) and
:func:`core.analyses.validity.validity_curves` (the loaded data, R random splits with progress;
results kept per data digest and options) → :mod:`core.figures.validity`.
"""

from __future__ import annotations

import math
from typing import Any

import streamlit as st

from core.analyses.findings import validity_finding
from core.analyses.validity import VALIDITY_LENSES
from core.base.export import safe_csv
from core.base.numbers import format_number
from core.recalibration import RECALIBRATORS
from dashboard import cache, calls, errors, state, widgets
from dashboard.text import literal

#: Rows × runs of the default number of runs (50 up to 200,000 rows, then fewer, at least 5).
RUN_ROWS = 10_000_000


def default_runs(n: int) -> int:
    """Return the default number of random splits for ``n`` rows."""
    return int(min(50, max(5, RUN_ROWS // max(n, 1))))


BIN_COLUMNS = {
    "value": st.column_config.NumberColumn("output h_b"),
    "count": st.column_config.NumberColumn("test rows n_b", format="%d"),
    "mean_label": st.column_config.NumberColumn("test mean ȳ_b"),
    "low": st.column_config.NumberColumn("Wilson low"),
    "high": st.column_config.NumberColumn("Wilson high"),
    "gap": st.column_config.NumberColumn("ȳ_b − h_b"),
    "abs_gap": st.column_config.NumberColumn("|ȳ_b − h_b|"),
    "cal_count": st.column_config.NumberColumn("calibration labels m_b", format="%d"),
    "halfwidth": st.column_config.NumberColumn("guarantee half-width"),
}


def _fmt(value: float | None, spec: str = ".4f") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return format(value, spec)


def _curves(pred: Any, request: dict[str, Any]) -> Any:
    """Return the validity curves of ``request`` on ``pred``, computing them with progress."""
    key = ("validity", cache.data_key(pred), tuple(sorted(request.items())))
    return calls.validity(key, pred, request)


st.title("Validity", anchor=False)
finding = st.empty()  # what the validity runs found, in one sentence (core.analyses.findings)
st.caption(
    "How often is a binned recalibrator's output within ε of the truth? Validity plots "
    "(Gupta & Ramdas 2021) answer that on held-out rows, over many random calibration/test "
    "splits, next to the distribution-free guarantee of histogram binning. The guarantee "
    "calculator needs no data."
)

# ---------------------------------------------------------------- the calculator
st.subheader("Guarantee calculator", anchor=False)
st.markdown(
    "UMD histogram binning (uniform-mass bins, no sample splitting) on $n$ calibration rows "
    "with $B$ bins averages at least $m = \\lfloor n/B \\rfloor - 1$ labels per bin. With "
    "probability $1-\\alpha$ **every** bin's value is within "
    "$\\varepsilon = \\sqrt{\\log(2B/\\alpha)/(2m)}$ of the true mean of its bin (conditional, "
    "Theorem 3); a new point's bin is within $\\sqrt{\\log(2/\\alpha)/(2m)}$ (marginal, "
    "Theorem 4). Valid for $n \\ge 2B$."
)
c1, c2, c3, c4 = st.columns(4)
calc_n = widgets.number_input(c1, "Calibration rows n", 1, 10**9, 1000, step=100, key="validity_n")
calc_b = widgets.number_input(c2, "Bins B", 1, 100_000, 10, step=1, key="validity_bins")
calc_alpha = widgets.number_input(
    c3,
    "Failure probability α",
    0.001,
    0.999,
    0.1,
    step=0.01,
    format="%.3f",
    key="validity_alpha",
    help="Typical: 0.1; 0.01 for a highly sensitive domain.",
)
calc_eps = widgets.number_input(
    c4,
    "Target ε",
    0.001,
    0.999,
    0.1,
    step=0.01,
    format="%.3f",
    key="validity_target",
    help="For the inverse questions: the n needed and the largest B.",
)
report = None
with errors.show_errors():
    report = calls.guarantee(int(calc_n), int(calc_b), float(calc_alpha), epsilon=float(calc_eps))
if report is not None:
    if not report.valid:
        st.warning(
            f"No guarantee: the bound needs n ≥ 2B = {report.min_n:,} calibration rows.",
            icon=":material/warning:",
        )
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Conditional ε (Theorem 3)", _fmt(report.epsilon_conditional))
    m2.metric("Marginal ε (Theorem 4)", _fmt(report.epsilon_marginal))
    m3.metric("Zadrozny–Elkan ε (Corollary 1)", _fmt(report.epsilon_zadrozny_elkan))
    m4.metric(
        "Expected ECE ≤",
        _fmt(report.expected_ece),
        help="E[ℓp-ECE] ≤ 1/(2√m) for p in [1, 2] (Theorem 4(b), in the form valid for every n ≥ 2B).",
    )
    target = f"ε ≤ {report.epsilon_target:g}"
    st.markdown(
        f"- **n needed** for {target} with B = {report.n_bins}, α = {report.alpha:g}: "
        f"conditional **{_fmt(report.n_needed_conditional, ',')}**, marginal "
        f"**{_fmt(report.n_needed_marginal, ',')}**, Zadrozny–Elkan "
        f"**{_fmt(report.n_needed_zadrozny_elkan, ',')}** "
        "(closed form n = B(⌈log(2B/α)/(2ε²)⌉ + 1)).\n"
        f"- **Largest B** with {target} at n = {report.n:,}: conditional "
        f"**{_fmt(report.largest_bins_conditional, 'd')}**, marginal "
        f"**{_fmt(report.largest_bins_marginal, 'd')}** (more bins are sharper, fewer are "
        f"safer; m = {report.min_bin_labels:,} labels per bin now)."
    )
    widgets.chart(calls.epsilon_chart(report), "validity_calc_chart")

# ---------------------------------------------------------------- validity plots
st.subheader("Validity plots", anchor=False)
st.markdown(
    "Each run draws a random calibration part of the rows, fits the recalibrator on it and "
    "groups the other rows by their output value $h_b$. With $\\bar y_b$ the test mean of "
    "group $b$ and $d_b = |\\bar y_b - h_b|$, the marginal validity is "
    "$\\hat V(\\varepsilon) = \\sum_b (n_b/N)\\,\\mathbf 1\\{d_b \\le \\varepsilon\\}$ — the "
    "share of test rows whose miscalibration is at most ε — and the conditional validity is "
    "$\\hat V_c(\\varepsilon) = \\mathbf 1\\{\\max_b d_b \\le \\varepsilon\\}$ (Eq. 6). Curves "
    "are averaged over runs (band: ± sd of the mean); $1 - \\text{AUC}$ of $\\hat V$ is the "
    "plug-in ℓ1-ECE. Test noise makes $\\hat V$ a slight underestimate."
)

pred = state.current_predictions()
if pred is None:
    state.point_to_data_page(
        "Validity plots need predictions: upload a file or pick a bundled sample on the Data "
        "page. The calculator above works without data."
    )
    st.stop()
config = state.require_config()
if config.lens not in VALIDITY_LENSES:
    st.info(
        "Validity plots need one score and one 0/1 outcome per row: the **binary** lens "
        "(two classes) or the **top-label** lens. The sidebar's lens is "
        f"**{widgets.registry_label('lens', config.lens)}**; choose binary or top-label there.",
        icon=":material/info:",
    )
    st.stop()
if config.lens == "binary" and pred.n_classes != 2:
    st.info(
        f"The binary lens needs two classes; these predictions have {pred.n_classes}. Choose "
        "the top-label lens in the sidebar (the confidence of the predicted class against "
        "whether it is right).",
        icon=":material/info:",
    )
    st.stop()

methods = RECALIBRATORS.names(discrete_output=True)
p1, p2, p3, p4 = st.columns([2, 1, 1, 1])
method = widgets.choice(
    p1,
    "Recalibrator",
    methods,
    default="histogram-umd",
    format_func=lambda name: RECALIBRATORS.get(name).label,
    key="validity_method",
    help="Only recalibrators with piecewise-constant output: the estimator groups test rows "
    "by distinct output value. The theory curve exists for UMD and Zadrozny–Elkan.",
)
cal_fraction = widgets.slider(
    p2,
    "Calibration fraction",
    0.1,
    0.9,
    0.5,
    0.05,
    key="validity_cal",
    help="Share of the rows each run fits on; the rest judge it.",
)
n_resamples = widgets.number_input(
    p3,
    "Runs R",
    1,
    1000,
    default_runs(pred.n),
    step=10,
    key="validity_runs",
    help="Random calibration/test splits averaged (the paper uses 100). The default is 50, "
    f"fewer above {RUN_ROWS // 50:,} rows (runs × rows ≤ {RUN_ROWS:,}): each run refits on "
    "its own split.",
)
show_conditional = widgets.toggle(p4, "Conditional curves", value=True, key="validity_conditional")
n_cal = int(round(cal_fraction * pred.n))
st.caption(
    f"{pred.n:,} rows: each run fits on {n_cal:,} and judges on {pred.n - n_cal:,}; "
    f"B = {config.n_bins} bins, lens **{widgets.registry_label('lens', config.lens)}** and "
    f"seed {config.seed} come from the "
    "sidebar."
)
needed = RECALIBRATORS.get(method).min_calibration_rows(config.n_bins)
if n_cal < needed:
    st.info(
        f"{RECALIBRATORS.get(method).label} needs at least "
        f"{RECALIBRATORS.get(method).min_rows_per_bin} calibration rows per bin: {needed} for "
        f"B = {config.n_bins}, and a split gives {n_cal}. Lower the number of bins in the "
        "sidebar or raise the calibration fraction.",
        icon=":material/info:",
    )
    st.stop()

request = {
    "method": method,
    "n_bins": int(config.n_bins),
    "lens": config.lens,
    "n_cal": float(cal_fraction),
    "n_resamples": int(n_resamples),
    "seed": int(config.seed),
}
result = _curves(pred, request)
if result is None:
    st.stop()

finding.markdown(f"**{literal(validity_finding(result))}**")
k1, k2, k3, k4 = st.columns(4)
k1.metric(
    "ℓ1-ECE = 1 − AUC",
    format_number(result.ece_mean),
    help="Mean over runs of the plug-in ℓ1-ECE on the discrete bins, which equals one minus "
    "the area under the run's validity curve.",
)
k2.metric(
    "ε for 90 % of test rows",
    _fmt(result.epsilon_at(0.9), ".3f"),
    help="Smallest ε with mean V̂(ε) ≥ 0.9: the recalibrator is (ε, 0.1)-marginally "
    "calibrated on this data.",
)
k3.metric(
    "ε for all bins in 90 % of runs",
    _fmt(result.epsilon_at(0.9, curve="conditional"), ".3f"),
    help="Smallest ε with mean V̂c(ε) ≥ 0.9.",
)
k4.metric(
    "Guaranteed conditional ε",
    _fmt(result.epsilon_conditional, ".3f"),
    help=f"Theorem 3 at α = {result.alpha:g} for n = {result.n_cal:,} and B = {result.n_bins} "
    "(n/a for recalibrators without the guarantee).",
)
widgets.chart(calls.validity_chart(result, show_conditional=show_conditional), "validity_chart")
st.caption(
    f"Solid: mean of {result.n_resamples} runs with a ± sd-of-the-mean band; dashed: theory. "
    + result.theory_note
)
st.caption(
    f"AUC identity: the largest |1 − AUC − plug-in ℓ1-ECE| over runs is "
    f"{result.auc_identity_gap:.2e} (grid step {result.auc_identity_tolerance:g}: "
    + ("holds)." if result.auc_identity_holds else "does NOT hold).")
)
for note in result.notes:
    st.info(note, icon=":material/info:")

st.subheader("Per-bin view", anchor=False)
st.markdown(
    "Each group of run 1: the output value $h_b$ against the test mean $\\bar y_b$ with its "
    f"{result.confidence_level:.0%} Wilson interval (marker area ∝ test rows). The shaded band is "
    "$h \\pm \\varepsilon$ of Theorem 3: with probability $1-\\alpha$ every bin's true mean "
    "lies in it. The half-width per bin is $\\sqrt{\\log(2B/\\alpha)/(2 m_b)}$ with $m_b$ the "
    "calibration labels the bin averaged."
)
left, right = st.columns([1, 1])
with left:
    widgets.chart(calls.bin_validity_chart(result), "validity_bins_chart")
with right:
    shown = result.bins.drop(columns=["positives"])
    if shown["cal_count"].isna().all():
        shown = shown.drop(columns=["cal_count", "halfwidth"])
    widgets.table(shown, hide_index=True, key="validity_bins_table", column_config=BIN_COLUMNS)
if result.pooled_bins is not None:
    with st.expander(f"Bins pooled over the {result.n_resamples} runs (by rank of the output)"):
        st.caption(
            "UMD's edges move between runs, so bins are matched by the rank of their value. "
            "share_within: the share of runs whose bin gap is at most the conditional ε."
        )
        widgets.table(result.pooled_bins, hide_index=True, key="validity_pooled_table")
widgets.download(
    st,
    "Download the curves (CSV)",
    safe_csv(result.to_frame()),
    file_name="validity_curves.csv",
    key="validity_download",
    icon=":material/download:",
)
with st.expander("Sources", icon=":material/menu_book:"):
    title, url = widgets.PAPERS["gupta"]
    st.markdown(
        f"[{title}]({url}): validity plots §2.1 and Eq. (6), Theorem 3 (8), Corollary 1 (10), "
        "Theorem 4 (11); the theory curves solve (11) for α."
    )
