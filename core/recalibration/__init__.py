"""Recalibrators with one shape, a registry by name, split protocols and evaluation.

>>> import numpy as np
>>> from core.recalibration import make_recalibrator, RECALIBRATORS
>>> "histogram-umd" in RECALIBRATORS
True
>>> p = np.array([0.1, 0.3, 0.6, 0.8]); y = np.array([0, 1, 0, 1])
>>> make_recalibrator("temperature").fit(p, y).predict_proba(p).sum(axis=1).round(12).tolist()
[1.0, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

import importlib

from core.recalibration.base import (
    RECALIBRATORS,
    FittedParameters,
    Recalibrator,
    make_recalibrator,
)
from core.recalibration.splits import PROTOCOLS, Split, make_splits

# Registration order is the order of select boxes: scaling, isotonic, histograms, then the rest.
for _module in (
    "scaling",
    "beta",
    "dirichlet",
    "isotonic",
    "histogram",
    "scaling_binning",
    "metacal",
):
    importlib.import_module(f"core.recalibration.{_module}")

from core.recalibration.evaluation import (  # noqa: E402
    RecalibrationComparison,
    compare_recalibrators,
)
from core.recalibration.metacal import MetaCal, selective_curves, selective_metrics  # noqa: E402

__all__ = [
    "PROTOCOLS",
    "RECALIBRATORS",
    "FittedParameters",
    "MetaCal",
    "RecalibrationComparison",
    "Recalibrator",
    "Split",
    "compare_recalibrators",
    "make_recalibrator",
    "make_splits",
    "selective_curves",
    "selective_metrics",
]
