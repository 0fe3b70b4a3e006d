"""Reliability diagrams of an analysis: one component, the classwise grid, consistency bands.

Trace order is part of the contract (tests and the report rely on it):

- :func:`reliability_figure`: ``[diagonal, observed, counts]``, then ``band`` when a
  consistency band is drawn;
- :func:`classwise_grid`: per class ``[diagonal, observed]``, then one ``band`` per class
  with ``show_band=True``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike
from plotly.subplots import make_subplots

from core.figures.style import (
    BLUE,
    COUNT_COLOR,
    GREY,
    LEGEND_TOP_LEFT,
    PALETTE,
    RED,
    SMALL_AXIS_TITLE,
    TEMPLATE,
    UNIT_RANGE,
    asymmetric_error,
    centres,
    diagonal,
    filled_band,
    literal,
    margin,
)

if TYPE_CHECKING:
    from core.analyses.analysis import ComponentTable
    from core.stats.binning import BinStats

OBSERVED_COLOR = BLUE
BAND_FILL = "rgba(120, 120, 120, 0.18)"


def _observed_trace(
    bins: Any,
    low: ArrayLike | None,
    high: ArrayLike | None,
    *,
    name: str,
    showlegend: bool = True,
) -> go.Scatter:
    """Scatter of mean label against mean score over the non-empty bins, with error bars."""
    counts = np.asarray(bins.counts)
    ok = counts > 0
    x = np.asarray(bins.mean_score, dtype=np.float64)[ok]
    y = np.asarray(bins.mean_label, dtype=np.float64)[ok]
    edges = np.asarray(bins.edges, dtype=np.float64)
    index = np.flatnonzero(ok)
    if low is not None and high is not None:
        lo = np.asarray(low, dtype=np.float64)[ok]
        hi = np.asarray(high, dtype=np.float64)[ok]
        error_y = asymmetric_error(y, lo, hi, thickness=1, width=3, color=OBSERVED_COLOR)
    else:
        lo = hi = np.full(x.shape, np.nan)
        error_y = None
    customdata = np.column_stack([counts[ok], lo, hi, edges[:-1][ok], edges[1:][ok], index])
    return go.Scatter(
        x=x,
        y=y,
        mode="lines+markers",
        name=name,
        showlegend=showlegend,
        line={"color": OBSERVED_COLOR, "width": 1.5},
        marker={"size": 7, "color": OBSERVED_COLOR},
        error_y=error_y,
        customdata=customdata,
        hovertemplate=(
            "bin %{customdata[5]:.0f} [%{customdata[3]:.3f}, %{customdata[4]:.3f}]"
            "<br>mean score %{x:.4f}<br>observed %{y:.4f}"
            " [%{customdata[1]:.3f}, %{customdata[2]:.3f}]"
            "<br>n = %{customdata[0]:,.0f}<extra></extra>"
        ),
    )


def _band_trace(
    bins: Any,
    band_low: ArrayLike,
    band_high: ArrayLike,
    *,
    confidence_level: float | None,
    showlegend: bool = True,
) -> go.Scatter:
    """Shaded consistency band around the diagonal, over the non-empty bins' mean scores."""
    x = np.asarray(bins.mean_score, dtype=np.float64)
    lo = np.asarray(band_low, dtype=np.float64)
    hi = np.asarray(band_high, dtype=np.float64)
    ok = (np.asarray(bins.counts) > 0) & np.isfinite(lo) & np.isfinite(hi)
    order = np.argsort(x[ok], kind="stable")
    name = (
        "consistency band"
        if confidence_level is None
        else f"consistency band ({confidence_level:.0%})"
    )
    return filled_band(
        x[ok][order],
        lo[ok][order],
        hi[ok][order],
        fillcolor=BAND_FILL,
        name=name,
        showlegend=showlegend,
    )


def _band_of(component: Any) -> tuple[Any, Any, float | None]:
    band = getattr(component, "band", None)
    if band is None:
        return None, None, None
    return band.low, band.high, band.confidence_level


