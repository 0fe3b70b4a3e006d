"""Fast paths of the rank and binning recalibrators give the same bits as the plain code.

The sorted-key PAV (``tie_groups``, ``pav_blocks``), the fused softmax/transpose and
renormalisation kernels, the thread pool over components and Meta-Cal's fused
prediction are each compared with a straightforward reference computation.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import isotonic_regression

from core.base import parallel
from core.base.parallel import map_ordered
from core.recalibration import make_recalibrator
from core.recalibration.base import combine_classwise, softmax, softmax_t
from core.recalibration.isotonic import pav_blocks, pav_fit, tie_groups
from core.recalibration.metacal import ranking_score


def _reference_pav(s: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pool ties with ``numpy.unique``, then PAV on the distinct scores."""
    x, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=t, minlength=x.size) / counts
    return x, isotonic_regression(means, weights=counts.astype(np.float64)).x


def _reference_blocks(s: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, ...]:
    x, fitted = _reference_pav(s, t)
    change = np.flatnonzero(np.diff(fitted) != 0)
    starts = np.concatenate([[0], change + 1])
    ends = np.concatenate([change, [x.size - 1]])
    keep = np.unique(np.concatenate([starts, ends]))
    return x[starts], fitted[starts], x[keep], fitted[keep]


def _cases(rng: np.random.Generator) -> list[tuple[str, np.ndarray, np.ndarray]]:
    cases = []
    for n in (1, 2, 3, 7, 97, 1009):  # sizes not divisible by anything useful
        cases.append((f"continuous n={n}", rng.random(n), rng.random(n) < 0.3))
        levels = rng.integers(1, 6)
        cases.append((f"heavy ties n={n}", rng.integers(0, levels, n) / 8.0, rng.random(n) < 0.5))
        cases.append((f"one value n={n}", np.full(n, 0.25), rng.random(n) < 0.5))
        cases.append((f"all positive n={n}", rng.random(n), np.ones(n, dtype=bool)))
        cases.append((f"all negative n={n}", rng.random(n), np.zeros(n, dtype=bool)))
    # sparse positives among many tiny probabilities (a one-vs-rest class at large K)
    p = rng.dirichlet(np.full(50, 0.3), 2001)[:, 0]
    cases.append(("sparse positives", p, rng.random(p.size) < 0.02))
    cases.append(("exact 0 and 1", rng.choice([0.0, 0.5, 1.0], 301), rng.random(301) < 0.5))
    cases.append(("rounded", np.round(rng.beta(2, 3, 3000), 2), rng.random(3000) < 0.4))
    return cases


def test_tie_groups_equal_unique_and_bincount():
    rng = np.random.default_rng(0)
    for name, s, t in _cases(rng):
        x, counts, positives = tie_groups(s, t)
        ux, inverse, ucounts = np.unique(s, return_inverse=True, return_counts=True)
        assert_array_equal(x, ux, err_msg=name)
        assert_array_equal(counts, ucounts, err_msg=name)
        assert_array_equal(positives, np.bincount(inverse, weights=t, minlength=ux.size))


def test_tie_groups_refuses_scores_whose_bits_do_not_order():
    t = np.array([True, False, True])
    assert tie_groups(np.array([0.5, -0.0, 0.1]), t) is None  # sign bit set
    assert tie_groups(np.array([0.5, -0.1, 0.1]), t) is None
    assert tie_groups(np.array([0.5, 2.0, 0.1]), t) is None  # the shift would overflow
    assert tie_groups(np.array([0.5, np.nan, 0.1]), t) is None
    assert tie_groups(np.array([0.5, 1.999, 0.0]), t) is not None


def test_pav_fit_is_bit_identical_to_unique_and_scipy():
    rng = np.random.default_rng(1)
    for name, s, t in _cases(rng):
        for outcome in (t, t.astype(np.int64), t.astype(np.float64)):
            x, fitted = pav_fit(s, outcome)
            rx, rfitted = _reference_pav(s, t)
            assert_array_equal(x, rx, err_msg=name)
            assert_array_equal(fitted, rfitted, err_msg=name)


