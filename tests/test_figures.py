"""Figures: the traces carry exactly the numbers of the result objects they are drawn from."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import plotly.graph_objects as go
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from core.figures import class_balance, classwise_grid, confidence_histogram, reliability_figure
from core.stats.binning import bin_stats
from core.stats.summary import summarize

# A hand-checkable case: 2 equal-width bins [0, .5), [.5, 1].
# bin 0: scores .2, .4 -> mean .3, labels 0, 1 -> .5 ; bin 1: .8, .9 -> .85, labels 1, 1 -> 1.
SCORES = np.array([0.2, 0.8, 0.9, 0.4])
LABELS = np.array([0.0, 1.0, 1.0, 1.0])


def test_reliability_figure_traces_match_bin_stats():
    st = bin_stats(SCORES, LABELS, n_bins=2)
    low, high = np.array([0.1, 0.4]), np.array([0.9, 1.0])
    fig = reliability_figure(st, low=low, high=high, interval_label="95% Wilson")
    assert isinstance(fig, go.Figure)
    diag, observed, counts = fig.data
    assert_array_equal(diag.x, [0, 1])
    assert_array_equal(diag.y, [0, 1])
    assert_allclose(observed.x, [0.3, 0.85], rtol=1e-15)
    assert_allclose(observed.y, [0.5, 1.0], rtol=1e-15)
    # asymmetric error bars: high - y above, y - low below
    assert_allclose(observed.error_y.array, [0.4, 0.0], atol=1e-15)
    assert_allclose(observed.error_y.arrayminus, [0.4, 0.6], atol=1e-15)
    assert observed.name == "observed frequency (95% Wilson)"
    # counts in hover data and as bars at the bin centres with the bin widths
    assert_array_equal(observed.customdata[:, 0], [2, 2])
    assert_array_equal(counts.y, [2, 2])
    assert_allclose(counts.x, [0.25, 0.75])
    assert_allclose(counts.width, [0.5, 0.5])
    assert counts.xaxis == "x2"  # histogram beneath, on the shared x axis


def test_reliability_figure_drops_empty_bins_but_keeps_their_count_bars():
    st = bin_stats([0.05, 0.15, 0.95], [0, 0, 1], n_bins=10)
    fig = reliability_figure(st)
    _, observed, counts = fig.data
    assert_allclose(observed.x, [0.05, 0.15, 0.95])
    assert_allclose(observed.y, [0, 0, 1])
    assert observed.error_y.array is None  # no intervals given, no error bars
    assert_array_equal(observed.customdata[:, 5], [0, 1, 9])  # bin numbers in the hover
    assert len(counts.y) == 10 and counts.y.sum() == 3


def test_reliability_figure_equal_mass_bars_follow_data_edges():
    rng = np.random.default_rng(0)
    s = rng.uniform(size=200)
    y = (rng.uniform(size=200) < s).astype(float)
    st = bin_stats(s, y, binning="equal-mass", n_bins=5)
    fig = reliability_figure(st)
    _, observed, counts = fig.data
    assert_array_equal(counts.y, [40] * 5)
    assert_allclose(counts.width, np.diff(st.edges))
    assert_allclose(observed.x, st.mean_score)
    assert_allclose(observed.y, st.mean_label)


def test_classwise_grid_one_panel_per_class():
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(3), size=300)
    y = rng.integers(0, 3, size=300)
    comps = [
        SimpleNamespace(
            name=f"class {k}", bins=bin_stats(p[:, k], (y == k).astype(float), n_bins=5)
        )
        for k in range(3)
    ]
    fig = classwise_grid(comps, values=[0.1, 0.2, 0.3])
    assert len(fig.data) == 6
    for k, comp in enumerate(comps):
        diag, observed = fig.data[2 * k], fig.data[2 * k + 1]
        assert_array_equal(diag.x, [0, 1])
        ok = comp.bins.counts > 0
        assert_allclose(observed.x, comp.bins.mean_score[ok])
        assert_allclose(observed.y, comp.bins.mean_label[ok])
    titles = [a.text for a in fig.layout.annotations]
    assert titles[0].startswith("class 0 (n = 300)") and "CE 0.2000" in titles[1]
    # three panels on one row, each on its own axes
    assert {fig.data[1].xaxis, fig.data[3].xaxis, fig.data[5].xaxis} == {"x", "x2", "x3"}


def test_classwise_grid_wraps_rows():
    st = bin_stats(SCORES, LABELS, n_bins=2)
    comps = [SimpleNamespace(name=str(k), bins=st) for k in range(10)]
    fig = classwise_grid(comps, cols=4)
    assert len(fig.data) == 20
    assert fig.data[-1].xaxis == "x10"


def test_confidence_histogram_counts_correct_and_incorrect():
    p = np.array([[0.9, 0.1], [0.2, 0.8], [0.45, 0.55], [0.7, 0.3]])
    y = np.array([0, 0, 1, 1])
    # confidences .9 (right), .8 (wrong), .55 (right), .7 (wrong); 10 bins of width .1
    fig = confidence_histogram(summarize((p, y), n_bins=10))
    right, wrong = fig.data
    assert right.name == "correct" and wrong.name == "incorrect"
    assert right.y[5] == 1 and right.y[9] == 1 and right.y.sum() == 2
    assert wrong.y[7] == 1 and wrong.y[8] == 1 and wrong.y.sum() == 2
    assert_allclose(right.x, np.arange(10) / 10 + 0.05)


def test_confidence_histogram_without_labels_and_edge_convention():
    # 0.3 lies on an edge and belongs to the upper bin; 1.0 is in the last (closed) bin
    fig = confidence_histogram(summarize(([0.3, 1.0, 0.6], None), n_bins=10))
    (all_,) = fig.data
    # binary P(y=1) -> top-label confidence max(p, 1-p) = .7, 1.0, .6
    assert all_.y[7] == 1 and all_.y[9] == 1 and all_.y[6] == 1 and all_.y.sum() == 3


def test_class_balance_shares_and_mean_probabilities():
    p = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.5, 0.25, 0.25]])
    y = np.array([0, 1, 1, 2])
    fig = class_balance(summarize((p, y), class_names=["a", "b", "c"]))
    observed, predicted = fig.data
    assert list(observed.x) == ["a", "b", "c"]
    assert_allclose(observed.y, [0.25, 0.5, 0.25])
    assert_array_equal(observed.customdata, [1, 2, 1])
    assert_allclose(predicted.y, [0.4, 0.3875, 0.2125])


def test_figures_reject_bad_input():
    from core.base.errors import DataError

    with pytest.raises(DataError, match="probabilities"):
        class_balance(summarize(([[1.5, -0.5]], [0])))


def test_reliability_figure_of_an_analysis_component_uses_its_intervals():
    from core.analyses.analysis import AnalysisConfig, analyze
    from core.stats.intervals import bin_intervals

    rng = np.random.default_rng(2)
    p = rng.uniform(size=400)
    y = (rng.uniform(size=400) < p).astype(int)
    res = analyze((p, y), AnalysisConfig(lens="binary", n_bins=8, n_resamples=0))
    (comp,) = res.components
    fig = reliability_figure(comp)
    _, observed, counts = fig.data
    ok = comp.bins.counts > 0
    lo, hi = bin_intervals(comp.bins.counts, comp.bins.label_sums, method="wilson")
    assert_allclose(observed.y, comp.bins.mean_label[ok])
    assert_allclose(observed.error_y.array, (hi - comp.bins.mean_label)[ok], atol=1e-15)
    assert_allclose(observed.error_y.arrayminus, (comp.bins.mean_label - lo)[ok], atol=1e-15)
    assert counts.y.sum() == 400


# ------------------------------------------------------------------ Tests page


def _resampled(statistic: float, pvalue: float, null=(0.1, 0.2, 0.3, 0.4)):
    from core.analyses.calibration_tests import CalibrationTestResult

    return CalibrationTestResult(
        test="consistency",
        statistic=statistic,
        pvalue=pvalue,
        pvalue_is_bound=False,
        method="resampling",
        assumptions="none",
        lens="top-label",
        n=100,
        null_distribution=np.asarray(null),
        n_resamples=len(null),
    )


def test_null_distribution_marks_the_observed_statistic_and_the_tail():
    from core.figures import null_distribution_figure

    fig = null_distribution_figure(_resampled(0.35, 0.4))
    null, observed = fig.data
    assert null.type == "histogram" and null.nbinsx == 50
    assert_allclose(null.x, [0.1, 0.2, 0.3, 0.4])
    assert observed.name == "observed 0.35"
    assert_allclose(observed.x, [0.35, 0.35])
    rect = next(s for s in fig.layout.shapes if s.type == "rect")
    line = next(s for s in fig.layout.shapes if s.type == "line")
    # the shaded tail runs from the observed statistic to the largest resample
    assert (rect.x0, rect.x1) == (0.35, 0.4) and line.x0 == line.x1 == 0.35
    assert [a.text for a in fig.layout.annotations] == ["p = 0.4"]
    beyond = null_distribution_figure(_resampled(0.9, 0.2))
    tail = next(s for s in beyond.layout.shapes if s.type == "rect")
    assert (tail.x0, tail.x1) == (0.9, 0.9)


def test_null_distribution_needs_a_resampling_test():
    import dataclasses

    from core.base.errors import ConfigError
    from core.figures import null_distribution_figure

    with pytest.raises(ConfigError, match="no resampled null distribution"):
        null_distribution_figure(dataclasses.replace(_resampled(0.3, 0.5), null_distribution=None))


def test_error_rates_against_alpha():
    from core.analyses.calibration_tests import TestErrorSimulation
    from core.figures import error_rate_figure

    pvalues = {
        "spiegelhalter": np.array([0.01, 0.2, 0.5, 0.9]),
        "hosmer-lemeshow": np.array([0.03, 0.04, 0.6, 0.7]),
    }
    alphas = np.array([0.05, 0.5, 1.0])
    sim = TestErrorSimulation(pvalues, alphas, calibrated=True, n=50, n_resamples=4)
    fig = error_rate_figure(sim)
    assert [t.name for t in fig.data] == [
        "type-I error = α",
        "Spiegelhalter's Z",
        "Hosmer–Lemeshow",
    ]
    # type-I error: the share of data sets with p ≤ α
    assert_allclose(fig.data[1].x, alphas)
    assert_allclose(fig.data[1].y, [1 / 4, 3 / 4, 4 / 4])
    assert_allclose(fig.data[2].y, [2 / 4, 2 / 4, 4 / 4])
    assert fig.layout.yaxis.title.text == "type-I error P[p ≤ α]"
    miscalibrated = TestErrorSimulation(pvalues, alphas, calibrated=False, n=50, n_resamples=4)
    fig = error_rate_figure(miscalibrated)
    assert [t.name for t in fig.data] == ["Spiegelhalter's Z", "Hosmer–Lemeshow"]  # no diagonal
    assert_allclose(fig.data[0].y, [3 / 4, 1 / 4, 0])  # type-II error: p > α
    assert fig.layout.yaxis.title.text == "type-II error P[p > α]"


@pytest.mark.parametrize("user_n", [150, 300, 1_000_000])
def test_the_your_n_marker_sits_at_n_on_the_log_axis(user_n):
    from core.figures.style import log_n_axis

    fig = go.Figure(go.Scatter(x=[100, 200, 400], y=[1, 2, 3]))
    log_n_axis(fig, [100, 200, 400], user_n)
    (line,) = fig.layout.shapes
    (note,) = fig.layout.annotations
    # plotly.js reads a shape's x in data units on a log axis, an annotation's in log10 units
    # (the browser test checks where they are drawn)
    assert line.x0 == line.x1 == user_n and line.yref == "paper"
    assert note.x == pytest.approx(np.log10(user_n)) and note.text == f"your n = {user_n:,}"
    assert fig.layout.xaxis.type == "log"
