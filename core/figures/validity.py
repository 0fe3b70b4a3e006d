"""Figures of the Validity page: pure functions of result objects returning Plotly figures.

- :func:`validity_figure`: mean marginal and conditional validity over runs with a
  ± sd-of-mean band, the theory curves dashed, ε on the x axis;
- :func:`bin_validity_figure`: each bin's test mean against its output value with Wilson
  intervals, the diagonal and the conditional guarantee's ±ε band;
- :func:`epsilon_versus_n_figure`: the calculator's ε of each guarantee against n.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

from core.figures.style import (
    BLUE,
    PURPLE,
    RED,
    TEMPLATE,
    UNIT_RANGE,
    asymmetric_error,
    diagonal,
    filled_band,
    margin,
)

if TYPE_CHECKING:
    import pandas as pd

    from core.analyses.validity import ValidityResult
    from core.stats.guarantees import GuaranteeReport

MARGINAL_COLOR = BLUE
CONDITIONAL_COLOR = RED
_BANDS = {MARGINAL_COLOR: "rgba(31,119,180,0.22)", CONDITIONAL_COLOR: "rgba(214,39,40,0.20)"}
GUARANTEE_STYLE = {
    "conditional": ("Conditional (Theorem 3)", CONDITIONAL_COLOR, "solid"),
    "marginal": ("Marginal (Theorem 4, ε₁)", MARGINAL_COLOR, "solid"),
    "zadrozny-elkan": ("Zadrozny–Elkan (Corollary 1)", PURPLE, "dot"),
}
_LEGEND = {
    "x": 0.99,
    "y": 0.02,
    "xanchor": "right",
    "yanchor": "bottom",
    "bgcolor": "rgba(255,255,255,0.85)",
}


def _x_limit(result: ValidityResult) -> float:
    """Right end of the ε axis: a little past where every curve has (nearly) reached 1."""
    curves = [result.marginal_mean, result.conditional_mean]
    curves += [c for c in (result.theory_marginal, result.theory_conditional) if c is not None]
    ends = []
    for c in curves:
        hit = np.flatnonzero(c >= 0.99)
        ends.append(result.eps[hit[0]] if hit.size else result.eps[-1])
    return float(min(result.eps[-1], max(0.05, 1.25 * max(ends) + 0.01)))


def _band(fig: go.Figure, x: np.ndarray, mean: np.ndarray, sem: np.ndarray, color: str) -> None:
    if not np.isfinite(sem).any():
        return
    s = np.nan_to_num(sem)
    # step shape: repeat each point so the band follows the right-continuous steps
    xs = np.repeat(x, 2)[1:]
    lo = np.repeat(np.clip(mean - s, 0, 1), 2)[:-1]
    hi = np.repeat(np.clip(mean + s, 0, 1), 2)[:-1]
    fig.add_trace(filled_band(xs, lo, hi, fillcolor=_BANDS[color], showlegend=False))


def validity_figure(
    result: ValidityResult, *, show_conditional: bool = True, height: int = 460
) -> go.Figure:
    """Draw the validity plot: mean ± sd of the mean of ``V̂(ε)`` and ``V̂_c(ε)``, theory dashed.

    Parameters
    ----------
    result : core.analyses.validity.ValidityResult
        The curves.
    show_conditional : bool, default True
        Draw the conditional curves too.
    height : int, default 460
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        ε on the x axis, validity on the y axis.
    """
    fig = go.Figure()
    x = result.eps
    series = [("Marginal V̂(ε)", result.marginal_mean, result.marginal_sem, MARGINAL_COLOR)]
    if show_conditional:
        series.append(
            (
                "Conditional V̂c(ε)",
                result.conditional_mean,
                result.conditional_sem,
                CONDITIONAL_COLOR,
            )
        )
    for name, mean, sem, color in series:
        _band(fig, x, mean, sem, color)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=mean,
                mode="lines",
                line={"color": color, "width": 2, "shape": "hv"},
                name=f"{name}, mean of {result.n_resamples} runs",
                customdata=np.nan_to_num(sem)[:, None],
                hovertemplate="ε = %{x:.3f}<br>V = %{y:.3f} ± %{customdata[0]:.3f}"
                "<extra>" + name + "</extra>",
            )
        )
    theory = [("Theory, marginal", result.theory_marginal, MARGINAL_COLOR)]
    if show_conditional:
        theory.append(("Theory, conditional", result.theory_conditional, CONDITIONAL_COLOR))
    for name, curve, color in theory:
        if curve is None:
            continue
        fig.add_trace(
            go.Scatter(
                x=x,
                y=curve,
                mode="lines",
                line={"color": color, "width": 1.5, "dash": "dash"},
                name=name,
                hovertemplate="ε = %{x:.3f}<br>bound = %{y:.3f}<extra>" + name + "</extra>",
            )
        )
    fig.update_xaxes(title_text="ε", range=[0, _x_limit(result)], zeroline=False)
    fig.update_yaxes(title_text="validity", range=UNIT_RANGE, zeroline=False)
    fig.update_layout(
        template=TEMPLATE,
        height=height,
        legend=_LEGEND,
        margin=margin(),
        hovermode="x unified",
    )
    return fig


def bin_validity_figure(result: ValidityResult, *, height: int = 440) -> go.Figure:
    """Draw the representative run's bins: ``ȳ_b`` against ``h_b`` with Wilson intervals.

    The shaded band is ``h ± ε`` with Theorem 3's conditional ε (when the bound applies):
    with probability ``1 − α`` every bin's true mean lies within it.

    Parameters
    ----------
    result : core.analyses.validity.ValidityResult
        The result (its ``bins`` table is drawn).
    height : int, default 440
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Output value on the x axis, test mean on the y axis.
    """
    t = result.bins
    fig = go.Figure()
    eps = result.epsilon_conditional
    if np.isfinite(eps):
        grid = np.linspace(0.0, 1.0, 101)  # dense, so the clipping at 0 and 1 is drawn
        fig.add_trace(
            filled_band(
                grid,
                np.maximum(grid - eps, 0.0),
                np.minimum(grid + eps, 1.0),
                fillcolor="rgba(214,39,40,0.10)",
                name=f"± ε = {eps:.3f} (Theorem 3, α = {result.alpha:g})",
            )
        )
    fig.add_trace(diagonal(color="black"))
    size = 6 + 14 * np.sqrt(t["count"] / max(float(t["count"].max()), 1.0))
    fig.add_trace(
        go.Scatter(
            x=t["value"],
            y=t["mean_label"],
            mode="markers",
            marker={"color": MARGINAL_COLOR, "size": size, "line": {"width": 0}},
            error_y=asymmetric_error(t["mean_label"], t["low"], t["high"], thickness=1, width=3),
            customdata=np.column_stack([t["count"], t["low"], t["high"], t["gap"]]),
            hovertemplate="h = %{x:.4f}<br>test mean = %{y:.4f} "
            "[%{customdata[1]:.3f}, %{customdata[2]:.3f}]<br>n = %{customdata[0]}"
            "<br>ȳ − h = %{customdata[3]:+.4f}<extra></extra>",
            name=f"bins of run 1 ({result.confidence_level:.0%} Wilson)",
        )
    )
    fig.update_xaxes(title_text="recalibrated output h_b", range=UNIT_RANGE, constrain="domain")
    fig.update_yaxes(title_text="test mean ȳ_b", range=UNIT_RANGE)
    fig.update_layout(
        template=TEMPLATE,
        height=height,
        legend={**_LEGEND, "x": 0.01, "xanchor": "left", "y": 0.99, "yanchor": "top"},
        margin=margin(),
    )
    return fig


def epsilon_versus_n_figure(
    report: GuaranteeReport, curve: pd.DataFrame | None = None, *, height: int = 400
) -> go.Figure:
    """ε of each guarantee against the calibration size ``n`` (log axis), at ``B`` and ``α``.

    Parameters
    ----------
    report : core.stats.guarantees.GuaranteeReport
        The calculator's answer (its ``n`` is marked, its target ε drawn).
    curve : pandas.DataFrame, optional
        :meth:`core.stats.guarantees.GuaranteeReport.epsilon_versus_n` (computed when omitted).
    height : int, default 400
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One line per guarantee.
    """
    if curve is None:
        curve = report.epsilon_versus_n()
    fig = go.Figure()
    for kind, group in curve.groupby("guarantee", sort=False):
        label, color, dash = GUARANTEE_STYLE[str(kind)]
        ok = np.isfinite(group["epsilon"].to_numpy())
        fig.add_trace(
            go.Scatter(
                x=group["n"][ok],
                y=group["epsilon"][ok],
                mode="lines",
                line={"color": color, "dash": dash, "width": 2},
                name=label,
                hovertemplate="n = %{x:,}<br>ε = %{y:.4f}<extra>" + label + "</extra>",
            )
        )
    fig.add_hline(
        y=report.epsilon_target,
        line={"color": "#555555", "dash": "dash", "width": 1},
        annotation_text=f"target ε = {report.epsilon_target:g}",
        annotation_position="top right",
    )
    if report.valid:
        fig.add_vline(
            x=report.n,
            line={"color": "#555555", "dash": "dot", "width": 1},
            annotation_text=f"n = {report.n:,}",
            annotation_position="bottom left",
        )
    fig.update_xaxes(title_text="calibration rows n", type="log")
    fig.update_yaxes(title_text="ε", rangemode="tozero", range=[0, 0.5])
    fig.update_layout(
        template=TEMPLATE,
        height=height,
        legend={**_LEGEND, "y": 0.98, "yanchor": "top"},
        margin=margin(),
        title={
            "text": f"B = {report.n_bins}, α = {report.alpha:g}",
            "x": 0.01,
            "font": {"size": 13},
        },
    )
    return fig
