"""Charts for people: plain tick numbers, titled small multiples, log counts, one axis per
kernel quantity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import core
from core.figures import (
    analysis_figure,
    before_after_reliability,
    classwise_grid,
    confidence_histogram,
    estimator_intervals_figure,
    log_counts,
    reliability_figure,
)
from core.stats.binning import bin_stats
from core.stats.summary import summarize


def _data(n=1500, k=3, seed=4):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(k, p=row) for row in probs])
    return probs, labels


def test_axes_write_plain_numbers_not_si_prefixes():
    fig = confidence_histogram(summarize(_data()))
    template = fig.layout.template.layout
    assert template.xaxis.exponentformat == "power" and template.yaxis.exponentformat == "power"
    # the template travels with the figure (the report's HTML and the PNG export)
    assert '"exponentformat":"power"' in fig.to_json()


def test_log_counts_changes_a_copy():
    probs, labels = _data()
    a = core.analyze((probs, labels), core.AnalysisConfig(n_resamples=0))
    fig = reliability_figure(a.components[0])
    logged = log_counts(fig)
    assert logged.layout.yaxis2.type == "log"
    assert logged.layout.yaxis2.title.text == "count (log scale)"
    assert logged.layout.yaxis.type != "log"  # the diagram keeps its linear axis
    assert fig.layout.yaxis2.type != "log"  # a cached figure is not changed
    assert log_counts(fig, False) is fig
    hist = log_counts(confidence_histogram(summarize((probs, labels))))
    assert hist.layout.yaxis.type == "log"


def test_every_small_multiple_has_axis_titles():
    probs, labels = _data()
    a = core.analyze((probs, labels), core.AnalysisConfig(lens="classwise", n_resamples=0))
    grid = classwise_grid(a.components)
    xs = [grid.layout[k] for k in grid.layout if k.startswith("xaxis")]
    ys = [grid.layout[k] for k in grid.layout if k.startswith("yaxis")]
    assert len(xs) == len(ys) == 3
    assert all(ax.title.text == "score" for ax in xs)
    assert all(ax.title.text == "observed" for ax in ys)
    assert analysis_figure(a).layout.xaxis3.title.text == "score"

    rng = np.random.default_rng(1)
    s = rng.uniform(size=500)
    y = (rng.uniform(size=500) < s).astype(float)
    stats = {
        k: bin_stats(s**q, y, n_bins=10) for k, q in (("raw", 1), ("a", 2), ("b", 0.5), ("c", 1))
    }
    fig = before_after_reliability(stats, {"raw": "uncalibrated"}, cols=2)
    axes = [k for k in fig.layout if k.startswith(("xaxis", "yaxis"))]
    assert len(axes) == 8
    for k in axes:
        want = "top-label confidence" if k.startswith("x") else "observed frequency"
        assert fig.layout[k].title.text == want, k


def test_skce_and_mmce_are_on_panels_of_their_own():
    table = pd.DataFrame(
        {
            "estimator": ["skce-ul", "skce-b", "mmce"],
            "label": ["SKCE (unbiased, linear)", "SKCE (biased)", "MMCE"],
            "group": ["kernel"] * 3,
            "lp_scale": [False] * 3,
            "lens": ["top-label"] * 3,
            "value": [2e-4, 3e-4, 0.05],
            "low": [1e-4, np.nan, 0.04],
            "high": [3e-4, np.nan, 0.06],
        }
    )
    fig = estimator_intervals_figure(table, lp_scale=False)
    assert len(fig.data) == 2
    by_axis = {t.xaxis: list(t.y) for t in fig.data}
    assert sorted(len(v) for v in by_axis.values()) == [1, 2]
    mmce_axis = next(a for a, names in by_axis.items() if any("MMCE" in n for n in names))
    mmce = fig.layout["xaxis" + mmce_axis[1:]]
    assert "kernel distance of the confidence" in mmce.title.text
    assert mmce.range is None  # a whisker: Plotly's own range
    # one point without a whisker: a span around it, not Plotly's ±1 that reads as 0
    table.loc[2, ["low", "high"]] = np.nan
    alone = estimator_intervals_figure(table, lp_scale=False)
    axis = next(t.xaxis for t in alone.data if any("MMCE" in n for n in t.y))
    assert tuple(alone.layout["xaxis" + axis[1:]].range) == pytest.approx((0.025, 0.075))
    # one quantity: one panel, the plain title
    one = estimator_intervals_figure(table.iloc[:2], lp_scale=False)
    assert len(one.data) == 1 and one.layout.xaxis.title.text == "estimate (bootstrap interval)"
