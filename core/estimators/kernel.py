"""Kernel calibration error: SKCE (biased, unbiased quadratic, linear, block) and MMCE.

The squared kernel calibration error of Widmann, Lindsten & Zachariah (2019) with the
matrix-valued kernel ``k(p, q) = κ(p, q)·I`` is estimated from the pairwise terms

    h_ij = κ(p_i, p_j) · (e_{y_i} − p_i)ᵀ (e_{y_j} − p_j),

with ``κ(p, q) = exp(−d(p, q)/ν)`` (Laplacian, the paper's kernel) or
``exp(−d(p, q)²/(2ν²))`` (Gaussian), ``d`` the total-variation (default), L1 or L2
distance, and the bandwidth ``ν`` set by the median heuristic on the full ``n × n``
distance matrix including its zero diagonal, as the paper's code computed it. A number
sets ``ν``; on a lens of several components (classwise) each component takes its own
median, and ``bandwidth=(ν_1, …, ν_K)`` sets one per component (a bootstrap resample
holds them so: :func:`resample_options`).

The ``n × n`` matrix ``H`` is never held in memory: it is visited in tiles of the upper
triangle (symmetry halves the work) and the tiles are reduced on the fly, so memory is
``O(tile)`` whatever ``n``. ``SKCE_b`` and ``SKCE_uq`` share one pass (both come from
``ΣH`` and ``tr H``) and the pass is memoised for the last few inputs, so asking for both
estimators, or for an estimator and its test, costs one pass. The quadratic estimators
refuse above ``max_exact_n`` rows (default 25,000) with a message offering the block and
linear estimators; nothing is switched silently.

Everything is float64 by default (the published numbers are reproduced to 1e−10). The
option ``precision="float32"`` computes distances, kernel values and residual products in
single precision (sums stay float64): about twice as fast, with an absolute error of order
1e−7·mean|h|, which is small against a clearly non-zero SKCE but not against the
near-zero values of a calibrated model; the tests always use float64.

MMCE (Kumar et al. 2018) is the same machinery on the top-label lens: the model
``(c, 1 − c)`` with outcome "prediction correct" and kernel ``κ(c, c′)/2 · I₂`` gives
``SKCE = MMCE²`` (Widmann et al. 2019, App. I.2).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from core.base.errors import ConfigError, EstimationError
from core.base.memo import array_digest
from core.base.parallel import one_blas_thread
from core.base.validation import binary_matrix, check_probs_labels, check_rng
from core.estimators.base import ESTIMATORS, Estimate, lens_view

#: Distances between probability vectors.
METRICS: tuple[str, ...] = ("tv", "l1", "l2")
#: Scalar kernels ``κ(d)``.
KERNELS: tuple[str, ...] = ("laplacian", "gaussian")
#: Bandwidth rules besides a positive number.
BANDWIDTH_RULES: tuple[str, ...] = ("median", "median-offdiagonal")
#: Above this many rows the quadratic estimators refuse (offer the block or linear one).
MAX_EXACT_N = 25_000
#: The default block size is ⌊√n⌋ up to this: the block estimator costs ``n · B`` kernel
#: evaluations, so it stays linear in ``n`` (``n ≤ 10⁴`` keeps the package's ⌊√n⌋).
BLOCK_SIZE_MAX = 100
#: Rows of the median-heuristic subsample used when ``n > max_exact_n``.
MEDIAN_SUBSAMPLE = 5_000
#: Tile shape for the pairwise passes: rows × columns (≈ 8 MB per float64 buffer).
TILE_ROWS = 256
TILE_COLS = 4096
#: Rows of the tiles of the median's counting passes: 32 × 4096 float32 buffers (512 kB)
#: stay in a core's cache, which makes the pass about 1.8× faster than 256-row tiles.
#: Counts and collected values do not depend on the tiling; the kernel sums' rounding
#: does, so their tiles keep :data:`TILE_ROWS`.
COUNT_TILE_ROWS = 32
#: Pairs of the blocks of :func:`block_terms` evaluated at once (two 2 MB buffers).
_BLOCK_PAIRS = 1 << 18
#: Up to this many distinct pairs the median is found by collecting them all.
EXACT_SELECT_MAX = 2_000_000
#: Kumar et al.'s MMCE bandwidth (Laplacian kernel exp(−|c − c′|/0.4)).
MMCE_BANDWIDTH = 0.4

# Memoised pair sums and medians of the last few inputs (keyed on an exact digest), so the
# estimators and tests asked for on the same data share one O(n²) pass.
_CACHE_SIZE = 256
_SUM_CACHE: OrderedDict[tuple, tuple[float, float]] = OrderedDict()
_MEDIAN_CACHE: OrderedDict[tuple, float] = OrderedDict()
_CACHE_LOCK = threading.Lock()  # dashboard sessions run in threads


def _cache_get(cache: OrderedDict, key: tuple) -> Any:
    with _CACHE_LOCK:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    return None


def _cache_put(cache: OrderedDict, key: tuple, value: Any) -> None:
    with _CACHE_LOCK:
        cache[key] = value
        while len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)


@dataclass(frozen=True)
class KernelSpec:
    """A scalar kernel on predictions, ``scale · κ(d(p, q)/ν)``.

    Attributes
    ----------
    kernel : {"laplacian", "gaussian"}
        ``exp(−d/ν)`` or ``exp(−d²/(2ν²))``.
    metric : {"tv", "l1", "l2"}
        Total variation (½‖p − q‖₁), L1 or Euclidean distance.
    bandwidth : float
        ``ν > 0``.
    scale : float
        Constant factor (½ for MMCE's reduction to the two-class model).
    """

    kernel: str
    metric: str
    bandwidth: float
    scale: float = 1.0

    @property
    def bound(self) -> float:
        """Return ``B = 2·sup|κ|``, the bound on ``|h|`` used by the distribution-free tests."""
        return 2.0 * self.scale

    def apply(self, d: np.ndarray) -> np.ndarray:
        """Turn distances into kernel values in place and return them."""
        # a bandwidth near the smallest float (saturated scores) overflows d / h to -inf,
        # whose exp is 0: the kernel's own limit, not an error to print
        with np.errstate(over="ignore"):
            if self.kernel == "laplacian":
                np.divide(d, -self.bandwidth, out=d)
            else:
                np.square(d, out=d)
                np.divide(d, -2.0 * self.bandwidth * self.bandwidth, out=d)
        np.exp(d, out=d)
        if self.scale != 1.0:
            d *= self.scale
        return d


# ----------------------------------------------------------------- distances


def _check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise ConfigError(f"Unknown distance {metric!r}; use one of {', '.join(METRICS)}.")
    return metric


def _distance_tile(
    a: np.ndarray, bt: np.ndarray, metric: str, out: np.ndarray, tmp: np.ndarray
) -> np.ndarray:
    """Distances between rows of ``a`` (…, r, K) and columns of ``bt`` (…, K, c) into ``out``.

    One class at a time, so nothing of size ``r × c × K`` is made; leading axes are
    batches (the blocks of :func:`block_terms`).
    """
    out.fill(0.0)
    for k in range(a.shape[-1]):
        np.subtract(a[..., :, k, None], bt[..., k, None, :], out=tmp)
        if metric == "l2":
            np.square(tmp, out=tmp)
        else:
            np.abs(tmp, out=tmp)
        out += tmp
    if metric == "tv":
        out *= 0.5
    elif metric == "l2":
        np.sqrt(out, out=out)
    return out


def rowwise_distance(a: np.ndarray, b: np.ndarray, metric: str = "tv") -> np.ndarray:
    """Return ``d(a_i, b_i)`` for matching rows of two ``(n, K)`` arrays.

    Parameters
    ----------
    a, b : numpy.ndarray
        Probability vectors, one per row.
    metric : {"tv", "l1", "l2"}
        The distance.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` distances.
    """
    diff = a - b
    if _check_metric(metric) == "l2":
        return np.sqrt(np.einsum("ij,ij->i", diff, diff))
    d = np.abs(diff).sum(axis=1)
    return 0.5 * d if metric == "tv" else d


def pairwise_distances(probs: ArrayLike, other: ArrayLike | None = None, *, metric: str = "tv"):
    """Return the full distance matrix (small inputs; the estimators never build it).

    Parameters
    ----------
    probs : array_like
        ``(n, K)`` rows.
    other : array_like, optional
        ``(m, K)`` rows; default ``probs``.
    metric : {"tv", "l1", "l2"}
        The distance.

    Returns
    -------
    numpy.ndarray
        ``(n, m)`` distances.
    """
    a = np.asarray(probs, dtype=np.float64)
    b = a if other is None else np.asarray(other, dtype=np.float64)
    out = np.empty((a.shape[0], b.shape[0]))
    return _distance_tile(
        a, np.ascontiguousarray(b.T), _check_metric(metric), out, np.empty_like(out)
    )


def _iter_tiles(
    p: np.ndarray, metric: str, dtype: type = np.float64, tile_rows: int = TILE_ROWS
) -> Iterator[tuple[slice, slice, np.ndarray, bool]]:
    """Yield distance tiles covering the upper triangle of the ``n × n`` matrix.

    Each diagonal square ``[a, a+r) × [a, a+r)`` is yielded whole (``diag=True``); the
    tiles right of it are yielded once and stand for their mirror images too. The yielded
    array is a reusable buffer: consume it before the next iteration.
    """
    n = p.shape[0]
    pc = p.astype(dtype, copy=False)
    pt = np.ascontiguousarray(pc.T)
    # flat buffers sized to the data, viewed as contiguous tiles of each shape
    size = min(tile_rows, n) * max(min(TILE_COLS, n), min(tile_rows, n))
    out = np.empty(size, dtype=dtype)
    tmp = np.empty(size, dtype=dtype)
    for a in range(0, n, tile_rows):
        ra = slice(a, min(a + tile_rows, n))
        rows = pc[ra]
        nr = rows.shape[0]
        o, t = out[: nr * nr].reshape(nr, nr), tmp[: nr * nr].reshape(nr, nr)
        yield ra, ra, _distance_tile(rows, pt[:, ra], metric, o, t), True
        for c in range(ra.stop, n, TILE_COLS):
            rc = slice(c, min(c + TILE_COLS, n))
            nc = rc.stop - c
            o, t = out[: nr * nc].reshape(nr, nc), tmp[: nr * nc].reshape(nr, nc)
            yield ra, rc, _distance_tile(rows, pt[:, rc], metric, o, t), False


# ----------------------------------------------------------------- bandwidth


def _upper_values_all(p: np.ndarray, metric: str) -> np.ndarray:
    parts = []
    for _ra, _rc, d, diag in _iter_tiles(p, metric, tile_rows=COUNT_TILE_ROWS):
        parts.append(d[np.triu_indices(d.shape[0], 1)] if diag else d.ravel().copy())
    return np.concatenate(parts) if parts else np.empty(0)


def _sampled_distances(p: np.ndarray, metric: str, m: int = 200_000) -> np.ndarray:
    """Return the sorted distances of a seeded sample of pairs of distinct rows."""
    n = p.shape[0]
    rng = np.random.default_rng(0)
    i = rng.integers(0, n, m)
    j = rng.integers(0, n, m)
    keep = i != j
    i, j = i[keep], j[keep]
    if metric == "l2":
        return np.sort(rowwise_distance(p[i], p[j], metric))
    # class after class: no (m, K) copies (the sample only brackets the ranks)
    pt = np.ascontiguousarray(p.T)
    sample = np.zeros(i.shape[0])
    for k in range(p.shape[1]):
        sample += np.abs(pt[k, i] - pt[k, j])
    return np.sort(0.5 * sample if metric == "tv" else sample)


def _kth_upper(p: np.ndarray, ranks: list[int], metric: str) -> list[float]:
    """Return the ``ranks``-th smallest (1-based) strictly-upper-triangle distances, exactly.

    Two-column predictions whose columns move in opposite directions (``[1 − s, s]``: every
    binary problem and 1-D lens) take :func:`_kth_pairs_sorted`, ``O(n log n)`` per count.
    Otherwise a seeded sample of pairs brackets the target ranks; one pass over all pairs
    counts the values below and on the bracket ends (ties included) and keeps those
    strictly inside, where a partition finds the exact order statistics. The sample only
    affects speed, never the result; a missed bracket is widened and the pass repeated.
    """
    n = p.shape[0]
    total = n * (n - 1) // 2
    columns = _opposite_columns(p)
    if columns is not None and total > EXACT_SELECT_MAX:
        return [_kth_pairs_sorted(*columns, r, metric) for r in ranks]
    if total <= EXACT_SELECT_MAX:
        u = np.partition(_upper_values_all(p, metric), [r - 1 for r in ranks])
        return [float(u[r - 1]) for r in ranks]
    sample = _sampled_distances(p, metric)
    delta = 6.0 * np.sqrt(0.25 / sample.size) + 2.0 / sample.size
    for _attempt in range(6):
        qlo = min(ranks) / total - delta
        qhi = max(ranks) / total + delta
        lo = -np.inf if qlo <= 0 else float(np.quantile(sample, qlo))
        hi = np.inf if qhi >= 1 else float(np.quantile(sample, qhi))
        below, eq_lo, eq_hi, mid = _bracket(p, metric, lo, hi)
        out: list[float] = []
        for r in ranks:
            if r <= below:
                break
            if r <= below + eq_lo:
                out.append(lo)
            elif r <= below + eq_lo + mid.size:
                out.append(float(np.partition(mid, r - below - eq_lo - 1)[r - below - eq_lo - 1]))
            elif r <= below + eq_lo + mid.size + eq_hi:
                out.append(hi)
            else:
                break
        if len(out) == len(ranks):
            return out
        delta *= 4.0
    u = np.partition(_upper_values_all(p, metric), [r - 1 for r in ranks])  # pragma: no cover
    return [float(u[r - 1]) for r in ranks]  # pragma: no cover


def _bracket(p: np.ndarray, metric: str, lo: float, hi: float) -> tuple[int, int, int, np.ndarray]:
    """Count the upper-triangle distances below, at ``lo`` and at ``hi``; return those between.

    Exact: the counts and values are those of the float64 tiles of :func:`_iter_tiles`.
    For ``tv`` and ``l1`` a float32 pass (half the memory traffic) sorts out the pairs
    certainly below ``lo`` or above ``hi``; the few within :func:`_float32_margin` of the
    bracket are recomputed in float64, term by term as :func:`_distance_tile` adds them.
    """
    if metric == "l2":
        below = eq_lo = eq_hi = 0
        inside = []
        for _ra, _rc, d, diag in _iter_tiles(p, metric, tile_rows=COUNT_TILE_ROWS):
            v = d[np.triu_indices(d.shape[0], 1)] if diag else d
            below += int(np.count_nonzero(v < lo))
            eq_lo += int(np.count_nonzero(v == lo))
            eq_hi += int(np.count_nonzero(v == hi)) if hi != lo else 0
            inside.append(v[(v > lo) & (v < hi)].ravel())
        return below, eq_lo, eq_hi, np.concatenate(inside)
    margin = _float32_margin(p)
    # the float32 value is within ``margin`` of the float64 one: outside [lo32, hi32] the
    # float64 value is certainly below lo (counted) or above hi (ignored)
    lo32 = np.float32(np.nextafter(np.float32(lo - margin), np.float32(-np.inf)))
    hi32 = np.float32(np.nextafter(np.float32(hi + margin), np.float32(np.inf)))
    below = 0
    rows_at: list[np.ndarray] = []
    cols_at: list[np.ndarray] = []
    for ra, rc, d, diag in _iter_tiles(p, metric, np.float32, COUNT_TILE_ROWS):
        if diag:
            d[np.tril_indices(d.shape[0])] = np.nan  # the lower triangle and the diagonal: no pair
        below += int(np.count_nonzero(d < lo32))
        at = np.flatnonzero((d >= lo32) & (d <= hi32))  # 2-D nonzero is several times slower
        i, j = np.divmod(at, d.shape[1])
        rows_at.append(i + ra.start)
        cols_at.append(j + rc.start)
    i, j = np.concatenate(rows_at), np.concatenate(cols_at)
    pt = np.ascontiguousarray(p.T)
    v = np.zeros(i.shape[0])
    for k in range(p.shape[1]):  # the float64 tile's sum: class after class from 0
        v += np.abs(pt[k, i] - pt[k, j])
    if metric == "tv":
        v *= 0.5
    below += int(np.count_nonzero(v < lo))
    eq_lo = int(np.count_nonzero(v == lo))
    eq_hi = int(np.count_nonzero(v == hi)) if hi != lo else 0
    return below, eq_lo, eq_hi, v[(v > lo) & (v < hi)]


def _float32_margin(p: np.ndarray) -> float:
    """Return a bound on ``|d32 − d64|`` for the ``tv`` and ``l1`` distances of rows of ``p``.

    Rounding each entry to float32, each difference, and adding ``K`` terms one after the
    other err by at most ``u·(S_i + S_j)``, ``u·Σ|a − b|`` and ``(K − 1)·u·Σ|a − b|``
    (``u = 2⁻²⁴``, ``S`` a row's ℓ1 norm), so ``(K + 1)·u·2·max S`` (plus the float64
    value's own rounding and float32 underflow) bounds the error; four times that is used.
    """
    k = p.shape[1]
    s_max = float(np.abs(p).sum(axis=1).max())
    return 4.0 * (k + 2) * 2.0 * s_max * 2.0**-24 + k * 2.0**-126


def _opposite_columns(p: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Return the two columns of ``p`` in the order of the second, if the first then falls.

    Sorted so, every distance of :func:`_distance_tile` grows along each row and column
    of the upper triangle (each term is a rounded difference of monotone sequences, and
    rounding is monotone), which :func:`_kth_pairs_sorted` relies on. None otherwise.
    """
    order = _opposite_order(p)
    return None if order is None else (p[order, 0], p[order, 1])


def _opposite_order(p: np.ndarray) -> np.ndarray | None:
    """Return the order of two-column rows by ``p₁`` (ties: ``p₀`` down), if ``p₀`` then falls.

    Rows ``(1 − s, s)`` (every one-dimensional lens, binary input) qualify; None otherwise.
    """
    if p.ndim != 2 or p.shape[1] != 2:
        return None
    order = np.lexsort((-p[:, 0], p[:, 1]))
    falling = p[order, 0]
    return None if np.any(falling[1:] > falling[:-1]) else order


def _pair_distances(
    falling: np.ndarray, rising: np.ndarray, i: np.ndarray, j: np.ndarray, metric: str
) -> np.ndarray:
    """Distances of the pairs ``(i, j)`` of sorted two-column rows, rounded as the tiles."""
    first = np.abs(falling[i] - falling[j])
    second = np.abs(rising[i] - rising[j])
    if metric == "l2":
        return np.sqrt(first * first + second * second)
    first += second
    return 0.5 * first if metric == "tv" else first


def _line(falling: np.ndarray, rising: np.ndarray, metric: str) -> np.ndarray | None:
    """Return ``g`` with TV/L1 distances ``g_j − g_i`` of sorted rows (None for L2).

    ``g = ½(p₁ − p₀)`` for TV and ``p₁ − p₀`` for L1, up to rounding (:data:`_LINE_MARGIN`).
    """
    return None if metric == "l2" else (rising - falling) * (0.5 if metric == "tv" else 1.0)


def _pairs_below(
    falling: np.ndarray,
    rising: np.ndarray,
    value: float,
    metric: str,
    *,
    strict: bool,
    g: np.ndarray | None = None,
) -> np.ndarray:
    """Per row ``i``, the first ``j > i`` whose distance exceeds ``value`` (or reaches it).

    With TV or L1 a sorted search of ``g`` (:func:`_line`; computed when not given) narrows
    every row's answer to ``[lo, hi]``; a branchless binary search over the pairs inside,
    rounded as the tiles round them, finishes it (distances grow along a row).
    """
    n = falling.shape[0]
    rows = np.arange(n - 1)
    lo, hi = rows + 1, np.full(n - 1, n)
    if g is None:
        g = _line(falling, rising, metric)
    if g is not None:
        lo = np.maximum(lo, np.searchsorted(g, g[:-1] + (value - _LINE_MARGIN), side="left"))
        hi = np.maximum(lo, np.searchsorted(g, g[:-1] + (value + _LINE_MARGIN), side="right"))
    pos = lo.copy()
    open_ = np.nonzero(hi > lo)[0]
    if open_.size == 0:
        return pos
    r, p, h = rows[open_], lo[open_], hi[open_]
    step = 1 << int((h - p).max()).bit_length()
    while step:
        probe = p + (step - 1)
        inside = probe < h
        d = _pair_distances(falling, rising, r, np.minimum(probe, n - 1), metric)
        p += step * (inside & ((d < value) if strict else (d <= value)))
        step >>= 1
    pos[open_] = p
    return pos


#: Candidates left when :func:`_kth_pairs_sorted` computes and partitions them.
SORTED_SELECT_MAX = 1 << 16

#: Bound on |computed distance − (g_j − g_i)| for sorted two-column rows (entries in
#: [0, 1], distances at most 2): a few roundings of numbers below 2, with room to spare.
_LINE_MARGIN = 64 * 2.0**-52


def _kth_pairs_sorted(falling: np.ndarray, rising: np.ndarray, rank: int, metric: str) -> float:
    """Return the ``rank``-th smallest (1-based) distance over the pairs of sorted rows.

    The candidates are, per row ``i``, the columns ``lo[i] … hi[i] − 1`` (all ``j > i``
    at first). Two pivots drawn from a seeded sample of candidates around the target's
    share cut them down (each cut counts the pairs at most and below a pivot exactly,
    so ties are handled); once few are left they are computed and partitioned. The
    sample only affects speed, never the result.
    """
    n = falling.shape[0]
    rows = np.arange(n - 1)
    lo, hi = rows + 1, np.full(n - 1, n)
    below = 0  # candidates lie above ``below`` pairs
    rng = np.random.default_rng(0)
    m = 4096
    spread = 3.0 / np.sqrt(m)
    # a count costs one sorted search per row: narrow further before computing the rest
    limit = min(EXACT_SELECT_MAX, SORTED_SELECT_MAX)
    g = _line(falling, rising, metric)
    while True:
        width = hi - lo
        left = int(width.sum())
        if left <= limit:
            i = np.repeat(rows, width)
            j = np.repeat(lo - np.cumsum(width) + width, width) + np.arange(left)
            d = _pair_distances(falling, rising, i, j, metric)
            return float(np.partition(d, rank - below - 1)[rank - below - 1])
        ends = np.cumsum(width)
        pick = rng.integers(0, left, m)
        at = np.searchsorted(ends, pick, side="right")
        sample = np.sort(
            _pair_distances(falling, rising, at, lo[at] + pick - (ends[at] - width[at]), metric)
        )
        share = (rank - below) / left
        pivots = [sample[int((share - spread) * m)]] if share - spread > 0 else []
        if share + spread < 1:
            pivots.append(sample[min(int((share + spread) * m), m - 1)])
        for value in pivots:
            at_most = _pairs_below(falling, rising, value, metric, strict=False, g=g)
            n_at_most = int((at_most - rows - 1).sum())
            if n_at_most < rank:  # the target is above the pivot
                lo, below = np.maximum(lo, at_most), n_at_most
                continue
            under = _pairs_below(falling, rising, value, metric, strict=True, g=g)
            n_under = int((under - rows - 1).sum())
            if n_under < rank:  # the target equals the pivot
                return float(value)
            hi = np.minimum(hi, under)


def median_bandwidth(probs: ArrayLike, *, metric: str = "tv", variant: str = "median") -> float:
    """Return the median-heuristic bandwidth, computed exactly without the ``n × n`` matrix.

    Two-column predictions ``[1 − s, s]`` (binary data and every 1-D lens) are sorted and
    the pairs counted along the sorted rows, ``O(n log n)`` per count; other predictions
    take a tiled pass over the pairs (see :func:`_kth_upper`).

    Parameters
    ----------
    probs : array_like
        ``(n, K)`` predictions (1-D input is P(y=1)).
    metric : {"tv", "l1", "l2"}
        The distance.
    variant : {"median", "median-offdiagonal"}
        ``"median"`` is the median of all ``n²`` entries of the distance matrix, zero
        diagonal included (the convention of the paper's code, which its published numbers
        use); ``"median-offdiagonal"`` the median of the ``n(n−1)/2`` distinct pairs.

    Returns
    -------
    float
        The bandwidth ``ν`` (0 when more than half the entries are zero).
    """
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim == 1:
        p = np.column_stack([1.0 - p, p])
    n = p.shape[0]
    _check_metric(metric)
    if n < 2:
        raise EstimationError("The median heuristic needs at least two predictions.")
    key = (array_digest(p), metric, variant)
    hit = _cache_get(_MEDIAN_CACHE, key)
    if hit is None:
        hit = _median(p, metric, variant)
        _cache_put(_MEDIAN_CACHE, key, hit)
    return hit


def _median(p: np.ndarray, metric: str, variant: str) -> float:
    n = p.shape[0]
    if variant == "median":
        sq = n * n

        # full-matrix rank r: the n zeros come first, then every pair twice
        def upper_rank(r: int) -> int | None:
            return None if r <= n else -(-(r - n) // 2)

        wanted = [sq // 2, sq // 2 + 1] if sq % 2 == 0 else [(sq + 1) // 2]
        ur = [upper_rank(r) for r in wanted]
        need = sorted({r for r in ur if r is not None})
        vals = dict(zip(need, _kth_upper(p, need, metric), strict=True)) if need else {}
        picked = [0.0 if r is None else vals[r] for r in ur]
        return float(np.mean(picked)) if len(picked) == 2 else picked[0]
    if variant == "median-offdiagonal":
        total = n * (n - 1) // 2
        wanted = [total // 2, total // 2 + 1] if total % 2 == 0 else [(total + 1) // 2]
        vals = _kth_upper(p, sorted(set(wanted)), metric)
        return float(np.mean(vals)) if len(vals) == 2 else vals[0]
    raise ConfigError(
        f"Unknown bandwidth rule {variant!r}; use one of {', '.join(BANDWIDTH_RULES)}."
    )


#: The bandwidth rule's description when the median heuristic falls back (see
#: :func:`positive_median_bandwidth`); tables read it from an estimate's ``details``.
POSITIVE_MEDIAN = "median of the nonzero pairwise distances"
POSITIVE_MEDIAN_WHY = "more than half the pairs of predictions are identical, so the median is 0"


def resample_options(options: Mapping[str, Any], result: Any) -> dict[str, Any]:
    """Return the options a kernel estimate's bootstrap resamples run with.

    A data-driven bandwidth (the median heuristic) is held at its value on the full sample:
    one number for one component, each component's own (a tuple, ``bandwidth=(ν_1, …,
    ν_K)``) for several. The point estimate is unchanged, the heuristic is quadratic per
    resample, and a resample whose pairs are nearly all equal (one class's scores all
    equal, say) has no median to take. The Estimators table and the model comparison read
    their kernel intervals this way, so one metric of one model gets one interval.

    Parameters
    ----------
    options : mapping
        The estimate's options.
    result : core.inference.calibration.CalibrationErrorResult
        The estimate on the full sample (its ``details["bandwidth"]``).

    Returns
    -------
    dict
        The options, with ``bandwidth`` set to the number (or numbers) the full sample used.
    """
    out = dict(options)
    bandwidth = result.details.get("bandwidth")
    per = result.details.get("per_component") or {}
    if len(result.components) == 1 and bandwidth is not None:
        out["bandwidth"] = float(bandwidth)
    elif per and all(per.get(c, {}).get("bandwidth") is not None for c in result.components):
        # each component's own median, held as the one component's is
        out["bandwidth"] = tuple(float(per[c]["bandwidth"]) for c in result.components)
    return out


def bandwidth_fell_back(rule: str) -> bool:
    """Whether a bandwidth rule's description is the median heuristic's fallback."""
    return rule.startswith(POSITIVE_MEDIAN)


def positive_median_bandwidth(probs: ArrayLike, *, metric: str = "tv") -> float:
    """Return the median of the nonzero pairwise distances, exactly.

    The fallback of the median heuristic when more than half the pairs of predictions are
    identical (their distance is 0, so the heuristic's median is 0). Distances are 0 exactly
    for identical rows, so the ``Z`` zero pairs are counted from the repeated rows and the
    median is the middle of the upper-triangle order statistics ``Z + 1 … n(n−1)/2``
    (:func:`_kth_upper`; the mean of the two middle ones for an even count).

    Parameters
    ----------
    probs : array_like
        ``(n, K)`` predictions (1-D input is P(y=1)).
    metric : {"tv", "l1", "l2"}
        The distance.

    Returns
    -------
    float
        The bandwidth.

    Raises
    ------
    EstimationError
        When every prediction is the same (no pair differs).
    """
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim == 1:
        p = np.column_stack([1.0 - p, p])
    _check_metric(metric)
    n = p.shape[0]
    _, counts = np.unique(p, axis=0, return_counts=True)
    zeros = int((counts * (counts - 1) // 2).sum())
    total = n * (n - 1) // 2
    m = total - zeros
    if m <= 0:
        raise EstimationError(
            "Every prediction is the same, so no kernel bandwidth can be derived from the "
            "distances between them; the kernel estimators do not apply to these rows."
        )
    wanted = [zeros + m // 2, zeros + m // 2 + 1] if m % 2 == 0 else [zeros + (m + 1) // 2]
    vals = _kth_upper(p, sorted(set(wanted)), metric)
    return float(np.mean(vals)) if len(vals) == 2 else vals[0]


def resolve_bandwidth(
    p: np.ndarray,
    bandwidth: float | str,
    metric: str,
    *,
    max_exact_n: int = MAX_EXACT_N,
    rng: np.random.Generator | None = None,
) -> tuple[float, str]:
    """Return ``(ν, description)`` for a bandwidth rule or value.

    Above ``max_exact_n`` rows the median is taken on a seeded subsample of
    :data:`MEDIAN_SUBSAMPLE` rows, and the description says so.
    """
    if isinstance(bandwidth, str):
        if bandwidth not in BANDWIDTH_RULES:
            raise ConfigError(
                f"Unknown bandwidth {bandwidth!r}; give a positive number or one of "
                f"{', '.join(BANDWIDTH_RULES)}."
            )
        how = "full matrix" if bandwidth == "median" else "distinct pairs"
        if p.shape[0] > max_exact_n:
            m = min(MEDIAN_SUBSAMPLE, max_exact_n)
            idx = check_rng(rng).choice(p.shape[0], m, replace=False)
            p = p[np.sort(idx)]
            where = f", seeded subsample of {m} rows"
        else:
            where = ""
        nu = median_bandwidth(p, metric=metric, variant=bandwidth)
        text = f"median heuristic ({how}{where})"
        if not nu > 0:
            # more than half the pairs are identical predictions (confidences of 1.0, say):
            # fall back to the median of the pairs that differ, and say so
            nu = positive_median_bandwidth(p, metric=metric)
            text = f"{POSITIVE_MEDIAN}{where} ({POSITIVE_MEDIAN_WHY})"
        return nu, text
    nu = float(bandwidth)
    if not (np.isfinite(nu) and nu > 0):
        raise ConfigError(f"The kernel bandwidth must be a positive number; got {bandwidth!r}.")
    return nu, "user-set"


# ----------------------------------------------------------------- pairwise passes


def residuals(probs: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Return ``E = onehot(y) − P``, the residual of each prediction.

    Parameters
    ----------
    probs : numpy.ndarray
        ``(n, K)`` predictions.
    labels : numpy.ndarray
        ``(n,)`` class indices.

    Returns
    -------
    numpy.ndarray
        ``(n, K)`` float64.
    """
    e = -np.asarray(probs, dtype=np.float64)
    e[np.arange(e.shape[0]), labels] += 1.0
    return e


def iter_h_tiles(
    p: np.ndarray, e: np.ndarray, spec: KernelSpec, dtype: type = np.float64
) -> Iterator[tuple[slice, slice, np.ndarray, bool]]:
    """Yield tiles ``H[ra, rc]`` of the upper triangle (see :func:`_iter_tiles`).

    Parameters
    ----------
    p, e : numpy.ndarray
        Predictions and residuals, ``(n, K)``.
    spec : KernelSpec
        The kernel.
    dtype : numpy dtype
        float64 (exact) or float32 (fast path for the distances and kernel values).

    Yields
    ------
    tuple
        ``(row slice, column slice, H tile, is diagonal square)``.
    """
    ec = e.astype(dtype, copy=False)
    for ra, rc, d, diag in _iter_tiles(p, spec.metric, dtype):
        k = spec.apply(d)
        with one_blas_thread():
            g = ec[ra] @ ec[rc].T
        k *= g
        yield ra, rc, k, diag


#: Largest exponent span of one block of :func:`line_pair_sum`: e^700 still fits a float64.
_LINE_SPAN = 600.0


def line_pair_sum(t: np.ndarray, u: np.ndarray) -> float:
    """Return ``Σ_{i<j} u_i u_j exp(−(t_j − t_i))`` for a non-decreasing ``t``, in O(n).

    ``exp(−(t_j − t_i)) = exp(−(t_j − c)) · exp(t_i − c)`` for any ``c``: within a block of
    rows whose ``t`` spans at most :data:`_LINE_SPAN` (``c`` its first value) the inner sum
    is a prefix sum; the rows of earlier blocks enter through one carried, decayed sum.

    Parameters
    ----------
    t : numpy.ndarray
        ``(n,)`` non-decreasing exponents (distances over the bandwidth).
    u : numpy.ndarray
        ``(n,)`` weights.

    Returns
    -------
    float
        The sum over the ``n(n − 1)/2`` pairs.
    """
    n = t.shape[0]
    total, carry, start = 0.0, 0.0, 0
    while start < n:
        end = max(start + 1, int(np.searchsorted(t, t[start] + _LINE_SPAN, side="right")))
        rel = t[start:end] - t[start]
        uw = u[start:end] * np.exp(rel)
        before = np.cumsum(uw) - uw  # Σ over the block's earlier rows, at the block's scale
        total += float(np.dot(u[start:end] * np.exp(-rel), before + carry))
        if end < n:  # the block's rows, and those before it, seen from the next block
            carry = float(np.exp(t[start] - t[end])) * (carry + float(uw.sum()))
        start = end
    return total


def _two_column_sum(p: np.ndarray, e: np.ndarray, spec: KernelSpec) -> float | None:
    """``ΣH`` over all pairs in O(n log n) for two-column rows and the Laplacian kernel.

    Sorted by ``p₁`` ascending (ties: ``p₀`` descending), when ``p₀`` is then non-increasing
    — rows ``(1 − s, s)``, as every one-dimensional lens and binary input makes them — the
    TV distance of rows ``i < j`` is ``½((p₁ⱼ − p₁ᵢ) − (p₀ⱼ − p₀ᵢ)) = gⱼ − gᵢ`` with
    ``g = ½(p₁ − p₀)`` (L1: twice that), so the kernel factorises along the order
    (:func:`line_pair_sum`). None when it does not apply (then the tiled pass runs).
    """
    if spec.kernel != "laplacian" or spec.metric not in ("tv", "l1"):
        return None
    order = _opposite_order(p)
    if order is None:
        return None
    q = p[order]
    half = 0.5 if spec.metric == "tv" else 1.0
    t = (half / spec.bandwidth) * (q[:, 1] - q[:, 0])
    t = np.maximum.accumulate(t)  # rounding must not make it decrease
    eo = e[order]
    pairs = sum(line_pair_sum(t, eo[:, c]) for c in range(2))
    diagonal = float(np.einsum("ij,ij->", e, e))
    return spec.scale * (diagonal + 2.0 * pairs)


def h_sums(
    p: np.ndarray, y: np.ndarray, spec: KernelSpec, *, dtype: type = np.float64
) -> tuple[float, float]:
    """Return ``(ΣH, tr H)`` over all ``n²`` pairs, in one symmetric tiled pass (memoised).

    Parameters
    ----------
    p : numpy.ndarray
        ``(n, K)`` predictions.
    y : numpy.ndarray
        ``(n,)`` labels.
    spec : KernelSpec
        The kernel.
    dtype : numpy dtype
        float64 (exact, default) or float32 (distances, kernel values and residual
        products in single precision; sums accumulated in float64).

    Returns
    -------
    tuple of float
        The sum of all entries and the trace of ``H``.
    """
    key = (array_digest(p, y), spec, np.dtype(dtype).str)
    hit = _cache_get(_SUM_CACHE, key)
    if hit is not None:
        return hit
    e = residuals(p, y)
    # two-column rows under the Laplacian kernel: one sort instead of n² pairs
    fast = _two_column_sum(p, e, spec) if np.dtype(dtype) == np.float64 else None
    if fast is not None:
        total = fast
    else:
        total = 0.0
        for _ra, _rc, h, diag in iter_h_tiles(p, e, spec, dtype):
            s = float(h.sum(dtype=np.float64))
            total += s if diag else 2.0 * s
    # κ(p, p) = 1 for every kernel here, so h_ii = scale·‖e_i‖²
    trace = spec.scale * float(np.einsum("ij,ij->", e, e))
    _cache_put(_SUM_CACHE, key, (total, trace))
    return total, trace


def pair_terms(p: np.ndarray, y: np.ndarray, spec: KernelSpec) -> np.ndarray:
    """Return the linear estimator's terms ``h_{2i, 2i+1}``, ``i < ⌊n/2⌋`` (input order).

    Parameters
    ----------
    p, y, spec
        As in :func:`h_sums`.

    Returns
    -------
    numpy.ndarray
        ``(⌊n/2⌋,)`` float64; an odd last row is dropped.
    """
    m = p.shape[0] // 2
    a, b = p[0 : 2 * m : 2], p[1 : 2 * m : 2]
    e = residuals(p[: 2 * m], y[: 2 * m])
    ea, eb = e[0::2], e[1::2]
    k = spec.apply(rowwise_distance(a, b, spec.metric))
    return k * np.einsum("ij,ij->i", ea, eb)


def block_terms(
    p: np.ndarray, y: np.ndarray, spec: KernelSpec, block_size: int, *, unbiased: bool = True
) -> np.ndarray:
    """Return the per-block SKCE estimates over consecutive blocks (the tail is dropped).

    A few blocks at a time (:data:`_BLOCK_PAIRS` pairs), each block's distance matrix is
    built one class at a time by :func:`_distance_tile`, as the tiled passes build theirs.

    Parameters
    ----------
    p, y, spec
        As in :func:`h_sums`.
    block_size : int
        Rows per block ``B`` (≥ 2 when unbiased, ≥ 1 when biased).
    unbiased : bool
        Mean over ``i ≠ j`` within a block (default) or over all pairs.

    Returns
    -------
    numpy.ndarray
        ``(⌊n/B⌋,)`` block estimates.
    """
    bsz = int(block_size)
    if bsz < (2 if unbiased else 1):
        raise ConfigError(f"block_size must be at least {2 if unbiased else 1}; got {block_size}.")
    nb = p.shape[0] // bsz
    if nb < 1:
        raise EstimationError(
            f"block_size {bsz} exceeds the {p.shape[0]} rows; choose a smaller block size."
        )
    e = residuals(p[: nb * bsz], y[: nb * bsz])
    denom = bsz * (bsz - 1) if unbiased else bsz * bsz
    if bsz > 1024:
        out = np.empty(nb)
        for b in range(nb):
            sl = slice(b * bsz, (b + 1) * bsz)
            total, trace = h_sums(p[sl], y[sl], spec)
            out[b] = (total - trace if unbiased else total) / denom
        return out
    pb = p[: nb * bsz].reshape(nb, bsz, -1)
    eb = e.reshape(nb, bsz, -1)
    out = np.empty(nb)
    step = max(1, _BLOCK_PAIRS // (bsz * bsz))
    # two flat buffers, viewed as (blocks, B, B): distances, then kernel values in place
    size = min(step, nb) * bsz * bsz
    buffers = np.empty(size), np.empty(size)
    for s in range(0, nb, step):
        sl = slice(s, min(s + step, nb))
        pa = pb[sl]
        shape = (pa.shape[0], bsz, bsz)
        h, g = (b[: pa.shape[0] * bsz * bsz].reshape(shape) for b in buffers)
        spec.apply(_distance_tile(pa, pa.transpose(0, 2, 1), spec.metric, h, g))
        h *= np.matmul(eb[sl], eb[sl].transpose(0, 2, 1), out=g)
        sums = h.sum(axis=(1, 2))
        if unbiased:
            sums -= np.einsum("bii->b", h)
        out[sl] = sums / denom
    return out


# ----------------------------------------------------------------- problems per lens


@dataclass(frozen=True, eq=False)
class KernelProblem:
    """One vector-valued calibration problem a kernel estimator runs on.

    Attributes
    ----------
    name : str
        Component name.
    probs : numpy.ndarray
        ``(n, K)`` predictions (two columns for 1-D lenses).
    labels : numpy.ndarray
        ``(n,)`` class indices.
    weight : float
        Aggregation weight.
    """

    name: str
    probs: np.ndarray
    labels: np.ndarray
    weight: float


def lens_problems(
    probs: ArrayLike,
    labels: ArrayLike,
    lens: str = "canonical",
    *,
    class_names: tuple[str, ...] | None = None,
    class_weights: ArrayLike | None = None,
    validated: bool = False,
) -> list[KernelProblem]:
    """Return the kernel problems of a lens.

    ``canonical`` keeps the full probability vector. A 1-D lens (binary, top-label,
    classwise) turns each component's score ``s`` and outcome ``o`` into the two-class
    model ``(1 − s, s)`` with label ``o``, whose TV distance is ``|s − s′|``.

    Parameters
    ----------
    probs, labels : array_like
        Predictions and labels.
    lens : str
        A lens of :data:`core.stats.lenses.LENSES`.
    class_names, class_weights : optional
        As for :func:`core.stats.lenses.apply_lens`.
    validated : bool
        The arrays are already validated ``(n, K)`` (or binary ``(n,)``) float64 / int64
        (skip the checks).

    Returns
    -------
    list of KernelProblem
        One per component.
    """
    if validated:
        p, y = np.asarray(probs), np.asarray(labels)
    else:
        p, y = check_probs_labels(probs, labels)
    if lens == "canonical":
        return [KernelProblem("canonical", binary_matrix(p) if p.ndim == 1 else p, y, 1.0)]
    view = lens_view(p, y, lens, class_names=class_names, class_weights=class_weights)
    return [
        KernelProblem(name, np.column_stack([1.0 - s, s]), o.astype(np.int64), float(w))
        for name, s, o, w in zip(view.names, view.scores, view.outcomes, view.weights, strict=True)
    ]


def make_spec(
    p: np.ndarray,
    *,
    kernel: str = "laplacian",
    metric: str = "tv",
    bandwidth: float | str = "median",
    scale: float = 1.0,
    max_exact_n: int = MAX_EXACT_N,
    rng: np.random.Generator | None = None,
) -> tuple[KernelSpec, str]:
    """Validate kernel options and return the :class:`KernelSpec` with its bandwidth note.

    Parameters
    ----------
    p : numpy.ndarray
        Predictions the median heuristic runs on.
    kernel, metric, bandwidth, scale : see :class:`KernelSpec`
        ``bandwidth`` may be a rule of :data:`BANDWIDTH_RULES`.
    max_exact_n : int
        Above this many rows the median heuristic uses a subsample.
    rng : numpy.random.Generator, optional
        Draws that subsample.

    Returns
    -------
    tuple
        ``(spec, how the bandwidth was set)``.
    """
    if kernel not in KERNELS:
        raise ConfigError(f"Unknown kernel {kernel!r}; use one of {', '.join(KERNELS)}.")
    _check_metric(metric)
    nu, how = resolve_bandwidth(p, bandwidth, metric, max_exact_n=max_exact_n, rng=rng)
    return KernelSpec(kernel, metric, nu, scale), how


def spec_from_options(
    p: np.ndarray,
    options: Mapping[str, Any],
    rng: np.random.Generator | None = None,
    **fixed: Any,
) -> tuple[KernelSpec, str]:
    """Return :func:`make_spec` of the kernel options an estimator or a test was given.

    Parameters
    ----------
    p, rng
        As in :func:`make_spec`.
    options : mapping
        ``kernel``, ``metric``, ``bandwidth`` and ``max_exact_n``; an absent one takes
        the default of :func:`make_spec`.
    **fixed
        Arguments of :func:`make_spec` that are not options (MMCE's ``scale``).

    Returns
    -------
    tuple
        ``(spec, how the bandwidth was set)``.
    """
    return make_spec(
        p,
        kernel=options.get("kernel", "laplacian"),
        metric=options.get("metric", "tv"),
        bandwidth=options.get("bandwidth", "median"),
        max_exact_n=int(options.get("max_exact_n", MAX_EXACT_N)),
        rng=rng,
        **fixed,
    )


def check_exact_size(n: int, max_exact_n: int, name: str) -> None:
    """Refuse an ``O(n²)`` estimator above ``max_exact_n`` rows, naming the alternatives."""
    if n > max_exact_n:
        raise EstimationError(
            f"{name} is quadratic in the number of rows and n = {n:,} exceeds max_exact_n = "
            f"{max_exact_n:,}. Use the block estimator ('skce-block', cost n·B) or the linear one "
            "('skce-ul', cost n), or raise max_exact_n if you accept the run time."
        )


# ----------------------------------------------------------------- estimators


def skce_value(
    prob: KernelProblem, spec: KernelSpec, which: str, options: dict
) -> tuple[float, dict]:
    """Return one SKCE estimate of a kernel problem and its extra details.

    Parameters
    ----------
    prob : KernelProblem
        Predictions and labels.
    spec : KernelSpec
        The kernel.
    which : {"b", "uq", "ul", "block"}
        Biased, unbiased quadratic, linear or block estimator.
    options : dict
        ``max_exact_n``, ``precision`` (quadratic), ``block_size``, ``unbiased`` (block).

    Returns
    -------
    tuple
        ``(estimate, details)``.
    """
    p, y = prob.probs, prob.labels
    n = p.shape[0]
    if which in ("b", "uq"):
        if which == "uq" and n < 2:  # the biased form is defined on one row (h(x, x) / 1)
            raise EstimationError("The unbiased quadratic SKCE estimator needs at least two rows.")
        if n < 1:
            raise EstimationError("The quadratic SKCE estimators need at least one row.")
        check_exact_size(n, int(options.get("max_exact_n", MAX_EXACT_N)), f"SKCE_{which}")
        dtype = np.float32 if options.get("precision", "float64") == "float32" else np.float64
        total, trace = h_sums(p, y, spec, dtype=dtype)
        value = total / n**2 if which == "b" else (total - trace) / (n * (n - 1))
        return value, {"sum_h": total, "trace_h": trace}
    if which == "ul":
        if n < 2:
            raise EstimationError("The linear SKCE estimator needs at least two rows.")
        terms = pair_terms(p, y, spec)
        return float(terms.mean()), {"n_pairs": int(terms.size)}
    bsz = int(options.get("block_size") or default_block_size(n))
    terms = block_terms(p, y, spec, bsz, unbiased=bool(options.get("unbiased", True)))
    return float(terms.mean()), {"block_size": bsz, "n_blocks": int(terms.size)}


def default_block_size(n: int) -> int:
    """Return the default block size of the block SKCE: ``⌊√n⌋`` within ``[2, BLOCK_SIZE_MAX]``."""
    return max(2, min(int(np.sqrt(n)), BLOCK_SIZE_MAX))


#: Options every SKCE estimator takes, with their defaults.
_COMMON_OPTIONS = {
    "kernel": "laplacian",
    "metric": "tv",
    "bandwidth": "median",
    "max_exact_n": MAX_EXACT_N,
}
_QUADRATIC_OPTIONS = {**_COMMON_OPTIONS, "precision": "float64"}


def _kernel_estimate(
    probs: np.ndarray,
    labels: np.ndarray,
    which: str,
    *,
    lens: str,
    class_weights: ArrayLike | None,
    class_names: tuple[str, ...] | None,
    rng: np.random.Generator | None,
    options: dict,
) -> Estimate:
    ESTIMATORS.get(f"skce-{which}").check(options=options)
    if options.get("precision", "float64") not in ("float64", "float32"):
        raise ConfigError(
            f"precision must be 'float64' (exact) or 'float32' (faster, ~1e-7 relative error "
            f"per kernel value); got {options['precision']!r}."
        )
    problems = lens_problems(
        probs, labels, lens, class_names=class_names, class_weights=class_weights, validated=True
    )
    if which in ("b", "uq"):
        limit = int(options.get("max_exact_n", MAX_EXACT_N))
        check_exact_size(problems[0].probs.shape[0], limit, f"SKCE_{which}")
    # one bandwidth per component (a bootstrap resample holds each at its full-sample value)
    held = options.get("bandwidth")
    per = held if isinstance(held, tuple | list) else None
    if per is not None and len(per) != len(problems):
        raise ConfigError(
            f"bandwidth gives {len(per)} values for the {len(problems)} components of the "
            f"{lens} lens; give one value, a rule, or one value per component."
        )
    values, notes = [], {}
    for i, prob in enumerate(problems):
        own = options if per is None else {**options, "bandwidth": per[i]}
        spec, how = spec_from_options(prob.probs, own, rng)
        value, extra = skce_value(prob, spec, which, options)
        values.append(value)
        notes[prob.name] = {"bandwidth": spec.bandwidth, "bandwidth_rule": how, **extra}
    weights = np.array([pr.weight for pr in problems])
    total = float(np.dot(weights, values))
    first = notes[problems[0].name]
    details = {
        "kernel": options.get("kernel", "laplacian"),
        "metric": options.get("metric", "tv"),
        "bandwidth": first["bandwidth"],
        "bandwidth_rule": first["bandwidth_rule"],
        "squared": True,
        "signed": which != "b",
        "per_component": notes,
    }
    details.update({k: v for k, v in first.items() if k not in details})
    return Estimate(
        value=total,
        components=tuple(pr.name for pr in problems),
        component_values=tuple(float(v) for v in values),
        bins=None,
        details=details,
    )


_KERNEL_META = {
    "family": "kernel",
    "default_lens": "canonical",
    "quantity": "squared kernel calibration error (a different quantity from ℓp ECE)",
    "norms": None,
    "lenses": ("canonical", "binary", "top-label", "classwise"),
}
_KERNEL_FORMULA = "Widmann, Lindsten & Zachariah (2019), Table 1; kernel exp(−d/ν)·I"


def _register_skce(which: str, func_name: str, doc: str, **fields: Any) -> Callable[..., Estimate]:
    """Register the SKCE estimator ``skce-<which>`` and return its function ``func_name``."""

    def func(
        probs, labels, *, lens="canonical", norm=None, binning=None, n_bins=None,
        tie_policy=None, class_weights=None, class_names=None, rng=None, **options,
    ) -> Estimate:  # fmt: skip
        return _kernel_estimate(
            probs, labels, which, lens=lens, class_weights=class_weights,
            class_names=class_names, rng=rng, options=options,
        )  # fmt: skip

    func.__name__ = func.__qualname__ = func_name
    func.__doc__ = doc
    meta = {"formula": _KERNEL_FORMULA, **_KERNEL_META}
    return ESTIMATORS.register(f"skce-{which}", **{**meta, **fields})(func)


skce_biased = _register_skce(
    "b",
    "skce_biased",
    "Biased SKCE estimator ``n⁻² Σ_ij h_ij``; ``norm``/binning options are ignored.",
    label="SKCE (biased)",
    description="Squared kernel calibration error, mean of h over all n² pairs; ≥ 0, biased upwards.",
    quadratic=True,
    options=_QUADRATIC_OPTIONS,
)
skce_unbiased_quadratic = _register_skce(
    "uq",
    "skce_unbiased_quadratic",
    "Unbiased SKCE estimator ``Σ_{i≠j} h_ij / (n(n−1))``.",
    label="SKCE (unbiased, quadratic)",
    description="Unbiased U-statistic of the squared kernel calibration error; can be negative.",
    quadratic=True,
    options=_QUADRATIC_OPTIONS,
    bootstrap_truth="skce-b",
)
skce_unbiased_linear = _register_skce(
    "ul",
    "skce_unbiased_linear",
    "Linear SKCE estimator ``⌊n/2⌋⁻¹ Σ_i h_{2i−1,2i}`` (input order matters).",
    label="SKCE (unbiased, linear)",
    description="Mean of h over consecutive pairs (1,2), (3,4), …: linear cost, larger variance.",
    options=_COMMON_OPTIONS,
    bootstrap_truth="skce-b",
)
skce_block = _register_skce(
    "block",
    "skce_block",
    "Block SKCE estimator with ``block_size`` rows per block (tail dropped).",
    label="SKCE (block)",
    description="Mean of unbiased SKCE estimates over consecutive blocks (option block_size, default ⌊√n⌋ up to 100).",
    formula="Widmann, Lindsten & Zachariah (2021), block estimator",
    options={**_COMMON_OPTIONS, "block_size": None, "unbiased": True},
    bootstrap_truth="skce-b",
)


@ESTIMATORS.register(
    "mmce",
    label="MMCE",
    description="Maximum mean calibration error (Kumar et al. 2018) on the confidence, Laplacian kernel exp(−|c−c′|/0.4).",
    formula="Kumar, Sarawagi & Jain (2018); Widmann et al. (2019) App. I.2",
    family="kernel",
    quadratic=True,
    norms=None,
    lenses=("top-label",),
    quantity="kernel distance of the confidence (a different quantity from ℓp ECE)",
    bootstrap_truth="mmce",
    truth_options={"unbiased": False},
    options={
        "kernel": "laplacian",
        "bandwidth": MMCE_BANDWIDTH,
        "unbiased": False,
        "max_exact_n": MAX_EXACT_N,
        "precision": "float64",
    },
)
def mmce(
    probs, labels, *, lens="top-label", norm=None, binning=None, n_bins=None,
    tie_policy=None, class_weights=None, class_names=None, rng=None, **options,
) -> Estimate:  # fmt: skip
    """MMCE ``√max(0, MMCE²)``; MMCE² is the biased (default) or unbiased SKCE of the reduction.

    Options: ``bandwidth`` (default 0.4, or ``"median"``), ``kernel``, ``unbiased``
    (default False: the V-statistic of Kumar et al.), ``max_exact_n``.
    """
    if lens not in ("top-label", None):
        raise ConfigError(
            "MMCE is defined on the top-label lens (the confidence); use lens='top-label'."
        )
    opts = ESTIMATORS.get("mmce").check(options=options)
    prob = lens_problems(probs, labels, "top-label", validated=True)[0]
    check_exact_size(prob.probs.shape[0], int(opts["max_exact_n"]), "MMCE")
    # MMCE takes no metric option: its reduction is defined with the TV distance
    spec, how = spec_from_options(prob.probs, opts, rng, scale=0.5)
    which = "uq" if opts["unbiased"] else "b"
    sq, extra = skce_value(prob, spec, which, options)
    value = float(np.sqrt(max(sq, 0.0)))
    return Estimate(
        value=value,
        components=("top-label",),
        component_values=(value,),
        bins=None,
        details={
            "squared_value": sq,
            "kernel": spec.kernel,
            "bandwidth": spec.bandwidth,
            "bandwidth_rule": how,
            "unbiased": which == "uq",
            **extra,
        },
    )
