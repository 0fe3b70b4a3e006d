"""Lenses: how a prediction becomes one or more 1-D (score, outcome) problems.

- ``binary``: P(y=1) against 1[y = 1] (two classes only).
- ``top-label``: the largest probability against 1[y = argmax]; ties go to the lowest index.
- ``classwise``: one-vs-rest per class, P(y=k) against 1[y = k], with class weights
  (uniform by default) used to aggregate.
- ``canonical``: the full vector (kernel estimators only; it has no 1-D view).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from core.base.errors import ConfigError
from core.base.parallel import even_pieces, map_helped
from core.base.registry import Entry, Registry
from core.base.validation import check_probs_labels, row_top


@dataclass(frozen=True, eq=False)
class LensView:
    """One or more 1-D calibration problems derived from predictions.

    Attributes
    ----------
    lens : str
        The lens name.
    scores : tuple of numpy.ndarray
        One float64 score vector per component (from :func:`lens_view`, columns of the
        probability matrix are views: read-only use).
    outcomes : tuple of numpy.ndarray
        Matching 0/1 outcomes: float64 from :func:`apply_lens`; from :func:`lens_view`
        the labels themselves (binary lens) or booleans, which every consumer of a
        binned view reads as 0/1 (an eighth of the memory of float64).
    names : tuple of str
        Component names (class names for ``classwise``).
    weights : numpy.ndarray
        Aggregation weights of the components, summing to 1.
    """

    lens: str
    scores: tuple[np.ndarray, ...]
    outcomes: tuple[np.ndarray, ...]
    names: tuple[str, ...]
    weights: np.ndarray


def top_label(probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the confidence and predicted class of each row.

    Parameters
    ----------
    probs : numpy.ndarray
        ``(n, K)`` probability matrix, or the ``(n,)`` P(y=1) of binary predictions
        (the matrix ``[1 − p, p]``).

    Returns
    -------
    confidence : numpy.ndarray
        ``max_k probs[i, k]``.
    predicted : numpy.ndarray
        ``argmax_k probs[i, k]``; ties go to the lowest index.
    """
    if probs.ndim == 1:
        confidence = 1.0 - probs  # the matrix's first column, to the bit
        predicted = probs > confidence
        np.maximum(confidence, probs, out=confidence)
        return confidence, predicted.astype(np.intp)
    known = _KNOWN_TOP.get()
    if known is not None and known[0] is probs:
        return known[1]
    return top_of_rows(probs)


#: Rows' top label already taken by the validating pass (:func:`known_top_label`), by matrix.
_KNOWN_TOP: ContextVar[tuple[np.ndarray, tuple[np.ndarray, np.ndarray]] | None] = ContextVar(
    "known_top_label", default=None
)

#: Bytes of a matrix's rows given to one thread by :func:`top_of_rows`.
_TOP_PIECE_BYTES = 1 << 23


