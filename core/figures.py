"""Plotly figures of calibration results: pure functions of result objects.

Every builder takes arrays or result objects of :mod:`core` (``BinStats`` and per-bin
intervals, probability matrices and labels) and returns a :class:`plotly.graph_objects.Figure`;
nothing here computes an estimate. The dashboard, the report and notebooks draw the same
figures from the same objects.

Trace order is part of the contract (tests and the report rely on it):

- :func:`reliability_figure`: ``[diagonal, observed, counts]``, then ``band`` when a
  consistency band is drawn;
- :func:`classwise_grid`: per class ``[diagonal, observed]``, then one ``band`` per class
  with ``show_band=True``;
- :func:`confidence_histogram`: ``[correct, incorrect]`` with labels, else ``[all]``;
- :func:`class_balance`: ``[observed share, mean predicted probability]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike
from plotly.subplots import make_subplots

from core._validation import check_probs_labels
from core.binning import bin_stats
from core.lenses import top_label

OBSERVED_COLOR = "#1f77b4"
COUNT_COLOR = "#9aa5b1"
BAND_FILL = "rgba(120, 120, 120, 0.18)"
# a little margin so markers and error bars at 0 and 1 are not clipped
AXIS_RANGE = (-0.02, 1.02)
DIAGONAL = {"dash": "dash", "color": "#333333", "width": 1}
_LEGEND = {
    "x": 0.01,
    "y": 0.99,
    "xanchor": "left",
    "yanchor": "top",
    "bgcolor": "rgba(255,255,255,0.8)",
}


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
        error_y = {
            "type": "data",
            "symmetric": False,
            "array": hi - y,
            "arrayminus": y - lo,
            "thickness": 1,
            "width": 3,
            "color": OBSERVED_COLOR,
        }
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
    level: float | None,
    showlegend: bool = True,
) -> go.Scatter:
    """Shaded consistency band around the diagonal, over the non-empty bins' mean scores."""
    x = np.asarray(bins.mean_score, dtype=np.float64)
    lo = np.asarray(band_low, dtype=np.float64)
    hi = np.asarray(band_high, dtype=np.float64)
    ok = (np.asarray(bins.counts) > 0) & np.isfinite(lo) & np.isfinite(hi)
    order = np.argsort(x[ok], kind="stable")
    xs, ls, hs = x[ok][order], lo[ok][order], hi[ok][order]
    name = "consistency band" if level is None else f"consistency band ({level:.0%})"
    return go.Scatter(
        # one closed polygon: along the lower edge, back along the upper edge
        x=np.concatenate([xs, xs[::-1]]),
        y=np.concatenate([ls, hs[::-1]]),
        mode="lines",
        fill="toself",
        fillcolor=BAND_FILL,
        line={"width": 0, "color": BAND_FILL},
        name=name,
        showlegend=showlegend,
        hoverinfo="skip",
    )


def _band_of(component: Any) -> tuple[Any, Any, float | None]:
    band = getattr(component, "band", None)
    if band is None:
        return None, None, None
    return band.low, band.high, band.level


def band_arguments(component: Any) -> dict[str, Any]:
    """Return the ``band_low``/``band_high``/``band_level`` arguments of a component's band.

    For :func:`reliability_figure`; all three are None when the component has no band.
    """
    low, high, level = _band_of(component)
    return {"band_low": low, "band_high": high, "band_level": level}


def _diagonal(showlegend: bool = True) -> go.Scatter:
    return go.Scatter(
        x=[0.0, 1.0],
        y=[0.0, 1.0],
        mode="lines",
        name="perfect calibration",
        line=DIAGONAL,
        hoverinfo="skip",
        showlegend=showlegend,
    )


