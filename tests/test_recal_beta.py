"""Beta calibration: saturated closed forms, parameter recovery, symmetry, lenses, betacal."""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose

from core.base.errors import ConfigError, FitError
from core.recalibration import FittedParameters, Recalibrator, make_recalibrator
from core.recalibration.base import softmax
from core.recalibration.beta import EPS, fit_beta_rows


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _beta_map(p, a, b, c):
    p = np.clip(p, EPS, 1 - EPS)
    return _sigmoid(a * np.log(p) - b * np.log1p(-p) + c)


def _beta_data(a, b, c, n, seed, shape=(2.0, 3.0)):
    rng = np.random.default_rng(seed)
    p = rng.beta(*shape, n)
    y = (rng.random(n) < _beta_map(p, a, b, c)).astype(int)
    return p, y


def _standard_errors(p, a, b, c):
    """Standard errors of (a, b, c) from the expected Fisher information at the truth."""
    x = np.column_stack([np.log(p), -np.log1p(-p), np.ones_like(p)])
    q = _beta_map(p, a, b, c)
    info = (x * (q * (1 - q))[:, None]).T @ x
    return np.sqrt(np.diag(np.linalg.inv(info)))


def _params(r, j=0):
    c = r.params_.values["components"][j]
    return np.array([c["a"], c["b"], c["c"]])


def _log_loss(q, y):
    q = np.clip(q, 1e-300, 1)
    return -np.mean(np.where(y == 1, np.log(q), np.log1p(-q)))


# --------------------------------------------------------------------------- closed forms


def test_three_score_values_reproduce_the_group_rates_exactly():
    # three distinct scores and three parameters: the MLE is saturated, so the fitted map
    # passes through each group's positive rate, and (a, b, c) solve a 3×3 linear system
    values = np.array([0.2, 0.5, 0.8])
    counts = np.array([10, 8, 10])
    positives = np.array([1, 4, 8])
    p = np.repeat(values, counts)
    y = np.concatenate(
        [np.r_[np.ones(k), np.zeros(m - k)] for k, m in zip(positives, counts, strict=True)]
    )
    rates = positives / counts
    design = np.column_stack([np.log(values), -np.log1p(-values), np.ones(3)])
    expected = np.linalg.solve(design, np.log(rates / (1 - rates)))
    assert (expected[:2] > 0).all()  # inside the monotone family: no sign rule involved
    r = make_recalibrator("beta", targets="hard").fit(p, y.astype(int))
    assert_allclose(_params(r), expected, rtol=1e-8, atol=1e-9)
    assert_allclose(r.predict_proba(values)[:, 1], rates, atol=1e-10)
    assert r.params_.info["notes"] == ()


def test_am_is_logistic_regression_on_the_log_odds_two_groups():
    # 'am' has two parameters; two score values saturate it
    values = np.array([0.3, 0.9])
    p = np.repeat(values, [8, 6])
    y = np.r_[1, 1, np.zeros(6), np.ones(4), 0, 0].astype(int)
    r = make_recalibrator("beta", parameters="am", targets="hard").fit(p, y)
    assert_allclose(r.predict_proba(values)[:, 1], [0.25, 4 / 6], atol=1e-10)
    a, b, _ = _params(r)
    lo = np.log(values / (1 - values))
    slope = (np.log(2.0) - np.log(1 / 3)) / (lo[1] - lo[0])
    assert_allclose([a, b], [slope, slope], rtol=1e-9)
    comp = r.params_.values["components"][0]
    assert_allclose(comp["m"], 1 / (1 + np.exp(comp["c"] / comp["a"])), rtol=1e-9)


def test_ab_fixes_the_midpoint_at_one_half():
    p, y = _beta_data(1.5, 0.8, (1.5 - 0.8) * np.log(2), 20_000, seed=3)
    r = make_recalibrator("beta", parameters="ab").fit(p, y)
    a, b, c = _params(r)
    assert_allclose(c, (a - b) * np.log(2), rtol=1e-12)
    assert_allclose(r.params_.values["components"][0]["m"], 0.5, atol=1e-12)
    assert_allclose(r.predict_proba(np.array([0.5]))[:, 1], 0.5, atol=1e-12)


