"""Proper scores and accuracy: accuracy, Brier score (with its binned decomposition), log loss.

Conventions
-----------
- **Brier score** (the one definition every page, the CLI, the report and the API use).
  *Binary* predictions, given as one P(y=1) column (a 1-D array, or a loaded
  :class:`~core.data.Predictions` with ``binary=True``), score ``mean_i (p_i - y_i)^2`` in
  [0, 1], as :func:`sklearn.metrics.brier_score_loss`. A matrix of ``K`` class
  probabilities (two columns included) scores the original multiclass
  ``mean_i sum_k (p_ik - 1[y_i = k])^2`` in [0, 2]; for two columns this is twice the
  binary value (sklearn's ``scale_by_half=False``). :data:`BRIER_CONVENTIONS` words both
  for tables.
- **Log loss.** ``-mean_i log(max(p_{i, y_i}, eps))`` with the natural logarithm.
  Only the probability of the observed class enters, and only its lower end is
  clipped, so a confident wrong prediction costs ``-log(eps)`` (34.5 for the
  default ``eps = 1e-15``) instead of infinity.
- **Accuracy.** The fraction of rows whose argmax (ties to the lowest index, as the
  top-label lens) is the label; for a 1-D input the prediction is ``p > 0.5``
  (0.5 itself predicts class 0, the lower index of ``[1 - p, p]``).

:data:`SCORES` registers these scalar scores for the metrics table and the bootstrap;
each entry's ``row_values`` is the per-row value whose mean is the score, which
lets the bootstrap resample them without recomputing anything per row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from core.base.errors import ConfigError
from core.base.registry import Entry, Registry
from core.base.validation import check_predictions
from core.stats.binned_view import BinnedViews
from core.stats.lenses import top_label

#: Default lower clip of the probability of the observed class in :func:`log_loss`.
LOG_LOSS_EPS = 1e-15

#: How the Brier score reads binary predictions and class-probability matrices (for notes).
BRIER_CONVENTIONS = {
    True: "binary: mean (p − y)² of P(y=1), in [0, 1]",
    False: "K classes: mean Σ_k (p_k − 1[y = k])², in [0, 2]",
}


def accuracy_rows(p: np.ndarray, y: np.ndarray, *, binary: bool = False) -> np.ndarray:
    """Return 1.0 where the top-label prediction is correct, else 0.0.

    Parameters
    ----------
    p, y : numpy.ndarray
        Validated ``(n, K)`` probability matrix and int64 labels.
    binary : bool, default=False
        Unused: ties go to the lowest index either way, so P(y=1) = 0.5 predicts class 0.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 of 0/1.
    """
    if p.ndim == 2 and p.shape[1] == 2:
        # the arg-max of two columns is 1 only where the second is strictly larger
        return ((p[:, 1] > p[:, 0]) == y).astype(np.float64)
    _, predicted = top_label(p)
    return (predicted == y).astype(np.float64)


def observed_probs(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Return ``p[i, y_i]``, the probability of each row's observed class.

    Parameters
    ----------
    p, y : numpy.ndarray
        Validated ``(n, K)`` probability matrix and labels in ``0..K-1``.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 (a selection of entries: no arithmetic).
    """
    if p.shape[1] == 2:  # a select of two columns is cheaper than a gather by row
        return np.where(y == 1, p[:, 1], p[:, 0])
    return p[np.arange(p.shape[0]), y]


def brier_rows(p: np.ndarray, y: np.ndarray, *, binary: bool = False) -> np.ndarray:
    """Return each row's Brier term.

    Parameters
    ----------
    p, y : numpy.ndarray
        Validated ``(n, K)`` probability matrix and int64 labels.
    binary : bool, default=False
        ``True`` for the binary convention ``(p_i1 - 1[y_i = 1])^2`` (a 1-D input),
        ``False`` for ``sum_k (p_ik - 1[y_i = k])^2``.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64.
    """
    if binary:
        return (p[:, 1] - (y == 1)) ** 2
    # sum_k p_k^2 - 2 p_y + 1 avoids building the (n, K) one-hot matrix
    return np.einsum("ij,ij->i", p, p) - 2.0 * p[np.arange(p.shape[0]), y] + 1.0


