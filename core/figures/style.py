"""The shared look of the figures: template, colours, legends, margins and common traces."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike


def _register_template() -> str:
    """Register ``calibscope``: plotly_white with plain numbers on every axis.

    Plotly's default ``exponentformat="B"`` writes small and large tick values with SI
    prefixes (``5µ``, ``2k``), which read as units on a statistical axis; ``"power"``
    writes ``5×10⁻⁶`` and plain numbers in between.
    """
    import plotly.io as pio

    if "calibscope" not in pio.templates:
        template = go.layout.Template(pio.templates["plotly_white"])
        for axis in (template.layout.xaxis, template.layout.yaxis):
            axis.exponentformat = "power"
            axis.separatethousands = True
        pio.templates["calibscope"] = template
    return "calibscope"


#: The figures' template: plotly_white, axes without SI prefixes.
TEMPLATE = _register_template()

#: Plotly's default qualitative colours (Tableau 10), in their usual order.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
BLUE, ORANGE, GREEN, RED, PURPLE, BROWN, PINK, GREY, OLIVE, CYAN = PALETTE
#: Bars of row counts.
COUNT_COLOR = "#9aa5b1"
#: Error bars, and the observed shares next to predicted ones.
SLATE = "#4a5568"
#: Correct predictions, or a model significantly better than the reference.
GOOD = "#2f855a"
#: An observed value set against a simulated distribution.
OBSERVED_MARK = "#e84118"
DIAGONAL_COLOR = "#333333"

#: Axis titles of the panels of a grid of small multiples: small, close to the axis.
SMALL_AXIS_TITLE = {"title_font_size": 11, "title_standoff": 4}

#: A little margin so markers and error bars at 0 and 1 are not clipped.
UNIT_RANGE = (-0.02, 1.02)


def literal(text: object) -> str:
    """Return text that Plotly shows as it is, for names that come from the data.

    Plotly reads figure text as a small HTML dialect (``<a href>`` links, ``<span style>``,
    ``<b>``, entities) and hover templates substitute ``%{...}``; a model, class or file
    name is data, so its ``&``, ``<``, ``>`` and ``%{`` become entities that Plotly draws
    as those characters. Every figure passes each such name (trace names, titles, axis
    titles, annotations, hover text, categorical tick labels) through this one function.

    Parameters
    ----------
    text : object
        A name (converted with ``str``).

    Returns
    -------
    str
        The escaped text (unchanged when it holds none of those characters).

    Examples
    --------
    >>> literal('<a href="https://x">y</a> 5%{x}')
    '&lt;a href="https://x"&gt;y&lt;/a&gt; 5&#37;{x}'
    """
    return (
        str(text)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("%{", "&#37;{")
    )


LEGEND_TOP_LEFT = {
    "x": 0.01,
    "y": 0.99,
    "xanchor": "left",
    "yanchor": "top",
    "bgcolor": "rgba(255,255,255,0.8)",
}
LEGEND_ABOVE = {"orientation": "h", "x": 0.0, "y": 1.02, "xanchor": "left", "yanchor": "bottom"}
LEGEND_BELOW = {"orientation": "h", "y": -0.25}


def margin(top: int = 30, *, left: int = 60, right: int = 20, bottom: int = 50) -> dict[str, int]:
    """Return a layout margin, by default room for axis titles on the left and below."""
    return {"l": left, "r": right, "t": top, "b": bottom}


def centres(edges: ArrayLike) -> np.ndarray:
    """Return the midpoints of consecutive bin edges."""
    e = np.asarray(edges, dtype=np.float64)
    return 0.5 * (e[:-1] + e[1:])


def diagonal(
    *, name: str = "perfect calibration", showlegend: bool = True, color: str = DIAGONAL_COLOR
) -> go.Scatter:
    """Return the dashed identity line from (0, 0) to (1, 1) of a reliability diagram."""
    return go.Scatter(
        x=[0.0, 1.0],
        y=[0.0, 1.0],
        mode="lines",
        name=name,
        line={"dash": "dash", "color": color, "width": 1},
        hoverinfo="skip",
        showlegend=showlegend,
    )


def asymmetric_error(
    value: ArrayLike, low: ArrayLike, high: ArrayLike, **style: Any
) -> dict[str, Any]:
    """Return Plotly error bars reaching from ``low`` to ``high`` around ``value``.

    Parameters
    ----------
    value, low, high : array_like
        Point values and the ends of their intervals.
    **style
        Further error-bar properties (``thickness``, ``width``, ``color``).

    Returns
    -------
    dict
        For a trace's ``error_x`` or ``error_y``.
    """
    v = np.asarray(value, dtype=np.float64)
    return {
        "type": "data",
        "symmetric": False,
        "array": np.asarray(high, dtype=np.float64) - v,
        "arrayminus": v - np.asarray(low, dtype=np.float64),
        **style,
    }


def interval_trace(
    x: ArrayLike,
    y: Sequence[str],
    low: ArrayLike,
    high: ArrayLike,
    *,
    name: str,
    marker: dict[str, Any],
    whisker: dict[str, Any] | None = None,
    **trace: Any,
) -> go.Scatter:
    """Return markers at ``x`` per row ``y`` with horizontal bars from ``low`` to ``high``.

    Parameters
    ----------
    x : array_like
        Point values.
    y : sequence of str
        Row labels.
    low, high : array_like
        Ends of the intervals (equal to ``x`` where there is none).
    name : str
        Name of the trace.
    marker : dict
        Marker properties.
    whisker : dict, optional
        Error-bar properties (``thickness``, ``width``, ``color``).
    **trace
        Further properties of the trace (``customdata``, ``hovertemplate``, ...).

    Returns
    -------
    plotly.graph_objects.Scatter
        A dot-and-whisker trace.
    """
    return go.Scatter(
        x=x,
        y=y,
        mode="markers",
        name=name,
        marker=marker,
        error_x=asymmetric_error(x, low, high, **(whisker or {})),
        **trace,
    )


def filled_band(
    x: ArrayLike,
    low: ArrayLike,
    high: ArrayLike,
    *,
    fillcolor: str,
    name: str | None = None,
    showlegend: bool = True,
    **trace: Any,
) -> go.Scatter:
    """Return a shaded band between two curves over the same ``x``.

    Parameters
    ----------
    x, low, high : array_like
        Abscissae in drawing order and the band's lower and upper edges there.
    fillcolor : str
        Colour of the band.
    name : str, optional
        Legend entry.
    showlegend : bool, default=True
        Whether the band has a legend entry.
    **trace
        Further properties of the trace (e.g. ``opacity``).

    Returns
    -------
    plotly.graph_objects.Scatter
        One closed polygon: along the lower edge, then back along the upper edge.
    """
    xs = np.asarray(x, dtype=np.float64)
    return go.Scatter(
        x=np.concatenate([xs, xs[::-1]]),
        y=np.concatenate([np.asarray(low, dtype=np.float64), np.asarray(high)[::-1]]),
        mode="lines",
        fill="toself",
        fillcolor=fillcolor,
        line={"width": 0},
        name=name,
        showlegend=showlegend,
        hoverinfo="skip",
        **trace,
    )


def log_n_axis(fig: go.Figure, ns: Sequence[int], user_n: int | None = None) -> None:
    """Put the sample sizes ``ns`` on a log x axis and mark ``user_n`` with a vertical line.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        The figure, changed in place.
    ns : sequence of int
        Sample sizes, the tick marks.
    user_n : int, optional
        The user's own sample size.
    """
    ticks = sorted({int(n) for n in ns})
    fig.update_xaxes(
        type="log",
        tickvals=ticks,
        ticktext=[f"{n:,}" for n in ticks],
        title_text="sample size n (log₂ scale)",
    )
    if user_n:
        # plotly.js places shapes in data units on a log axis but annotations in log10 units
        # (an annotation at x = n would be read as 10ⁿ and stretch the axis)
        fig.add_shape(
            type="line",
            xref="x",
            yref="paper",
            x0=float(user_n),
            x1=float(user_n),
            y0=0,
            y1=1,
            line={"color": "#555", "dash": "dot", "width": 1.5},
        )
        fig.add_annotation(
            x=float(np.log10(user_n)),
            xref="x",
            y=1,
            yref="paper",
            yanchor="bottom",
            text=f"your n = {user_n:,}",
            showarrow=False,
        )


def log_counts(fig: go.Figure, log: bool = True) -> go.Figure:
    """Return a copy of a figure with its count bars on a log axis.

    The y axes that carry bar traces — the count panel under a reliability diagram, a
    confidence histogram — become logarithmic and their titles say so; a few large bins
    then no longer hide the small ones. Empty bins (count 0) draw no bar.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        A figure whose bar traces are counts.
    log : bool, default=True
        False returns ``fig`` itself.

    Returns
    -------
    plotly.graph_objects.Figure
        The copy (``fig`` is unchanged: a cached figure may be shared).
    """
    if not log:
        return fig
    fig = go.Figure(fig)
    axes = {getattr(t, "yaxis", None) or "y" for t in fig.data if t.type == "bar"}
    for ref in axes:
        axis = fig.layout["yaxis" + ref[1:]]
        title = axis.title.text or "count"
        axis.update(type="log", rangemode=None, title_text=f"{title} (log scale)")
    return fig
