"""Boundary checks for array inputs of the public API.

File loading (with its lint report) lives in :mod:`core.data`; these checks are
the light ones every public function applies to raw arrays.
"""

from __future__ import annotations

import weakref

import numpy as np
from numpy.typing import ArrayLike

from core.errors import ConfigError, DataError

#: Read-only probability matrices that passed :func:`as_prob_matrix` (e.g. those of a loaded
#: :class:`core.data.Predictions`), by ``id``; weak, so nothing is kept alive.
_TRUSTED: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()

#: Tolerance on row sums of a probability matrix (float32 softmax outputs sum to 1 ± 1e-6).
ROW_SUM_TOL = 1e-4

#: Most bins of a binning: past this, bins hold a handful of rows at any sample size a
#: machine holds, and per-bin tables and bootstrap chunks grow with the count.
MAX_BINS = 10_000
#: Most resamples of a bootstrap or resampling test: the Monte Carlo error of a 95%
#: interval is long negligible, and each resample costs a pass over the data.
MAX_RESAMPLES = 100_000
#: Most rows per batch of the stream engine (memory grows with the batch).
MAX_BATCH_ROWS = 50_000_000


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
    matrix (:func:`core.lenses.lens_view` reads either).

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
    if isinstance(probs, np.ndarray) and _TRUSTED.get(id(probs)) is probs:
        if not probs.flags.writeable:
            # validated when it was made read-only: a 50,000 × 1,000 matrix costs more to
            # check than a binned estimator costs to compute
            return probs
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
        # Comparisons with NaN are False, so this one pass also rejects NaN and infinities.
        if not (p.min() >= 0.0 and p.max() <= 1.0):
            _raise_bad_values(p)
        return p
    if p.shape[1] < 2:
        raise DataError("A probability matrix needs at least two columns (one per class).")
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
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise DataError(
            f"Labels must lie in 0..{n_classes - 1} for {n_classes} classes; found "
            f"{int(y.min())}..{int(y.max())}. 1-indexed labels are converted by core.load_predictions."
        )
    return y


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


def check_predictions(
    probs: ArrayLike, labels: ArrayLike, *, matrix: bool = True
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Validate predictions and labels and say whether they are binary.

    The one place where an array's shape decides what it means: a 1-D vector (or one
    column) is P(y=1) of a binary problem, which every score treats with the binary
    convention (see :mod:`core.scores`); a matrix, two columns included, is a vector of
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
