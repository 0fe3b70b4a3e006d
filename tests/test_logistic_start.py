"""Binned starting points of the batched logistic fits (Platt, beta calibration)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

import core.recalibration.beta as beta
from core.recalibration.beta import fit_beta_rows
from core.recalibration.logistic_start import (
    START_BINS,
    START_MIN_COLUMNS,
    START_RANGE,
    binned_rows,
    compressed_logistic,
)
from core.recalibration.scaling import fit_logistic_rows


def test_binned_rows_counts_means_and_positives_by_hand():
    # standardised values -8 + width * (k + 1/2) fall in bin k exactly
    width = 2 * START_RANGE / START_BINS
    x = np.array([[-START_RANGE + width * 0.5, -START_RANGE + width * 0.5, 0.0, 1e9, -1e9]])
    t = np.array([[True, False, True, True, False]])
    zero, one = np.zeros(1), np.ones(1)
    counts, means, pos = binned_rows([(x, zero, one), (2 * x, zero, one)], t)
    mid = START_BINS // 2
    assert counts[0, 0] == 3  # two in bin 0 and the far-left outlier
    assert counts[0, mid] == 1 and counts[0, -1] == 1 and counts.sum() == 5
    assert pos[0, 0] == 1 and pos[0, mid] == 1 and pos[0, -1] == 1
    assert means[0, 0, 0] == pytest.approx((2 * x[0, 0] - 1e9) / 3)
    assert means[0, 0, 1] == pytest.approx(2 * means[0, 0, 0])
    # float targets are summed
    tf = np.array([[0.25, 0.5, 1.0, 0.0, 0.125]])
    _, _, pf = binned_rows([(x, zero, one)], tf)
    assert pf[0, 0] == pytest.approx(0.875) and pf[0, -1] == 0.0


def test_compressed_fit_is_exact_when_bins_hold_one_value():
    """With one distinct feature value per bin, the compressed problem is the full problem."""
    rng = np.random.default_rng(0)
    width = 2 * START_RANGE / START_BINS
    centres = -START_RANGE + width * (np.arange(START_BINS) + 0.5)
    x = rng.choice(centres[60:200], size=(3, 9000))
    t = rng.random(x.shape) < 1 / (1 + np.exp(-(0.8 * x - 0.3)))
    zero, one = np.zeros(3), np.ones(3)
    counts, means, pos = binned_rows([(x, zero, one)], t)
    theta = compressed_logistic(counts, means, pos, np.zeros((3, 2)), np.ones((3, 2), bool))
    a, c, _ = fit_logistic_rows(x, t, warm_start=False)
    assert_allclose(theta[:, 0], a, rtol=1e-8)
    assert_allclose(theta[:, 1], c, rtol=1e-8, atol=1e-10)


def test_compressed_fit_keeps_fixed_parameters():
    counts = np.array([[5.0, 5.0, 5.0], [5.0, 5.0, 5.0]])
    means = np.array([[[-1.0], [0.0], [1.0]], [[-1.0], [0.0], [1.0]]])
    mass = np.array([[1.0, 2.5, 4.0], [1.0, 2.0, 4.0]])
    free = np.array([[True, False], [True, True]])
    theta = compressed_logistic(counts, means, mass, np.array([[0.0, 0.0], [0.0, 0.0]]), free)
    assert theta[0, 1] == 0.0  # the fixed intercept stays
    # symmetric data with the intercept at 0: the slope solves Σ w x σ(a x) = Σ T x
    a = theta[0, 0]
    assert 5 * (np.tanh(a / 2)) == pytest.approx(3.0, rel=1e-9)  # 5σ(a) - 5σ(-a) = 4 - 1
    # row 1, both free: the weighted score equations hold at the fit
    q = 1 / (1 + np.exp(-(theta[1, 0] * means[1, :, 0] + theta[1, 1])))
    assert (5 * q).sum() == pytest.approx(mass[1].sum(), rel=1e-9)
    assert (5 * q * means[1, :, 0]).sum() == pytest.approx(
        (mass[1] * means[1, :, 0]).sum(), abs=1e-9
    )


@pytest.mark.parametrize("parameters", ["abm", "am", "ab"])
def test_beta_binned_start_reaches_the_cold_optimum(monkeypatch, parameters):
    rng = np.random.default_rng(1)
    n = START_MIN_COLUMNS + 777
    s = rng.beta(0.7, 2.5, (4, n))
    t = rng.random(s.shape) < s**1.4
    warm, _ = fit_beta_rows(s, t, parameters=parameters)
    monkeypatch.setattr(beta, "START_MIN_COLUMNS", 10 * n)
    cold, _ = fit_beta_rows(s, t, parameters=parameters)
    for key in ("a", "b", "c"):
        assert_allclose(warm[key], cold[key], rtol=1e-8, atol=1e-10)
    assert warm["n_iter"].max() < cold["n_iter"].max()
