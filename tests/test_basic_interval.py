"""The basic (pivotal) bootstrap interval: hand cases, the pivots, Kumar et al.'s code, one path.

The basic interval is ``(θ̂ + θ_F − q_hi, θ̂ + θ_F − q_lo)`` with ``θ_F`` the estimand's value in
the bootstrap world (:mod:`core.stats.intervals`), cut to the estimand's range (a calibration error is at
least 0; a difference has no range). Every surface that shows an interval reads it from
the config's ``bootstrap_interval``; these tests pin the formula, the pivot each registry
entry declares, the reference code's numbers, and that each surface gives the same interval.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core.analyses.analysis import AnalysisConfig, analyze
from core.analyses.model_comparison import compare_models
from core.analyses.subgroups import subgroup_analysis
from core.base.errors import ConfigError
from core.estimators import ESTIMATORS
from core.inference.bootstrap import bootstrap_interval
from core.inference.calibration import EstimatorCall, calibration_error
from core.inference.resampling import chunks
from core.stats.intervals import interval_bounds


def _data(n=1_500, seed=3, shift=0.0):
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 2.0, n)
    y = (rng.random(n) < np.clip(p + shift, 0, 1)).astype(int)
    return p, y


def _basic(value, truth, dist, level=0.95, cut=True):
    """The reflected quantiles, cut at 0 (a calibration error, a score) unless ``cut`` is off."""
    tail = (1 - level) / 2
    lo, hi = np.quantile(dist, [tail, 1 - tail])
    low, high = value + truth - hi, value + truth - lo
    return (max(low, 0.0), max(high, 0.0)) if cut else (low, high)


def test_hand_computed_bounds():
    d = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert interval_bounds(d, 0.5) == (2.0, 4.0)  # quantiles 0.25, 0.75: linear
    assert interval_bounds(d, 0.5, "basic", value=2.5, truth=3.0) == (1.5, 3.5)
    # Efron's basic interval: the pivot is the estimate itself
    assert interval_bounds(d, 0.5, "basic", value=3.0, truth=3.0) == (2.0, 4.0)
    with_gap = np.array([np.nan, 1.0, 2.0, 3.0, 4.0, 5.0])
    assert interval_bounds(with_gap, 0.5, skip_nan=True) == (2.0, 4.0)
    assert all(np.isnan(interval_bounds(with_gap, 0.5)))
    assert all(np.isnan(interval_bounds(np.full(3, np.nan), 0.5, skip_nan=True)))


def test_the_intervals_registry_names_and_words():
    from core.stats.intervals import BOOTSTRAP_INTERVALS, level_words, pivots

    assert BOOTSTRAP_INTERVALS.names() == ["percentile", "basic"]
    assert not pivots("percentile") and pivots("basic")
    assert (level_words(0.95, "percentile"), level_words(0.9, "basic")) == ("95%", "90% basic")
    assert BOOTSTRAP_INTERVALS.get("basic").func(2.0, 4.0, 2.5, 3.0) == (1.5, 3.5)


def test_the_registry_declares_each_pivot():
    truths = {e.name: e.bootstrap_truth for e in ESTIMATORS if e.bootstrap_truth}
    assert truths == {
        "debiased": "plugin",
        "skce-uq": "skce-b",
        "skce-ul": "skce-b",
        "skce-block": "skce-b",
        "mmce": "mmce",
    }
    for name, truth in truths.items():
        assert set(ESTIMATORS.get(name).lenses) <= set(ESTIMATORS.get(truth).lenses)
    call = EstimatorCall.make("debiased", norm=2, n_bins=7, binning="equal-mass")
    truth = call.truth_call()
    assert (truth.info.name, truth.norm, truth.n_bins, truth.binning) == (
        "plugin", 2.0, 7, "equal-mass"
    )  # fmt: skip
    block = EstimatorCall.make("skce-block", block_size=10, bandwidth=0.3).truth_call()
    assert block.info.name == "skce-b" and block.options["bandwidth"] == 0.3
    assert "block_size" not in block.options
    assert EstimatorCall.make("mmce", unbiased=True).truth_call().options["unbiased"] is False
    assert EstimatorCall.make("mmce").truth_call() is None  # the V-statistic is its own
    assert EstimatorCall.make("plugin").truth_call() is None


def test_a_plugin_estimate_pivots_on_itself():
    p, y = _data()
    opts = dict(statistic="plugin", lens="binary", n_resamples=300, seed=5)
    pct = bootstrap_interval(p, y, **opts)
    basic = bootstrap_interval(p, y, method="basic", **opts)
    np.testing.assert_array_equal(basic.distribution, pct.distribution)
    assert basic.method == "basic" and basic.truth == basic.value
    assert basic.confidence_interval.low == pytest.approx(
        2 * pct.value - pct.confidence_interval.high
    )
    assert basic.confidence_interval.high == pytest.approx(
        2 * pct.value - pct.confidence_interval.low
    )
    assert np.isnan(pct.truth)


@pytest.mark.parametrize("norm", [1, 2])
def test_a_debiased_estimate_pivots_on_the_plugin_error_of_the_rows(norm):
    p, y = _data()
    opts = dict(lens="binary", norm=norm, n_bins=12, n_resamples=300, seed=2)
    res = bootstrap_interval(p, y, statistic="debiased", method="basic", **opts)
    plugin = calibration_error(p, y, estimator="plugin", lens="binary", norm=norm, n_bins=12)
    assert res.truth == plugin.value
    low, high = _basic(res.value, plugin.value, res.distribution)
    assert (res.confidence_interval.low, res.confidence_interval.high) == pytest.approx((low, high))


def test_debiased_basic_interval_equals_kumars_bootstrap_uncertainty(monkeypatch):
    """Their ``bootstrap_uncertainty(data, plugin, debiased)`` on our resamples."""
    utils = pytest.importorskip("calibration.utils", reason="uncertainty-calibration absent")
    p, y = _data(n=800, seed=11, shift=0.1)  # away from 0: the cut leaves the interval alone
    n, r, seed = p.shape[0], 200, 7
    draws = iter(idx for block in chunks(np.random.default_rng(seed), n, r, 64) for idx in block)
    monkeypatch.setattr(utils, "resample", lambda data: [data[i] for i in next(draws)])

    def ours(estimator):
        def f(data):
            probs, labels = map(np.asarray, zip(*data, strict=True))
            return calibration_error(
                probs, labels, estimator=estimator, lens="binary", norm=2, n_bins=10
            ).value

        return f

    data = list(zip(p, y, strict=True))
    low, _, high = utils.bootstrap_uncertainty(
        data, ours("plugin"), ours("debiased"), alpha=10.0, num_samples=r
    )
    res = bootstrap_interval(
        p, y, statistic="debiased", method="basic", lens="binary", norm=2, n_bins=10,
        n_resamples=r, confidence_level=0.9, seed=seed,
    )  # fmt: skip
    assert low > 0
    assert res.confidence_interval.low == pytest.approx(low, rel=1e-12)
    assert res.confidence_interval.high == pytest.approx(high, rel=1e-12)


def test_an_unbiased_skce_pivots_on_the_v_statistic():
    p, y = _data(n=300)
    opts = dict(lens="binary", n_resamples=100, seed=1, bandwidth=0.2)
    res = bootstrap_interval(p, y, statistic="skce-uq", method="basic", **opts)
    v = calibration_error(p, y, estimator="skce-b", lens="binary", bandwidth=0.2).value
    u = calibration_error(p, y, estimator="skce-uq", lens="binary", bandwidth=0.2).value
    assert res.truth == pytest.approx(v, rel=1e-12)
    # the V-statistic is the U-statistic plus the diagonal: a check of the pivot by hand
    n = p.shape[0]
    diag = np.mean((y - p) ** 2 * 2)  # k(s, s) = 1; two-class residual ‖e_y − (1−s, s)‖²
    assert v == pytest.approx((n - 1) / n * u + diag / n, rel=1e-10)
    low, high = _basic(res.value, v, res.distribution)
    assert (res.confidence_interval.low, res.confidence_interval.high) == pytest.approx((low, high))


def test_the_basic_interval_covers_a_known_error_at_least_as_often():
    """A world whose binned ℓ2 error is known: y ~ Bernoulli(min(p + 0.04, 1)), p uniform."""
    bins, shift = 10, 0.04
    grid = np.linspace(0.0, 1.0, 1_000_001)[:-1] + 0.5e-6  # midpoints: the bins' means
    k = np.minimum((grid * bins).astype(int), bins - 1)
    gap = np.bincount(k, np.minimum(grid + shift, 1.0) - grid) / np.bincount(k)
    truth = float(np.sqrt(np.mean(gap**2)))  # equal-width bins of a uniform p: weights 1/B
    assert truth == pytest.approx(0.03927, abs=1e-5)
    hits = {"basic": 0, "percentile": 0}
    for seed in range(40):
        rng = np.random.default_rng(500 + seed)
        p = rng.uniform(size=400)
        y = (rng.random(400) < np.minimum(p + shift, 1.0)).astype(int)
        for method in hits:
            low, high = bootstrap_interval(
                p, y, statistic="debiased", method=method, lens="binary", norm=2,
                n_bins=bins, n_resamples=300, confidence_level=0.9, seed=seed,
            ).confidence_interval  # fmt: skip
            hits[method] += low <= truth <= high
    # nominal 36 of 40; the percentile interval sits on the plug-in error, above the truth
    assert hits == {"basic": 40, "percentile": 34}


def test_unknown_interval_is_refused():
    with pytest.raises(ConfigError, match="bootstrap_interval must be one of"):
        AnalysisConfig(bootstrap_interval="bca")
    p, y = _data(n=100)
    with pytest.raises(ConfigError, match="bootstrap_interval"):
        bootstrap_interval(p, y, method="studentized", n_resamples=10)


@pytest.mark.parametrize("bootstrap", ["exact", "cells"])
def test_analyze_reads_the_config(bootstrap):
    p, y = _data()
    config = AnalysisConfig(
        lens="binary", norm=2, n_bins=12, n_resamples=300, seed=4, bootstrap=bootstrap,
        bootstrap_interval="basic",
    )  # fmt: skip
    a = analyze((p, y), config)
    rows = a.metrics.set_index("metric")
    deb, plug = a.intervals["debiased"], a.intervals["plugin"]
    assert deb.method == plug.method == "basic"
    assert deb.truth == pytest.approx(rows.loc["plugin", "value"], rel=1e-12)
    assert plug.truth == rows.loc["plugin", "value"]
    for key in ("debiased", "plugin", "brier"):
        res = a.intervals[key]
        low, high = _basic(res.value, res.truth, res.distribution)
        assert (rows.loc[key, "low"], rows.loc[key, "high"]) == pytest.approx((low, high))
    if bootstrap == "exact":  # the same interval as the API's, resample for resample
        api = bootstrap_interval(
            p, y, statistic="debiased", method="basic", lens="binary", norm=2, n_bins=12,
            n_resamples=300, seed=4,
        )  # fmt: skip
        assert (rows.loc["debiased", "low"], rows.loc["debiased", "high"]) == pytest.approx(
            tuple(api.confidence_interval)
        )


def test_compare_pivots_models_and_differences():
    p, y = _data(n=1_200)
    q = np.clip(p + 0.08, 0.0, 1.0)
    config = AnalysisConfig(lens="binary", n_bins=10, bootstrap_interval="basic", seed=3)
    cmp = compare_models(
        {"a": (p, y), "b": (q, y)}, config=config, metrics=("plugin@2", "debiased@2", "brier"),
        n_resamples=300, reference="a",
    )  # fmt: skip
    table = cmp.table.set_index(["model", "metric"])
    truth = {m: table.loc[(m, "plugin@2"), "value"] for m in ("a", "b")}
    for m in ("a", "b"):
        row = table.loc[(m, "debiased@2")]
        low, high = _basic(row.value, truth[m], cmp.distributions[m, "debiased@2"])
        assert (row.low, row.high) == pytest.approx((low, high))
    diff = cmp.differences.set_index("metric").loc["debiased@2"]
    paired = cmp.distributions["b", "debiased@2"] - cmp.distributions["a", "debiased@2"]
    low, high = _basic(diff.difference, truth["b"] - truth["a"], paired, cut=False)
    assert (diff.low, diff.high) == pytest.approx((low, high))
    brier = cmp.differences.set_index("metric").loc["brier"]
    paired = cmp.distributions["b", "brier"] - cmp.distributions["a", "brier"]
    low, high = _basic(brier.difference, brier.difference, paired, cut=False)  # its own pivot
    assert (brier.low, brier.high) == pytest.approx((low, high))


@pytest.mark.parametrize("bootstrap", ["exact", "cells"])
def test_subgroups_pivot_groups_and_gaps(bootstrap):
    p, y = _data(n=2_000, seed=8)
    groups = np.where(np.arange(p.shape[0]) % 3 == 0, "x", "z")
    frame = pd.DataFrame({"p": p, "label": y, "group": groups})
    from core.data import load_predictions

    pred = load_predictions(frame)
    config = AnalysisConfig(
        lens="binary", norm=2, n_bins=8, n_resamples=200, bootstrap=bootstrap,
        bootstrap_interval="basic",
    )  # fmt: skip
    deb = subgroup_analysis(pred, config, estimator="debiased")
    plug = subgroup_analysis(pred, config, estimator="plugin")
    d, t = deb.table.set_index("group"), plug.table.set_index("group")
    for g in ("x", "z"):
        low, high = _basic(d.loc[g, "value"], t.loc[g, "value"], deb.distributions[g])
        assert (d.loc[g, "low"], d.loc[g, "high"]) == pytest.approx((low, high))
        gap = deb.distributions[g] - deb.distributions["(pooled)"]
        pivot = t.loc[g, "value"] - plug.pooled["value"]
        low, high = _basic(d.loc[g, "gap"], pivot, gap, cut=False)
        assert (d.loc[g, "gap_low"], d.loc[g, "gap_high"]) == pytest.approx((low, high))
    assert any("basic (pivotal)" in note.lower() for note in deb.notes)


def test_the_cli_prints_and_records_the_basic_interval(tmp_path, capsys):
    from core.cli import main

    p, y = _data(n=900)
    path = tmp_path / "preds.csv"
    pd.DataFrame({"p": p, "label": y}).to_csv(path, index=False)
    args = [str(path), "--norm", "2", "--resamples", "200", "--bootstrap-interval", "basic"]
    assert main(["metrics", *args, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["config"]["bootstrap_interval"] == "basic"
    config = AnalysisConfig(lens="binary", norm=2, n_resamples=200, bootstrap_interval="basic")
    a = analyze((p, y), config).metrics.set_index("metric")
    metrics = {m["metric"]: m for m in record["results"][0]["metrics"]}
    assert metrics["debiased"]["low"] == pytest.approx(a.loc["debiased", "low"], rel=1e-12)
    assert metrics["debiased"]["high"] == pytest.approx(a.loc["debiased", "high"], rel=1e-12)
    assert main(["metrics", *args]) == 0
    text = capsys.readouterr().out
    assert "95% basic interval" in text and "bootstrap_interval=basic" in text


def test_recalibration_reads_the_interval():
    from core.recalibration.evaluation import compare_recalibrators

    p, y = _data(n=1_200)
    kw = dict(estimators=("plugin",), lens="binary", n_resamples=100, seed=1)
    pct = compare_recalibrators(p, y, ["platt"], **kw)
    basic = compare_recalibrators(p, y, ["platt"], bootstrap_interval="basic", **kw)
    a = pct.metrics.set_index(["method", "metric"])
    b = basic.metrics.set_index(["method", "metric"])
    key = ("platt", "plugin")
    value = a.loc[key, "value"]
    assert 2 * value - a.loc[key, "high"] < 0  # recalibrated: the reflection reaches below 0
    assert b.loc[key, "low"] == 0.0
    assert b.loc[key, "high"] == pytest.approx(2 * value - a.loc[key, "low"])
    assert basic.settings["bootstrap_interval"] == "basic"


def test_smooth_diagram_reads_the_interval():
    from core.analyses.smooth import smooth_diagram

    p, y = _data(n=800)
    pct = smooth_diagram((p, y), AnalysisConfig(lens="binary", n_resamples=100))
    basic = smooth_diagram(
        (p, y), AnalysisConfig(lens="binary", n_resamples=100, bootstrap_interval="basic")
    )
    v, (lo, hi) = pct.value, pct.bootstrap.confidence_interval
    assert tuple(basic.bootstrap.confidence_interval) == pytest.approx((2 * v - hi, 2 * v - lo))
    assert basic.components[0].interval == pytest.approx((2 * v - hi, 2 * v - lo))


def test_kernel_rows_of_the_estimators_table_pivot_on_the_v_statistic():
    from core.analyses.estimator_comparison import compare_estimators

    p, y = _data(n=400)
    config = AnalysisConfig(lens="binary", n_resamples=100, bootstrap_interval="basic")
    table = compare_estimators((p, y), config, intervals="all").table.set_index("key")
    row, v = table.loc["skce-uq"], table.loc["skce-b", "value"]
    api = bootstrap_interval(
        p, y, statistic="skce-uq", method="basic", lens="binary", n_resamples=100, seed=0,
        bandwidth=calibration_error(p, y, estimator="skce-uq", lens="binary")
        .details["bandwidth"],
    )  # fmt: skip
    assert api.truth == pytest.approx(v, rel=1e-12)
    assert (row.low, row.high) == pytest.approx(tuple(api.confidence_interval), rel=1e-12)


def test_the_report_names_the_basic_interval():
    from core.data import load_predictions
    from core.report import build_report

    p, y = _data(n=600)
    frame = pd.DataFrame({"p": p, "label": y, "model": np.repeat(["m1", "m2"], 300)})
    config = AnalysisConfig(lens="binary", n_resamples=100, bootstrap_interval="basic")
    report = build_report(load_predictions(frame), config=config, test=None)
    html = report.to_html()
    assert "95% basic bootstrap)" in html and "95% basic bootstrap intervals" in html
    assert json.loads(report.to_json())["config"]["bootstrap_interval"] == "basic"


def test_a_pivot_that_cannot_be_computed_costs_only_its_interval():
    # the V-statistic refuses above max_exact_n rows: the linear SKCE keeps its value, and only
    # its interval goes, with the reason
    from core.estimators.kernel import MAX_EXACT_N

    p, y = _data(n=MAX_EXACT_N + 1)
    config = AnalysisConfig(lens="binary", bootstrap_interval="basic", bootstrap="exact")
    cmp = compare_models(
        {"a": (p, y), "b": (np.clip(p + 0.05, 0, 1), y)}, config=config,
        metrics=("plugin@1", "skce-ul"), n_resamples=10,
    )  # fmt: skip
    table = cmp.table.set_index(["model", "metric"])
    row = table.loc[("a", "skce-ul")]
    assert np.isfinite(row.value) and np.isnan(row.low)
    assert "no interval: its pivot, SKCE (biased)" in row.note
    assert np.isfinite(table.loc[("a", "plugin@1"), "low"])


@pytest.mark.parametrize("method", ["percentile", "basic"])
def test_compare_and_the_estimators_table_give_a_kernel_metric_one_interval(method):
    from core.analyses.estimator_comparison import compare_estimators

    p, y = _data(n=500)
    q = np.clip(p + 0.05, 0.0, 1.0)
    config = AnalysisConfig(
        lens="binary", n_resamples=60, bootstrap="exact", seed=2, bootstrap_interval=method
    )
    cmp = compare_models({"a": (p, y), "b": (q, y)}, config=config, metrics=("plugin@1", "skce-uq"))
    row = cmp.table.set_index(["model", "metric"]).loc[("b", "skce-uq")]
    table = compare_estimators((q, y), config, intervals="all").table.set_index("key")
    assert (row.low, row.high) == pytest.approx(
        (table.loc["skce-uq", "low"], table.loc["skce-uq", "high"]), rel=1e-12
    )


def _one_odd_row(n=40):
    """Class 2 has a non-zero score on one row only: a resample without it has every
    prediction of that class equal, whose median bandwidth cannot be derived."""
    rng = np.random.default_rng(4)
    p = np.zeros((n, 3))
    p[:, 0] = rng.uniform(0.2, 0.8, n)
    p[:, 1] = 1.0 - p[:, 0]
    p[0] = [0.3, 0.3, 0.4]
    return p, rng.integers(0, 2, n)


def test_classwise_kernel_resamples_hold_each_components_bandwidth():
    # each class's median is held at its full-sample value, as one component's is: the
    # resamples without the odd row need no median, so the interval exists
    from core.analyses.estimator_comparison import compare_estimators
    from core.estimators.kernel import resample_options

    p, y = _one_odd_row()
    full = calibration_error(p, y, estimator="skce-uq", lens="classwise")
    held = resample_options({}, full)["bandwidth"]
    per = full.details["per_component"]
    assert held == tuple(per[c]["bandwidth"] for c in full.components) and len(held) == 3
    again = calibration_error(p, y, estimator="skce-uq", lens="classwise", bandwidth=held)
    assert again.value == full.value
    with pytest.raises(ConfigError, match="one value per component"):
        calibration_error(p, y, estimator="skce-uq", lens="classwise", bandwidth=(0.1, 0.2))
    config = AnalysisConfig(lens="classwise", bootstrap="exact", n_resamples=40)
    cmp = compare_models(
        {"a": (p, y), "b": (p[:, [1, 0, 2]], y)}, config=config, metrics=("skce-uq",)
    )
    row = cmp.table.set_index(["model", "metric"]).loc[("a", "skce-uq")]
    assert np.isfinite(row.low) and np.isfinite(row.high)
    table = compare_estimators((p, y), config, intervals="all").table.set_index("key")
    assert (row.low, row.high) == pytest.approx(
        (table.loc["skce-uq", "low"], table.loc["skce-uq", "high"]), rel=1e-12
    )


def test_a_metric_that_fails_on_a_resample_costs_its_interval_only(monkeypatch):
    # a bandwidth derived on every resample (not held) fails on the resamples without the
    # odd row: the mechanism that keeps the other metrics' intervals
    import core.analyses.model_comparison as mc

    monkeypatch.setattr(mc, "resample_options", lambda options, result: dict(options))
    p, y = _one_odd_row()
    config = AnalysisConfig(lens="classwise", bootstrap="exact", n_resamples=40)
    cmp = compare_models(
        {"a": (p, y), "b": (p[:, [1, 0, 2]], y)}, config=config, metrics=("plugin@1", "skce-uq")
    )
    table = cmp.table.set_index(["model", "metric"])
    row = table.loc[("a", "skce-uq")]
    assert np.isfinite(row.value) and np.isnan(row.low)
    assert "no interval: Every prediction is the same" in row.note
    # the other metric keeps the interval of the same resamples
    alone = compare_models(
        {"a": (p, y), "b": (p[:, [1, 0, 2]], y)}, config=config, metrics=("plugin@1",)
    )
    want = alone.table.set_index(["model", "metric"]).loc[("a", "plugin@1")]
    got = table.loc[("a", "plugin@1")]
    assert (got.low, got.high) == (want.low, want.high)


def test_an_undefined_resample_is_said_not_hidden():
    from core.stats.intervals import undefined_note

    d = np.array([0.1, np.nan, 0.3, 0.2])
    assert undefined_note(d) == "undefined on 1 of 4 resamples: no interval"
    assert undefined_note(d[[0, 2]]) == "" and undefined_note(None) == ""
    assert all(np.isnan(interval_bounds(d, 0.9)))


def test_the_basic_interval_is_cut_to_the_estimands_range():
    from core.inference.bootstrap import support_of
    from core.stats.intervals import outside_note
    from core.stats.scores import SCORES

    # by hand: an accuracy's reflection above 1, a calibration error's below 0
    d = np.array([0.90, 0.92, 0.94, 0.96, 0.98])  # quantiles 0.25, 0.75: 0.92, 0.96
    reflected = interval_bounds(d, 0.5, "basic", value=0.99, truth=0.94)
    assert reflected == pytest.approx((0.97, 1.01))
    cut = interval_bounds(d, 0.5, "basic", value=0.99, truth=0.94, support=(0.0, 1.0))
    assert cut == pytest.approx((0.97, 1.0)) and cut[1] == 1.0
    low = interval_bounds(d - 0.9, 0.5, "basic", value=0.01, truth=0.01, support=(0.0, np.inf))
    assert low == pytest.approx((0.0, 0.0)) and low[0] == 0.0  # (−0.04, −0.00): all below 0
    # the percentile interval is where resampled estimates fall: never cut
    assert interval_bounds(d - 0.93, 0.5, support=(0.0, np.inf)) == pytest.approx((-0.01, 0.03))
    assert all(np.isnan(interval_bounds(None, 0.5, "basic", support=(0.0, 1.0))))
    # each registry entry declares its range
    assert {support_of(e.name) for e in ESTIMATORS} == {(0.0, np.inf)}
    assert {s: support_of(s) for s in SCORES.names()} == {
        "accuracy": (0.0, 1.0), "brier": (0.0, 2.0), "log-loss": (0.0, np.inf)
    }  # fmt: skip
    assert support_of(EstimatorCall.make("debiased")) == (0.0, np.inf)
    assert support_of(len) is None
    assert outside_note(-0.001, 0.0, 0.008, "basic").startswith("estimate below 0")
    assert outside_note(-0.001, 0.0, 0.008).startswith("estimate outside its percentile")

    # a calibrated model: the debiased error's reflection reaches below 0 on every surface
    rng = np.random.default_rng(0)
    p = rng.beta(2.0, 2.0, 2_000)
    y = (rng.random(2_000) < p).astype(int)
    opts = dict(lens="binary", norm=2, n_bins=10, n_resamples=200, seed=1)
    api = bootstrap_interval(p, y, statistic="debiased", method="basic", **opts)
    raw = _basic(api.value, api.truth, api.distribution, cut=False)
    assert raw[0] < 0 < raw[1]
    assert tuple(api.confidence_interval) == (0.0, pytest.approx(raw[1], rel=1e-12))
    for bootstrap in ("exact", "cells"):
        config = AnalysisConfig(bootstrap=bootstrap, bootstrap_interval="basic", **opts)
        row = analyze((p, y), config).metrics.set_index("metric").loc["debiased"]
        assert row.low == 0.0 and row.high > 0
    # Compare: a model's interval is cut, a difference's is not
    q = np.clip(p + rng.normal(0.0, 0.01, p.shape[0]), 0.0, 1.0)
    config = AnalysisConfig(bootstrap_interval="basic", **opts)
    cmp = compare_models(
        {"a": (p, y), "b": (q, y)}, config=config, metrics=("debiased@2",), reference="a"
    )
    table = cmp.table.set_index("model")
    assert (table["low"] == 0.0).all()
    diff = cmp.differences.set_index("model").loc["b"]
    assert diff.low < 0 < diff.high
    # Subgroups: a group's interval is cut, its gap from all rows is not
    from core.data import load_predictions

    frame = pd.DataFrame({"p": p, "label": y, "group": np.where(np.arange(2_000) % 2, "x", "z")})
    sub = subgroup_analysis(load_predictions(frame), config, estimator="debiased").table
    assert (sub["low"] == 0.0).all() and (sub["gap_low"] < 0).all()
    # an unbiased SKCE below 0: its interval is cut at 0, and the note says why it lies outside
    from core.analyses.estimator_comparison import compare_estimators

    skce = AnalysisConfig(lens="binary", n_resamples=100, seed=1, bootstrap_interval="basic")
    table = compare_estimators((p[:400], y[:400]), skce, intervals="all").table
    uq = table.set_index("key").loc["skce-uq"]
    assert uq.value < 0 and uq.low == 0.0 == uq.high  # the whole reflection below 0
    assert "estimate below 0, and its whole basic interval before the cut at 0" in uq.note
    assert outside_note(-0.001, 0.0, 0.0, "basic").startswith("estimate below 0, and its whole")
