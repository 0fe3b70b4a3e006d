"""Pool-adjacent-violators (PAV): the one isotonic fit of :mod:`core`.

Isotonic regression of 0/1 outcomes on scores, with tied scores pooled first (their
outcomes averaged, weighted by count), is a non-decreasing step function on the distinct
scores. Every isotonic fit in :mod:`core` goes through :func:`weighted_pav` (a weighted
PAV on values already in score order, ``scipy.optimize.isotonic_regression``, O(m)):
the isotonic recalibrator (:mod:`core.recalibration.isotonic`, via :func:`pav_blocks`),
the CORP reliability diagram and its MCB/DSC/UNC decomposition (:mod:`core.stats.corp`) and the
``mcb`` estimator's kernel, which all see the distinct scores as groups with a count and a
number of positive outcomes.

Cost: the rows are sorted by one ``numpy.sort`` of uint64 keys ``(bits(score) << 1) |
outcome`` (:func:`_sorted_keys`; no ``argsort``, no gathers). The ties (:func:`tie_groups`,
bit-identical to ``numpy.unique`` followed by a ``bincount``) and the PAV's elements
(:func:`pav_blocks`: runs of distinct scores with one outcome pooled first, the same bits)
take a few vectorised passes over the sorted rows, so a fit of 10⁵ or 10⁶ binary rows
takes about 1.0–1.1× the sort of its keys plus ``isotonic_regression`` on its distinct
scores' means.
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
    least 2 or NaN (its key would not order like the score). ``s`` may be strided (a
    column of a matrix): its bits are read in place, not copied first. The buffer is
    reused by the next call in the same thread: a fresh 400 kB temporary per component
    costs page faults comparable to the sort itself.
    """
    bits = np.asarray(s, dtype=np.float64).view(np.uint64)
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