def top_of_rows(probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return each row's largest entry and its index, pieces of rows on the thread pool.

    Each row's values are :func:`core.base.validation.row_top`'s (numpy's argmax: ties to the
    lowest index), whatever the pieces and the number of threads.

    Parameters
    ----------
    probs : numpy.ndarray
        ``(n, K)`` matrix.

    Returns
    -------
    confidence : numpy.ndarray
        ``(n,)`` float64 ``probs[i, predicted[i]]``.
    predicted : numpy.ndarray
        ``(n,)`` intp ``probs.argmax(axis=1)``.
    """
    n, k = probs.shape
    confidence, predicted = np.empty(n), np.empty(n, dtype=np.intp)

    def piece(bounds: tuple[int, int]) -> None:
        lo, hi = bounds
        row_top(probs[lo:hi], confidence[lo:hi], predicted[lo:hi])

    rows = max(1, _TOP_PIECE_BYTES // (8 * k))
    map_helped(piece, even_pieces(n, rows), entries=probs.size)
    return confidence, predicted


@contextmanager
def known_top_label(probs: np.ndarray, top: tuple[np.ndarray, np.ndarray] | None) -> Iterator[None]:
    """Let :func:`top_label` of ``probs`` return a top label already taken, inside the block.

    :func:`core.inference.calibration.calibration_error` validates a matrix and takes its rows'
    top label in one pass (:func:`core.base.validation.check_with_top_label`); the
    estimator's top-label lens then reads it instead of a second pass. It is only used
    for the very array it was taken from (``is``), in this context (threads of the pool
    compute their own), while the block runs; nothing modifies the matrix in between.

    Parameters
    ----------
    probs : numpy.ndarray
        The validated ``(n, K)`` matrix.
    top : tuple of numpy.ndarray or None
        Read-only ``(confidence, predicted)`` of ``probs`` (:func:`top_of_rows`); None
        changes nothing.
    """
    token = _KNOWN_TOP.set(None if top is None else (probs, top))
    try:
        yield
    finally:
        _KNOWN_TOP.reset(token)


def apply_lens(
    probs: ArrayLike,
    labels: ArrayLike,
    lens: str = "top-label",
    *,
    class_names: tuple[str, ...] | None = None,
    class_weights: ArrayLike | None = None,
) -> LensView:
    """Turn predictions and labels into 1-D score/outcome problems.

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like
        Class indices ``0..K-1``.
    lens : {"binary", "top-label", "classwise"}
        See the module docstring.
    class_names : tuple of str, optional
        Names for the classwise components; default ``"0"``, ``"1"``, ...
    class_weights : array_like, optional
        Non-negative weights per class for ``classwise``; normalised to sum 1.
        Default uniform.

    Returns
    -------
    LensView
        The components (float64 outcomes).

    Raises
    ------
    ConfigError
        For an unknown lens, ``binary`` with more than two classes, ``canonical``
        (which has no 1-D view) or bad class weights.
    """
    p, y = check_probs_labels(probs, labels, matrix=False)
    view = lens_view(p, y, lens, class_names=class_names, class_weights=class_weights)
    outcomes = tuple(o.astype(np.float64) for o in view.outcomes)
    return dataclasses.replace(view, outcomes=outcomes)


def lens_view(
    probs: np.ndarray,
    labels: np.ndarray,
    lens: str,
    *,
    class_names: tuple[str, ...] | None = None,
    class_weights: ArrayLike | None = None,
) -> LensView:
    """Return the 1-D view of already validated predictions.

    Same result as :func:`apply_lens` without validating the ``(n, K)`` matrix again (on a
    50,000 × 1,000 matrix that check costs more than a binned estimator), and with
    compact outcomes: the labels themselves for the binary lens, booleans otherwise.
    Classwise scores are views of the matrix's columns; nothing of size ``n × K`` is
    made.

    Parameters
    ----------
    probs : numpy.ndarray
        Validated ``(n, K)`` float64 probabilities, or the ``(n,)`` P(y=1) of binary
        predictions (:func:`core.base.validation.as_probs`), read as ``[1 − p, p]``.
    labels : numpy.ndarray
        Validated int64 labels.
    lens : str
        A lens with a 1-D view.
    class_names : tuple of str, optional
        Component names for the classwise lens.
    class_weights : array_like, optional
        Classwise aggregation weights.

    Returns
    -------
    LensView
        The components.

    Raises
    ------
    ConfigError
        For an unknown lens, a lens without 1-D view, or mismatched class names.
    """
    k = n_classes(probs)
    names = tuple(class_names) if class_names is not None else tuple(str(i) for i in range(k))
    if len(names) != k:
        raise ConfigError(f"{len(names)} class names given for {k} classes.")
    entry = LENSES.get(lens)
    if entry.kernel_only:
        raise ConfigError(
            f"The {lens!r} lens has no one-dimensional view; use a kernel estimator "
            "(SKCE, MMCE) or the binary, top-label or classwise lens."
        )
    return entry.func(probs, labels, names, class_weights)


def data_lens(n_classes: int) -> str:
    """Return the lens of data with ``n_classes`` classes when none is chosen.

    Two classes (a P(y=1) column or two probability columns) take the binary lens, as the
    peers and the dashboard read them; more take the top-label lens. Estimators whose own
    default is another lens (the kernel estimators' canonical one) keep it
    (:meth:`core.estimators.base.EstimatorInfo.lens_for`).
    """
    return "binary" if n_classes == 2 else "top-label"


def n_classes(probs: np.ndarray) -> int:
    """Return ``K`` of validated predictions: 2 for a P(y=1) vector, else the columns."""
    return 2 if probs.ndim == 1 else int(probs.shape[1])


def class_scores(probs: np.ndarray, k: int) -> np.ndarray:
    """Return P(y=k) of every row: a view of the matrix's column.

    For a P(y=1) vector, class 1 is the vector itself and class 0 is ``1 − p`` (computed,
    equal to the first column of :func:`core.base.validation.binary_matrix`).
    """
    if probs.ndim == 2:
        return probs[:, k]
    return probs if k == 1 else 1.0 - probs


@dataclass(frozen=True, kw_only=True)
class LensInfo(Entry):
    """A lens.

    Attributes
    ----------
    kernel_only : bool
        The lens has no one-dimensional view (only kernel estimators accept it).
    row_argmax : bool
        The lens reads every row's argmax of a matrix (:func:`top_label`), so validation
        takes it in the same pass (:func:`known_top_label`).
    per_class : bool
        One component per class (else one component).
    axis : str
        What a component's score is, as an axis title; ``{component}`` stands for the
        component's name.
    """

    kernel_only: bool = False
    row_argmax: bool = False
    per_class: bool = False
    axis: str = "{component} score"


def lens_components(lens: str, n_classes: int) -> int:
    """Return the number of components a lens gives on ``n_classes`` classes.

    Examples
    --------
    >>> lens_components("classwise", 10), lens_components("top-label", 10)
    (10, 1)
    """
    return int(n_classes) if LENSES.get(lens).per_class else 1


def lens_axis(lens: str, component: str) -> str:
    """Return what a lens component's score is, in the words of an axis title.

    Examples
    --------
    >>> lens_axis("binary", "1"), lens_axis("classwise", "cat")
    ('P(y = 1)', 'classwise score (cat)')
    """
    return LENSES.get(lens).axis.format(component=component)


LENSES: Registry[LensInfo] = Registry("lens", LensInfo)


@LENSES.register(
    "binary",
    label="Binary P(y=1)",
    description="P(y=1) against the label; two classes only.",
    axis="P(y = 1)",
)
def _binary(p: np.ndarray, y: np.ndarray, names: tuple[str, ...], _weights: object) -> LensView:
    if n_classes(p) != 2:
        raise ConfigError(
            f"The binary lens needs two classes; these predictions have {n_classes(p)}. "
            "Use the top-label or classwise lens."
        )
    # validated labels of two classes are 0 or 1 already: the outcome is the label itself
    return LensView("binary", (class_scores(p, 1),), (y,), (names[1],), np.ones(1))


@LENSES.register(
    "top-label",
    label="Top-label (confidence)",
    description="Confidence of the predicted class against whether the prediction is correct.",
    row_argmax=True,
    axis="top-label confidence",
)
def _top_label(p: np.ndarray, y: np.ndarray, _names: tuple[str, ...], _weights: object) -> LensView:
    conf, pred = top_label(p)
    return LensView("top-label", (conf,), (pred == y,), ("top-label",), np.ones(1))


@LENSES.register(
    "classwise",
    label="Classwise (marginal)",
    description="Each class one-vs-rest; errors aggregated over classes with class weights.",
    per_class=True,
    axis="classwise score ({component})",
)
def _classwise(
    p: np.ndarray, y: np.ndarray, names: tuple[str, ...], class_weights: ArrayLike | None
) -> LensView:
    k = n_classes(p)
    if class_weights is None:
        w = np.full(k, 1.0 / k)
    else:
        w = np.asarray(class_weights, dtype=np.float64)
        if w.shape != (k,) or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
            raise ConfigError(
                f"class_weights must be {k} non-negative numbers with a positive sum."
            )
        w = w / w.sum()
    # column views and booleans: K copies of the columns and K float one-hot vectors
    # would hold twice the matrix again
    scores = tuple(class_scores(p, j) for j in range(k))
    outcomes = tuple(y == j for j in range(k))
    return LensView("classwise", scores, outcomes, names, w)


@LENSES.register(
    "canonical",
    label="Canonical (full vector)",
    description="The whole probability vector; for kernel estimators (SKCE, MMCE).",
    kernel_only=True,
)
def _canonical(*_args: object) -> LensView:
    raise ConfigError("The canonical lens has no one-dimensional view.")
