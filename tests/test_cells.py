"""Cell statistics: exact bins, merging, and the cell bootstrap against the exact bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from core.analyses.analysis import AnalysisConfig, analyze
from core.data import as_predictions
from core.inference.bootstrap import bootstrap_many
from core.inference.calibration import EstimatorCall
from core.inference.cells import (
    _law_moments,
    cell_bootstrap,
    cell_law,
    cells_of,
    normal_batches,
    psd_root,
)
from core.stats.binned_view import BinnedViews
from core.stats.scores import SCORES


def _binary(n, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 1.0, size=n)
    return p, (rng.uniform(size=n) < p**1.3).astype(int)


def _multiclass(n, k=4, seed=1):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.6), size=n)
    sharp = p**2 / (p**2).sum(1, keepdims=True)
    y = (sharp.cumsum(1) < rng.uniform(size=(n, 1))).sum(1)
    return p, y


def _cells(p, y, lens, binning="equal-width", n_bins=15, binary=True):
    pred = as_predictions((p, y))
    views = BinnedViews(pred.probs, pred.labels)
    view = views.binned(lens, binning, n_bins)
    rows = {
        s: SCORES.get(s).rows(pred.probs, pred.labels, binary=pred.binary) for s in SCORES.names()
    }
    return views, view, cells_of(view, rows)


@pytest.mark.parametrize(
    ("lens", "binning"),
    [("binary", "equal-width"), ("binary", "equal-mass"), ("classwise", "equal-width")],
)
def test_cells_hold_the_exact_bin_statistics_and_scores(lens, binning):
    p, y = _binary(3000) if lens == "binary" else _multiclass(3000)
    pred = as_predictions((p, y))
    views, view, cells = _cells(p, y, lens, binning)
    assert cells.n == 3000 and cells.counts.min() >= 1
    for c, comp in enumerate(view.components):
        got, want = cells.component_bins(c), comp.stats
        np.testing.assert_array_equal(got.counts, want.counts)
        np.testing.assert_allclose(got.score_sums, want.score_sums, rtol=1e-12)
        np.testing.assert_allclose(got.label_sums, want.label_sums, rtol=0, atol=0)
    for name in SCORES.names():
        want = SCORES.get(name).value(pred.probs, pred.labels, binary=pred.binary)
        assert cells.score_value(name) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("k", [3, 30])  # 30 classes: cells wider than one packed integer
def test_cells_of_two_chunks_add_up_to_the_cells_of_all_rows(k):
    p, y = _multiclass(4000, k=k)
    pred = as_predictions((p, y))
    views = BinnedViews(pred.probs, pred.labels)
    whole = views.binned("classwise", "equal-width", 10)
    rows = {s: SCORES.get(s).rows(pred.probs, pred.labels, binary=False) for s in SCORES.names()}
    all_cells = cells_of(whole, rows)
    halves = []
    for part in (slice(0, 1700), slice(1700, 4000)):
        v = BinnedViews(pred.probs[part], pred.labels[part]).binned("classwise", "equal-width", 10)
        halves.append(cells_of(v, {k: r[part] for k, r in rows.items()}))
    merged = sum(halves)
    # the merged cells are numpy's distinct rows of both halves' keys, in its order
    both = np.concatenate(
        [np.concatenate([h.bins, h.outcomes.astype(np.intp)], axis=1) for h in halves]
    )
    want = np.unique(both, axis=0)
    np.testing.assert_array_equal(np.concatenate([merged.bins, merged.outcomes], axis=1), want)
    np.testing.assert_array_equal(merged.bins, all_cells.bins)
    np.testing.assert_array_equal(merged.outcomes, all_cells.outcomes)
    np.testing.assert_array_equal(merged.counts, all_cells.counts)
    np.testing.assert_allclose(merged.score_sums, all_cells.score_sums, rtol=1e-12)
    np.testing.assert_allclose(merged.row_sums["brier"], all_cells.row_sums["brier"], rtol=1e-12)
    # a resample drawn from either gives the same bootstrap (same cells, same seed)
    call = EstimatorCall.make("plugin", lens="classwise", n_bins=10)
    a = cell_bootstrap(all_cells, {"x": call}, n_resamples=50, seed=4)["x"]
    b = cell_bootstrap(merged, {"x": call}, n_resamples=50, seed=4)["x"]
    np.testing.assert_allclose(a, b, rtol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("lens", "statistic", "norm"),
    [
        ("binary", "plugin", 1),
        ("binary", "debiased", 2),
        ("binary", "label-binned", 2),
        ("top-label", "average", 1),
        ("classwise", "plugin", 1),
    ],
)
def test_cell_bootstrap_agrees_with_the_exact_bootstrap_at_n_1e5(lens, statistic, norm):
    # quantiles of the two bootstrap laws agree within Monte Carlo error
    n, r = 100_000, 1500
    p, y = _binary(n, seed=7) if lens == "binary" else _multiclass(n, seed=7)
    views, _, cells = _cells(p, y, lens)
    call = EstimatorCall.make(statistic, lens=lens, norm=norm)
    fast = cell_bootstrap(cells, {"x": call, "brier": "brier"}, n_resamples=r, seed=11)
    exact = bootstrap_many(
        None,
        None,
        {"x": (statistic, {"lens": lens, "norm": norm}), "brier": ("brier", {})},
        n_resamples=r,
        seed=12,
        views=views,
        binary=p.ndim == 1,
    )
    for key in ("x", "brier"):
        a, b = fast[key], exact[key].distribution
        assert stats.ks_2samp(a, b).pvalue > 1e-3, key
        sd = b.std()
        assert abs(a.mean() - b.mean()) < 4 * sd * np.sqrt(2 / r), key
        assert a.std() == pytest.approx(sd, rel=0.12), key
        for q in (0.025, 0.5, 0.975):
            # standard error of a sample quantile of a near-normal law: √(q(1−q)/R)/φ(z_q)·sd
            se = np.sqrt(q * (1 - q) / r) / stats.norm.pdf(stats.norm.ppf(q)) * sd
            assert abs(np.quantile(a, q) - np.quantile(b, q)) < 4 * np.sqrt(2) * se, (key, q)


def test_analyze_switches_to_cells_above_the_work_budget_and_says_so():
    p, y = _binary(20_000, seed=2)
    small = analyze((p, y), AnalysisConfig(lens="binary", n_resamples=100))
    large = analyze((p, y), AnalysisConfig(lens="binary", n_resamples=1000))
    assert small.intervals["plugin"].path == "fixed-bins"
    assert large.intervals["plugin"].path == "cells"
    m = large.metrics.set_index("metric")
    # estimators that need the rows of each bin keep their point estimate and say why
    assert np.isnan(m.loc["sweep", "low"]) and "exact bootstrap" in m.loc["sweep", "note"]
    assert np.isfinite(m.loc["brier", "low"]) and np.isfinite(m.loc["debiased", "low"])
    # the point estimates do not depend on how the intervals were drawn
    np.testing.assert_array_equal(small.metrics.value, large.metrics.value)
    exact = analyze((p, y), AnalysisConfig(lens="binary", n_resamples=1000, bootstrap="exact"))
    assert exact.intervals["sweep"].path == "sweep"
    lo, hi = exact.intervals["plugin"].confidence_interval
    assert large.intervals["plugin"].confidence_interval.low == pytest.approx(lo, rel=0.1)
    assert large.intervals["plugin"].confidence_interval.high == pytest.approx(hi, rel=0.1)


@pytest.mark.slow
def test_cell_bootstrap_of_the_l2_spread_agrees_on_calibrated_data():
    # calibrated rows: the label-binned ℓ2 value is mostly the spread of the scores in their
    # bins, whose bootstrap law needs the sum of squares to move with the score sum
    n, r = 100_000, 1500
    rng = np.random.default_rng(5)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    views, _, cells = _cells(p, y, "binary")
    call = EstimatorCall.make("label-binned", lens="binary", norm=2)
    fast = cell_bootstrap(cells, {"x": call}, n_resamples=r, seed=3)["x"]
    exact = bootstrap_many(
        None,
        None,
        {"x": ("label-binned", {"lens": "binary", "norm": 2})},
        n_resamples=r,
        seed=4,
        views=views,
        binary=True,
    )["x"].distribution
    assert fast.std() == pytest.approx(exact.std(), rel=0.12)
    assert abs(fast.mean() - exact.mean()) < 4 * exact.std() * np.sqrt(2 / r)


def test_the_normal_law_draws_bin_statistics_with_the_multinomial_moments():
    # every bin statistic of every component is a linear function of the cell counts, so its
    # mean and covariance under Multinomial(n, c/n) follow from the cells by hand
    p, y = _multiclass(3000, k=3, seed=9)
    _, _, cells = _cells(p, y, "classwise", n_bins=5)
    r = 40_000
    batches, totals = normal_batches(cells, ["brier"], r, np.random.default_rng(2))
    n = cells.n
    c = cells.counts.astype(float)
    # counts of component 0's bins and outcome sums of component 1's bins, jointly
    a0 = np.zeros((cells.n_cells, 5))
    a0[np.arange(cells.n_cells), cells.bins[:, 0]] = 1.0
    a1 = np.zeros((cells.n_cells, 5))
    a1[np.arange(cells.n_cells), cells.bins[:, 1]] = cells.outcomes[:, 1]
    a = np.hstack([a0, a1])
    mean = a.T @ c
    cov = a.T @ (a * c[:, None]) - np.outer(mean, mean) / n
    drawn = np.hstack([batches[0].counts, batches[1].label_sums])
    se = np.sqrt(np.diag(cov) / r)
    assert np.all(np.abs(drawn.mean(0) - mean) < 5 * se + 1e-9)
    got = np.cov(drawn, rowvar=False)
    scale = np.sqrt(np.outer(np.diag(cov), np.diag(cov))) + 1e-12
    # sample covariances of normal draws: standard error about √(2/r) of the scale
    assert np.all(np.abs(got - cov) < 6 * np.sqrt(2 / r) * scale + 1e-6)
    # the three components' counts sum to n in every resample (a direction of no variance)
    np.testing.assert_allclose(batches[2].counts.sum(1), n, rtol=1e-9)
    assert totals["brier"].mean() == pytest.approx(cells.score_value("brier"), rel=1e-3)


def test_auto_law_is_multinomial_for_few_cells_and_normal_when_cells_are_as_many_as_rows():
    p, y = _binary(20_000)
    _, _, few = _cells(p, y, "binary")
    assert cell_law(few, 1000) == "multinomial"
    p, y = _multiclass(60_000, k=10, seed=3)
    _, _, many = _cells(p, y, "classwise")
    assert many.n_cells > 10_000
    assert cell_law(many, 1000) == "normal"
    # 20,000 rows of ten classes: the multinomial law's 2.7·10⁸ steps took about 5 s here,
    # the normal law's a fraction of a second (the rule counted them as equal before)
    p, y = _multiclass(20_000, k=10, seed=4)
    _, _, mid = _cells(p, y, "classwise")
    steps = 1000 * mid.n_cells * (len(mid.names) + 8.0)
    assert 5e7 < steps < 1e9 and cell_law(mid, 1000) == "normal"
    # and a few thousand cells of three classes stay exact (well under a second)
    p, y = _multiclass(3_000, k=3, seed=5)
    _, _, small = _cells(p, y, "classwise")
    assert cell_law(small, 1000) == "multinomial"
    with pytest.raises(ValueError, match="law"):
        cell_bootstrap(few, {}, n_resamples=2, seed=0, law="poisson")


@pytest.mark.slow
def test_the_normal_law_agrees_with_the_exact_bootstrap_on_ten_classes_at_n_1e5():
    # the classwise lens of ten classes has almost one cell per row: the case the normal
    # law is for; its quantiles agree with the exact bootstrap's within Monte Carlo error
    n, r = 100_000, 1000
    p, y = _multiclass(n, k=10, seed=8)
    views, _, cells = _cells(p, y, "classwise")
    stats_ = {"plugin": 1, "debiased": 2}
    calls = {k: EstimatorCall.make(k, lens="classwise", norm=v) for k, v in stats_.items()}
    fast = cell_bootstrap(cells, {**calls, "brier": "brier"}, n_resamples=r, seed=11, law="normal")
    exact = bootstrap_many(
        None,
        None,
        {
            **{k: (k, {"lens": "classwise", "norm": v}) for k, v in stats_.items()},
            "brier": ("brier", {}),
        },
        n_resamples=r,
        seed=12,
        views=views,
        binary=False,
    )
    for key in (*stats_, "brier"):
        a, b = fast[key], exact[key].distribution
        assert stats.ks_2samp(a, b).pvalue > 1e-3, key
        sd = b.std()
        assert abs(a.mean() - b.mean()) < 4 * sd * np.sqrt(2 / r), key
        assert a.std() == pytest.approx(sd, rel=0.12), key
        for q in (0.025, 0.5, 0.975):
            se = np.sqrt(q * (1 - q) / r) / stats.norm.pdf(stats.norm.ppf(q)) * sd
            assert abs(np.quantile(a, q) - np.quantile(b, q)) < 4 * np.sqrt(2) * se, (key, q)


def _dense_design(cells, scores):
    """The normal law's ``A`` written out: per component (1, o, m, q) one-hot by bin, then
    one column per score (its per-row mean in the cell)."""
    d = cells.n_cells
    c = cells.counts.astype(float)
    safe = np.where(c > 0, c, 1.0)
    blocks = []
    for k in range(len(cells.names)):
        b = cells.edges[k].shape[0] - 1
        onehot = np.zeros((d, b))
        onehot[np.arange(d), cells.bins[:, k]] = 1.0
        m = cells.score_sums[:, k] / safe
        q = cells.score_squares[:, k] / safe
        blocks += [onehot, onehot * cells.outcomes[:, k, None], onehot * m[:, None]]
        blocks.append(onehot * q[:, None])
    blocks += [(cells.row_sums[s] / safe)[:, None] for s in scores]
    return np.hstack(blocks)


@pytest.mark.parametrize(
    ("lens", "binning", "k"),
    [
        ("classwise", "equal-width", 4),
        ("classwise", "equal-mass", 3),
        ("top-label", "equal-width", 5),
    ],
)
def test_law_moments_equal_the_dense_design_products(lens, binning, k):
    # mean Aᵀc and covariance Aᵀdiag(c)A − (Aᵀc)(Aᵀc)ᵀ/n of the bin statistics, by hand
    p, y = _multiclass(4000, k=k, seed=13)
    _, _, cells = _cells(p, y, lens, binning=binning, n_bins=6)
    for scores in ([], ["brier", "log-loss", "accuracy"]):
        a = _dense_design(cells, scores)
        c = cells.counts.astype(float)
        mean = a.T @ c
        cov = a.T @ (a * c[:, None]) - np.outer(mean, mean) / cells.n
        got_mean, got_cov = _law_moments(cells, scores)
        np.testing.assert_allclose(got_mean, mean, rtol=1e-13, atol=1e-9)
        np.testing.assert_allclose(got_cov, cov, rtol=1e-12, atol=1e-9 * np.abs(cov).max())


def test_psd_root_reproduces_singular_covariances():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(30, 12))
    for cov in (a @ a.T, np.diag([4.0, 0.0, 1.0]), np.zeros((3, 3))):
        root = psd_root(cov)
        assert root.shape[1] == np.linalg.matrix_rank(cov)
        np.testing.assert_allclose(root @ root.T, cov, atol=1e-12 * max(1.0, np.abs(cov).max()))
    # a multinomial's counts sum to n: a covariance of rank B − 1
    n, shares = 1000, np.array([0.2, 0.3, 0.5])
    cov = n * (np.diag(shares) - np.outer(shares, shares))
    assert psd_root(cov).shape == (3, 2)


def test_cells_of_many_components_are_the_distinct_rows_in_order():
    """Columns too many to pack into one integer (paired models on the classwise lens):
    packed into words and ranked word by word, the cells are numpy's distinct rows."""
    from core.inference.cells import _cell_keys

    rng = np.random.default_rng(12)
    for n, m, most in ((2_000, 60, 16), (3_000, 150, 3)):
        radices = [int(r) for r in rng.integers(1, most + 1, m)]  # radix 1: a constant column
        columns = [rng.integers(0, r, n) for r in radices]
        columns = [c[rng.integers(0, n // 4, n)] if j % 3 else c for j, c in enumerate(columns)]
        keys, inverse = _cell_keys(columns, radices)
        want_keys, want_inverse = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
        np.testing.assert_array_equal(keys, want_keys)
        np.testing.assert_array_equal(inverse, want_inverse.reshape(-1))
