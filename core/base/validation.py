"""Boundary checks for array inputs of the public API.

File loading (with its lint report) lives in :mod:`core.data`; these checks are
the light ones every public function applies to raw arrays.
"""

from __future__ import annotations

import weakref

import numpy as np
from numpy.typing import ArrayLike

from core.base.errors import ConfigError, DataError
from core.base.options import BATCH_ROWS, N_BINS, N_RESAMPLES
from core.base.parallel import PARALLEL_MIN_ENTRIES, even_pieces, map_helped, one_blas_thread

#: Read-only probability matrices that passed :func:`as_prob_matrix` (e.g. those of a loaded
#: :class:`core.data.Predictions`), by ``id``; weak, so nothing is kept alive.
_TRUSTED: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()

#: Tolerance on row sums of a probability matrix (float32 softmax outputs sum to 1 ± 1e-6).
ROW_SUM_TOL = 1e-4

#: The bits of 1.0 as an unsigned integer. For float64 ``x`` read as ``uint64``, the bits
#: are at most these exactly when ``+0.0 ≤ x ≤ 1.0``: a set sign bit (negative values,
#: ``-0.0``), NaN and infinities all read larger. One integer ``max`` checks the range.
_ONE_BITS = np.uint64(np.float64(1.0).view(np.uint64))

#: Bytes of a row block of a probability matrix checked at once: its integer ``max`` (or
#: top label) and its row sums read it while it is in the last-level cache. Smaller blocks
#: fit a core's own cache but make more numpy calls, each a hand-off of the interpreter
#: lock between the threads: on two threads, 1 MiB blocks took 1.7× and 128 KiB blocks
#: 4.5× the time of 4 MiB blocks (50,000 × 1,000, measured on the benchmark's machine).
_BLOCK_BYTES = 1 << 22
#: Bytes of a piece of the matrix given to one thread (pieces depend only on the shape).
_PIECE_BYTES = 1 << 23

#: Most bins of a binning (:data:`core.base.options.N_BINS`, which says why).
MAX_BINS = N_BINS.maximum
#: Most resamples of a bootstrap or resampling test (:data:`core.base.options.N_RESAMPLES`).
MAX_RESAMPLES = N_RESAMPLES.maximum
#: Most rows per batch of the stream engine (:data:`core.base.options.BATCH_ROWS`).
MAX_BATCH_ROWS = BATCH_ROWS.maximum


def as_prob_matrix(probs: ArrayLike) -> np.ndarray:
    """Return predictions as an ``(n, K)`` float64 matrix with ``K >= 2``.

    Parameters
    ----------
    probs : array_like
        ``(n,)`` probabilities of the positive class, or an ``(n, K)`` matrix
        whose rows are probability vectors.

    Returns
    -------
    numpy.ndarray
        ``(n, K)`` float64; a 1-D input becomes ``[1 - p, p]`` (:func:`binary_matrix`).

    Raises
    ------
    DataError
        If values are not finite, lie outside [0, 1], or rows do not sum to 1.
    """
    p = as_probs(probs)
    return binary_matrix(p) if p.ndim == 1 else p


def as_probs(probs: ArrayLike) -> np.ndarray:
    """Return validated predictions without widening binary ones: ``(n,)`` or ``(n, K)``.

    The checks of :func:`as_prob_matrix`; a 1-D input (or one column) stays the float64
    P(y=1) vector, so a function-level call on binary predictions holds no ``[1 − p, p]``
    matrix (:func:`core.stats.lenses.lens_view` reads either).

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or an ``(n, K)`` probability matrix.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` or ``(n, K)`` float64 (the input itself when it is already float64).

    Raises
    ------
    DataError
        If values are not finite, lie outside [0, 1], or rows do not sum to 1.
    """
    return _checked(probs, top_label=False)[0]


