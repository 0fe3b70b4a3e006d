"""Validity curves (Gupta & Ramdas 2021, Eq. (6)), theory curves and the guarantee calculator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from core.analyses.validity import group_outputs, validity_curves, validity_from_groups
from core.base.errors import ConfigError, DataError, FitError
from core.inference.calibration import calibration_error
from core.stats.guarantees import (
    epsilon_table,
    expected_ece_bound,
    guarantee_calculator,
    guarantee_epsilon,
    largest_bins,
    n_needed,
    theory_validity,
)


def _calibrated(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    p = rng.uniform(size=n)
    return p, (rng.uniform(size=n) < p).astype(int)


# ---------------------------------------------------------------- estimator (6) by hand


def test_hand_computed_validity_of_two_groups():
    # group h = 0.2: 4 rows, 1 positive -> ȳ = 0.25, d = 0.05; group h = 0.8: 2 rows, ȳ = 0.5, d = 0.3
    h = np.array([0.2, 0.8, 0.2, 0.2, 0.8, 0.2])
    y = np.array([1, 1, 0, 0, 0, 0])
    groups = group_outputs(h, y)
    assert_array_equal(groups.value, [0.2, 0.8])
    assert_array_equal(groups.count, [4, 2])
    assert_allclose(groups.gap, [0.05, 0.3], atol=1e-15)
    eps = np.array([0.0, 0.04, 0.06, 0.29, 0.31, 1.0])
    v, vc = validity_from_groups(groups, eps)
    assert_allclose(v[0], [0, 0, 4 / 6, 4 / 6, 1, 1], atol=1e-15)
    assert_array_equal(vc[0], [0, 0, 0, 0, 1, 1])
    # the jump sits exactly at d_b: V is right-continuous
    v_at, vc_at = validity_from_groups(groups, np.sort(groups.gap))
    assert_allclose(v_at[0], [4 / 6, 1.0])
    assert_array_equal(vc_at[0], [0.0, 1.0])


def test_figure_1a_read_offs():
    # the paper's Fig. 1(a): 10 equal-mass bins with gaps 1e-3·(1.5, 2, 8, ..., 71);
    # each bin 200 rows with test mean 0.5 and output 0.5 + d_b
    d = 1e-3 * np.array([1.5, 2, 8, 16, 17, 19, 22, 29, 39, 71])
    h = np.repeat(0.5 + d, 200)
    y = np.tile(np.r_[np.ones(100), np.zeros(100)], 10)
    groups = group_outputs(h, y)
    v, vc = validity_from_groups(groups, [0.00149, 0.00151, 0.03, 0.04, 0.0709, 0.0711])
    assert_allclose(v[0], [0.0, 0.1, 0.8, 0.9, 0.9, 1.0], atol=1e-12)
    assert_array_equal(vc[0], [0, 0, 0, 0, 0, 1])
    ece = calibration_error(h, y, lens="binary", binning="discrete", norm=1).value
    assert_allclose(ece, 0.02245, atol=1e-12)
    # 1 − Σ_k V(ε_k)·0.001 over 0, 0.001, ..., 0.999 is within one grid step of the ECE
    grid = np.arange(1000) / 1000
    v_grid, _ = validity_from_groups(groups, grid)
    assert 0 <= (1 - v_grid[0].sum() * 0.001) - ece <= 0.001


def test_auc_identity_against_core_plugin_on_discrete_bins():
    rng = np.random.default_rng(7)
    for _ in range(5):
        values = rng.uniform(size=rng.integers(2, 12))
        h = values[rng.integers(values.size, size=400)]
        y = (rng.uniform(size=400) < rng.uniform(size=400)).astype(int)
        groups = group_outputs(h, y)
        ece = calibration_error(h, y, lens="binary", binning="discrete", norm=1).value
        # exact step integral: ∫₀¹ V = Σ_b w_b (1 − d_b)
        w = groups.count / 400
        assert_allclose(1 - (w * (1 - groups.gap)).sum(), ece, atol=1e-12)
        fine = np.linspace(0, 1, 20001)
        v, _ = validity_from_groups(groups, fine)
        auc = (v[0, :-1] * np.diff(fine)).sum()
        assert 0 <= (1 - auc) - ece <= 1 / 20000 + 1e-12


def test_group_outputs_rejects_mismatched_shapes():
    with pytest.raises(DataError, match="same shape"):
        group_outputs(np.zeros(3), np.zeros(4))


# ---------------------------------------------------------------- repeated splits


@pytest.fixture(scope="module")
def umd_result():
    p, y = _calibrated(3000, np.random.default_rng(0))
    return validity_curves(p, y, n_bins=10, n_cal=0.5, n_resamples=20, seed=3)


def test_curves_are_monotone_steps_reaching_one(umd_result):
    r = umd_result
    assert r.marginal.shape == r.conditional.shape == (20, r.eps.size)
    assert (np.diff(r.marginal, axis=1) >= -1e-12).all()
    assert (np.diff(r.conditional, axis=1) >= 0).all()
    assert_allclose(r.marginal[:, -1], 1.0)
    assert_array_equal(r.conditional[:, -1], 1.0)
    assert set(np.unique(r.conditional)) <= {0.0, 1.0}
    # conditional validity is dominated by the marginal one, run by run
    assert (r.conditional <= r.marginal + 1e-12).all()
    # each run's conditional curve jumps at its largest gap
    for run in range(r.n_resamples):
        jump = r.eps[np.flatnonzero(r.conditional[run])[0]]
        assert jump >= r.max_gap[run] and jump - r.max_gap[run] <= 0.001 + 1e-12
    assert_allclose(r.marginal_mean, r.marginal.mean(axis=0))
    assert_allclose(r.marginal_sem, r.marginal.std(axis=0, ddof=1) / np.sqrt(20))


def test_auc_identity_field_and_bin_table(umd_result):
    r = umd_result
    assert r.auc_identity_holds
    assert r.auc_identity_tolerance == pytest.approx(0.001)
    assert_allclose(1 - r.auc, r.ece, atol=0.001 + 1e-12)
    assert ((1 - r.auc) - r.ece >= -1e-12).all()  # a left step sum never overstates the AUC
    # run 1's plug-in ECE from core, on its groups rebuilt as rows
    t = r.bins
    h = np.repeat(t["value"].to_numpy(), t["count"].to_numpy())
    y = np.concatenate(
        [
            np.r_[np.ones(int(k)), np.zeros(int(n - k))]
            for k, n in zip(t["positives"], t["count"], strict=True)
        ]
    )
    ece0 = calibration_error(h, y, lens="binary", binning="discrete", norm=1).value
    assert_allclose(r.ece[0], ece0, atol=1e-12)
    assert t["count"].sum() == r.n_test == 1500
    # UMD with Algorithm 2's jitter: one group per bin, Σ m_b = n − B + 1, Wilson brackets ȳ
    assert len(t) == 10
    assert t["cal_count"].sum() == r.n_cal - 10 + 1
    assert t["cal_count"].min() >= r.n_cal // 10 - 1
    assert ((t["low"] <= t["mean_label"]) & (t["mean_label"] <= t["high"])).all()
    assert_allclose(t["halfwidth"], np.sqrt(np.log(2 * 10 / 0.1) / (2 * t["cal_count"])))
    assert r.pooled_bins is not None and len(r.pooled_bins) == 10


def test_theory_curve_of_the_result(umd_result):
    r = umd_result
    assert r.min_bin_labels == 1500 // 10 - 1
    assert_allclose(r.theory_marginal, theory_validity(r.eps, 1500, 10, delta=1e-10))
    assert_allclose(
        r.theory_conditional, theory_validity(r.eps, 1500, 10, kind="conditional", delta=1e-10)
    )
    assert "m = ⌊n_cal/B⌋ − 1 = 149" in r.theory_note
    assert r.epsilon_conditional == pytest.approx(guarantee_epsilon(1500, 10), abs=1e-9)


def test_determinism_under_a_seed():
    p, y = _calibrated(800, np.random.default_rng(1))
    a = validity_curves(p, y, n_bins=5, n_resamples=5, seed=11)
    b = validity_curves(p, y, n_bins=5, n_resamples=5, seed=11)
    c = validity_curves(p, y, n_bins=5, n_resamples=5, seed=12)
    assert_array_equal(a.marginal, b.marginal)
    assert_array_equal(a.conditional, b.conditional)
    assert a.bins.equals(b.bins)
    assert not np.array_equal(a.marginal, c.marginal)


def test_a_calibrated_world_becomes_valid_as_n_grows():
    # P(y=1 | s) = s: UMD's bins are calibrated up to estimation noise, which shrinks like
    # 1/√n, so V̂(0.05) climbs towards 1 (test noise keeps it slightly below)
    rng = np.random.default_rng(2024)
    at_005 = []
    for n in (1000, 4000, 20000):
        p, y = _calibrated(n, rng)
        r = validity_curves(p, y, n_bins=5, n_resamples=20, seed=5)
        at_005.append(r.marginal_mean[np.searchsorted(r.eps, 0.05)])
    assert at_005[0] < at_005[1] < at_005[2]
    assert at_005[0] < 0.85
    assert at_005[2] > 0.97


def test_binning_repairs_a_miscalibrated_world():
    # P(y=1 | s) = s²: the raw scores are far off, fixed-width bins estimated on 10,000 rows
    # are close; no theory curve exists for fixed-width binning
    rng = np.random.default_rng(3)
    p = rng.uniform(size=20000)
    y = (rng.uniform(size=20000) < p**2).astype(int)
    r = validity_curves(p, y, method="histogram-fixed-width", n_bins=10, n_resamples=5, seed=0)
    raw = calibration_error(p, y, lens="binary", n_bins=10, norm=1).value
    assert raw > 0.1
    assert r.ece_mean < 0.06
    assert r.theory_marginal is None and "No theory curve" in r.theory_note


def test_top_label_lens_on_multiclass():
    rng = np.random.default_rng(4)
    logits = rng.normal(size=(3000, 4)) * 2
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = (rng.uniform(size=(3000, 1)) > np.cumsum(probs, axis=1)).sum(axis=1)
    r = validity_curves(probs, labels, lens="top-label", n_bins=8, n_resamples=4, seed=0)
    assert r.lens == "top-label" and r.auc_identity_holds
    assert r.bins["value"].between(0, 1).all()
    assert "top-label confidence" in r.theory_note
    with pytest.raises(ConfigError, match="binary lens needs two classes"):
        validity_curves(probs, labels, lens="binary", n_resamples=1)


def test_refusals_and_sizes():
    p, y = _calibrated(500, np.random.default_rng(5))
    with pytest.raises(ConfigError, match="piecewise-constant"):
        validity_curves(p, y, method="platt", n_resamples=1)
    with pytest.raises(ConfigError, match="linear interpolation"):
        validity_curves(
            p, y, method="isotonic", recalibrator_options={"interpolation": "linear"}, n_resamples=1
        )
    with pytest.raises(ConfigError, match="binary or top-label"):
        validity_curves(p, y, lens="classwise", n_resamples=1)
    with pytest.raises(ConfigError, match="strictly increasing"):
        validity_curves(p, y, eps_grid=[0.2, 0.1], n_resamples=1)
    with pytest.raises(ConfigError, match="n_cal"):
        validity_curves(p, y, n_cal=1.5, n_resamples=1)
    with pytest.raises(FitError, match="n >= 2B"):
        validity_curves(p, y, n_cal=30, n_bins=20, n_resamples=1)
    with pytest.raises(DataError, match="Labels are required"):
        validity_curves(p)
    r = validity_curves(p, y, n_cal=100, n_test=200, n_bins=5, n_resamples=2, method="isotonic")
    assert (r.n_cal, r.n_test) == (100, 200)
    assert r.bins["count"].sum() == 200
    assert r.bins["cal_count"].isna().all()


def test_predictions_object_and_progress():
    from core.data import load_predictions

    p, y = _calibrated(600, np.random.default_rng(6))
    pred = load_predictions(np.column_stack([1 - p, p]), labels=y)
    seen = []
    r = validity_curves(pred, n_bins=5, n_resamples=3, seed=0, progress=lambda f, m: seen.append(f))
    assert seen == pytest.approx([1 / 3, 2 / 3, 1.0])
    direct = validity_curves(pred.probs, pred.labels, n_bins=5, n_resamples=3, seed=0)
    assert_array_equal(r.marginal, direct.marginal)


# ---------------------------------------------------------------- theory and calculator

# Gupta & Ramdas digest §3.7: theory validity for B = 10, δ → 0, as (marginal, conditional)
THEORY_TABLE = {
    1000: {0.03: (0, 0), 0.04: (0, 0), 0.05: (0, 0), 0.06: (0.020, 0), 0.08: (0.437, 0),
           0.10: (0.724, 0)},
    3000: {0.03: (0, 0), 0.04: (0.232, 0), 0.05: (0.552, 0), 0.06: (0.768, 0),
           0.08: (0.957, 0.565), 0.10: (0.995, 0.949)},
    5000: {0.03: (0.185, 0), 0.04: (0.595, 0), 0.05: (0.835, 0), 0.06: (0.945, 0.450),
           0.08: (0.997, 0.966), 0.10: (1.000, 0.999)},
    7000: {0.03: (0.432, 0), 0.04: (0.786, 0), 0.05: (0.939, 0.393), 0.06: (0.987, 0.870),
           0.08: (1.000, 0.997), 0.10: (1.000, 1.000)},
}  # fmt: skip


@pytest.mark.parametrize("n", sorted(THEORY_TABLE))
def test_theory_curves_match_the_published_table(n):
    eps = np.array(sorted(THEORY_TABLE[n]))
    marg = np.array([THEORY_TABLE[n][e][0] for e in eps])
    cond = np.array([THEORY_TABLE[n][e][1] for e in eps])
    # the table is rounded to 3 decimals (one entry, 0.9564, printed as 0.957)
    assert_allclose(theory_validity(eps, n, 10), marg, atol=1.5e-3)
    assert_allclose(theory_validity(eps, n, 10, kind="conditional"), cond, atol=1.5e-3)


def test_theory_curve_inverts_the_bound():
    # at ε = ε₁(α) the marginal curve is exactly 1 − α (and the conditional one at ε₂)
    for n, b, a in [(1000, 10, 0.1), (3000, 10, 0.05), (20000, 22, 0.2)]:
        e1 = guarantee_epsilon(n, b, a, kind="marginal")
        e2 = guarantee_epsilon(n, b, a)
        assert_allclose(theory_validity(e1, n, b), 1 - a, rtol=1e-12)
        assert_allclose(theory_validity(e2, n, b, kind="conditional"), 1 - a, rtol=1e-12)
        ze = guarantee_epsilon(n, b, a, kind="zadrozny-elkan")
        assert_allclose(
            theory_validity(ze, n, b, kind="conditional", variant="zadrozny-elkan"), 1 - a
        )
    assert_array_equal(theory_validity([0.5, 0.9], 30, 20), [0.0, 0.0])  # n < 2B


# digest §3.6, α = 0.1, δ → 0: n, B, Thm 3, Cor 1, Thm 4 ε₁, 1/(2√m)
BOUND_TABLE = [
    (150, 1, 0.1003, 0.1069, 0.1003, 0.0410),
    (1000, 5, 0.1076, 0.1126, 0.0868, 0.0354),
    (1000, 10, 0.1636, 0.1736, 0.1230, 0.0503),
    (1500, 10, 0.1333, 0.1400, 0.1003, 0.0410),
    (2900, 10, 0.0957, 0.0992, 0.0720, 0.0294),
    (3000, 10, 0.0941, 0.0975, 0.0708, 0.0289),
    (5000, 10, 0.0729, 0.0749, 0.0548, 0.0224),
    (7000, 10, 0.0616, 0.0630, 0.0463, 0.0189),
    (10000, 10, 0.0515, 0.0525, 0.0387, 0.0158),
    (20000, 22, 0.0579, 0.0590, 0.0406, 0.0166),
]


@pytest.mark.parametrize(("n", "b", "thm3", "cor1", "eps1", "ece"), BOUND_TABLE)
def test_calculator_matches_the_bound_table(n, b, thm3, cor1, eps1, ece):
    r = guarantee_calculator(n, b, 0.1)
    assert_allclose(r.epsilon_conditional, thm3, atol=5e-5)
    assert_allclose(r.epsilon_zadrozny_elkan, cor1, atol=5e-5)
    assert_allclose(r.epsilon_marginal, eps1, atol=5e-5)
    assert_allclose(r.expected_ece, ece, atol=5e-5)
    # the existing Eq. (8) function agrees exactly
    assert r.epsilon_conditional == guarantee_epsilon(n, b, 0.1)
    assert r.min_bin_labels == n // b - 1


def test_paper_claims():
    assert_allclose(guarantee_epsilon(2900, 10, 0.1, kind="zadrozny-elkan"), 0.09919, atol=5e-6)
    assert_allclose(guarantee_epsilon(2900, 10, 0.1), 0.09574, atol=5e-6)
    assert_allclose(guarantee_epsilon(1500, 10, 0.1, kind="marginal"), 0.10026, atol=5e-6)
    assert_allclose(guarantee_epsilon(1510, 10, 0.1, kind="marginal"), 0.09993, atol=5e-6)
    # Figure 2's examples: n = 1K, B = 5; 5K, 10; 20K, 22
    assert_allclose(
        [guarantee_epsilon(1000, 5), guarantee_epsilon(5000, 10), guarantee_epsilon(20000, 22)],
        [0.1076, 0.0729, 0.0579],
        atol=5e-5,
    )
    assert guarantee_epsilon(30, 20) == np.inf and expected_ece_bound(30, 20) == np.inf
    assert guarantee_epsilon(1000, 10, delta=0.01) == pytest.approx(0.1636 + 0.01, abs=5e-5)


# digest §3.7: ε, α, B -> n_min (Thm 3, Cor 1, Thm 4 marginal)
N_MIN_TABLE = [
    (0.1, 0.1, 10, 2660, 2860, 1510),
    (0.1, 0.1, 5, 1160, 1255, 755),
    (0.05, 0.1, 10, 10610, 11010, 6010),
    (0.1, 0.05, 10, 3010, 3210, 1860),
    (0.1, 0.01, 10, 3820, 4010, 2660),
    (0.05, 0.01, 10, 15220, 15610, 10610),
    (0.05, 0.1, 20, 24000, 24780, 12020),
]


@pytest.mark.parametrize(("eps", "alpha", "b", "thm3", "cor1", "marg"), N_MIN_TABLE)
def test_n_needed_table(eps, alpha, b, thm3, cor1, marg):
    assert n_needed(eps, b, alpha) == thm3
    assert n_needed(eps, b, alpha, kind="zadrozny-elkan") == cor1
    assert n_needed(eps, b, alpha, kind="marginal") == marg
    for kind, n in (("conditional", thm3), ("zadrozny-elkan", cor1), ("marginal", marg)):
        # minimal: the guarantee holds at n and fails one multiple of B below
        assert guarantee_epsilon(n, b, alpha, kind=kind) <= eps
        assert guarantee_epsilon(n - b, b, alpha, kind=kind) > eps
    assert n_needed(0.01, 10, 0.1, delta=0.01) is None


# digest §3.7, α = 0.1: n -> largest B (Thm 3 at ε = 0.1, 0.05; Thm 4 marginal at 0.1, 0.05)
B_MAX_TABLE = [
    (500, 2, None, 3, None),
    (1000, 4, 1, 6, 1),
    (2000, 7, 2, 13, 3),
    (3000, 11, 3, 19, 4),
    (5000, 17, 5, 33, 8),
    (7000, 22, 7, 46, 11),
    (10000, 30, 9, 66, 16),
    (20000, 56, 17, 132, 33),
]


@pytest.mark.parametrize(("n", "c10", "c05", "m10", "m05"), B_MAX_TABLE)
def test_largest_bins_table(n, c10, c05, m10, m05):
    assert largest_bins(n, 0.1) == c10 == largest_bins(n, 0.1, max_bins=1000)
    assert largest_bins(n, 0.05) == c05 == largest_bins(n, 0.05, max_bins=1000)
    assert largest_bins(n, 0.1, kind="marginal") == m10
    assert largest_bins(n, 0.05, kind="marginal") == m05


def test_calculator_report_and_orderings():
    r = guarantee_calculator(5000, 10, 0.1, epsilon=0.08)
    assert r.valid
    assert r.n_needed_conditional == n_needed(0.08, 10, 0.1)
    assert r.largest_bins_marginal == largest_bins(5000, 0.08, kind="marginal")
    assert r.epsilon_marginal < r.epsilon_conditional < r.epsilon_zadrozny_elkan
    curve = r.epsilon_versus_n()
    assert set(curve.guarantee) == {"conditional", "marginal", "zadrozny-elkan"}
    cond = curve[curve.guarantee == "conditional"]
    assert cond.n.min() == 20 and np.isfinite(cond.epsilon).all()
    assert (np.diff(cond.epsilon.to_numpy()) <= 1e-15).all()  # non-increasing in n
    # ε increases with B at fixed n (scan) and the vectorised table agrees with the scalar
    eps_b = epsilon_table(3000, np.arange(1, 100))
    assert (np.diff(eps_b) >= -1e-15).all()
    assert_allclose(eps_b[9], guarantee_epsilon(3000, 10))
    bad = guarantee_calculator(15, 10, 0.1)
    assert not bad.valid and bad.epsilon_conditional == np.inf and bad.min_bin_labels == 0
    with pytest.raises(ConfigError, match="α"):
        guarantee_calculator(100, 2, 1.5)
    with pytest.raises(ConfigError, match="target ε"):
        guarantee_calculator(100, 2, 0.1, epsilon=0)


def test_figures_are_built_from_the_result(umd_result):
    from core.figures import (
        bin_validity_figure,
        epsilon_versus_n_figure,
        validity_figure,
    )

    fig = validity_figure(umd_result)
    names = [t.name for t in fig.data if t.name]
    assert any(n.startswith("Marginal") for n in names)
    assert {"Theory, marginal", "Theory, conditional"} <= set(names)
    theory = next(t for t in fig.data if t.name == "Theory, marginal")
    assert theory.line.dash == "dash"
    assert_allclose(np.asarray(theory.y), umd_result.theory_marginal)
    assert len(validity_figure(umd_result, show_conditional=False).data) < len(fig.data)
    bins = bin_validity_figure(umd_result)
    points = next(t for t in bins.data if t.mode == "markers")
    assert_allclose(np.asarray(points.y), umd_result.bins["mean_label"])
    calc = epsilon_versus_n_figure(guarantee_calculator(1000, 10))
    assert len(calc.data) == 3 and calc.layout.xaxis.type == "log"


def test_oracle_validity_of_umd_dominates_the_theory_curves():
    # digest §4.8 / V8: S ~ U(0, 1) and E[Y | S] = 0.5, so every bin's true mean is 0.5 and the
    # oracle validity of one fit is Σ_b Q(bin b)·1{|0.5 − Π̂_b| ≤ ε}, Q(bin b) = its width
    from core.recalibration import make_recalibrator

    rng = np.random.default_rng(8)
    n, b, reps = 1000, 10, 300
    eps = np.array([0.05, 0.08, 0.10, guarantee_epsilon(n, b, 0.1)])
    v = np.empty((reps, eps.size))
    vc = np.empty_like(v)
    for r in range(reps):
        s = rng.uniform(size=n)
        y = (rng.uniform(size=n) < 0.5).astype(int)
        fit = make_recalibrator("histogram-umd", n_bins=b, seed=r).fit(s, y)
        comp = fit.fitted_params.values["components"][0]
        mass = np.diff(np.r_[0.0, comp["edges"], 1.0])
        d = np.abs(0.5 - np.asarray(comp["values"]))
        v[r] = ((d[:, None] <= eps) * mass[:, None]).sum(axis=0)
        vc[r] = d.max() <= eps
    # the digest's 2,000-replicate values: marginal .687/.894/.958, conditional .023/.327/.649,
    # and coverage 0.986 of Theorem 3's ε; tolerances are about 3 standard errors at 300
    assert_allclose(v.mean(axis=0)[:3], [0.687, 0.894, 0.958], atol=0.03)
    assert_allclose(vc.mean(axis=0)[:3], [0.023, 0.327, 0.649], atol=0.08)
    assert vc.mean(axis=0)[3] >= 0.9
    assert (v.mean(axis=0) >= theory_validity(eps, n, b) - 1e-12).all()
    assert (vc.mean(axis=0) >= theory_validity(eps, n, b, kind="conditional") - 1e-12).all()


CIFAR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cifar10-14-networks"


@pytest.mark.data
def test_cifar_network_top_label_validity():
    if not (CIFAR / "resnet18.csv").is_file():
        pytest.skip(f"CIFAR-10 predictions not found at {CIFAR}")
    from core.data import load_predictions

    pred = load_predictions(CIFAR / "resnet18.csv", labels=CIFAR / "labels.csv")
    r = validity_curves(pred, lens="top-label", n_bins=15, n_resamples=20, seed=0)
    raw = calibration_error(pred.probs, pred.labels, lens="top-label", n_bins=15).value
    # an over-confident network: UMD on 5,000 rows removes most of its top-label ECE
    assert raw > 0.04
    assert r.ece_mean < raw / 2
    assert r.auc_identity_holds
    at = np.searchsorted(r.eps, [0.05, 0.10])
    assert (r.marginal_mean[at] >= r.theory_marginal[at]).all()
