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

Cost: a component's fit is one ``numpy.sort`` of uint64 keys ``(bits(score) << 1) |
outcome`` (no ``argsort``, no gathers) and a PAV on the runs of distinct scores with one
outcome (:func:`core.stats.pav.pav_blocks`, the PAV shared with the CORP diagram): about
1.1× that sort plus ``isotonic_regression`` on the distinct scores. The result is
bit-identical to ``numpy.unique`` and PAV on every distinct score. Classwise components
are fitted and applied by a small thread pool (:func:`core.base.parallel.map_ordered`;
results do not depend on the number of threads).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.base.errors import ConfigError
from core.recalibration.base import Component, ComponentFit, OneDimRecalibrator, register
from core.stats.pav import pav_blocks, pav_fit, tie_groups  # noqa: F401  (the one PAV; re-exported)


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
        self, s: np.ndarray, lo: np.ndarray, t: np.ndarray, draws: Any
    ) -> ComponentFit:
        # block ends are kept for linear interpolation (where scikit-learn keeps them too)
        start, value, knot_x, knot_y = pav_blocks(s, t)
        return {"block_start": start, "block_value": value, "knot_x": knot_x, "knot_y": knot_y}, []

    def _apply_component(
        self, c: Component, s: np.ndarray, lo: np.ndarray, draws: Any
    ) -> np.ndarray:
        if self.interpolation == "linear":
            return np.interp(s, c["knot_x"], c["knot_y"])
        starts = np.atleast_1d(c["block_start"])
        # in place: one index temporary per component instead of three
        idx = np.searchsorted(starts, s, side="right")
        idx -= 1
        np.clip(idx, 0, starts.size - 1, out=idx)
        return np.atleast_1d(c["block_value"]).take(idx)
