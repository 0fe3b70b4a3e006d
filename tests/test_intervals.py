from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from core.base.errors import ConfigError, DataError
from core.inference.bootstrap import bootstrap_interval, bootstrap_many
from core.inference.calibration import calibration_error
from core.stats.binning import bin_indices
from core.stats.intervals import (
    INTERVAL_METHODS,
    BootstrapResult,
    ConfidenceInterval,
    bin_intervals,
)
from core.stats.scores import accuracy, brier_score, log_loss

# --- per-bin intervals --------------------------------------------------------------

CASES = [(0, 1), (1, 1), (0, 5), (5, 5), (1, 5), (3, 7), (0, 40), (40, 40), (17, 40), (1, 1000)]
CASES += [(499, 1000), (999, 1000), (2, 3)]


@pytest.mark.parametrize("confidence_level", [0.8, 0.9, 0.95, 0.99])
@pytest.mark.parametrize(
    ("method", "scipy_method", "atol"),
    # scipy's exact interval solves binom.sf/cdf = alpha by root finding; ours uses beta
    # quantiles, which agree to the root finder's tolerance
    [("wilson", "wilson", 1e-13), ("clopper-pearson", "exact", 1e-9)],
)
def test_bin_intervals_match_scipy_binomtest(confidence_level, method, scipy_method, atol):
    k = np.array([c[0] for c in CASES])
    n = np.array([c[1] for c in CASES])
    low, high = bin_intervals(n, k, method=method, confidence_level=confidence_level)
    for i, (ki, ni) in enumerate(CASES):
        ref = stats.binomtest(ki, ni).proportion_ci(
            confidence_level=confidence_level, method=scipy_method
        )
        assert low[i] == pytest.approx(ref.low, abs=atol), (ki, ni)
        assert high[i] == pytest.approx(ref.high, abs=atol), (ki, ni)


@pytest.mark.parametrize("method", list(INTERVAL_METHODS.names()))
def test_bin_intervals_exact_at_the_ends_and_nan_for_empty_bins(method):
    low, high = bin_intervals([0, 4, 4, 9], [0, 0, 4, 3], method=method)
    assert np.isnan(low[0]) and np.isnan(high[0])
    assert low[1] == 0.0 and high[2] == 1.0
    assert 0.0 < low[3] < 3 / 9 < high[3] < 1.0


def test_clopper_pearson_closed_form_at_zero_successes():
    # k = 0: upper bound solves (1 - p)^n = alpha/2, i.e. p = 1 - (alpha/2)^(1/n)
    n = np.array([1, 10, 50])
    _, high = bin_intervals(n, np.zeros(3), method="clopper-pearson", confidence_level=0.95)
    np.testing.assert_allclose(high, 1 - 0.025 ** (1 / n), rtol=1e-12)


def test_wilson_by_hand():
    # k = 5, n = 10, z = 1.959964: centre 0.5, half-width z/(2(n+z²))·sqrt(4·n·p·q + z²)
    z = stats.norm.ppf(0.975)
    half = z / (2 * (10 + z**2)) * np.sqrt(10 + z**2)
    low, high = bin_intervals([10], [5])
    assert low[0] == pytest.approx(0.5 - half, abs=1e-15)
    assert high[0] == pytest.approx(0.5 + half, abs=1e-15)


def test_bin_intervals_validation():
    with pytest.raises(DataError, match="label_sums"):
        bin_intervals([3], [4])
    with pytest.raises(DataError, match="label_sums"):
        bin_intervals([-1], [0])
    with pytest.raises(DataError, match="same shape"):
        bin_intervals([3, 4], [1])
    with pytest.raises(ConfigError, match="Unknown per-bin interval method 'agresti'"):
        bin_intervals([3], [1], method="agresti")
    with pytest.raises(ConfigError, match="fraction"):
        bin_intervals([3], [1], confidence_level=95)


def test_confidence_interval_unpacks_and_is_hashable():
    ci = ConfidenceInterval(0.1, 0.3)
    low, high = ci
    assert (low, high) == (0.1, 0.3)
    assert hash(ci) == hash(ConfidenceInterval(0.1, 0.3))