def test_pav_blocks_is_bit_identical_to_pav_on_every_distinct_score():
    rng = np.random.default_rng(2)
    cases = _cases(rng)
    for _ in range(3000):  # small random cases hit every pooling pattern
        n = int(rng.integers(1, 40))
        s = rng.integers(0, rng.integers(1, 9), n) / 8.0 if rng.random() < 0.5 else rng.random(n)
        cases.append(("random", s, rng.random(n) < rng.random()))
    matrix = rng.random((500, 3))  # a strided column is read in place
    cases.append(("strided column", matrix[:, 1], rng.random(500) < matrix[:, 1]))
    for name, s, t in cases:
        got = pav_blocks(s, t)
        want = _reference_blocks(s, t)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype
            assert_array_equal(g, w, err_msg=name)
        # pav_fit pools runs of one outcome before PAV: the same bits as PAV on every score
        for g, w in zip(pav_fit(s, t), _reference_pav(s, t), strict=True):
            assert_array_equal(g, w, err_msg=name)


def test_pav_fallbacks_for_other_scores_and_outcomes():
    rng = np.random.default_rng(3)
    s = rng.integers(-3, 6, 200).astype(np.float64)  # negative and above 2: no key sort
    t = rng.random(200) < 0.5
    for g, w in zip(pav_blocks(s, t), _reference_blocks(s, t), strict=True):
        assert_array_equal(g, w)
    # non-binary targets go through numpy.unique (weighted means), as before
    y = rng.random(200)
    x, fitted = pav_fit(s, y)
    rx, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=y) / counts
    assert_array_equal(fitted, isotonic_regression(means, weights=counts.astype(float)).x)


def test_pav_fit_agrees_with_sklearn_on_heavy_ties():
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(4)
    s = np.round(rng.beta(2, 3, 5003), 2)
    t = rng.random(s.size) < s**1.3
    x, fitted = pav_fit(s, t)
    sk = IsotonicRegression().fit(s, t.astype(float))
    assert_allclose(fitted, sk.predict(x), rtol=0, atol=1e-12)
    # fitted values are non-decreasing, in [0, 1], and preserve the mean outcome
    assert (np.diff(fitted) >= 0).all()
    counts = np.unique(s, return_counts=True)[1]
    assert_allclose((fitted * counts).sum(), t.sum(), rtol=1e-12)


def test_softmax_t_is_the_transpose_of_softmax():
    rng = np.random.default_rng(5)
    for shape in [(1, 2), (7, 3), (1001, 10), (300, 257)]:
        z = rng.normal(0, 3, shape)
        st = softmax_t(z)
        assert st.flags.c_contiguous
        assert_array_equal(st, softmax(z).T)


def test_combine_classwise_matches_transpose_then_renormalise():
    rng = np.random.default_rng(6)
    for k, n in [(3, 11), (10, 5003), (257, 300)]:
        new = rng.uniform(-0.2, 1.2, (k, n))
        new[:, :3] = 0.0  # rows summing to 0 become uniform
        q = np.clip(new, 0.0, 1.0).T.copy()
        total = q.sum(axis=1, keepdims=True)
        want = q / np.where(total > 0, total, 1.0)
        want[total[:, 0] <= 0] = 1.0 / k
        got = combine_classwise(new.copy(), clip=True)
        assert_array_equal(got, want)
        assert_allclose(got.sum(axis=1), 1.0, rtol=1e-12)


def test_map_ordered_keeps_order_and_raises_the_first_failure(monkeypatch):
    monkeypatch.setattr(parallel, "PARALLEL_MIN_ENTRIES", 0)
    monkeypatch.setenv("CALIBSCOPE_THREADS", "3")
    assert parallel.thread_count() == 3
    out = map_ordered(lambda j: np.sort(np.arange(j, -1, -1))[-1], range(200), entries=10)
    assert out == list(range(200))

    def work(j: int) -> int:
        if j in (57, 120):
            raise ValueError(f"component {j}")
        return j

    with pytest.raises(ValueError, match="component 57"):
        map_ordered(work, range(200), entries=10)


def _multiclass(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, (n, k))
    y = rng.integers(0, k, n)
    z[np.arange(n), y] += rng.uniform(0, 4, n)
    return z, y


METHODS = [
    ("isotonic", {}),
    ("isotonic", {"interpolation": "linear"}),
    ("histogram-umd", {}),
    ("histogram-umd", {"n_bins": 20, "unique_values": True}),
    ("histogram-ze", {"tie_break": "none"}),
    ("histogram-ums", {}),
    ("histogram-fixed-width", {"unique_values": True}),
]


