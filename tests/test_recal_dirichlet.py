"""Dirichlet calibration: optimality by hand, K = 2 versus beta, ODIR conventions, limits."""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose

from core.base.errors import ConfigError, FitError
from core.recalibration import Recalibrator, make_recalibrator
from core.recalibration.base import softmax
from core.recalibration.beta import EPS


def _features(p):
    return np.log(np.maximum(p, EPS))


def _dirichlet_data(w, b, n, seed, alpha=1.0):
    """Scores from a flat Dirichlet and labels drawn from softmax(W ln p + b)."""
    rng = np.random.default_rng(seed)
    k = len(b)
    p = rng.dirichlet(np.full(k, alpha), n)
    q = softmax(_features(p) @ np.asarray(w).T + b)
    y = (rng.random(n)[:, None] > np.cumsum(q, 1)).sum(1).clip(0, k - 1)
    return p, y


def _objective_grad(p, y, w, b, penalty, lam, mu):
    """Mean NLL + penalty and its gradient, written out from the formulas."""
    n, k = p.shape
    x = _features(p)
    q = softmax(x @ w.T + b)
    onehot = np.eye(k)[y]
    nll = -np.mean(np.log(q[np.arange(n), y]))
    gw = (q - onehot).T @ x / n
    gb = (q - onehot).mean(0)
    if penalty == "odir":
        off = w * (1 - np.eye(k))
        pen = lam / (k * (k - 1)) * np.sum(off**2) + mu / k * np.sum(b**2)
        gw = gw + 2 * lam / (k * (k - 1)) * off
        gb = gb + 2 * mu / k * b
    else:
        pen = lam / (k * (k + 1)) * (np.sum(w**2) + np.sum(b**2))
        gw = gw + 2 * lam / (k * (k + 1)) * w
        gb = gb + 2 * lam / (k * (k + 1)) * b
    return nll, pen, gw, gb


def _wb(r):
    return np.asarray(r.params_.values["weights"]), np.asarray(r.params_.values["bias"])


W3 = np.array([[1.4, 0.3, -0.2], [-0.1, 0.8, 0.4], [0.2, -0.3, 1.1]])
B3 = np.array([0.3, -0.2, 0.1])


# --------------------------------------------------------------------------- optimality


@pytest.mark.parametrize(
    ("penalty", "lam", "mu"),
    [("odir", 0.0, 0.0), ("odir", 0.5, 0.2), ("odir", 2.0, None), ("l2", 0.3, None)],
)
def test_fit_is_a_stationary_point_of_the_stated_objective(penalty, lam, mu):
    p, y = _dirichlet_data(W3, B3, 3000, seed=1)
    opts = {"penalty": penalty, "reg_lambda": lam}
    if mu is not None:
        opts["reg_mu"] = mu
    r = make_recalibrator("dirichlet", **opts).fit(p, y)
    w, b = _wb(r)
    nll, pen, gw, gb = _objective_grad(p, y, w, b, penalty, lam, lam if mu is None else mu)
    # the gradient written from the paper's formula (λ/(K(K−1)), μ/K) vanishes at the fit
    assert np.abs(gw).max() < 1e-6 and np.abs(gb).max() < 1e-6, (gw, gb)
    info = r.params_.info
    assert info["converged"]
    assert_allclose(info["nll_after"], nll, rtol=1e-10)
    assert_allclose(info["objective"], nll + pen, rtol=1e-10)
    assert info["nll_after"] < info["nll_before"]
    assert_allclose(r.predict_proba(p), softmax(_features(p) @ w.T + b), atol=1e-12)


def test_recovers_a_dirichlet_calibration_map():
    p, y = _dirichlet_data(W3, B3, 100_000, seed=2)
    r = make_recalibrator("dirichlet", reg_lambda=0.0).fit(p, y)
    w, b = _wb(r)
    # softmax ignores a vector added to every row of [W | b]: compare row-centred forms
    assert_allclose(w - w.mean(0), W3 - W3.mean(0), atol=0.05)
    assert_allclose(b - b.mean(), B3 - B3.mean(), atol=0.05)
    grid = softmax(np.random.default_rng(0).normal(0, 1.5, (500, 3)))
    truth = softmax(_features(grid) @ W3.T + B3)
    assert np.abs(r.predict_proba(grid) - truth).max() < 0.03