# --- bootstrap: the fast paths equal the generic path -------------------------------


def _multiclass(n=600, k=4, seed=0, alpha=0.5):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, alpha), size=n)
    y = np.array([rng.choice(k, p=row) for row in p**1.5 / (p**1.5).sum(1, keepdims=True)])
    return p, y


def _binary_ties(n=400, seed=2):
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(size=n), 1)  # 11 distinct values: many ties at rank boundaries
    return p, (rng.uniform(size=n) < p**2).astype(int)


def _via_generic(p, y, estimator, opts, **kw):
    # a random estimator is reseeded with the bootstrap's seed on every resample
    def stat(pp, yy):
        return calibration_error(pp, yy, estimator=estimator, seed=kw["seed"], **opts).value

    return bootstrap_many(p, y, {"x": (stat, {"resample_order": "rows"})}, **kw)["x"]


FAST_CASES = [
    ("plugin", {"norm": 1}, "fixed-bins"),
    ("plugin", {"norm": 2, "n_bins": 7}, "fixed-bins"),
    ("plugin", {"norm": np.inf}, "fixed-bins"),
    ("debiased", {"norm": 2}, "fixed-bins"),
    ("plugin", {"binning": "discrete"}, "fixed-bins"),
    ("debiased", {"binning": "discrete", "norm": 2}, "fixed-bins"),
    ("plugin", {"binning": "equal-mass"}, "equal-mass"),
    ("plugin", {"binning": "equal-mass", "norm": np.inf, "n_bins": 9}, "equal-mass"),
    ("debiased", {"binning": "equal-mass", "norm": 2}, "equal-mass"),
    ("label-binned", {"norm": 1}, "fixed-bins"),
    ("label-binned", {"norm": 2, "n_bins": 7}, "fixed-bins"),
    ("label-binned", {"norm": np.inf}, "fixed-bins"),
    ("label-binned", {"binning": "discrete", "norm": 1}, "fixed-bins"),
    ("label-binned", {"binning": "equal-mass", "norm": 1}, "equal-mass"),
    ("label-binned", {"binning": "equal-mass", "norm": 2}, "equal-mass"),
    ("label-binned", {"binning": "equal-mass", "norm": np.inf, "n_bins": 9}, "equal-mass"),
]


@pytest.mark.parametrize("lens", ["top-label", "classwise"])
@pytest.mark.parametrize(("estimator", "opts", "path"), FAST_CASES)
def test_fast_paths_equal_generic_multiclass(lens, estimator, opts, path):
    p, y = _multiclass()
    opts = {**opts, "lens": lens}
    fast = bootstrap_interval(p, y, statistic=estimator, n_resamples=40, seed=5, **opts)
    slow = _via_generic(p, y, estimator, opts, n_resamples=40, seed=5)
    assert fast.path == path and slow.path == "generic"
    np.testing.assert_allclose(fast.distribution, slow.distribution, rtol=0, atol=1e-12)
    assert fast.value == calibration_error(p, y, estimator=estimator, **opts).value


@pytest.mark.parametrize(("estimator", "opts", "path"), FAST_CASES)
@pytest.mark.parametrize("n_bins", [3, 10, 450])
def test_fast_paths_equal_generic_binary_with_ties(estimator, opts, path, n_bins):
    # many equal scores split across equal-mass boundaries; n_bins > n gives empty bins
    p, y = _binary_ties()
    opts = {**opts, "lens": "binary", "n_bins": n_bins}
    fast = bootstrap_interval(
        p, y, statistic=estimator, n_resamples=30, seed=9, chunk_size=7, **opts
    )
    slow = _via_generic(p, y, estimator, opts, n_resamples=30, seed=9)
    assert fast.path == path
    np.testing.assert_allclose(fast.distribution, slow.distribution, rtol=0, atol=1e-12)


