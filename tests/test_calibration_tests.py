"""Calibration tests: bounds, asymptotic, bootstrap, block, consistency, HL, Spiegelhalter."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import core
import core.analyses.calibration_tests as ct
import core.analyses.calibration_tests.classical as tc
from core.base.errors import ConfigError, EstimationError
from core.estimators import ESTIMATORS
from core.estimators import kernel as kern
from core.worlds import DirichletWorld

M1 = DirichletWorld(10, 0.1, 0.0)
M2 = DirichletWorld(10, 0.1, 0.5, "first")
M3 = DirichletWorld(10, 0.1, 1.0)

ALL_TESTS = {
    "skce-bound-b",
    "skce-bound-uq",
    "skce-bound-ul",
    "skce-ul-asymptotic",
    "skce-uq-bootstrap",
    "skce-block",
    "consistency",
    "hosmer-lemeshow",
    "spiegelhalter",
}


def _naive_h(p, y, nu):
    d = 0.5 * np.abs(p[:, None, :] - p[None, :, :]).sum(-1)
    e = kern.residuals(p, y)
    return np.exp(-d / nu) * (e @ e.T)


def test_registry_names():
    assert set(ct.TESTS.names()) == ALL_TESTS
    assert core.TESTS is ct.TESTS
    assert core.calibration_test is ct.calibration_test


# --------------------------------------------------------------- formulas by hand


def test_bound_formulas():
    # SKCE_b: s = √(n t / B) − 1 = √(100·0.08/2) − 1 = 1, p = exp(−½)
    assert ct.bound_biased(0.08, 100, 2.0) == pytest.approx(np.exp(-0.5), rel=1e-15)
    assert ct.bound_biased(0.01, 100, 2.0) == 1.0  # below (B/n): s clipped at 0
    # unbiased: exp(−⌊n/2⌋ t²/(2B²)) = exp(−50·0.04/8)
    assert ct.bound_unbiased(0.2, 101, 2.0) == pytest.approx(np.exp(-0.25), rel=1e-15)
    assert ct.bound_unbiased(-0.2, 101, 2.0) == 1.0
    assert ct.bound_unbiased(-0.2, 101, 2.0, clip_negative=False) == pytest.approx(np.exp(-0.25))


def test_conservative_pvalue_counts_ties():
    pv, se, hits = ct.conservative_pvalue(np.array([1.0, 2.0, 3.0, 0.5]), 2.0)
    assert hits == 2
    assert pv == pytest.approx(3 / 5)
    assert se == pytest.approx(np.sqrt(0.6 * 0.4 / 4))
    pv0, _, hits0 = ct.conservative_pvalue(np.zeros(999), 1.0)
    assert hits0 == 0 and pv0 == pytest.approx(1e-3)  # never exactly 0


def test_linear_asymptotic_by_hand():
    p, y = M3.sample(101, 4)
    r = core.calibration_test(p, y, test="skce-ul-asymptotic")
    nu = kern.median_bandwidth(p)
    h = _naive_h(p, y, nu)
    terms = np.array([h[2 * i, 2 * i + 1] for i in range(50)])
    z = np.sqrt(50) * terms.mean() / terms.std()
    assert r.statistic == pytest.approx(terms.mean(), rel=1e-12)
    assert r.pvalue == pytest.approx(stats.norm.sf(z), rel=1e-10)
    assert r.details["n_pairs"] == 50 and not r.pvalue_is_bound


def test_block_test_by_hand():
    p, y = M2.sample(200, 8)
    r = core.calibration_test(p, y, test="skce-block", block_size=10)
    h = _naive_h(p, y, kern.median_bandwidth(p))
    x = np.array(
        [
            (h[b : b + 10, b : b + 10].sum() - np.trace(h[b : b + 10, b : b + 10])) / 90
            for b in range(0, 200, 10)
        ]
    )
    se = x.std(ddof=1) / np.sqrt(20)
    assert r.statistic == pytest.approx(x.mean(), rel=1e-12)
    assert r.pvalue == pytest.approx(stats.norm.sf(x.mean() / se), rel=1e-9)
    assert r.confidence_interval[0] == pytest.approx(max(0, x.mean() - 1.6448536269514722 * se))
    with pytest.raises(EstimationError, match="two blocks"):
        core.calibration_test(p, y, test="skce-block", block_size=150)


def test_bootstrap_statistic_matches_both_published_forms(monkeypatch):
    monkeypatch.setattr(kern, "TILE_ROWS", 6)
    monkeypatch.setattr(kern, "TILE_COLS", 11)
    n, r = 40, 25
    p, y = M2.sample(n, 9)
    nu = kern.median_bandwidth(p)
    spec = kern.KernelSpec("laplacian", "tv", nu)
    t_prime, s, uq, b = ct.skce_uq_bootstrap_null(
        p, y, spec, n_resamples=r, rng=np.random.default_rng(5)
    )
    h = _naive_h(p, y, nu)
    skce_b = h.sum() / n**2
    assert b == pytest.approx(skce_b, rel=1e-12)
    assert uq == pytest.approx((h.sum() - np.trace(h)) / (n * (n - 1)), rel=1e-12)
    assert s == pytest.approx(n / (n - 1) * uq - skce_b, rel=1e-12)
    idx = np.random.default_rng(5).integers(0, n, size=(r, n))
    for k in range(r):
        a = idx[k]
        # count form: (1/n²) Σ_i C_i Σ_j [(n/(n−1))(C_j − δ_ij) − 2] h_ij
        c = np.bincount(a, minlength=n).astype(float)
        w = n / (n - 1) * (c[None, :] - np.eye(n)) - 2.0
        assert t_prime[k] == pytest.approx((c[:, None] * w * h).sum() / n**2, abs=1e-13)
        # Arcones–Giné form: T* = (2/n) Σ_{i<j} [h*_ij − h̄*_i· − h̄*_·j + h̄]
        hs = h[np.ix_(a, a)] - h[a].mean(1)[:, None] - h[:, a].mean(0)[None, :] + h.mean()
        t_star = 2.0 / n * np.triu(hs, 1).sum()
        assert t_star / (n - 1) == pytest.approx(t_prime[k] + skce_b, abs=1e-13)


def test_bootstrap_result_fields():
    p, y = M1.sample(150, 1)
    r = core.calibration_test(p, y, test="skce-uq-bootstrap", n_resamples=300, seed=3)
    again = core.calibration_test(p, y, test="skce-uq-bootstrap", n_resamples=300, seed=3)
    assert r.pvalue == again.pvalue  # seeded
    assert r.null_distribution.shape == (300,)
    # the null is on the SKCE_uq scale: the same exceedances up to rounding at the boundary
    hits = int(np.count_nonzero(r.null_distribution >= r.statistic))
    assert abs(r.details["exceedances"] - hits) <= 1
    assert r.pvalue == pytest.approx((1 + r.details["exceedances"]) / 301)
    assert r.mc_error == pytest.approx(np.sqrt(r.pvalue * (1 - r.pvalue) / 300))
    assert r.statistic == pytest.approx(
        core.calibration_error(p, y, estimator="skce-uq", lens="canonical").value, rel=1e-12
    )


def test_hosmer_lemeshow_by_hand():
    rng = np.random.default_rng(3)
    s = rng.uniform(0.05, 0.95, 200)
    y = (rng.random(200) < s**1.3).astype(int)
    r = core.calibration_test(s, y, test="hosmer-lemeshow", n_groups=5)
    order = np.argsort(s, kind="stable")
    stat = 0.0
    for g in np.split(order, 5):  # 40 rows each: the equal-mass bins
        e, o, m = s[g].sum(), y[g].sum(), g.size
        stat += (o - e) ** 2 / (e * (1 - e / m))
    assert r.statistic == pytest.approx(stat, rel=1e-12)
    assert r.pvalue == pytest.approx(stats.chi2.sf(stat, 5), rel=1e-12)
    fitted = core.calibration_test(s, y, test="hosmer-lemeshow", n_groups=5, fitted=True)
    assert fitted.details["dof"] == 3
    assert fitted.pvalue == pytest.approx(stats.chi2.sf(stat, 3), rel=1e-12)


def test_hosmer_lemeshow_refuses_too_few_expected_counts():
    # 12 rows in 10 groups: about one row per group, expected counts far below 1
    rng = np.random.default_rng(5)
    s = rng.uniform(0.2, 0.8, 12)
    y = (rng.random(12) < s).astype(int)
    with pytest.raises(EstimationError, match="not applicable: too few expected counts"):
        core.calibration_test(s, y, test="hosmer-lemeshow")
    # the message names a number of groups that works, and it does
    with pytest.raises(EstimationError, match=r"n_groups=(\d+)") as info:
        core.calibration_test(s, y, test="hosmer-lemeshow")
    import re

    g = int(re.search(r"n_groups=(\d+)", str(info.value)).group(1))
    r = core.calibration_test(s, y, test="hosmer-lemeshow", n_groups=g)
    assert np.all(r.details["expected"] >= 1) and np.all(
        r.details["group_counts"] - r.details["expected"] >= 1
    )
    # the boundary: exactly 1 expected non-event in a group passes, just below refuses
    s_ok = np.array([0.5, 0.5, 0.5, 0.5])  # one group: 2 expected of each
    assert core.calibration_test(s_ok, [0, 1, 0, 1], test="hosmer-lemeshow", n_groups=1).pvalue >= 0
    s_low = np.array([0.9, 0.9, 0.95, 0.99])  # expects 0.26 non-events
    with pytest.raises(EstimationError, match="too few expected counts"):
        core.calibration_test(s_low, [1, 1, 1, 0], test="hosmer-lemeshow", n_groups=1)


def test_suite_reports_hosmer_lemeshow_as_not_applicable():
    rng = np.random.default_rng(6)
    p = rng.dirichlet(np.full(10, 0.1), 60)  # six confident rows per group
    y = np.array([rng.choice(10, p=row) for row in p])
    suite = ct.run_tests((p, y), tests=["hosmer-lemeshow", "spiegelhalter"])
    assert "too few expected counts" in suite.skipped["hosmer-lemeshow"]
    assert [r.test for r in suite.results] == ["spiegelhalter"]


def test_spiegelhalter_by_hand():
    s = np.array([0.1, 0.4, 0.7, 0.9, 0.3])
    y = np.array([0, 1, 1, 1, 0])
    num = ((y - s) * (1 - 2 * s)).sum()
    den = np.sqrt(((1 - 2 * s) ** 2 * s * (1 - s)).sum())
    r = core.calibration_test(s, y, test="spiegelhalter")
    assert r.lens == "binary"
    assert r.statistic == pytest.approx(num / den, rel=1e-14)
    assert r.pvalue == pytest.approx(2 * stats.norm.sf(abs(num / den)), rel=1e-12)
    with pytest.raises(EstimationError):
        core.calibration_test([0.5, 0.5, 1.0], [0, 1, 1], test="spiegelhalter")


# --------------------------------------------------------------- consistency resampling


def test_consistency_runs_for_every_lp_estimator():
    p, y = M3.sample(120, 2)
    for name in ESTIMATORS.names(lp_scale=True):  # binned and smooth
        entry = ESTIMATORS.get(name)
        binning = (
            "equal-mass"
            if "equal-width" not in (entry.binnings or ("equal-width",))
            else "equal-width"
        )
        norm = 2 if entry.norms is not None and 1.0 not in entry.norms else 1
        r = core.calibration_test(
            p,
            y,
            test="consistency",
            estimator=name,
            n_resamples=20,
            binning=binning,
            norm=norm,
            seed=1,
        )
        want = core.calibration_error(p, y, estimator=name, binning=binning, norm=norm).value
        assert r.statistic == pytest.approx(want)
        assert r.null_distribution.shape == (20,)
        assert 1 / 21 <= r.pvalue <= 1
    with pytest.raises(ConfigError, match="binned or smooth"):
        core.calibration_test(p, y, test="consistency", estimator="skce-uq")


def test_consistency_fast_path_matches_generic_path(monkeypatch):
    p, y = M1.sample(300, 5)
    fast = core.calibration_test(p, y, test="consistency", n_bins=10, n_resamples=2000, seed=1)
    assert fast.details["vectorised"]
    monkeypatch.setattr(tc, "BINARY_TEST_LENSES", ())
    slow = core.calibration_test(p, y, test="consistency", n_bins=10, n_resamples=600, seed=2)
    assert not slow.details["vectorised"]
    assert fast.statistic == slow.statistic
    # same null law: two-sample KS does not reject, means agree within MC error
    assert stats.ks_2samp(fast.null_distribution, slow.null_distribution).pvalue > 1e-3
    se = np.hypot(
        fast.null_distribution.std() / np.sqrt(2000), slow.null_distribution.std() / np.sqrt(600)
    )
    assert abs(fast.null_distribution.mean() - slow.null_distribution.mean()) < 4 * se


def test_resampled_labels_follow_the_predictions():
    rng = np.random.default_rng(0)
    p = np.array([[0.2, 0.5, 0.3]])
    rows = np.zeros(200_000, dtype=np.int64)
    y = tc._resampled_labels(np.cumsum(p, axis=1).T.copy(), rows, rng)
    freq = np.bincount(y, minlength=3) / y.size
    np.testing.assert_allclose(freq, p[0], atol=4 * np.sqrt(0.25 / y.size))


@pytest.mark.parametrize("k", [2, 3, 10])
def test_resampled_labels_are_the_inverse_cdf_of_each_row(k):
    # class by class, the draw is the row-wise inverse CDF: the same labels from the same
    # uniforms as counting the cumulative sums at or below u · total, capped at K − 1
    rng = np.random.default_rng(k)
    p = rng.dirichlet(np.full(k, 0.3), 500)
    p[:3] = np.eye(k)[0]  # rows with zeros, where u · total can meet a cumulative sum
    cdf = np.cumsum(p, axis=1)
    rows = rng.integers(0, 500, 20_000)
    got = tc._resampled_labels(cdf.T.copy(), rows, np.random.default_rng(1))
    u = np.random.default_rng(1).random(rows.size)[:, None] * cdf[rows, -1:]
    want = np.minimum((u >= cdf[rows]).sum(axis=1), k - 1)
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------- validation


def test_bad_requests_raise_typed_errors():
    p, y = M1.sample(50, 0)
    with pytest.raises(ConfigError, match="Unknown calibration test"):
        core.calibration_test(p, y, test="t-test")
    with pytest.raises(ConfigError, match="lens"):
        core.calibration_test(p, y, test="skce-ul-asymptotic", lens="classwise")
    with pytest.raises(ConfigError, match="no option"):
        core.calibration_test(p, y, test="spiegelhalter", n_bins=3)
    with pytest.raises(ConfigError, match="n_resamples"):
        core.calibration_test(p, y, test="skce-uq-bootstrap", n_resamples=0)
    with pytest.raises(EstimationError, match="at least 4"):
        core.calibration_test(p[:3], y[:3], test="skce-bound-b")
    with pytest.raises(EstimationError, match="max_exact_n"):
        core.calibration_test(p, y, test="skce-uq-bootstrap", max_exact_n=40)


def test_kernel_tests_on_top_label_lens():
    p, y = M2.sample(200, 3)
    r = core.calibration_test(p, y, test="skce-ul-asymptotic", lens="top-label")
    want = core.calibration_error(p, y, estimator="skce-ul", lens="top-label").value
    assert r.statistic == pytest.approx(want)
    assert r.lens == "top-label"


def test_simulation_table_shape():
    sim = ct.simulate_test_errors(
        ["skce-ul-asymptotic", "spiegelhalter"], M1.sample, n=60, n_resamples=5, seed=0
    )
    df = sim.to_frame()
    assert set(df["test"]) == {"skce-ul-asymptotic", "spiegelhalter"}
    assert len(df) == 2 * 101
    assert df.loc[df["alpha"] == 1.0, "error"].eq(1.0).all()  # type I at α = 1


# --------------------------------------------------------------- size and power (slow)

UNIFORM_UNDER_NULL = [
    "skce-ul-asymptotic",
    "skce-uq-bootstrap",
    "skce-block",
    "consistency",
    "spiegelhalter",
]
OPTS = {
    "skce-uq-bootstrap": {"n_resamples": 200},
    "consistency": {"n_resamples": 200, "n_bins": 10},
}


@pytest.mark.slow
def test_pvalues_are_uniform_under_a_calibrated_model():
    bounds = ["skce-bound-b", "skce-bound-uq", "skce-bound-ul"]
    sim = ct.simulate_test_errors(
        UNIFORM_UNDER_NULL + bounds, M1.sample, n=250, n_resamples=200, seed=11, test_options=OPTS
    )
    for name in UNIFORM_UNDER_NULL:
        pv = sim.pvalues[name]
        for alpha, lo, hi in ((0.05, 0.01, 0.10), (0.2, 0.12, 0.28), (0.5, 0.40, 0.60)):
            rate = float((pv <= alpha).mean())
            assert lo <= rate <= hi, (name, alpha, rate)
    for name in bounds:  # valid but conservative: they never reject a calibrated model
        assert (sim.pvalues[name] <= 0.5).mean() == 0.0
    # Hosmer–Lemeshow on 250 confident top-label rows: too few expected non-events in the
    # top groups, so it is refused (NaN, counted) rather than given a χ² p-value
    hl = ct.simulate_test_errors(["hosmer-lemeshow"], M1.sample, n=250, n_resamples=20, seed=11)
    assert hl.not_applicable["hosmer-lemeshow"] == np.isnan(hl.pvalues["hosmer-lemeshow"]).sum() > 0


@pytest.mark.slow
def test_pvalues_concentrate_near_zero_when_miscalibrated():
    tests = UNIFORM_UNDER_NULL + ["skce-bound-b"]
    sim = ct.simulate_test_errors(
        tests, M2.sample, n=250, n_resamples=40, calibrated=False, seed=12, test_options=OPTS
    )
    for name in UNIFORM_UNDER_NULL:
        assert np.median(sim.pvalues[name]) < 0.01, name
    # D_b has some power on M2 (paper: type II 0.37 at α = 0.05); the others are bounds near 1
    assert 0.1 < (sim.pvalues["skce-bound-b"] > 0.05).mean() < 0.8


@pytest.mark.slow
def test_paper_figure2_type_ii_errors():
    # Widmann et al. (2019) Fig. 2: A_l on M3 type II 0.8146 at α = 0.05 (±4 MC SE)
    sim = ct.simulate_test_errors(
        ["skce-ul-asymptotic"], M3.sample, n=250, n_resamples=800, calibrated=False, seed=13
    )
    err = float((sim.pvalues["skce-ul-asymptotic"] > 0.05).mean())
    assert abs(err - 0.8146) < 4 * np.sqrt(0.8146 * 0.1854 / 800)


def test_low_power_and_vacuous_tests_say_so_beside_their_p_values():
    from core.analyses.calibration_tests import TESTS, calibration_test

    rng = np.random.default_rng(12)
    p = rng.uniform(0.05, 0.95, 300)
    y = (rng.uniform(size=300) < p).astype(int)
    bound = calibration_test(p, y, test="skce-bound-b", lens="binary")
    assert bound.pvalue == 1.0 and bound.caveat.startswith("Vacuous here")
    linear = calibration_test(p, y, test="skce-ul-asymptotic", lens="binary")
    assert linear.caveat == TESTS.get("skce-ul-asymptotic").power and "Low power" in linear.caveat
    block = calibration_test(p, y, test="skce-block", lens="binary")
    assert block.caveat == ""
    # only the tests with a stated weakness carry one
    assert {t.name for t in TESTS if t.power} == {
        "skce-bound-b", "skce-bound-uq", "skce-bound-ul", "skce-ul-asymptotic"
    }  # fmt: skip


def test_the_headline_test_has_power_on_a_visibly_miscalibrated_model():
    from core.analyses.calibration_tests import calibration_test
    from core.report import DEFAULT_TEST

    rng = np.random.default_rng(13)
    p = rng.uniform(0.05, 0.95, 4000)
    y = (rng.uniform(size=4000) < np.clip(p - 0.06, 0, 1)).astype(int)  # ECE ≈ 0.06
    assert DEFAULT_TEST == "skce-block"
    assert calibration_test(p, y, test=DEFAULT_TEST).pvalue < 1e-3