def _sorted_rows(
    s: np.ndarray, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """Rows sorted by score: score bits, 0/1 outcomes and the first row of each distinct score.

    From one sort of :func:`_sorted_keys` (None where it gives None): the keys shifted
    back to the scores' bits (uint64, in the scratch buffer: copy what is kept), the
    outcomes as uint8 (negatives before positives within a tie) and the first row of
    each distinct score, None when there are no ties (every row is one).
    """
    key = _sorted_keys(s, t)
    if key is None:
        return None
    if sys.byteorder == "little":
        # the low byte of each key: a strided view, so the temporary is n bytes, not 8n
        outcome = key.view(np.uint8)[::8] & np.uint8(1)
    else:
        outcome = (key & np.uint64(1)).astype(np.uint8)
    key >>= np.uint64(1)
    starts = _run_starts(key)
    return key, outcome, None if starts.size == key.size else starts


def _run_starts(v: np.ndarray) -> np.ndarray:
    """Return the first position of each run of equal values of ``v`` (non-empty)."""
    new = np.empty(v.size, dtype=bool)
    new[0] = True
    np.not_equal(v[1:], v[:-1], out=new[1:])
    return np.flatnonzero(new)


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
    rows = _sorted_rows(s, t)
    if rows is None:
        return None
    key, outcome, starts = rows
    if starts is None:  # continuous scores: every row is its own group
        counts = np.ones(key.size, dtype=np.int64)
        return key.view(np.float64).copy(), counts, outcome.astype(np.float64)
    counts = np.diff(starts, append=key.size)
    positives = np.add.reduceat(outcome, starts, dtype=np.float64)
    return key[starts].view(np.float64), counts, positives


def _pav_elements(
    outcome: np.ndarray, starts: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Return the PAV elements of sorted rows (:func:`_sorted_rows`; see :func:`pav_blocks`).

    An element is a maximal run of distinct scores whose outcomes are all 0, a maximal
    run of distinct scores whose outcomes are all 1, or one distinct score with both.

    Returns
    -------
    lo : numpy.ndarray
        First row of each element.
    means : numpy.ndarray
        Mean outcome of each element.
    first : numpy.ndarray or None
        Index of each element's first distinct score (None with no ties: ``lo``).
    """
    if starts is None:  # no ties: the elements are the runs of equal outcomes
        lo = _run_starts(outcome)
        return lo, outcome[lo].astype(np.float64), None
    last = np.empty_like(starts)
    last[:-1] = starts[1:] - 1
    last[-1] = outcome.size - 1
    # 0: all outcomes 0, 2: all 1, 1: both (a tie's negatives sort before its positives)
    kind = outcome[starts] + outcome[last]
    opens = np.empty(starts.size, dtype=bool)
    opens[0] = True
    np.not_equal(kind[1:], kind[:-1], out=opens[1:])
    opens |= kind == 1
    first = np.flatnonzero(opens)
    lo = starts[first]
    positives = np.add.reduceat(outcome, lo, dtype=np.float64)
    return lo, positives / np.diff(lo, append=outcome.size), first


def _element_fit(
    outcome: np.ndarray, starts: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """PAV on the elements of sorted rows (:func:`_pav_elements`), weighted by their rows.

    Returns
    -------
    lo, rows : numpy.ndarray
        First row and number of rows of each element.
    fitted : numpy.ndarray
        Fitted value of each element.
    first : numpy.ndarray or None
        As :func:`_pav_elements`.
    """
    lo, means, first = _pav_elements(outcome, starts)
    rows = np.diff(lo, append=outcome.size)
    return lo, rows, weighted_pav(means, rows.astype(np.float64)), first


def pav_blocks(
    s: np.ndarray, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Blocks of the isotonic fit of 0/1 outcomes ``t`` on scores ``s``.

    The result is that of :func:`pav_fit` summarised by blocks of equal fitted value:
    ``x, fitted = pav_fit(s, t)``; a block is a maximal run of equal ``fitted``.

    For float64 scores in ``[0, 2)`` it is computed from one sort of uint64 keys
    (:func:`_sorted_keys`) and a PAV on a shorter sequence: every maximal run of
    distinct scores whose outcomes are all 0 is one element of mean 0, every maximal
    run of distinct scores whose outcomes are all 1 one element of mean 1 (weight: the
    run's row count), and every distinct score with both outcomes its own element
    (with no ties, the elements are the runs of equal outcomes). The result is
    bit-identical to PAV on all distinct scores: in ``scipy.optimize.isotonic_regression``
    a zero-mean element always pools with the block before it (``x_prev >= 0``), adding
    exactly ``0`` to the block's weighted sum and an exact integer to its weight; the
    second of a run of mean-1 elements pools with the block of value 1 the first one
    opened (``1 >= 1``) and the block stays exactly 1, adding an exact integer to both.
    So pooling a run at once gives the same sums, the same comparisons and the same block
    values. For a one-vs-rest component with few positives the PAV input shrinks from
    ``n`` to about twice the number of positives; for continuous binary scores, to the
    number of runs of equal outcomes (about ``n/3`` for uniform calibrated scores).

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
    rows = None if tb is None else _sorted_rows(s, tb)
    if rows is None:
        x, fitted = pav_fit(s, t)
        starts = _run_starts(fitted)
        ends = np.append(starts[1:] - 1, x.size - 1)
        keep = np.unique(np.concatenate([starts, ends]))
        return x[starts], fitted[starts], x[keep], fitted[keep]
    key, outcome, starts = rows
    lo, _, fitted, _ = _element_fit(outcome, starts)
    first = _run_starts(fitted)
    x_lo = key[lo[first]].view(np.float64)
    # a block's last row is the row before the next block's first one
    x_hi = key[np.append(lo[first[1:]], key.size) - 1].view(np.float64)
    value = fitted[first]
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
    ``[0, 2)`` and 0/1 outcomes the rows are sorted by one key sort (:func:`_sorted_keys`)
    and PAV runs on the elements of :func:`pav_blocks`, whose fits are spread back over
    their distinct scores; otherwise the ties are found by ``numpy.unique``. Both give
    the same bits as PAV on every distinct score.

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
    rows = None if tb is None else _sorted_rows(s, tb)
    if rows is None:
        x, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
        means = np.bincount(inverse, weights=t, minlength=x.size) / counts
        return x, weighted_pav(means, counts.astype(np.float64))
    key, outcome, starts = rows
    _, per_element, fitted, first = _element_fit(outcome, starts)
    if starts is None:  # an element's distinct scores are its rows
        return key.view(np.float64).copy(), np.repeat(fitted, per_element)
    return key[starts].view(np.float64), np.repeat(fitted, np.diff(first, append=starts.size))
