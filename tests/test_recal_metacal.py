"""Meta-Cal: order statistics, Eq. 5, output rules, identities, and its statistical guarantees."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from core.base.errors import ConfigError, FitError
from core.recalibration import MetaCal, make_recalibrator, selective_curves, selective_metrics
from core.recalibration.base import softmax
from core.recalibration.metacal import (
    expected_miscoverage,
    paper_order_statistic,
    ranking_score,
    reference_order_statistic,
    umbrella_order_statistic,
    violation_probability,
)


def _g2(n, rng, k=10):
    """Reference generator G2: y uniform, μ ~ U(0, 5), z = (N(0, I) + μ e_y) / 0.5."""
    y = rng.integers(0, k, n)
    mu = rng.uniform(0, 5, n)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += mu
    return z / 0.5, y


def test_order_statistic_spot_values():
    paper = {19: 19, 20: 20, 21: 21, 50: 49, 100: 96, 462: 440, 500: 476}
    for n1, v in paper.items():
        assert paper_order_statistic(n1, 0.05) == v
    assert all(paper_order_statistic(n1, 0.05) is None for n1 in range(1, 19))
    assert [reference_order_statistic(n, 0.05) for n in (21, 50, 462)] == [20, 48, 439]
    umbrella = {59: 59, 100: 99, 200: 196, 350: 340, 462: 447, 500: 484, 1000: 962}
    for n1, k in umbrella.items():
        assert umbrella_order_statistic(n1, 0.05, 0.05) == k
    assert umbrella_order_statistic(58, 0.05, 0.05) is None


def test_eq5_and_expected_miscoverage():
    assert_allclose(violation_probability(500, 451, 0.10), 0.4782, atol=5e-5)
    assert_allclose(violation_probability(100, 96, 0.05), 0.4360, atol=5e-5)
    assert_allclose(expected_miscoverage(500, 451), 0.09980, atol=5e-6)
    assert_allclose(expected_miscoverage(462, 440), 0.04968, atol=5e-6)
    for n1 in (19, 100, 346, 500):
        v = paper_order_statistic(n1, 0.05)
        assert_allclose(expected_miscoverage(n1, v), np.floor((n1 + 1) * 0.05) / (n1 + 1))


def test_output_rules_and_identities():
    rng = np.random.default_rng(0)
    z, y = _g2(6000, rng)
    p = softmax(z)
    mc = make_recalibrator("meta-cal", alpha=0.05).fit(z, y, logits=True)
    q = mc.predict_proba(z, logits=True)
    acc = mc.accepted(z, logits=True)
    assert_allclose(q.sum(1), 1.0, atol=1e-12)
    assert_allclose(q[~acc], 0.1)  # rejected rows are uniform
    assert (q[acc].argmax(1) == p[acc].argmax(1)).all()  # temperature keeps the class
    assert_allclose(acc, ranking_score(p) <= mc.params_.values["threshold"])
    # the accept mask does not depend on the base calibrator
    none = make_recalibrator("meta-cal", alpha=0.05, base="none").fit(z, y, logits=True)
    assert (none.accepted(z, logits=True) == acc).all()
    assert_allclose(none.predict_proba(z, logits=True)[acc], p[acc])
    # coverage = (1 − R0) π0 + R1 (1 − π0)
    m = selective_metrics(p, y, acc)
    correct = p.argmax(1) == y
    pi0 = correct.mean()
    r1 = (acc & ~correct).sum() / (~correct).sum()
    assert_allclose(m.coverage, (1 - m.miscoverage) * pi0 + r1 * (1 - pi0), atol=1e-12)
    info = mc.params_.info
    assert "NOT controlled with high probability" in info["guarantee"]
    assert info["order_statistic"] == paper_order_statistic(info["n1"], 0.05)


def test_logits_and_probabilities_give_the_same_fit():
    rng = np.random.default_rng(1)
    z, y = _g2(3000, rng)
    a = make_recalibrator("meta-cal").fit(z, y, logits=True)
    b = make_recalibrator("meta-cal").fit(softmax(z), y)
    assert_allclose(a.params_.values["threshold"], b.params_.values["threshold"], rtol=1e-9)


def test_selective_curves_hand_case():
    c = selective_curves([0.1, 0.2, 0.2, 0.5], [1, 0, 1, 1])
    assert_allclose(c.thresholds, [0.1, 0.2, 0.5])
    assert_allclose(c.coverage, [0.25, 0.75, 1.0])
    assert_allclose(c.miscoverage, [2 / 3, 1 / 3, 0.0])
    assert_allclose(c.coverage_accuracy, [1.0, 2 / 3, 0.75])


def test_too_few_correct_rows_rejects_nothing():
    rng = np.random.default_rng(2)
    z, y = _g2(150, rng)
    mc = make_recalibrator("meta-cal").fit(z, y, logits=True)
    assert mc.params_.values["threshold"] == np.inf
    assert mc.accepted(z, logits=True).all()
    assert "Nothing is rejected" in mc.params_.info["guarantee"]
    assert '"inf"' in mc.params_.to_json()


def test_coverage_accuracy_mode():
    rng = np.random.default_rng(3)
    z, y = _g2(15000, rng)
    cal, test = slice(0, 5000), slice(5000, None)
    mc = make_recalibrator("meta-cal", mode="coverage-accuracy", beta=0.8).fit(
        z[cal], y[cal], logits=True
    )
    m = selective_metrics(softmax(z[test]), y[test], mc.accepted(z[test], logits=True))
    assert 0.77 < m.coverage_accuracy < 0.86
    assert m.coverage < 1
    noise = rng.normal(size=(5000, 10))  # logits unrelated to the labels: accuracy ≈ 0.1
    with pytest.raises(FitError, match="not achievable"):
        make_recalibrator("meta-cal", mode="coverage-accuracy", beta=0.9).fit(
            noise, y[cal], logits=True
        )
    low = make_recalibrator("meta-cal", mode="coverage-accuracy", beta=0.3).fit(
        z[cal], y[cal], logits=True
    )
    assert low.params_.values["threshold"] == np.inf
    with pytest.raises(ConfigError, match="beta"):
        make_recalibrator("meta-cal", mode="coverage-accuracy")


def _population_correct_scores(rng):
    z, y = _g2(400_000, rng)
    p = softmax(z)
    return np.sort(ranking_score(p)[p.argmax(1) == y])


@pytest.mark.slow
def test_mean_miscoverage_matches_order_statistic_law():
    rng = np.random.default_rng(2021)
    pool = _population_correct_scores(rng)
    f0, expected, viol = [], [], []
    for rep in range(1000):
        z, y = _g2(3000, rng)
        mc = MetaCal(alpha=0.05, base="none", seed=rep).fit(z, y, logits=True)
        r = mc.params_.values["threshold"]
        f0.append(1 - np.searchsorted(pool, r, side="right") / pool.size)
        expected.append(mc.params_.info["expected_miscoverage"])
        viol.append(mc.params_.info["violation_probability"])
    f0, expected = np.array(f0), np.array(expected)
    n1 = 3000 * 0.69 * 0.1
    assert abs(expected.mean() - np.floor((n1 + 1) * 0.05) / (n1 + 1)) < 0.003
    # in expectation the miscoverage equals ⌊(n1 + 1)α⌋/(n1 + 1) ...
    assert abs(f0.mean() - expected.mean()) < 5 * f0.std() / np.sqrt(f0.size)
    # ... but it exceeds α about as often as Eq. 5 says (≈ 0.4): not a high-probability bound
    rate = (f0 > 0.05).mean()
    assert 0.3 < rate and abs(rate - np.mean(viol)) < 0.05


@pytest.mark.slow
def test_high_probability_rule_exceeds_alpha_at_rate_at_most_delta():
    rng = np.random.default_rng(7)
    pool = _population_correct_scores(rng)
    over = []
    for rep in range(1000):
        z, y = _g2(3000, rng)
        mc = MetaCal(
            alpha=0.05, threshold_rule="high-probability", delta=0.05, base="none", seed=rep
        )
        mc.fit(z, y, logits=True)
        r = mc.params_.values["threshold"]
        over.append(1 - np.searchsorted(pool, r, side="right") / pool.size > 0.05)
    rate = np.mean(over)
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / len(over))


def test_iid_split_and_other_rankings():
    rng = np.random.default_rng(5)
    z, y = _g2(6000, rng)
    p = softmax(z)
    iid = make_recalibrator("meta-cal", split="iid", seed=3).fit(z, y, logits=True)
    info = iid.params_.info
    # S1 is a random tenth of all rows; only its correct rows set the threshold
    acc = (p.argmax(1) == y).mean()
    assert abs(info["n1"] - 600 * acc) < 60
    assert info["order_statistic"] == paper_order_statistic(info["n1"], 0.05)
    for ranking in ("max-prob", "margin"):
        mc = make_recalibrator("meta-cal", ranking=ranking).fit(z, y, logits=True)
        h = ranking_score(p, ranking)
        assert_allclose(mc.accepted(z, logits=True), h <= mc.params_.values["threshold"])
    assert_allclose(ranking_score(np.array([[0.7, 0.2, 0.1]]), "margin"), [-0.5])
    assert_allclose(ranking_score(np.array([[0.5, 0.5]]), "entropy"), [np.log(2)])
