"""Figures of the paper gallery (:mod:`core.analyses.gallery`): one builder per entry.

Each builder takes a :class:`core.analyses.gallery.GalleryResult` and draws what its table holds;
:func:`gallery_figure` picks the builder named by the entry's registry record.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.analyses.gallery import GALLERY, GR_FIG2_CAPTION
from core.estimators import ESTIMATORS
from core.figures.style import PALETTE, SLATE, TEMPLATE, literal, margin

if TYPE_CHECKING:
    from core.analyses.gallery import GalleryResult


def gallery_figure(result: GalleryResult, *, height: int = 440) -> go.Figure:
    """Draw a gallery result with its entry's builder (``GALLERY.get(name).builder``)."""
    builder = getattr(sys.modules[__name__], GALLERY.get(result.name).builder)
    return builder(result, height=height)


def epsilon_bins_figure(result: GalleryResult, *, height: int = 440) -> go.Figure:
    """ε of Theorem 3 against B, one line per n, the caption's choices marked."""
    table = result.table
    fig = go.Figure()
    for i, (n, part) in enumerate(table.groupby("n", sort=True)):
        color = PALETTE[i % len(PALETTE)]
        fig.add_trace(
            go.Scatter(
                x=part["n_bins"],
                y=part["epsilon"],
                mode="lines",
                name=f"n = {n:,}",
                line={"color": color},
                hovertemplate="B = %{x}<br>ε = %{y:.4f}<extra></extra>",
            )
        )
        if int(n) in GR_FIG2_CAPTION:
            b, eps = GR_FIG2_CAPTION[int(n)]
            fig.add_trace(
                go.Scatter(
                    x=[b],
                    y=[eps],
                    mode="markers",
                    showlegend=False,
                    marker={"color": color, "size": 10, "symbol": "diamond"},
                    hovertemplate=f"paper's choice: B = {b}, ε = {eps}<extra></extra>",
                )
            )
    fig.update_layout(
        template=TEMPLATE,
        height=height,
        margin=margin(),
        xaxis_title="number of bins B",
        yaxis_title="ε (Theorem 3, α = 0.1)",
    )
    return fig