def test_calibrated_data_give_about_the_identity():
    p, y = _dirichlet_data(np.eye(4), np.zeros(4), 100_000, seed=3)
    r = make_recalibrator("dirichlet").fit(p, y)
    grid = softmax(np.random.default_rng(1).normal(0, 1.5, (500, 4)))
    assert np.abs(r.predict_proba(grid) - grid).max() < 0.03
    # a perfect identity fit would give W = I, b = 0 exactly: the start point is the identity
    w, b = _wb(r)
    assert np.abs(w - w.mean(0) - (np.eye(4) - 0.25)).max() < 0.05


# --------------------------------------------------------------------------- K = 2, limits


def test_two_classes_equal_beta_calibration_abm():
    # K = 2: q1 = σ((w11 − w01) ln p1 − (w00 − w10) ln(1 − p1) + b1 − b0), beta's "abm" map
    rng = np.random.default_rng(4)
    p1 = rng.beta(2, 3, 6000)
    q = 1 / (1 + np.exp(-(1.7 * np.log(p1) - 0.6 * np.log1p(-p1) + 0.3)))
    y = (rng.random(p1.size) < q).astype(int)
    d = make_recalibrator("dirichlet", reg_lambda=0.0).fit(p1, y)
    beta = make_recalibrator("beta", targets="hard").fit(p1, y)
    w, b = _wb(d)
    comp = beta.params_.values["components"][0]
    assert comp["a"] > 0 and comp["b"] > 0  # the sign rule is not involved
    assert_allclose(
        [w[1, 1] - w[0, 1], w[0, 0] - w[1, 0], b[1] - b[0]],
        [comp["a"], comp["b"], comp["c"]],
        rtol=1e-6,
    )
    assert_allclose(d.predict_proba(p1), beta.predict_proba(p1), atol=1e-7)


def test_huge_l2_penalty_gives_the_first_order_shrinkage_and_the_uniform_limit():
    # with L2 weight c = λ/(K(K+1)), the optimum is θ ≈ −∇NLL(0) / (2c) as λ → ∞
    p, y = _dirichlet_data(W3, B3, 2000, seed=5)
    k = 3
    lam = 1e6
    r = make_recalibrator("dirichlet", penalty="l2", reg_lambda=lam).fit(p, y)
    w, b = _wb(r)
    _, _, gw0, gb0 = _objective_grad(p, y, np.zeros((k, k)), np.zeros(k), "odir", 0.0, 0.0)
    coef = lam / (k * (k + 1))
    assert_allclose(w, -gw0 / (2 * coef), rtol=1e-3, atol=1e-12)
    assert_allclose(b, -gb0 / (2 * coef), rtol=1e-3, atol=1e-12)
    assert_allclose(r.predict_proba(p), 1 / k, atol=1e-4)


def test_huge_odir_penalty_leaves_the_diagonal_map_without_intercept():
    from scipy.optimize import minimize

    p, y = _dirichlet_data(W3, B3, 3000, seed=6)
    # the penalised entries shrink like 1/λ; λ = 1e5 is far enough into the limit
    r = make_recalibrator("dirichlet", reg_lambda=1e5, reg_mu=1e5).fit(p, y)
    w, b = _wb(r)
    off = w * (1 - np.eye(3))
    assert np.abs(off).max() < 1e-4 and np.abs(b).max() < 1e-4
    # the remaining free parameters: q_k ∝ p_k^{d_k}, fitted here independently
    x = _features(p)

    def nll(d):
        q = softmax(x * d)
        return -np.mean(np.log(q[np.arange(len(y)), y]))

    d = minimize(nll, np.ones(3), method="BFGS", options={"gtol": 1e-10}).x
    assert_allclose(np.diag(w), d, atol=1e-4)


# --------------------------------------------------------------------------- invariances


def test_relabelling_the_classes_permutes_the_fit():
    p, y = _dirichlet_data(W3, B3, 3000, seed=7)
    perm = np.array([2, 0, 1])
    inverse = np.argsort(perm)
    r = make_recalibrator("dirichlet", reg_lambda=0.1).fit(p, y)
    s = make_recalibrator("dirichlet", reg_lambda=0.1).fit(p[:, perm], inverse[y])
    w, b = _wb(r)
    w2, b2 = _wb(s)
    assert_allclose(w2, w[np.ix_(perm, perm)], atol=1e-6)
    assert_allclose(b2, b[perm], atol=1e-6)
    assert_allclose(s.predict_proba(p[:, perm]), r.predict_proba(p)[:, perm], atol=1e-7)