def band_arguments(component: Any) -> dict[str, Any]:
    """Return the ``band_low``/``band_high``/``band_level`` arguments of a component's band.

    For :func:`reliability_figure`; all three are None when the component has no band.
    """
    low, high, confidence_level = _band_of(component)
    return {"band_low": low, "band_high": high, "band_level": confidence_level}


def diagram_with_counts(row_heights: tuple[float, float]) -> go.Figure:
    """Return two rows on a shared x axis: a reliability diagram above its bin counts.

    Parameters
    ----------
    row_heights : (float, float)
        Shares of the height of the diagram and of the counts.

    Returns
    -------
    plotly.graph_objects.Figure
        An empty figure; the diagram is row 1, the counts row 2.
    """
    return make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=list(row_heights), vertical_spacing=0.04
    )


def lay_out_diagram(
    fig: go.Figure, *, x_title: str, height: int, top: int = 20, **layout: Any
) -> None:
    """Set the axes and layout of a :func:`diagram_with_counts` figure, in place.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        The figure.
    x_title : str
        Title of the shared score axis.
    height : int
        Figure height in pixels.
    top : int, default=20
        Top margin in pixels (room for a title).
    **layout
        Further layout properties (``title``, ``barmode``, ...).
    """
    fig.update_xaxes(range=UNIT_RANGE, constrain="domain", showgrid=True)
    fig.update_xaxes(title_text=x_title, row=2, col=1)
    fig.update_yaxes(range=UNIT_RANGE, title_text="observed frequency", row=1, col=1)
    fig.update_yaxes(title_text="count", rangemode="tozero", row=2, col=1)
    fig.update_layout(
        template=TEMPLATE,
        height=height,
        bargap=0,
        hovermode="closest",
        margin=margin(top),
        legend=LEGEND_TOP_LEFT,
        **layout,
    )


def reliability_figure(
    bins: ComponentTable | BinStats,
    *,
    low: ArrayLike | None = None,
    high: ArrayLike | None = None,
    name: str = "observed frequency",
    interval_label: str | None = None,
    title: str | None = None,
    height: int = 560,
    band_low: ArrayLike | None = None,
    band_high: ArrayLike | None = None,
    band_level: float | None = None,
) -> go.Figure:
    """Reliability diagram with per-bin intervals and a count histogram beneath.

    Parameters
    ----------
    bins : core.analyses.analysis.ComponentTable or core.stats.binning.BinStats
        An analysis component, whose ``bins``, ``low`` and ``high`` are used (its
        consistency ``band`` only when passed as ``band_low``/``band_high``, e.g. with
        ``**band_arguments(component)``), or the bin statistics of one component
        (``edges``, ``counts``, ``mean_score``, ``mean_label``).
    low, high : array_like, optional
        Per-bin interval of the observed frequency, shape ``(B,)`` (NaN for empty bins),
        e.g. from :func:`core.stats.intervals.bin_intervals`. Drawn as error bars.
    name : str, default="observed frequency"
        Legend entry of the observed curve.
    interval_label : str, optional
        Appended to the legend entry, e.g. ``"95% Wilson"``.
    title : str, optional
        Figure title.
    height : int, default=560
        Figure height in pixels.
    band_low, band_high : array_like, optional
        Per-bin consistency band of the observed frequency, shape ``(B,)``, e.g. from
        :func:`core.stats.consistency_bands.consistency_band`; drawn as a shaded area around
        the diagonal at each bin's mean score.
    band_level : float, optional
        Level of the band, for the legend entry ``"consistency band (95%)"``.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces ``[diagonal, observed, counts]`` and, with a band, ``band``: the observed
        trace has ``x = mean_score`` and ``y = mean_label`` of the non-empty bins; the
        count bars sit at the bin centres with the bin widths; the band is one closed
        polygon (lower edge left to right, upper edge back).
    """
    if not hasattr(bins, "counts") and hasattr(bins, "bins"):
        low = getattr(bins, "low", None) if low is None else low
        high = getattr(bins, "high", None) if high is None else high
        bins = bins.bins
    edges = np.asarray(bins.edges, dtype=np.float64)
    counts = np.asarray(bins.counts)
    fig = diagram_with_counts((0.78, 0.22))
    fig.add_trace(diagonal(), row=1, col=1)
    label = literal(f"{name} ({interval_label})" if interval_label else name)
    fig.add_trace(_observed_trace(bins, low, high, name=label), row=1, col=1)
    fig.add_trace(
        go.Bar(
            x=centres(edges),
            y=counts,
            width=np.diff(edges),
            marker={"color": COUNT_COLOR, "line": {"width": 0.5, "color": "white"}},
            name="count",
            showlegend=False,
            customdata=np.column_stack([edges[:-1], edges[1:]]),
            hovertemplate="[%{customdata[0]:.3f}, %{customdata[1]:.3f}]: n = %{y:,}<extra></extra>",
        ),
        row=2,
        col=1,
    )
    if band_low is not None and band_high is not None:
        fig.add_trace(
            _band_trace(bins, band_low, band_high, confidence_level=band_level), row=1, col=1
        )
    lay_out_diagram(
        fig,
        x_title="predicted probability (mean score per bin)",
        height=height,
        top=50 if title else 20,
        title=None if title is None else literal(title),
    )
    return fig