def log_loss_rows(
    p: np.ndarray, y: np.ndarray, *, binary: bool = False, eps: float = LOG_LOSS_EPS
) -> np.ndarray:
    """Return each row's negative log-likelihood ``-log(max(p_{i, y_i}, eps))``.

    Parameters
    ----------
    p, y : numpy.ndarray
        Validated ``(n, K)`` probability matrix and int64 labels.
    binary : bool, default=False
        Unused: only the probability of the observed class enters.
    eps : float, default=1e-15
        Lower clip of the probability of the observed class.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64.
    """
    return -np.log(np.maximum(observed_probs(p, y), eps))


def _check_eps(eps: float) -> float:
    eps = float(eps)
    if not 0.0 < eps < 1.0:
        raise ConfigError(f"eps must lie strictly between 0 and 1; got {eps!r}.")
    return eps


def accuracy(probs: ArrayLike, labels: ArrayLike) -> float:
    """Return the top-label accuracy.

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like
        Class indices ``0..K-1``.

    Returns
    -------
    float
        Fraction of rows whose argmax (ties to the lowest index) equals the label.

    Examples
    --------
    >>> accuracy([[0.7, 0.3], [0.4, 0.6], [0.5, 0.5]], [0, 0, 0])
    0.6666666666666666
    """
    return float(score_rows("accuracy", probs, labels).mean())


def brier_score(probs: ArrayLike, labels: ArrayLike) -> float:
    """Return the Brier score (mean squared error of the probability vector).

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1): binary Brier score ``mean (p - y)^2`` in [0, 1], as
        :func:`sklearn.metrics.brier_score_loss`. ``(n, K)``: multiclass Brier score
        ``mean_i sum_k (p_ik - 1[y_i = k])^2`` in [0, 2] (twice the binary value
        when ``K = 2``).
    labels : array_like
        Class indices ``0..K-1``.

    Returns
    -------
    float
        The Brier score; lower is better.

    Examples
    --------
    >>> round(brier_score([0.9, 0.2], [1, 1]), 12)
    0.325
    >>> round(brier_score([[0.1, 0.9], [0.8, 0.2]], [1, 1]), 12)
    0.65
    """
    return float(score_rows("brier", probs, labels).mean())


def log_loss(probs: ArrayLike, labels: ArrayLike, *, eps: float = LOG_LOSS_EPS) -> float:
    """Return the log loss (mean negative log-likelihood, natural log).

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like
        Class indices ``0..K-1``.
    eps : float, default=1e-15
        The probability of the observed class is clipped below at ``eps``, so a
        zero probability on the true class costs ``-log(eps)`` instead of infinity.
        scikit-learn clips at the dtype's machine epsilon (2.2e-16) and also at
        ``1 - eps``; the two agree whenever no probability is within ``eps`` of 0.

    Returns
    -------
    float
        The log loss in nats; lower is better.

    Examples
    --------
    >>> round(log_loss([0.5, 0.5], [0, 1]), 6)
    0.693147
    """
    return float(score_rows("log-loss", probs, labels, eps=eps).mean())


def score_rows(score: str, probs: ArrayLike, labels: ArrayLike, **options: float) -> np.ndarray:
    """Return the per-row values whose mean is a registered score.

    Parameters
    ----------
    score : str
        A name in :data:`SCORES`.
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like
        Class indices ``0..K-1``.
    **options
        Options of the score (``eps`` for ``"log-loss"``).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64; its mean is ``SCORES.get(score).func(probs, labels, **options)``.
    """
    p, y, binary = check_predictions(probs, labels)
    return SCORES.get(score).rows(p, y, binary=binary, **options)


@dataclass(frozen=True, kw_only=True)
class ScoreInfo(Entry):
    """A scalar score that is a mean of per-row values.

    Attributes
    ----------
    row_values : callable
        ``row_values(p, y, *, binary, **options) -> (n,)``: the per-row values whose mean
        is the score, on validated arrays (``binary``: the predictions were one P(y=1)
        column); the bootstrap resamples them without recomputing anything per row.
    options : tuple of str
        Options the score takes.
    higher_is_better : bool
        Ranking direction.
    support : tuple of float
        The score's range, which a basic bootstrap interval is cut to
        (:func:`core.inference.bootstrap.support_of`).
    """

    row_values: Callable[..., np.ndarray]
    options: tuple[str, ...] = ()
    higher_is_better: bool = False
    support: tuple[float, float] = (0.0, math.inf)

    def rows(self, p: np.ndarray, y: np.ndarray, *, binary: bool, **options: float) -> np.ndarray:
        """Per-row values of validated predictions, after checking the options."""
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            allowed = self.options
            hint = f"It accepts: {', '.join(allowed)}." if allowed else "It takes no options."
            raise ConfigError(f"Score {self.name!r} has no option(s) {', '.join(unknown)}. {hint}")
        if "eps" in options:
            options["eps"] = _check_eps(options["eps"])
        return self.row_values(p, y, binary=binary, **options)

    def value(self, p: np.ndarray, y: np.ndarray, *, binary: bool, **options: float) -> float:
        """Return the score of validated predictions."""
        return float(self.rows(p, y, binary=binary, **options).mean())


