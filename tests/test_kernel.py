"""Kernel calibration error: SKCE_b/uq/ul/block, MMCE and the median heuristic."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import core
from core.base.errors import ConfigError, EstimationError
from core.estimators import ESTIMATORS
from core.estimators import kernel as kern
from core.worlds import DirichletWorld

ROOT = Path(__file__).resolve().parents[1]
CIFAR = ROOT.parent / "shared" / "data" / "cifar10-14-networks"


def _naive_h(p, y, kernel="laplacian", metric="tv", nu=1.0):
    """h_ij in the Julia form κ·(1{y=ỹ} − p̃_y − p_ỹ + ⟨p, p̃⟩), one pair at a time."""
    n = len(y)
    h = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            diff = p[i] - p[j]
            if metric == "tv":
                d = 0.5 * np.abs(diff).sum()
            elif metric == "l1":
                d = np.abs(diff).sum()
            else:
                d = np.sqrt((diff**2).sum())
            k = np.exp(-d / nu) if kernel == "laplacian" else np.exp(-(d**2) / (2 * nu**2))
            h[i, j] = k * ((y[i] == y[j]) - p[j][y[i]] - p[i][y[j]] + p[i] @ p[j])
    return h


def _sample(n=60, k=4, seed=0, a=0.5):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, a), n)
    y = rng.integers(0, k, n)
    return p, y


@pytest.fixture
def small_tiles(monkeypatch):
    # tiles that do not divide n exercise the edges of the symmetric tiling
    monkeypatch.setattr(kern, "TILE_ROWS", 7)
    monkeypatch.setattr(kern, "TILE_COLS", 13)
    monkeypatch.setattr(kern, "COUNT_TILE_ROWS", 5)
    kern._SUM_CACHE.clear()
    kern._MEDIAN_CACHE.clear()
    yield
    kern._SUM_CACHE.clear()
    kern._MEDIAN_CACHE.clear()


# --------------------------------------------------------------- closed-form small cases


@pytest.mark.parametrize(
    ("labels", "biased", "unbiased"),
    [
        ([0, 1], 0.0, 0.0),
        ([0, 0], 0.5, 0.0),
        ([1, 0], 1 - np.exp(-1), -2 * np.exp(-1)),
        ([1, 1], 0.5, 0.0),
    ],
)
def test_two_point_cases_match_closed_forms(labels, biased, unbiased):
    # predictions e1, e2 with exp(−‖p − q‖²/2): the reference's §8.6 targets
    p = np.array([[1.0, 0.0], [0.0, 1.0]])
    opts = {"kernel": "gaussian", "metric": "l2", "bandwidth": 1.0}
    b = core.calibration_error(p, labels, estimator="skce-b", lens="canonical", **opts)
    uq = core.calibration_error(p, labels, estimator="skce-uq", lens="canonical", **opts)
    ul = core.calibration_error(p, labels, estimator="skce-ul", lens="canonical", **opts)
    assert b.value == pytest.approx(biased, abs=1e-15)
    assert uq.value == pytest.approx(unbiased, abs=1e-15)
    assert ul.value == pytest.approx(unbiased, abs=1e-15)
    # ten copies: blocks of two are the same pair again
    p10, y10 = np.tile(p, (10, 1)), np.tile(labels, 10)
    blk = core.calibration_error(
        p10, y10, estimator="skce-block", lens="canonical", block_size=2, **opts
    )
    assert blk.value == pytest.approx(unbiased, abs=1e-15)


@pytest.mark.parametrize("kernel", ["laplacian", "gaussian"])
@pytest.mark.parametrize("metric", ["tv", "l1", "l2"])
def test_tiled_sums_equal_naive_double_loop(small_tiles, kernel, metric):
    p, y = _sample(n=47, k=3)
    h = _naive_h(p, y, kernel, metric, nu=0.7)
    spec = kern.KernelSpec(kernel, metric, 0.7)
    total, trace = kern.h_sums(p, y, spec)
    assert total == pytest.approx(h.sum(), rel=1e-12)
    assert trace == pytest.approx(np.trace(h), rel=1e-12)
    terms = kern.pair_terms(p, y, spec)
    np.testing.assert_allclose(terms, [h[2 * i, 2 * i + 1] for i in range(23)], rtol=1e-12)


def test_estimators_from_h_matrix():
    p, y = _sample(n=31, k=5, seed=3)
    nu = kern.median_bandwidth(p)
    h = _naive_h(p, y, nu=nu)
    n = len(y)
    got = {
        e: core.calibration_error(p, y, estimator=e, lens="canonical").value
        for e in ("skce-b", "skce-uq", "skce-ul")
    }
    assert got["skce-b"] == pytest.approx(h.sum() / n**2, rel=1e-12)
    assert got["skce-uq"] == pytest.approx((h.sum() - np.trace(h)) / (n * (n - 1)), rel=1e-12)
    assert got["skce-ul"] == pytest.approx(np.mean([h[2 * i, 2 * i + 1] for i in range(15)]))
    # the exact identity SKCE_b = (1 − 1/n)·SKCE_uq + Σ‖e_i − p_i‖²/n²
    e = kern.residuals(p, y)
    assert got["skce-b"] == pytest.approx(
        (1 - 1 / n) * got["skce-uq"] + (e**2).sum() / n**2, rel=1e-12
    )


def _block_terms_by_broadcast(p, y, spec, bsz, unbiased=True):
    """Block estimates from the whole (blocks, B, B, K) array of differences at once."""
    nb = p.shape[0] // bsz
    pb = p[: nb * bsz].reshape(nb, bsz, -1)
    e = kern.residuals(p[: nb * bsz], y[: nb * bsz]).reshape(nb, bsz, -1)
    diff = pb[:, :, None, :] - pb[:, None, :, :]
    if spec.metric == "l2":
        d = np.sqrt((diff * diff).sum(axis=3))
    else:
        d = np.abs(diff).sum(axis=3) * (0.5 if spec.metric == "tv" else 1.0)
    h = spec.apply(d) * np.matmul(e, e.transpose(0, 2, 1))
    sums = h.sum(axis=(1, 2)) - (np.einsum("bii->b", h) if unbiased else 0.0)
    return sums / (bsz * (bsz - 1) if unbiased else bsz * bsz)


@pytest.mark.parametrize("metric", ["tv", "l1", "l2"])
@pytest.mark.parametrize("k", [2, 5])
@pytest.mark.parametrize("pairs", [1 << 18, 100])  # one block at a time, or many batched
def test_block_terms_equal_the_full_broadcast(monkeypatch, metric, k, pairs):
    # the kernel matrices are built one class at a time; with two classes every distance is
    # the same sum of two rounded terms, so the blocks agree to the bit
    monkeypatch.setattr(kern, "_BLOCK_PAIRS", pairs)
    p, y = _sample(n=403, k=k, seed=k)
    for kernel in ("laplacian", "gaussian"):
        spec = kern.KernelSpec(kernel, metric, 0.3)
        for bsz, unbiased in ((2, True), (7, False), (20, True), (131, True)):
            got = kern.block_terms(p, y, spec, bsz, unbiased=unbiased)
            want = _block_terms_by_broadcast(p, y, spec, bsz, unbiased)
            if k == 2:
                np.testing.assert_array_equal(got, want)
            else:
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_block_estimator_limits():
    p, y = _sample(n=40, k=3, seed=5)
    spec = kern.KernelSpec("laplacian", "tv", 0.5)
    total, trace = kern.h_sums(p, y, spec)
    n = 40
    assert kern.block_terms(p, y, spec, n).mean() == pytest.approx((total - trace) / (n * (n - 1)))
    assert kern.block_terms(p, y, spec, n, unbiased=False).mean() == pytest.approx(total / n**2)
    np.testing.assert_allclose(kern.block_terms(p, y, spec, 2), kern.pair_terms(p, y, spec))
    # an incomplete tail block is dropped
    h = _naive_h(p, y, nu=0.5)
    x = kern.block_terms(p, y, spec, 15)
    assert x.size == 2
    blk = h[15:30, 15:30]
    assert x[1] == pytest.approx((blk.sum() - np.trace(blk)) / (15 * 14), rel=1e-12)
    # the large-block path (per-block tiled sums) agrees with the batched one
    x_big = kern.block_terms(np.tile(p, (30, 1)), np.tile(y, 30), spec, 1200)
    x_small = kern.block_terms(np.tile(p, (30, 1)), np.tile(y, 30), spec, 1000)
    assert x_big.size == 1 and x_small.size == 1
    with pytest.raises(ConfigError, match="at least 2"):
        kern.block_terms(p, y, spec, 1)
    with pytest.raises(EstimationError, match="exceeds"):
        kern.block_terms(p, y, spec, 41)


# --------------------------------------------------------------- median heuristic


def _full_median(p, metric="tv"):
    return float(np.median(kern.pairwise_distances(p, metric=metric)))


@pytest.mark.parametrize("n", [2, 3, 10, 11, 50])
def test_median_matches_full_matrix_median(n):
    p, _ = _sample(n=n, k=4, seed=n)
    assert kern.median_bandwidth(p) == _full_median(p)
    d = kern.pairwise_distances(p)
    assert kern.median_bandwidth(p, variant="median-offdiagonal") == float(
        np.median(d[np.triu_indices(n, 1)])
    )
    assert kern.median_bandwidth(p, metric="l2") == _full_median(p, "l2")


@pytest.mark.parametrize("discrete", [False, True])
def test_bracketed_selection_is_exact(small_tiles, monkeypatch, discrete):
    # force the sample-and-bracket path; the discrete case has massive ties at the median
    monkeypatch.setattr(kern, "EXACT_SELECT_MAX", 10)
    rng = np.random.default_rng(7)
    if discrete:
        p = np.eye(3)[rng.integers(0, 3, 301)]
        p[:40] = [0.5, 0.25, 0.25]
    else:
        p, _ = _sample(n=301, k=3, seed=7)
    for variant in ("median", "median-offdiagonal"):
        d = kern.pairwise_distances(p)
        want = float(np.median(d if variant == "median" else d[np.triu_indices(301, 1)]))
        assert kern.median_bandwidth(p, variant=variant) == want


def _near_ties(n=240, k=5, seed=3):
    # rows drawn from a few base rows, moved by ~1e-9: thousands of distances closer to one
    # another than float32 can tell apart (the float32 filter must hand them all to float64)
    rng = np.random.default_rng(seed)
    base = rng.dirichlet(np.ones(k), 4)
    p = base[rng.integers(0, 4, n)] + rng.normal(0.0, 1e-9, (n, k))
    return np.abs(p) / np.abs(p).sum(axis=1, keepdims=True)


@pytest.mark.parametrize("metric", ["tv", "l1", "l2"])
@pytest.mark.parametrize("case", ["dirichlet", "near-ties", "one-hot"])
def test_bracket_counts_equal_the_float64_tiles(small_tiles, metric, case):
    # the float32 filter of the bracket pass keeps every count and value of the float64 pass
    if case == "dirichlet":
        p, _ = _sample(n=131, k=10, seed=11)
    elif case == "near-ties":
        p = _near_ties()
    else:
        p = np.eye(4)[np.random.default_rng(2).integers(0, 4, 90)]
    d = kern.pairwise_distances(p, metric=metric)
    upper = np.sort(d[np.triu_indices(p.shape[0], 1)])
    for lo, hi in [
        (upper[len(upper) // 3], upper[2 * len(upper) // 3]),
        (upper[len(upper) // 2], upper[len(upper) // 2]),
        (-np.inf, upper[10]),
        (upper[-10], np.inf),
        (-np.inf, np.inf),
    ]:
        below, eq_lo, eq_hi, mid = kern._bracket(p, metric, lo, hi)
        assert below == np.count_nonzero(upper < lo)
        assert eq_lo == np.count_nonzero(upper == lo)
        assert eq_hi == (np.count_nonzero(upper == hi) if hi != lo else 0)
        np.testing.assert_array_equal(np.sort(mid), upper[(upper > lo) & (upper < hi)])


@pytest.mark.parametrize("metric", ["tv", "l1"])
def test_bracketed_median_of_near_ties_is_exact(small_tiles, monkeypatch, metric):
    monkeypatch.setattr(kern, "EXACT_SELECT_MAX", 10)
    p = _near_ties()
    for variant in ("median", "median-offdiagonal"):
        d = kern.pairwise_distances(p, metric=metric)
        want = float(np.median(d if variant == "median" else d[np.triu_indices(p.shape[0], 1)]))
        kern._MEDIAN_CACHE.clear()
        assert kern.median_bandwidth(p, metric=metric, variant=variant) == want


def _two_column_cases():
    rng = np.random.default_rng(21)
    yield rng.random(257)  # continuous
    yield rng.integers(0, 5, 300) / 4  # five values: massive ties at the median
    yield np.round(rng.beta(0.5, 0.5, 301), 2)  # ties and exact 0 and 1
    yield np.concatenate([np.full(150, 0.3), rng.random(3)])  # most pairs at distance 0


@pytest.mark.parametrize("metric", ["tv", "l1", "l2"])
@pytest.mark.parametrize("case", range(4))
def test_two_column_median_by_sorting_equals_brute_force(monkeypatch, metric, case):
    # [1 − s, s]: the distances grow along the sorted rows, so the median needs no n² pass;
    # a tiny selection limit forces the narrowing loop, and the tiled pass is refused
    s = list(_two_column_cases())[case]
    p = np.column_stack([1.0 - s, s])
    d = kern.pairwise_distances(p, metric=metric)
    upper = np.sort(d[np.triu_indices(s.shape[0], 1)])
    monkeypatch.setattr(kern, "EXACT_SELECT_MAX", 10)
    monkeypatch.setattr(kern, "_iter_tiles", None)
    for variant, want in (("median", np.median(d)), ("median-offdiagonal", np.median(upper))):
        kern._MEDIAN_CACHE.clear()
        assert kern.median_bandwidth(p, metric=metric, variant=variant) == float(want)
    columns = kern._opposite_columns(p)
    for rank in (1, 2, upper.shape[0] // 3, upper.shape[0] - 1, upper.shape[0]):
        assert kern._kth_pairs_sorted(*columns, rank, metric) == upper[rank - 1]


def test_two_columns_that_do_not_fall_take_the_tiled_selection(monkeypatch):
    # rows that sum to 1 only within the tolerance: the first column need not fall as the
    # second rises, and the sorted shortcut would be wrong
    rng = np.random.default_rng(5)
    s = rng.random(400)
    p = np.column_stack([1.0 - s + rng.uniform(-5e-5, 5e-5, 400), s])
    assert kern._opposite_columns(p) is None
    monkeypatch.setattr(kern, "EXACT_SELECT_MAX", 10)
    kern._MEDIAN_CACHE.clear()
    assert kern.median_bandwidth(p) == _full_median(p)


def test_bandwidth_errors():
    p = np.tile([[0.2, 0.8]], (10, 1))
    with pytest.raises(EstimationError, match="Every prediction is the same"):
        core.calibration_error(p, np.zeros(10, int), estimator="skce-uq", lens="canonical")
    with pytest.raises(ConfigError, match="positive number"):
        core.calibration_error(p, np.zeros(10, int), estimator="skce-uq", bandwidth=-1.0)
    with pytest.raises(ConfigError, match="Unknown kernel"):
        core.calibration_error(p, np.zeros(10, int), estimator="skce-uq", kernel="cosine")
    with pytest.raises(ConfigError, match="no option"):
        core.calibration_error(p, np.zeros(10, int), estimator="skce-uq", bins=3)
    with pytest.raises(ConfigError, match="no option"):
        core.calibration_error(p, np.zeros(10, int), estimator="skce-uq", block_size=3)
    with pytest.raises(ConfigError, match="precision"):
        core.calibration_error(p, np.zeros(10, int), estimator="skce-b", precision="half")


# --------------------------------------------------------------- lenses, MMCE, registry


def test_registered_with_metadata():
    for name in ("skce-b", "skce-uq", "skce-ul", "skce-block", "mmce"):
        entry = ESTIMATORS.get(name)
        assert entry.binned is False and entry.family == "kernel"
    assert "canonical" in ESTIMATORS.get("skce-uq").lenses
    assert set(ESTIMATORS.names(lenses="canonical")) >= {"skce-b", "skce-uq", "skce-ul"}


def test_one_dimensional_lenses_use_the_two_class_reduction():
    p, y = _sample(n=80, k=4, seed=11)
    conf, pred = p.max(1), p.argmax(1)
    reduced = np.column_stack([1 - conf, conf])
    correct = (pred == y).astype(int)
    for est in ("skce-b", "skce-uq", "skce-ul"):
        top = core.calibration_error(p, y, estimator=est, lens="top-label").value
        ref = core.calibration_error(reduced, correct, estimator=est, lens="canonical").value
        assert top == pytest.approx(ref, rel=1e-13)
    # binary lens of two-class data is the canonical lens
    p2, y2 = _sample(n=50, k=2, seed=2)
    for est in ("skce-b", "skce-uq"):
        assert core.calibration_error(p2, y2, estimator=est, lens="binary").value == pytest.approx(
            core.calibration_error(p2, y2, estimator=est, lens="canonical").value, rel=1e-13
        )
    # classwise: weighted mean of one-vs-rest components
    cw = core.calibration_error(p, y, estimator="skce-uq", lens="classwise")
    assert len(cw.components) == 4
    assert cw.value == pytest.approx(np.mean(cw.component_values))


def test_mmce_matches_kumar_v_statistic():
    p, y = _sample(n=70, k=5, seed=13, a=0.3)
    conf = p.max(1)
    r = (p.argmax(1) == y).astype(float)
    k = np.exp(-np.abs(conf[:, None] - conf[None, :]) / 0.4)  # exp(−2.5|c − c′|)
    resid = r - conf
    want = np.sqrt(resid @ k @ resid / 70**2)
    got = core.calibration_error(p, y, estimator="mmce")
    assert got.value == pytest.approx(want, rel=1e-12)
    n = 70
    unb = (resid @ k @ resid - resid @ resid) / (n * (n - 1))
    got_u = core.calibration_error(p, y, estimator="mmce", unbiased=True)
    assert got_u.details["squared_value"] == pytest.approx(unb, rel=1e-12)
    with pytest.raises(ConfigError):
        core.calibration_error(p, y, estimator="mmce", lens="classwise")


def test_quadratic_estimators_refuse_above_max_exact_n():
    p, y = _sample(n=120, k=3)
    with pytest.raises(EstimationError, match="skce-block"):
        core.calibration_error(p, y, estimator="skce-uq", lens="canonical", max_exact_n=100)
    # the linear and block estimators run, with the median on a subsample
    r = core.calibration_error(p, y, estimator="skce-ul", lens="canonical", max_exact_n=100)
    assert "subsample" in r.details["bandwidth_rule"]


def test_float32_fast_path_is_close():
    p, y = DirichletWorld(10, 0.1, 0.5, "first").sample(3000, 3)
    a = core.calibration_error(p, y, estimator="skce-uq", lens="canonical").value
    b = core.calibration_error(p, y, estimator="skce-uq", lens="canonical", precision="float32")
    assert b.value == pytest.approx(a, rel=1e-6)


def test_calibrated_vs_miscalibrated_worlds():
    p0, y0 = DirichletWorld(10, 0.1, 0.0).sample(1000, 1)
    p1, y1 = DirichletWorld(10, 0.1, 0.5, "first").sample(1000, 1)
    v0 = core.calibration_error(p0, y0, estimator="skce-uq", lens="canonical").value
    v1 = core.calibration_error(p1, y1, estimator="skce-uq", lens="canonical").value
    assert abs(v0) < 0.002 < 0.08 < v1 < 0.12  # M2's SKCE ≈ 0.0966 (paper Fig. 1)


def test_dirichlet_model_analytic_ece():
    # reference §6.1: π(m − 1)/m for β = e₁, π/(a B(a,(m−1)a))·((m−1)^(m−1)/m^m)^a for uniform β
    assert DirichletWorld(10, 0.1, 0.5, "first").true_canonical_ece() == pytest.approx(0.45)
    assert DirichletWorld(10, 0.1, 1.0).true_canonical_ece() == pytest.approx(0.7106418012290426)
    world = DirichletWorld(2, 1.0, 1.0)
    assert world.true_canonical_ece() == pytest.approx(0.25)
    # two classes: the canonical TV-ECE is the binary ECE, which fine bins estimate well here
    # (the calibration function is the constant ½ and ½ is a bin edge)
    p, y = world.sample(200_000, 8)
    est = core.calibration_error(p, y, estimator="plugin", lens="binary", n_bins=20).value
    assert est == pytest.approx(0.25, abs=0.005)


@pytest.mark.slow
def test_expected_biased_estimate_closed_form():
    # E[SKCE_b] = SKCE + (E‖e_Y − G‖² − SKCE)/n, E‖e_Y − G‖² = 1 − 2π/m + (2π − 1)(a+1)/(ma+1)
    n, reps = 250, 400
    rng = np.random.default_rng(2024)
    world = DirichletWorld(10, 0.1, 0.0)
    b = np.empty(reps)
    self_term = np.empty(reps)
    for i in range(reps):
        p, y = world.sample(n, rng)
        b[i] = core.calibration_error(p, y, estimator="skce-b", lens="canonical").value
        self_term[i] = (kern.residuals(p, y) ** 2).sum() / n
    expected = (1 - 0 + (0 - 1) * 1.1 / 2.0) / n  # π = 0: a(m − 1)/((ma + 1)n) = 0.0018
    assert expected == pytest.approx(0.0018)
    se = b.std(ddof=1) / np.sqrt(reps)
    assert abs(b.mean() - expected) < 4 * se
    assert self_term.mean() == pytest.approx(0.45, abs=4 * self_term.std() / np.sqrt(reps))


# --------------------------------------------------------------- published CIFAR-10 numbers

# Widmann et al. (2019) errors.csv / pvalues.csv (reference §7.5):
# SKCE_b, SKCE_uq, SKCE_ul, D_b, D_uq, D_l, A_l
PUBLISHED = {
    "densenet121": (0.000142002559372328, 0.00013014214272440307, -0.0003430021466092365, 1.0, 0.9999894144452068, 0.9999264711580163, 0.8392336627764565),
    "densenet161": (0.00014272947220676267, 0.00013149945349835864, 0.00011244829379661473, 1.0, 0.9999891924919826, 0.9999920971444917, 0.38098779853555964),
    "densenet169": (0.0001820865261048712, 0.00017015299185839356, -0.00023215322455860015, 1.0, 0.999981905138315, 0.9999663161175191, 0.7613732353394783),
    "googlenet": (2.7592939340390308e-5, 1.6866938444903805e-5, -0.00040512499082590194, 1.0, 0.999999822191508, 0.9998974263496668, 0.9004923987633002),
    "inception_v3": (0.00012210851834491422, 0.00011106783248135525, 2.256324136992012e-5, 1.0, 0.9999922899900897, 0.9999996818126374, 0.4618998124171072),
    "mobilenet_v2": (0.00020640480253504516, 0.0001910896662140579, -4.487736692275314e-5, 0.9998738282170366, 0.9999771782225871, 0.9999987412645035, 0.5393426329629679),
    "resnet_orig": (0.0004270270957049055, 0.0004090130412881255, 0.00040822068586501034, 0.8991031966754133, 0.9998954481734583, 0.9998958528434616, 0.2615614662693641),
    "resnet18": (0.00027614450993731235, 0.00026252405897488306, 0.00035654498042891024, 0.9847969855715155, 0.9999569266267215, 0.9999205504543641, 0.18345275330920863),
    "resnet34": (0.0003447239696609779, 0.000330021099736196, 0.00047220631519196283, 0.9522355099314682, 0.9999319311128724, 0.9998606479578309, 0.22437615305005182),
    "resnet50": (0.00022796536255913054, 0.00021464447472962088, 7.61802855394578e-5, 0.9977159258618147, 0.9999712052579941, 0.9999963728591376, 0.4399936191638935),
    "vgg11_bn": (0.0003148466249260927, 0.0002998205699904133, -0.0001504973287638866, 0.968088190298908, 0.9999438188443519, 0.9999858441964662, 0.6590293015066628),
    "vgg13_bn": (0.00017685929144851834, 0.00016542156467571262, -0.00021413018196180273, 1.0, 0.9999828974624627, 0.9999713430763506, 0.7485174457854726),
    "vgg16_bn": (0.0002739802404811663, 0.00026163310440876624, 0.00032180686830739517, 0.9855821322889875, 0.9999572184893283, 0.9999352773067978, 0.23457555968031643),
    "vgg19_bn": (0.00023777523612652696, 0.00022666083483397308, 0.00012673337303486157, 0.9959262181676113, 0.9999678910567233, 0.9999899617079835, 0.36204173030094355),
}  # fmt: skip


def _cifar(name):
    if not CIFAR.is_dir():
        pytest.skip(f"CIFAR-10 predictions not found at {CIFAR} (shared data folder absent)")
    probs = np.loadtxt(CIFAR / f"{name}.csv", delimiter=",", dtype=np.float64)
    labels = np.loadtxt(CIFAR / "labels.csv", dtype=np.int64) - 1  # the files are 1-indexed
    return probs, labels


@pytest.mark.data
@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_cifar10_published_numbers(name):
    probs, labels = _cifar(name)
    b, uq, ul, d_b, d_uq, d_l, a_l = PUBLISHED[name]
    rel = 1e-10
    got = {
        e: core.calibration_error(probs, labels, estimator=e, lens="canonical")
        for e in ("skce-b", "skce-uq", "skce-ul")
    }
    assert got["skce-b"].value == pytest.approx(b, rel=rel)
    assert got["skce-uq"].value == pytest.approx(uq, rel=rel)
    assert got["skce-ul"].value == pytest.approx(ul, rel=rel)
    tests = {
        t: core.calibration_test(probs, labels, test=t, clip_negative=False).pvalue
        for t in ("skce-bound-b", "skce-bound-uq", "skce-bound-ul")
    }
    assert tests["skce-bound-b"] == pytest.approx(d_b, rel=rel)
    assert tests["skce-bound-uq"] == pytest.approx(d_uq, rel=rel)
    assert tests["skce-bound-ul"] == pytest.approx(d_l, rel=rel)
    a = core.calibration_test(probs, labels, test="skce-ul-asymptotic")
    assert a.pvalue == pytest.approx(a_l, rel=rel)
    # the default bound is 1 for a negative unbiased estimate (the bound needs t > 0)
    clipped = core.calibration_test(probs, labels, test="skce-bound-ul").pvalue
    assert clipped == (1.0 if ul < 0 else pytest.approx(d_l, rel=rel))


@pytest.mark.data
def test_cifar10_bandwidth_and_sample_variance_variant():
    probs, labels = _cifar("densenet121")
    assert kern.median_bandwidth(probs) == pytest.approx(0.997333388885, rel=1e-11)
    a1 = core.calibration_test(probs, labels, test="skce-ul-asymptotic", ddof=1)
    assert a1.pvalue == pytest.approx(0.839209465136347, rel=1e-10)


@pytest.mark.data
@pytest.mark.slow
def test_cifar10_bootstrap_test_rejects_like_the_paper():
    # the paper's A_uq p-values are 0 for every network: no resample reaches the statistic
    probs, labels = _cifar("googlenet")  # the smallest SKCE_uq of the 14
    r = core.calibration_test(probs, labels, test="skce-uq-bootstrap", n_resamples=200)
    assert r.statistic == pytest.approx(PUBLISHED["googlenet"][1], rel=1e-10)
    assert r.details["exceedances"] == 0
    assert r.pvalue == pytest.approx(1 / 201)


def test_the_default_block_size_is_sqrt_n_capped_so_the_cost_stays_linear():
    from core.estimators.kernel import BLOCK_SIZE_MAX, default_block_size

    assert [default_block_size(n) for n in (3, 99, 10_000, 10_001, 10**6)] == [2, 9, 100, 100, 100]
    assert BLOCK_SIZE_MAX == 100
    rng = np.random.default_rng(8)
    p = rng.dirichlet(np.ones(3), size=40_000)
    y = np.array([rng.choice(3, p=row) for row in p[:2000]] * 20)
    result = core.calibration_test(p, y, test="skce-block", seed=0)
    assert result.details["block_size"] == 100
    assert result.details["n_blocks"] == 400


# --------------------------------------------------------------- two-column rows in O(n log n)


def _tiled_sum(p, y, spec):
    e = kern.residuals(p, y)
    total = 0.0
    for _ra, _rc, h, diag in kern.iter_h_tiles(p, e, spec):
        s = float(h.sum())
        total += s if diag else 2.0 * s
    return total


def test_line_pair_sum_by_hand_and_across_blocks():
    t, u = np.array([0.0, 1.0, 3.0]), np.array([1.0, 2.0, -1.0])
    by_hand = 2 * np.exp(-1.0) - np.exp(-3.0) - 2 * np.exp(-2.0)
    assert kern.line_pair_sum(t, u) == pytest.approx(by_hand, rel=1e-15)
    # exponents spanning many blocks of 600 (a tiny bandwidth): the direct double sum
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.exponential(25.0, 400))
    u = rng.normal(size=400)
    i, j = np.triu_indices(400, 1)
    direct = float(np.sum(u[i] * u[j] * np.exp(-(t[j] - t[i]))))
    assert t[-1] > 10 * 600
    assert kern.line_pair_sum(t, u) == pytest.approx(direct, rel=1e-12)


@pytest.mark.parametrize(("metric", "bandwidth"), [("tv", 0.0024), ("l1", 0.05), ("tv", 1e-5)])
def test_two_column_rows_take_the_sorted_pass_with_the_tiled_value(metric, bandwidth):
    rng = np.random.default_rng(8)
    s = rng.beta(5.0, 1.0, 3000)
    s[:40], s[40:60], s[60:200] = 1.0, 0.0, s[200:340]  # ties, and scores at 0 and 1
    p, y = np.column_stack([1.0 - s, s]), (rng.random(3000) < s).astype(np.int64)
    spec = kern.KernelSpec("laplacian", metric, bandwidth)
    fast = kern._two_column_sum(p, kern.residuals(p, y), spec)
    assert fast is not None
    assert fast == pytest.approx(_tiled_sum(p, y, spec), rel=1e-12)


def test_the_sorted_pass_declines_what_it_cannot_factorise():
    rng = np.random.default_rng(1)
    s = rng.random(100)
    y = rng.integers(0, 2, 100)
    p = np.column_stack([1.0 - s, s])
    e = kern.residuals(p, y)
    assert kern._two_column_sum(p, e, kern.KernelSpec("gaussian", "tv", 0.1)) is None
    assert kern._two_column_sum(p, e, kern.KernelSpec("laplacian", "l2", 0.1)) is None
    # rows that do not move against each other (p₀ rises with p₁ somewhere)
    odd = p.copy()
    odd[np.argmax(s), 0] = 0.9
    assert kern._two_column_sum(odd, e, kern.KernelSpec("laplacian", "tv", 0.1)) is None
    three = rng.dirichlet(np.ones(3), 50)
    e3 = kern.residuals(three, rng.integers(0, 3, 50))
    assert kern._two_column_sum(three, e3, kern.KernelSpec("laplacian", "tv", 0.1)) is None


@pytest.mark.parametrize("metric", ["tv", "l1", "l2"])
@pytest.mark.parametrize("kind", ["beta", "ties", "near-ties"])
def test_pairs_below_counts_every_row_exactly(metric, kind):
    # per row, the first column whose distance (rounded as the tiles round it) exceeds a
    # value that is itself a pair distance, so rows hit their boundary exactly
    rng = np.random.default_rng(5)
    s = rng.beta(5.0, 1.0, 400)
    if kind == "ties":
        s[:150], s[150:200] = 1.0, 0.9
    elif kind == "near-ties":
        s = 0.3 + 1e-13 * rng.integers(0, 50, 400)
    falling, rising = kern._opposite_columns(np.column_stack([1.0 - s, s]))
    i, j = np.triu_indices(400, 1)
    d = kern._pair_distances(falling, rising, i, j, metric)
    full = np.zeros((400, 400))
    full[i, j] = d
    for value in (d[7], d[len(d) // 2], d[-3], 0.0, float(np.median(d)) + 1e-16):
        for strict in (False, True):
            got = kern._pairs_below(falling, rising, value, metric, strict=strict)
            for row in range(399):
                cols = full[row, row + 1 :]
                stop = cols >= value if strict else cols > value
                want = row + 1 + (int(np.argmax(stop)) if stop.any() else cols.size)
                assert got[row] == want, (row, value, strict)


def test_the_biased_forms_are_defined_on_one_row():
    # MMCE² = (1/n²) Σ (c_i − r_i)(c_j − r_j) k(r_i, r_j): one row gives |c − r|
    assert core.calibration_error([0.7], [1], estimator="mmce").value == pytest.approx(0.3)
    assert core.calibration_error([0.7], [0], estimator="mmce").value == pytest.approx(0.7)
    # SKCE_b of one row is h(x, x) = k(p, p)·‖e_y − p‖² with a given bandwidth
    one = core.calibration_error([0.7], [1], estimator="skce-b", bandwidth=0.5, lens="binary")
    assert one.value == pytest.approx(2 * 0.3**2)
    with pytest.raises(core.EstimationError, match="unbiased quadratic SKCE estimator needs"):
        core.calibration_error([0.7], [1], estimator="skce-uq", bandwidth=0.5)
