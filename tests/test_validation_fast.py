"""The one-pass checks of raw arrays accept and refuse exactly what the exact checks do.

``core.base.validation`` proves a probability vector or matrix valid with one integer pass
(and, for a matrix, row sums taken block by block) and runs the exact checks only when that
pass fails. The references below are the exact checks written out plainly (numpy
reductions over the whole array): every input must give the same array back or the same
error, message included.
"""

from __future__ import annotations

import numpy as np
import pytest

from core.base import validation
from core.base.errors import DataError
from core.base.validation import ROW_SUM_TOL, as_labels, as_probs, check_probs_labels


def _reference_probs(probs: np.ndarray) -> np.ndarray:
    """The exact checks of ``as_probs`` on a float64 array of one or two dimensions."""
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim == 2 and p.shape[1] == 1:
        p = p[:, 0]
    if p.ndim == 1:
        if not (p.min() >= 0.0 and p.max() <= 1.0):
            validation._raise_bad_values(p)
        return p
    if not p.min() >= 0.0:
        validation._raise_bad_values(p)
    deviation = p @ np.ones(p.shape[1]) if p.shape[1] <= 64 else p.sum(axis=1)
    deviation = np.abs(deviation - 1.0)
    if not deviation.max() <= ROW_SUM_TOL:
        if not np.isfinite(p).all() or p.max() > 1.0:
            validation._raise_bad_values(p)
        bad = int((~(deviation <= ROW_SUM_TOL)).sum())
        raise DataError(
            f"{bad} row(s) of the probability matrix do not sum to 1 (within {ROW_SUM_TOL:g}); "
            "renormalise them or load the file with core.load_predictions(renormalize=True)."
        )
    return p


def _reference_labels(y: np.ndarray, k: int) -> np.ndarray:
    y = np.asarray(y).astype(np.int64)
    if y.size and (y.min() < 0 or y.max() >= k):
        raise DataError(
            f"Labels must lie in 0..{k - 1} for {k} classes; found "
            f"{int(y.min())}..{int(y.max())}. 1-indexed labels are converted by core.load_predictions."
        )
    return y


def _outcome(func, *args):
    try:
        return "ok", func(*args)
    except DataError as err:
        return "error", str(err)


def _same(probs: np.ndarray) -> None:
    got, ref = _outcome(as_probs, probs), _outcome(_reference_probs, probs)
    assert got[0] == ref[0], (got, ref)
    if got[0] == "ok":
        assert got[1] is ref[1] or np.array_equal(got[1], ref[1])
    else:
        assert got[1] == ref[1]


def _threads_for_small_jobs(monkeypatch) -> None:
    """Let jobs of any size use the pieces and the thread pool."""
    from core.base import parallel

    monkeypatch.setattr(parallel, "PARALLEL_MIN_ENTRIES", 0)
    monkeypatch.setattr(validation, "PARALLEL_MIN_ENTRIES", 0)