@pytest.mark.parametrize(("name", "opts"), METHODS)
def test_thread_pool_does_not_change_results(monkeypatch, name, opts):
    z, y = _multiclass(1203, 9, 7)
    z[:400] = np.round(z[:400], 1)  # ties inside classes
    runs = []
    for threads, min_entries in ((1, 1 << 60), (2, 0), (3, 0)):
        monkeypatch.setenv("CALIBSCOPE_THREADS", str(threads))
        monkeypatch.setattr(parallel, "PARALLEL_MIN_ENTRIES", min_entries)
        for logits in (True, False):
            x = z if logits else softmax(z)
            r = make_recalibrator(name, **opts).fit(x, y, logits=logits)
            runs.append((r.fitted_params.to_json(), r.predict_proba(x, logits=logits)))
    for j in range(2, len(runs)):
        assert runs[j][0] == runs[j % 2][0]
        assert_array_equal(runs[j][1], runs[j % 2][1])


def _reference_isotonic_classwise(
    p_fit: np.ndarray, y: np.ndarray, p_new: np.ndarray
) -> np.ndarray:
    """One-vs-rest step isotonic maps, clip, renormalise, written out plainly."""
    k = p_fit.shape[1]
    cols = []
    for j in range(k):
        x, fitted = _reference_pav(p_fit[:, j], (y == j).astype(float))
        change = np.flatnonzero(np.diff(fitted) != 0)
        starts = np.concatenate([[0], change + 1])
        idx = np.searchsorted(x[starts], p_new[:, j], side="right") - 1
        cols.append(fitted[starts][np.clip(idx, 0, starts.size - 1)])
    q = np.clip(np.column_stack(cols), 0.0, 1.0)
    total = q.sum(axis=1, keepdims=True)
    out = q / np.where(total > 0, total, 1.0)
    out[total[:, 0] <= 0] = 1.0 / k
    return out


def test_isotonic_classwise_equals_plain_reference():
    z, y = _multiclass(2501, 6, 8)
    z[::3] = np.round(z[::3], 1)
    p = softmax(z)
    z_new = _multiclass(777, 6, 9)[0]
    r = make_recalibrator("isotonic").fit(z, y, logits=True)
    assert_array_equal(
        r.predict_proba(z_new, logits=True), _reference_isotonic_classwise(p, y, softmax(z_new))
    )


@pytest.mark.parametrize(
    "opts",
    [
        {},
        {"ranking": "max-prob", "split": "iid"},
        {"ranking": "margin", "mode": "coverage-accuracy", "beta": 0.6},
    ],
)
def test_metacal_fused_prediction_equals_unfused(opts):
    z, y = _multiclass(4001, 12, 10)
    r = make_recalibrator("meta-cal", **opts).fit(z, y, logits=True)
    from_probs = make_recalibrator("meta-cal", **opts).fit(softmax(z), y)
    # the fit from logits builds no probability matrix, yet chooses the same threshold
    assert r.fitted_params.values["threshold"] == from_probs.fitted_params.values["threshold"]
    z_new = _multiclass(3001, 12, 11)[0]
    vals = r.fitted_params.values
    h = ranking_score(softmax(z_new), opts.get("ranking", "entropy"))
    want = softmax(z_new, divide_by=vals["temperature"])
    want[~(h <= vals["threshold"])] = 1.0 / 12
    assert 0 < (h > vals["threshold"]).sum() < h.size  # both branches exercised
    assert_array_equal(r.predict_proba(z_new, logits=True), want)
    assert_array_equal(r.accepted(z_new, logits=True), h <= vals["threshold"])


def test_deferred_uniforms_are_the_values_random_would_draw():
    from core.recalibration.histogram import DeferredUniforms, deferred_uniforms

    rng = np.random.default_rng([3, 1])
    ref = np.random.default_rng([3, 1])
    rng.random(5)
    ref.random(5)
    lazy = deferred_uniforms(rng, 1001)
    assert isinstance(lazy, DeferredUniforms)
    want = ref.random(1001)
    # the generator has moved on exactly as if the values had been drawn
    assert_array_equal(rng.random(7), ref.random(7))
    idx = np.array([0, 17, 1000])
    assert_array_equal(lazy[idx], want[idx])
    assert_array_equal(lazy[np.arange(1001)], want)
    # a pending 32-bit half would be lost by advancing: then the draw is made at once
    odd = np.random.default_rng(4)
    odd_ref = np.random.default_rng(4)
    odd.integers(0, 10, dtype=np.uint32)
    odd_ref.integers(0, 10, dtype=np.uint32)
    eager = deferred_uniforms(odd, 50)
    assert isinstance(eager, np.ndarray)
    assert_array_equal(eager, odd_ref.random(50))
    assert_array_equal(odd.random(3), odd_ref.random(3))
