"""Isotonic regression recalibrator: PAV hand cases, step function, scikit-learn agreement."""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_allclose

from core.recalibration import make_recalibrator
from core.recalibration.isotonic import pav_fit


def test_pav_hand_case():
    x, fitted = pav_fit(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.0, 1.0, 0.0, 1.0]))
    assert_allclose(fitted, [0.0, 0.5, 0.5, 1.0])
    # tied scores are pooled before PAV
    x, fitted = pav_fit(np.array([0.2, 0.2, 0.5]), np.array([0.0, 1.0, 1.0]))
    assert_allclose(x, [0.2, 0.5])
    assert_allclose(fitted, [0.5, 1.0])


def test_step_prediction_hand_case():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    y = np.array([0, 1, 0, 1])
    r = make_recalibrator("isotonic").fit(p, y)
    q = r.predict_proba(np.array([0.05, 0.1, 0.15, 0.2, 0.25, 0.35, 0.4, 0.95]))[:, 1]
    assert_allclose(q, [0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 1.0, 1.0])
    lin = make_recalibrator("isotonic", interpolation="linear").fit(p, y)
    assert_allclose(lin.predict_proba(np.array([0.15, 0.35]))[:, 1], [0.25, 0.75])


def test_agrees_with_sklearn_isotonic_regression():
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(0)
    p = np.round(rng.beta(2, 3, 3000), 3)  # rounded: many ties
    y = (rng.random(3000) < p**1.5).astype(int)
    sk = IsotonicRegression(out_of_bounds="clip").fit(p, y)
    new = np.concatenate([rng.random(500), [0.0, 1.0]])
    lin = make_recalibrator("isotonic", interpolation="linear").fit(p, y)
    assert_allclose(lin.predict_proba(new)[:, 1], sk.predict(new), atol=1e-12)
    step = make_recalibrator("isotonic").fit(p, y)
    assert_allclose(step.predict_proba(p)[:, 1], sk.predict(p), atol=1e-12)


def test_monotone_and_few_distinct_values():
    rng = np.random.default_rng(1)
    p = rng.random(5000)
    y = (rng.random(5000) < p).astype(int)
    r = make_recalibrator("isotonic").fit(p, y)
    grid = np.linspace(0, 1, 1001)
    q = r.predict_proba(grid)[:, 1]
    assert (np.diff(q) >= 0).all()
    blocks = r.params_.values["components"][0]["block_value"]
    assert np.unique(q).size <= len(blocks) < 200
    assert r.discrete_output


def test_classwise_rows_sum_to_one():
    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.ones(3), 2000)
    y = (rng.random(2000)[:, None] > np.cumsum(p, 1)).sum(1).clip(0, 2)
    q = make_recalibrator("isotonic", lens="classwise").fit(p, y).predict_proba(p)
    assert_allclose(q.sum(1), 1.0, atol=1e-12)