SWEEP_AND_L1_CASES = [
    ("sweep", {"binning": "equal-mass", "norm": 1}),
    ("sweep", {"binning": "equal-mass", "norm": 2}),
    ("sweep", {"binning": "equal-mass", "norm": np.inf}),
    ("sweep", {"binning": "equal-width", "norm": 1}),
    ("sweep", {"binning": "equal-width", "norm": 2}),
    ("sweep", {"binning": "equal-width", "norm": np.inf}),
    ("sweep", {"binning": "equal-width", "tie_policy": "keep"}),
    ("sweep", {"binning": "equal-mass", "max_bins": 3}),
    ("sweep", {"binning": "equal-width", "max_bins": 40}),
    ("debiased", {"norm": 1}),
    ("debiased", {"norm": 1, "n_bins": 40}),
    ("debiased", {"norm": 1, "binning": "equal-mass", "n_bins": 7}),
    ("debiased", {"norm": 1, "binning": "discrete"}),
    ("debiased", {"norm": 1, "n_resamples": 37}),
]


def _fast_path(estimator, opts):
    if estimator == "sweep":
        return "sweep"
    return "equal-mass" if opts.get("binning") == "equal-mass" else "fixed-bins"


def _check_against_generic(p, y, estimator, opts, **kw):
    # bootstrap_many: the estimator option n_resamples would clash with the bootstrap's own
    fast = bootstrap_many(p, y, {"x": (estimator, opts)}, **kw)["x"]
    slow = _via_generic(p, y, estimator, opts, **kw)
    assert fast.path == _fast_path(estimator, opts) and slow.path == "generic"
    np.testing.assert_allclose(fast.distribution, slow.distribution, rtol=0, atol=1e-12)
    return fast


@pytest.mark.parametrize("lens", ["top-label", "classwise"])
@pytest.mark.parametrize(("estimator", "opts"), SWEEP_AND_L1_CASES)
def test_sweep_and_debiased_l1_fast_paths_equal_generic_multiclass(lens, estimator, opts):
    p, y = _multiclass()
    opts = {**opts, "lens": lens}
    fast = _check_against_generic(p, y, estimator, opts, n_resamples=30, seed=5)
    assert fast.value == calibration_error(p, y, estimator=estimator, seed=5, **opts).value
    assert np.ptp(fast.distribution) > 0  # the resamples differ: the comparison has teeth


@pytest.mark.parametrize(("estimator", "opts"), SWEEP_AND_L1_CASES)
def test_sweep_and_debiased_l1_fast_paths_equal_generic_with_ties(estimator, opts):
    # 11 distinct scores: ties straddle equal-mass boundaries and equal-width edges (0.2·5)
    p, y = _binary_ties()
    opts = {**opts, "lens": "binary"}
    _check_against_generic(p, y, estimator, opts, n_resamples=25, seed=9, chunk_size=7)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6])
@pytest.mark.parametrize(("estimator", "opts"), SWEEP_AND_L1_CASES)
def test_sweep_and_debiased_l1_fast_paths_on_tiny_samples(n, estimator, opts):
    # n ≤ 2: no candidate (b* = 1); resamples repeat rows; bins empty in most resamples
    rng = np.random.default_rng(n)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    _check_against_generic(p, y, estimator, {**opts, "lens": "binary"}, n_resamples=20, seed=2)


@pytest.mark.parametrize("label", [0, 1])
@pytest.mark.parametrize(("estimator", "opts"), SWEEP_AND_L1_CASES)
def test_sweep_and_debiased_l1_fast_paths_with_one_label(label, estimator, opts):
    # every candidate is monotone: every resample's sweep runs to n − 1 bins at once
    p, _ = _binary_ties(n=150)
    y = np.full(150, label)
    fast = _check_against_generic(
        p, y, estimator, {**opts, "lens": "binary"}, n_resamples=10, seed=1
    )
    if estimator == "debiased":  # no label noise: the correction is zero
        plug = bootstrap_interval(
            p,
            y,
            statistic="plugin",
            lens="binary",
            n_resamples=10,
            seed=1,
            **{k: v for k, v in opts.items() if k != "n_resamples"},
        )
        np.testing.assert_allclose(fast.distribution, plug.distribution, rtol=0, atol=1e-12)