@pytest.mark.parametrize("truth", [(1.7, 0.6, 0.3), (0.5, 2.0, -0.4)])
def test_recovers_the_parameters_of_a_beta_calibration_model(truth):
    n = 200_000
    p, y = _beta_data(*truth, n, seed=11)
    r = make_recalibrator("beta", targets="hard").fit(p, y)
    se = _standard_errors(p, *truth)
    # the MLE is within a few standard errors of the truth (4.5 SE: a chance below 1e-5 each)
    assert (np.abs(_params(r) - np.array(truth)) < 4.5 * se).all(), (_params(r), se)


def test_calibrated_data_give_about_the_identity_map():
    rng = np.random.default_rng(5)
    p = rng.beta(1.5, 1.5, 200_000)
    y = (rng.random(p.size) < p).astype(int)
    r = make_recalibrator("beta", targets="hard").fit(p, y)
    se = _standard_errors(p, 1.0, 1.0, 0.0)
    assert (np.abs(_params(r) - [1.0, 1.0, 0.0]) < 4.5 * se).all()
    grid = np.linspace(0.05, 0.95, 19)
    assert np.abs(r.predict_proba(grid)[:, 1] - grid).max() < 0.01


def test_identity_parameters_give_the_identity_on_the_logit_scale():
    comps = [{"a": 1.0, "b": 1.0, "c": 0.0, "m": 0.5, "n_iter": 0}]
    params = FittedParameters(
        method="beta",
        n_classes=2,
        options={"lens": "binary", "parameters": "abm", "targets": "hard"},
        values={"lens": "binary", "components": comps},
    )
    r = Recalibrator.from_params(params)
    p = np.array([1e-9, 0.01, 0.3, 0.5, 0.77, 1 - 1e-9])
    assert_allclose(r.predict_proba(p)[:, 1], p, rtol=1e-9)


# --------------------------------------------------------------------------- sign rule, symmetry


def test_negative_coefficient_is_refitted_without_its_feature_and_the_map_is_monotone():
    # truth decreases near 0 (a < 0): the full fit has a < 0, the refit drops ln p
    p, y = _beta_data(-0.6, 1.5, 0.5, 20_000, seed=2, shape=(1.0, 1.0))
    r = make_recalibrator("beta", targets="hard").fit(p, y)
    a, b, c = _params(r)
    assert a == 0.0 and b > 0
    notes = r.params_.info["notes"]
    assert len(notes) == 1 and "a < 0" in notes[0]
    # the refit is the one-feature logistic MLE: its gradient vanishes
    x = -np.log1p(-np.clip(p, EPS, 1 - EPS))
    q = _sigmoid(b * x + c)
    assert_allclose([np.mean((q - y) * x), np.mean(q - y)], [0, 0], atol=1e-9)
    grid = np.linspace(0, 1, 1001)
    assert (np.diff(r.predict_proba(grid)[:, 1]) >= 0).all()


def test_decreasing_scores_give_a_constant_map():
    rng = np.random.default_rng(1)
    p = rng.random(5000)
    y = (rng.random(p.size) < 1 - p).astype(int)  # the outcome falls with the score
    for parameters in ("abm", "am"):
        r = make_recalibrator("beta", parameters=parameters, targets="hard").fit(p, y)
        a, b, c = _params(r)
        assert a == 0 and b == 0
        assert_allclose(r.predict_proba(np.array([0.1, 0.9]))[:, 1], y.mean(), rtol=1e-12)
        assert np.isnan(r.params_.values["components"][0]["m"])
        assert any("constant" in m for m in r.params_.info["notes"])


@pytest.mark.parametrize("parameters", ["abm", "am", "ab"])
@pytest.mark.parametrize("targets", ["hard", "platt"])
def test_label_swap_symmetry(parameters, targets):
    # swapping the classes maps p to 1 - p: (a, b, c) becomes (b, a, -c)
    p, y = _beta_data(1.4, 0.7, 0.2, 5000, seed=8)
    p2 = np.column_stack([1 - p, p])
    r = make_recalibrator("beta", parameters=parameters, targets=targets).fit(p2, y)
    s = make_recalibrator("beta", parameters=parameters, targets=targets).fit(p2[:, ::-1], 1 - y)
    a, b, c = _params(r)
    assert_allclose(_params(s), [b, a, -c], rtol=1e-7, atol=1e-9)
    assert_allclose(s.predict_proba(p2[:, ::-1]), r.predict_proba(p2)[:, ::-1], atol=1e-9)