def probs_and_top_label(
    probs: ArrayLike,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """Return validated predictions (:func:`as_probs`) and, for a matrix, each row's top label.

    The largest entry of each row and its index (ties to the lowest index, as
    ``numpy.argmax``) are taken in the same pass as the checks, block by block while each
    block is in cache: the top-label lens reads them instead of a second pass over the
    matrix (:func:`core.stats.lenses.known_top_label`).

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or an ``(n, K)`` probability matrix.

    Returns
    -------
    p : numpy.ndarray
        As :func:`as_probs` returns it.
    top : tuple of numpy.ndarray or None
        Read-only ``(confidence, predicted)`` of a matrix (:func:`row_top`); None for a
        vector, a trusted matrix (no pass is made) or a matrix that only the exact checks
        accept.

    Raises
    ------
    DataError
        As :func:`as_probs`.
    """
    return _checked(probs, top_label=True)


def row_top(rows: np.ndarray, confidence: np.ndarray, predicted: np.ndarray) -> None:
    """Fill each row's largest entry and its index (the first maximum, as ``numpy.argmax``).

    Parameters
    ----------
    rows : numpy.ndarray
        ``(m, K)`` float64.
    confidence : numpy.ndarray
        ``(m,)`` float64, set to ``rows[i, predicted[i]]``.
    predicted : numpy.ndarray
        ``(m,)`` intp, set to ``rows.argmax(axis=1)``.
    """
    np.argmax(rows, axis=1, out=predicted)
    _take_rows(rows, predicted, confidence)


def _take_rows(rows: np.ndarray, at: np.ndarray, out: np.ndarray) -> None:
    """Set ``out[i] = rows[i, at[i]]`` for column indices ``at`` known to be in range."""
    if rows.flags.c_contiguous:  # one flat take: cheaper than a two-index gather
        flat = np.arange(0, rows.size, rows.shape[1])
        flat += at
        np.take(rows.reshape(-1), flat, out=out, mode="clip")  # in range: no check
    else:
        out[...] = rows[np.arange(rows.shape[0]), at]


def _checked(
    probs: ArrayLike, *, top_label: bool
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """:func:`as_probs`, with a matrix's top label when asked (see :func:`probs_and_top_label`)."""
    if isinstance(probs, np.ndarray) and _TRUSTED.get(id(probs)) is probs:
        if not probs.flags.writeable:
            # validated when it was made read-only: a 50,000 × 1,000 matrix costs more to
            # check than a binned estimator costs to compute
            return probs, None
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim == 2 and p.shape[1] == 1:
        p = p[:, 0]
    if p.ndim not in (1, 2):
        raise DataError(
            f"Predictions must be 1-D (binary P(y=1)) or 2-D (n, K); got shape {p.shape}."
        )
    if p.shape[0] == 0:
        raise DataError("There are no predictions (0 rows).")
    if p.ndim == 1:
        # one integer pass proves every value in [+0, 1]; only a failure (or -0.0) takes
        # the exact checks below, which say what is wrong
        if p.view(np.uint64).max() <= _ONE_BITS:
            return p, None
        # Comparisons with NaN are False, so this one pass also rejects NaN and infinities.
        if not (p.min() >= 0.0 and p.max() <= 1.0):
            _raise_bad_values(p)
        return p, None
    if p.shape[1] < 2:
        raise DataError("A probability matrix needs at least two columns (one per class).")
    top = (np.empty(p.shape[0]), np.empty(p.shape[0], dtype=np.intp)) if top_label else None
    if _rows_pass(p, top):
        if top is not None:
            for a in top:
                a.setflags(write=False)
        return p, top
    return _check_rows_exactly(p), None


def _rows_pass(p: np.ndarray, top: tuple[np.ndarray, np.ndarray] | None = None) -> bool:
    """Whether a matrix certainly passes :func:`_check_rows_exactly`: one blocked pass.

    Each row block, while it is in cache, gets one integer ``max`` of its bits (every
    entry in ``[+0, 1]``, hence finite and non-negative; see :data:`_ONE_BITS`), its row
    sums by one matrix-vector product and, when ``top`` is given, its rows' top label
    (:func:`row_top`). The sums are compared with ``ROW_SUM_TOL − 4·K·ε``: two ways of
    summing ``K`` terms of total about 1 differ by less than ``2·K·ε``, so a row that
    passes here passes the exact check too. False (an entry outside ``[+0, 1]``,
    ``-0.0``, NaN, a row sum near or past the tolerance) only means the exact check
    decides. Pieces of rows run on the thread pool; every row's numbers, and so the
    answer, do not depend on the pieces or on how many threads there are.

    Parameters
    ----------
    p : numpy.ndarray
        ``(n, K)`` float64, ``K ≥ 2``.
    top : tuple of numpy.ndarray, optional
        ``(n,)`` float64 and intp arrays, filled with each row's largest entry and its
        index (complete only when True is returned).

    Returns
    -------
    bool
        True when every entry is in ``[0, 1]`` and every row sums to 1 within the tolerance.
    """
    n, k = p.shape
    limit = ROW_SUM_TOL - 4.0 * k * np.finfo(np.float64).eps
    ones = np.ones(k)
    block = max(1, _BLOCK_BYTES // (8 * k))

    def piece(bounds: tuple[int, int]) -> bool:
        lo, hi = bounds
        sums = np.empty(hi - lo)
        for a in range(lo, hi, block):
            b = min(a + block, hi)
            rows = p[a:b]
            if top is None:
                largest = rows.view(np.uint64).max()
            else:  # the top label's pass gives the largest bits too (no pass of its own)
                largest = _row_top_bits(rows, top[0][a:b], top[1][a:b])
            if not largest <= _ONE_BITS:
                return False
            np.matmul(rows, ones, out=sums[a - lo : b - lo])
        sums -= 1.0
        np.abs(sums, out=sums)
        return bool(sums.max() <= limit)

    if p.size < PARALLEL_MIN_ENTRIES:  # the pool would not be used: no piece machinery
        return piece((0, n))
    pieces = even_pieces(n, max(block, _PIECE_BYTES // (8 * k)))
    with one_blas_thread():  # the pool's threads are the parallelism: no BLAS threads inside
        return all(map_helped(piece, pieces, entries=p.size))


def _row_top_bits(rows: np.ndarray, confidence: np.ndarray, predicted: np.ndarray) -> np.uint64:
    """:func:`row_top` read off the bits of the entries; return the largest bits of the block.

    Read as ``uint64``, entries in ``[+0, 1]`` order as their values do and equal values
    have equal bits, so the ``argmax`` of the bits is the ``argmax`` of the values (the
    first maximum) whenever the returned bits are at most :data:`_ONE_BITS`; any entry
    outside ``[+0, 1]`` (``-0.0``, NaN, a negative value) has larger bits, so a block that
    holds one returns more and the exact checks decide (``confidence`` and ``predicted``
    are then not used).
    """
    bits = rows.view(np.uint64)
    np.argmax(bits, axis=1, out=predicted)
    top = confidence.view(np.uint64)
    _take_rows(bits, predicted, top)
    return top.max() if top.size else np.uint64(0)


def _check_rows_exactly(p: np.ndarray) -> np.ndarray:
    """Check a probability matrix exactly; raise the :class:`DataError` that says what is wrong.

    Parameters
    ----------
    p : numpy.ndarray
        ``(n, K)`` float64, ``K ≥ 2``.

    Returns
    -------
    numpy.ndarray
        ``p`` when it passes (non-negative entries, row sums within :data:`ROW_SUM_TOL`).
    """
    # Non-negative rows that sum to 1 have every entry in [0, 1]: two passes check everything.
    if not p.min() >= 0.0:
        _raise_bad_values(p)
    deviation = p @ np.ones(p.shape[1]) if p.shape[1] <= 64 else p.sum(axis=1)
    deviation -= 1.0
    np.abs(deviation, out=deviation)
    if not deviation.max() <= ROW_SUM_TOL:
        if not np.isfinite(p).all() or p.max() > 1.0:
            _raise_bad_values(p)
        bad = int((~(deviation <= ROW_SUM_TOL)).sum())
        raise DataError(
            f"{bad} row(s) of the probability matrix do not sum to 1 (within {ROW_SUM_TOL:g}); "
            "renormalise them or load the file with core.load_predictions(renormalize=True)."
        )
    return p


def binary_matrix(p: np.ndarray, *, order: str = "F") -> np.ndarray:
    """Return the ``(n, 2)`` matrix ``[1 − p, p]`` of binary predictions.

    Parameters
    ----------
    p : numpy.ndarray
        ``(n,)`` validated P(y=1).
    order : {"F", "C"}
        Memory layout. Column-major (default) keeps ``P[:, 1]`` (the binary lens)
        contiguous, so estimators run at the speed of a plain 1-D array; a
        :class:`core.data.Predictions` is row-major.

    Returns
    -------
    numpy.ndarray
        ``(n, 2)`` float64.
    """
    matrix = np.empty((p.shape[0], 2), order=order)
    np.subtract(1.0, p, out=matrix[:, 0])
    matrix[:, 1] = p
    return matrix


def trust(probs: np.ndarray) -> np.ndarray:
    """Validate a probability matrix once, make it read-only and skip later checks of it.

    Parameters
    ----------
    probs : numpy.ndarray
        ``(n, K)`` float64 probabilities.

    Returns
    -------
    numpy.ndarray
        The same array, now read-only.
    """
    checked = as_prob_matrix(probs)
    if checked is not probs:
        raise DataError("Only a float64 (n, K) probability matrix can be marked as validated.")
    probs.setflags(write=False)
    _TRUSTED[id(probs)] = probs
    return probs


def _raise_bad_values(p: np.ndarray) -> None:
    """Raise the :class:`DataError` that describes non-finite or out-of-range values."""
    finite = np.isfinite(p)
    if not finite.all():
        bad = int((~finite).reshape(p.shape[0], -1).any(axis=1).sum())
        raise DataError(f"{bad} row(s) of predictions contain NaN or infinity; drop or fix them.")
    raise DataError(
        "Predictions must be probabilities in [0, 1]; found values in "
        f"[{p.min():.4g}, {p.max():.4g}]. If these are logits, load them with "
        "core.load_predictions, which converts logits with a notice."
    )


def as_labels(labels: ArrayLike, n_classes: int, n_rows: int | None = None) -> np.ndarray:
    """Return labels as an int64 vector of class indices ``0..K-1``.

    Parameters
    ----------
    labels : array_like
        Integer class indices (booleans allowed for two classes).
    n_classes : int
        Number of classes ``K``.
    n_rows : int, optional
        Expected length.

    Returns
    -------
    numpy.ndarray
        int64 labels.

    Raises
    ------
    DataError
        If labels are not integers in ``0..K-1`` or the length differs.
    """
    y = np.asarray(labels)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise DataError(f"Labels must be a 1-D vector; got shape {y.shape}.")
    if n_rows is not None and y.shape[0] != n_rows:
        raise DataError(
            f"There are {n_rows} predictions but {y.shape[0]} labels; they must match row for row."
        )
    if y.dtype == bool:
        y = y.astype(np.int64)
    elif y.dtype.kind == "f":
        if not np.isfinite(y).all() or (y != np.round(y)).any():
            raise DataError(
                "Labels must be whole class indices; found non-integer or missing values."
            )
        y = y.astype(np.int64)
    elif y.dtype.kind not in "iu":
        raise DataError(
            f"Labels must be integer class indices 0..{n_classes - 1}; got values of type {y.dtype}. "
            "Use core.load_predictions to map class names or 1-indexed labels."
        )
    y = y.astype(np.int64, copy=False)
    # read as unsigned, negative labels are huge: one pass proves 0 <= y < K
    if y.size and not y.view(np.uint64).max() < n_classes:
        _raise_bad_labels(y, n_classes)
    return y


def _raise_bad_labels(y: np.ndarray, n_classes: int) -> None:
    """Raise the :class:`DataError` of labels outside ``0..K-1`` (if any are)."""
    if y.min() < 0 or y.max() >= n_classes:
        raise DataError(
            f"Labels must lie in 0..{n_classes - 1} for {n_classes} classes; found "
            f"{int(y.min())}..{int(y.max())}. 1-indexed labels are converted by core.load_predictions."
        )


def check_probs_labels(
    probs: ArrayLike, labels: ArrayLike, *, matrix: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a prediction matrix and its labels together.

    Parameters
    ----------
    probs : array_like
        See :func:`as_prob_matrix`.
    labels : array_like
        See :func:`as_labels`.
    matrix : bool, default True
        Widen binary P(y=1) to ``[1 − p, p]``; with False it stays a vector
        (:func:`as_probs`).

    Returns
    -------
    tuple of numpy.ndarray
        ``(P, y)`` with ``P`` of shape ``(n, K)`` (or ``(n,)``) and ``y`` of shape ``(n,)``.
    """
    p = as_prob_matrix(probs) if matrix else as_probs(probs)
    return p, as_labels(labels, 2 if p.ndim == 1 else p.shape[1], p.shape[0])


def check_with_top_label(
    probs: ArrayLike, labels: ArrayLike
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """:func:`check_probs_labels` (``matrix=False``) with each row's top label of a matrix.

    Parameters
    ----------
    probs : array_like
        See :func:`as_probs`.
    labels : array_like
        See :func:`as_labels`.

    Returns
    -------
    p, y : numpy.ndarray
        As :func:`check_probs_labels` with ``matrix=False`` returns them.
    top : tuple of numpy.ndarray or None
        ``(confidence, predicted)``; see :func:`probs_and_top_label`.
    """
    p, top = probs_and_top_label(probs)
    return p, as_labels(labels, 2 if p.ndim == 1 else p.shape[1], p.shape[0]), top


def check_predictions(
    probs: ArrayLike, labels: ArrayLike, *, matrix: bool = True
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Validate predictions and labels and say whether they are binary.

    The one place where an array's shape decides what it means: a 1-D vector (or one
    column) is P(y=1) of a binary problem, which every score treats with the binary
    convention (see :mod:`core.stats.scores`); a matrix, two columns included, is a vector of
    class probabilities. Loaded data carries the same flag as
    :attr:`core.data.Predictions.binary`.

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like
        Class indices ``0..K−1``.
    matrix : bool, default True
        Widen binary P(y=1) to ``[1 − p, p]`` (see :func:`check_probs_labels`).

    Returns
    -------
    p : numpy.ndarray
        ``(n, K)`` probabilities (``(n,)`` P(y=1) of binary ones with ``matrix=False``).
    y : numpy.ndarray
        int64 labels.
    binary : bool
        Whether the input was one P(y=1) vector.
    """
    binary = np.ndim(probs) == 1 or (np.ndim(probs) == 2 and np.shape(probs)[1] == 1)
    p, y = check_probs_labels(probs, labels, matrix=matrix)
    return p, y, binary


def check_norm(norm: float | str) -> float:
    """Return the norm as ``1.0``, ``2.0`` or ``inf``.

    Parameters
    ----------
    norm : {1, 2, numpy.inf, "inf", "l1", "l2", "linf"}
        The ℓp norm.

    Returns
    -------
    float
        ``1.0``, ``2.0`` or ``numpy.inf``.
    """
    aliases = {
        "1": 1.0,
        "l1": 1.0,
        "2": 2.0,
        "l2": 2.0,
        "inf": np.inf,
        "linf": np.inf,
        "max": np.inf,
    }
    if isinstance(norm, str):
        key = norm.strip().lower()
        if key not in aliases:
            raise ConfigError(f"Unknown norm {norm!r}; use 1, 2 or inf.")
        return aliases[key]
    value = float(norm)
    if value not in (1.0, 2.0, np.inf):
        raise ConfigError(f"Unsupported norm {norm!r}; use 1 (ECE), 2 (ℓ2 CE) or inf (MCE).")
    return value


def norm_key(norm: float) -> str:
    """Return a norm as it is written in URLs, metric keys and JSON: ``"1"``, ``"2"``, ``"inf"``.

    Examples
    --------
    >>> norm_key(np.inf), norm_key(2.0)
    ('inf', '2')
    """
    return "inf" if np.isinf(norm) else str(int(norm))


def norm_text(norm: float) -> str:
    """Return a norm as people read it: ``"ℓ1"``, ``"ℓ2"`` or ``"ℓ∞"``.

    Examples
    --------
    >>> norm_text(1.0), norm_text(np.inf)
    ('ℓ1', 'ℓ∞')
    """
    return "ℓ∞" if np.isinf(norm) else f"ℓ{int(norm)}"


def check_count(name: str, value: object, maximum: int | None = None) -> int:
    """Return a count option (a whole number ≥ 1, at most ``maximum``) as an int.

    Parameters
    ----------
    name : str
        The option's name, for the message.
    value : int
        Its value.
    maximum : int, optional
        The largest value allowed (sizes that would exhaust memory are refused here, where
        the option is read, not deep in an allocation).

    Returns
    -------
    int
        The count.

    Raises
    ------
    ConfigError
        If it is not a whole number ≥ 1 or is above ``maximum``.
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ConfigError(f"{name} must be a whole number ≥ 1; got {value!r}.")
    if value < 1:
        raise ConfigError(f"{name} must be at least 1; got {value}.")
    check_at_most(name, value, maximum)
    return int(value)


def check_at_most(name: str, value: int, maximum: int | None) -> None:
    """Raise :class:`ConfigError` when a size option is above its bound (None: unbounded)."""
    if maximum is not None and value > maximum:
        raise ConfigError(f"{name} must be at most {maximum:,}; got {int(value):,}.")


def check_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` from a seed or generator.

    Parameters
    ----------
    seed : int, Generator or None
        ``None`` means seed 0, so results are reproducible by default.

    Returns
    -------
    numpy.random.Generator
        The generator.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(0 if seed is None else seed)
