"""Isotonic regression recalibrator (pool-adjacent-violators on each lens component).

Tied scores are pooled first (their labels averaged, weighted by count), then PAV
fits a non-decreasing map on the distinct scores (``scipy.optimize.isotonic_regression``).
Prediction is a **step function** by default: a new score takes the value of the
block holding the largest fitted score at or below it (scores below the smallest
take the first block's value). So outputs take as many distinct values as there
are blocks, and calibration is evaluated with discrete bins (Gupta & Ramdas 2021
§2.7). ``interpolation="linear"`` interpolates between block ends like
scikit-learn's ``IsotonicRegression(out_of_bounds="clip")``.
Multiclass rows are renormalised as described in :mod:`core.recalibration.base`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.optimize import isotonic_regression

from core.errors import ConfigError
from core.recalibration.base import OneDimRecalibrator, register


def pav_fit(s: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fit a non-decreasing step function of ``s`` to ``t``.

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
    x, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=t, minlength=x.size) / counts
    fitted = isotonic_regression(means, weights=counts.astype(np.float64), increasing=True).x
    return x, fitted


@register(
    "isotonic",
    label="Isotonic regression",
    description="Non-decreasing step function of the score fitted by pool-adjacent-violators.",
    formula="Zadrozny & Elkan 2002; PAV (Ayer et al. 1955)",
    family="binning",
    discrete_output=True,
)
class IsotonicCalibration(OneDimRecalibrator):
    """Isotonic regression through a lens.

    Parameters
    ----------
    lens : {"auto", "binary", "top-label", "classwise"}
        ``auto`` is ``binary`` for two classes, else ``classwise``.
    interpolation : {"step", "linear"}
        Step function (default; few distinct outputs) or linear interpolation
        between blocks (scikit-learn's behaviour).
    """

    uses_log_odds = False

    def __init__(self, *, lens: str = "auto", interpolation: str = "step") -> None:
        self.lens = self._check_lens(lens)
        if interpolation not in ("step", "linear"):
            raise ConfigError(f"interpolation must be 'step' or 'linear'; got {interpolation!r}.")
        self.interpolation = interpolation

    def _fit_component(
        self, s: np.ndarray, lo: np.ndarray, t: np.ndarray, rng: np.random.Generator
    ) -> tuple[dict[str, Any], list[str]]:
        x, fitted = pav_fit(s, t)
        change = np.flatnonzero(np.diff(fitted) != 0)
        starts = np.concatenate([[0], change + 1])
        ends = np.concatenate([change, [x.size - 1]])
        # block ends are kept for linear interpolation (where scikit-learn keeps them too)
        keep = np.unique(np.concatenate([starts, ends]))
        return {
            "block_start": x[starts],
            "block_value": fitted[starts],
            "knot_x": x[keep],
            "knot_y": fitted[keep],
        }, []

    def _apply_component(
        self, c: Mapping[str, Any], s: np.ndarray, lo: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        if self.interpolation == "linear":
            return np.interp(s, c["knot_x"], c["knot_y"])
        starts = np.atleast_1d(c["block_start"])
        idx = np.searchsorted(starts, s, side="right") - 1
        return np.atleast_1d(c["block_value"])[np.clip(idx, 0, starts.size - 1)]
