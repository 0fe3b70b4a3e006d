"""How the values of a lens's components aggregate into one number.

A lens gives one or more components (a classwise lens one per class) with weights summing
to 1; an estimator's per-component values combine into its value by an ℓp mean
(:func:`combine_lp`, :func:`aggregate`) or, for signed values such as a debiased squared
error, by a weighted sum clipped once (:func:`combine_signed`). Library conventions
(:mod:`core.stats.conventions`) and every estimator read these.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["aggregate", "combine_lp", "combine_signed"]


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


def combine_lp(per_component: np.ndarray, weights: np.ndarray, norm: float) -> np.ndarray:
    """``(Σ_k w_k CE_k^p)^(1/p)`` of each row (``max_k`` for ``p = ∞``): :func:`aggregate`."""
    return np.asarray(aggregate(per_component, weights, norm), dtype=np.float64)


def combine_signed(per_component: np.ndarray, weights: np.ndarray, norm: float) -> np.ndarray:
    """Weighted sum of signed per-component values, clipped at 0 once (and ``√`` for ℓ2)."""
    total = np.maximum(per_component @ weights, 0.0)
    return np.sqrt(total) if norm == 2.0 else total
