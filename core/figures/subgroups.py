"""Figures of the Subgroups page: pure functions of a :class:`~core.analyses.subgroups.SubgroupAnalysis`.

- :func:`subgroup_reliability_figure`: one reliability curve per group on the identical
  bins, all rows dashed, each group's bin counts beneath;
- :func:`subgroup_forest_figure`: every group's error ± its interval, the pooled value as
  a line, the worst group marked, groups too small to judge hollow;
- :func:`window_figure`: the error per time window with its interval as a line chart, the
  threshold and the first window over it.

Trace order is part of the contract (tests rely on it): the overlay is
``[diagonal, all rows, observed per group…, counts per group…]``; the forest holds one
trace; the window figure ``[interval band, value line, threshold?]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

if TYPE_CHECKING:
    from core.analyses.subgroups import SubgroupAnalysis, WindowAnalysis

from core.figures.compare import overlay_traces
from core.figures.reliability import diagram_with_counts, lay_out_diagram
from core.figures.style import SLATE, TEMPLATE, diagonal, interval_trace, literal, margin
from core.stats.lenses import lens_axis

_WORST = "#c53030"
_SMALL = "#a0aec0"
_WHISKER = {"thickness": 1.5, "width": 4, "color": SLATE}


def subgroup_reliability_figure(
    result: SubgroupAnalysis, *, component: int = 0, height: int = 620
) -> go.Figure:
    """Overlaid reliability curves of every group on the identical bins.

    Parameters
    ----------
    result : core.analyses.subgroups.SubgroupAnalysis
        The analysis.
    component : int, default=0
        Lens component to draw (a class of the classwise lens).
    height : int, default=620
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces ``[diagonal, all rows, observed of each group…, counts of each group…]``;
        observed traces have ``x = mean score`` and ``y = observed frequency`` of the
        group's non-empty bins (groups too small to judge dotted).
    """
    edges = np.asarray(result.edges[component], dtype=np.float64)
    groups = result.groups
    fig = diagram_with_counts((0.76, 0.24))
    pooled = result.pooled_bins[component]
    ok = np.asarray(pooled.counts) > 0
    traces: list[go.BaseTraceType] = [
        diagonal(),
        go.Scatter(
            x=np.asarray(pooled.mean_score)[ok],
            y=np.asarray(pooled.mean_label)[ok],
            mode="lines",
            name="all rows",
            line={"color": SLATE, "width": 2.5, "dash": "dot"},
            hovertemplate="<b>all rows</b><br>mean score %{x:.4f}<br>observed %{y:.4f}"
            "<extra></extra>",
        ),
    ]
    bars = []
    for i, raw in enumerate(groups):
        small = result.n[raw] < result.min_rows
        curve, bar = overlay_traces(
            raw, result.bins[raw][component], edges, i, len(groups), small=small
        )
        traces.append(curve)
        bars.append(bar)
    rows = [1] * len(traces) + [2] * len(bars)
    fig.add_traces(traces + bars, rows=rows, cols=[1] * len(rows))
    x_title = lens_axis(result.config.lens, literal(result.component_names[component]))
    lay_out_diagram(
        fig,
        x_title=f"{x_title} (mean per bin of all rows)",
        height=height,
        barmode="overlay",
    )
    return fig


def subgroup_forest_figure(result: SubgroupAnalysis, *, height_per_group: int = 28) -> go.Figure:
    """Each group's calibration error with its interval, against the value of all rows.

    Parameters
    ----------
    result : core.analyses.subgroups.SubgroupAnalysis
        The analysis.
    height_per_group : int, default=28
        Pixels per group.

    Returns
    -------
    plotly.graph_objects.Figure
        One trace: ``x = value``, ``y = group``, with the bootstrap interval; the worst
        group a red star, groups too small to judge hollow grey; a dotted line at the
        value of all rows.
    """
    table = result.table
    names = [literal(g) for g in table.group]
    value, low, high = (table[c].to_numpy(dtype=np.float64) for c in ("value", "low", "high"))
    low = np.where(np.isnan(low), value, low)
    high = np.where(np.isnan(high), value, high)
    small = table.small.to_numpy(dtype=bool)
    worst = (table.group == result.worst).to_numpy()
    colors = np.where(worst, _WORST, np.where(small, _SMALL, SLATE))
    symbols = np.where(worst, "star", np.where(small, "circle-open", "circle"))
    percent = f"{result.confidence_level:.0%}"
    key = literal(result.metric.key)
    fig = go.Figure(
        interval_trace(
            value,
            names,
            low,
            high,
            name=key,
            whisker=_WHISKER,
            marker={"size": 11, "color": colors, "symbol": symbols},
            customdata=np.column_stack(
                [low, high, table.n.to_numpy(), table.gap.to_numpy(dtype=np.float64)]
            ),
            hovertemplate=(
                f"%{{y}}<br>{key} = %{{x:.5f}}<br>{percent} interval "
                "[%{customdata[0]:.5f}, %{customdata[1]:.5f}]<br>n = %{customdata[2]:,.0f}"
                "<br>gap to all rows %{customdata[3]:+.5f}<extra></extra>"
            ),
        )
    )
    fig.add_vline(
        x=result.pooled["value"],
        line={"dash": "dot", "color": SLATE},
        annotation_text="all rows",
        annotation_position="top",
    )
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(title_text=f"{key} (lower is better)", rangemode="tozero")
    fig.update_layout(
        template=TEMPLATE,
        height=max(220, 90 + height_per_group * len(names)),
        margin=margin(40, left=160, bottom=50),
        showlegend=False,
    )
    return fig


def window_figure(window: WindowAnalysis, *, height: int = 380) -> go.Figure:
    """Draw the calibration error per time window with its interval, and the threshold.

    Parameters
    ----------
    window : core.analyses.subgroups.WindowAnalysis
        The analysis over time windows.
    height : int, default=380
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces ``[interval band, value line, threshold?]``: x = window (in time order),
        y = value; windows too small to judge hollow; the first window over the threshold
        red.
    """
    result = window.result
    table = result.table
    x = [literal(g) for g in table.group]
    value, low, high = (table[c].to_numpy(dtype=np.float64) for c in ("value", "low", "high"))
    small = table.small.to_numpy(dtype=bool)
    first = (table.group == window.first_breach).to_numpy()
    key = literal(result.metric.key)
    percent = f"{result.confidence_level:.0%}"
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=x + x[::-1],
            y=np.concatenate([high, low[::-1]]),
            fill="toself",
            fillcolor="rgba(113, 128, 150, 0.2)",
            line={"width": 0},
            name=f"{percent} interval",
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=value,
            mode="lines+markers",
            name=key,
            line={"color": SLATE, "width": 2},
            marker={
                "size": np.where(first, 13, 8),
                "color": np.where(first, _WORST, np.where(small, _SMALL, SLATE)),
                "symbol": np.where(small, "circle-open", "circle"),
            },
            customdata=np.column_stack([low, high, table.n.to_numpy()]),
            hovertemplate=(
                f"%{{x}}<br>{key} = %{{y:.5f}}<br>{percent} interval "
                "[%{customdata[0]:.5f}, %{customdata[1]:.5f}]<br>n = %{customdata[2]:,.0f}"
                "<extra></extra>"
            ),
        )
    )
    if window.threshold is not None:
        fig.add_trace(
            go.Scatter(
                x=[x[0], x[-1]],
                y=[window.threshold, window.threshold],
                mode="lines",
                name="threshold",
                line={"color": _WORST, "dash": "dash", "width": 1.5},
                hoverinfo="skip",
            )
        )
    fig.update_xaxes(title_text="window", type="category")
    fig.update_yaxes(title_text=key, rangemode="tozero")
    fig.update_layout(template=TEMPLATE, height=height, margin=margin(30), hovermode="closest")
    return fig
