"""Figures of the Data page, drawn from a :class:`core.stats.summary.DataSummary`.

Trace order is part of the contract (tests rely on it):

- :func:`confidence_histogram`: ``[correct, incorrect]`` with labels, else ``[all]``;
- :func:`class_balance`: ``[observed share, mean predicted probability]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

from core.base.errors import DataError
from core.figures.style import (
    BLUE,
    COUNT_COLOR,
    GOOD,
    LEGEND_ABOVE,
    LEGEND_TOP_LEFT,
    SLATE,
    TEMPLATE,
    centres,
    literal,
    margin,
)

if TYPE_CHECKING:
    from core.stats.summary import DataSummary

INCORRECT_COLOR = "#c05621"


def confidence_histogram(summary: DataSummary, *, height: int = 300) -> go.Figure:
    """Histogram of top-label confidence, split into correct and incorrect predictions.

    Parameters
    ----------
    summary : core.stats.summary.DataSummary
        Counts per confidence bin (:func:`core.stats.summary.summarize`); with labels the bars
        are stacked by correctness.
    height : int, default=300
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Bars at the bin centres: ``[correct, incorrect]`` with labels, else ``[all]``;
        the bar heights sum to ``n``.
    """
    edges = summary.confidence_edges
    counts = summary.confidence_counts
    correct = summary.correct_counts
    if correct is None:
        parts = [(counts, "all", COUNT_COLOR)]
    else:
        parts = [(correct, "correct", GOOD), (counts - correct, "incorrect", INCORRECT_COLOR)]
    fig = go.Figure(
        [
            go.Bar(x=centres(edges), y=c, width=np.diff(edges), name=name, marker_color=color)
            for c, name, color in parts
        ]
    )
    fig.update_traces(
        hovertemplate="confidence ≈ %{x:.3f}: n = %{y:,}<extra>%{fullData.name}</extra>"
    )
    fig.update_layout(
        template=TEMPLATE,
        barmode="stack",
        bargap=0,
        height=height,
        xaxis={"range": [0, 1], "title": "top-label confidence"},
        yaxis={"title": "count", "rangemode": "tozero"},
        margin=margin(20),
        legend=LEGEND_TOP_LEFT,
    )
    return fig


def class_balance(summary: DataSummary, *, height: int = 300) -> go.Figure:
    """Observed class shares next to the mean predicted probability of each class.

    Parameters
    ----------
    summary : core.stats.summary.DataSummary
        Counts per class (:func:`core.stats.summary.summarize` of labelled predictions); the
        bars are named after its ``class_names``.
    height : int, default=300
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces ``[observed share, mean predicted probability]`` with one bar per class;
        a calibrated model has the two bars of each class close (calibration in the large).

    Raises
    ------
    DataError
        When the summary has no labels.
    """
    if summary.label_counts is None:
        raise DataError("The class balance compares with the labels; summarize labelled data.")
    names = [literal(c) for c in summary.class_names]
    fig = go.Figure(
        [
            go.Bar(
                x=names,
                y=summary.label_shares,
                name="observed share",
                marker_color=SLATE,
                customdata=summary.label_counts,
                hovertemplate="%{x}: %{y:.3f} (n = %{customdata:,})<extra></extra>",
            ),
            go.Bar(
                x=names,
                y=summary.mean_probs,
                name="mean predicted probability",
                marker_color=BLUE,
                hovertemplate="%{x}: %{y:.3f}<extra></extra>",
            ),
        ]
    )
    fig.update_layout(
        template=TEMPLATE,
        barmode="group",
        height=height,
        xaxis={"title": "class", "type": "category"},
        yaxis={"title": "share of rows", "rangemode": "tozero"},
        margin=margin(20),
        legend=LEGEND_ABOVE,
    )
    return fig
