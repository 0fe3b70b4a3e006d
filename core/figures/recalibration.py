"""Figures of the Recalibration page: pure functions of result objects returning Plotly figures.

- :func:`before_after_reliability`: one reliability panel per method on shared axes;
- :func:`tradeoff_figure`: MSE (Brier score) against calibration error, with intervals;
- :func:`score_separation_figure`: Meta-Cal's ranking scores of correct and wrong rows;
- :func:`selective_threshold_figure`: miscoverage, coverage accuracy and coverage against
  the threshold;
- :func:`coverage_accuracy_figure`: accuracy among accepted rows against coverage, with
  the operating point and the oracle that rejects exactly the wrong rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.figures.style import (
    BLUE,
    BROWN,
    CYAN,
    GREEN,
    GREY,
    LEGEND_BELOW,
    OLIVE,
    ORANGE,
    PINK,
    PURPLE,
    RED,
    SMALL_AXIS_TITLE,
    TEMPLATE,
    asymmetric_error,
    diagonal,
    literal,
    margin,
)

if TYPE_CHECKING:
    from core.recalibration.evaluation import SelectiveView
    from core.stats.binning import BinStats

#: Colour per method in the trade-off plot, the uncalibrated predictions first.
METHOD_COLORS = (GREY, BLUE, RED, GREEN, PURPLE, BROWN, PINK, OLIVE, CYAN, ORANGE)


def before_after_reliability(
    bins: Mapping[str, BinStats],
    labels: Mapping[str, str],
    *,
    lens_label: str = "top-label confidence",
    cols: int = 3,
    height_per_row: int = 300,
) -> go.Figure:
    """Reliability panels of several methods on shared axes.

    Parameters
    ----------
    bins : mapping
        Method key to :class:`core.stats.binning.BinStats` (``counts``, ``mean_score``,
        ``mean_label``), in display order (the uncalibrated predictions first).
    labels : mapping
        Method key to its display label.
    lens_label : str
        What the x-axis score is.
    cols : int, default 3
        Panels per row.
    height_per_row : int, default 300
        Pixels per row of panels.

    Returns
    -------
    plotly.graph_objects.Figure
        One subplot per method; marker area is proportional to the bin count.
    """
    keys = list(bins)
    ncol = max(1, min(cols, len(keys)))
    nrow = math.ceil(len(keys) / ncol)
    fig = make_subplots(
        rows=nrow,
        cols=ncol,
        shared_xaxes="all",
        shared_yaxes="all",
        subplot_titles=[literal(labels.get(k, k)) for k in keys],
        horizontal_spacing=0.04,
        vertical_spacing=0.12 / max(nrow, 1) + 0.07,
    )
    biggest = max(
        (float(np.max(b.counts)) for b in bins.values() if np.size(b.counts)), default=1.0
    )
    for i, key in enumerate(keys):
        r, c = divmod(i, ncol)
        b = bins[key]
        counts = np.asarray(b.counts)
        keep = counts > 0
        x = np.asarray(b.mean_score)[keep]
        y = np.asarray(b.mean_label)[keep]
        n = counts[keep]
        fig.add_trace(diagonal(showlegend=False, color=GREY), row=r + 1, col=c + 1)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines+markers",
                line={"color": GREY if i == 0 else BLUE, "width": 1},
                marker={
                    "size": 4 + 16 * np.sqrt(n / biggest),
                    "color": GREY if i == 0 else BLUE,
                    "line": {"width": 0.5, "color": "white"},
                },
                customdata=n,
                name=literal(labels.get(key, key)),
                showlegend=False,
                hovertemplate="score %{x:.3f}<br>observed %{y:.3f}<br>n = %{customdata:,}<extra></extra>",
            ),
            row=r + 1,
            col=c + 1,
        )
    fig.update_xaxes(range=[0, 1], showgrid=True)
    fig.update_yaxes(range=[0, 1], showgrid=True)
    # every panel of the grid says what its axes are, not only the outer ones
    fig.update_xaxes(title_text=literal(lens_label), **SMALL_AXIS_TITLE)
    fig.update_yaxes(title_text="observed frequency", **SMALL_AXIS_TITLE)
    fig.update_layout(
        template=TEMPLATE,
        height=max(320, height_per_row * nrow + 60),
        margin=margin(40),
    )
    return fig


def tradeoff_figure(
    metrics: pd.DataFrame,
    *,
    x_metric: str,
    y_metric: str = "brier",
    x_label: str | None = None,
    y_label: str = "Brier score (MSE)",
) -> go.Figure:
    """MSE against calibration error, one point per method, with interval bars.

    Parameters
    ----------
    metrics : pandas.DataFrame
        Long metrics table (``method_label, metric, value, low, high``).
    x_metric, y_metric : str
        Metric keys for the axes.
    x_label, y_label : str
        Axis titles.

    Returns
    -------
    plotly.graph_objects.Figure
        Scatter with error bars; lower-left is better on both counts.
    """
    xs = metrics[metrics.metric == x_metric].set_index("method_label")
    ys = metrics[metrics.metric == y_metric].set_index("method_label")
    names = [m for m in xs.index if m in ys.index]
    xs, ys = xs.loc[names], ys.loc[names]
    fig = go.Figure()
    for i, raw in enumerate(names):
        xr, yr = xs.loc[raw], ys.loc[raw]
        name = literal(raw)
        fig.add_trace(
            go.Scatter(
                x=[xr.value],
                y=[yr.value],
                mode="markers",
                name=name,
                marker={"size": 11, "color": METHOD_COLORS[i % len(METHOD_COLORS)]},
                error_x=asymmetric_error([xr.value], [xr.low], [xr.high]),
                error_y=asymmetric_error([yr.value], [yr.low], [yr.high]),
                hovertemplate=f"{name}<br>x %{{x:.4f}}<br>y %{{y:.4f}}<extra></extra>",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        xaxis_title=literal(x_label or x_metric),
        yaxis_title=literal(y_label),
        height=460,
        margin=margin(),
    )
    return fig


def score_separation_figure(view: SelectiveView, *, nbins: int = 60) -> go.Figure:
    """Histograms of Meta-Cal's ranking score for correct and wrong rows, threshold marked.

    Parameters
    ----------
    view : core.recalibration.evaluation.SelectiveView
        ``scores``, ``correct``, ``threshold``.
    nbins : int, default 60
        Histogram bins.

    Returns
    -------
    plotly.graph_objects.Figure
        Overlaid histograms; the rejected region (score > r*) is shaded.
    """
    h = np.asarray(view.scores)
    ok = np.asarray(view.correct, dtype=bool)
    lo, hi = float(h.min()), float(h.max())
    size = (hi - lo) / nbins if hi > lo else 1.0
    xbins = {"start": lo, "end": hi + size, "size": size}
    fig = go.Figure()
    fig.add_trace(
        go.Histogram(x=h[ok], name="correct", marker_color=BLUE, opacity=0.6, xbins=xbins)
    )
    fig.add_trace(go.Histogram(x=h[~ok], name="wrong", marker_color=RED, opacity=0.6, xbins=xbins))
    if np.isfinite(view.threshold):
        fig.add_vrect(x0=view.threshold, x1=hi + size, fillcolor=GREY, opacity=0.15, line_width=0)
        fig.add_vline(
            x=view.threshold, line={"color": "black", "dash": "dash"},
            annotation_text=f"r* = {view.threshold:.3g} (reject to the right)",
        )  # fmt: skip
    fig.update_layout(
        template=TEMPLATE,
        barmode="overlay",
        xaxis_title="ranking score of the uncalibrated prediction",
        yaxis={"title": "rows (log scale)", "type": "log"},
        height=380,
        margin=margin(),
        legend={"orientation": "h", "y": 1.08},
    )
    return fig


def selective_threshold_figure(
    view: SelectiveView, *, alpha: float | None = None, beta: float | None = None
) -> go.Figure:
    """Miscoverage, coverage accuracy and coverage against the threshold ``r``.

    Parameters
    ----------
    view : core.recalibration.evaluation.SelectiveView
        ``curves`` and ``threshold``.
    alpha, beta : float, optional
        Targets drawn as horizontal lines.

    Returns
    -------
    plotly.graph_objects.Figure
        Step curves (accept iff score <= r) with the fitted ``r*`` marked.
    """
    cv = view.curves
    fig = go.Figure()
    for y, name, color in (
        (cv.miscoverage, "miscoverage (correct rows rejected)", RED),
        (cv.coverage_accuracy, "coverage accuracy (accuracy of accepted)", BLUE),
        (cv.coverage, "coverage (share accepted)", GREEN),
    ):
        fig.add_trace(
            go.Scatter(
                x=cv.thresholds,
                y=y,
                mode="lines",
                line_shape="hv",
                name=name,
                line={"color": color},
            )
        )
    if alpha is not None:
        fig.add_hline(y=alpha, line={"color": RED, "dash": "dot"}, annotation_text=f"α = {alpha:g}")
    if beta is not None:
        fig.add_hline(y=beta, line={"color": BLUE, "dash": "dot"}, annotation_text=f"β = {beta:g}")
    if np.isfinite(view.threshold):
        fig.add_vline(
            x=view.threshold, line={"color": "black", "dash": "dash"}, annotation_text="r*"
        )
    fig.update_layout(
        template=TEMPLATE,
        xaxis_title="threshold r (accept rows with score ≤ r)",
        yaxis={"title": "rate", "range": [0, 1.02]},
        height=420,
        margin=margin(),
        legend=LEGEND_BELOW,
    )
    return fig


def coverage_accuracy_figure(
    views: Mapping[str, SelectiveView], labels: Mapping[str, str] | None = None
) -> go.Figure:
    """Accuracy among accepted rows against coverage, with operating points and the oracle.

    Parameters
    ----------
    views : mapping
        Method key to :class:`~core.recalibration.evaluation.SelectiveView` (same rows).
    labels : mapping, optional
        Method key to display label.

    Returns
    -------
    plotly.graph_objects.Figure
        The curve of the ranking score (shared by the views), the oracle curve and one
        marker per fitted operating point.
    """
    labels = labels or {}
    first = next(iter(views.values()))
    cv = first.curves
    pi0 = float(np.mean(first.correct))
    w = np.linspace(1e-3, 1, 400)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=cv.coverage,
            y=cv.coverage_accuracy,
            mode="lines",
            line_shape="hv",
            name="ranking score",
            line={"color": BLUE},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=w,
            y=np.minimum(1.0, pi0 / w),
            mode="lines",
            name="oracle (rejects exactly the wrong rows)",
            line={"color": GREY, "dash": "dash"},
        )
    )
    for key, v in views.items():
        m = v.metrics
        fig.add_trace(
            go.Scatter(
                x=[m.coverage], y=[m.coverage_accuracy], mode="markers", marker={"size": 13, "symbol": "star", "color": RED},
                name=f"{literal(labels.get(key, key))}: coverage {m.coverage:.3f}, accuracy {m.coverage_accuracy:.3f}",
            )
        )  # fmt: skip
    fig.update_layout(
        template=TEMPLATE,
        xaxis={"title": "coverage (share of rows accepted)", "range": [0, 1.01]},
        yaxis={"title": "accuracy among accepted rows"},
        height=420,
        margin=margin(),
        legend=LEGEND_BELOW,
    )
    return fig