@pytest.mark.parametrize("binning", ["equal-mass", "equal-width"])
def test_sweep_fast_path_with_monotone_and_stopping_resamples(binning):
    # a binned model's outputs with increasing accuracy: some resamples are provably
    # monotone (b* = n − 1), others stop early; all scores equal in one component
    rng = np.random.default_rng(4)
    values = np.array([0.1, 0.35, 0.6, 0.85])
    p = rng.choice(values, 60)
    y = (rng.random(60) < p).astype(int)
    res = _check_against_generic(
        p, y, "sweep", {"binning": binning, "lens": "binary"}, n_resamples=40, seed=3
    )
    assert np.unique(res.distribution).size > 5
    flat = np.full(50, 0.4)
    yy = (rng.random(50) < 0.4).astype(int)
    _check_against_generic(
        flat, yy, "sweep", {"binning": binning, "lens": "binary"}, n_resamples=15, seed=3
    )


def _naive_sweep_value(s, y, binning, norm):
    """ECE_sweep by the definition: one binning per candidate b until a mean decreases."""
    b_star = 1
    for b in range(2, len(s)):
        idx, _ = bin_indices(s, binning=binning, n_bins=b)
        counts = np.bincount(idx, minlength=b)
        means = np.bincount(idx, weights=y, minlength=b)[counts > 0] / counts[counts > 0]
        if np.any(np.diff(means) < 0):
            break
        b_star = b
    plug = calibration_error(s, y, lens="binary", binning=binning, n_bins=b_star, norm=norm)
    return plug.value, b_star


@pytest.mark.parametrize("binning", ["equal-mass", "equal-width"])
def test_sweep_fast_path_equals_the_definition_on_late_stopping_resamples(binning):
    # sorted outcomes 0…0 1 0 1…1: a resample that drew the flipped pair stops late
    # (b* ≈ 40), one that missed it is monotone up to n − 1 bins; reference by definition.
    # Scores i/120 lie on the edges k/b of many equal-width candidates.
    n = 120
    p = np.arange(n) / n
    y = (p > 0.5).astype(int)
    y[57], y[58] = 1, 0
    idx = np.sort(np.random.default_rng(8).integers(0, n, size=(12, n)), axis=1)
    for norm in (1, np.inf):
        ref = [_naive_sweep_value(p[i], y[i], binning, norm) for i in idx]
        res = bootstrap_interval(
            p,
            y,
            statistic="sweep",
            lens="binary",
            binning=binning,
            norm=norm,
            n_resamples=12,
            seed=8,
        )
        assert res.path == "sweep"
        np.testing.assert_allclose(res.distribution, [v for v, _ in ref], rtol=0, atol=1e-12)
    b_stars = {b for _, b in ref}
    assert n - 1 in b_stars and any(17 < b < n - 1 for b in b_stars)


def test_sweep_and_debiased_l1_fast_paths_do_not_depend_on_the_chunk_size():
    p, y = _multiclass(n=300)
    specs = {
        "sweep": ("sweep", {"binning": "equal-mass", "lens": "classwise"}),
        "l1": ("debiased", {"norm": 1, "lens": "classwise"}),
    }
    ref = bootstrap_many(p, y, specs, n_resamples=17, seed=6)
    for chunk in (1, 4, 17):
        res = bootstrap_many(p, y, specs, n_resamples=17, seed=6, chunk_size=chunk)
        for key in specs:
            np.testing.assert_allclose(
                res[key].distribution, ref[key].distribution, rtol=0, atol=1e-14
            )


