"""Calibration-error estimators: the :data:`ESTIMATORS` registry and its entries.

Importing this package imports every estimator module so that each registers itself;
add one import line per new module below.
"""

from core.estimators import binned, kernel, smooth  # noqa: F401  (register plugin, label-binned, debiased, sweep; skce-*, mmce; smooth)
from core.estimators.base import (
    ESTIMATORS,
    Estimate,
    EstimatorInfo,
    aggregate,
    debiased_sq_from_stats,
    lens_view,
    plugin_from_stats,
)

__all__ = [
    "ESTIMATORS",
    "Estimate",
    "EstimatorInfo",
    "aggregate",
    "debiased_sq_from_stats",
    "lens_view",
    "plugin_from_stats",
]
