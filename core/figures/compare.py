"""Figures of the Compare page: pure functions of a :class:`~core.analyses.model_comparison.ModelComparison`.

- :func:`reliability_overlay_figure`: one reliability curve per model on the shared bins,
  the diagonal, and each model's bin counts beneath;
- :func:`metric_forest_figure`: every metric ± its bootstrap interval, one panel per metric;
- :func:`paired_difference_figure`: each model minus the reference, with the (paired)
  interval and the zero line;
- :func:`rank_heatmap_figure`: models × metrics, coloured by rank.

Trace order is part of the contract (tests rely on it): the overlay is
``[diagonal, observed per model…, counts per model…]``; the forest and difference figures
hold one trace per metric panel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

if TYPE_CHECKING:
    from core.analyses.model_comparison import ModelComparison

from core.figures.reliability import diagram_with_counts, lay_out_diagram
from core.figures.style import (
    DIAGONAL_COLOR,
    GOOD,
    PALETTE,
    SLATE,
    TEMPLATE,
    diagonal,
    interval_trace,
    literal,
    margin,
)
from core.stats.lenses import lens_axis

#: One colour per model, in model order (cycled beyond ten models).
MODEL_COLORS = PALETTE
_WORSE, _NEUTRAL = "#c53030", "#718096"
_WHISKER = {"thickness": 1.5, "width": 4, "color": SLATE}


def model_color(index: int) -> str:
    """Return the colour of the ``index``-th model."""
    return MODEL_COLORS[index % len(MODEL_COLORS)]


def overlay_traces(
    raw: str, bins: Any, edges: np.ndarray, index: int, count: int, *, small: bool = False
) -> tuple[go.Scatter, go.Bar]:
    """One overlaid curve and its count bars, for the ``index``-th of ``count`` sets of rows.

    The curve is the set's observed frequency against its mean score in its non-empty
    bins; the bars sit side by side within each shared bin (set ``i`` takes the ``i``-th
    slice of the bin's width). ``small`` draws a set too small to judge dotted.
    """
    widths = np.diff(edges)
    name = literal(raw)
    counts = np.asarray(bins.counts)
    ok = counts > 0
    color = model_color(index)
    curve = go.Scatter(
        x=np.asarray(bins.mean_score)[ok],
        y=np.asarray(bins.mean_label)[ok],
        mode="lines+markers",
        name=name + (" (too small)" if small else ""),
        legendgroup=name,
        line={"color": color, "width": 1.5, "dash": "dot" if small else "solid"},
        marker={"size": 7, "color": color},
        customdata=np.column_stack([counts[ok], edges[:-1][ok], edges[1:][ok], np.flatnonzero(ok)]),
        hovertemplate=(
            f"<b>{name}</b><br>bin %{{customdata[3]:.0f}} "
            "[%{customdata[1]:.3f}, %{customdata[2]:.3f}]"
            "<br>mean score %{x:.4f}<br>observed %{y:.4f}"
            "<br>n = %{customdata[0]:,.0f}<extra></extra>"
        ),
    )
    slot = widths / count
    bar = go.Bar(
        x=edges[:-1] + slot * (index + 0.5),
        y=counts,
        width=slot,
        name=name,
        legendgroup=name,
        showlegend=False,
        marker={"color": color, "line": {"width": 0}},
        customdata=np.column_stack([edges[:-1], edges[1:]]),
        hovertemplate=(
            f"<b>{name}</b> [%{{customdata[0]:.3f}}, %{{customdata[1]:.3f}}]: "
            "n = %{y:,}<extra></extra>"
        ),
    )
    return curve, bar


def reliability_overlay_figure(
    comparison: ModelComparison, *, component: int = 0, height: int = 620
) -> go.Figure:
    """Overlaid reliability diagrams of every model on the shared bins.

    Parameters
    ----------
    comparison : core.analyses.model_comparison.ModelComparison
        The comparison.
    component : int, default=0
        Lens component to draw (a class of the classwise lens).
    height : int, default=620
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces ``[diagonal, observed of each model…, counts of each model…]``; observed
        traces have ``x = mean score`` and ``y = observed frequency`` of the model's
        non-empty bins; count bars of the models sit side by side within each shared bin.
    """
    edges = np.asarray(comparison.edges[component], dtype=np.float64)
    n_models = len(comparison.models)
    fig = diagram_with_counts((0.76, 0.24))
    traces: list[go.BaseTraceType] = [diagonal()]
    rows = [1]
    bars = []
    for i, raw in enumerate(comparison.models):
        curve, bar = overlay_traces(raw, comparison.bins[raw][component], edges, i, n_models)
        traces.append(curve)
        rows.append(1)
        bars.append(bar)
    fig.add_traces(traces + bars, rows=rows + [2] * len(bars), cols=[1] * (len(rows) + len(bars)))
    name = literal(comparison.component_names[component])
    x_title = lens_axis(comparison.config.lens, name)
    lay_out_diagram(
        fig, x_title=f"{x_title} (mean per shared bin)", height=height, barmode="overlay"
    )
    return fig


def _metric_rows(frame: pd.DataFrame, metric: str, models: Sequence[str]) -> pd.DataFrame:
    """Rows of one metric in a comparison table, indexed by model in the given order."""
    return frame[frame.metric == metric].set_index("model").reindex(models)


def _panels(comparison: ModelComparison, n_rows_per_panel: int, height_per_row: int) -> go.Figure:
    specs = comparison.metrics
    fig = make_subplots(
        rows=len(specs),
        cols=1,
        subplot_titles=[literal(s.label) for s in specs],
        vertical_spacing=min(0.12, 0.5 / max(len(specs), 1)),
    )
    fig.update_layout(
        template=TEMPLATE,
        height=max(260, len(specs) * (60 + height_per_row * n_rows_per_panel)),
        margin=margin(40, left=140, bottom=40),
        showlegend=False,
        hovermode="closest",
    )
    fig.update_annotations(font_size=12)
    return fig


def metric_forest_figure(comparison: ModelComparison, *, height_per_model: int = 26) -> go.Figure:
    """Every metric of every model with its bootstrap interval (a forest plot per metric).

    Parameters
    ----------
    comparison : core.analyses.model_comparison.ModelComparison
        The comparison.
    height_per_model : int, default=26
        Pixels per model in each panel.

    Returns
    -------
    plotly.graph_objects.Figure
        One trace per metric (panel), ``x = value`` and ``y = model``, with asymmetric error
        bars from the bootstrap interval; the best model of each metric is a star.
    """
    fig = _panels(comparison, len(comparison.models), height_per_model)
    colors = [model_color(i) for i in range(len(comparison.models))]
    percent = f"{comparison.confidence_level:.0%}"
    models = [literal(m) for m in comparison.models]
    for r, spec in enumerate(comparison.metrics, start=1):
        part = _metric_rows(comparison.table, spec.key, comparison.models)
        value, low, high = (part[c].to_numpy(dtype=np.float64) for c in ("value", "low", "high"))
        label = literal(spec.label)
        fig.add_trace(
            interval_trace(
                value,
                models,
                low,
                high,
                name=label,
                whisker=_WHISKER,
                marker={
                    "size": 11,
                    "color": colors,
                    "symbol": np.where(part.best.to_numpy(dtype=bool), "star", "circle"),
                },
                customdata=np.column_stack([low, high, part["rank"].to_numpy()]),
                hovertemplate=(
                    f"%{{y}}<br>{label} = %{{x:.5f}}<br>{percent} interval "
                    "[%{customdata[0]:.5f}, %{customdata[1]:.5f}]"
                    "<br>rank %{customdata[2]:.0f}<extra></extra>"
                ),
            ),
            row=r,
            col=1,
        )
        fig.update_yaxes(autorange="reversed", row=r, col=1)
    last = len(comparison.metrics)
    fig.update_xaxes(title_text="value (lower is better; accuracy: higher)", row=last, col=1)
    return fig


def paired_difference_figure(
    comparison: ModelComparison, *, height_per_model: int = 26
) -> go.Figure:
    """Each model minus the reference model, per metric, with the difference's interval.

    Parameters
    ----------
    comparison, height_per_model
        As in :func:`metric_forest_figure`.

    Returns
    -------
    plotly.graph_objects.Figure
        One trace per metric (panel), ``x = difference`` (model − reference) and
        ``y = model``, with the paired (or unpaired) bootstrap interval; green where the
        model is significantly better than the reference, red where significantly worse,
        grey where the interval contains 0 (a dotted line marks 0).
    """
    others = [m for m in comparison.models if m != comparison.reference]
    fig = _panels(comparison, len(others), height_per_model)
    kind = "paired" if comparison.paired else "unpaired"
    reference = literal(comparison.reference)
    for r, spec in enumerate(comparison.metrics, start=1):
        part = _metric_rows(comparison.differences, spec.key, others)
        label = literal(spec.label)
        diff, low, high = (
            part[c].to_numpy(dtype=np.float64) for c in ("difference", "low", "high")
        )
        sig = part.significant.to_numpy(dtype=bool)
        better = part.better.to_numpy(dtype=bool)
        colors = np.where(better, GOOD, np.where(sig, _WORSE, _NEUTRAL))
        fig.add_trace(
            interval_trace(
                diff,
                [literal(m) for m in others],
                low,
                high,
                name=label,
                whisker=_WHISKER,
                marker={"size": 10, "color": colors},
                customdata=np.column_stack([low, high]),
                hovertemplate=(
                    f"%{{y}} − {reference}<br>{label}: %{{x:+.5f}}"
                    f"<br>{comparison.confidence_level:.0%} {kind} interval "
                    "[%{customdata[0]:+.5f}, %{customdata[1]:+.5f}]<extra></extra>"
                ),
            ),
            row=r,
            col=1,
        )
        fig.add_vline(
            x=0.0, line={"dash": "dot", "color": DIAGONAL_COLOR, "width": 1}, row=r, col=1
        )
        fig.update_yaxes(autorange="reversed", row=r, col=1)
    fig.update_xaxes(title_text=f"model − {reference}", row=len(comparison.metrics), col=1)
    return fig


def rank_heatmap_figure(comparison: ModelComparison, *, height_per_model: int = 34) -> go.Figure:
    """Models × metrics coloured by rank (1 = best), with the values on hover.

    Parameters
    ----------
    comparison : core.analyses.model_comparison.ModelComparison
        The comparison.
    height_per_model : int, default=34
        Pixels per model row.

    Returns
    -------
    plotly.graph_objects.Figure
        One heatmap trace, ``z`` the ranks (rows = models, columns = metric keys).
    """
    keys = [s.key for s in comparison.metrics]
    ranks = comparison.ranks.reindex(index=list(comparison.models), columns=keys)
    z = ranks.to_numpy(dtype=np.float64)
    values = np.column_stack(
        [
            _metric_rows(comparison.table, k, comparison.models).value.to_numpy(dtype=np.float64)
            for k in keys
        ]
    )
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[literal(k) for k in keys],
            y=[literal(m) for m in comparison.models],
            text=np.where(np.isfinite(z), z, 0).astype(int).astype(str),
            texttemplate="%{text}",
            customdata=values,
            colorscale="Viridis",
            reversescale=True,
            zmin=1,
            zmax=max(len(comparison.models), 2),
            colorbar={"title": {"text": "rank"}},
            hovertemplate="%{y} · %{x}<br>rank %{z:.0f}<br>value %{customdata:.5f}<extra></extra>",
        )
    )
    fig.update_layout(
        template=TEMPLATE,
        height=max(240, 110 + height_per_model * len(comparison.models)),
        margin=margin(20, left=140, bottom=80),
        xaxis={"title": "metric", "type": "category", "side": "bottom"},
        yaxis={"title": "model", "autorange": "reversed", "type": "category"},
    )
    return fig
