"""Batched code paths of the recalibrators agree with per-class / reference computations."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize

from core.base.errors import FitError
from core.base.numeric import count_edges
from core.recalibration import make_recalibrator
from core.recalibration.base import (
    BLOCK_ENTRIES,
    as_inputs,
    blocks,
    logit,
    sigmoid,
    softmax,
    transpose,
)
from core.recalibration.histogram import (
    _HistogramBinning,
    lexicographic_bins,
    umd_ranks,
)
from core.recalibration.scaling import (
    fit_logistic_1d,
    fit_logistic_batch,
    fit_logistic_rows,
    platt_targets,
    temperature_fit,
)
from core.recalibration.scaling_binning import equal_mass_edges, equal_mass_edges_rows


def _logits(n=3000, k=12, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, (n, k))
    y = rng.integers(0, k, n)
    z[np.arange(n), y] += rng.uniform(0, 4, n)
    return z, y


def _onehot(y, k):
    t = np.zeros((k, y.size), dtype=bool)
    t[y, np.arange(y.size)] = True
    return t


# --------------------------------------------------------------------------- helpers


def test_blocks_tile_the_matrix_exactly_once():
    for shape in [(3, 10), (5, 2 * BLOCK_ENTRIES + 7), (1000, 40), (1, 1)]:
        seen = np.zeros(shape, dtype=int)
        for rows, cols in blocks(shape):
            seen[rows, cols] += 1
        assert (seen == 1).all()


def test_transpose_softmax_sigmoid_logit_match_plain_numpy():
    rng = np.random.default_rng(1)
    x = rng.normal(0, 30, (700, 130))
    assert_array_equal(transpose(x), x.T)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    assert_array_equal(softmax(x), e / e.sum(axis=1, keepdims=True))
    # a temperature divides first, exactly as softmax(z / T)
    assert_array_equal(softmax(x, divide_by=1.7), softmax(x / 1.7))
    long = rng.normal(0, 20, 3 * BLOCK_ENTRIES + 11)  # crosses block boundaries
    ref = np.where(long >= 0, 1 / (1 + np.exp(-long)), np.exp(long) / (1 + np.exp(long)))
    assert_array_equal(sigmoid(long), ref)
    assert_array_equal(sigmoid(long.reshape(1, -1))[0], ref)
    p = rng.random((40, 2000))
    p[0, :3] = [0.0, 1.0, 0.5]
    q = np.clip(p, 1e-12, 1 - 1e-12)
    assert_allclose(logit(p), np.log(q) - np.log1p(-q), rtol=1e-13, atol=1e-13)
    assert logit(0.5) == 0.0


def test_inputs_compute_the_other_form_lazily():
    z, _ = _logits(200, 5)
    inp = as_inputs(z, logits=True)
    assert inp._probs is None
    assert_array_equal(inp.probs, softmax(z))
    assert inp.n == 200 and inp.n_classes == 5
    p = softmax(z)
    inp = as_inputs(p)
    assert inp._log_scores is None
    assert_array_equal(inp.log_scores, np.log(np.clip(p, 1e-12, None)))


def test_count_edges_equals_searchsorted():
    rng = np.random.default_rng(2)
    s = np.round(rng.random(5000), 2)
    for m in (0, 1, 5, 16, 17, 60):
        edges = np.sort(np.round(rng.random(m), 2))
        for side in ("left", "right"):
            assert_array_equal(count_edges(edges, s, side), np.searchsorted(edges, s, side=side))


def test_lexicographic_bins_match_brute_force_with_ties():
    rng = np.random.default_rng(3)
    s = np.round(rng.random(3000), 1)
    u = rng.random(3000)
    edge_s = np.sort(np.round(rng.random(12), 1))
    edge_u = rng.random(12)
    order = np.lexsort((edge_u, edge_s))
    edge_s, edge_u = edge_s[order], edge_u[order]
    le = (edge_s[None, :] < s[:, None]) | (
        (edge_s[None, :] == s[:, None]) & (edge_u[None, :] <= u[:, None])
    )
    assert_array_equal(lexicographic_bins(edge_s, edge_u, s, u), le.sum(axis=1))
    assert_array_equal(
        lexicographic_bins(edge_s, None, s, None), np.searchsorted(edge_s, s, side="right")
    )


# --------------------------------------------------------------------------- Platt


def _logistic_reference(x, t):
    """Maximum-likelihood (a, c) by a generic optimiser (BFGS on the exact log-loss)."""

    def f(theta):
        eta = theta[0] * x + theta[1]
        q = sigmoid(eta)
        return np.sum(np.logaddexp(0, eta) - t * eta), np.array(
            [np.sum((q - t) * x), np.sum(q - t)]
        )

    res = minimize(f, [1.0, 0.0], jac=True, method="BFGS", options={"gtol": 1e-11})
    return res.x


def test_batched_newton_agrees_with_per_class_fits():
    z, y = _logits(4000, 9)
    x = logit(transpose(softmax(z)))
    t = _onehot(y, 9)
    a, c, _ = fit_logistic_rows(x, t, smooth=True)
    for j in range(9):
        tj = platt_targets(t[j].astype(float), "platt")
        a1, c1, _ = fit_logistic_1d(x[j], tj)
        assert_allclose([a[j], c[j]], [a1, c1], rtol=1e-8, atol=1e-8)
        assert_allclose([a[j], c[j]], _logistic_reference(x[j], tj), rtol=1e-6, atol=1e-6)
    # the column layout is the same solver
    a2, c2, _ = fit_logistic_batch(
        x.T, np.column_stack([platt_targets(r.astype(float), "platt") for r in t])
    )
    assert_allclose(a2, a, rtol=1e-8, atol=1e-10)
    assert_allclose(c2, c, rtol=1e-8, atol=1e-10)
    # the solver reads its inputs and never writes them
    assert_array_equal(x, logit(transpose(softmax(z))))


def test_platt_classwise_batched_predict_equals_per_component():
    z, y = _logits(2000, 6)
    r = make_recalibrator("platt").fit(z, y, logits=True)
    q = r.predict_proba(z, logits=True)
    p = softmax(z)
    cols = []
    for j, comp in enumerate(r.params_.values["components"]):
        cols.append(sigmoid(comp["a"] * logit(p[:, j]) + comp["c"]))
    ref = np.column_stack(cols)
    ref /= ref.sum(axis=1, keepdims=True)
    assert_allclose(q, ref, rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- histograms


def _umd_reference(s, t, n_bins, u, boundary_labels):
    """The full-sort UMD / Z&E of Gupta & Ramdas (the previous per-class implementation)."""
    order = np.argsort(s, kind="stable")
    if u is not None and (np.diff(s[order]) == 0).any():
        order = np.lexsort((u, s))
    ss, ts = s[order], t[order].astype(float)
    n = s.size
    a = umd_ranks(n, n_bins)
    csum = np.concatenate([[0.0], np.cumsum(ts)])
    lo, hi = a[:-1], a[1:] - 1
    if boundary_labels:
        hi = np.minimum(a[1:], n)
    inner = a[1:-1] - 1
    keys = u[order][inner] if u is not None else None
    return ss[inner], keys, (csum[hi] - csum[lo]) / (hi - lo)


@pytest.mark.parametrize("name", ["histogram-umd", "histogram-ze"])
@pytest.mark.parametrize("tie_break", ["random", "none"])
@pytest.mark.parametrize("decimals", [None, 2])
def test_uniform_mass_selection_equals_full_sort(name, tie_break, decimals):
    z, y = _logits(3000, 7, seed=5)
    p = softmax(z)
    if decimals is not None:  # many tied scores, some at the boundaries
        p = np.round(p, decimals)
        p[:, -1] = 1 - p[:, :-1].sum(axis=1)
        p = np.clip(p, 0, 1)
        p /= p.sum(axis=1, keepdims=True)
    nb = 15
    r = make_recalibrator(name, n_bins=nb, tie_break=tie_break, seed=3).fit(p, y)
    rng = np.random.default_rng(3)
    for j, comp in enumerate(r.params_.values["components"]):
        s = np.ascontiguousarray(p[:, j])
        u = rng.random(s.size) if tie_break == "random" else None
        edges, keys, values = _umd_reference(s, y == j, nb, u, name == "histogram-ze")
        assert_array_equal(comp["edges"], edges)
        assert_array_equal(comp["values"], values)
        if keys is not None:
            assert_array_equal(comp["edge_keys"], keys)


def test_select_finds_the_rows_of_the_full_order():
    rng = np.random.default_rng(6)
    for ties in (False, True):
        for n_bins in (10, 40):  # value partition (few boundaries) and argpartition (many)
            s = rng.random(1001)
            if ties:
                s = np.round(s, 1)
            u = rng.random(s.size)
            kpos = umd_ranks(s.size, n_bins)[1:-1] - 1
            rows, position = _HistogramBinning._select(s, u, kpos)
            full = _HistogramBinning._full_order(s, u)
            assert_array_equal(rows, full[kpos])
            assert (position is None) == (not ties)


def test_classwise_prediction_from_logits_equals_from_probabilities():
    # from logits the output reuses the probability buffer made inside predict_proba
    z, y = _logits(1500, 7)
    p = softmax(z)
    for name in ("histogram-umd", "platt", "isotonic"):
        r = make_recalibrator(name).fit(p, y)
        q_logits = r.predict_proba(z, logits=True)
        assert_allclose(q_logits, r.predict_proba(p), rtol=1e-12, atol=1e-15)
        assert_allclose(q_logits.sum(axis=1), 1.0)
    assert_array_equal(z, _logits(1500, 7)[0])  # the caller's logits are untouched


def test_fixed_width_batched_equals_per_class():
    z, y = _logits(2500, 8)
    p = softmax(z)
    r = make_recalibrator("histogram-fixed-width", n_bins=12).fit(p, y)
    edges = (np.arange(13) / 12)[1:-1]
    for j, comp in enumerate(r.params_.values["components"]):
        idx = np.searchsorted(edges, p[:, j], side="right")
        counts = np.bincount(idx, minlength=12)
        sums = np.bincount(idx, weights=(y == j).astype(float), minlength=12)
        mid = (np.arange(12) + 0.5) / 12
        assert_array_equal(comp["counts"], counts)
        assert_array_equal(comp["values"], np.where(counts > 0, sums / np.maximum(counts, 1), mid))


# --------------------------------------------------------------------------- scaling-binning


def test_equal_mass_edges_rows_equal_the_sorting_version():
    rng = np.random.default_rng(7)
    v = np.round(rng.random((20, 333)), 2)
    for b in (1, 3, 10, 400):
        for row, edges in zip(v, equal_mass_edges_rows(v, b), strict=True):
            assert_array_equal(edges, equal_mass_edges(row, b))


def test_scaling_binning_classwise_equals_per_class_reference():
    z, y = _logits(3000, 6, seed=8)
    p = softmax(z)
    r = make_recalibrator("scaling-binning", n_bins=10).fit(p, y)
    for j, comp in enumerate(r.params_.values["components"]):
        x = logit(p[:, j])
        a, c, _ = fit_logistic_1d(x, platt_targets((y == j).astype(float), "platt"))
        assert_allclose([comp["a"], comp["c"]], [a, c], rtol=1e-8, atol=1e-8)
        g = sigmoid(comp["a"] * x + comp["c"])
        edges = equal_mass_edges(g, 10)
        assert_array_equal(comp["edges"], edges)
        idx = np.searchsorted(edges, g, side="left")
        means = np.bincount(idx, weights=g) / np.maximum(np.bincount(idx), 1)
        assert_allclose(comp["values"], means[: edges.size], rtol=1e-12)


# --------------------------------------------------------------------------- temperature, matrix


def test_temperature_fit_on_rows_equals_fit_on_the_subset():
    z, y = _logits(3000, 10)
    rows = np.flatnonzero(np.random.default_rng(9).random(3000) < 0.6)
    t_rows, info_rows = temperature_fit(z, y, rows=rows)
    t_sub, info_sub = temperature_fit(z[rows], y[rows])
    assert t_rows == pytest.approx(t_sub, rel=1e-12)
    assert info_rows["n_iter"] == info_sub["n_iter"]


def test_matrix_scaling_needs_explicit_max_iter_above_100_classes():
    z, y = _logits(600, 101, seed=10)
    r = make_recalibrator("matrix")
    assert r.get_params()["max_iter"] is None
    with pytest.raises(FitError, match=r"vector.*temperature.*max_iter"):
        r.fit(z, y, logits=True)
    fitted = make_recalibrator("matrix", max_iter=2).fit(z, y, logits=True)
    assert fitted.params_.info["n_iter"] <= 2
    assert_allclose(fitted.predict_proba(z, logits=True).sum(axis=1), 1.0)
    # at most 100 classes the default still means 500 iterations
    z, y = _logits(600, 4)
    small = make_recalibrator("matrix").fit(z, y, logits=True)
    assert small.params_.info["converged"]


def test_vector_and_matrix_chunked_gradient_matches_finite_differences():
    from core.recalibration.scaling import _centred, affine_nll

    z, y = _logits(500, 4)
    rng = np.random.default_rng(11)
    cases = (
        ("vector", 1 + 0.1 * rng.normal(size=4)),  # w >= 0: constant log-sum-exp shift
        ("vector", np.array([1.0, -0.5, 2.0, 0.3])),  # a negative scale: per-row shift
        ("matrix", np.eye(4) + 0.1),
    )
    for kind, w in cases:
        b = 0.1 * rng.normal(size=4)
        zc = _centred(z, kind)
        nll, gw, gb = affine_nll(zc, y, w, b, kind)
        u = zc * w + b if kind == "vector" else zc @ w.T + b
        ref = -np.log(softmax(u)[np.arange(500), y]).mean()
        assert nll == pytest.approx(ref, rel=1e-12)
        eps = 1e-6
        db = np.zeros(4)
        db[1] = eps
        num = (affine_nll(zc, y, w, b + db, kind)[0] - affine_nll(zc, y, w, b - db, kind)[0]) / (
            2 * eps
        )
        assert gb[1] == pytest.approx(num, rel=1e-5, abs=1e-9)
        dw = np.zeros_like(w)
        dw.flat[0] = eps
        num = (affine_nll(zc, y, w + dw, b, kind)[0] - affine_nll(zc, y, w - dw, b, kind)[0]) / (
            2 * eps
        )
        assert gw.flat[0] == pytest.approx(num, rel=1e-5, abs=1e-9)


# --------------------------------------------------------------------------- solver starts


def _rare_positive_rows(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Classwise log-odds and outcomes of a K-class softmax model: ~n/K positives per row."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, (n, k))
    y = rng.integers(0, k, n)
    z[np.arange(n), y] += rng.uniform(0, 6, n)
    return logit(transpose(softmax(z))), _onehot(y, k)


@pytest.mark.parametrize("smooth", [True, False])
def test_binned_start_reaches_the_same_optimum_in_fewer_passes(smooth):
    from core.recalibration.scaling import START_MIN_COLUMNS

    x, t = _rare_positive_rows(START_MIN_COLUMNS + 1234, 12, 3)
    if not smooth:  # hard targets need overlapping classes: flip a few outcomes
        t = t.copy()
        t[:, ::97] = ~t[:, ::97]
    a_cold, c_cold, it_cold = fit_logistic_rows(x, t, smooth=smooth, warm_start=False)
    a_warm, c_warm, it_warm = fit_logistic_rows(x, t, smooth=smooth)
    assert_allclose(a_warm, a_cold, rtol=1e-10, atol=1e-12)
    assert_allclose(c_warm, c_cold, rtol=1e-10, atol=1e-12)
    assert it_warm <= 4 < it_cold
    # and the optimum is the generic optimiser's
    tj = platt_targets(t[0].astype(float), "platt") if smooth else t[0].astype(float)
    assert_allclose([a_warm[0], c_warm[0]], _logistic_reference(x[0], tj), rtol=1e-6, atol=1e-6)


def test_binned_start_with_constant_and_extreme_rows():
    from core.recalibration.scaling import START_MIN_COLUMNS

    x, t = _rare_positive_rows(START_MIN_COLUMNS, 5, 4)
    x = x.copy()
    x[1] = 0.25  # no spread: the slope is 0 and the intercept the log-odds of the rate
    x[2, :50] = 1e6  # outliers far beyond the binned range
    a, c, _ = fit_logistic_rows(x, t, smooth=True)
    a_cold, c_cold, _ = fit_logistic_rows(x, t, smooth=True, warm_start=False)
    assert_allclose(a, a_cold, rtol=1e-9, atol=1e-12)
    assert_allclose(c, c_cold, rtol=1e-9, atol=1e-12)
    rate = platt_targets(t[1].astype(float), "platt").mean()
    assert a[1] == 0.0
    assert c[1] == pytest.approx(np.log(rate / (1 - rate)), rel=1e-12)


def test_vector_scaling_preconditioned_fit_is_the_optimum():
    """The fit's gradient vanishes, and a generic optimiser on the raw parameters finds no lower NLL."""
    from core.recalibration.scaling import _centred, affine_nll

    z, y = _logits(3000, 7)
    rng = np.random.default_rng(5)
    z = z * rng.uniform(0.3, 3.0, 7) + rng.normal(0, 2, 7)  # classes on different scales
    r = make_recalibrator("vector").fit(z, y, logits=True)
    w, b = np.asarray(r.params_.values["weights"]), np.asarray(r.params_.values["bias"])
    zc = _centred(z, "vector")
    nll, gw, gb = affine_nll(zc, y, w, b, "vector")
    # L-BFGS stops on the relative change of the NLL (1e-13), so the gradient is small, not 0
    assert np.abs(gw).max() < 1e-6
    assert np.abs(gb).max() < 1e-6

    def f(theta):
        v, g1, g2 = affine_nll(zc, y, theta[:7], theta[7:], "vector")
        return v, np.concatenate([g1, g2])

    ref = minimize(
        f, np.r_[np.ones(7), np.zeros(7)], jac=True, method="BFGS", options={"gtol": 1e-10}
    )
    assert nll <= ref.fun + 1e-12
    assert_allclose(w, ref.x[:7], rtol=1e-5, atol=1e-5)