def sweep_bins_figure(result: GalleryResult, *, height: int = 440) -> go.Figure:
    """Mean b* (with ±1 sd) and mean ECE_sweep against n (log axis), one line per world."""
    table = result.table
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("b* chosen by the sweep", "ECE_sweep (ℓ2, %)")
    )
    for i, (world, part) in enumerate(table.groupby("world", sort=False)):
        color = PALETTE[i % len(PALETTE)]
        stats = part.groupby("n").agg(
            b=("b_star", "mean"),
            b_sd=("b_star", "std"),
            e=("ece_sweep", "mean"),
            e_sd=("ece_sweep", "std"),
        )
        for col, (y, sd) in enumerate((("b", "b_sd"), ("e", "e_sd")), start=1):
            fig.add_trace(
                go.Scatter(
                    x=stats.index,
                    y=stats[y],
                    error_y={"type": "data", "array": stats[sd]},
                    mode="lines+markers",
                    name=literal(world),
                    legendgroup=literal(world),
                    showlegend=col == 1,
                    line={"color": color},
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(type="log", title_text="n (log scale)")
    fig.update_yaxes(title_text="b*", row=1, col=1)
    fig.update_yaxes(title_text="ECE_sweep (%)", row=1, col=2)
    fig.update_layout(template=TEMPLATE, height=height, margin=margin(top=50))
    return fig


def estimate_distributions_figure(result: GalleryResult, *, height: int = 640) -> go.Figure:
    """Histograms of the estimates: one row per estimator, one column per model.

    A solid line marks the mean of our estimates and a dashed line the paper's truth
    (``result.extra["truth"]``: estimator → model → value).
    """
    table = result.table
    truths = result.extra.get("truth", {})
    estimators = list(dict.fromkeys(table["estimator"]))
    models = list(dict.fromkeys(table["model"]))
    fig = make_subplots(
        rows=len(estimators),
        cols=len(models),
        subplot_titles=[
            f"{ESTIMATORS.get(e).label} · {m[-2:].upper()}" for e in estimators for m in models
        ],
        vertical_spacing=0.12,
        horizontal_spacing=0.06,
    )
    for r, est in enumerate(estimators, start=1):
        for c, model in enumerate(models, start=1):
            values = table[(table.estimator == est) & (table.model == model)]["value"]
            fig.add_trace(
                go.Histogram(x=values, nbinsx=25, marker_color=PALETTE[0], showlegend=False),
                row=r,
                col=c,
            )
            fig.add_vline(x=float(np.mean(values)), line={"color": SLATE}, row=r, col=c)
            truth = truths.get(est, {})
            if model in truth:
                fig.add_vline(
                    x=truth[model], line={"color": "#d62728", "dash": "dash"}, row=r, col=c
                )
            fig.update_xaxes(title_text="estimate", row=r, col=c)
            fig.update_yaxes(title_text="datasets" if c == 1 else None, row=r, col=c)
    fig.update_layout(
        template=TEMPLATE,
        height=max(height, 220 * len(estimators)),
        margin=margin(top=50),
        bargap=0.05,
    )
    return fig


def validity_overlay_figure(result: GalleryResult, *, height: int = 440) -> go.Figure:
    """Marginal and conditional validity of every method on one plot each, with the theory."""
    table = result.table
    results = result.extra.get("results", {})
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("Marginal validity", "Conditional validity")
    )
    for i, method in enumerate(dict.fromkeys(table["method"])):
        color = PALETTE[i % len(PALETTE)]
        for col, kind in enumerate(("marginal", "conditional"), start=1):
            part = table[(table.method == method) & (table.kind == kind)]
            fig.add_trace(
                go.Scatter(
                    x=part["eps"],
                    y=part["mean"],
                    mode="lines",
                    name=literal(method),
                    legendgroup=literal(method),
                    showlegend=col == 1,
                    line={"color": color},
                ),
                row=1,
                col=col,
            )
    umd = results.get("histogram-umd")
    if umd is not None:
        for col, theory in enumerate((umd.theory_marginal, umd.theory_conditional), start=1):
            if theory is not None:
                fig.add_trace(
                    go.Scatter(
                        x=umd.eps,
                        y=theory,
                        mode="lines",
                        name="Theorem 4 (UMD)",
                        legendgroup="theory",
                        showlegend=col == 1,
                        line={"color": SLATE, "dash": "dash"},
                    ),
                    row=1,
                    col=col,
                )
    fig.update_xaxes(title_text="ε", range=[0, 0.3])
    fig.update_yaxes(title_text="V(ε)", range=[0, 1.02])
    fig.update_layout(template=TEMPLATE, height=height, margin=margin(top=50))
    return fig


def binned_error_bins_figure(result: GalleryResult, *, height: int = 440) -> go.Figure:
    """Binned ℓ2 CE against B (log₂ axis): estimates with 90 % intervals, population, truth."""
    table = result.table
    fig = go.Figure()
    styles = {
        "plugin": (PALETTE[0], "solid", "plug-in (bias-corrected, 90 % interval)"),
        "debiased": (PALETTE[1], "solid", "debiased estimate"),
        "population binned": (SLATE, "dot", "population binned error"),
        "true": ("#d62728", "dash", "true error of the Platt model"),
    }
    for est, (color, dash, name) in styles.items():
        part = table[table.estimator == est]
        if part.empty:
            continue
        has_ci = bool(part["low"].notna().any())
        fig.add_trace(
            go.Scatter(
                x=part["n_bins"],
                y=part["mid"],
                mode="lines+markers" if has_ci else "lines",
                name=name,
                line={"color": color, "dash": dash},
                error_y=(
                    {
                        "type": "data",
                        "symmetric": False,
                        "array": part["high"] - part["mid"],
                        "arrayminus": part["mid"] - part["low"],
                    }
                    if has_ci
                    else None
                ),
                hovertemplate="B = %{x}<br>CE = %{y:.4f}<extra></extra>",
            )
        )
        if est == "plugin":
            fig.add_trace(
                go.Scatter(
                    x=part["n_bins"],
                    y=part["value"],
                    mode="markers",
                    name="plug-in (raw)",
                    marker={"color": color, "symbol": "circle-open"},
                    hovertemplate="B = %{x}<br>raw plug-in = %{y:.4f}<extra></extra>",
                )
            )
    fig.update_xaxes(type="log", title_text="number of bins B (log scale)", dtick=np.log10(2))
    fig.update_yaxes(title_text="ℓ2 calibration error", rangemode="tozero")
    fig.update_layout(template=TEMPLATE, height=height, margin=margin())
    return fig


def scaling_binning_figure(result: GalleryResult, *, height: int = 440) -> go.Figure:
    """Draw the true CE² against B (±1.645 standard errors) and the MSE–CE² trade-off."""
    table = result.table
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(
            "True squared calibration error",
            "MSE against CE² (one point per B; larger B, larger marker)",
        ),
    )
    for i, (method, part) in enumerate(table.groupby("method", sort=False)):
        color = PALETTE[i % len(PALETTE)]
        stats = part.groupby("n_bins").agg(
            ce2=("ce2", "mean"), sd=("ce2", "std"), n=("ce2", "size"), mse=("mse", "mean")
        )
        fig.add_trace(
            go.Scatter(
                x=stats.index,
                y=stats["ce2"],
                error_y={"type": "data", "array": 1.645 * stats["sd"] / np.sqrt(stats["n"])},
                mode="lines+markers",
                name=literal(method),
                legendgroup=literal(method),
                line={"color": color},
                hovertemplate="B = %{x}<br>CE² = %{y:.3g}<extra></extra>",
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=stats["ce2"],
                y=stats["mse"],
                mode="lines+markers",
                customdata=np.asarray(stats.index),
                marker={"size": 4 + 8 * np.log2(np.asarray(stats.index)) / 7},
                name=literal(method),
                legendgroup=literal(method),
                showlegend=False,
                line={"color": color},
                hovertemplate="B = %{customdata}<br>CE² = %{x:.3g}<br>MSE = %{y:.5f}"
                "<extra></extra>",
            ),
            row=1,
            col=2,
        )
    fig.update_xaxes(title_text="number of bins B", row=1, col=1)
    fig.update_yaxes(title_text="CE²", rangemode="tozero", row=1, col=1)
    fig.update_xaxes(title_text="CE²", row=1, col=2)
    fig.update_yaxes(title_text="MSE", row=1, col=2)
    fig.update_layout(template=TEMPLATE, height=height, margin=margin(top=50))
    return fig


