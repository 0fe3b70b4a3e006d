"""Figures of the Tests page: a resampling test's null distribution and simulated test errors.

- :func:`null_distribution_figure`: histogram of the statistics resampled under
  "calibrated", the observed statistic and the share at least as large (the p-value);
- :func:`error_rate_figure`: type-I (calibrated data) or type-II error of each test
  against the significance level α.

Trace order (tests rely on it): the null distribution is ``[resamples, observed]``; the
error curves are ``[diagonal]`` (calibrated data only) then one trace per test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

from core.analyses.calibration_tests import TESTS
from core.base.errors import ConfigError
from core.figures.style import OBSERVED_MARK, TEMPLATE, literal, margin

if TYPE_CHECKING:
    from core.analyses.calibration_tests import CalibrationTestResult, TestErrorSimulation

NULL_COLOR = "#7f8fa6"


def null_distribution_figure(result: CalibrationTestResult, *, height: int = 360) -> go.Figure:
    """Draw the resampled null distribution of a test statistic with the observed value.

    Parameters
    ----------
    result : core.analyses.calibration_tests.CalibrationTestResult
        A resampling test's result (its ``null_distribution`` is not None).
    height : int, default=360
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces ``[resampled statistics (histogram), observed statistic]``; a vertical line
        marks the observed statistic and a shaded region the resamples at least as large.

    Raises
    ------
    ConfigError
        When the test has no resampled null distribution.
    """
    null = result.null_distribution
    if null is None:
        raise ConfigError(f"The {result.test!r} test has no resampled null distribution.")
    fig = go.Figure()
    fig.add_trace(
        go.Histogram(x=null, nbinsx=50, name="resampled statistics", marker_color=NULL_COLOR)
    )
    right = float(max(np.max(null), result.statistic))
    fig.add_vrect(
        x0=result.statistic,
        x1=right,
        fillcolor=OBSERVED_MARK,
        opacity=0.15,
        line_width=0,
        annotation_text=f"p = {result.pvalue:.3g}",
        annotation_position="top left",
    )
    fig.add_vline(x=result.statistic, line_color=OBSERVED_MARK, line_width=2)
    # a zero-height line, so the observed statistic has a legend entry like the histogram
    fig.add_trace(
        go.Scatter(
            x=[result.statistic, result.statistic],
            y=[0, 0],
            mode="lines",
            line={"color": OBSERVED_MARK, "width": 2},
            name=f"observed {result.statistic:.4g}",
        )
    )
    fig.update_layout(
        template=TEMPLATE,
        xaxis_title="statistic under “calibrated”",
        yaxis_title="resamples",
        bargap=0.02,
        height=height,
        margin=margin(left=50, bottom=40),
        legend={"orientation": "h", "y": 1.1},
    )
    return fig


def error_rate_figure(simulation: TestErrorSimulation, *, height: int = 420) -> go.Figure:
    """Draw each test's simulated error rate against the significance level α.

    Parameters
    ----------
    simulation : core.analyses.calibration_tests.TestErrorSimulation
        p-values of the tests on simulated data sets
        (:func:`core.analyses.calibration_tests.simulate_test_errors`).
    height : int, default=420
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        On calibrated data the type-I error ``P[p ≤ α]`` of each test after the diagonal
        ``type-I error = α`` (a valid test stays on or below it); otherwise the type-II
        error ``P[p > α]``. One trace per test, named by its label.
    """
    # imported here: core.analyses.calibration_tests loads scipy.stats, too much for every figure

    fig = go.Figure()
    if simulation.calibrated:
        fig.add_trace(
            go.Scatter(
                x=[0, 1],
                y=[0, 1],
                mode="lines",
                line={"dash": "dash", "color": "grey"},
                name="type-I error = α",
            )
        )
    for name, part in simulation.to_frame().groupby("test", sort=False):
        fig.add_trace(
            go.Scatter(
                x=part["alpha"], y=part["error"], mode="lines", name=literal(TESTS.get(name).label)
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        xaxis_title="significance level α",
        yaxis_title=(
            "type-I error P[p ≤ α]" if simulation.calibrated else "type-II error P[p > α]"
        ),
        yaxis_range=[-0.05, 1.05],
        height=height,
        margin=margin(bottom=40),
    )
    return fig
