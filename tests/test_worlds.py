"""Ground-truth worlds: true calibration error, sampling, presets and fits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import core
from core.base.errors import ConfigError, DataError
from core.worlds import (
    GLM_NAMES,
    PAPER_BETA_FITS,
    PAPER_GLM_FITS,
    PRESET_WORLDS,
    BetaScores,
    DirichletWorld,
    EmpiricalScores,
    GLMCurve,
    IdentityCurve,
    LogisticCurve,
    PolynomialCurve,
    TemperatureWorld,
    UniformScores,
    World,
    fit_beta,
    fit_glms,
    fit_world,
    polynomial_for_tce,
    polynomial_tce,
    true_calibration_error,
)

ROOT = Path(__file__).resolve().parents[1]
CIFAR = ROOT.parent / "shared" / "data" / "cifar10-14-networks"


# --------------------------------------------------------------------------- true CE


@pytest.mark.parametrize("ab", [(1.0, 1.0), (1.1, 0.1), (2.8, 0.05), (0.5, 0.5), (3.0, 0.03)])
@pytest.mark.parametrize("d", [0.5, 1.5, 2.0, 3.0, 5.0, 10.0])
def test_integration_equals_polynomial_closed_form(ab, d):
    scores = BetaScores(*ab)
    integrated = true_calibration_error(World(scores, PolynomialCurve(d)), norm=2)
    assert integrated == pytest.approx(polynomial_tce(scores, d), abs=1e-8, rel=1e-8)


def test_closed_form_for_uniform_matches_textbook_formula():
    # Beta(1,1): TCE² = 1/3 − 2/(d+2) + 1/(2d+1)
    for d in (1.2, 2.0, 7.0):
        expected = np.sqrt(1 / 3 - 2 / (d + 2) + 1 / (2 * d + 1))
        assert polynomial_tce(UniformScores(), d) == pytest.approx(expected, abs=1e-12)


# Roelofs et al. digest §5.1, polynomial family, TCE_2 in %
POLY_TARGETS = {
    (1.0, 1.0): {2: 18.2574, 3: 27.6026, 5: 37.2194, 10: 46.2910},
    (1.1, 0.1): {2: 8.4625, 3: 13.6101, 5: 19.9600, 10: 27.9341},
    (2.8, 0.05): {2: 4.2359, 3: 7.2374, 5: 11.3766, 10: 17.2089},
}


@pytest.mark.parametrize("ab", list(POLY_TARGETS))
def test_reference_polynomial_tce_targets(ab):
    for d, pct in POLY_TARGETS[ab].items():
        w = World(BetaScores(*ab), PolynomialCurve(d))
        assert 100 * w.true_calibration_error(2) == pytest.approx(pct, abs=6e-5)
    assert World(BetaScores(*ab), PolynomialCurve(1.0)).true_calibration_error(2) == 0.0


# Roelofs et al. digest §5.1: TCE of the ten AIC-best fits (TCE_2 %, TCE_1 %)
FIT_TARGETS = {
    "resnet110_c10": (10.7087, 5.8373),
    "resnet110_SD_c10": (9.5308, 4.8869),
    "resnet_wide32_c10": (10.1265, 5.6254),
    "densenet40_c10": (10.3720, 5.9016),
    "resnet110_c100": (20.3663, 15.3064),
    "resnet110_SD_c100": (18.5189, 13.0714),
    "resnet_wide32_c100": (21.2611, 14.7526),
    "densenet40_c100": (23.3589, 16.4372),
    "resnet152_imgnet": (8.6045, 6.7438),
    "densenet161_imgnet": (5.4678, 4.9288),
}


@pytest.mark.parametrize("name", list(FIT_TARGETS))
def test_reference_tce_of_the_ten_paper_fits(name):
    l2, l1 = FIT_TARGETS[name]
    world = core.PRESET_WORLDS[name]
    assert 100 * core.true_calibration_error(world, norm=2) == pytest.approx(l2, abs=6e-5)
    assert 100 * core.true_calibration_error(world, norm=1) == pytest.approx(l1, abs=6e-5)
    assert core.true_calibration_error(PRESET_WORLDS[f"{name}-calibrated"]) == 0.0


def test_logistic_world_and_the_reference_code_default_bug():
    assert 100 * PRESET_WORLDS["roelofs-fig14"].true_calibration_error(2) == pytest.approx(
        12.6327, abs=6e-5
    )
    # caltrain's default sigma(10(c + 5)) is ~1 everywhere: TCE² = ∫(c − 1)² dc = 1/3
    bug = World(UniformScores(), LogisticCurve(10.0, 50.0))
    assert bug.true_calibration_error(2) == pytest.approx(np.sqrt(1 / 3), abs=1e-10)


def test_exponent_for_a_target_tce_matches_reference():
    uniform = {0.01: 1.0374, 0.02: 1.0763, 0.05: 1.2022, 0.08: 1.3441, 0.10: 1.4491}
    for target, d in uniform.items():
        assert polynomial_for_tce(target, UniformScores()) == pytest.approx(d, abs=6e-5)
    skewed = {0.02: 1.1858, 0.05: 1.5173, 0.08: 1.9282, 0.10: 2.2577}
    for target, d in skewed.items():
        assert polynomial_for_tce(target, BetaScores(1.1, 0.1)) == pytest.approx(d, abs=6e-5)
    assert polynomial_for_tce(0.0, UniformScores()) == 1.0


def test_sine_world_closed_form():
    # ∫(0.2z − 0.1 − 0.05 sin 16πz)² dz = 0.04/12 + 0.02/(16π) + 0.0025/2
    expected = np.sqrt(0.04 / 12 + 0.02 / (16 * np.pi) + 0.0025 / 2)
    world = PRESET_WORLDS["kumar-sine"]
    assert world.true_calibration_error(2) == pytest.approx(expected, abs=1e-10)
    # Kumar et al. digest §3.2: ℓ1 = 0.0583 by 2·10⁶ draws
    assert world.true_calibration_error(1) == pytest.approx(0.0583, abs=2e-4)


def test_binning_hides_error_world_truth_and_binned_estimates():
    world = PRESET_WORLDS["kumar-binning-hides"]
    cuts = [0.49, 0.49 + 0.495 * 0.01, 0.5, 0.5 + 0.505 * 0.01, 0.51]
    mus = [1.0, 0.0, 1.0, 0.0]

    def prim(c, mu):  # antiderivative of (c − mu)²
        return (c - mu) ** 3 / 3

    sq = sum(prim(b, m) - prim(a, m) for a, b, m in zip(cuts[:-1], cuts[1:], mus, strict=True))
    assert world.true_calibration_error(2) == pytest.approx(np.sqrt(sq / 0.02), abs=1e-10)
    f, y = world.sample(100_000, 0)
    coarse = core.calibration_error(f, y, lens="binary", binning="equal-width", n_bins=10, norm=2)
    fine = core.calibration_error(f, y, lens="binary", binning="equal-width", n_bins=1000, norm=2)
    assert coarse.value < 0.01 < 0.45 < fine.value


def test_sup_norm_and_empirical_scores():
    w = World(UniformScores(), PolynomialCurve(2.0))
    assert true_calibration_error(w, norm="inf") == pytest.approx(0.25, abs=1e-9)
    atoms = np.array([0.2, 0.5, 0.9, 0.9])
    emp = World(EmpiricalScores(atoms), PolynomialCurve(2.0))
    gaps = atoms - atoms**2
    assert emp.true_calibration_error(2) == pytest.approx(np.sqrt(np.mean(gaps**2)), abs=1e-15)
    assert emp.true_calibration_error(1) == pytest.approx(np.mean(gaps), abs=1e-15)
    assert emp.true_calibration_error(np.inf) == pytest.approx(gaps.max(), abs=1e-15)
    assert hash(EmpiricalScores(atoms)) == hash(EmpiricalScores(atoms.copy()))


# --------------------------------------------------------------------------- sampling


def test_sampling_is_seeded_and_typed():
    world = PRESET_WORLDS["resnet110_c10"]
    f1, y1 = world.sample(500, 7)
    f2, y2 = world.sample(500, np.random.default_rng(7))
    np.testing.assert_array_equal(f1, f2)
    np.testing.assert_array_equal(y1, y2)
    assert y1.dtype == np.int64 and set(np.unique(y1)) <= {0, 1}
    assert ((f1 >= 0) & (f1 <= 1)).all()
    with pytest.raises(ConfigError):
        world.sample(0, 1)


def test_exact_ones_fraction_matches_reference():
    # digest §5.10.9: about 18 % of Beta(2.7752, 0.0478) draws are exactly 1.0
    f = BetaScores(2.7752, 0.0478).sample(100_000, np.random.default_rng(0))
    assert np.mean(f == 1.0) == pytest.approx(0.18, abs=0.01)


@pytest.mark.parametrize("name", GLM_NAMES)
def test_every_glm_curve_is_finite_in_unit_interval(name):
    curve = GLMCurve.from_name(name, b0=-0.3 if "b0" in name else None, b1=0.4)
    c = np.array([0.0, 1e-300, 1e-16, 0.3, 0.5, 1 - 1e-16, 1.0])
    mu = curve(c)
    assert np.isfinite(mu).all() and (mu >= 0).all() and (mu <= 1).all()


def test_monte_carlo_agrees_with_integrated_truth():
    world = PRESET_WORLDS["resnet110_c100"]
    f, y = world.sample(400_000, 11)
    mu = world.curve(f)
    gap2 = (f - mu) ** 2
    se = gap2.std() / np.sqrt(f.size)
    assert gap2.mean() == pytest.approx(world.true_calibration_error(2) ** 2, abs=4 * se)
    se_y = np.sqrt(mu.mean() * (1 - mu.mean()) / f.size)
    assert y.mean() == pytest.approx(mu.mean(), abs=4 * se_y)


# --------------------------------------------------------------------------- presets


def test_paper_tables_are_complete():
    assert len(PAPER_BETA_FITS) == 10
    assert len(PAPER_GLM_FITS) == 120
    for dataset in PAPER_BETA_FITS:
        rows = [r for r in PAPER_GLM_FITS if r[0] == dataset]
        assert sorted(r[1] for r in rows) == sorted(GLM_NAMES)
        aics = [r[2] for r in rows]
        assert aics == sorted(aics)  # the paper lists each block in ascending AIC
        for _, name, _, b0, b1 in rows:
            params = name.split("_", 2)[2]
            assert (b0 is None) == (params == "b1")
            assert (b1 is None) == (params == "b0")


# the digest's "AIC winners" table (first row of each Table 3 block)
AIC_WINNERS = {
    "resnet110_c10": ("logflip_logflip_b0_b1", -0.24, 0.30),
    "resnet110_SD_c10": ("logit_logflip_b0_b1", -0.27, -0.35),
    "resnet_wide32_c10": ("logit_logit_b1", 0.0, 0.26),
    "densenet40_c10": ("logit_logflip_b1", 0.0, -0.26),
    "resnet110_c100": ("logflip_logflip_b0_b1", -0.11, 0.28),
    "resnet110_SD_c100": ("logit_logit_b0_b1", -0.88, 0.49),
    "resnet_wide32_c100": ("logflip_logflip_b0_b1", -0.13, 0.21),
    "densenet40_c100": ("logit_logit_b0_b1", -0.97, 0.34),
    "resnet152_imgnet": ("logflip_logflip_b0_b1", -0.12, 0.58),
    "densenet161_imgnet": ("log_log_b0_b1", -0.03, 1.27),
}


@pytest.mark.parametrize("name", list(AIC_WINNERS))
def test_preset_uses_table2_beta_and_aic_best_glm(name):
    world = PRESET_WORLDS[name]
    glm, b0, b1 = AIC_WINNERS[name]
    assert isinstance(world.curve, GLMCurve)
    assert (world.curve.name, world.curve.b0, world.curve.b1) == (glm, b0, b1)
    assert (world.scores.alpha, world.scores.beta) == PAPER_BETA_FITS[name]
    assert isinstance(PRESET_WORLDS[f"{name}-calibrated"].curve, IdentityCurve)


def test_preset_mapping_is_read_only_and_named():
    with pytest.raises(TypeError):
        PRESET_WORLDS["x"] = PRESET_WORLDS["roelofs-fig1"]  # type: ignore[index]
    for key, world in PRESET_WORLDS.items():
        assert world.name == key and world.description


def test_bad_parameters_raise_typed_errors():
    with pytest.raises(ConfigError):
        BetaScores(0.0, 1.0)
    with pytest.raises(ConfigError):
        UniformScores(0.6, 0.4)
    with pytest.raises(ConfigError):
        GLMCurve("log", "logit")
    with pytest.raises(ConfigError):
        GLMCurve.from_name("nope")
    with pytest.raises(ConfigError):
        PolynomialCurve(-1.0)
    with pytest.raises(DataError):
        fit_beta([0.5])


# --------------------------------------------------------------------------- fitting


def test_beta_mle_recovers_parameters_and_matches_scipy():
    f = BetaScores(1.1359, 0.2069).sample(200_000, np.random.default_rng(3))
    fit = fit_beta(f)
    assert fit.alpha == pytest.approx(1.1359, rel=0.02)
    assert fit.beta == pytest.approx(0.2069, rel=0.02)
    a, b, _, _ = stats.beta.fit(np.clip(f, 1e-16, 1 - 1e-16), floc=0, fscale=1)
    assert fit.alpha == pytest.approx(a, rel=1e-6)
    assert fit.beta == pytest.approx(b, rel=1e-6)
    nll = -stats.beta.logpdf(np.clip(f, 1e-16, 1 - 1e-16), fit.alpha, fit.beta).sum()
    assert fit.nll == pytest.approx(nll, rel=1e-9)


def test_glm_fit_recovers_a_platt_world():
    world = PRESET_WORLDS["kumar-platt"]  # sigma(1 + 2 logit z)
    f, y = world.sample(100_000, 5)
    fits = fit_glms(f, y)
    assert fits.best.name == "logit_logit_b0_b1"
    assert fits.best.b0 == pytest.approx(1.0, abs=0.05)
    assert fits.best.b1 == pytest.approx(2.0, abs=0.05)
    t = fits.table
    assert len(t) == 12 and t["aic"].is_monotonic_increasing
    assert t["delta_aic"].iloc[0] == 0 and t["akaike_weight"].sum() == pytest.approx(1.0)
    # the intercept-only models all fit the constant mean label: equal likelihoods
    const = t[t["params"] == "b0"]["nll"].to_numpy()
    np.testing.assert_allclose(const, const[0], rtol=1e-10)


@pytest.mark.slow
def test_fit_world_recovers_a_paper_world():
    truth = PRESET_WORLDS["resnet110_c100"]
    f, y = truth.sample(100_000, 2)
    fit = fit_world(f, y)
    assert fit.world.scores.alpha == pytest.approx(1.1823, rel=0.03)
    assert fit.world.scores.beta == pytest.approx(0.1081, rel=0.03)
    assert fit.glms.best.name == "logflip_logflip_b0_b1"
    assert fit.world.curve.b0 == pytest.approx(-0.11, abs=0.03)
    assert fit.world.curve.b1 == pytest.approx(0.28, abs=0.03)
    assert fit.glms.n_dropped == int(np.sum(f == 1.0))
    assert fit.world.true_calibration_error(2) == pytest.approx(
        truth.true_calibration_error(2), abs=0.005
    )


@pytest.mark.data
def test_fit_world_on_real_cifar10_predictions():
    if not (CIFAR / "resnet18.csv").exists():
        pytest.skip(f"CIFAR-10 predictions not found under {CIFAR}")
    probs = np.loadtxt(CIFAR / "resnet18.csv", delimiter=",")
    labels = np.loadtxt(CIFAR / "labels.csv", delimiter=",").astype(int) - 1
    view = core.apply_lens(probs / probs.sum(1, keepdims=True), labels, "top-label")
    fit = fit_world(view.scores[0], view.outcomes[0])
    assert fit.beta.beta < 1 < fit.beta.alpha  # confident network: mass piles up near 1
    assert fit.glms.table["glm"].nunique() == 12
    observed_accuracy = view.outcomes[0].mean()
    assert fit.world.curve(view.scores[0]).mean() == pytest.approx(observed_accuracy, abs=0.02)


# --------------------------------------------------------------------------- multiclass


def test_dirichlet_world_closed_forms_match_reference():
    assert DirichletWorld(10, 0.1, 0.5, "first").true_canonical_ece() == pytest.approx(0.45)
    assert DirichletWorld(10, 0.1, 1.0).true_canonical_ece() == pytest.approx(
        0.7106418012290426, abs=1e-12
    )
    assert DirichletWorld(2, 0.1, 1.0).true_canonical_ece() == pytest.approx(0.4415757, abs=1e-7)
    assert DirichletWorld(10, 1.0, 1.0).true_canonical_ece() == pytest.approx(0.3486784, abs=1e-7)
    assert DirichletWorld(10, 0.1, 0.0).true_canonical_ece() == 0.0


def test_dirichlet_world_sampling_matches_its_truth():
    world = DirichletWorld(4, 0.5, 0.7, "first")
    g, y = world.sample(200_000, 0)
    assert g.shape == (200_000, 4) and np.allclose(g.sum(1), 1)
    tv = 0.5 * np.abs(world.pi * (world.beta_vector - g)).sum(1)
    assert tv.mean() == pytest.approx(
        world.true_canonical_ece(), abs=4 * tv.std() / np.sqrt(g.shape[0])
    )
    # P(Y = k) = pi beta_k + (1 - pi) E[G_k]
    freq = np.bincount(y, minlength=4) / y.size
    expected = world.pi * world.beta_vector + (1 - world.pi) * 0.25
    np.testing.assert_allclose(freq, expected, atol=0.005)


@pytest.mark.slow
def test_temperature_world_truth_against_sampling_and_binned_estimates():
    world = TemperatureWorld(10, temperature=0.5, scale=3.0)
    p, y = world.sample(200_000, 1)
    q = world.true_probs(p)
    np.testing.assert_allclose(q.sum(1), 1.0)
    top = p.argmax(1)
    rows = np.arange(p.shape[0])
    hit_rate, q_top = (y == top).mean(), q[rows, top].mean()
    assert hit_rate == pytest.approx(q_top, abs=4 * np.sqrt(q_top * (1 - q_top) / y.size))
    assert (p[rows, top] > q[rows, top]).mean() > 0.95  # temperature < 1: over-confident
    for lens in ("top-label", "classwise"):
        truth = world.true_calibration_error(lens=lens, norm=2, n_draws=200_000, seed=2)
        assert truth.standard_error < 2.5e-4
        binned = core.calibration_error(p, y, lens=lens, binning="equal-mass", n_bins=100, norm=2)
        # binning underestimates the true error (Kumar et al. Prop. 3.3), but not by much here
        assert truth.value - 0.01 < binned.value < truth.value + 3 * truth.standard_error
    calibrated = TemperatureWorld(5, temperature=1.0).true_calibration_error(lens="canonical")
    assert calibrated.value == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ConfigError):
        TemperatureWorld(5, temperature=0.0)


def test_noisy_platt_world_truth_agrees_with_monte_carlo():
    world = PRESET_WORLDS["kumar-noisy-platt"]
    curve = world.curve
    assert len(curve.breakpoints) == 99_999 and set(np.unique(curve.signs)) == {-1.0, 1.0}
    # the offset is constant on a cell and flips between cells
    z = np.array([0.25 + 0.5 * (10.2 / 100_000), 0.25 + 0.5 * (10.8 / 100_000)])
    assert np.ptp(curve(z) - curve.base(z)) == 0.0
    truth = world.true_calibration_error(2)
    f, _ = world.sample(1_000_000, 0)
    gap2 = (f - curve(f)) ** 2
    assert truth**2 == pytest.approx(gap2.mean(), abs=4 * gap2.std() / np.sqrt(f.size))
    smooth = World(world.scores, curve.base).true_calibration_error(2)
    # independent signs: E[(g − e)²] ≈ E[g²] + amplitude², up to the tiny sign-weighted sum
    assert truth**2 == pytest.approx(smooth**2 + 0.02**2, abs=2e-5)


def test_beta_fit_histogram_is_the_bin_average_of_the_fitted_density():
    from core.figures import beta_fit_figure
    from core.worlds import beta_fit_histogram, fit_beta

    s = BetaScores(2.0, 5.0).sample(4000, np.random.default_rng(3))
    fit = fit_beta(s)
    h = beta_fit_histogram(s, fit, n_bins=10)
    np.testing.assert_allclose(h.edges, np.linspace(0, 1, 11))
    counts, _ = np.histogram(s, bins=h.edges)
    np.testing.assert_allclose(h.density, counts / 4000 / 0.1)
    want = np.diff(stats.beta.cdf(h.edges, fit.alpha, fit.beta)) / 0.1
    np.testing.assert_allclose(h.fitted, want, rtol=1e-12)
    np.testing.assert_allclose(np.sum(h.fitted * 0.1), 1.0)
    bars, curve = beta_fit_figure(h).data
    np.testing.assert_allclose(bars.y, h.density)
    np.testing.assert_allclose(curve.y, h.fitted)
    assert curve.name == f"Beta({fit.alpha:.4g}, {fit.beta:.4g}), bin average"
