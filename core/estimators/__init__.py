"""Calibration-error estimators: the :data:`ESTIMATORS` registry and its entries.

Importing this package imports every estimator module so that each registers itself;
add one import line per new module below.
"""

# noqa: F401 on each: imported to register plugin, label-binned, debiased, sweep, average;
# mcb; canonical-uniform, canonical-median-variance; kde; skce-*, mmce; smooth
from core.estimators import binned, corp, joint, kde, kernel, smooth  # noqa: F401
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
