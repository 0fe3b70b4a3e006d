"""The option objects beside a config: checked once, when made, on every engine."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import core
from core.analyses.analysis import AnalysisConfig
from core.analyses.model_comparison import DEFAULT_METRICS, ComparisonOptions, check_options
from core.analyses.subgroups import GroupOptions, WindowOptions
from core.base.errors import ConfigError
from core.stream.compare import run_comparison
from core.stream.engine import StreamRunner
from core.stream.load import LoadOptions


def test_window_options_check_and_normalise_when_made():
    w = WindowOptions(time=None, every=np.int64(3), threshold=1)
    assert w.every == 3 and type(w.every) is int
    assert w.threshold == 1.0 and type(w.threshold) is float
    assert WindowOptions("ts").every == "day"
    with pytest.raises(ConfigError, match="at least 1 row; got 0"):
        WindowOptions(every=0)
    with pytest.raises(ConfigError, match="'day', 'week' or a number of rows; got 'month'"):
        WindowOptions("ts", every="month")
    with pytest.raises(ConfigError, match="need a time column"):
        WindowOptions(every="week")
    with pytest.raises(ConfigError, match="threshold must be a number ≥ 0; got -1"):
        WindowOptions("ts", threshold=-1)
    with pytest.raises(ConfigError, match="threshold"):
        WindowOptions("ts", threshold=True)


def test_group_options_check_min_rows_when_made():
    assert GroupOptions().min_rows == core.subgroup_analysis.__kwdefaults__["min_rows"]
    for bad in (0, -1, 1.5, True, "10"):
        with pytest.raises(ConfigError, match="min_rows must be an integer ≥ 1"):
            GroupOptions(min_rows=bad)
    assert GroupOptions(min_rows=np.int64(5)).min_rows == 5


def test_options_are_frozen_and_key_a_cache():
    w = WindowOptions("ts", "week", 0.05)
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.every = "day"  # type: ignore[misc]
    assert hash(w) == hash(WindowOptions("ts", "week", 0.05)) and w == WindowOptions(
        "ts", "week", 0.05
    )
    assert GroupOptions(estimator="plugin@1") == GroupOptions("plugin@1")


def test_the_api_and_the_options_refuse_alike():
    # window_analysis takes keywords and makes its options: the same refusal as the object's
    rng = np.random.default_rng(3)
    p = rng.uniform(size=200)
    y = (rng.uniform(size=200) < p).astype(int)
    for bad, words in (
        ({"every": 0}, "at least 1 row"),
        ({"every": 50, "min_rows": 0}, "min_rows"),
    ):
        with pytest.raises(ConfigError, match=words):
            core.window_analysis(core.as_predictions((p, y)), **bad)


def test_comparison_options_check_when_made():
    o = ComparisonOptions(["plugin@1", "brier"], reference="a")
    assert o.metrics == ("plugin@1", "brier") and o == ComparisonOptions(("plugin@1", "brier"), "a")
    assert ComparisonOptions().metrics == DEFAULT_METRICS
    with pytest.raises(ConfigError, match="Choose at least one metric"):
        ComparisonOptions(metrics=[])
    with pytest.raises(ConfigError, match="no-such-test"):
        ComparisonOptions(test="no-such-test")


def test_comparison_settings_fill_in_the_config():
    config = AnalysisConfig(n_resamples=7, confidence_level=0.8, seed=11, norm=2)
    got = check_options(config, ComparisonOptions(("plugin", "brier")))
    assert (got.n_resamples, got.confidence_level, got.seed) == (7, 0.8, 11)
    assert [s.key for s in got.specs] == ["plugin@2", "brier"]
    with pytest.raises(ConfigError, match="listed twice"):
        check_options(config, ComparisonOptions(("plugin", "plugin@2")))


def test_a_stream_refuses_a_test_in_its_options(tmp_path):
    rng = np.random.default_rng(5)
    p = rng.uniform(size=200)
    y = (rng.uniform(size=200) < p).astype(int)
    frame = pd.DataFrame({"model": np.repeat(["a", "b"], 100), "p": p, "y": y})
    frame.to_csv(tmp_path / "two.csv", index=False)
    runner = StreamRunner(str(tmp_path / "two.csv"), LoadOptions())
    options = ComparisonOptions(test="hosmer-lemeshow")
    with pytest.raises(ConfigError, match="runs on every model's rows, which a stream"):
        run_comparison(runner, AnalysisConfig(bootstrap="cells"), options)