def _softmax(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    z = rng.normal(size=(n, k)) * 2.0
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


# --------------------------------------------------------------------------- vectors


@pytest.mark.parametrize(
    "values",
    [
        [0.0, 1.0, 0.5],
        [-0.0, 0.3],  # -0.0 fails the integer pass; the exact check accepts it
        [0.2, 1.0 + 1e-16, 0.4],  # 1 + 1e-16 is 1.0 in float64
        [0.2, np.nextafter(1.0, 2.0)],
        [0.2, -1e-300],
        [0.2, -5e-324],
        [0.2, np.nan],
        [0.2, -np.nan],
        [0.2, np.inf],
        [0.2, -np.inf],
        [1.3, 0.2],
        [5e-324, 1.0],
    ],
)
def test_vectors_as_the_exact_check(values):
    _same(np.array(values))


def test_random_vectors_with_one_bad_entry_as_the_exact_check():
    rng = np.random.default_rng(3)
    bad = [np.nan, np.inf, -np.inf, -0.0, -1e-12, 1.0 + 1e-12, 2.0, -2.0, 0.0, 1.0]
    for value in bad:
        p = rng.random(1000)
        p[rng.integers(1000)] = value
        _same(p)
        _same(p[::3])  # strided
        _same(p[:, None])  # one column


# --------------------------------------------------------------------------- matrices


@pytest.mark.parametrize("k", [2, 3, 64, 65, 1000])
def test_random_matrices_with_one_bad_entry_as_the_exact_check(k):
    rng = np.random.default_rng(k)
    n = 300
    for value in [np.nan, np.inf, -np.inf, -0.0, -1e-12, -0.3, 1.2, 1.0]:
        p = _softmax(rng, n, k)
        p[rng.integers(n), rng.integers(k)] = value
        _same(p)
        _same(np.asfortranarray(p))
        _same(p[::2])


@pytest.mark.parametrize("k", [2, 5, 100, 1000])
def test_row_sums_at_the_tolerance_as_the_exact_check(k):
    """Rows summing to 1 ± tolerance, just inside and just outside, decided as before."""
    rng = np.random.default_rng(10 + k)
    for target in [
        1.0 + ROW_SUM_TOL,
        1.0 - ROW_SUM_TOL,
        1.0 + ROW_SUM_TOL * (1 - 1e-12),
        1.0 + ROW_SUM_TOL * (1 + 1e-12),
        1.0 - ROW_SUM_TOL * (1 + 1e-9),
        1.0 + 0.5 * ROW_SUM_TOL,
        1.0 + 2 * ROW_SUM_TOL,
    ]:
        p = _softmax(rng, 200, k)
        rows = rng.choice(200, size=7, replace=False)
        p[rows] *= target
        _same(p)


def test_a_row_of_one_entry_above_one_within_the_tolerance_passes_as_before():
    p = np.array([[1.0 + 0.5 * ROW_SUM_TOL, 0.0], [0.3, 0.7]])
    assert as_probs(p) is p


@pytest.mark.parametrize("k", [3, 700])
def test_large_matrices_in_many_blocks_and_pieces(k, monkeypatch):
    """Small blocks and pieces, so a bad row sits in a later piece on another thread."""
    monkeypatch.setattr(validation, "_BLOCK_BYTES", 8 * k * 5)
    monkeypatch.setattr(validation, "_PIECE_BYTES", 8 * k * 23)
    _threads_for_small_jobs(monkeypatch)
    rng = np.random.default_rng(4)
    p = _softmax(rng, 1000, k)
    assert as_probs(p) is p
    for row, value in [(999, np.nan), (517, -1e-9), (0, 2.0)]:
        q = p.copy()
        q[row, 1] = value
        _same(q)
    q = p.copy()
    q[[3, 998]] *= 1.0 + 2 * ROW_SUM_TOL
    _same(q)
    with pytest.raises(DataError, match="2 row"):
        as_probs(q)


def test_the_messages_name_what_they_named():
    with pytest.raises(DataError, match="1 row.*NaN or infinity"):
        as_probs(np.array([[0.5, 0.5], [np.nan, 1.0]]))
    with pytest.raises(DataError, match=r"values in \[-0.1, 1.1\]"):
        as_probs(np.array([[1.1, -0.1], [0.5, 0.5]]))
    with pytest.raises(DataError, match="1 row.*do not sum to 1"):
        as_probs(np.array([[0.2, 0.3], [0.5, 0.5]]))
    with pytest.raises(DataError, match=r"values in \[0.2, 1.3\]"):
        as_probs(np.array([0.2, 1.3]))


# --------------------------------------------------------------------------- labels


@pytest.mark.parametrize(
    "labels",
    [[0, 1, 2], [0, 3], [-1, 0], [np.iinfo(np.int64).min, 1], [2, 2], [0, 0], [True, False]],
)
def test_labels_as_the_exact_check(labels):
    y = np.array(labels)
    got, ref = _outcome(as_labels, y, 3), _outcome(_reference_labels, y, 3)
    assert got[0] == ref[0]
    if got[0] == "ok":
        assert np.array_equal(got[1], ref[1])
    else:
        assert got[1] == ref[1]


def test_unsigned_and_strided_labels():
    y = np.array([0, 1, 2, 5], dtype=np.uint8)
    with pytest.raises(DataError, match=r"found 0..5"):
        as_labels(y, 3)
    big = np.arange(20, dtype=np.int64) % 3
    assert np.array_equal(as_labels(big[::2], 3), big[::2])
    assert np.array_equal(check_probs_labels(np.full(4, 0.5), [0, 1, 1, 0])[1], [0, 1, 1, 0])


# --------------------------------------------------------------------------- the row argmax


def _minus_zero(p: np.ndarray) -> np.ndarray:
    """``p`` with the first entry of row 0 moved to its second entry and set to -0.0."""
    q = p.copy()
    q[0, 1] += q[0, 0]
    q[0, 0] = -0.0
    return q


def _plain_top_label_ece(p: np.ndarray, y: np.ndarray, n_bins: int = 15) -> float:
    """Top-label plug-in ECE written out: argmax, gather, equal-width bins, weighted gaps."""
    pred = p.argmax(axis=1)
    conf = p[np.arange(p.shape[0]), pred]
    hit = (pred == y).astype(np.float64)
    k = np.minimum((conf * n_bins).astype(np.intp), n_bins - 1)
    gaps = np.abs(np.bincount(k, conf, n_bins) - np.bincount(k, hit, n_bins))
    return float(gaps.sum() / p.shape[0])


@pytest.mark.parametrize("threads", ["1", "2"])
def test_the_top_label_of_the_checking_pass_is_numpys(threads, monkeypatch):
    from core.base.validation import check_with_top_label

    monkeypatch.setenv("CALIBSCOPE_THREADS", threads)
    monkeypatch.setattr(validation, "_BLOCK_BYTES", 8 * 50 * 7)
    monkeypatch.setattr(validation, "_PIECE_BYTES", 8 * 50 * 31)
    _threads_for_small_jobs(monkeypatch)
    rng = np.random.default_rng(5)
    p = _softmax(rng, 2000, 50)
    p[::7, 3] = p[::7].max(axis=1)  # ties: the lowest index wins, as in numpy
    p /= p.sum(axis=1, keepdims=True)
    y = rng.integers(0, 50, 2000)
    q, labels, (confidence, predicted) = check_with_top_label(p, y)
    assert q is p and np.array_equal(labels, y)
    assert np.array_equal(predicted, p.argmax(axis=1))
    assert np.array_equal(confidence, p[np.arange(2000), p.argmax(axis=1)])
    assert not predicted.flags.writeable and not confidence.flags.writeable
    assert check_with_top_label(p[:, 0], (y > 20).astype(int))[2] is None  # a vector
    q = _minus_zero(p)  # only the exact checks accept it: no top label from the pass
    assert check_with_top_label(q, y)[2] is None
    assert as_probs(q) is q


@pytest.mark.parametrize("order", ["C", "F"])
def test_the_top_label_read_off_the_bits_is_numpys(order):
    """argmax of the bits = argmax of the values (first maximum) for entries in [+0, 1]."""
    rng = np.random.default_rng(11)
    p = rng.choice([0.0, 0.25, 0.5, 1.0, 1e-300, 0.7], size=(400, 6))  # many ties, zeros
    p[::5] = 0.0
    p[1::5, 2] = 1.0
    p = np.asarray(p, order=order)
    confidence, predicted = np.empty(400), np.empty(400, dtype=np.intp)
    largest = validation._row_top_bits(p, confidence, predicted)
    assert np.array_equal(predicted, p.argmax(axis=1))
    assert np.array_equal(confidence, p.max(axis=1))
    assert largest == np.float64(p.max()).view(np.uint64) <= validation._ONE_BITS
    for bad in (-0.0, np.nan, -1e-300, np.nextafter(1.0, 2.0), np.inf, -np.inf):
        q = p.copy(order=order)
        q[17, 4] = bad
        assert validation._row_top_bits(q, confidence, predicted) > validation._ONE_BITS


@pytest.mark.parametrize("threads", ["1", "2"])
def test_top_label_error_on_raw_matrices_as_written_out(threads, monkeypatch):
    from core.inference.calibration import calibration_error
    from core.stats.lenses import top_of_rows

    monkeypatch.setenv("CALIBSCOPE_THREADS", threads)
    _threads_for_small_jobs(monkeypatch)
    rng = np.random.default_rng(6)
    for n, k in [(5, 3), (3000, 10), (400, 1000)]:
        p = _softmax(rng, n, k)
        y = rng.integers(0, k, n)
        expected = _plain_top_label_ece(p, y)
        assert calibration_error(p, y).value == pytest.approx(expected, rel=1e-12, abs=1e-15)
        confidence, predicted = top_of_rows(p)
        assert np.array_equal(predicted, p.argmax(axis=1))
        assert np.array_equal(confidence, p.max(axis=1))
        q = _minus_zero(p)  # the exact checks' path: the lens takes its own top label
        assert calibration_error(q, y).value == pytest.approx(_plain_top_label_ece(q, y), rel=1e-12)


def test_a_known_top_label_serves_only_its_own_matrix():
    from core.stats.lenses import known_top_label, top_label

    rng = np.random.default_rng(7)
    p = _softmax(rng, 100, 4)
    other = p[:, ::-1].copy()
    wrong = (np.zeros(100), np.zeros(100, dtype=np.intp))
    with known_top_label(p, wrong):
        assert top_label(p) is wrong  # trusted for p itself
        assert np.array_equal(top_label(other)[1], other.argmax(axis=1))
    assert np.array_equal(top_label(p)[1], p.argmax(axis=1))  # gone after the block