def metacal_figure(result: GalleryResult, *, height: int = 440) -> go.Figure:
    """Draw the mean ECE per method and the per-run miscoverage and coverage accuracy."""
    table = result.table
    alpha = result.settings.get("alpha")
    beta = result.settings.get("beta")
    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=(
            "ECE on accepted rows (mean ± 1.645 se)",
            "Miscoverage of MetaMis, per run",
            "Coverage accuracy of MetaAcc, per run",
        ),
        horizontal_spacing=0.08,
    )
    stats = table.groupby("method", sort=False)["ece"].agg(["mean", "std", "size"])
    fig.add_trace(
        go.Bar(
            x=[literal(m) for m in stats.index],
            y=stats["mean"],
            error_y={"type": "data", "array": 1.645 * stats["std"] / np.sqrt(stats["size"])},
            marker_color=[PALETTE[i % len(PALETTE)] for i in range(len(stats))],
            showlegend=False,
            hovertemplate="%{x}<br>ECE = %{y:.4f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    for col, (method, column, target, name) in enumerate(
        (
            ("meta-cal miscoverage", "miscoverage", alpha, "α"),
            ("meta-cal coverage-accuracy", "coverage_accuracy", beta, "β"),
        ),
        start=2,
    ):
        part = table[table.method == method]
        fig.add_trace(
            go.Scatter(
                x=part["run"],
                y=part[column],
                mode="markers",
                marker={"color": PALETTE[col % len(PALETTE)]},
                showlegend=False,
                hovertemplate="run %{x}<br>%{y:.4f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        if target is not None:
            fig.add_hline(
                y=float(target),
                line={"color": "#d62728", "dash": "dash"},
                annotation_text=f"{name} = {target}",
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="run", row=1, col=col)
    fig.update_xaxes(title_text="method", row=1, col=1)
    fig.update_yaxes(title_text="ECE (top-label, 15 bins)", row=1, col=1)
    fig.update_yaxes(title_text="miscoverage", row=1, col=2)
    fig.update_yaxes(title_text="coverage accuracy", row=1, col=3)
    fig.update_layout(template=TEMPLATE, height=height, margin=margin(top=50))
    return fig