def reliability_figure(
    bins: Any,
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
    bins : core.binning.BinStats or core.analysis.ComponentTable
        Bin statistics of one component (``edges``, ``counts``, ``mean_score``,
        ``mean_label``), or an analysis component, whose ``bins``, ``low`` and ``high``
        are used (its consistency ``band`` only when passed as ``band_low``/``band_high``,
        e.g. with ``**band_arguments(component)``).
    low, high : array_like, optional
        Per-bin interval of the observed frequency, shape ``(B,)`` (NaN for empty bins),
        e.g. from :func:`core.intervals.bin_intervals`. Drawn as error bars.
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
        :func:`core.consistency_bands.consistency_band`; drawn as a shaded area around
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
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.78, 0.22], vertical_spacing=0.04
    )
    fig.add_trace(_diagonal(), row=1, col=1)
    label = f"{name} ({interval_label})" if interval_label else name
    fig.add_trace(_observed_trace(bins, low, high, name=label), row=1, col=1)
    fig.add_trace(
        go.Bar(
            x=0.5 * (edges[:-1] + edges[1:]),
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
        fig.add_trace(_band_trace(bins, band_low, band_high, level=band_level), row=1, col=1)
    fig.update_xaxes(range=AXIS_RANGE, constrain="domain", showgrid=True)
    fig.update_xaxes(title_text="predicted probability (mean score per bin)", row=2, col=1)
    fig.update_yaxes(range=AXIS_RANGE, title_text="observed frequency", row=1, col=1)
    fig.update_yaxes(title_text="count", rangemode="tozero", row=2, col=1)
    fig.update_layout(
        template="plotly_white",
        title=title,
        height=height,
        bargap=0,
        hovermode="closest",
        margin={"l": 60, "r": 20, "t": 50 if title else 20, "b": 50},
        legend=_LEGEND,
    )
    return fig


def classwise_grid(
    components: Sequence[Any],
    *,
    cols: int | None = None,
    values: Sequence[float] | None = None,
    height_per_row: int = 260,
    show_band: bool = False,
) -> go.Figure:
    """Small multiples: one reliability diagram per class (classwise lens).

    Parameters
    ----------
    components : sequence
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
        titles.append(f"{c.name} (n = {n:,}){extra}")
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=titles,
        shared_xaxes=True,
        shared_yaxes=True,
        horizontal_spacing=0.04,
        vertical_spacing=0.5 / max(rows * 3, 1) + 0.04,
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
        traces += [_diagonal(showlegend=first), observed]
        rows_of += [r + 1, r + 1]
        cols_of += [col + 1, col + 1]
    if show_band:
        for i, c in enumerate(components):
            low, high, level = _band_of(c)
            if low is None:
                continue
            r, col = divmod(i, cols)
            traces.append(_band_trace(c.bins, low, high, level=level, showlegend=i == 0))
            rows_of.append(r + 1)
            cols_of.append(col + 1)
    # one batched call: adding traces one by one re-validates the figure each time
    fig.add_traces(traces, rows=rows_of, cols=cols_of)
    fig.update_xaxes(range=AXIS_RANGE, constrain="domain")
    fig.update_yaxes(range=AXIS_RANGE)
    fig.update_layout(
        template="plotly_white",
        height=max(300, height_per_row * rows + 60),
        margin={"l": 50, "r": 20, "t": 50, "b": 40},
        legend={"orientation": "h", "x": 0.0, "y": -0.06, "yanchor": "top"},
    )
    fig.update_annotations(font_size=12)
    return fig


def confidence_histogram(
    probs: ArrayLike,
    labels: ArrayLike | None = None,
    *,
    n_bins: int = 20,
    height: int = 300,
) -> go.Figure:
    """Histogram of top-label confidence, split into correct and incorrect predictions.

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like, optional
        Class indices; when given the bars are stacked by correctness.
    n_bins : int, default=20
        Equal-width bins on [0, 1] (last bin closed).
    height : int, default=300
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Bars at the bin centres: ``[correct, incorrect]`` with labels, else ``[all]``;
        the bar heights sum to ``n``.
    """
    p, y = check_probs_labels(
        probs, np.zeros(np.shape(probs)[0], dtype=np.int64) if labels is None else labels
    )
    conf, pred = top_label(p)
    # the same equal-width convention as the analysis: [k/B, (k+1)/B), last bin closed
    stats = bin_stats(conf, (pred == y).astype(np.float64), binning="equal-width", n_bins=n_bins)
    edges = stats.edges
    centres = 0.5 * (edges[:-1] + edges[1:])
    width = np.diff(edges)
    correct = np.rint(stats.label_sums).astype(np.int64)
    if labels is None:
        parts = [(stats.counts, "all", COUNT_COLOR)]
    else:
        parts = [(correct, "correct", "#2f855a"), (stats.counts - correct, "incorrect", "#c05621")]
    fig = go.Figure(
        [
            go.Bar(x=centres, y=c, width=width, name=name, marker_color=color)
            for c, name, color in parts
        ]
    )
    fig.update_traces(
        hovertemplate="confidence ≈ %{x:.3f}: n = %{y:,}<extra>%{fullData.name}</extra>"
    )
    fig.update_layout(
        template="plotly_white",
        barmode="stack",
        bargap=0,
        height=height,
        xaxis={"range": [0, 1], "title": "top-label confidence"},
        yaxis={"title": "count", "rangemode": "tozero"},
        margin={"l": 60, "r": 20, "t": 20, "b": 50},
        legend={"x": 0.01, "y": 0.99, "bgcolor": "rgba(255,255,255,0.8)"},
    )
    return fig


def class_balance(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    class_names: Sequence[str] | None = None,
    height: int = 300,
) -> go.Figure:
    """Observed class shares next to the mean predicted probability of each class.

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like
        Class indices ``0..K-1``.
    class_names : sequence of str, optional
        Names of the classes; default ``"0"``, ``"1"``, ...
    height : int, default=300
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces ``[observed share, mean predicted probability]`` with one bar per class;
        a calibrated model has the two bars of each class close (calibration in the large).
    """
    p, y = check_probs_labels(probs, labels)
    k = p.shape[1]
    names = list(class_names) if class_names is not None else [str(i) for i in range(k)]
    counts = np.bincount(y, minlength=k)
    share = counts / y.shape[0]
    fig = go.Figure(
        [
            go.Bar(
                x=names,
                y=share,
                name="observed share",
                marker_color="#4a5568",
                customdata=counts,
                hovertemplate="%{x}: %{y:.3f} (n = %{customdata:,})<extra></extra>",
            ),
            go.Bar(
                x=names,
                y=p.mean(axis=0),
                name="mean predicted probability",
                marker_color=OBSERVED_COLOR,
                hovertemplate="%{x}: %{y:.3f}<extra></extra>",
            ),
        ]
    )
    fig.update_layout(
        template="plotly_white",
        barmode="group",
        height=height,
        xaxis={"title": "class", "type": "category"},
        yaxis={"title": "share of rows", "rangemode": "tozero"},
        margin={"l": 60, "r": 20, "t": 20, "b": 50},
        legend={"orientation": "h", "x": 0.0, "y": 1.02, "yanchor": "bottom"},
    )
    return fig
