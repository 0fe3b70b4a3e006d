"""The unweighted-bin (average) calibration error: one registry entry, every consumer."""

import numpy as np
import pytest

from core.analyses.analysis import AnalysisConfig, analyze
from core.analyses.calibration_tests import calibration_test
from core.analyses.model_comparison import compare_models
from core.estimators import ESTIMATORS
from core.inference.bootstrap import bootstrap_interval
from core.inference.calibration import calibration_error


def _binary(n, seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    return p, (rng.uniform(size=n) < p**1.5).astype(int)


def test_hand_computed_case():
    # bins of B = 2: [0.1, 0.2, 0.3] with labels (0, 0, 1) and [0.9] with label 1
    p = np.array([0.1, 0.2, 0.3, 0.9])
    y = np.array([0, 0, 1, 1])
    gaps = [abs(0.2 - 1 / 3), abs(0.9 - 1.0)]
    for norm, want in (
        (1, np.mean(gaps)),
        (2, np.sqrt(np.mean(np.square(gaps)))),
        (np.inf, max(gaps)),
    ):
        got = calibration_error(p, y, estimator="average", lens="binary", n_bins=2, norm=norm)
        assert got.value == pytest.approx(want, rel=1e-14)
    # the plug-in weights the three-point bin three times as much
    plug = calibration_error(p, y, lens="binary", n_bins=2).value
    assert plug == pytest.approx(0.75 * gaps[0] + 0.25 * gaps[1], rel=1e-14)


def test_empty_bins_do_not_count_and_equal_bins_equal_the_plugin():
    p, y = _binary(600, 1)
    # n divisible by B: equal-mass bins have equal counts, so the weights are equal
    avg = calibration_error(
        p, y, estimator="average", lens="binary", binning="equal-mass", n_bins=12
    )
    plug = calibration_error(p, y, lens="binary", binning="equal-mass", n_bins=12)
    assert avg.value == pytest.approx(plug.value, rel=1e-12)
    # many empty equal-width bins: the mean runs over the filled ones only
    q = np.concatenate([np.full(50, 0.05), np.full(50, 0.95)])
    z = np.r_[np.zeros(40, int), np.ones(10, int), np.ones(45, int), np.zeros(5, int)]
    avg = calibration_error(q, z, estimator="average", lens="binary", n_bins=100)
    assert avg.value == pytest.approx((0.15 + 0.05) / 2, rel=1e-12)


def test_netcal_classwise_adaptive_convention():
    # Nixon's ACE: classwise components, equal-mass ranges, each range counting once
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(3), size=300)
    y = rng.integers(0, 3, size=300)
    got = calibration_error(
        p, y, estimator="average", lens="classwise", binning="equal-mass", n_bins=10
    )
    per_class = []
    for k in range(3):
        order = np.argsort(p[:, k], kind="stable")
        gaps = [
            abs(p[rows, k].mean() - (y[rows] == k).mean()) for rows in np.array_split(order, 10)
        ]
        per_class.append(np.mean(gaps))
    assert got.value == pytest.approx(np.mean(per_class), rel=1e-12)


def test_every_consumer_reads_it_from_the_registry():
    p, y = _binary(400, 2)
    info = ESTIMATORS.get("average")
    assert info.binned and info.from_bins and info.norms == (1.0, 2.0, np.inf)
    direct = calibration_error(p, y, estimator="average", lens="binary", n_bins=10).value
    # the analysis lists it with an interval
    a = analyze((p, y), AnalysisConfig(lens="binary", n_bins=10, n_resamples=30))
    row = a.metrics.set_index("metric").loc["average"]
    assert row.value == direct and row.low <= row.high
    # the bootstrap's batched path equals one estimator call per resample
    fast = bootstrap_interval(p, y, statistic="average", lens="binary", n_bins=10, n_resamples=25)
    slow = bootstrap_interval(
        p,
        y,
        statistic=lambda pp, yy: (
            calibration_error(pp, yy, estimator="average", lens="binary", n_bins=10).value
        ),
        n_resamples=25,
        resample_order="rows",
    )
    assert fast.path == "fixed-bins"
    np.testing.assert_allclose(fast.distribution, slow.distribution, rtol=0, atol=1e-12)
    # the model comparison evaluates it on the shared bins
    cmp = compare_models(
        {"a": (p, y), "b": (p**2, y)},
        config=AnalysisConfig(lens="binary", n_bins=10),
        metrics=("average@1",),
        n_resamples=20,
    )
    assert cmp.metrics[0].kind == "shared-bins"
    assert cmp.value("a", "average@1") == pytest.approx(direct, rel=1e-14)
    # and the consistency test resamples it in batches
    r = calibration_test(p, y, test="consistency", estimator="average", n_bins=10, n_resamples=50)
    assert r.details["vectorised"] and r.statistic == pytest.approx(direct, rel=1e-14)
