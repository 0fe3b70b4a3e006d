"""Elementwise kernels shared by the loader, the binnings and the recalibrators.

Softmax, logit and sigmoid of large matrices, computed in cache-sized blocks written
into one output buffer, so a 50,000 × 1,000 matrix costs one allocation and one pass
through memory, and stable for large scores; and the bin of every score among a few
sorted edges by comparisons (:func:`count_edges`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

#: Probabilities are clipped to [CLIP, 1 - CLIP] before a logit or log is taken.
CLIP = 1e-12


#: Entries per block of blockwise elementwise work: a block's buffers stay in cache
#: across the several passes made over it, instead of streaming the whole matrix each time.
BLOCK_ENTRIES = 1 << 15


def blocks(shape: tuple[int, int], entries: int = BLOCK_ENTRIES) -> Iterator[tuple[slice, slice]]:
    """Yield ``(rows, columns)`` slices that tile a 2-D shape in blocks of about ``entries``.

    Rows longer than ``entries`` are cut into column chunks; shorter rows are grouped.

    Parameters
    ----------
    shape : tuple of int
        ``(rows, columns)``.
    entries : int
        Target entries per block.

    Yields
    ------
    tuple of slice
        Row and column slices of one block.
    """
    n_rows, n_cols = shape
    if n_cols >= entries:
        for r in range(n_rows):
            for c in range(0, n_cols, entries):
                yield slice(r, r + 1), slice(c, c + entries)
    else:
        per = max(1, entries // max(n_cols, 1))
        for r in range(0, n_rows, per):
            yield slice(r, r + per), slice(None)


def _blockwise(
    x: np.ndarray, out: np.ndarray | None, kernel: Callable[[np.ndarray, np.ndarray], object]
) -> np.ndarray:
    """Run ``kernel(block, out_block)`` over the cache-sized blocks of a 1-D or 2-D array."""
    if out is None:
        out = np.empty_like(x)
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    o2 = out.reshape(1, -1) if out.ndim == 1 else out
    for rows, cols in blocks(x2.shape):
        kernel(x2[rows, cols], o2[rows, cols])
    return out


def softmax(
    z: np.ndarray, *, divide_by: float | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """Row-wise softmax of a score matrix, stable for large scores.

    Rows are processed in cache-sized blocks written into one output buffer, so a
    large matrix costs one allocation and one pass through memory.

    Parameters
    ----------
    z : numpy.ndarray
        ``(n, K)`` scores.
    divide_by : float, optional
        Return ``softmax(z / divide_by)`` (a temperature) without a scaled copy of ``z``.
    out : numpy.ndarray, optional
        ``(n, K)`` float64 buffer for the result (may be ``z`` itself).

    Returns
    -------
    numpy.ndarray
        ``(n, K)`` probabilities.
    """
    z = np.asarray(z)
    if out is None:
        out = np.empty(z.shape, dtype=np.float64)
    per = max(1, BLOCK_ENTRIES // max(z.shape[1], 1))
    for i in range(0, z.shape[0], per):
        e = out[i : i + per]
        if divide_by is None:
            np.subtract(z[i : i + per], z[i : i + per].max(axis=1, keepdims=True), out=e)
        else:
            np.divide(z[i : i + per], divide_by, out=e)
            e -= e.max(axis=1, keepdims=True)
        np.exp(e, out=e)
        e /= e.sum(axis=1, keepdims=True)
    return out


def logit(p: np.ndarray, *, out: np.ndarray | None = None) -> np.ndarray:
    """Return ``log(p / (1 - p))`` after clipping ``p`` to ``[CLIP, 1 - CLIP]``.

    Computed as ``log(q / (1 - q))``: one logarithm instead of ``log`` and ``log1p``
    (``1 - q`` is exact for ``q >= 1/2`` and has a tiny absolute error below, so the
    result differs from ``log(q) - log1p(-q)`` by a few ulp of ``log q``). A 2-D
    array is processed in cache-sized blocks (:func:`blocks`).

    Parameters
    ----------
    p : numpy.ndarray
        Probabilities.
    out : numpy.ndarray, optional
        Where to write the result (may be ``p`` itself).

    Returns
    -------
    numpy.ndarray
        The log-odds.
    """
    p = np.asarray(p, dtype=np.float64)
    if p.ndim == 0:
        q = min(max(float(p), CLIP), 1.0 - CLIP)
        return np.float64(np.log(q / (1.0 - q)))

    def kernel(block: np.ndarray, dest: np.ndarray) -> None:
        q = np.clip(block, CLIP, 1.0 - CLIP)
        q /= np.subtract(1.0, q)
        np.log(q, out=dest)

    return _blockwise(p, out, kernel)


def sigmoid(x: np.ndarray, *, out: np.ndarray | None = None) -> np.ndarray:
    """Return the logistic function ``1 / (1 + exp(-x))`` without overflow.

    ``1 / (1 + e)`` for ``x >= 0`` and ``e / (1 + e)`` below, with ``e = exp(-|x|)``:
    one exponential pass, no boolean gathers; a 2-D array is processed in cache-sized
    blocks (:func:`blocks`).

    Parameters
    ----------
    x : numpy.ndarray
        Values.
    out : numpy.ndarray, optional
        Where to write the result (may be ``x`` itself).

    Returns
    -------
    numpy.ndarray
        ``sigmoid(x)``.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        return sigmoid(x.reshape(1))[0]

    def kernel(block: np.ndarray, dest: np.ndarray) -> None:
        e = np.abs(block)
        np.negative(e, out=e)
        np.exp(e, out=e)
        num = np.where(block >= 0, 1.0, e)
        e += 1.0
        np.divide(num, e, out=dest)

    return _blockwise(x, out, kernel)


#: Up to this many edges, bins are counted by comparisons (vectorised) instead of searchsorted.
FEW_EDGES = 16


def count_edges(edges: np.ndarray, s: np.ndarray, side: str) -> np.ndarray:
    """``numpy.searchsorted(edges, s, side)`` for sorted ``edges``.

    With at most ``FEW_EDGES`` edges the count is a sum of vectorised comparisons,
    several times faster than a binary search per value; the result is identical.
    The count is accumulated in one byte per value (it is at most ``FEW_EDGES``),
    which moves an eighth of the memory of an ``intp`` accumulator per edge.
    """
    if edges.size > FEW_EDGES:
        return np.searchsorted(edges, s, side=side)
    compare = np.greater_equal if side == "right" else np.greater
    count = np.zeros(np.shape(s), dtype=np.uint8)
    hit = np.empty(np.shape(s), dtype=bool)
    for e in edges:
        compare(s, e, out=hit)
        count += hit
    return count.astype(np.intp)