def test_class_weights_reach_the_fast_path():
    p, y = _multiclass(k=3)
    opts = {"lens": "classwise", "class_weights": [0.6, 0.3, 0.1], "norm": 2}
    fast = bootstrap_interval(p, y, n_resamples=20, seed=1, **opts)
    slow = _via_generic(p, y, "plugin", opts, n_resamples=20, seed=1)
    np.testing.assert_allclose(fast.distribution, slow.distribution, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("name", "func"), [("accuracy", accuracy), ("brier", brier_score), ("log-loss", log_loss)]
)
@pytest.mark.parametrize("binary", [False, True])
def test_score_row_mean_path_equals_generic(name, func, binary):
    p, y = _multiclass(k=2) if binary else _multiclass()
    if binary:
        p = p[:, 1]
    fast = bootstrap_interval(p, y, statistic=name, n_resamples=25, seed=4)
    slow = bootstrap_interval(p, y, statistic=func, n_resamples=25, seed=4)
    assert fast.path == "row-mean" and fast.value == pytest.approx(func(p, y), rel=1e-15)
    np.testing.assert_allclose(fast.distribution, slow.distribution, rtol=1e-13, atol=0)


def test_generic_path_is_the_naive_bootstrap_over_rows():
    # independent reference: draw the indices the documented way and recompute
    p, y = _multiclass(n=300)
    seed, r = 12, 15
    idx = np.random.default_rng(seed).integers(0, 300, size=(r, 300))
    keep = {"estimator": "sweep", "binning": "equal-mass", "tie_policy": "keep"}
    ref = [calibration_error(p[np.sort(i)], y[np.sort(i)], **keep).value for i in idx]
    opts = {k: v for k, v in keep.items() if k != "estimator"}
    res = bootstrap_interval(p, y, statistic="sweep", n_resamples=r, seed=seed, **opts)
    assert res.path == "generic"
    np.testing.assert_allclose(res.distribution, ref, rtol=0, atol=1e-12)
    ref_plugin = [calibration_error(p[i], y[i], norm=2).value for i in idx]
    fast = bootstrap_interval(p, y, norm=2, n_resamples=r, seed=seed)
    np.testing.assert_allclose(fast.distribution, ref_plugin, rtol=0, atol=1e-12)
    for binning in ("equal-mass", "equal-width"):
        ref_sweep = [
            calibration_error(p[np.sort(i)], y[np.sort(i)], estimator="sweep", binning=binning)
            for i in idx
        ]
        sw = bootstrap_interval(p, y, statistic="sweep", binning=binning, n_resamples=r, seed=seed)
        assert sw.path == "sweep"
        np.testing.assert_allclose(sw.distribution, [v.value for v in ref_sweep], atol=1e-12)


def test_equal_mass_resamples_are_ranked_in_row_order():
    # with ties, a resample is binned as the drawn rows sorted by row index
    p, y = _binary_ties(n=200)
    idx = np.random.default_rng(3).integers(0, 200, size=(10, 200))
    opts = {"lens": "binary", "binning": "equal-mass", "n_bins": 6}
    ref = [calibration_error(p[np.sort(i)], y[np.sort(i)], **opts).value for i in idx]
    res = bootstrap_interval(p, y, n_resamples=10, seed=3, **opts)
    np.testing.assert_allclose(res.distribution, ref, rtol=0, atol=1e-12)


CIFAR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cifar10-14-networks"


@pytest.mark.data
@pytest.mark.parametrize(
    ("estimator", "opts"),
    [
        ("sweep", {"binning": "equal-mass"}),
        ("sweep", {"binning": "equal-width"}),
        ("debiased", {"norm": 1}),
    ],
)
def test_sweep_and_debiased_l1_fast_paths_on_cifar10(estimator, opts):
    if not (CIFAR / "resnet18.csv").exists():
        pytest.skip(f"CIFAR-10 predictions not found at {CIFAR}")
    p = pd.read_csv(CIFAR / "resnet18.csv", header=None).to_numpy(np.float64)
    y = pd.read_csv(CIFAR / "labels.csv", header=None).to_numpy().ravel() - 1
    fast = _check_against_generic(p, y, estimator, opts, n_resamples=12, seed=0)
    lo, hi = fast.confidence_interval
    assert lo < fast.value < hi < 0.1


# --- reproducibility, common random numbers, chunking ----------------------------