SCORES: Registry[ScoreInfo] = Registry("score", ScoreInfo)
SCORES.register(
    "accuracy",
    label="Accuracy",
    description="Fraction of rows whose top-label prediction equals the label.",
    row_values=accuracy_rows,
    higher_is_better=True,
    support=(0.0, 1.0),
)(accuracy)
SCORES.register(
    "brier",
    label="Brier score",
    description="Mean squared error of the probability vector; binary predictions (one "
    "P(y=1) column): of P(y=1) alone, as scikit-learn.",
    formula="Brier (1950); binary predictions as sklearn.metrics.brier_score_loss",
    row_values=brier_rows,
    support=(0.0, 2.0),
)(brier_score)
SCORES.register(
    "log-loss",
    label="Log loss",
    description="Mean negative log-likelihood of the observed class (natural log).",
    row_values=log_loss_rows,
    options=("eps",),
)(log_loss)


@dataclass(frozen=True)
class BrierDecomposition:
    """Murphy's binned decomposition of the Brier score, with its exact remainder.

    ``brier = reliability - resolution + uncertainty + within_bin_variance
    + within_bin_covariance`` holds exactly (up to rounding). The two
    within-bin terms (Stephenson, Coelho and Jolliffe, 2008) vanish when the
    scores are constant within every bin (e.g. the ``discrete`` binning), which
    is the only case in which Murphy's three-term identity is exact.

    Attributes
    ----------
    brier : float
        The Brier score, as :func:`brier_score`.
    reliability : float
        ``sum_b (n_b / n) (mean score_b - mean outcome_b)^2`` (the binned plug-in
        ℓ2 calibration error squared); lower is better.
    resolution : float
        ``sum_b (n_b / n) (mean outcome_b - mean outcome)^2``; higher is better.
    uncertainty : float
        ``mean outcome (1 - mean outcome)``, a property of the labels alone.
    within_bin_variance : float
        ``mean_i (score_i - mean score_{b(i)})^2``.
    within_bin_covariance : float
        ``-2 mean_i (score_i - mean score_{b(i)}) (outcome_i - mean outcome_{b(i)})``.
    binning : str
        The binning scheme.
    n_bins : int
        The number of bins requested.
    """

    brier: float
    reliability: float
    resolution: float
    uncertainty: float
    within_bin_variance: float
    within_bin_covariance: float
    binning: str
    n_bins: int

    #: (attribute, term, what it says) of each row of :meth:`to_frame`.
    TERMS = (
        ("brier", "Brier score", "the sum of the terms below"),
        ("reliability", "Reliability (REL)", "miscalibration: lower is better"),
        (
            "resolution",
            "Resolution (RES)",
            "subtracted: how far bins' outcomes are from the base rate; higher is better",
        ),
        ("uncertainty", "Uncertainty (UNC)", "of the labels alone: base rate × (1 − base rate)"),
        ("within_bin_variance", "Within-bin variance", "spread of the scores inside each bin"),
        (
            "within_bin_covariance",
            "Within-bin covariance",
            "−2 × covariance of scores and outcomes inside each bin",
        ),
    )

    def to_frame(self) -> Any:
        """Return ``term, value, meaning`` rows: Brier = REL − RES + UNC + the two within-bin terms.

        Returns
        -------
        pandas.DataFrame
            One row per term of :attr:`TERMS`.
        """
        import pandas as pd

        return pd.DataFrame(
            [(label, float(getattr(self, name)), meaning) for name, label, meaning in self.TERMS],
            columns=["term", "value", "meaning"],
        )

    def to_record(self) -> dict[str, Any]:
        """Return the terms, the binning and the number of bins as JSON-ready values."""
        return {
            **{name: float(getattr(self, name)) for name, _, _ in self.TERMS},
            "binning": self.binning,
            "n_bins": self.n_bins,
        }