def test_logits_give_the_same_map_as_their_probabilities():
    rng = np.random.default_rng(8)
    z = rng.normal(0, 2, (3000, 3))
    y = rng.integers(0, 3, 3000)
    p = softmax(z)
    r = make_recalibrator("dirichlet").fit(p, y)
    # a per-row shift of the logits changes nothing: the features are log-probabilities
    s = make_recalibrator("dirichlet").fit(z + rng.normal(0, 5, (3000, 1)), y, logits=True)
    assert_allclose(_wb(s)[0], _wb(r)[0], atol=1e-6)
    assert_allclose(s.predict_proba(z, logits=True), r.predict_proba(p), atol=1e-7)


def test_the_features_are_not_row_centred():
    # matrix scaling centres each row of scores; Dirichlet uses ln p as it is, so the two
    # differ on the same data (unless W has equal row sums)
    p, y = _dirichlet_data(W3, B3, 3000, seed=9)
    r = make_recalibrator("dirichlet", reg_lambda=0.0).fit(p, y)
    w, b = _wb(r)
    x = _features(p)
    q_centred = softmax((x - x.mean(1, keepdims=True)) @ w.T + b)
    assert np.abs(r.predict_proba(p) - q_centred).max() > 1e-3


def test_exact_zeros_are_clipped_at_machine_epsilon():
    p = np.array([[0.0, 0.3, 0.7], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.6, 0.2, 0.2]] * 50)
    y = np.array([1, 0, 2, 0] * 50)
    r = make_recalibrator("dirichlet").fit(p, y)
    w, b = _wb(r)
    x = np.log(np.maximum(p, np.finfo(float).eps))
    assert_allclose(r.predict_proba(p), softmax(x @ w.T + b), atol=1e-12)


# --------------------------------------------------------------------------- parameters, errors


def test_rows_sum_to_one_json_round_trip_and_get_params():
    p, y = _dirichlet_data(W3, B3, 1500, seed=10)
    r = make_recalibrator("dirichlet", reg_lambda=0.01, reg_mu=0.02)
    assert r.get_params() == {
        "penalty": "odir",
        "reg_lambda": 0.01,
        "reg_mu": 0.02,
        "max_iter": None,
    }
    q = r.fit(p, y).predict_proba(p)
    assert_allclose(q.sum(1), 1.0, atol=1e-12)
    text = r.params_.to_json()
    json.loads(text)
    again = Recalibrator.from_params(text)
    assert_allclose(again.predict_proba(p), q, atol=1e-12)
    assert again.params_.values["weights"].shape == (3, 3)
    r.set_params(penalty="l2", reg_mu=None)
    assert r.penalty == "l2" and r.params_ is None


def test_many_classes_need_an_explicit_max_iter():
    rng = np.random.default_rng(11)
    k = 101
    p = softmax(rng.normal(0, 1, (300, k)))
    y = rng.integers(0, k, 300)
    with pytest.raises(FitError, match="max_iter"):
        make_recalibrator("dirichlet").fit(p, y)
    r = make_recalibrator("dirichlet", max_iter=2).fit(p, y)
    assert not r.params_.info["converged"]
    assert "L-BFGS stopped after" in r.params_.info["notes"][0]
    assert_allclose(r.predict_proba(p).sum(1), 1.0, atol=1e-12)


def test_errors():
    with pytest.raises(FitError, match="two classes"):
        make_recalibrator("dirichlet").fit(softmax(np.zeros((10, 3))), np.zeros(10, int))
    with pytest.raises(ConfigError, match="penalty"):
        make_recalibrator("dirichlet", penalty="l1")
    with pytest.raises(ConfigError, match="reg_lambda"):
        make_recalibrator("dirichlet", reg_lambda=-1.0)
    with pytest.raises(ConfigError, match="reg_mu"):
        make_recalibrator("dirichlet", reg_mu=float("nan"))
    with pytest.raises(ConfigError, match="penalty='odir'"):
        make_recalibrator("dirichlet", penalty="l2", reg_mu=0.1)
    for bad in (0, True, 2.5):
        with pytest.raises(ConfigError, match="max_iter"):
            make_recalibrator("dirichlet", max_iter=bad)