def test_seeded_reproducibility_and_seed_sensitivity():
    p, y = _multiclass()
    a = bootstrap_interval(p, y, n_resamples=50, seed=7)
    b = bootstrap_interval(p, y, n_resamples=50, seed=7)
    c = bootstrap_interval(p, y, n_resamples=50, seed=8)
    np.testing.assert_array_equal(a.distribution, b.distribution)
    assert a.confidence_interval == b.confidence_interval
    assert not np.array_equal(a.distribution, c.distribution)
    g = bootstrap_interval(p, y, n_resamples=50, seed=np.random.default_rng(7))
    np.testing.assert_array_equal(a.distribution, g.distribution)
    assert a.seed == 7 and g.seed is None


@pytest.mark.parametrize("opts", [{}, {"binning": "equal-mass"}, {"estimator_name": "brier"}])
def test_chunk_size_does_not_change_the_result(opts):
    p, y = _multiclass()
    stat = opts.pop("estimator_name", "plugin")
    ref = bootstrap_interval(p, y, statistic=stat, n_resamples=23, seed=2, **opts)
    for chunk in (1, 5, 23, 100):
        res = bootstrap_interval(
            p, y, statistic=stat, n_resamples=23, seed=2, chunk_size=chunk, **opts
        )
        np.testing.assert_allclose(res.distribution, ref.distribution, rtol=0, atol=1e-14)


def test_bootstrap_many_uses_common_resamples():
    p, y = _multiclass()
    specs = {
        "ece": ("plugin", {}),
        "ece_em": ("plugin", {"binning": "equal-mass", "norm": 2}),
        "brier": ("brier", {}),
        "lb": ("label-binned", {}),
    }
    many = bootstrap_many(p, y, specs, n_resamples=20, seed=11)
    for key, (stat, opts) in specs.items():
        single = bootstrap_interval(p, y, statistic=stat, n_resamples=20, seed=11, **opts)
        np.testing.assert_array_equal(many[key].distribution, single.distribution)


def test_bootstrap_many_shares_bin_statistics_without_mixing_them():
    # statistics of one lens share sorted prefix sums and bincounts per component; each
    # must still equal its own bootstrap (different binnings, n_bins, squares, lenses)
    p, y = _multiclass(n=300)
    cw = {"lens": "classwise"}
    specs = {
        "sweep": ("sweep", {**cw, "binning": "equal-mass"}),
        "lb2": ("label-binned", {**cw, "norm": 2, "binning": "equal-mass"}),
        "em": ("plugin", {**cw, "binning": "equal-mass", "n_bins": 7}),
        "em10": ("plugin", {**cw, "binning": "equal-mass", "n_bins": 10}),
        "ew": ("plugin", {**cw}),
        "l1": ("debiased", {**cw, "norm": 1}),
        "l1_20": ("debiased", {**cw, "norm": 1, "n_bins": 20}),
        "top": ("sweep", {"binning": "equal-width"}),
        "top_l1": ("debiased", {"norm": 1}),
        "brier": ("brier", {}),
    }
    many = bootstrap_many(p, y, specs, n_resamples=12, seed=4, chunk_size=5)
    for key, (stat, opts) in specs.items():
        alone = bootstrap_many(p, y, {key: (stat, opts)}, n_resamples=12, seed=4)[key]
        np.testing.assert_array_equal(many[key].distribution, alone.distribution)


def test_percentile_interval_and_result_fields():
    p, y = _multiclass()
    res = bootstrap_interval(p, y, n_resamples=101, confidence_level=0.9, seed=0)
    assert isinstance(res, BootstrapResult)
    lo, hi = np.quantile(res.distribution, [0.05, 0.95])
    assert res.confidence_interval == ConfidenceInterval(lo, hi)
    assert (res.confidence_level, res.n_resamples, res.method, res.statistic) == (
        0.9,
        101,
        "percentile",
        "plugin",
    )
    assert res.distribution.shape == (101,)
    assert lo <= res.value <= hi


