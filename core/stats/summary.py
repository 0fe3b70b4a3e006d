"""A summary of loaded predictions: accuracy, class counts and the confidence histogram.

:func:`summarize` computes what the Data page shows about predictions (and what
:func:`core.figures.class_balance` and :func:`core.figures.confidence_histogram` draw).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.base.errors import DataError
from core.base.validation import as_prob_matrix
from core.data import as_predictions
from core.stats.binning import bin_stats
from core.stats.lenses import top_label


@dataclass(frozen=True, eq=False)
class DataSummary:
    """Counts of predictions per class and per top-label confidence bin.

    Attributes
    ----------
    n : int
        Number of rows.
    class_names : tuple of str
        Names of the ``K`` classes.
    accuracy : float or None
        Share of rows whose predicted class (argmax, ties to the lowest index) is the
        label; None without labels.
    label_counts : numpy.ndarray or None
        ``(K,)`` rows per true class; None without labels.
    predicted_counts : numpy.ndarray
        ``(K,)`` rows per predicted class.
    mean_probs : numpy.ndarray
        ``(K,)`` mean predicted probability of each class.
    confidence_edges : numpy.ndarray
        ``(B + 1,)`` edges of the equal-width confidence bins on [0, 1].
    confidence_counts : numpy.ndarray
        ``(B,)`` rows per confidence bin.
    correct_counts : numpy.ndarray or None
        ``(B,)`` correctly predicted rows per confidence bin; None without labels.
    """

    n: int
    class_names: tuple[str, ...]
    accuracy: float | None
    label_counts: np.ndarray | None
    predicted_counts: np.ndarray
    mean_probs: np.ndarray
    confidence_edges: np.ndarray
    confidence_counts: np.ndarray
    correct_counts: np.ndarray | None

    @property
    def label_shares(self) -> np.ndarray | None:
        """``(K,)`` share of rows per true class; None without labels."""
        return None if self.label_counts is None else self.label_counts / self.n


def summarize(
    predictions: Any, *, n_bins: int = 20, class_names: Sequence[str] | None = None
) -> DataSummary:
    """Count predictions per class and per top-label confidence bin.

    Parameters
    ----------
    predictions : Predictions or (probs, labels)
        Loaded predictions, or a pair of arrays: ``(n,)`` P(y=1) or ``(n, K)``
        probabilities and class indices ``0..K-1`` (see :func:`core.data.as_predictions`).
        ``labels`` may be None, for predictions without labels.
    n_bins : int, default=20
        Equal-width confidence bins on [0, 1], ``[k/B, (k+1)/B)`` with the last bin closed
        (the convention of :func:`core.stats.binning.bin_stats`).
    class_names : sequence of str, optional
        Class names of a pair of arrays (default ``"0"``, ``"1"``, ...).

    Returns
    -------
    DataSummary
        The counts; the label-dependent fields are None without labels.

    Raises
    ------
    DataError
        For invalid probabilities or labels.

    Examples
    --------
    >>> s = summarize(([0.9, 0.2, 0.6], [1, 0, 0]), n_bins=2)
    >>> s.accuracy, s.label_counts.tolist(), s.correct_counts.tolist()
    (0.6666666666666666, [2, 1], [0, 2])
    """
    if isinstance(predictions, tuple) and len(predictions) == 2 and predictions[1] is None:
        probs, labels = as_prob_matrix(predictions[0]), None
        k = probs.shape[1]
        names = tuple(str(c) for c in class_names or range(k))
        if len(names) != k:
            raise DataError(f"{len(names)} class names given for {k} classes.")
    else:
        pred = as_predictions(predictions, class_names=class_names)
        probs, labels, names = pred.probs, pred.labels, pred.class_names
        k = pred.n_classes
    confidence, predicted = top_label(probs)
    correct = np.zeros(probs.shape[0]) if labels is None else (predicted == labels).astype(float)
    stats = bin_stats(confidence, correct, binning="equal-width", n_bins=n_bins)
    return DataSummary(
        n=int(probs.shape[0]),
        class_names=names,
        accuracy=None if labels is None else float(correct.mean()),
        label_counts=None if labels is None else np.bincount(labels, minlength=k),
        predicted_counts=np.bincount(predicted, minlength=k),
        mean_probs=probs.mean(axis=0),
        confidence_edges=stats.edges,
        confidence_counts=stats.counts,
        correct_counts=None if labels is None else np.rint(stats.label_sums).astype(np.int64),
    )
