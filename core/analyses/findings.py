"""What a result found, in one plain sentence: the first line of each page and of the report.

Each function reads a result object and returns one sentence (a few ``;``-joined parts),
with numbers written by :mod:`core.base.numbers`; the dashboard shows it above the page's
figures and the report beside each model, so both use the same words. The rules are in
``docs/formulas.md`` ("Findings in words").

- :func:`reliability_finding` (:class:`core.analyses.analysis.ReliabilityAnalysis`): where the model
  is over- or under-confident, the headline with its interval, and how many bins lie
  outside the calibrated band, e.g. "Over-confident above 0.6; Plug-in binned (ECE) 4.1 %
  [3.7, 4.6]; 6 of 15 bins outside the calibrated band."
- :func:`test_finding` (:class:`core.analyses.calibration_tests.CalibrationTestResult`).
- :func:`validity_finding` (:class:`core.analyses.validity.ValidityResult`).
- :func:`estimators_finding` (:class:`core.analyses.estimator_comparison.EstimatorComparison`): how
  far the estimates of one ℓp calibration error spread, and whether their intervals meet.
- :func:`comparison_finding` (:class:`core.analyses.model_comparison.ModelComparison`): the best and
  worst calibrated models and how many differ from the reference beyond noise.
- :func:`recalibration_finding` (:class:`core.recalibration.evaluation.RecalibrationComparison`):
  which recalibrator lowers the calibration error most on the held-out rows.
- :func:`bias_finding` (:class:`core.bias.SimulationResult`): which estimator lands closest to
  the true calibration error (or the reference) at the data's sample size.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from core.analyses.calibration_tests import TESTS
from core.base.numbers import format_interval, format_number, format_pvalue
from core.bias import option_label
from core.estimators import ESTIMATORS
from core.recalibration import RECALIBRATORS
from core.stats.intervals import BOOTSTRAP_INTERVALS
from core.stats.lenses import LENSES

__all__ = [
    "bias_finding",
    "comparison_finding",
    "estimators_finding",
    "miscalibrated_bins",
    "recalibration_finding",
    "reliability_finding",
    "statistic_note",
    "suite_finding",
    "test_finding",
    "validity_finding",
]


def miscalibrated_bins(table: Any) -> np.ndarray:
    """Return which non-empty bins are off the diagonal beyond noise.

    A bin is off when its observed frequency lies outside the calibrated (consistency)
    band or, without a band, when its interval of the observed frequency excludes the
    bin's mean score.

    Parameters
    ----------
    table : pandas.DataFrame
        A bin table (:meth:`core.analyses.analysis.ComponentTable.to_frame`: columns ``count``,
        ``mean_score``, ``mean_label``, ``low``, ``high``, ``band_low``, ``band_high``).

    Returns
    -------
    numpy.ndarray
        ``(B,)`` booleans; False for empty bins.
    """
    count = table["count"].to_numpy()
    score = table["mean_score"].to_numpy(dtype=float)
    observed = table["mean_label"].to_numpy(dtype=float)
    if "band_low" in table and np.isfinite(table["band_low"].to_numpy(dtype=float)).any():
        low, high, value = table["band_low"], table["band_high"], observed
    else:  # no band: does the observed frequency's interval reach the mean score?
        low, high, value = table["low"], table["high"], score
    low = low.to_numpy(dtype=float)
    high = high.to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        outside = (value < low) | (value > high)
    return (count > 0) & np.isfinite(low) & np.isfinite(high) & outside


def _side(tables: list[Any], flags: list[np.ndarray]) -> str:
    """Where the flagged bins say the model is over- or under-confident."""
    over, under, filled = [], [], []
    for t, f in zip(tables, flags, strict=True):
        gap = t["mean_score"].to_numpy(dtype=float) - t["mean_label"].to_numpy(dtype=float)
        lower = t["lower"].to_numpy(dtype=float)
        upper = t["upper"].to_numpy(dtype=float)
        over += [(lower[i], upper[i]) for i in np.flatnonzero(f & (gap > 0))]
        under += [(lower[i], upper[i]) for i in np.flatnonzero(f & (gap < 0))]
        filled += [(lower[i], upper[i]) for i in np.flatnonzero(t["count"].to_numpy() > 0)]
    # "above"/"below" are read against the bins that hold rows: empty bins say nothing
    first = min(s[0] for s in filled)
    last = max(s[1] for s in filled)
    parts = []
    for word, spans in (("Over-confident", over), ("Under-confident", under)):
        if spans:
            lo = min(s[0] for s in spans)
            hi = max(s[1] for s in spans)
            if lo <= first and hi >= last:
                where = "across the range"
            elif hi >= last:
                where = f"above {format_number(lo, 2)}"
            elif lo <= first:
                where = f"below {format_number(hi, 2)}"
            else:
                where = f"between {format_number(lo, 2)} and {format_number(hi, 2)}"
            parts.append(f"{word} {where}")
    text = ", ".join(parts)
    return text[:1] + text[1:].replace("Under", "under")


def _pct(x: float) -> str:
    """Write a share in percent: one decimal from 1 % up (4.1, 12.3), two significant digits below."""
    v = 100 * float(x)
    return f"{v:.1f}" if abs(v) >= 1 else format_number(v, 2, zero_below=1e-10)


def _value_text(value: float, lp_scale: bool, interval: Any = None) -> str:
    """Write a calibration error as people read it: percent on the ℓp scale, else plain."""
    if lp_scale:
        text = f"{_pct(value)} %"
        if interval is not None:
            text += f" [{_pct(interval[0])}, {_pct(interval[1])}]"
        return text
    text = format_number(value)
    if interval is not None:
        text += " " + format_interval(*interval)
    return text


def reliability_finding(analysis: Any) -> str:
    """One sentence of what the reliability analysis found.

    Parameters
    ----------
    analysis : ReliabilityAnalysis
        The result of :func:`core.analyze`.

    Returns
    -------
    str
        "<where over/under-confident, or no bin off>; <headline label> <value> [interval];
        <k> of <B> bins outside the calibrated band." A basic interval says so. Values on the ℓp scale (binned
        estimators) are in percent; empty bins are counted apart ("3 bins empty").
    """
    cfg = analysis.config
    info = ESTIMATORS.get(cfg.estimator)
    interval = None
    if analysis.headline_interval is not None:
        ci = analysis.headline_interval.confidence_interval
        interval = (ci.low, ci.high)
    head = f"{info.label} {_value_text(analysis.headline.value, info.lp_error, interval)}"
    if interval is not None:
        head += _interval_tail(analysis.headline_interval.method, several=False)
    tables = [c.to_frame() for c in analysis.components]
    if not tables:
        return head + "."
    flags = [miscalibrated_bins(t) for t in tables]
    n_bins = sum(len(t) for t in tables)
    empty = sum(int((t["count"].to_numpy() == 0).sum()) for t in tables)
    off = sum(int(f.sum()) for f in flags)
    has_band = any(
        "band_low" in t and np.isfinite(t["band_low"].to_numpy(dtype=float)).any() for t in tables
    )
    where = "outside the calibrated band" if has_band else "whose interval misses the diagonal"
    side = _side(tables, flags) if off else "No bin is off the diagonal beyond noise"
    bins = (
        f"{off} of {n_bins - empty} non-empty bins {where}"
        if off
        else f"all {n_bins - empty} non-empty bins inside the calibrated band"
        if has_band
        else f"every interval of the {n_bins - empty} non-empty bins reaches the diagonal"
    )
    if empty:
        bins += f" ({empty} empty)"
    if len(tables) > 1:
        bins += f", over {len(tables)} components"
    return f"{side}; {head}; {bins}."


def test_finding(result: Any, alpha: float = 0.05) -> str:
    """One sentence of a calibration test's verdict at level ``alpha``.

    Parameters
    ----------
    result : CalibrationTestResult
        A test's result.
    alpha : float, default=0.05
        The level at which it is read.

    Returns
    -------
    str
        "<label> rejects calibration at α = 0.05 (p < 1e-16)." or "... does not reject
        calibration (p = 0.84): no evidence of miscalibration, which is not proof of
        calibration."
    """
    p = result.pvalue
    label = result.label
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return f"{label}: no p-value."
    shown = format_pvalue(p)
    if shown.startswith("<"):
        ptext = f"p {shown}"
    else:
        ptext = f"p {'≤' if result.pvalue_is_bound else '='} {shown}"
    if p < alpha:
        return f"{label} rejects calibration at α = {format_number(alpha)} ({ptext})."
    return (
        f"{label} does not reject calibration at α = {format_number(alpha)} ({ptext}): no "
        "evidence of miscalibration, which is not proof of calibration."
    )


def statistic_note(result: Any, lens: str, shown: Any) -> str:
    """One sentence relating a test's statistic to the same estimator in a metrics table.

    A kernel test's statistic is a registered estimate (``TestInfo.estimator``) on the
    test's lens, which may differ from the table's lens: the report shows both, so it says
    which is which rather than leaving two values of one name unexplained.

    Parameters
    ----------
    result : CalibrationTestResult
        A test's result.
    lens : str
        The lens of the metrics table beside it.
    shown : iterable of str
        The estimator names in that table.

    Returns
    -------
    str
        "" when the statistic is no estimate of the table; else e.g. "Its statistic is the
        SKCE (block) on the Canonical (full vector) lens; the Metrics table's SKCE (block)
        is on the Top-label (confidence) lens, a different number."
    """
    name = TESTS.get(result.test).estimator if result.test in TESTS else ""
    if not name or name not in set(shown):
        return ""
    label = ESTIMATORS.get(name).label
    if result.lens == lens:
        return f"Its statistic is the {label} of the Metrics table."

    def named(code: str) -> str:
        return LENSES.get(code).label if code in LENSES else code

    return (
        f"Its statistic is the {label} on the {named(result.lens)} lens; the Metrics "
        f"table's {label} is on the {named(lens)} lens, a different number."
    )


def suite_finding(suite: Any, alpha: float = 0.05) -> str:
    """One sentence of a test suite's verdicts at level ``alpha``.

    Parameters
    ----------
    suite : TestSuiteResult
        The result of :func:`core.analyses.calibration_tests.run_tests`.
    alpha : float, default=0.05
        The level at which the p-values are read.

    Returns
    -------
    str
        "3 of 7 tests reject calibration at α = 0.05; the smallest p-value: <label> (p < 1e-16)."
        or "None of 7 tests rejects calibration at α = 0.05 (smallest p = 0.21, <label>): no
        evidence of miscalibration, which is not proof of calibration."
    """
    results = [r for r in suite.results if r.pvalue is not None and not math.isnan(r.pvalue)]
    if not results:
        return "No test ran."
    level = f"α = {format_number(alpha)}"
    rejecting = sum(r.pvalue < alpha for r in results)
    low = min(results, key=lambda r: r.pvalue)
    shown = format_pvalue(low.pvalue)
    ptext = (
        f"p {shown}"
        if shown.startswith("<")
        else f"p {'≤' if low.pvalue_is_bound else '='} {shown}"
    )
    if rejecting:
        return (
            f"{rejecting} of {len(results)} tests reject calibration at {level}; the strongest: "
            f"{low.label} ({ptext})."
        )
    return (
        f"None of {len(results)} tests rejects calibration at {level} (smallest {ptext}, "
        f"{low.label}): no evidence of miscalibration, which is not proof of calibration."
    )


def validity_finding(result: Any, q: float = 0.9) -> str:
    """One sentence of what the validity runs found.

    Parameters
    ----------
    result : ValidityResult
        The result of :func:`core.analyses.validity.validity_curves`.
    q : float, default=0.9
        The share of test rows (marginal) and of runs (conditional) read off the curves.

    Returns
    -------
    str
        "<recalibrator> on <n_cal> calibration rows: ℓ1-ECE 3.1 % over <R> runs; 90 % of test
        rows within ε = 0.06; every bin within ε = 0.12 in 90 % of runs; guaranteed ε = 0.21
        (Theorem 3, α = 0.1)."
    """
    share = f"{format_number(100 * q, 3)} %"
    parts = [
        f"{RECALIBRATORS.get(result.method).label} on {result.n_cal:,} calibration rows: "
        f"ℓ1-ECE {_value_text(result.ece_mean, True)} over {result.n_resamples:,} runs"
    ]
    marginal = result.epsilon_at(q)
    conditional = result.epsilon_at(q, curve="conditional")
    parts.append(
        f"{share} of test rows within ε = {format_number(marginal, 2)}"
        if np.isfinite(marginal)
        else f"fewer than {share} of test rows within any ε"
    )
    parts.append(
        f"every bin within ε = {format_number(conditional, 2)} in {share} of runs"
        if np.isfinite(conditional)
        else f"in fewer than {share} of runs is every bin within one ε of the grid"
    )
    guaranteed = result.epsilon_conditional
    if np.isfinite(guaranteed):
        parts.append(
            f"guaranteed ε = {format_number(guaranteed, 2)} (Theorem 3, α = "
            f"{format_number(result.alpha)})"
        )
    else:
        parts.append("no distribution-free guarantee for this recalibrator")
    return "; ".join(parts) + "."


def estimators_finding(comparison: Any) -> str:
    """One sentence of how far the estimators of one calibration error disagree.

    Parameters
    ----------
    comparison : EstimatorComparison
        The result of :func:`core.compare_estimators`.

    Returns
    -------
    str
        "<k> estimates of the ℓp calibration error range from <low> % (<label>) to <high> %
        (<label>); <their intervals share a value | the intervals of <a> and <b> do not
        overlap>." Only ℓp calibration errors (:attr:`EstimatorInfo.lp_error`: binned and
        smooth, not the Brier-scale MCB) are compared; the kernel, joint-binned and MCB
        estimates measure other quantities, which the sentence says when they ran.
    """
    table = comparison.table
    lp = np.array([ESTIMATORS.get(e).lp_error for e in table.estimator], dtype=bool)
    rows = table[lp & table.value.notna().to_numpy()]
    other = int((~lp & table.value.notna().to_numpy()).sum())
    verb = "estimate measures" if other == 1 else "estimates measure"
    tail = (
        f"; {other} other {verb} other quantities (the Brier-scale MCB, kernel distances, "
        "the whole-vector ECE)"
        if other
        else ""
    )
    if rows.empty:
        return (
            "No estimate of the ℓp calibration error could be computed on these rows" + tail + "."
        )
    lo, hi = rows.loc[rows.value.idxmin()], rows.loc[rows.value.idxmax()]
    if len(rows) == 1:
        return f"{lo.label} {_value_text(lo.value, True)}{tail}."
    head = (
        f"{len(rows)} estimates of the ℓp calibration error range from "
        f"{_value_text(lo.value, True)} ({lo.label}) to {_value_text(hi.value, True)} ({hi.label})"
    )
    both = rows[rows.low.notna() & rows.high.notna()]
    if len(both) >= 2:
        top, bottom = both.loc[both.low.idxmax()], both.loc[both.high.idxmin()]
        if top.low <= bottom.high:
            head += "; their intervals share a value"
        else:
            head += f"; the intervals of {bottom.label} and {top.label} do not overlap"
    return head + tail + "."


def comparison_finding(comparison: Any) -> str:
    """One sentence of which model is best calibrated, and by how much.

    Parameters
    ----------
    comparison : ModelComparison
        The result of :func:`core.compare_models`.

    Returns
    -------
    str
        "<best> is the best calibrated by <metric> (<value> [interval]); <k> of <m> other
        models are worse beyond noise than <reference>; the worst is <model> (<value>)."
        The first metric of the comparison (the headline estimator) decides.
    """
    metric = comparison.metrics[0]
    table = comparison.table[comparison.table.metric == metric.key].dropna(subset=["value"])
    if table.empty:
        return f"No model has a value of {metric.label}."

    lp = metric.kind != "score" and ESTIMATORS.get(metric.name).lp_error
    order = table.sort_values("value", ascending=not metric.higher_is_better)
    best, worst = order.iloc[0], order.iloc[-1]

    def value(row: Any) -> str:
        interval = None if math.isnan(row.low) else (row.low, row.high)
        return _value_text(row.value, lp, interval)

    text = f"{best.model} is the best calibrated by {metric.label} ({value(best)})"
    diffs = comparison.differences
    diffs = diffs[diffs.metric == metric.key]
    # only a difference with an interval can be beyond noise or within it
    known = diffs[diffs.low.notna() & diffs.high.notna()]
    if len(diffs) and known.empty:
        text += (
            f"; whether the other {len(diffs)} models differ from {comparison.reference} "
            "beyond noise needs the bootstrap intervals"
        )
    elif len(diffs):
        worse = int((known.significant & ~known.better).sum())
        better = int(known.better.sum())
        of = (
            f"{len(known)} other models with an interval"
            if len(known) < len(diffs)
            else (f"{len(diffs)} other models")
        )
        text += f"; against {comparison.reference}, {worse} of {of} are worse beyond noise" + (
            f" and {better} better" if better else ""
        )
    if len(order) > 1:
        text += f"; the worst is {worst.model} ({value(worst)})"
    if table.low.isna().all() and known.empty:  # no interval to say the kind of
        return text + "."
    return text + _interval_tail(comparison.config.bootstrap_interval) + "."


def _interval_tail(method: str, *, several: bool = True) -> str:
    """Return what a sentence with intervals adds when they remove the bias ("" otherwise)."""
    kind = BOOTSTRAP_INTERVALS.get(method)
    if not kind.pivots:
        return ""
    if several:
        return f" ({kind.word} intervals: the estimators' bias at this n removed)"
    return f" ({kind.word} interval: the estimator's bias at this n removed)"


def recalibration_finding(result: Any) -> str:
    """One sentence of which recalibrator helps most on the held-out rows.

    Parameters
    ----------
    result : RecalibrationComparison
        The result of :func:`core.recalibration.evaluation.compare_recalibrators`.

    Returns
    -------
    str
        "On the <evaluation> rows, <method> lowers <metric> from <value> [interval]
        (uncalibrated) to <value> [interval]; Brier score <before> → <after>." The first
        metric of the table decides; when no method beats the uncalibrated model, it says so.
    """
    table = result.metrics
    metric = table.metric.iloc[0]
    rows = table[(table.metric == metric) & table.value.notna()]
    base = rows[rows.method == "uncalibrated"]
    others = rows[rows.method != "uncalibrated"]
    if base.empty or others.empty:
        return "No recalibrator could be judged on these rows."

    def value(row: Any) -> str:
        interval = None if math.isnan(row.low) else (row.low, row.high)
        return _value_text(row.value, True, interval)

    before, best = base.iloc[0], others.loc[others.value.idxmin()]
    label = str(before.metric_label)
    where = f"On the {result.evaluation} rows"
    tail = _interval_tail(result.settings.get("bootstrap_interval", "percentile"))
    if best.value >= before.value:
        return (
            f"{where}, no recalibrator lowers {label} below the uncalibrated model's "
            f"{value(before)}{tail}."
        )
    text = (
        f"{where}, {best.method_label} lowers {label} from {value(before)} (uncalibrated) "
        f"to {value(best)}"
    )
    brier = table[(table.metric == "brier") & table.value.notna()]
    b0, b1 = brier[brier.method == "uncalibrated"], brier[brier.method == best.method]
    if len(b0) and len(b1):
        text += (
            f"; Brier score {format_number(b0.value.iloc[0])} → {format_number(b1.value.iloc[0])}"
        )
    return text + tail + "."


def bias_finding(result: Any, user_n: int | None = None) -> str:
    """One sentence of which estimator lands closest to the reference at one sample size.

    Parameters
    ----------
    result : SimulationResult
        The result of :func:`core.bias.simulate_estimates`.
    user_n : int, optional
        The loaded data's rows: the simulated ``n`` closest to it is read (else the largest).

    Returns
    -------
    str
        "At n = <n>, <label> is closest to the <reference> on average (bias <b> %
        [<low>, <high>]); <label> is furthest (bias <b> % [...]); over <R> datasets." The
        bias is the mean estimate minus the reference, with its 95 % interval (± 1.96·SE).
    """
    table = result.summary().dropna(subset=["bias"])
    if table.empty:
        return "No estimator has a bias at these sample sizes."
    ns = np.sort(table.n.unique())
    n = int(ns[-1] if user_n is None else ns[np.argmin(np.abs(ns - user_n))])
    at = table[table.n == n]
    reference = str(at.reference_kind.iloc[0])

    def label(row: Any) -> str:
        return option_label(f"{row['name']}:{row['binning']}")

    def bias(row: Any) -> str:
        low, high = 100 * row["bias_low"], 100 * row["bias_high"]
        return (
            f"bias {format_number(100 * row['bias'], 2, signed=True)} % "
            f"[{format_number(low, 2, signed=True)}, {format_number(high, 2, signed=True)}]"
        )

    order = at.assign(gap=at.bias.abs()).sort_values("gap")
    best, worst = order.iloc[0], order.iloc[-1]
    text = f"At n = {n:,}, {label(best)} is closest to the {reference} on average ({bias(best)})"
    if len(order) > 1:
        text += f"; {label(worst)} is furthest ({bias(worst)})"
    return text + f"; over {int(at.n_resamples.iloc[0]):,} datasets."
