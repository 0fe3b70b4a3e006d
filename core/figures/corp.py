"""The CORP reliability diagram (Dimitriadis, Gneiting & Jordan 2021, Fig. 1 style).

Trace order is part of the contract: ``[diagonal]``, then per component ``[confidence
band, consistency band]`` when computed, then ``[CORP curve]`` per component, then the
forecast histogram per component in the lower panel. The decomposition is written in an
annotation in the upper left.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go

from core.figures.reliability import diagram_with_counts, lay_out_diagram
from core.figures.style import BLUE, COUNT_COLOR, PALETTE, diagonal, filled_band, literal

if TYPE_CHECKING:
    from core.analyses.corp_diagram import CorpDiagram

#: Shade of the consistency band (around the diagonal) and of the confidence band.
CONSISTENCY_FILL = "rgba(120, 120, 120, 0.22)"
CONFIDENCE_FILL = "rgba(31, 119, 180, 0.20)"


def corp_figure(result: CorpDiagram, *, title: str | None = None, height: int = 560) -> go.Figure:
    """Draw a :class:`core.stats.corp.CorpDiagram`.

    Parameters
    ----------
    result : CorpDiagram
        What :func:`core.stats.corp.corp_diagram` returned.
    title : str, optional
        Figure title.
    height : int, default=560
        Height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        The step curve of the isotonic fit (each block of equal estimate drawn from its
        smallest to its largest forecast, consecutive blocks joined), the consistency band
        around the diagonal and the confidence band around the curve, the decomposition
        ``S = MCB − DSC + UNC`` in an annotation and the forecasts' histogram beneath.
    """
    fig = diagram_with_counts((0.78, 0.22))
    fig.add_trace(diagonal(), row=1, col=1)
    single = len(result.components) == 1
    level = f"{result.confidence_level:.0%}"
    for i, comp in enumerate(result.components):
        bands = (
            (comp.confidence, CONFIDENCE_FILL, "confidence"),
            (comp.consistency, CONSISTENCY_FILL, "consistency"),
        )
        for b, fill, what in bands:
            if b is None:
                continue
            fig.add_trace(
                filled_band(
                    b.x, b.lower, b.upper, fillcolor=fill,
                    name=f"{what} band ({level})", showlegend=i == 0,
                ),
                row=1,
                col=1,
            )  # fmt: skip
    for i, comp in enumerate(result.components):
        xs, ys = comp.curve()
        color = BLUE if single else PALETTE[i % len(PALETTE)]
        name = "CORP (isotonic fit)" if single else literal(comp.name)
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines+markers" if xs.size < 60 else "lines",
                line={"color": color, "width": 2},
                marker={"size": 4},
                name=name,
                hovertemplate="forecast %{x:.4f}: CORP estimate %{y:.4f}<extra></extra>",
            ),
            row=1,
            col=1,
        )
    for i, comp in enumerate(result.components):
        counts, edges = comp.histogram
        fig.add_trace(
            go.Bar(
                x=0.5 * (edges[:-1] + edges[1:]),
                y=counts,
                width=np.diff(edges),
                marker={
                    "color": COUNT_COLOR if single else PALETTE[i % len(PALETTE)],
                    "line": {"width": 0.5, "color": "white"},
                },
                opacity=1.0 if single else 0.5,
                name=f"count {literal(comp.name)}",
                showlegend=False,
                hovertemplate="n = %{y:,}<extra></extra>",
            ),
            row=2,
            col=1,
        )
    d = result.decomposition
    fig.add_annotation(
        **_annotation_position(),
        text=(f"BS {d.score:.4f}<br>MCB {d.mcb:.4f}<br>DSC {d.dsc:.4f}<br>UNC {d.unc:.4f}"),
        showarrow=False,
        align="left",
        font={"family": "monospace", "size": 12},
        bgcolor="rgba(255, 255, 255, 0.8)",
    )
    lay_out_diagram(
        fig,
        x_title="forecast (predicted probability)",
        height=height,
        top=50 if title else 20,
        title=None if title is None else literal(title),
        barmode="overlay",
    )
    fig.update_yaxes(title_text="CORP estimate (isotonic fit)", row=1, col=1)
    return fig


def _annotation_position() -> dict[str, Any]:
    # lower right of the diagram: the curve rarely passes there, the legend sits top left
    return {"x": 0.98, "y": 0.04, "xref": "x domain", "yref": "y domain", "xanchor": "right",
            "yanchor": "bottom"}  # fmt: skip
