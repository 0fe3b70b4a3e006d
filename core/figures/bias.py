"""Figures of the Bias page: pure functions of bias tables, estimate histograms and fits.

Nothing here simulates or estimates; every builder draws what :mod:`core.bias` and
:mod:`core.worlds` computed. Calibration errors are shown in percent.

Trace order (tests rely on it):

- :func:`bias_curve_figure`: one trace per estimator, in table order;
- :func:`bias_heatmap_figure`: ``[heatmap]``;
- :func:`estimate_distribution_figure`: per estimator ``[histogram bars, point mass at 0]``
  (the point mass only when some estimates are exactly 0);
- :func:`ece_vs_tce_figure`: ``[y = x]`` then per family ``[band, mean]``;
- :func:`power_figure`: one trace per (estimator, target);
- :func:`beta_fit_figure`: ``[histogram, fitted bin average]``;
- :func:`fitted_curve_figure`: the reliability diagram's traces, then one per curve.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from core.figures.reliability import reliability_figure
from core.figures.style import (
    BLUE,
    BROWN,
    COUNT_COLOR,
    CYAN,
    GREEN,
    GREY,
    OBSERVED_MARK,
    OLIVE,
    ORANGE,
    PINK,
    PURPLE,
    RED,
    TEMPLATE,
    centres,
    filled_band,
    literal,
    log_n_axis,
    margin,
)

if TYPE_CHECKING:
    from core.bias import EstimateHistogram
    from core.stats.binning import BinStats
    from core.worlds.fitting import BetaFitHistogram

#: Colour per estimator family; binning is the line style (EW dashed, EM solid).
FAMILY_COLORS = {"plugin": BLUE, "label-binned": PURPLE, "debiased": GREEN, "sweep": RED}
OTHER_COLORS = (BROWN, PINK, GREY, OLIVE, CYAN, ORANGE)
DASH = {"equal-width": "dash", "equal-mass": "solid"}
METRIC_TITLES = {
    "bias": "bias (percentage points)",
    "sd": "standard deviation (points)",
    "rmse": "RMSE (points)",
    "mean": "mean estimate (%)",
}
_LAYOUT = {"template": TEMPLATE, "margin": margin(40)}


def _style(name: str, binning: str, k: int) -> dict[str, Any]:
    color = FAMILY_COLORS.get(name, OTHER_COLORS[k % len(OTHER_COLORS)])
    return {"color": color, "dash": DASH.get(binning, "dot"), "width": 2}


def _title(title: str | None) -> str | None:
    """Return a figure title drawn as it is (see :func:`core.figures.style.literal`)."""
    return None if title is None else literal(title)


def _series_color(k: int, first: str = RED) -> str:
    """Return the colour of the ``k``-th series: ``first``, then :data:`OTHER_COLORS` in turn."""
    return OTHER_COLORS[k % len(OTHER_COLORS)] if k else first


def bias_curve_figure(
    table: pd.DataFrame,
    *,
    metric: str = "bias",
    user_n: int | None = None,
    title: str | None = None,
    height: int = 460,
) -> go.Figure:
    """Bias (± 1.96·SE), SD, RMSE or mean of each estimator against n.

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`core.bias.bias_vs_n` (fractions).
    metric : {"bias", "sd", "rmse", "mean"}
        Column to draw; bias carries error bars of ``1.96·se``.
    user_n : int, optional
        Marked with a vertical line.
    title, height
        Figure title and height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One trace per estimator (x = n, y = percent).
    """
    if metric not in METRIC_TITLES:
        raise ValueError(f"metric must be one of {list(METRIC_TITLES)}; got {metric!r}")
    fig = go.Figure()
    for k, (label, part) in enumerate(table.groupby("estimator", sort=False)):
        part = part.sort_values("n")
        y = 100 * part[metric].to_numpy()
        err = None
        if metric == "bias":
            err = {"type": "data", "array": 196 * part["se"].to_numpy(), "visible": True}
        name, binning = part["name"].iloc[0], part["binning"].iloc[0]
        text = literal(part["label"].iloc[0] if "label" in part else label)
        fig.add_trace(
            go.Scatter(
                x=part["n"],
                y=y,
                error_y=err,
                mode="lines+markers",
                name=text,
                line=_style(name, binning, k),
                hovertemplate=f"{text}<br>n = %{{x:,}}<br>{metric} = %{{y:.3f}}<extra></extra>",
            )
        )
    if metric == "bias":
        fig.add_hline(y=0, line={"color": "black", "dash": "dot", "width": 1})
    log_n_axis(fig, table["n"].unique(), user_n)
    fig.update_yaxes(title_text=METRIC_TITLES[metric])
    fig.update_layout(title=_title(title), height=height, legend={"orientation": "v"}, **_LAYOUT)
    return fig


def bias_heatmap_figure(
    table: pd.DataFrame, *, value: str = "bias", title: str | None = None, height: int = 420
) -> go.Figure:
    """Heat map of |bias| (or SD, RMSE) over (n, number of bins), annotated with signed values.

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`core.bias.bias_heatmap` (has a ``row`` column).
    value : {"bias", "sd", "rmse"}
        What to colour by (absolute value, Reds).
    title, height
        Figure title and height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        ``[heatmap]``; cells with the smallest |value| per column are outlined.
    """
    rows = list(dict.fromkeys(table["row"]))
    cols = sorted(table["n"].unique())
    grid = table.pivot(index="row", columns="n", values=value).reindex(index=rows, columns=cols)
    z = 100 * grid.to_numpy()
    fig = go.Figure(
        go.Heatmap(
            z=np.abs(z),
            x=[f"{n:,}" for n in cols],
            y=[literal(r if r == "sweep" else f"{r} bins") for r in rows],
            text=np.vectorize(lambda v: f"{v:.2f}")(z),
            texttemplate="%{text}",
            colorscale="Reds",
            zmin=0,
            colorbar={"title": f"|{value}| (points)"},
            hovertemplate="n = %{x}<br>%{y}<br>" + value + " = %{text}<extra></extra>",
        )
    )
    fixed = [i for i, r in enumerate(rows) if r != "sweep"]
    if fixed:
        best = np.nanargmin(np.abs(z[fixed]), axis=0)
        for j, i in enumerate(best):
            r = fixed[i]
            fig.add_shape(
                type="rect",
                x0=j - 0.5,
                x1=j + 0.5,
                y0=r - 0.5,
                y1=r + 0.5,
                line={"color": "black", "width": 2},
            )
    fig.update_xaxes(title_text="sample size n")
    fig.update_yaxes(title_text="number of bins", autorange="reversed")
    fig.update_layout(title=_title(title), height=height, **_LAYOUT)
    return fig


def estimate_distribution_figure(
    histogram: EstimateHistogram,
    *,
    reference: float | None = None,
    reference_label: str = "true CE",
    observed: float | None = None,
    title: str | None = None,
    height: int = 420,
) -> go.Figure:
    """Draw the sampling distribution of estimators at one n, exact zeros as a point mass.

    Parameters
    ----------
    histogram : core.bias.EstimateHistogram
        Shares of simulated datasets per bin (:func:`core.bias.estimate_histogram`).
    reference : float, optional
        True CE (or full-data estimate), drawn as a vertical line.
    reference_label : str
        Legend text of the reference.
    observed : float, optional
        An observed value to compare with.
    title, height
        Figure title and height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Per estimator a histogram (bars, as shares of all datasets) of the non-zero
        estimates and, when some are exactly 0, a spike at 0 whose height is the share of
        zeros; bars and spike sum to 1.
    """
    edges = 100 * histogram.edges
    width = edges[1] - edges[0]
    fig = go.Figure()
    for k, raw in enumerate(histogram.labels):
        label = literal(raw)
        color = list(FAMILY_COLORS.values())[k % 4] if k < 4 else OTHER_COLORS[k % 6]
        fig.add_trace(
            go.Bar(
                x=centres(edges),
                y=histogram.shares[k],
                width=width,
                name=f"{label} (mean {100 * histogram.means[k]:.2f} %)",
                marker_color=color,
                opacity=0.55,
            )
        )
        share = float(histogram.zero_shares[k])
        if share > 0:
            fig.add_trace(
                go.Scatter(
                    x=[0.0, 0.0],
                    y=[0.0, share],
                    mode="lines+markers",
                    marker={"size": [0, 10], "color": color, "symbol": "diamond"},
                    line={"color": color, "width": 4},
                    name=f"{label}: exactly 0 in {share:.0%} of datasets",
                )
            )
    if reference is not None and np.isfinite(reference):
        fig.add_vline(
            x=100 * reference,
            line={"color": "black", "width": 2},
            annotation_text=f"{literal(reference_label)} {100 * reference:.2f} %",
        )
    if observed is not None:
        fig.add_vline(
            x=100 * observed,
            line={"color": OBSERVED_MARK, "dash": "dash", "width": 2},
            annotation_text=f"observed {100 * observed:.2f} %",
            annotation_position="bottom right",
        )
    # start a little left of 0 so a point mass at exactly 0 stands clear of the axis
    fig.update_xaxes(title_text="estimate (%)", range=[-0.03 * edges[-1], edges[-1]])
    fig.update_yaxes(title_text="share of simulated datasets", rangemode="tozero")
    fig.update_layout(barmode="overlay", title=_title(title), height=height, **_LAYOUT)
    return fig


def ece_vs_tce_figure(
    tables: Mapping[str, pd.DataFrame],
    *,
    observed: float | None = None,
    consistent: tuple[float, float] | None = None,
    title: str | None = None,
    height: int = 480,
) -> go.Figure:
    """Mean estimate and 5–95 % band against the true CE for families of worlds.

    Parameters
    ----------
    tables : mapping
        Family label → output of :func:`core.bias.ece_vs_tce`.
    observed : float, optional
        An observed estimate, drawn as a horizontal line.
    consistent : (float, float), optional
        True-CE range consistent with ``observed``, shaded.
    title, height
        Figure title and height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        ``[y = x]`` then per family ``[5–95 % band, mean]``.
    """
    top = max(100 * float(t[["tce", "q95"]].to_numpy().max()) for t in tables.values())
    fig = go.Figure(
        go.Scatter(
            x=[0, top],
            y=[0, top],
            mode="lines",
            line={"color": "black", "dash": "dash", "width": 1},
            name="estimate = true CE",
        )
    )
    for k, (raw, t) in enumerate(tables.items()):
        label = literal(raw)
        color = _series_color(k, FAMILY_COLORS["plugin"])
        x = 100 * t["tce"].to_numpy()
        fig.add_trace(
            filled_band(
                x,
                100 * t["q05"].to_numpy(),
                100 * t["q95"].to_numpy(),
                fillcolor=color,
                opacity=0.2,
                name=f"{label}: 5–95 %",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=100 * t["mean"].to_numpy(),
                mode="lines+markers",
                line={"color": color, "width": 2},
                name=f"{label}: mean",
            )
        )
    if observed is not None:
        fig.add_hline(
            y=100 * observed,
            line={"color": OBSERVED_MARK, "dash": "dot"},
            annotation_text=f"observed {100 * observed:.2f} %",
        )
    if consistent is not None and np.all(np.isfinite(consistent)):
        fig.add_vrect(
            x0=100 * consistent[0], x1=100 * consistent[1], fillcolor=OBSERVED_MARK, opacity=0.1
        )
    fig.update_xaxes(title_text="true calibration error (%)", rangemode="tozero")
    fig.update_yaxes(title_text="estimated calibration error (%)", rangemode="tozero")
    fig.update_layout(title=_title(title), height=height, **_LAYOUT)
    return fig


def power_figure(
    tables: Mapping[str, pd.DataFrame],
    *,
    user_n: int | None = None,
    title: str | None = None,
    height: int = 420,
) -> go.Figure:
    """Draw the detection rate against n per estimator and true CE.

    Parameters
    ----------
    tables : mapping
        Estimator label → output of :func:`core.bias.detection_power`.
    user_n : int, optional
        Marked with a vertical line.
    title, height
        Figure title and height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One trace per (estimator, target): x = n, y = detection rate.
    """
    fig = go.Figure()
    ns: list[int] = []
    for k, (label, t) in enumerate(tables.items()):
        for target, part in t.groupby("target"):
            ns.extend(part["n"].tolist())
            fig.add_trace(
                go.Scatter(
                    x=part["n"],
                    y=part["power"],
                    mode="lines+markers",
                    line={"color": _series_color(k), "width": 2},
                    marker={"symbol": ["circle", "square", "diamond", "x"][len(fig.data) % 4]},
                    name=f"{literal(label)}, true CE {100 * float(target):g} %",
                )
            )
    fig.add_hline(y=0.8, line={"color": "#555", "dash": "dot"}, annotation_text="80 %")
    log_n_axis(fig, ns, user_n)
    fig.update_yaxes(title_text="detection rate (1 − miss rate)", range=[0, 1.02])
    fig.update_layout(title=_title(title), height=height, **_LAYOUT)
    return fig


def beta_fit_figure(
    histogram: BetaFitHistogram, *, title: str | None = None, height: int = 380
) -> go.Figure:
    """Score histogram against the fitted Beta distribution.

    The fitted curve is the Beta probability of each histogram bin divided by its width
    (the bin average of the density), which stays finite where the density diverges.

    Parameters
    ----------
    histogram : core.worlds.fitting.BetaFitHistogram
        Observed and fitted densities per bin (:func:`core.worlds.beta_fit_histogram`).
    title, height
        Figure title and height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        ``[histogram, fitted bin average]`` on a density scale.
    """
    edges = histogram.edges
    centers = centres(edges)
    fit = histogram.fit
    fig = go.Figure(
        [
            go.Bar(
                x=centers,
                y=histogram.density,
                width=np.diff(edges),
                marker_color=COUNT_COLOR,
                name="observed scores",
            ),
            go.Scatter(
                x=centers,
                y=histogram.fitted,
                mode="lines+markers",
                line={"color": RED, "width": 2},
                name=f"Beta({fit.alpha:.4g}, {fit.beta:.4g}), bin average",
            ),
        ]
    )
    fig.update_xaxes(title_text="score", range=[0, 1])
    fig.update_yaxes(title_text="density (log scale)", type="log")
    fig.update_layout(title=_title(title), height=height, bargap=0, **_LAYOUT)
    return fig


def fitted_curve_figure(
    bins: BinStats,
    curves: Mapping[str, Any],
    *,
    low: ArrayLike | None = None,
    high: ArrayLike | None = None,
    height: int = 520,
) -> go.Figure:
    """Fitted calibration curves over the reliability diagram.

    Parameters
    ----------
    bins : core.stats.binning.BinStats
        Bins of the observed data.
    curves : mapping
        Label → callable curve ``mu(c)``.
    low, high : array_like, optional
        Per-bin intervals.
    height : int
        Pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        :func:`core.figures.reliability_figure`'s traces, then one line per curve.
    """
    fig = reliability_figure(bins, low=low, high=high, height=height)
    grid = np.linspace(0.0, 1.0, 401)
    for k, (label, curve) in enumerate(curves.items()):
        fig.add_trace(
            go.Scatter(
                x=grid,
                y=np.asarray(curve(grid), dtype=np.float64),
                mode="lines",
                line={"color": _series_color(k), "width": 2},
                name=literal(label),
            ),
            row=1,
            col=1,
        )
    return fig
