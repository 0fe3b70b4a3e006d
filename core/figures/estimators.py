"""Figures of the Estimators page: pure functions of result tables returning Plotly figures.

- :func:`error_versus_bins_figure`: calibration error against the number of bins, one line per
  estimator and binning, with the sweep's ``b*`` marked;
- :func:`sweep_trace_figure`: each candidate ``b`` of the monotone sweeps, monotone or not,
  with ``b*`` highlighted;
- :func:`estimator_intervals_figure`: every computed estimate with its bootstrap interval.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.estimators import ESTIMATORS
from core.figures.style import (
    BLUE,
    GREEN,
    GREY,
    LEGEND_ABOVE,
    ORANGE,
    PURPLE,
    RED,
    TEMPLATE,
    interval_trace,
    literal,
    margin,
)

#: Line colour per estimator; dash per binning.
ESTIMATOR_COLORS = {"plugin": BLUE, "label-binned": ORANGE, "debiased": GREEN}
BINNING_DASH = {"equal-width": "solid", "equal-mass": "dot"}
_MONOTONE, _BROKEN, _STAR = GREEN, RED, "#111111"


def error_versus_bins_figure(
    curve: pd.DataFrame,
    sweep_choices: pd.DataFrame | None = None,
    *,
    norm_label: str = "ℓ1",
    height: int = 440,
) -> go.Figure:
    """Calibration error against the number of bins.

    Parameters
    ----------
    curve : pandas.DataFrame
        :func:`core.analyses.estimator_comparison.error_versus_bins` (columns ``estimator, label,
        binning, n_bins, value``).
    sweep_choices : pandas.DataFrame, optional
        :attr:`core.analyses.estimator_comparison.EstimatorComparison.sweep_choices`; with one
        component per binning, a star marks ``(b*, ECE_sweep)``; with several (classwise),
        a dotted horizontal line marks ECE_sweep.
    norm_label : str, default="ℓ1"
        The norm, for the axis title.
    height : int, default=440
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One line per (estimator, binning).
    """
    fig = go.Figure()
    # label-binned first and wide, so a plug-in line lying on it stays visible
    order = sorted(
        curve.groupby(["estimator", "binning"], sort=False),
        key=lambda item: item[0][0] != "label-binned",
    )
    for (name, binning), group in order:
        group = group.sort_values("n_bins")
        wide = name == "label-binned"
        fig.add_trace(
            go.Scatter(
                x=group.n_bins.to_numpy(),
                y=group.value.to_numpy(),
                mode="lines+markers",
                marker={"size": 4},
                line={
                    "color": ESTIMATOR_COLORS.get(name, GREY),
                    "dash": BINNING_DASH.get(binning, "dash"),
                    "width": 5 if wide else 2,
                },
                opacity=0.45 if wide else 1.0,
                name=literal(f"{group.label.iloc[0]} · {binning}"),
                hovertemplate="B = %{x}<br>%{y:.5f}<extra>%{fullData.name}</extra>",
            )
        )
    if sweep_choices is not None and len(sweep_choices):
        for binning, group in sweep_choices.groupby("binning", sort=False):
            total = float(group.total.iloc[0])
            if len(group) == 1:
                b_star = int(group.b_star.iloc[0])
                fig.add_trace(
                    go.Scatter(
                        x=[b_star],
                        y=[total],
                        mode="markers",
                        marker={
                            "symbol": "star",
                            "size": 16,
                            "color": _STAR if binning == "equal-width" else PURPLE,
                            "line": {"color": "white", "width": 1},
                        },
                        name=f"ECE_sweep · {binning} (b* = {b_star})",
                        hovertemplate=f"b* = {b_star}<br>ECE_sweep = {total:.5f}<extra></extra>",
                    )
                )
            else:
                fig.add_hline(
                    y=total,
                    line={"dash": "dashdot", "color": PURPLE, "width": 1},
                    annotation_text=f"ECE_sweep · {binning} = {total:.4f}",
                    annotation_position=(
                        "top left" if binning == "equal-width" else "bottom right"
                    ),
                )
    fig.update_layout(
        template=TEMPLATE,
        height=height,
        margin=margin(70),
        legend=LEGEND_ABOVE,
        xaxis_title="number of bins B",
        yaxis_title=f"{literal(norm_label)} calibration error",
        hovermode="closest",
    )
    return fig


def sweep_trace_figure(traces: pd.DataFrame, *, height_per_panel: int = 170) -> go.Figure:
    """Draw the monotone sweeps' traces: every candidate ``b``, monotone or not, and ``b*``.

    Parameters
    ----------
    traces : pandas.DataFrame
        :attr:`core.analyses.estimator_comparison.EstimatorComparison.sweep_traces` (columns
        ``binning, component, b, monotone, chosen``).
    height_per_panel : int, default=170
        Pixels per binning panel (plus a little per component row).

    Returns
    -------
    plotly.graph_objects.Figure
        One panel per binning; x is ``b``, y the component, green = bin accuracies
        non-decreasing, red = the first decrease (which stops the sweep), a star at ``b*``.
    """
    binnings = list(dict.fromkeys(traces.binning)) or ["equal-width"]
    n_comp = max(1, traces.component.nunique()) if len(traces) else 1
    fig = make_subplots(
        rows=len(binnings),
        cols=1,
        shared_xaxes=False,
        subplot_titles=[f"sweep with {b} bins" for b in binnings],
        vertical_spacing=0.18 if len(binnings) > 1 else 0.1,
    )
    shown: set[str] = set()
    for row, binning in enumerate(binnings, start=1):
        part = traces[traces.binning == binning]
        for flag, color, name in (
            (True, _MONOTONE, "monotone (bin accuracies non-decreasing)"),
            (False, _BROKEN, "not monotone (stops the sweep)"),
        ):
            sel = part[part.monotone == flag]
            fig.add_trace(
                go.Scatter(
                    x=sel.b.to_numpy(),
                    y=[literal(c) for c in sel.component],
                    mode="markers",
                    marker={"symbol": "square", "size": 9, "color": color},
                    name=name,
                    legendgroup=name,
                    showlegend=name not in shown,
                    hovertemplate="b = %{x}<br>%{y}<extra>" + name + "</extra>",
                ),
                row=row,
                col=1,
            )
            shown.add(name)
        chosen = part[part.chosen]
        fig.add_trace(
            go.Scatter(
                x=chosen.b.to_numpy(),
                y=[literal(c) for c in chosen.component],
                # with one row per class the labels would collide; hover tells b* there
                mode="markers+text" if n_comp == 1 else "markers",
                marker={"symbol": "star", "size": 17 if n_comp == 1 else 13, "color": _STAR},
                text=[f"b* = {b}" for b in chosen.b],
                textposition="top center",
                name="b* (chosen)",
                legendgroup="b*",
                showlegend="b*" not in shown,
                hovertemplate="b* = %{x}<br>%{y}<extra></extra>",
            ),
            row=row,
            col=1,
        )
        shown.add("b*")
        if len(part) and int(part.b.max()) <= 40:
            fig.update_xaxes(dtick=1, row=row, col=1)  # whole numbers of bins only
        fig.update_xaxes(tickformat="d", row=row, col=1)
    fig.update_xaxes(title_text="candidate number of bins b", row=len(binnings), col=1)
    fig.update_layout(
        template=TEMPLATE,
        height=len(binnings) * (height_per_panel + 18 * n_comp) + 70,
        margin=margin(85, left=80, bottom=40),
        legend={**LEGEND_ABOVE, "y": 1.0, "yref": "container", "yanchor": "top"},
    )
    return fig


def estimator_intervals_figure(table: pd.DataFrame, *, lp_scale: bool = True) -> go.Figure:
    """Estimates on one scale with their bootstrap intervals (a dot-and-whisker chart).

    Parameters
    ----------
    table : pandas.DataFrame
        :attr:`core.analyses.estimator_comparison.EstimatorComparison.table`.
    lp_scale : bool, default=True
        Draw the ℓp calibration errors (binned and smooth: ``EstimatorInfo.lp_scale``), or
        the other quantities (kernel distances, the whole-vector ECE).

    Returns
    -------
    plotly.graph_objects.Figure
        One row per computed estimate; whiskers where an interval exists. Estimates of
        different quantities (``EstimatorInfo.quantity``: SKCE, squared, and MMCE) are on
        panels of their own, each with its x axis and title.
    """
    rows = table[(table.lp_scale == lp_scale) & table.value.notna()].iloc[::-1]
    # one panel, with its own x axis, per quantity the registry names (SKCE is a squared
    # kernel distance, MMCE a kernel distance: one linear axis would flatten one of them)
    quantity = [
        ESTIMATORS.get(e).quantity if e in ESTIMATORS.names() else "" for e in rows.estimator
    ]
    kinds = list(dict.fromkeys(reversed(quantity)))
    fig = make_subplots(
        rows=len(kinds),
        cols=1,
        row_heights=[max(1, quantity.count(k)) for k in kinds],
        vertical_spacing=0.12 if len(kinds) > 1 else 0.0,
    )
    for i, kind in enumerate(kinds):
        part = rows[[q == kind for q in quantity]]
        names = [literal(f"{r.label} · {r.lens}") for r in part.itertuples()]
        has = part.low.notna() & part.high.notna()
        fig.add_trace(
            interval_trace(
                part.value.to_numpy(),
                names,
                part.low.where(has, part.value).to_numpy(),
                part.high.where(has, part.value).to_numpy(),
                name="estimate",
                marker={"size": 10, "color": BLUE},
                whisker={"color": BLUE},
                hovertemplate="%{y}<br>%{x:.5g}<extra></extra>",
            ),
            row=i + 1,
            col=1,
        )
        what = kind.split(" (")[0] if kind else ""
        title = "estimate (bootstrap interval)" + (f": {what}" if len(kinds) > 1 and what else "")
        fig.update_xaxes(title_text=literal(title), row=i + 1, col=1)
        ends = np.concatenate([part.value, part.low[has], part.high[has]]).astype(float)
        lo, hi = float(ends.min()), float(ends.max())
        if hi - lo <= 1e-9 * max(abs(hi), abs(lo)):
            # one point and no whisker: Plotly's default span (about ±1) would put a value
            # of 0.03 at "0"; a span around the value shows it where it is
            pad = 0.5 * abs(hi) or 1.0
            fig.update_xaxes(range=[lo - pad, hi + pad], row=i + 1, col=1)
    fig.update_layout(
        template=TEMPLATE,
        height=80 + 34 * max(1, len(rows)) + 60 * (len(kinds) - 1),
        margin=margin(20, left=10, bottom=40),
        showlegend=False,
    )
    fig.update_yaxes(automargin=True)
    return fig
