"""Cached core calls of the pages, with the figures drawn from their results.

Every page reaches :mod:`core` through :mod:`dashboard.cache`; these are the calls more than one
page makes (the analysis, the diagrams, the subgroups and windows, the data summary) and the
figures of their results, each cached beside the result it draws.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from core.analyses.analysis import AnalysisConfig
from core.analyses.analysis import analyze as core_analyze
from core.analyses.model_comparison import comparison_mode
from core.analyses.subgroups import subgroup_analysis, window_analysis
from core.figures import (
    analysis_figure,
    subgroup_forest_figure,
    subgroup_reliability_figure,
    window_figure,
)
from core.figures.diagrams import DIAGRAMS, diagram_figure, reliability_diagram
from core.stats.lenses import lens_components
from core.stats.summary import summarize
from dashboard import cache

if TYPE_CHECKING:
    from core.analyses.analysis import ReliabilityAnalysis
    from core.data import Predictions
    from core.stats.summary import DataSummary

__all__ = [
    "analyze",
    "bootstrap_work",
    "comparison_work",
    "diagram",
    "diagram_chart",
    "reliability_chart",
    "subgroup_charts",
    "subgroups",
    "summary",
    "window_chart",
    "windows",
    "without_resamples",
]


def analyze(predictions: Predictions, config: AnalysisConfig) -> ReliabilityAnalysis:
    """Return :func:`core.analyses.analysis.analyze` of the predictions (one cache, by digest and config).

    Parameters
    ----------
    predictions : core.data.Predictions
        The data (its exact ``digest`` is the cache key).
    config : core.analyses.analysis.AnalysisConfig
        The analysis options.

    Returns
    -------
    core.analyses.analysis.ReliabilityAnalysis
        The result.
    """

    return cache.compute(core_analyze, predictions, config, spinner="Computing the analysis…")


def summary(predictions: Predictions) -> DataSummary:
    """Return :func:`core.stats.summary.summarize` of the predictions (cached by digest)."""

    return cache.compute(summarize, predictions)


def reliability_chart(predictions: Predictions, config: AnalysisConfig, *, interval: str) -> Any:
    """Return the reliability figure of an analysis (:func:`core.figures.analysis_figure`).

    Cached by digest, config and legend: the classwise grid takes a few tenths of a second.
    """
    return cache.compute(_chart, predictions, config, interval)


def _chart(predictions: Predictions, config: AnalysisConfig, interval: str) -> Any:

    return analysis_figure(analyze(predictions, config), interval_label=interval)


def diagram(predictions: Predictions, config: AnalysisConfig, kind: str) -> Any:
    """Return :func:`core.figures.diagrams.reliability_diagram` of one kind (one cache)."""

    label = DIAGRAMS.get(kind).label.lower()
    return cache.compute(
        _diagram, predictions, config, kind, spinner=f"Computing the {label} diagram…"
    )


def _diagram(predictions: Predictions, config: AnalysisConfig, kind: str) -> Any:

    return reliability_diagram(predictions, config, kind=kind)


def diagram_chart(predictions: Predictions, config: AnalysisConfig, kind: str) -> Any:
    """Return the figure of :func:`diagram` (:func:`core.figures.diagrams.diagram_figure`), cached."""
    return cache.compute(_diagram_chart, predictions, config, kind)


def _diagram_chart(predictions: Predictions, config: AnalysisConfig, kind: str) -> Any:

    return diagram_figure(kind, diagram(predictions, config, kind))


def subgroups(predictions: Predictions, config: AnalysisConfig, **options: Any) -> Any:
    """Return :func:`core.analyses.subgroups.subgroup_analysis` (cached by digest, config and options).

    ``options`` are its keywords (``by`` a tuple, ``min_rows``, ``estimator``, ...).
    """

    return cache.compute(
        subgroup_analysis, predictions, config, spinner="Computing the subgroups…", **options
    )


def windows(predictions: Predictions, config: AnalysisConfig, **options: Any) -> Any:
    """Return :func:`core.analyses.subgroups.window_analysis` (cached by digest, config and options)."""

    return cache.compute(
        window_analysis, predictions, config, spinner="Computing the windows…", **options
    )


def subgroup_charts(result: Any, component: int) -> tuple[Any, Any]:
    """Return the overlay and forest figures of a subgroup analysis (cached with it)."""
    return cache.compute(_subgroup_charts, result, component)


def _subgroup_charts(result: Any, component: int) -> tuple[Any, Any]:

    return subgroup_reliability_figure(result, component=component), subgroup_forest_figure(result)


def window_chart(result: Any) -> Any:
    """Return the figure of a window analysis (cached with it)."""

    return cache.compute(window_figure, result)


def without_resamples(config: AnalysisConfig) -> AnalysisConfig:
    """Return the config with the bootstrap off (the fast part of the analysis)."""
    return dataclasses.replace(config, n_resamples=0)


def bootstrap_work(predictions: Predictions, config: AnalysisConfig) -> int:
    """Rows × resamples × components (one per class for the classwise lens)."""
    return predictions.n * config.n_resamples * lens_components(config.lens, predictions.n_classes)


def comparison_work(models: Mapping[str, Predictions], config: AnalysisConfig) -> int:
    """Return the bootstrap work of comparing ``models`` (0 for the cell bootstrap).

    The comparison takes the cell bootstrap at large n
    (:func:`core.analyses.model_comparison.comparison_mode`), which is quick at any n.
    """

    if not models:
        return 0
    first = next(iter(models.values()))
    sizes = [p.n for p in models.values()]
    mode = comparison_mode(
        config, config.n_resamples, sizes, lens_components(config.lens, first.n_classes)
    )
    return 0 if mode == "cells" else sum(bootstrap_work(p, config) for p in models.values())