def classwise_grid(
    components: Sequence[ComponentTable],
    *,
    cols: int | None = None,
    values: Sequence[float] | None = None,
    height_per_row: int = 260,
    show_band: bool = False,
) -> go.Figure:
    """Small multiples: one reliability diagram per class (classwise lens).

    Parameters
    ----------
    components : sequence of core.analyses.analysis.ComponentTable
        One entry per class with attributes ``name``, ``bins`` (``BinStats``) and
        optional ``low``/``high`` per-bin intervals and consistency ``band``.
    cols : int, optional
        Columns of the grid; default ``min(K, 4)``.
    values : sequence of float, optional
        Per-class calibration error, shown in the panel titles.
    height_per_row : int, default=260
        Height of one row of panels in pixels.
    show_band : bool, default=False
        Shade each class's consistency band (components' ``band``) around its diagonal.

    Returns
    -------
    plotly.graph_objects.Figure
        For class ``k``, traces ``2k`` (diagonal) and ``2k + 1`` (observed); with
        ``show_band`` and a band on every component, trace ``2K + k`` is class ``k``'s band.
    """
    k = len(components)
    cols = cols or min(k, 4)
    rows = math.ceil(k / cols)
    titles = []
    for i, c in enumerate(components):
        n = int(np.asarray(c.bins.counts).sum())
        extra = f" · CE {values[i]:.4f}" if values is not None else ""
        titles.append(f"{literal(c.name)} (n = {n:,}){extra}")
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=titles,
        shared_xaxes=True,
        shared_yaxes=True,
        horizontal_spacing=0.04,
        vertical_spacing=0.5 / max(rows * 3, 1) + 0.07,
    )
    traces, rows_of, cols_of = [], [], []
    for i, c in enumerate(components):
        r, col = divmod(i, cols)
        first = i == 0
        observed = _observed_trace(
            c.bins,
            getattr(c, "low", None),
            getattr(c, "high", None),
            name="observed frequency",
            showlegend=first,
        )
        observed.marker.size = 5
        traces += [diagonal(showlegend=first), observed]
        rows_of += [r + 1, r + 1]
        cols_of += [col + 1, col + 1]
    if show_band:
        for i, c in enumerate(components):
            low, high, confidence_level = _band_of(c)
            if low is None:
                continue
            r, col = divmod(i, cols)
            traces.append(
                _band_trace(c.bins, low, high, confidence_level=confidence_level, showlegend=i == 0)
            )
            rows_of.append(r + 1)
            cols_of.append(col + 1)
    # one batched call: adding traces one by one re-validates the figure each time
    fig.add_traces(traces, rows=rows_of, cols=cols_of)
    # every small multiple says what its axes are, not only the outer ones
    fig.update_xaxes(range=UNIT_RANGE, constrain="domain", **SMALL_AXIS_TITLE, title_text="score")
    fig.update_yaxes(range=UNIT_RANGE, **SMALL_AXIS_TITLE, title_text="observed")
    fig.update_layout(
        template=TEMPLATE,
        height=max(300, height_per_row * rows + 60),
        margin=margin(50, left=50, bottom=40),
        legend={"orientation": "h", "x": 0.0, "y": -0.06, "yanchor": "top"},
    )
    fig.update_annotations(font_size=12)
    return fig


