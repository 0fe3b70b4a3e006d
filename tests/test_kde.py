"""KDE calibration error (experimental): direct loops, closed forms and the reference code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import core
from core.base.errors import ConfigError, EstimationError
from core.estimators import ESTIMATORS
from core.estimators.kde import KDE_BANDWIDTHS, kde_ratio, loo_log_likelihood, select_bandwidth


def _data(n, k, seed=0, alpha=1.0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, alpha), n)
    y = (rng.random(n)[:, None] > p.cumsum(1)).sum(1).clip(max=k - 1)
    return p, y


def _direct(f, y, b, norm, one_d):
    """The formula as written in docs/formulas.md, one pair at a time (scipy densities)."""
    n, k = f.shape
    dev = []
    for i in range(n):
        num, den = np.zeros(k), 0.0
        for j in range(n):
            if j == i:
                continue
            kij = stats.dirichlet.pdf(f[i], f[j] / b + 1.0)
            num[y[j]] += kij
            den += kij
        r = num / den
        dev.append(abs(r[1] - f[i, 1]) if one_d else np.abs(r - f[i]))
    dev = np.array(dev)
    if np.isinf(norm):
        return dev.max()
    per_row = dev**norm if one_d else (dev**norm).sum(axis=1)
    return per_row.mean() ** (1.0 / norm)


@pytest.mark.parametrize("norm", [1, 2, np.inf])
@pytest.mark.parametrize("bandwidth", [0.05, 0.3])
def test_canonical_equals_direct_loop(norm, bandwidth):
    p, y = _data(9, 3, seed=1)
    got = core.calibration_error(p, y, estimator="kde", norm=norm, bandwidth=bandwidth)
    assert got.lens == "canonical"
    assert got.value == pytest.approx(_direct(p, y, bandwidth, norm, False), rel=1e-10)


@pytest.mark.parametrize("norm", [1, 2, np.inf])
def test_top_label_and_binary_equal_direct_beta_loop(norm):
    p, y = _data(11, 4, seed=2)
    conf = p.max(1)
    hit = (p.argmax(1) == y).astype(int)
    f = np.column_stack([1 - conf, conf])
    got = core.calibration_error(p, y, estimator="kde", lens="top-label", norm=norm, bandwidth=0.1)
    assert got.value == pytest.approx(_direct(f, hit, 0.1, norm, True), rel=1e-10)
    s = p[:, 1] / (p[:, 0] + p[:, 1])
    yb = (y % 2).astype(int)
    got = core.calibration_error(s, yb, estimator="kde", lens="binary", norm=norm, bandwidth=0.2)
    fb = np.column_stack([1 - s, s])
    assert got.value == pytest.approx(_direct(fb, yb, 0.2, norm, True), rel=1e-10)


def test_beta_kernel_is_the_scipy_beta_density():
    s = np.array([0.2, 0.5, 0.9])
    f = np.column_stack([1 - s, s])
    y = np.array([0, 1, 1])
    b = 0.25
    k = stats.beta.pdf(s[:, None], s[None, :] / b + 1, (1 - s[None, :]) / b + 1)
    np.fill_diagonal(k, 0.0)
    assert kde_ratio(f, y, b)[:, 1] == pytest.approx(k @ y / k.sum(1), rel=1e-12)


def test_classwise_combines_components_with_class_weights():
    p, y = _data(10, 3, seed=3)
    w = np.array([0.5, 0.3, 0.2])
    got = core.calibration_error(
        p, y, estimator="kde", lens="classwise", norm=2, bandwidth=0.1, class_weights=w
    )
    per = []
    for c in range(3):
        f = np.column_stack([1 - p[:, c], p[:, c]])
        per.append(_direct(f, (y == c).astype(int), 0.1, 2, True))
    assert got.component_values == pytest.approx(per, rel=1e-10)
    assert got.value == pytest.approx(np.sqrt(np.dot(w, np.square(per))), rel=1e-10)


def test_two_rows_closed_form():
    # leave-one-out with two rows: each ratio is the other row's label, whatever the kernel
    p = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    y = np.array([2, 0])
    got = core.calibration_error(p, y, estimator="kde", bandwidth=0.07)
    want = (np.abs(np.eye(3)[0] - p[0]).sum() + np.abs(np.eye(3)[2] - p[1]).sum()) / 2
    assert got.value == pytest.approx(want, rel=1e-12)


def test_equal_predictions_give_leave_one_out_frequencies():
    n = 6
    p = np.tile([0.5, 0.3, 0.2], (n, 1))
    y = np.array([0, 0, 1, 2, 0, 1])
    counts = np.bincount(y, minlength=3)
    r = (counts[None, :] - np.eye(3)[y]) / (n - 1)
    want = (np.square(r - p).sum(1)).mean() ** 0.5
    got = core.calibration_error(p, y, estimator="kde", norm=2)
    assert got.value == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("norm", [1, 2])
def test_two_class_canonical_is_binary_doubled(norm):
    p, y = _data(40, 2, seed=4)
    canon = core.calibration_error(p, y, estimator="kde", norm=norm, bandwidth=0.05)
    binary = core.calibration_error(p[:, 1], y, estimator="kde", lens="binary", norm=norm,
                                    bandwidth=0.05)  # fmt: skip
    assert canon.value**norm == pytest.approx(2 * binary.value**norm, rel=1e-10)
    assert canon.details["power_p"] == pytest.approx(canon.value**norm, rel=1e-12)


def test_criterion_equals_direct_loop_and_subsample_scales():
    p, _ = _data(8, 3, seed=5)
    n = p.shape[0]
    b = np.array([1e-3, 0.05, 0.4])
    want = []
    for v in b:
        total = 0.0
        for i in range(n):
            s = sum(stats.dirichlet.pdf(p[i], p[j] / v + 1) for j in range(n) if j != i)
            total += np.log(s) - np.log((n - 1) * v)
        want.append(total)
    assert loo_log_likelihood(p, b, max_rows=None) == pytest.approx(want, rel=1e-9)
    # a subsample of rows i is an n/m-scaled partial sum
    sub = loo_log_likelihood(p, b, max_rows=4)
    assert np.all(np.isfinite(sub)) and not np.allclose(sub, want)


def test_exact_zeros_and_one_hot_rows_stay_finite():
    p = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.6, 0.4, 0.0], [0.2, 0.3, 0.5]] * 3)
    y = np.array([0, 1, 1, 2] * 3)
    for lens in ("canonical", "top-label", "classwise"):
        got = core.calibration_error(p, y, estimator="kde", lens=lens)
        assert np.isfinite(got.value)


def test_registry_entry_and_refusals():
    info = ESTIMATORS.get("kde")
    assert info.experimental and info.quadratic and info.family == "kernel"
    assert info.default_lens == "canonical" and "experimental" in info.label.lower()
    assert "O(n²" in info.description
    p, y = _data(20, 3)
    with pytest.raises(ConfigError, match="bandwidth"):
        core.calibration_error(p, y, estimator="kde", bandwidth=-1)
    with pytest.raises(ConfigError, match="bandwidth"):
        core.calibration_error(p, y, estimator="kde", bandwidth="silverman")
    with pytest.raises(EstimationError, match="two rows"):
        core.calibration_error(p[:1], y[:1], estimator="kde")
    with pytest.raises(EstimationError, match="max_exact_n"):
        core.calibration_error(p, y, estimator="kde", max_exact_n=10)


# ----------------------------------------------------------------- the reference code

PEER = Path(__file__).parent / "peers" / "ece_kde.py"


@pytest.fixture(scope="module")
def peer():
    torch = pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("ece_kde_reference", PEER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return torch, mod


@pytest.mark.parametrize(
    ("mc_type", "lens", "k"),
    [("canonical", "canonical", 4), ("top_label", "top-label", 4), ("marginal", "classwise", 3),
     ("binary", "binary", 2)],
)  # fmt: skip
@pytest.mark.parametrize("norm", [1, 2])
def test_reference_code_value_at_a_given_bandwidth(peer, mc_type, lens, k, norm):
    torch, ref = peer
    p, y = _data(150, k, seed=6, alpha=0.7)
    b = 0.03
    if mc_type == "binary":
        f = torch.tensor(p[:, 1:2])
        theirs = float(ref.get_ece_kde(f, torch.tensor(y), b, norm, "canonical", "cpu"))
        # their binary value is 2·mean|r − s|^p: the two-column canonical error
        ours = core.calibration_error(p[:, 1], y, estimator="kde", lens="binary", norm=norm,
                                      bandwidth=b)  # fmt: skip
        assert 2 * ours.value**norm == pytest.approx(theirs, rel=1e-9)
        return
    rel = 1e-9
    if mc_type == "canonical":  # their canonical path multiplies by a float32 one-hot matrix
        p = p.astype(np.float32).astype(np.float64)
        p /= p.sum(1, keepdims=True)
        rel = 1e-5
    f = torch.tensor(p, dtype=torch.float32 if mc_type == "canonical" else torch.float64)
    theirs = float(ref.get_ece_kde(f, torch.tensor(y), b, norm, mc_type, "cpu"))
    ours = core.calibration_error(p, y, estimator="kde", lens=lens, norm=norm, bandwidth=b)
    if mc_type == "marginal":  # theirs sums the classes' p-th powers; ours averages them
        assert k * ours.value**norm == pytest.approx(theirs, rel=rel)
    else:  # theirs is the p-th power
        assert ours.value**norm == pytest.approx(theirs, rel=rel)


@pytest.mark.parametrize(("k", "alpha"), [(3, 1.0), (2, 0.5)])
def test_reference_code_bandwidth(peer, k, alpha):
    torch, ref = peer
    p, y = _data(200, k, seed=7, alpha=alpha)
    theirs = float(ref.get_bandwidth(torch.tensor(p), "cpu"))
    assert select_bandwidth(p) == pytest.approx(theirs, rel=1e-6)  # their grid is float32
    s = p.max(1)
    theirs_1d = float(ref.get_bandwidth(torch.tensor(s[:, None]), "cpu"))
    assert select_bandwidth(np.column_stack([1 - s, s])) == pytest.approx(theirs_1d, rel=1e-6)
    # and the value with the bandwidth each picks
    est = core.calibration_error(p, y, estimator="kde", lens="top-label")
    val = float(ref.get_ece_kde(torch.tensor(p), torch.tensor(y), theirs_1d, 1, "top_label", "cpu"))
    assert est.value == pytest.approx(val, rel=1e-5)
    assert est.details["bandwidth"] in KDE_BANDWIDTHS
