"""Findings in words (core.analyses.findings): hand-built bin tables and known worlds."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import core
from core.analyses.findings import (
    miscalibrated_bins,
    reliability_finding,
    suite_finding,
    validity_finding,
)
from core.analyses.findings import (
    test_finding as finding_of_test,
)
from core.data import load_predictions
from core.report import build_report


def _table(lower, count, score, observed, band_low, band_high):
    lower = np.asarray(lower, dtype=float)
    return pd.DataFrame(
        {
            "lower": lower,
            "upper": np.append(lower[1:], 1.0),
            "count": count,
            "mean_score": score,
            "mean_label": observed,
            "low": np.nan,
            "high": np.nan,
            "band_low": band_low,
            "band_high": band_high,
        }
    )


def test_miscalibrated_bins_by_hand():
    t = _table(
        [0, 0.25, 0.5, 0.75],
        [0, 10, 10, 10],
        [np.nan, 0.3, 0.6, 0.9],
        [np.nan, 0.31, 0.4, 0.95],
        [np.nan, 0.2, 0.5, 0.8],
        [np.nan, 0.4, 0.7, 1.0],
    )
    # empty bin: never off; 0.31 in [0.2, 0.4]; 0.4 below 0.5; 0.95 in [0.8, 1]
    assert miscalibrated_bins(t).tolist() == [False, False, True, False]
    # without a band: the observed frequency's interval against the mean score
    t2 = t.assign(band_low=np.nan, band_high=np.nan, low=[np.nan, 0.2, 0.3, 0.85])
    t2["high"] = [np.nan, 0.35, 0.5, 0.99]
    assert miscalibrated_bins(t2).tolist() == [False, False, True, False]


def _analysis(
    tables, value=0.041, interval=(0.037, 0.046), estimator="plugin", method="percentile"
):
    comps = tuple(SimpleNamespace(to_frame=lambda t=t: t) for t in tables)
    boot = (
        None
        if interval is None
        else SimpleNamespace(
            confidence_interval=SimpleNamespace(low=interval[0], high=interval[1]), method=method
        )
    )
    return SimpleNamespace(
        config=SimpleNamespace(estimator=estimator),
        headline=SimpleNamespace(value=value),
        headline_interval=boot,
        components=comps,
    )


def _world(gaps, empty=()):
    """Ten equal-width bins, observed = score − gap, band ± 0.05; some bins empty."""
    lower = np.arange(10) / 10
    score = lower + 0.05
    observed = score - np.asarray(gaps, dtype=float)
    count = np.where(np.isin(np.arange(10), empty), 0, 100)
    score = np.where(count > 0, score, np.nan)
    observed = np.where(count > 0, observed, np.nan)
    return _table(lower, count, score, observed, score - 0.05, score + 0.05)


def test_over_confident_above():
    gaps = [0] * 6 + [0.1, 0.15, 0.2, 0.2]
    text = reliability_finding(_analysis([_world(gaps)]))
    assert text == (
        "Over-confident above 0.6; Plug-in binned (ECE) 4.1 % [3.7, 4.6]; "
        "4 of 10 non-empty bins outside the calibrated band."
    )


def test_a_basic_interval_says_so():
    gaps = [0] * 6 + [0.1, 0.15, 0.2, 0.2]
    text = reliability_finding(_analysis([_world(gaps)], interval=(0.03, 0.04), method="basic"))
    assert "Plug-in binned (ECE) 4.1 % [3.0, 4.0] (basic interval: the estimator's bias at " in text


def test_under_confident_below_with_empty_bins():
    gaps = [0, -0.1, -0.1, -0.08] + [0] * 6
    text = reliability_finding(_analysis([_world(gaps, empty=(0, 9))], interval=None))
    assert text.startswith("Under-confident below 0.4; Plug-in binned (ECE) 4.1 %;")
    assert text.endswith("3 of 8 non-empty bins outside the calibrated band (2 empty).")


def test_both_sides_and_calibrated():
    gaps = [-0.1, -0.1] + [0] * 6 + [0.1, 0.1]
    text = reliability_finding(_analysis([_world(gaps)]))
    assert text.startswith("Over-confident above 0.8, under-confident below 0.2;")
    calm = reliability_finding(_analysis([_world([0.01] * 10)], value=0.0099))
    assert calm.startswith("No bin is off the diagonal beyond noise;")
    assert "0.99 % [3.7, 4.6]" in calm
    assert calm.endswith("all 10 non-empty bins inside the calibrated band.")


def test_kernel_headline_is_not_a_percentage():
    text = reliability_finding(
        _analysis([_world([0] * 10)], value=0.00714, interval=None, estimator="skce-ul")
    )
    assert "SKCE (unbiased, linear) 0.00714;" in text and "%" not in text


@pytest.mark.parametrize("power", [1.0, 1.6])
def test_on_a_real_analysis(power):
    rng = np.random.default_rng(5)
    p = rng.uniform(size=4000)
    y = (rng.uniform(size=4000) < p**power).astype(int)
    a = core.analyze((p, y), core.AnalysisConfig(lens="binary", n_resamples=0))
    text = reliability_finding(a)
    if power == 1.0:  # calibrated: at most a bin or two outside a pointwise 95 % band
        assert text.startswith(("No bin", "Over", "Under")) and "Plug-in binned (ECE)" in text
    else:  # p^1.6 < p: the model is over-confident
        assert text.startswith("Over-confident") and "under-confident" not in text


def _test(p, label="Asymptotic test (SKCE_ul)", bound=False):
    return SimpleNamespace(pvalue=p, label=label, pvalue_is_bound=bound)


def test_test_and_suite_findings():
    assert finding_of_test(_test(2e-22)) == (
        "Asymptotic test (SKCE_ul) rejects calibration at α = 0.05 (p < 1e-16)."
    )
    assert finding_of_test(_test(0.84)).startswith(
        "Asymptotic test (SKCE_ul) does not reject calibration at α = 0.05 (p = 0.84): "
    )
    assert "(p ≤ 0.5)" in finding_of_test(_test(0.5, bound=True))
    suite = SimpleNamespace(results=(_test(0.3, "A"), _test(0.004, "B"), _test(0.01, "C")))
    assert suite_finding(suite) == (
        "2 of 3 tests reject calibration at α = 0.05; the strongest: B (p = 0.004)."
    )
    assert suite_finding(suite, alpha=0.001).startswith(
        "None of 3 tests rejects calibration at α = 0.001 (smallest p = 0.004, B)"
    )


def test_validity_finding():
    rng = np.random.default_rng(2)
    p = rng.uniform(size=3000)
    y = (rng.uniform(size=3000) < p).astype(int)
    r = core.validity_curves(
        p, y, method="histogram-umd", n_bins=5, lens="binary", n_resamples=5, seed=1
    )
    text = validity_finding(r)
    assert text.startswith(f"Histogram binning (UMD) on {r.n_cal:,} calibration rows: ℓ1-ECE ")
    assert "over 5 runs" in text and "(Theorem 3, α = 0.1)" in text


@pytest.mark.parametrize("page", ["reliability", "tests", "estimators", "compare"])
def test_pages_open_with_their_finding(page):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from dashboard.state import sample_catalog

    sample = next(iter(sample_catalog()), None)
    if sample is None:
        pytest.skip("no bundled sample")
    app = str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py")
    at = AppTest.from_file(app, default_timeout=300)
    for k, v in {"sample": sample, "n_resamples": "20", "tests_resamples": "100"}.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, at.exception
    texts = [m.value.replace("\\", "") for m in at.markdown]  # literal() escapes punctuation
    first = texts[0]
    if page == "estimators":
        assert any("estimates of the ℓp calibration error range from" in t for t in texts)
        return
    if page == "compare":
        assert any("is the best calibrated by" in t for t in texts)
        return
    if page == "reliability":
        assert "Plug-in binned (ECE)" in first and "non-empty bins" in first
        assert "Reliability diagram" not in first
    else:
        assert "reject" in first and "tests" in first


def _estimator_rows(rows):
    cols = ["key", "estimator", "label", "group", "value", "low", "high"]
    return SimpleNamespace(table=pd.DataFrame(rows, columns=cols))


def test_estimators_finding_by_hand():
    from core.analyses.findings import estimators_finding

    nan = float("nan")
    apart = _estimator_rows(
        [
            ["plugin", "plugin", "Plug-in", "binned", 0.041, 0.037, 0.046],
            ["debiased", "debiased", "Debiased", "binned", 0.030, 0.020, 0.035],
            ["smooth", "smooth", "Smooth ECE", "smooth", 0.035, 0.031, 0.040],
            ["skce-uq", "skce-uq", "SKCE (uq)", "kernel", 0.002, nan, nan],
        ]
    )
    assert estimators_finding(apart) == (
        "3 estimates of the ℓp calibration error range from 3.0 % (Debiased) to 4.1 % "
        "(Plug-in); the intervals of Debiased and Plug-in do not overlap; 1 other estimate "
        "measures other quantities (the Brier-scale MCB, kernel distances, the whole-vector "
        "ECE)."
    )
    meet = _estimator_rows(
        [
            ["plugin", "plugin", "Plug-in", "binned", 0.041, 0.030, 0.046],
            ["debiased", "debiased", "Debiased", "binned", 0.033, 0.020, 0.035],
        ]
    )
    assert estimators_finding(meet).endswith("; their intervals share a value.")
    none = _estimator_rows([["skce-uq", "skce-uq", "SKCE (uq)", "kernel", nan, nan, nan]])
    assert estimators_finding(none).startswith("No estimate")


def test_comparison_finding_on_the_sample():
    from core.analyses.findings import comparison_finding

    root = Path(__file__).resolve().parents[1]
    pred = core.load_predictions(root / "sample_data" / "binary_breast_cancer.csv")
    cmp = core.compare_models(
        pred.by_model(), config=core.AnalysisConfig(lens="binary", n_resamples=100), seed=0
    )
    text = comparison_finding(cmp)
    t = cmp.table[cmp.table.metric == cmp.metrics[0].key].sort_values("value")
    best, worst = t.iloc[0], t.iloc[-1]
    assert text.startswith(f"{best.model} is the best calibrated by {cmp.metrics[0].label} (")
    assert f"{100 * best.value:.1f} %" in text and f"the worst is {worst.model}" in text
    d = cmp.differences[cmp.differences.metric == cmp.metrics[0].key]
    worse = int((d.significant & ~d.better).sum())
    assert f"{worse} of {len(d)} other models are worse beyond noise" in text
    assert "basic" not in text
    basic = core.compare_models(
        pred.by_model(),
        config=core.AnalysisConfig(lens="binary", n_resamples=100, bootstrap_interval="basic"),
        seed=0,
    )
    assert comparison_finding(basic).endswith(
        "(basic intervals: the estimators' bias at this n removed)."
    )
    # no intervals (the Compare page before they are computed): nothing is beyond noise or not
    bare = core.compare_models(
        pred.by_model(), config=core.AnalysisConfig(lens="binary"), n_resamples=0, seed=0
    )
    text = comparison_finding(bare)
    others = len(bare.models) - 1
    assert f"whether the other {others} models differ from {bare.reference} beyond noise " in text
    assert "worse beyond noise" not in text
    basic_bare = core.compare_models(
        pred.by_model(),
        config=core.AnalysisConfig(lens="binary", bootstrap_interval="basic"),
        n_resamples=0,
        seed=0,
    )
    assert "basic" not in comparison_finding(basic_bare)  # no interval to name
    # some intervals undefined: the count says of how many
    import dataclasses

    diffs = cmp.differences.copy()
    first = diffs.index[diffs.metric == cmp.metrics[0].key][0]
    diffs.loc[first, ["low", "high"]] = np.nan
    part = comparison_finding(dataclasses.replace(cmp, differences=diffs))
    d = diffs[(diffs.metric == cmp.metrics[0].key) & diffs.low.notna()]
    worse = int((d.significant & ~d.better).sum())
    assert f"{worse} of {len(d)} other models with an interval are worse beyond noise" in part


def _recal(rows, evaluation="test", interval="percentile"):
    cols = ["method", "method_label", "metric", "metric_label", "value", "low", "high"]
    return SimpleNamespace(
        metrics=pd.DataFrame(rows, columns=cols),
        evaluation=evaluation,
        settings={"bootstrap_interval": interval},
    )


def test_recalibration_finding_by_hand():
    from core.analyses.findings import recalibration_finding

    nan = float("nan")
    base = [
        ["uncalibrated", "Uncalibrated", "plugin", "ECE", 0.061, 0.039, 0.092],
        ["uncalibrated", "Uncalibrated", "brier", "Brier score", 0.1161, nan, nan],
    ]
    helps = _recal(
        [
            *base,
            ["platt", "Platt scaling", "plugin", "ECE", 0.041, 0.027, 0.065],
            ["isotonic", "Isotonic", "plugin", "ECE", 0.026, 0.012, 0.048],
            ["isotonic", "Isotonic", "brier", "Brier score", 0.08213, nan, nan],
        ]
    )
    assert recalibration_finding(helps) == (
        "On the test rows, Isotonic lowers ECE from 6.1 % [3.9, 9.2] (uncalibrated) to "
        "2.6 % [1.2, 4.8]; Brier score 0.1161 → 0.08213."
    )
    basic = _recal(helps.metrics.values.tolist(), interval="basic")
    assert recalibration_finding(basic).endswith(
        "0.08213 (basic intervals: the estimators' bias at this n removed)."
    )
    worse = _recal([*base, ["platt", "Platt scaling", "plugin", "ECE", 0.07, 0.05, 0.09]])
    assert recalibration_finding(worse) == (
        "On the test rows, no recalibrator lowers ECE below the uncalibrated model's "
        "6.1 % [3.9, 9.2]."
    )


def test_bias_finding_by_hand():
    from core.analyses.findings import bias_finding

    rows = [
        # name, binning, n, bias, se
        ("plugin", "equal-width", 200, 0.020, 0.002),
        ("plugin", "equal-width", 1000, 0.008, 0.001),
        ("debiased", "equal-width", 200, -0.004, 0.003),
        ("debiased", "equal-width", 1000, -0.001, 0.001),
    ]
    frame = pd.DataFrame(
        [
            {
                "name": a, "binning": b, "n": n, "bias": v, "bias_low": v - 1.96 * se,
                "bias_high": v + 1.96 * se, "reference_kind": "true CE", "n_resamples": 500,
            }
            for a, b, n, v, se in rows
        ]
    )  # fmt: skip
    result = SimpleNamespace(summary=lambda: frame)
    text = bias_finding(result)
    assert text.startswith("At n = 1,000, Debiased") and "closest to the true CE" in text
    assert "(bias -0.1 % [-0.3, +0.096])" in text.replace("−", "-")
    assert "Plug-in binned (ECE), equal width is furthest (bias +0.8 %" in text
    assert text.endswith("over 500 datasets.")
    # the data's n picks the nearest simulated size
    assert bias_finding(result, user_n=250).startswith("At n = 200, Debiased")


# --------------------------------------------------------------- a test's statistic and its estimate

_STATISTIC_TESTS = [name for name in core.TESTS.names() if core.TESTS.get(name).estimator]


def test_kernel_tests_name_the_estimate_that_is_their_statistic():
    assert set(_STATISTIC_TESTS) >= {"skce-block", "skce-ul-asymptotic", "skce-uq-bootstrap"}
    for name in _STATISTIC_TESTS:
        assert core.TESTS.get(name).estimator in core.ESTIMATORS


@pytest.mark.parametrize("name", _STATISTIC_TESTS)
@pytest.mark.parametrize("lens", ["canonical", "top-label"])
def test_statistic_equals_the_registered_estimate(name, lens):
    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.full(4, 0.5), size=300)
    y = np.array([rng.choice(4, p=row**1.4 / (row**1.4).sum()) for row in p])
    extra = {"n_resamples": 50} if "n_resamples" in core.TESTS.get(name).options else {}
    t = core.calibration_test(p, y, test=name, lens=lens, seed=3, **extra)
    est = core.calibration_error(p, y, estimator=core.TESTS.get(name).estimator, lens=lens)
    assert t.statistic == pytest.approx(est.value, rel=1e-12, abs=1e-15)


def test_statistic_note_says_which_lens_each_number_is_on():
    from core.analyses.findings import statistic_note

    t = SimpleNamespace(test="skce-block", lens="canonical")
    other = statistic_note(t, "top-label", ["plugin", "skce-block"])
    assert "Canonical (full vector) lens" in other and "Top-label (confidence) lens" in other
    assert "a different number" in other
    same = statistic_note(t, "canonical", ["skce-block"])
    assert same == "Its statistic is the SKCE (block) of the Metrics table."
    assert statistic_note(t, "top-label", ["plugin"]) == ""  # not in the table
    spieg = SimpleNamespace(test="spiegelhalter", lens="binary")
    assert statistic_note(spieg, "binary", ["plugin"]) == ""  # no registered estimate


def test_report_explains_the_two_block_skce_values(tmp_path):
    rng = np.random.default_rng(11)
    p = rng.dirichlet(np.ones(3), size=400)
    y = np.array([rng.choice(3, p=row) for row in p])
    report = build_report(
        load_predictions(p, labels=y), config=core.AnalysisConfig(lens="top-label")
    )
    html = report.to_html()
    assert "Its statistic is the SKCE (block) on the Canonical (full vector) lens" in html


def test_estimators_finding_leaves_the_brier_scale_mcb_out_of_the_lp_range():
    from core.analyses.findings import estimators_finding

    rows = _estimator_rows(
        [
            ["plugin", "plugin", "Plug-in", "binned", 0.041, 0.037, 0.046],
            ["smooth", "smooth", "Smooth ECE", "smooth", 0.035, 0.031, 0.040],
            ["mcb", "mcb", "CORP miscalibration (MCB)", "binned", 0.004, 0.003, 0.005],
        ]
    )
    text = estimators_finding(rows)
    assert text.startswith("2 estimates of the ℓp calibration error range from 3.5 % (Smooth ECE)")
    assert "MCB)" not in text and "1 other estimate measures" in text
    assert core.ESTIMATORS.get("mcb").lp_scale and not core.ESTIMATORS.get("mcb").lp_error
