"""The CORP miscalibration ``mcb`` (Dimitriadis, Gneiting & Jordan 2021): one registry entry.

MCB is the mean Brier score of the forecasts minus that of their isotonic (PAV)
recalibration, with tied forecasts pooled (:mod:`core.stats.corp`). It is a function of the
*discrete* bins (one bin per distinct forecast: its count, score sum and label sum), so
it is a binned estimator with its own binning (``own_binning="discrete"``: the sidebar's
binning does not change it) whose kernel runs one PAV per sample of a batch; the
bootstrap's fixed-bins path, the cell bootstrap on discrete bins, the model comparison and
the consistency test read it like any kernel of bin sums. It is on the Brier scale (a
squared quantity, not an ℓp calibration error), takes no norm (``norms=None``) and is
averaged over classwise components with the class weights.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.estimators.base import EstimatorInfo, KernelContext
from core.estimators.binned import register_binned
from core.stats.corp import mcb_from_stats


def _mcb_kernel(batch: Any, norm: float, ctx: KernelContext) -> np.ndarray:
    return mcb_from_stats(batch.counts, batch.score_sums, batch.label_sums)


def _weighted_mean(per_component: np.ndarray, weights: np.ndarray, norm: float) -> np.ndarray:
    """Class-weighted mean of per-component MCB values (the norm does not apply)."""
    return per_component @ weights


#: The metrics tables' note beside its value.
SCALE_NOTE = "Brier scale (squared); isotonic fit on the distinct scores, no bins to choose"


def _describe(
    info: EstimatorInfo, signed: np.ndarray, extras: Any, view: Any, norm: float, options: Any
) -> tuple[tuple[float, ...], tuple[Any, ...], dict[str, Any]]:
    return tuple(float(v) for v in signed), view.stats, {"note": SCALE_NOTE}


register_binned(
    "mcb",
    label="CORP miscalibration (MCB)",
    description="Brier score of the forecasts minus that of their isotonic (PAV) "
    "recalibration, ties pooled: no binning choice. On the Brier scale (squared), "
    "not the ℓp scale of the binned ECE; classwise: the class-weighted mean.",
    formula="Dimitriadis, Gneiting & Jordan (2021), PNAS 118(8), Eq. 3 (MCB = S(x) − S(x̂))",
    norms=None,
    quantity="Brier-scale miscalibration (squared, not an ℓp error)",
    own_binning="discrete",
    statistics="bins",
    kernel=_mcb_kernel,
    combine=_weighted_mean,
    describe=_describe,
)
