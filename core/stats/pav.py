"""Pool-adjacent-violators (PAV): the one isotonic fit of :mod:`core`.

Isotonic regression of 0/1 outcomes on scores, with tied scores pooled first (their
outcomes averaged, weighted by count), is a non-decreasing step function on the distinct
scores. Every isotonic fit in :mod:`core` goes through :func:`weighted_pav` (a weighted
PAV on values already in score order, ``scipy.optimize.isotonic_regression``, O(m)):
the isotonic recalibrator (:mod:`core.recalibration.isotonic`, via :func:`pav_blocks`),
the CORP reliability diagram and its MCB/DSC/UNC decomposition (:mod:`core.stats.corp`) and the
``mcb`` estimator's kernel, which all see the distinct scores as groups with a count and a
number of positive outcomes.

Cost: the ties are found by one ``numpy.sort`` of uint64 keys ``(bits(score) << 1) |
outcome`` (:func:`tie_groups`; no ``argsort``, no gathers), bit-identical to
``numpy.unique`` followed by a ``bincount``.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
from scipy.optimize import isotonic_regression

__all__ = ["pav_blocks", "pav_fit", "tie_groups", "weighted_pav"]


def weighted_pav(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted isotonic (non-decreasing) fit of values given in score order.

    The least-squares projection ``argmin_z Σ_j w_j (z_j − v_j)²`` over non-decreasing
    ``z``, computed by pool-adjacent-violators (``scipy.optimize.isotonic_regression``).

    Parameters
    ----------
    values : numpy.ndarray
        ``(m,)`` values (e.g. the mean outcome of each distinct score, ascending scores).
    weights : numpy.ndarray
        ``(m,)`` positive weights (e.g. the count of each distinct score).

    Returns
    -------
    numpy.ndarray
        ``(m,)`` fitted values.

    Examples
    --------
    >>> weighted_pav(np.array([0.0, 1.0, 0.0, 1.0]), np.ones(4)).tolist()
    [0.0, 0.5, 0.5, 1.0]
    """
    return isotonic_regression(values, weights=weights, increasing=True).x


#: Largest bit pattern (as uint64) of a score the sorted-key path handles: below 2.0, so
#: shifting it left by one loses nothing; negative scores and NaN lie above it.
_KEY_LIMIT = np.uint64(1 << 62)


_SCRATCH = threading.local()


def _sorted_keys(s: np.ndarray, t: np.ndarray) -> np.ndarray | None:
    """Sorted uint64 keys ``(bits(s) << 1) | t`` in a per-thread scratch buffer, or None.

    A nonnegative float64's bit pattern orders like the float, so sorting the keys
    (``numpy.sort``: no permutation, no gathers) sorts the rows by score and, within a
    tie, puts negative outcomes first. None when a score is negative, ``-0.0``, at
    least 2 or NaN (its key would not order like the score). The buffer is reused by
    the next call in the same thread: a fresh 400 kB temporary per component costs
    page faults comparable to the sort itself.
    """
    bits = np.ascontiguousarray(s, dtype=np.float64).view(np.uint64)
    if bits.size == 0 or bits.max() >= _KEY_LIMIT:
        return None
    buf = getattr(_SCRATCH, "keys", None)
    if buf is None or buf.size < bits.size:
        buf = _SCRATCH.keys = np.empty(bits.size, dtype=np.uint64)
    key = buf[: bits.size]
    np.left_shift(bits, np.uint64(1), out=key)
    key |= t
    key.sort()
    return key


def _low_bits(key: np.ndarray) -> np.ndarray:
    """Positions of the keys whose lowest bit (the outcome) is set."""
    if sys.byteorder == "little":
        # the low byte of each key: a strided view, so the temporary is n bytes, not 8n
        return np.flatnonzero(key.view(np.uint8)[::8] & 1)
    return np.flatnonzero(key & np.uint64(1))


def _boolean_outcomes(s: np.ndarray, t: np.ndarray) -> np.ndarray | None:
    """Return ``t`` as booleans when the sorted-key path may apply, else None.

    The path needs a 1-D float64 ``s`` and outcomes of the same shape that are all 0
    or 1 (:func:`_sorted_keys` still checks the range of the scores).
    """
    if s.dtype != np.float64 or s.ndim != 1 or t.shape != s.shape:
        return None
    if t.dtype == bool:
        return t
    if ((t == 0) | (t == 1)).all():
        return t.astype(bool)
    return None


