"""Reliability diagrams: the :data:`DIAGRAMS` registry and :func:`reliability_diagram`.

A reliability diagram plots, for a lens component, the observed frequency of the outcome
against the predicted score. The binned diagram is the analysis itself
(:func:`core.analyses.analysis.analyze`: one point per bin, per-bin intervals, consistency band);
other kinds (a smoothed curve, the isotonic CORP curve) are entries of :data:`DIAGRAMS`
with their own compute function and figure.

An entry declares:

- ``func(data, config) -> result``: the computation, on :class:`core.data.Predictions` or a
  ``(probs, labels)`` pair under a frozen :class:`core.analyses.analysis.AnalysisConfig` (its lens,
  seed and confidence level); the result is a frozen object with ``summary`` (one
  sentence saying what it shows on these data), ``table()`` (a DataFrame shown under the
  figure, or None) and ``to_record()`` (JSON-ready numbers for the report's JSON);
- ``figure``: the :mod:`core.figures` function that draws the result
  (``figure(result, **options) -> plotly Figure``);
- ``from_analysis``: whether the diagram is the analysis itself (the binned one: the
  Reliability page and the report always have it, and the sidebar's binning options
  change it); other kinds are computed besides it.

The registry sits above the analyses it computes and the figures it draws: nothing below
:mod:`core.figures` imports it, so registering a kind imports nothing it does not need.
The Reliability page offers every entry as its "Diagram" choice (URL key ``diagram``), the
report draws the kinds it is asked for (``build_report(diagrams=...)``, CLI
``calibscope report --diagram NAME``) after the binned one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import core.figures
from core.analyses.analysis import AnalysisConfig, analyze
from core.analyses.corp_diagram import corp_diagram
from core.analyses.smooth import smooth_diagram
from core.base.registry import Entry, Registry

__all__ = ["DIAGRAMS", "DiagramInfo", "diagram_figure", "reliability_diagram"]


@dataclass(frozen=True, kw_only=True)
class DiagramInfo(Entry):
    """One kind of reliability diagram (see the module docstring).

    Attributes
    ----------
    figure : callable
        The :mod:`core.figures` function that draws a result of ``func``.
    from_analysis : bool
        Whether it is drawn from :func:`core.analyses.analysis.analyze` itself (the binned diagram).
    """

    figure: Callable[..., Any]
    from_analysis: bool = False


#: Every kind of reliability diagram, in the order the Reliability page offers them.
DIAGRAMS: Registry[DiagramInfo] = Registry("diagram", DiagramInfo)


DIAGRAMS.add(
    DiagramInfo(
        name="binned",
        func=analyze,
        label="Binned",
        description="One point per bin: mean score against observed frequency, with per-bin "
        "intervals, the consistency band and the count of each bin.",
        formula="docs/formulas.md, Reliability diagram",
        figure=core.figures.analysis_figure,
        from_analysis=True,
    )
)


def reliability_diagram(data: Any, config: Any = None, *, kind: str = "binned") -> Any:
    """Compute the reliability diagram of one kind.

    Parameters
    ----------
    data : Predictions or (probs, labels)
        The predictions (see :func:`core.data.as_predictions`).
    config : AnalysisConfig, optional
        The options (default ``AnalysisConfig()``).
    kind : str, default "binned"
        A name in :data:`DIAGRAMS`.

    Returns
    -------
    object
        The frozen result of the kind's function (for ``"binned"``, the
        :class:`core.analyses.analysis.ReliabilityAnalysis`).

    Raises
    ------
    ConfigError
        For an unknown kind (the message lists the valid ones) or invalid options.
    """
    info = DIAGRAMS.get(kind)
    return info.func(data, config if config is not None else AnalysisConfig())


def diagram_figure(kind: str, result: Any, **options: Any) -> Any:
    """Draw a result of :func:`reliability_diagram` with its kind's figure function.

    Parameters
    ----------
    kind : str
        The name in :data:`DIAGRAMS` that produced ``result``.
    result : object
        What :func:`reliability_diagram` returned for ``kind``.
    **options
        Passed to the figure function (e.g. ``interval_label`` for the binned diagram).

    Returns
    -------
    plotly.graph_objects.Figure
        The figure.
    """
    return DIAGRAMS.get(kind).figure(result, **options)


DIAGRAMS.add(
    DiagramInfo(
        name="smooth",
        func=smooth_diagram,
        label="Smooth",
        description="The observed frequency smoothed by a Gaussian kernel (reflected at 0 and "
        "1) at the smooth ECE's own bandwidth, with a bootstrap band and the density of the "
        "scores (Błasiok & Nakkiran 2023, relplot).",
        formula="docs/formulas.md, Smooth ECE",
        figure=core.figures.smooth_diagram_figure,
    )
)

DIAGRAMS.add(
    DiagramInfo(
        name="corp",
        func=corp_diagram,
        label="CORP (isotonic)",
        description="The isotonic (PAV) recalibration curve of the forecasts, no binning "
        "choice, with consistency and confidence bands and the Brier score's "
        "MCB − DSC + UNC decomposition (Dimitriadis, Gneiting & Jordan 2021).",
        formula="docs/formulas.md, CORP reliability diagram",
        figure=core.figures.corp_figure,
    )
)
