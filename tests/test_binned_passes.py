"""One sample's binned passes in pieces (and on threads) give the whole-array numbers, bit for bit.

The equal-width bins, the counts and sums per bin and the label-binned distances of one
sample are computed a chunk at a time, pieces of rows on the thread pool. The references
are the plain whole-array numpy formulas: bins by ``searchsorted`` on the float edges, one
``bincount`` per statistic, ``bincount`` of ``|s − c[bin]|``. Small chunks and pieces make
a few thousand rows run through many pieces.
"""

from __future__ import annotations

import numpy as np
import pytest

from core.inference.calibration import calibration_error
from core.stats import binning
from core.stats.binning import RowBatch, batch_bin_sums, equal_width_edges, one_sample_deviation


@pytest.fixture(params=["1", "2"], ids=["one-thread", "two-threads"])
def small_pieces(request, monkeypatch):
    monkeypatch.setenv("CALIBSCOPE_THREADS", request.param)
    monkeypatch.setattr(binning, "_CHUNK", 37)
    monkeypatch.setattr(binning, "_PIECE_ROWS", 256)


def _scores(rng: np.random.Generator, n: int, n_bins: int) -> np.ndarray:
    """Scores with every hard case: on the float edges, next to them, exactly 0 and 1."""
    s = rng.random(n)
    edges = equal_width_edges(n_bins)
    at = rng.choice(n, size=n // 4, replace=False)
    s[at] = edges[rng.integers(0, n_bins + 1, at.size)]
    nudged = at[: at.size // 2]
    s[nudged] = np.nextafter(s[nudged], rng.choice([-1.0, 2.0], nudged.size))
    s[:3] = [0.0, 1.0, 1.0]
    return np.clip(s, 0.0, 1.0)


def _reference_bins(s: np.ndarray, n_bins: int) -> np.ndarray:
    return np.searchsorted(equal_width_edges(n_bins)[1:-1], s, side="right")


@pytest.mark.parametrize("n_bins", [1, 3, 10, 15, 49, 100])
def test_equal_width_bins_in_pieces(small_pieces, n_bins):
    rng = np.random.default_rng(n_bins)
    s = _scores(rng, 3001, n_bins)
    idx, _ = binning.BINNINGS.get("equal-width").func(s, n_bins, "split")
    assert np.array_equal(idx, _reference_bins(s, n_bins))


@pytest.mark.parametrize("outcome_type", [np.int64, bool, np.float64])
def test_bin_sums_in_pieces(small_pieces, outcome_type):
    rng = np.random.default_rng(2)
    s = _scores(rng, 2999, 15)
    y = (rng.random(2999) < s).astype(outcome_type)
    idx = _reference_bins(s, 15)
    counts, score_sums, label_sums = batch_bin_sums(idx[None], s[None], y[None], 15)
    assert np.array_equal(counts[0], np.bincount(idx, minlength=15))
    assert np.array_equal(score_sums[0], np.bincount(idx, weights=s, minlength=15))
    assert np.array_equal(label_sums[0], np.bincount(idx, weights=y.astype(float), minlength=15))


@pytest.mark.parametrize("norm", [1.0, 2.0, np.inf])
def test_distances_to_the_bin_centres_in_pieces(small_pieces, norm):
    rng = np.random.default_rng(3)
    n_bins = 12
    s = _scores(rng, 3003, n_bins)
    idx = _reference_bins(s, n_bins)
    idx[idx == 5] = 4  # an empty bin
    center = rng.random(n_bins)
    center[2] = s[idx == 2][0]  # a distance of exactly 0
    dev = np.abs(s - center[idx])
    if np.isinf(norm):
        expected = np.full(n_bins, -np.inf)
        np.maximum.at(expected, idx, dev)
    else:
        expected = np.bincount(idx, weights=dev if norm == 1.0 else dev * dev, minlength=n_bins)
    got = one_sample_deviation(idx, s, center, norm, n_bins)
    assert np.array_equal(got, expected)
    batch = RowBatch(idx, s, np.zeros(s.shape[0], dtype=np.int64), n_bins)
    assert np.array_equal(batch.score_deviation(center[None, :], norm)[0], expected)


@pytest.mark.parametrize("norm", [1, 2, "inf"])
def test_label_binned_error_as_written_out(small_pieces, norm):
    """Label-binned (Roelofs et al. Eq. 3) on raw arrays: the plain formula, to the bit."""
    rng = np.random.default_rng(4)
    n_bins = 15
    s = _scores(rng, 4000, n_bins)
    y = (rng.random(4000) < s**1.3).astype(np.int64)
    idx = _reference_bins(s, n_bins)
    counts = np.bincount(idx, minlength=n_bins)
    ybar = np.divide(
        np.bincount(idx, weights=y.astype(float), minlength=n_bins),
        counts,
        out=np.zeros(n_bins),
        where=counts > 0,
    )
    dev = np.abs(s - ybar[idx])
    if norm == "inf":
        expected = float(dev.max())
    else:
        p = float(norm)
        expected = float(
            (np.bincount(idx, weights=dev**p, minlength=n_bins).sum() / 4000) ** (1 / p)
        )
    got = calibration_error(s, y, lens="binary", estimator="label-binned", norm=norm).value
    assert got == expected


@pytest.mark.parametrize("tie_policy", ["split", "keep"])
def test_equal_mass_selection_on_matrix_columns(tie_policy):
    """A column of a row-major matrix (the classwise lens's scores) binned as by a sort."""
    from core.stats.binning import equal_mass_by_selection, equal_mass_by_sorting

    rng = np.random.default_rng(8)
    probs = rng.dirichlet(np.ones(6), size=20_000)
    probs[::5, 2] = np.round(probs[::5, 2], 2)  # runs of equal scores across boundaries
    for j in range(probs.shape[1]):
        column = probs[:, j]
        assert not column.flags.c_contiguous
        got_idx, got_edges = equal_mass_by_selection(column, 15, tie_policy)
        ref_idx, ref_edges = equal_mass_by_sorting(column, 15, tie_policy)
        assert np.array_equal(got_idx, ref_idx)
        assert np.array_equal(got_edges, ref_edges)


def test_the_caller_works_beside_the_pool(monkeypatch):
    """``map_helped``: the loop's results, and done by the caller alone when the pool is busy."""
    import threading

    from core.base import parallel
    from core.base.parallel import map_helped

    monkeypatch.setenv("CALIBSCOPE_THREADS", "2")
    items = list(range(23))
    assert map_helped(lambda i: i * i, items) == [i * i for i in items]
    with pytest.raises(ZeroDivisionError):
        map_helped(lambda i: 1 // (i - 7), items)
    # both pool threads held: every item is the caller's, and the call still returns
    release = threading.Event()
    pool = parallel._executor(2)
    held = [pool.submit(release.wait, 30) for _ in range(2)]
    try:
        ran_in = map_helped(lambda i: threading.current_thread().name, items)
    finally:
        release.set()
    assert all(f.result() for f in held)
    assert set(ran_in) == {threading.current_thread().name}


def test_one_sample_with_many_bins_is_counted_in_one_pass(monkeypatch):
    # mcb's discrete bins are one per distinct score: counting them a chunk at a time would
    # add a 2·B array per chunk (O(n·B/chunk) time and memory: 13 GB at 10⁷ rows)
    from core.stats import binning

    rng = np.random.default_rng(3)
    n, b = 200_000, 60_000
    index = rng.integers(0, b, size=n)
    scores = rng.random(n)
    outcomes = (rng.random(n) < 0.4).astype(np.int8)

    def refuse(*args, **kwargs):
        raise AssertionError("chunked counting used for many bins")

    monkeypatch.setattr(binning, "_one_sample_coded_sums", refuse)
    counts, score_sums, label_sums = binning.batch_bin_sums(
        index[None], scores[None], outcomes[None], b
    )
    np.testing.assert_array_equal(counts[0], np.bincount(index, minlength=b))
    np.testing.assert_array_equal(score_sums[0], np.bincount(index, weights=scores, minlength=b))
    np.testing.assert_array_equal(label_sums[0], np.bincount(index, weights=outcomes, minlength=b))


def test_one_sample_of_many_bins_is_counted_a_statistic_at_a_time(monkeypatch):
    # above _CODED_MAX_BINS the codes' 2·B counters give way to three bincounts: the same
    # counts, sums and dtypes
    from core.stats import binning

    rng = np.random.default_rng(4)
    idx = rng.integers(0, 3000, 20_000)
    s, y = rng.random(20_000), rng.random(20_000) < 0.4
    want = binning.batch_bin_sums(idx[None], s[None], y[None], 3000)
    monkeypatch.setattr(binning, "_CODED_MAX_BINS", 100)
    got = binning.batch_bin_sums(idx[None], s[None], y[None], 3000)
    for a, b in zip(want, got, strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype and a.shape == b.shape


@pytest.mark.parametrize(
    "scores",
    [
        np.random.default_rng(0).random(5000),
        np.round(np.random.default_rng(1).random(5000), 2),  # ties: by row within them
        np.array([0.5, -0.0, 0.0, 0.5, 1.0, 0.0]),  # -0.0 ties 0.0: the float order
        np.array([0.3, np.nan, 0.1, np.inf, 0.3, np.nan]),
        -np.random.default_rng(2).random(100),
    ],
)
def test_the_shared_order_is_the_stable_argsort(scores):
    # nonnegative floats are sorted by their bit patterns; anything else as floats
    from core.base.memo import ORDERS, stable_order

    ORDERS.clear()
    np.testing.assert_array_equal(stable_order(scores), np.argsort(scores, kind="stable"))
