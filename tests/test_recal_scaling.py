"""Platt, temperature, vector and matrix scaling: hand cases, scikit-learn, invariances."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from core.base.errors import ConfigError, FitError
from core.recalibration import RECALIBRATORS, FittedParameters, Recalibrator, make_recalibrator
from core.recalibration.base import logit, softmax


def _binary_data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, n)
    true = 1 / (1 + np.exp(-(1.7 * logit(p) - 0.4)))
    y = (rng.random(n) < true).astype(int)
    return p, y


def _multiclass(n=6000, k=5, temp=2.0, seed=0):
    rng = np.random.default_rng(seed)
    z_true = rng.normal(0, 3, (n, k))
    y = (rng.random(n)[:, None] > np.cumsum(softmax(z_true), 1)).sum(1)
    return temp * z_true, np.minimum(y, k - 1)


# --------------------------------------------------------------------------- Platt


def test_platt_two_groups_hard_targets_closed_form():
    # two score values: the MLE reproduces each group's positive rate exactly
    p = np.array([0.2] * 4 + [0.7] * 5)
    y = np.array([0, 0, 0, 1] + [1, 1, 1, 0, 0])
    r = make_recalibrator("platt", targets="hard").fit(p, y)
    q = r.predict_proba(np.array([0.2, 0.7]))[:, 1]
    assert_allclose(q, [0.25, 0.6], atol=1e-9)
    c = r.params_.values["components"][0]
    slope = (logit(np.array(0.6)) - logit(np.array(0.25))) / (
        logit(np.array(0.7)) - logit(np.array(0.2))
    )
    assert_allclose(c["a"], slope, rtol=1e-8)


def test_platt_matches_sklearn_sigmoid_calibration():
    from sklearn.calibration import _sigmoid_calibration

    p, y = _binary_data()
    r = make_recalibrator("platt").fit(p, y)
    a_sk, b_sk = _sigmoid_calibration(logit(p), y)
    c = r.params_.values["components"][0]
    # scikit-learn parameterises P(y=1) = 1 / (1 + exp(A f + B))
    assert_allclose([c["a"], c["c"]], [-a_sk, -b_sk], rtol=2e-5, atol=2e-6)
    q_sk = 1 / (1 + np.exp(a_sk * logit(p) + b_sk))
    assert_allclose(r.predict_proba(p)[:, 1], q_sk, atol=1e-6)


def test_platt_hard_targets_match_unpenalised_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    p, y = _binary_data(seed=3)
    x = logit(p)
    lr = LogisticRegression(C=np.inf, tol=1e-12, max_iter=1000).fit(x[:, None], y)
    r = make_recalibrator("platt", targets="hard").fit(p, y)
    c = r.params_.values["components"][0]
    assert_allclose([c["a"], c["c"]], [lr.coef_[0, 0], lr.intercept_[0]], rtol=1e-5, atol=1e-6)


def test_platt_on_probability_input_matches_sklearn():
    from sklearn.calibration import _sigmoid_calibration

    p, y = _binary_data(seed=5)
    r = make_recalibrator("platt", input="probability").fit(p, y)
    a_sk, b_sk = _sigmoid_calibration(p, y)
    assert_allclose(r.predict_proba(p)[:, 1], 1 / (1 + np.exp(a_sk * p + b_sk)), atol=1e-6)


def test_platt_label_swap_gives_one_minus_p():
    p, y = _binary_data(seed=1)
    q = make_recalibrator("platt").fit(p, y).predict_proba(p)[:, 1]
    q_swap = make_recalibrator("platt").fit(1 - p, 1 - y).predict_proba(1 - p)[:, 1]
    assert_allclose(q_swap, 1 - q, atol=1e-9)


def test_platt_keeps_ranking_when_slope_positive():
    p, y = _binary_data(seed=2)
    q = make_recalibrator("platt").fit(p, y).predict_proba(p)[:, 1]
    o = np.argsort(p, kind="stable")
    assert (np.diff(q[o]) >= 0).all()


def test_platt_separable_data():
    p = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    y = np.array([0, 0, 0, 1, 1, 1])
    with pytest.raises(FitError, match="separate"):
        make_recalibrator("platt", targets="hard").fit(p, y)
    from sklearn.calibration import _sigmoid_calibration

    q = make_recalibrator("platt").fit(p, y).predict_proba(p)[:, 1]
    assert np.isfinite(q).all() and 0 < q.min() and q.max() < 1
    # smoothed targets 1/(3+2) and 4/5 keep the optimum finite; same fit as scikit-learn
    a_sk, b_sk = _sigmoid_calibration(logit(p), y)
    assert_allclose(q, 1 / (1 + np.exp(a_sk * logit(p) + b_sk)), atol=1e-6)


def test_platt_saturated_scores_and_logits():
    rng = np.random.default_rng(4)
    z = rng.normal(0, 40, 2000)  # many probabilities round to exactly 0 or 1
    y = (rng.random(2000) < 1 / (1 + np.exp(-z / 20))).astype(int)
    p = np.where(z > 0, 1 / (1 + np.exp(-z)), 1 - 1 / (1 + np.exp(z)))
    assert (p == 1.0).any() and (p == 0.0).any()
    q = make_recalibrator("platt").fit(p, y).predict_proba(p)
    assert np.isfinite(q).all()
    # on logits, the log-odds are used directly and recover the slope 1/20
    r = make_recalibrator("platt", targets="hard").fit(z, y, logits=True)
    assert_allclose(r.params_.values["components"][0]["a"], 1 / 20, rtol=0.2)


def test_platt_top_label_and_classwise_rows_sum_to_one():
    z, y = _multiclass(n=3000, k=4)
    p = softmax(z)
    for lens in ("top-label", "classwise"):
        q = make_recalibrator("platt", lens=lens).fit(p, y).predict_proba(p)
        assert_allclose(q.sum(1), 1.0, atol=1e-12)
        assert (q >= 0).all()
    r = make_recalibrator("platt", lens="top-label").fit(p, y)
    q = r.predict_proba(p)
    rows = np.arange(len(p))
    pred = p.argmax(1)
    c = r.params_.values["components"][0]
    c_new = 1 / (1 + np.exp(-(c["a"] * logit(p[rows, pred]) + c["c"])))
    # the predicted class keeps its place and gets exactly the recalibrated confidence
    assert_allclose(q[rows, pred], c_new, atol=1e-12)
    assert (q.argmax(1) == pred)[c_new > 1 / 3].all()
    assert_allclose(q.max(1)[c_new > 1 / 3], c_new[c_new > 1 / 3], atol=1e-12)
    # where no mixing is needed, the other entries keep their proportions
    other = np.ones_like(p, dtype=bool)
    other[rows, pred] = False
    scaled = p[other].reshape(len(p), -1) * ((1 - c_new) / (1 - p[rows, pred]))[:, None]
    plain = scaled.max(1) <= c_new
    assert plain.mean() > 0.5
    assert_allclose(q[other].reshape(len(p), -1)[plain], scaled[plain], atol=1e-12)


def test_binary_lens_needs_two_classes():
    z, y = _multiclass(n=500, k=3)
    with pytest.raises(ConfigError, match="two classes"):
        make_recalibrator("platt", lens="binary").fit(softmax(z), y)


# --------------------------------------------------------------------------- temperature


def test_temperature_closed_form_binary():
    # every row has logits (0, 2) and 3 of 4 labels are 1: sigmoid(2/T) = 3/4
    z = np.tile([0.0, 2.0], (4, 1))
    y = np.array([1, 1, 1, 0])
    r = make_recalibrator("temperature").fit(z, y, logits=True)
    assert_allclose(r.params_.values["temperature"], 2 / np.log(3), rtol=1e-9)


def test_temperature_recovers_true_temperature_and_keeps_accuracy():
    z, y = _multiclass(n=20000, k=5, temp=2.0)
    r = make_recalibrator("temperature").fit(z, y, logits=True)
    assert abs(r.params_.values["temperature"] - 2.0) < 0.08
    q = r.predict_proba(z, logits=True)
    assert (q.argmax(1) == z.argmax(1)).all()
    assert r.params_.info["nll_after"] <= r.params_.info["nll_before"]


def test_temperature_same_from_logits_and_probabilities():
    z, y = _multiclass(n=2000, k=3, seed=2)
    t1 = make_recalibrator("temperature").fit(z, y, logits=True).params_.values["temperature"]
    t2 = make_recalibrator("temperature").fit(softmax(z), y).params_.values["temperature"]
    assert_allclose(t1, t2, rtol=1e-6)


def test_temperature_matches_sklearn_when_available():
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, 3))
    y = (x @ [2.0, -1.0, 0.5] + rng.logistic(size=4000) > 0).astype(int)
    clf = LogisticRegression().fit(x[:2000], y[:2000])
    cal = CalibratedClassifierCV(FrozenEstimator(clf), method="temperature").fit(x[2000:], y[2000:])
    dec = clf.decision_function(x[2000:])
    mine = make_recalibrator("temperature").fit(dec, y[2000:], logits=True)
    assert_allclose(mine.predict_proba(dec, logits=True), cal.predict_proba(x[2000:]), atol=2e-4)


def test_temperature_separable_reports_bound():
    z = np.array([[0.0, 5.0], [0.0, -5.0], [0.0, 3.0], [0.0, -4.0]])
    y = np.array([1, 0, 1, 0])
    r = make_recalibrator("temperature").fit(z, y, logits=True)
    assert r.params_.info["at_bound"] == "lower"
    assert_allclose(r.params_.values["temperature"], 0.01)
    assert r.params_.info["notes"]


# --------------------------------------------------------------------------- vector / matrix


def test_vector_and_matrix_nest_temperature():
    z, y = _multiclass(n=4000, k=4, seed=7)
    t = make_recalibrator("temperature").fit(z, y, logits=True)
    nll_t = t.params_.info["nll_after"]
    v = make_recalibrator("vector").fit(z, y, logits=True)
    m = make_recalibrator("matrix", reg=0.0).fit(z, y, logits=True)
    assert v.params_.info["nll_after"] <= nll_t + 1e-7
    assert m.params_.info["nll_after"] <= nll_t + 1e-7
    for r in (v, m):
        q = r.predict_proba(z, logits=True)
        assert_allclose(q.sum(1), 1.0, atol=1e-12)
        ok = softmax(z).min(1) > 1e-10  # log-probabilities are clipped at 1e-12
        assert_allclose(r.predict_proba(softmax(z))[ok], q[ok], atol=1e-10)


def test_matrix_scaling_on_two_classes_is_platt_on_the_log_odds():
    # with K = 2 and centred scores (−d/2, d/2), softmax(W z + b) is σ(a d + c): hard-target Platt
    rng = np.random.default_rng(12)
    d = rng.normal(0, 2, 4000)
    y = (rng.random(4000) < 1 / (1 + np.exp(-(0.7 * d + 0.3)))).astype(int)
    m = make_recalibrator("matrix", reg=0.0).fit(d, y, logits=True)
    platt = make_recalibrator("platt", targets="hard").fit(d, y, logits=True)
    assert_allclose(m.predict_proba(d, logits=True), platt.predict_proba(d, logits=True), atol=1e-6)


def test_vector_scaling_recovers_per_class_scale():
    rng = np.random.default_rng(11)
    n, k = 30000, 3
    z = rng.normal(0, 2, (n, k))
    w_true, b_true = np.array([0.5, 1.0, 2.0]), np.array([0.3, 0.0, -0.3])
    zc = z - z.max(1, keepdims=True)
    probs = softmax(zc * w_true + b_true)
    y = (rng.random(n)[:, None] > np.cumsum(probs, 1)).sum(1).clip(0, k - 1)
    v = make_recalibrator("vector").fit(z, y, logits=True)
    w = v.params_.values["weights"]
    b = v.params_.values["bias"]
    assert_allclose(w, w_true, atol=0.1)
    assert_allclose(b - b.mean(), b_true - b_true.mean(), atol=0.1)


# --------------------------------------------------------------------------- shared machinery


def test_registry_names_and_unknown_options():
    expected = {
        "platt", "temperature", "vector", "matrix", "isotonic", "histogram-umd", "histogram-ums",
        "histogram-ze", "histogram-fixed-width", "scaling-binning", "meta-cal",
    }  # fmt: skip
    assert expected <= set(RECALIBRATORS.names())
    with pytest.raises(ConfigError, match="Unknown recalibrator"):
        make_recalibrator("nope")
    with pytest.raises(ConfigError, match="n_bin"):
        make_recalibrator("platt", n_bin=3)


def test_get_params_set_params_and_json_round_trip_for_every_recalibrator():
    z, y = _multiclass(n=3000, k=3, seed=9)
    p = softmax(z)
    for name in RECALIBRATORS.names():
        opts = {"mode": "coverage-accuracy", "beta": 0.8} if name == "meta-cal" else {}
        r = make_recalibrator(name, **opts)
        params = r.get_params()
        assert type(r)(**params).get_params() == params
        r.fit(p, y)
        q = r.predict_proba(p)
        assert_allclose(q.sum(1), 1.0, atol=1e-12), name
        text = r.params_.to_json()
        json.loads(text)  # strict JSON (no NaN / Infinity literals)
        again = Recalibrator.from_params(text)
        assert_allclose(again.predict_proba(p), q, atol=1e-12, err_msg=name)
        assert FittedParameters.from_json(text).method == name
    r = make_recalibrator("histogram-umd", n_bins=5)
    r.set_params(n_bins=7)
    assert r.get_params()["n_bins"] == 7


def test_fitted_parameters_are_frozen():
    p, y = _binary_data(n=200)
    r = make_recalibrator("histogram-umd", n_bins=4).fit(p, y)
    vals = r.params_.values["components"][0]["values"]
    with pytest.raises(ValueError):
        vals[0] = 1.0
    with pytest.raises(TypeError):
        r.params_.values["lens"] = "x"


def test_single_class_and_unfitted_errors():
    for name in RECALIBRATORS.names():
        with pytest.raises(FitError, match="two classes"):
            make_recalibrator(name).fit(np.full(50, 0.3), np.zeros(50, int))
    with pytest.raises(FitError, match="not fitted"):
        make_recalibrator("platt").predict_proba(np.array([0.5]))


# ----------------------------------------------------------------- exact log-probabilities


def test_temperature_from_probabilities_with_exact_zeros_equals_the_fit_from_logits():
    from core.recalibration import make_recalibrator

    rng = np.random.default_rng(3)
    n, k = 2000, 5
    z = rng.normal(0.0, 3.0, (n, k))
    z[rng.random((n, k)) < 0.2] -= 900.0  # softmax underflows to exact zeros there
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = np.array([rng.choice(k, p=row) for row in p])
    assert (p == 0).sum() > 100 and np.all(p[np.arange(n), y] > 0)
    from_probs = make_recalibrator("temperature").fit(p, y)
    from_logits = make_recalibrator("temperature").fit(z, y, logits=True)
    t_p = from_probs.params_.values["temperature"]
    t_z = from_logits.params_.values["temperature"]
    assert t_p == pytest.approx(t_z, rel=1e-9)
    # a class with p = 0 stays at 0 after scaling
    q = from_probs.predict_proba(p)
    assert np.all(q[p == 0] == 0) and np.allclose(q.sum(1), 1)


def test_rows_whose_label_has_probability_zero_do_not_inform_the_temperature():
    from core.recalibration import make_recalibrator

    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(3), 500)
    y = rng.integers(0, 3, 500)
    bad = np.array([[0.0, 0.5, 0.5]] * 5)
    both = make_recalibrator("temperature").fit(np.vstack([p, bad]), np.r_[y, [0] * 5])
    alone = make_recalibrator("temperature").fit(p, y)
    t = both.params_.values["temperature"]
    assert t == pytest.approx(alone.params_.values["temperature"], rel=1e-12)


CIFAR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cifar10-14-networks"


@pytest.mark.skipif(not (CIFAR / "resnet_orig.csv").exists(), reason="CIFAR-10 data not present")
def test_cifar10_resnet_orig_temperature_from_probabilities_equals_log_p_as_logits():
    from core.recalibration import make_recalibrator

    p = np.loadtxt(CIFAR / "resnet_orig.csv", delimiter=",")
    y = np.loadtxt(CIFAR / "labels.csv", dtype=np.int64) - 1  # 1-indexed in the file
    p /= p.sum(1, keepdims=True)
    assert (p < 1e-12).sum() > 1000  # the rows the old floor moved
    t_p = make_recalibrator("temperature").fit(p, y).params_.values["temperature"]
    z = np.log(p)
    t_z = make_recalibrator("temperature").fit(z, y, logits=True).params_.values["temperature"]
    assert t_p == pytest.approx(t_z, rel=1e-10)
    # the floor log max(p, 1e-12) the fit used before moved it by about 3e-5
    floored = np.log(np.maximum(p, 1e-12))
    t_f = (
        make_recalibrator("temperature").fit(floored, y, logits=True).params_.values["temperature"]
    )
    assert abs(t_f - t_p) > 1e-5
