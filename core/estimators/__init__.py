"""Calibration-error estimators: the :data:`ESTIMATORS` registry and its entries.

Importing this package imports every estimator module so that each registers itself;
add one import line per new module below.
"""

# The registry lists estimators in the order their modules register them, which is the
# order of the pages' tables and of the JSON: the binned ones (plugin, label-binned, debiased,
# sweep, average), smooth, mcb, the kernel ones (skce-*, mmce), the joint-binned ones, kde.
# isort: off
from core.estimators import binned  # noqa: F401
from core.estimators import smooth  # noqa: F401
from core.estimators import corp  # noqa: F401
from core.estimators import kernel  # noqa: F401
from core.estimators import joint  # noqa: F401
from core.estimators import kde  # noqa: F401

# isort: on
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
