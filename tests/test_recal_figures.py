"""Figures of the Recalibration page: structure of the Plotly figures."""

from __future__ import annotations

import numpy as np
import pytest

from core.figures import recalibration as figures_recal
from core.recalibration.base import softmax
from core.recalibration.evaluation import compare_recalibrators, reliability_bins


@pytest.fixture(scope="module")
def comparison():
    rng = np.random.default_rng(0)
    z = rng.normal(0, 3, (3000, 3))
    y = (rng.random(3000)[:, None] > np.cumsum(softmax(z / 2), 1)).sum(1).clip(0, 2)
    return compare_recalibrators(
        z, y, ["temperature", "histogram-umd", "meta-cal"], logits=True, n_resamples=30
    )


def test_before_after_panels_share_axes(comparison):
    bins = reliability_bins(comparison)
    fig = figures_recal.before_after_reliability(bins, comparison.labels_of)
    assert len(fig.data) == 2 * len(bins)  # diagonal + observed per panel
    titles = [a.text for a in fig.layout.annotations]
    assert titles[:4] == [
        "Uncalibrated",
        "Temperature scaling",
        "Histogram binning (UMD)",
        "Meta-Cal (selective)",
    ]
    xs = {fig.layout[f"xaxis{i if i > 1 else ''}"].matches for i in range(1, 5)}
    ys = {fig.layout[f"yaxis{i if i > 1 else ''}"].matches for i in range(1, 5)}
    assert len(xs - {None}) == 1 and len(ys - {None}) == 1  # every panel on the same axes
    # histogram binning: one point per distinct output, at most 10
    umd = fig.data[5]
    assert len(umd.x) <= 10
    assert np.isclose(np.sum(umd.customdata), len(comparison.rows))


def test_tradeoff_has_one_point_per_method(comparison):
    fig = figures_recal.tradeoff_figure(comparison.metrics, x_metric="plugin")
    assert [t.name for t in fig.data] == [comparison.labels_of[m] for m in comparison.methods]
    m = comparison.metrics.query("method == 'temperature' and metric == 'brier'").iloc[0]
    assert np.isclose(fig.data[1].y[0], m.value)
    assert np.isclose(fig.data[1].error_y.arrayminus[0], m.value - m.low)


def test_metacal_figures(comparison):
    view = comparison.selective["meta-cal"]
    sep = figures_recal.score_separation_figure(view)
    assert [t.name for t in sep.data] == ["correct", "wrong"]
    assert len(sep.data[0].x) == int(view.correct.sum())
    thr = figures_recal.selective_threshold_figure(view, alpha=0.05)
    assert len(thr.data) == 3
    assert any(np.isclose(s.x0, view.threshold) for s in thr.layout.shapes if s.type == "line")
    ca = figures_recal.coverage_accuracy_figure(comparison.selective, comparison.labels_of)
    star = ca.data[-1]
    assert np.isclose(star.x[0], view.metrics.coverage) and np.isclose(
        star.y[0], view.metrics.coverage_accuracy
    )
    oracle = ca.data[1]
    pi0 = view.correct.mean()
    assert np.isclose(oracle.y[-1], pi0) and np.isclose(np.max(oracle.y), 1.0)