def test_debiased_l1_resamples_reuse_the_seed_of_the_estimate():
    # each resample is the estimator called with the bootstrap's integer seed
    p, y = _multiclass(n=200)
    idx = np.random.default_rng(3).integers(0, 200, size=(5, 200))
    kw = {"estimator": "debiased", "norm": 1, "seed": 3}
    ref = [calibration_error(p[np.sort(i)], y[np.sort(i)], **kw).value for i in idx]
    a = bootstrap_interval(p, y, statistic="debiased", norm=1, n_resamples=5, seed=3)
    assert a.path == "fixed-bins"
    assert a.value == calibration_error(p, y, **kw).value
    np.testing.assert_allclose(a.distribution, ref, rtol=0, atol=1e-12)
    # a Generator seed: the estimator gets seed 0 (documented in bootstrap_many)
    g = bootstrap_interval(
        p, y, statistic="debiased", norm=1, n_resamples=5, seed=np.random.default_rng(3)
    )
    ref0 = [calibration_error(p[np.sort(i)], y[np.sort(i)], **{**kw, "seed": 0}).value for i in idx]
    np.testing.assert_allclose(g.distribution, ref0, rtol=0, atol=1e-12)


# --- validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"confidence_level": 95}, "fraction"),
        ({"confidence_level": 0.0}, "between 0 and 1"),
        ({"confidence_level": 1.0}, "between 0 and 1"),
        ({"confidence_level": "0.9"}, "number between 0 and 1"),
        ({"seed": -1}, "non-negative"),
        ({"seed": 1.5}, "non-negative"),
        ({"n_resamples": 0}, "at least 1"),
        ({"n_resamples": 10.0}, "whole number"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"statistic": "ece"}, "Unknown statistic 'ece'"),
        ({"statistic": "plugin", "norm": 3}, "norm"),
        ({"statistic": "plugin", "bandwidth": 0.1}, "bandwidth"),
        ({"statistic": "brier", "eps": 1e-9}, "no option"),
        ({"statistic": len, "n_bins": 3}, "functools.partial"),
    ],
)
def test_bootstrap_validation_errors(kwargs, match):
    p, y = _multiclass(n=50)
    with pytest.raises(ConfigError, match=match):
        bootstrap_interval(p, y, **kwargs)


def test_bootstrap_bad_data_raises_data_error():
    with pytest.raises(DataError):
        bootstrap_interval([[0.5, 0.6]], [0])


# --- coverage (slow) ---------------------------------------------------------------


@pytest.mark.slow
def test_percentile_interval_coverage_binned_ece_and_accuracy():
    # world: s ~ U(0, 1), P(y = 1 | s) = s²; equal-width B = 5 on the binary lens.
    # Population binned ECE: bin [a, b): mean score (a + b)/2, mean label (a² + ab + b²)/3.
    edges = np.arange(6) / 5
    a, b = edges[:-1], edges[1:]
    true_ece = np.mean(np.abs((a + b) / 2 - (a * a + a * b + b * b) / 3))
    # accuracy: predict 1 iff s > ½, so E[1[s > ½] s² + 1[s ≤ ½](1 − s²)] = 7/24 + 11/24
    true_acc = 0.75
    rng = np.random.default_rng(2024)
    reps, n = 150, 1500
    hit_ece = hit_acc = 0
    for _ in range(reps):
        s = rng.uniform(size=n)
        y = (rng.uniform(size=n) < s**2).astype(int)
        seed = int(rng.integers(2**31))
        res = bootstrap_many(
            s,
            y,
            {"ece": ("plugin", {"lens": "binary", "n_bins": 5}), "acc": ("accuracy", {})},
            n_resamples=300,
            confidence_level=0.9,
            seed=seed,
        )
        lo, hi = res["ece"].confidence_interval
        hit_ece += lo <= true_ece <= hi
        lo, hi = res["acc"].confidence_interval
        hit_acc += lo <= true_acc <= hi
    # nominal 0.90; with 150 replicates the binomial sd is 0.024
    assert 0.82 <= hit_ece / reps <= 0.97
    assert 0.82 <= hit_acc / reps <= 0.97