def test_am_with_smoothed_targets_is_platt_scaling_on_the_log_odds():
    p, y = _beta_data(1.3, 1.3, -0.4, 5000, seed=6)
    r = make_recalibrator("beta", parameters="am").fit(p, y)
    platt = make_recalibrator("platt").fit(p, y)
    comp = platt.params_.values["components"][0]
    assert_allclose(_params(r), [comp["a"], comp["a"], comp["c"]], rtol=1e-8)
    assert_allclose(r.predict_proba(p), platt.predict_proba(p), atol=1e-10)


def test_logits_and_probabilities_give_the_same_fit():
    p, y = _beta_data(1.2, 0.9, 0.1, 4000, seed=4)
    z = np.log(p / (1 - p))
    r = make_recalibrator("beta").fit(p, y)
    s = make_recalibrator("beta").fit(z, y, logits=True)
    assert_allclose(_params(s), _params(r), rtol=1e-8, atol=1e-10)
    assert_allclose(s.predict_proba(z, logits=True), r.predict_proba(p), atol=1e-10)


# --------------------------------------------------------------------------- batching, lenses


def test_batched_rows_equal_one_at_a_time():
    truths = [(1.7, 0.6, 0.3), (-0.5, 1.2, 0.0), (0.8, 0.8, -0.2), (2.5, 0.1, 1.0)]
    rows = [_beta_data(*truth, 3000, seed=i) for i, truth in enumerate(truths)]
    s = np.array([p for p, _ in rows])
    t = np.array([y for _, y in rows]).astype(bool)
    for parameters in ("abm", "am", "ab"):
        together, notes = fit_beta_rows(s, t, parameters=parameters)
        for j in range(len(rows)):
            alone, notes_j = fit_beta_rows(s[j : j + 1], t[j : j + 1], parameters=parameters)
            for key in ("a", "b", "c"):
                assert_allclose(together[key][j], alone[key][0], rtol=1e-9, atol=1e-11)
            assert notes[j] == notes_j[0]


def test_classwise_is_the_renormalised_one_vs_rest_binary_fits():
    rng = np.random.default_rng(0)
    z = rng.normal(0, 2, (4000, 3))
    p = softmax(z)
    y = (rng.random(4000)[:, None] > np.cumsum(softmax(z / 1.7), 1)).sum(1).clip(0, 2)
    r = make_recalibrator("beta", lens="classwise").fit(p, y)
    q = r.predict_proba(p)
    assert_allclose(q.sum(1), 1.0, atol=1e-12)
    cols = []
    for k in range(3):
        one = make_recalibrator("beta").fit(p[:, k], (y == k).astype(int))
        assert_allclose(_params(r, k), _params(one), rtol=1e-9, atol=1e-11)
        cols.append(one.predict_proba(p[:, k])[:, 1])
    cols = np.column_stack(cols)
    assert_allclose(q, cols / cols.sum(1, keepdims=True), atol=1e-12)


def test_top_label_recalibrates_the_confidence():
    rng = np.random.default_rng(1)
    z = rng.normal(0, 2, (5000, 4))
    p = softmax(z)
    y = (rng.random(5000)[:, None] > np.cumsum(softmax(z / 2), 1)).sum(1).clip(0, 3)
    r = make_recalibrator("beta", lens="top-label").fit(p, y)
    q = r.predict_proba(p)
    conf, pred = p.max(1), p.argmax(1)
    one = make_recalibrator("beta").fit(conf, (y == pred).astype(int))
    assert_allclose(_params(r), _params(one), rtol=1e-9, atol=1e-11)
    assert_allclose(q[np.arange(5000), pred], one.predict_proba(conf)[:, 1], atol=1e-12)
    assert_allclose(q.sum(1), 1.0, atol=1e-12)
    assert (q.argmax(1) == pred).mean() > 0.99


# --------------------------------------------------------------------------- parameters, errors