def tie_groups(s: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Distinct scores with their counts and numbers of positive outcomes, by one key sort.

    The same result as ``numpy.unique(s, return_inverse=True, return_counts=True)``
    followed by a ``bincount`` of ``t``, from one sort of the keys of
    :func:`_sorted_keys` instead of an ``argsort``.

    Parameters
    ----------
    s : numpy.ndarray
        ``(n,)`` float64 scores in ``[0, 2)`` (probabilities).
    t : numpy.ndarray
        ``(n,)`` boolean outcomes.

    Returns
    -------
    tuple of numpy.ndarray or None
        Distinct scores (ascending), their counts (int64) and positive counts
        (float64); None when a score is negative, ``-0.0``, at least 2 or NaN.
    """
    key = _sorted_keys(s, t)
    if key is None:
        return None
    ones = _low_bits(key)
    key >>= np.uint64(1)
    starts = np.flatnonzero(key[1:] != key[:-1])
    starts += 1
    starts = np.concatenate([np.zeros(1, dtype=starts.dtype), starts])
    counts = np.diff(starts, append=key.size)
    group = np.searchsorted(starts, ones, side="right") - 1
    positives = np.bincount(group, minlength=starts.size).astype(np.float64)
    return key[starts].view(np.float64), counts, positives


def pav_blocks(
    s: np.ndarray, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Blocks of the isotonic fit of 0/1 outcomes ``t`` on scores ``s``.

    The result is that of :func:`pav_fit` summarised by blocks of equal fitted value:
    ``x, fitted = pav_fit(s, t)``; a block is a maximal run of equal ``fitted``.

    For float64 scores in ``[0, 2)`` it is computed from one sort of uint64 keys
    (:func:`_sorted_keys`) and a PAV on a much shorter sequence: every maximal run of
    distinct scores without a positive outcome is one element of mean 0 (weight: its
    row count), every distinct score with a positive is its own element. The result
    is bit-identical to PAV on all distinct scores: in ``scipy.optimize.isotonic_regression``
    a zero-mean element always pools with the block before it (``x_prev >= 0``), adds
    exactly ``0`` to the block's weighted sum and an exact integer to its weight, so
    pooling a run of them at once gives the same sums, the same comparisons and the
    same block values (the leading run stays one block of value 0). For a one-vs-rest
    component with few positives the PAV input shrinks from ``n`` to about twice the
    number of positives.

    Parameters
    ----------
    s : numpy.ndarray
        ``(n,)`` scores.
    t : numpy.ndarray
        ``(n,)`` 0/1 outcomes.

    Returns
    -------
    block_start : numpy.ndarray
        Smallest distinct score of each block, ascending.
    block_value : numpy.ndarray
        Fitted value of each block.
    knot_x : numpy.ndarray
        The smallest and the largest distinct score of each block (once when equal).
    knot_y : numpy.ndarray
        Fitted value at each knot.
    """
    s = np.asarray(s)
    t = np.asarray(t)
    tb = _boolean_outcomes(s, t)
    key = None if tb is None else _sorted_keys(s, tb)
    if key is None:
        x, fitted = pav_fit(s, t)
        change = np.flatnonzero(np.diff(fitted) != 0)
        starts = np.concatenate([[0], change + 1])
        ends = np.concatenate([change, [x.size - 1]])
        keep = np.unique(np.concatenate([starts, ends]))
        return x[starts], fitted[starts], x[keep], fitted[keep]
    n = key.size
    ones = _low_bits(key)
    key >>= np.uint64(1)
    # distinct scores holding a positive: [g_lo, g_hi) rows, g_pos of them positive
    v = key[ones]
    new = np.ones(v.size, dtype=bool)
    np.not_equal(v[1:], v[:-1], out=new[1:])
    first = np.flatnonzero(new)
    v = v[first]
    # a group's positives close it (their keys' low bit sorted them last): it ends after
    # its last positive and starts where its score's run of keys starts — no searches
    last = np.append(first[1:] - 1, ones.size - 1) if first.size else first
    g_hi = ones[last] + 1
    run_start = np.empty(n, dtype=bool)
    run_start[0] = True
    np.not_equal(key[1:], key[:-1], out=run_start[1:])
    start_at = np.where(run_start, np.arange(n), 0)
    np.maximum.accumulate(start_at, out=start_at)
    g_lo = start_at[ones[first]]
    g_pos = np.diff(np.append(first, ones.size))
    # elements: zero run before group 0, group 0, zero run before group 1, ..., last run
    m = v.size
    lo = np.empty(2 * m + 1, dtype=np.int64)
    hi = np.empty(2 * m + 1, dtype=np.int64)
    lo[0], lo[2::2] = 0, g_hi
    hi[-1], hi[:-1:2] = n, g_lo
    lo[1::2], hi[1::2] = g_lo, g_hi
    pos = np.zeros(2 * m + 1)
    pos[1::2] = g_pos
    nonempty = hi > lo
    lo, hi, pos = lo[nonempty], hi[nonempty], pos[nonempty]
    counts = (hi - lo).astype(np.float64)
    fitted = weighted_pav(pos / counts, counts)
    change = np.flatnonzero(fitted[1:] != fitted[:-1])
    b_lo = lo[np.concatenate([[0], change + 1])]
    b_hi = hi[np.append(change, fitted.size - 1)] - 1
    value = fitted[np.concatenate([[0], change + 1])]
    x_lo = key[b_lo].view(np.float64)
    x_hi = key[b_hi].view(np.float64)
    two = x_hi != x_lo  # a block of one distinct score has one knot
    knot_x = np.column_stack([x_lo, x_hi]).ravel()[
        np.column_stack([np.ones_like(two), two]).ravel()
    ]
    knot_y = np.repeat(value, 1 + two)
    return x_lo, value, knot_x, knot_y


def pav_fit(s: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fit a non-decreasing step function of ``s`` to ``t``.

    Tied scores are pooled (mean outcome, weighted by count) and PAV runs on the
    distinct scores (``scipy.optimize.isotonic_regression``). For float64 scores in
    ``[0, 2)`` and 0/1 outcomes the ties are found by :func:`tie_groups`; otherwise by
    ``numpy.unique``. Both give the same bits.

    Parameters
    ----------
    s : numpy.ndarray
        Scores.
    t : numpy.ndarray
        0/1 outcomes.

    Returns
    -------
    x : numpy.ndarray
        Distinct scores, ascending.
    fitted : numpy.ndarray
        Fitted value at each distinct score.
    """
    s = np.asarray(s)
    t = np.asarray(t)
    tb = _boolean_outcomes(s, t)
    groups = None if tb is None else tie_groups(s, tb)
    if groups is not None:
        x, counts, positives = groups
        means = positives / counts
    else:
        x, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
        means = np.bincount(inverse, weights=t, minlength=x.size) / counts
    fitted = weighted_pav(means, counts.astype(np.float64))
    return x, fitted