def analysis_figure(analysis: Any, *, interval_label: str = "") -> go.Figure:
    """Return the reliability figure of an analysis: one diagram, or a grid per class.

    Parameters
    ----------
    analysis : core.analyses.analysis.ReliabilityAnalysis
        The analysis (its components, headline and config).
    interval_label : str
        Legend label of the per-bin intervals, e.g. ``"95% Wilson score"``.

    Returns
    -------
    plotly.graph_objects.Figure
        :func:`classwise_grid` for several components, else :func:`reliability_figure`.
    """
    if len(analysis.components) > 1:
        return classwise_grid(
            analysis.components,
            values=analysis.headline.component_values,
            show_band=analysis.config.consistency_band,
        )
    comp = analysis.components[0]
    return reliability_figure(comp, interval_label=interval_label, **band_arguments(comp))


def smooth_diagram_figure(diagram: Any, *, height: int = 560) -> go.Figure:
    """Draw a smooth reliability diagram (:class:`core.analyses.smooth.SmoothDiagram`).

    Above: per component, the smoothed observed frequency with its bootstrap band and the
    diagonal; below, the density of the scores on the same axis (relplot's diagram, in
    the shared look).

    Parameters
    ----------
    diagram : core.analyses.smooth.SmoothDiagram
        The computed diagram.
    height : int, default=560
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        The figure.
    """
    fig = diagram_with_counts((0.75, 0.25))
    fig.add_trace(diagonal(), row=1, col=1)
    several = len(diagram.components) > 1
    level = f"{diagram.confidence_level:.0%}"
    for i, comp in enumerate(diagram.components):
        color = PALETTE[i % len(PALETTE)] if several else RED
        name = literal(comp.name) if several else "smoothed frequency"
        if comp.lower is not None:
            fig.add_trace(
                filled_band(
                    comp.mesh,
                    comp.lower,
                    comp.upper,
                    fillcolor=color if several else GREY,
                    opacity=0.25,
                    name=f"{level} bootstrap band" + (f" ({name})" if several else ""),
                    showlegend=not several or i == 0,
                    legendgroup=f"c{i}",
                ),
                row=1,
                col=1,
            )
        fig.add_trace(
            go.Scatter(
                x=comp.mesh,
                y=comp.curve,
                mode="lines",
                name=name,
                line={"color": color, "width": 2},
                legendgroup=f"c{i}",
                hovertemplate="score %{x:.3f}<br>smoothed frequency %{y:.3f}<extra></extra>",
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=comp.mesh,
                y=comp.density,
                mode="lines",
                fill="tozeroy",
                line={"color": color if several else COUNT_COLOR, "width": 1},
                name="density",
                showlegend=False,
                legendgroup=f"c{i}",
                hovertemplate="score %{x:.3f}<br>density %{y:.3f}<extra></extra>",
            ),
            row=2,
            col=1,
        )
    title = f"Smooth ECE {diagram.value:.4f}"
    if diagram.bootstrap is not None:
        ci = diagram.bootstrap.confidence_interval
        title += f" ({level} interval {ci.low:.4f}–{ci.high:.4f})"
    bws = ", ".join(f"{c.bandwidth:.3g}" for c in diagram.components)
    title += f", σ = {bws}"
    lay_out_diagram(
        fig,
        x_title=f"predicted score ({literal(diagram.lens)} lens)",
        height=height,
        top=40,
        title={"text": title, "font": {"size": 14}},
    )
    fig.update_yaxes(title_text="density", row=2, col=1)
    return fig