def test_json_round_trip_get_params_and_set_params():
    rng = np.random.default_rng(2)
    p = softmax(rng.normal(0, 2, (2000, 3)))
    y = rng.integers(0, 3, 2000)
    r = make_recalibrator("beta", lens="classwise", parameters="am", targets="platt")
    assert r.get_params() == {"lens": "classwise", "parameters": "am", "targets": "platt"}
    r.fit(p, y)
    text = r.params_.to_json()
    json.loads(text)
    again = Recalibrator.from_params(text)
    assert_allclose(again.predict_proba(p), r.predict_proba(p), atol=1e-12)
    assert again.get_params() == r.get_params()
    r.set_params(parameters="ab")
    assert r.parameters == "ab" and r.params_ is None


def test_separable_scores_need_smoothed_targets():
    p = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.9])
    y = np.array([0, 0, 0, 1, 1, 1])
    with pytest.raises(FitError, match="targets='platt'"):
        make_recalibrator("beta", targets="hard").fit(p, y)
    r = make_recalibrator("beta").fit(p, y)  # Platt's smoothed targets by default
    q = r.predict_proba(p)[:, 1]
    assert (np.diff(q) >= 0).all() and q[0] < 0.5 < q[-1]


def test_errors():
    with pytest.raises(FitError, match="two classes"):
        make_recalibrator("beta").fit(np.full(20, 0.4), np.ones(20, int))
    with pytest.raises(ConfigError, match="parameters"):
        make_recalibrator("beta", parameters="a")
    with pytest.raises(ConfigError, match="targets"):
        make_recalibrator("beta", targets="soft")
    with pytest.raises(ConfigError, match="lens"):
        make_recalibrator("beta", lens="canonical")
    with pytest.raises(ConfigError, match="binary lens"):
        make_recalibrator("beta", lens="binary").fit(softmax(np.eye(3)), [0, 1, 2])
    with pytest.raises(FitError, match="not fitted"):
        make_recalibrator("beta").predict_proba(np.array([0.5]))


# --------------------------------------------------------------------------- betacal


@pytest.mark.parametrize(
    ("parameters", "truth"),
    [
        ("abm", (1.7, 0.6, 0.3)),
        ("am", (1.3, 1.3, -0.4)),
        ("ab", (1.5, 0.8, 0.7 * np.log(2))),
        ("abm", (-0.6, 1.5, 0.5)),
    ],
)
def test_agrees_with_betacal(parameters, truth):
    betacal = pytest.importorskip("betacal")
    from sklearn.linear_model import LogisticRegression

    p, y = _beta_data(*truth, 5000, seed=21, shape=(1.0, 1.0))
    ref = betacal.BetaCalibration(parameters=parameters).fit(p, y)
    r = make_recalibrator("beta", parameters=parameters, targets="hard").fit(p, y)
    ours = r.predict_proba(p)[:, 1]
    theirs = ref.predict(p)
    a_ref, b_ref, m_ref = ref.calibrator_.map_
    comp = r.params_.values["components"][0]
    # betacal's logistic regression stops at scikit-learn's lbfgs tolerance (1e-4 on the
    # gradient), so its coefficients are a few 1e-4 off the exact maximum found here
    assert_allclose([comp["a"], comp["b"], comp["m"]], [a_ref, b_ref, m_ref], atol=3e-3)
    assert np.abs(ours - theirs).max() < 2e-3
    assert _log_loss(ours, y) <= _log_loss(theirs, y) + 1e-12
    # the same logistic regression solved to a tight tolerance agrees to 1e-6
    x = np.log(np.column_stack([np.clip(p, EPS, 1 - EPS), 1 - np.clip(p, EPS, 1 - EPS)]))
    if parameters == "abm":
        x[:, 1] *= -1
        keep = [i for i, v in enumerate((comp["a"], comp["b"])) if v != 0]
        x, fit_intercept = x[:, keep], True
    elif parameters == "am":
        x, fit_intercept = (x[:, :1] - x[:, 1:]), True
    else:
        x, fit_intercept = x + np.log(2), False
    tight = LogisticRegression(C=1e12, tol=1e-12, max_iter=10_000, fit_intercept=fit_intercept)
    tight.fit(x, y)
    assert_allclose(ours, tight.predict_proba(x)[:, 1], atol=1e-6)
