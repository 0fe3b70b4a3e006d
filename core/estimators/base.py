"""The estimator registry, the :class:`Estimate` record and the shared numerical kernels.

Every calibration-error estimator, binned or kernel, is one function registered in
:data:`ESTIMATORS` with the signature

``func(probs, labels, *, lens, norm, binning, n_bins, tie_policy, class_weights,
class_names, rng, **options) -> Estimate``

It receives validated arrays (``probs`` ``(n, K)`` float64 rows summing to 1, ``labels``
int64 in ``0..K−1``; see :func:`core.calibration.calibration_error`), a norm from
:func:`core._validation.check_norm` and a :class:`numpy.random.Generator`.  Entry metadata:
``binned`` (bool), ``norms`` (subset of ``(1.0, 2.0, inf)``, or None for an estimator
without an ℓp parameter, which then ignores ``norm``), ``lenses`` (tuple of lens names),
``random`` (bool: the result depends on ``rng``), ``group`` (UI grouping); optionally
``binnings`` (the binnings a binned estimator accepts; default all of ``BINNINGS``).

The batch kernels :func:`plugin_from_stats`, :func:`debiased_sq_from_stats` and
:func:`debiased_l1_from_stats` take bin statistics with any leading batch shape (last
axis = bins); the vectorised bootstrap and the bias-vs-n runner call them on many
resamples at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from core.binning import BinStats
from core.errors import ConfigError
from core.lenses import LensView, lens_view  # noqa: F401  (re-exported for estimator modules)
from core.registry import Registry

ESTIMATORS: Registry = Registry("estimator")

#: Norms every binned estimator can be asked for (``check_norm`` returns these floats).
ALL_NORMS: tuple[float, ...] = (1.0, 2.0, np.inf)

#: Lenses with a 1-D view, i.e. the lenses binned estimators accept.
BINNED_LENSES: tuple[str, ...] = ("binary", "top-label", "classwise")


@dataclass(frozen=True, eq=False)
class Estimate:
    """The output of one registered estimator.

    Attributes
    ----------
    value : float
        The calibration error (after aggregation over components).
    components : tuple of str
        Component names (``("top-label",)``, the positive class, or class names).
    component_values : tuple of float
        The error of each component before aggregation.
    bins : tuple of BinStats or None
        Bin statistics per component (None for kernel estimators).
    details : dict
        Estimator-specific extras, e.g. ``signed_square`` (debiased ℓ2), ``b_star`` and
        ``sweep_trace`` (sweep).
    """

    value: float
    components: tuple[str, ...]
    component_values: tuple[float, ...]
    bins: tuple[BinStats, ...] | None = None
    details: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- helpers


def check_options(estimator: str, options: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    """Raise a :class:`ConfigError` for options an estimator does not take.

    Parameters
    ----------
    estimator : str
        Estimator name (for the message).
    options : mapping
        The extra keyword options received.
    allowed : tuple of str
        Option names the estimator accepts.
    """
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        hint = f"It accepts: {', '.join(allowed)}." if allowed else "It takes no extra options."
        raise ConfigError(f"Estimator {estimator!r} has no option(s) {', '.join(unknown)}. {hint}")


def aggregate(values: ArrayLike, weights: ArrayLike, norm: float) -> Any:
    """Aggregate per-component errors: ``(Σ_k w_k CE_k^p)^(1/p)``, or ``max_k`` for ``p = ∞``.

    Parameters
    ----------
    values : array_like
        Non-negative per-component errors ``CE_k`` on the last axis; any leading batch shape
        (the bootstrap aggregates all its resamples at once).
    weights : array_like
        Component weights summing to 1.
    norm : float
        ``1.0``, ``2.0`` or ``inf``.

    Returns
    -------
    float or numpy.ndarray
        The aggregated error, a float for 1-D ``values`` (components with zero weight are
        ignored by ``max``).
    """
    v = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if v.shape[-1] == 1:
        out = v[..., 0]
    elif np.isinf(norm):
        out = v[..., w > 0].max(axis=-1)
    else:
        out = ((v**norm) @ w) ** (1.0 / norm)
    return float(out) if out.ndim == 0 else out


def plugin_from_stats(
    counts: ArrayLike, score_sums: ArrayLike, label_sums: ArrayLike, norm: float
) -> np.ndarray:
    """Plug-in binned ℓp calibration error from bin statistics (batched).

    ``(Σ_k (n_k/n) |f̄_k − ȳ_k|^p)^(1/p)``; empty bins contribute nothing and ``p = ∞``
    is the largest gap over non-empty bins.

    Parameters
    ----------
    counts, score_sums, label_sums : array_like
        Arrays of the same shape ``(..., B)``.
    norm : float
        ``1.0``, ``2.0`` or ``inf``.

    Returns
    -------
    numpy.ndarray
        Shape ``(...)`` (a 0-d array for one set of bins); NaN where ``n = 0``.

    Examples
    --------
    >>> round(float(plugin_from_stats([2, 2], [0.6, 1.7], [1, 2], 1)), 12)
    0.175
    """
    c = np.asarray(counts, dtype=np.float64)
    diff = np.abs(np.asarray(score_sums, dtype=np.float64) - label_sums)
    n = c.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if norm == 1.0:
            # Σ (n_k/n)|S_k/n_k − L_k/n_k| = Σ|S_k − L_k| / n
            out = diff.sum(axis=-1) / n
        elif np.isinf(norm):
            gap = np.where(c > 0, diff / np.where(c > 0, c, 1.0), -np.inf)
            out = gap.max(axis=-1)
            out = np.where(n > 0, out, np.nan)
        else:
            per_bin = np.where(c > 0, diff**norm / np.where(c > 0, c, 1.0) ** (norm - 1.0), 0.0)
            out = (per_bin.sum(axis=-1) / n) ** (1.0 / norm)
    return out


def debiased_sq_from_stats(
    counts: ArrayLike, score_sums: ArrayLike, label_sums: ArrayLike
) -> np.ndarray:
    """Signed debiased squared ℓ2 calibration error from bin statistics (batched).

    ``Σ_k (n_k/n) [ (f̄_k − ȳ_k)² − ȳ_k(1 − ȳ_k)/(n_k − 1) ]`` over bins with ``n_k ≥ 2``;
    bins with fewer than two points contribute 0 but keep their weight in ``n``
    (Bröcker 2012; Ferro & Fricker 2012; Kumar et al. 2019 Def. 5.2).

    Parameters
    ----------
    counts, score_sums, label_sums : array_like
        Arrays of the same shape ``(..., B)``.

    Returns
    -------
    numpy.ndarray
        Shape ``(...)``; may be negative.  The ℓ2 estimate is ``sqrt(max(·, 0))``.

    Examples
    --------
    >>> counts = [4, 5]; scores = [2.0, 3.0]; labels = [1, 4]
    >>> round(float(debiased_sq_from_stats(counts, scores, labels)), 12)
    0.0
    """
    c = np.asarray(counts, dtype=np.float64)
    s = np.asarray(score_sums, dtype=np.float64)
    lab = np.asarray(label_sums, dtype=np.float64)
    n = c.sum(axis=-1)
    ok = c >= 2
    safe = np.where(ok, c, 2.0)
    ybar = lab / safe
    gap_sq = ((s - lab) / safe) ** 2
    term = np.where(ok, c * (gap_sq - ybar * (1.0 - ybar) / (safe - 1.0)), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return term.sum(axis=-1) / n


#: Draws (rows × draws × bins) the ℓ1 debiased kernel holds at once (cache-sized blocks).
_L1_BLOCK = 2**16


def debiased_l1_from_stats(
    counts: ArrayLike,
    score_sums: ArrayLike,
    label_sums: ArrayLike,
    rng: np.random.Generator,
    n_draws: int,
    *,
    offset: ArrayLike = 0,
) -> np.ndarray:
    """Signed ℓ1 debiased binned calibration error from bin statistics (batched).

    ``2·θ̂ − (1/D) Σ_d Σ_k (n_k/n) |ȳ_k + σ_k z_dk − f̄_k|`` over the non-empty bins, with
    ``θ̂`` the plug-in ECE, ``σ_k = sqrt(ȳ_k(1 − ȳ_k)/n_k)`` and ``D = n_draws`` standard
    normal draws ``z`` (Kumar et al.'s ``normal_debiased_ce`` with ``power=1``).

    Every set of bins (every row of the batch) reads the same stream of standard normals,
    drawn once from ``rng``: a row with ``m`` non-empty bins gives its ``j``-th non-empty
    bin the value ``z[offset + d·m + j]`` in draw ``d``. For one row with ``offset=0``
    this is ``rng.normal(ȳ, σ, size=(D, m))``, so a batch equals evaluating each row
    with its own copy of ``rng`` (the bootstrap reseeds the estimator on every resample),
    and ``offset`` continues the stream past earlier components (``offset + D·m`` is
    where the next component of a row starts). ``rng`` advances by the largest
    ``offset + D·m`` of the batch.

    Parameters
    ----------
    counts, score_sums, label_sums : array_like
        Arrays of the same shape ``(..., B)``.
    rng : numpy.random.Generator
        Source of the normal draws.
    n_draws : int
        Draws ``D`` of the resampled bin means.
    offset : array_like of int, default=0
        Per row (shape ``(...)``), the position in the stream where the row starts.

    Returns
    -------
    numpy.ndarray
        Shape ``(...)``; may be negative (the estimate clips at 0). NaN where ``n = 0``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> float(debiased_l1_from_stats([2, 2], [0.2, 1.8], [0, 2], rng, 10))  # no label noise
    0.1
    """
    c = np.asarray(counts, dtype=np.float64)
    s = np.asarray(score_sums, dtype=np.float64)
    lab = np.asarray(label_sums, dtype=np.float64)
    batch, n_bins = c.shape[:-1], c.shape[-1]
    full = c > 0
    m = full.sum(axis=-1)
    start = np.broadcast_to(np.asarray(offset, dtype=np.int64), batch)
    used = start + n_draws * m
    z = rng.standard_normal(int(used.max()) if used.size else 0)
    if z.size == 0:  # every bin empty: nothing is drawn, the values are NaN
        z = np.zeros(1)
    safe = np.where(full, c, 1.0)
    fbar = s / safe
    ybar = lab / safe
    sd = np.sqrt(np.clip(ybar * (1.0 - ybar), 0.0, None) / safe)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = c / c.sum(axis=-1, keepdims=True)
    plug = (w * np.abs(fbar - ybar)).sum(axis=-1)
    flat = [a.reshape(-1, n_bins) for a in (full, fbar, ybar, sd, w)]
    start, m = start.reshape(-1), m.reshape(-1)
    resampled = np.zeros(start.shape[0])  # rows without points stay NaN through ``plug``
    for width in np.unique(m[m > 0]):
        rows = np.flatnonzero(m == width)
        kept = flat[0][rows]
        fb, yb, sdv, wv = (a[rows][kept].reshape(-1, width) for a in flat[1:])
        # row i's draws are z[start_i + d·width + j]: a strided view of the stream
        view = np.lib.stride_tricks.as_strided(
            z,
            shape=(z.shape[0] - n_draws * width + 1, n_draws, width),
            strides=(z.strides[0], width * z.strides[0], z.strides[0]),
            writeable=False,
        )
        step = max(1, _L1_BLOCK // (n_draws * width))
        for lo in range(0, rows.shape[0], step):
            sl = slice(lo, lo + step)
            draws = view[start[rows[sl]]]
            # in place, in the order of rng.normal(ȳ, σ) − f̄: (σ·z + ȳ) − f̄
            draws *= sdv[sl, None, :]
            draws += yb[sl, None, :]
            draws -= fb[sl, None, :]
            np.abs(draws, out=draws)
            resampled[rows[sl]] = (draws.mean(axis=1) * wv[sl]).sum(axis=-1)
    return 2.0 * plug - resampled.reshape(batch)