def test_resample_order_draws_vs_rows():
    # order-dependent statistic: the first row of the resample
    p, y = _multiclass(n=100)
    idx = np.random.default_rng(4).integers(0, 100, size=(6, 100))

    def first_score(pp, yy):
        return float(pp[0, 0])

    draws = bootstrap_interval(p, y, statistic=first_score, n_resamples=6, seed=4)
    np.testing.assert_array_equal(draws.distribution, p[idx[:, 0], 0])
    rows = bootstrap_interval(
        p, y, statistic=first_score, n_resamples=6, seed=4, resample_order="rows"
    )
    np.testing.assert_array_equal(rows.distribution, p[idx.min(axis=1), 0])
    with pytest.raises(ConfigError, match="resample_order"):
        bootstrap_interval(p, y, n_resamples=6, resample_order="sorted")


def test_linear_skce_resamples_in_draw_order():
    # skce-ul pairs rows (1, 2), (3, 4), ...; in row order a row's copies are adjacent and
    # paired with each other, which inflates every resample. In draw order the resampled
    # values centre near the unbiased quadratic estimate.
    p, y = _multiclass(n=400)
    uq = calibration_error(p, y, estimator="skce-uq").value
    draws = bootstrap_interval(p, y, statistic="skce-ul", n_resamples=100, seed=0)
    rows = bootstrap_interval(
        p, y, statistic="skce-ul", n_resamples=100, seed=0, resample_order="rows"
    )
    assert draws.path == "generic"
    assert abs(draws.distribution.mean() - uq) < 0.02
    assert rows.distribution.mean() - uq > 0.05


def test_log_loss_eps_reaches_the_row_mean_path():
    p, y = _multiclass(n=200)
    p = np.where(np.arange(200)[:, None] % 17 == 0, np.eye(4)[(y + 1) % 4], p)  # some zeros
    fast = bootstrap_interval(p, y, statistic="log-loss", eps=1e-6, n_resamples=20, seed=2)
    slow = bootstrap_interval(
        p, y, statistic=lambda a, b: log_loss(a, b, eps=1e-6), n_resamples=20, seed=2
    )
    assert fast.value == pytest.approx(log_loss(p, y, eps=1e-6), rel=1e-15)
    np.testing.assert_allclose(fast.distribution, slow.distribution, rtol=1e-13)


def test_an_estimate_outside_its_percentile_interval_is_said_in_every_table():
    """The plug-in ECE of a nearly calibrated model sits below its resamples (they carry their
    own label noise) and a debiased one far below them (a resample's own error is the plug-in
    error of these rows): every table says so, with one helper's words, exactly where the
    interval misses its estimate."""
    from core.analyses.analysis import AnalysisConfig, analyze
    from core.analyses.estimator_comparison import compare_estimators
    from core.analyses.model_comparison import compare_models
    from core.data import load_predictions
    from core.stats.intervals import outside_note

    assert outside_note(0.5, 0.4, 0.6) == outside_note(0.4, 0.4, 0.6) == ""
    assert outside_note(0.5, float("nan"), float("nan")) == ""
    assert "sit above it" in outside_note(0.1, 0.2, 0.3)
    assert "sit below it" in outside_note(0.4, 0.2, 0.3)
    path = Path(__file__).parents[1] / "sample_data" / "multiclass_digits.csv"
    parts = load_predictions(path).by_model()
    config = AnalysisConfig(lens="classwise", n_resamples=100)
    tables = [analyze(parts["logistic-regression"], config).metrics]
    tables.append(
        compare_estimators(parts["logistic-regression"], config, intervals="binned").table
    )
    tables.append(compare_models(parts, config=config).table)
    missed = 0
    for table in tables:
        for r in table.itertuples():
            said = outside_note(r.value, r.low, r.high)
            assert (said in r.note) if said else ("outside its percentile" not in r.note)
            missed += bool(said)
    # the plug-in ℓ1 of logistic regression (0.0050) lies below its interval in all three
    assert missed >= 3
