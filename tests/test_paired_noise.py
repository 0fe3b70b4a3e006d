"""The bins' score-sum terms of paired models are drawn jointly (``PairedNoise``).

In the exact paired bootstrap every model is resampled on the same rows, so two models' score
sums in a bin move together as far as their scores do: a model compared with itself differs by
0 in every resample, and a model against a slight perturbation of it by little. The cell
bootstrap of the comparison draws the terms of every model's same lens component from each
joint cell's within-cell covariance of their scores; drawn per model, they had widened such
differences (1.4–1.7× the exact paired spread at a perturbation of 0.002, an interval instead
of 0 for a model against itself).
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from core.analyses.analysis import AnalysisConfig
from core.analyses.model_comparison import compare_models, on_edges, shared_lens_edges
from core.data import as_predictions
from core.inference.calibration import EstimatorCall
from core.inference.cells import cell_bootstrap
from core.inference.comparison_cells import (
    PairedNoise,
    joint_cell_bootstrap,
    joint_cells,
    model_cells,
)
from core.stats.binned_view import BinnedViews

KW = {"binning": "equal-width", "n_bins": 10, "tie_policy": "split"}


def _joint(models, y, lens="binary"):
    config = AnalysisConfig(lens=lens, n_bins=10)
    lenses = [BinnedViews(p, y).lens(lens) for p in models]
    edges = shared_lens_edges(lenses, config)
    comps = [on_edges(lv, edges, config) for lv in lenses]
    return comps, lenses[0].weights, joint_cells(comps, lenses[0].weights, lens=lens, **KW)


def _binary(n, seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**1.2).astype(int)
    return rng, p, y


@pytest.mark.parametrize("law", ["multinomial", "normal"])
@pytest.mark.parametrize("lens", ["binary", "classwise"])
def test_a_model_against_itself_differs_by_nothing(law, lens):
    rng = np.random.default_rng(1)
    n = 3_000
    p = rng.dirichlet(np.ones(3), size=n) if lens == "classwise" else rng.uniform(size=n)
    y = (
        np.array([rng.choice(3, p=r) for r in p])
        if lens == "classwise"
        else (rng.uniform(size=n) < p).astype(int)
    )
    _, _, cells = _joint([p, p], y, lens)
    calls = {
        "plugin": EstimatorCall.make("plugin", lens=lens, n_bins=10),
        "debiased": EstimatorCall.make("debiased", lens=lens, n_bins=10, norm=2),
    }
    out = joint_cell_bootstrap(cells, 2, calls, n_resamples=200, seed=3, law=law)
    for key in calls:
        spread = np.std(out[0, key])
        assert spread > 0
        # rounding only (the normal law's root of two equal blocks of the covariance)
        assert np.max(np.abs(out[0, key] - out[1, key])) <= 1e-9 * spread


def test_paired_differences_have_the_exact_paired_spread():
    """A model against a slight perturbation of it: the cell bootstrap's spread of the
    difference is the exact paired bootstrap's (it was 1.4–1.7× as wide)."""
    rng, p, y = _binary(20_000, 2)
    q = np.clip(p + rng.normal(0, 0.002, p.shape[0]), 0, 1)
    models = {"a": as_predictions((p, y)), "b": as_predictions((q, y))}
    kw = {"metrics": ("plugin@1", "debiased@2"), "n_resamples": 1_000}
    cells = compare_models(models, config=AnalysisConfig(lens="binary", bootstrap="cells"), **kw)
    exact = compare_models(models, config=AnalysisConfig(lens="binary", bootstrap="exact"), **kw)
    for key in kw["metrics"]:
        a = cells.distributions["b", key] - cells.distributions["a", key]
        b = exact.distributions["b", key] - exact.distributions["a", key]
        # the standard deviation of a standard deviation of 1,000 draws is about 2.2 %
        assert a.std() == pytest.approx(b.std(), rel=0.12), key


def test_each_model_keeps_its_own_law():
    """Drawn jointly, each model's terms still have the variance drawn alone gave them:
    per bin, the cells' counts times their within-cell variances."""
    from core.inference.cells import _cell_moments

    rng, p, y = _binary(8_000, 4)
    q = np.clip(p**0.8 + rng.normal(0, 0.01, p.shape[0]), 0, 1)
    _, _, cells = _joint([p, q], y)
    noise = PairedNoise(cells, 2)
    counts = cells.counts.astype(np.float64)
    terms = noise.of_bins(4_000, np.random.default_rng(6))
    for m in range(2):
        _, _, var, _ = _cell_moments(cells, m)
        want = np.bincount(cells.bins[:, m], weights=counts * var, minlength=10)
        filled = want > 1e-9
        # the variance of a variance of 4,000 normal draws is about 2.2 %
        assert_allclose(terms[m].var(axis=0)[filled], want[filled], rtol=0.12)
    # and across models as correlated as their scores: nearly the same bins, close terms
    assert np.corrcoef(terms[0].sum(axis=1), terms[1].sum(axis=1))[0, 1] > 0.8
    # the covariance of the bin terms is the cells' within-cell covariances summed
    cov, starts = noise.covariance(0)
    per_cell = noise.cell_covariance(0) * counts[:, None, None]
    a, b = cells.bins[:, 0], cells.bins[:, 1]
    for i, j in [(2, 2), (3, 4), (7, 7)]:
        want = per_cell[(a == i) & (b == j), 0, 1].sum()
        assert cov[starts[0] + i, starts[1] + j] == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_one_model_draws_as_its_own_cell_bootstrap():
    rng, p, y = _binary(2_000, 7)
    comps, weights, cells = _joint([p], y)
    call = EstimatorCall.make("plugin", lens="binary", n_bins=10)
    joint = joint_cell_bootstrap(cells, 1, {"x": call}, n_resamples=100, seed=8)
    own = cell_bootstrap(
        model_cells(comps[0], weights, lens="binary", **KW), {"x": call}, n_resamples=100, seed=8
    )
    assert_allclose(joint[0, "x"], own["x"], rtol=1e-12)


def test_terms_follow_each_bins_resampled_count():
    """Drawn at the data's counts, a bin's term scales with its resampled count: a bin no
    row was drawn into keeps a score sum of 0, and sums stay within [0, count]."""
    from core.inference.cells import multinomial_batch

    _, p, y = _binary(3_000, 9)
    _, _, cells = _joint([p, p**0.9], y)
    noise = PairedNoise(cells, 2)
    draws = np.tile(cells.counts.astype(np.float64), (50, 1))
    draws[:, cells.bins[:, 0] == 3] = 0.0  # no row of model 0's bin 3 in any resample
    terms = noise.of_bins(draws.shape[0], np.random.default_rng(2))
    batch = multinomial_batch(cells, 0, draws, np.random.default_rng(3), terms[0])
    assert np.all(batch.counts[:, 3] == 0) and np.all(batch.score_sums[:, 3] == 0.0)
    assert np.all((batch.score_sums >= 0) & (batch.score_sums <= batch.counts))
    # at the data's counts the terms are the drawn ones
    full = np.tile(cells.counts.astype(np.float64), (50, 1))
    again = multinomial_batch(cells, 0, full, np.random.default_rng(3), terms[0])
    centre = multinomial_batch(cells, 0, full, np.random.default_rng(3), 0.0 * terms[0])
    inside = (again.score_sums > 0) & (again.score_sums < again.counts)
    assert_allclose((again.score_sums - centre.score_sums)[inside], terms[0][inside], atol=1e-9)