def brier_decomposition(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    binning: str = "equal-width",
    n_bins: int = 15,
    tie_policy: str = "split",
) -> BrierDecomposition:
    """Decompose the Brier score into reliability, resolution and uncertainty.

    Each class's one-vs-rest problem ``(p_ik, 1[y_i = k])`` is binned on its own
    scores and decomposed; the terms are summed over classes, matching the
    multiclass :func:`brier_score`. Binary predictions (a 1-D input) decompose the
    binary score of P(y=1) only.

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like
        Class indices ``0..K-1``.
    binning : str, default="equal-width"
        A name in :data:`core.stats.binning.BINNINGS`.
    n_bins : int, default=15
        Number of bins.
    tie_policy : {"split", "keep"}, default="split"
        Tie policy of the equal-mass binning.

    Returns
    -------
    BrierDecomposition
        The terms; Murphy's identity ``reliability - resolution + uncertainty``
        equals ``brier`` exactly only when scores are constant within bins, and
        the two within-bin terms carry the remainder otherwise.

    Examples
    --------
    >>> d = brier_decomposition([0.2, 0.2, 0.8, 0.8], [0, 1, 1, 1], binning="discrete")
    >>> round(d.reliability - d.resolution + d.uncertainty, 12) == round(d.brier, 12)
    True
    """
    p, y, binary = check_predictions(probs, labels)
    return decompose_brier(BinnedViews(p, y), binary, binning, n_bins, tie_policy)


def decompose_brier(
    views: Any,
    binary: bool,
    binning: str,
    n_bins: int,
    tie_policy: str,
    brier: float | None = None,
) -> BrierDecomposition:
    """:func:`brier_decomposition` on the binned views of one data set (bins shared).

    Parameters
    ----------
    views : core.stats.binned_view.BinnedViews
        The data's views: the binary lens for binary predictions, else the classwise one
        (the same bins as a classwise analysis).
    binary : bool
        Whether the predictions are binary (one P(y=1) column).
    binning, n_bins, tie_policy
        The binning.
    brier : float, optional
        The data's Brier score when already known (else computed from the rows).

    Returns
    -------
    BrierDecomposition
        The terms.
    """
    view = views.binned("binary" if binary else "classwise", binning, n_bins, tie_policy)
    parts = [(c.stats, c.square_sums(), c.positive_score_sums()) for c in view.components]
    if brier is None:
        brier = SCORES.get("brier").value(views.probs, views.labels, binary=binary)
    return brier_decomposition_from_bins(parts, brier, binning, n_bins)


def brier_decomposition_from_bins(
    parts: Sequence[tuple[Any, np.ndarray, np.ndarray]],
    brier: float,
    binning: str,
    n_bins: int,
) -> BrierDecomposition:
    """Return the terms of :func:`brier_decomposition` from per-bin sums (they merge).

    Parameters
    ----------
    parts : sequence of (BinStats, numpy.ndarray, numpy.ndarray)
        Per component of the binary or classwise lens: its bins, the sums of the squared
        scores and the sums of the scores of rows with outcome 1, per bin.
    brier : float
        The Brier score.
    binning, n_bins
        The binning.

    Returns
    -------
    BrierDecomposition
        The terms (the within-bin ones as ``Σ s² − m s̄²`` and ``Σ s·o − m s̄ ō`` per bin).
    """
    terms = np.zeros(5)
    for st, squares, cross in parts:
        counts = st.counts.astype(np.float64)
        n = counts.sum()
        filled = counts > 0
        f_bar = np.where(filled, st.mean_score, 0.0)
        o_bar = np.where(filled, st.mean_label, 0.0)
        w = counts[filled] / n
        o_mean = st.label_sums.sum() / n
        terms += (
            np.sum(w * (f_bar[filled] - o_bar[filled]) ** 2),
            np.sum(w * (o_bar[filled] - o_mean) ** 2),
            o_mean * (1.0 - o_mean),
            np.sum(squares - counts * f_bar * f_bar) / n,
            -2.0 * np.sum(cross - counts * f_bar * o_bar) / n,
        )
    return BrierDecomposition(
        brier=float(brier),
        reliability=float(terms[0]),
        resolution=float(terms[1]),
        uncertainty=float(terms[2]),
        within_bin_variance=float(terms[3]),
        within_bin_covariance=float(terms[4]),
        binning=binning,
        n_bins=int(n_bins),
    )
