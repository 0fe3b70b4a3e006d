"""Ground-truth worlds as a data source: names, draws and true errors against closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from core.base.errors import ConfigError
from core.worlds import PRESET_WORLDS, BetaScores, PolynomialCurve, World, polynomial_tce
from core.worlds.draws import (
    WIDMANN_WORLDS,
    draw_predictions,
    glm_world_name,
    true_error,
    world_choices,
    world_named,
)


def test_every_choice_resolves_and_draws():
    for name in world_choices():
        world = world_named(name)
        pred = draw_predictions(name, 50, seed=1)
        assert pred.n == 50
        assert pred.binary == isinstance(world, World)
        assert name in pred.source


def test_same_seed_same_rows_and_digest():
    a = draw_predictions("roelofs-fig14", 500, seed=7)
    b = draw_predictions("roelofs-fig14", 500, seed=7)
    c = draw_predictions("roelofs-fig14", 500, seed=8)
    assert a.digest == b.digest != c.digest
    # the rows are the world's own sample with that seed
    s, y = PRESET_WORLDS["roelofs-fig14"].sample(500, np.random.default_rng(7))
    np.testing.assert_array_equal(a.probs[:, 1], s)
    np.testing.assert_array_equal(a.labels, y)


def test_glm_world_round_trip_and_errors():
    name = glm_world_name(2.7752, 0.0478, "logflip_logflip_b0_b1", -0.24, 0.3)
    assert name == "glm:2.7752,0.0478,logflip_logflip_b0_b1,-0.24,0.3"
    world = world_named(name)
    assert world.scores == BetaScores(2.7752, 0.0478)
    # the AIC-best row of ResNet-110 on CIFAR-10 is this preset
    assert world.curve == PRESET_WORLDS["resnet110_c10"].curve
    for bad in (
        "nope",
        "glm:1,1",
        "glm:-1,1,logit_logit_b1,0,1",
        "glm:1,1,foo_bar_b1",
        "glm:a,1,x",
    ):
        with pytest.raises(ConfigError):
            world_named(bad)
    with pytest.raises(ConfigError):
        draw_predictions("kumar-platt", 0)


def test_binary_world_truth_is_the_polynomial_closed_form_under_every_lens():
    world = World(BetaScores(2.0, 3.0), PolynomialCurve(2.0))
    exact = polynomial_tce(BetaScores(2.0, 3.0), 2.0)
    for lens in ("binary", "top-label", "classwise"):
        assert true_error(world, lens=lens, norm=2).value == pytest.approx(exact, abs=1e-10)


def test_binary_world_lenses_agree_on_a_large_draw():
    # the argument of true_error's Notes: |gap| is the same under every lens; a large
    # sample's top-label gap per row equals the binary one
    world = PRESET_WORLDS["kumar-platt"]
    s = np.random.default_rng(0).uniform(size=400_000)
    mu = world.curve(s)
    conf = np.maximum(s, 1 - s)
    right = np.where(s > 0.5, mu, 1 - mu)
    top_gap = np.mean(np.abs(conf - right))
    truth = true_error(world, lens="top-label", norm=1).value
    assert top_gap == pytest.approx(truth, abs=4 * np.std(np.abs(s - mu)) / np.sqrt(s.size))


def test_widmann_canonical_truths_are_the_papers():
    # Widmann et al. (2019), Fig. 1 dashed lines: 0, 0.45, 0.7106418012290426
    assert true_error("widmann-m1", lens="canonical").value == 0.0
    assert true_error("widmann-m2", lens="canonical").value == pytest.approx(0.45, abs=1e-12)
    assert true_error("widmann-m3", lens="canonical").value == pytest.approx(
        0.7106418012290426, abs=1e-12
    )


def test_widmann_classwise_closed_forms():
    # M2 by hand: π = 1/2, β = e₁, G_k ~ Beta(0.1, 0.9): E|G₀ − 1| = 0.9, E|G_k| = 0.1
    assert true_error("widmann-m2", lens="classwise", norm=1).value == pytest.approx(
        0.5 * (0.9 + 9 * 0.1) / 10, abs=1e-12
    )

    # M3, ℓ1: E|G − 0.1| for G ~ Beta(0.1, 0.9) by quadrature, x = t¹⁰ removing the
    # density's x^(−0.9) singularity at 0
    def integrand(t: float) -> float:
        x = t**10
        return abs(x - 0.1) * stats.beta.pdf(x, 0.1, 0.9) * 10 * t**9

    first = integrate.quad(integrand, 0, 1, points=[0.1**0.1], limit=200)[0]
    assert true_error("widmann-m3", lens="classwise", norm=1).value == pytest.approx(
        first, abs=1e-7
    )
    # ℓ2: E(G − 0.1)² = Var G (the mean is 0.1) = 0.1·0.9 / 2
    assert true_error("widmann-m3", lens="classwise", norm=2).value == pytest.approx(
        np.sqrt(0.09 / 2), abs=1e-12
    )


def test_widmann_top_label_monte_carlo_against_an_independent_draw():
    truth = true_error("widmann-m3", lens="top-label", norm=1)
    assert truth.method == "Monte Carlo" and 0 < truth.standard_error < 2e-4
    # E[max G] of Dir(0.1 · 1₁₀) by a separate seeded draw, minus 1/10
    gen = np.random.default_rng(123)
    g = gen.dirichlet(np.full(10, 0.1), size=400_000)
    m = g.max(axis=1)
    se = m.std() / np.sqrt(m.size)
    assert truth.value == pytest.approx(m.mean() - 0.1, abs=4 * se + 4 * truth.standard_error)
    # the draws of the world are the same Dir(0.1) predictions
    pred = draw_predictions(WIDMANN_WORLDS["widmann-m3"], 20_000, seed=2)
    top = pred.probs.max(axis=1)
    assert top.mean() == pytest.approx(m.mean(), abs=4 * top.std() / np.sqrt(top.size) + 4 * se)


def test_undefined_truths_are_none():
    assert true_error("widmann-m2", lens="binary", norm=1) is None
    assert true_error("widmann-m2", lens="top-label", norm="inf") is None


def test_true_error_text():
    t = true_error("roelofs-fig14", lens="binary", norm=2)
    assert t.text == "12.63 % (quadrature)"
