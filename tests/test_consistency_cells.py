"""Consistency resampling from the redrawn cells against redrawing rows (the module docstring)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from core import calibration_test
from core.analyses.calibration_tests.classical import EXACT_NULL_WORK, _batched_null, _cells_null
from core.inference.calibration import EstimatorCall


def _data(n: int, seed: int, power: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**power).astype(int)
    return np.column_stack([1.0 - p, p]), y


@pytest.mark.slow
@pytest.mark.parametrize(
    ("estimator", "norm"),
    [("plugin", 1), ("plugin", 2), ("debiased", 1), ("debiased", 2), ("label-binned", 2)],
)
def test_the_cells_null_has_the_law_of_the_redrawn_rows_at_n_1e5(estimator, norm):
    n, r = 100_000, 1500
    P, y = _data(n, 0, 1.3)
    call = EstimatorCall.make(estimator, lens="binary", norm=norm, n_bins=15)
    rows = _batched_null(call, P, y, r, np.random.default_rng(1))
    cells = _cells_null(call, P, y, r, np.random.default_rng(2))
    sd = rows.std()
    assert stats.ks_2samp(rows, cells).pvalue > 1e-3
    assert abs(rows.mean() - cells.mean()) < 4 * sd * np.sqrt(2 / r)
    assert cells.std() == pytest.approx(sd, rel=0.12)


def test_cells_hold_the_exact_shares_of_the_redrawn_labels():
    # one bin: a resampled row has redrawn label 1 with probability mean(s)
    P, y = _data(2000, 3, 1.0)
    call = EstimatorCall.make("plugin", lens="binary", n_bins=1)
    null = _cells_null(call, P, y, 4000, np.random.default_rng(0))
    # with one bin the plug-in value is |ȳ* − s̄*|: ȳ* and s̄* have the same mean, and ȳ* − s̄*
    # has variance (mean(s(1 − s)) + ...)/n ≥ mean(s)(1 − mean(s))/n − var(s)/n
    s = P[:, 1]
    sd = np.sqrt((s.mean() * (1 - s.mean()) - s.var()) / s.size)
    # |N(0, sd²)| has mean sd·√(2/π)
    assert null.mean() == pytest.approx(sd * np.sqrt(2 / np.pi), rel=0.05)


def test_the_test_takes_the_cells_above_the_work_budget_and_says_so():
    n, r = 20_000, EXACT_NULL_WORK // 20_000 + 100
    P, y = _data(n, 4, 1.0)
    big = calibration_test(P, y, test="consistency", lens="binary", n_resamples=r, seed=0)
    assert big.details["path"] == "cells"
    assert "redrawn cells" in big.method
    small = calibration_test(P, y, test="consistency", lens="binary", n_resamples=200, seed=0)
    assert small.details["path"] == "rows"
    assert big.statistic == small.statistic
    # calibrated data: neither rejects
    assert big.pvalue > 0.01 and small.pvalue > 0.01


def test_a_seeded_estimator_reads_the_observed_values_draws_on_every_resample():
    """The debiased ℓ1 estimator is a seeded Monte Carlo: the null is of the same function."""
    n, r = 300, 6
    P, y = _data(n, 5, 1.0)
    call = EstimatorCall.make("debiased", lens="binary", norm=1, n_bins=10)
    null = _batched_null(call, P, y, r, np.random.default_rng(7))
    # the rows and labels _batched_null draws (one chunk at this size)
    rng = np.random.default_rng(7)
    rows = rng.integers(0, n, size=(r, n))
    redrawn = rng.random((r, n)) < P[:, 1][rows]
    for i in range(r):
        alone = call.run(P[rows[i]], redrawn[i].astype(int), np.random.default_rng(0)).value
        assert null[i] == pytest.approx(alone, abs=1e-12)


def test_the_debiased_l1_test_runs_on_batched_resamples_not_row_by_row():
    P, y = _data(20_000, 6, 1.0)
    small = calibration_test(
        P, y, test="consistency", lens="binary", estimator="debiased", norm=1, n_resamples=200
    )
    assert small.details["vectorised"] and small.details["path"] == "rows"
    big = calibration_test(
        P, y, test="consistency", lens="binary", estimator="debiased", norm=1, n_resamples=600
    )
    assert big.details["path"] == "cells"
    assert big.statistic == small.statistic
    assert big.pvalue > 0.01 and small.pvalue > 0.01


@pytest.mark.slow
def test_the_debiased_l1_test_holds_its_size_on_calibrated_data():
    rng = np.random.default_rng(5)
    pvalues = []
    for k in range(300):
        p = rng.uniform(size=3000)
        y = (rng.uniform(size=3000) < p).astype(int)
        pvalues.append(
            calibration_test(
                p,
                y,
                test="consistency",
                lens="binary",
                estimator="debiased",
                norm=1,
                n_resamples=199,
                seed=k,
            ).pvalue
        )
    # 300 p-values: the share at or below 0.05 is 0.05 ± 3 standard errors
    share = np.mean(np.array(pvalues) <= 0.05)
    assert abs(share - 0.05) < 3 * np.sqrt(0.05 * 0.95 / 300)
