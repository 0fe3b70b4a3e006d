"""The report's speed-ups change no number: worker processes, memos and the exact median.

The 14-network CIFAR-10 report is the case they were made for (issue 13); here a small
seeded multi-model case of the same shape (paired models, ten classes, the exact row
bootstrap, the kernel block test) is built in every way the code allows — one process or
several, memos cold or warm — and every number of its JSON must be the same.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from core.analyses.analysis import _POINTS, _UNBINNED, AnalysisConfig, analyze
from core.analyses.model_comparison import compare_models
from core.base import parallel
from core.base.errors import ConfigError
from core.base.memo import ORDERS
from core.data import load_predictions
from core.estimators import kernel as kern
from core.inference import bootstrap, resampling
from core.report import build_report
from core.stats.binned_view import BinnedViews

FORK = sys.platform.startswith("linux")  # where the report forks its workers


def _models(n: int = 500, k: int = 10, seed: int = 13) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Three models of one task on the same rows: sharp, tempered and flattened softmaxes."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = rng.normal(0.0, 1.0, (n, k))
    logits[np.arange(n), labels] += 2.5
    out = {}
    for name, t in (("sharp", 0.5), ("plain", 1.0), ("flat", 2.0)):
        z = logits / t
        p = np.exp(z - z.max(axis=1, keepdims=True))
        out[name] = (p / p.sum(axis=1, keepdims=True), labels)
    return out


@pytest.fixture(scope="module")
def three():
    import pandas as pd

    frames = []
    for name, (p, y) in _models().items():
        frame = pd.DataFrame(p, columns=[f"c{i}" for i in range(p.shape[1])])
        frame["label"] = y
        frames.append(frame.assign(model=name))
    return load_predictions(pd.concat(frames, ignore_index=True), name="three.csv")


CONFIG = AnalysisConfig(lens="top-label", n_resamples=200, seed=3, kernel_sample=300)


def _cold() -> None:
    """Forget every memo, as a fresh process would."""
    bootstrap.DISTRIBUTIONS.clear()
    _POINTS.clear()
    _UNBINNED.clear()
    ORDERS.clear()
    kern._SUM_CACHE.clear()
    kern._MEDIAN_CACHE.clear()


def _numbers(report) -> dict:
    record = json.loads(report.to_json())
    record.pop("created")
    return record


@pytest.fixture(scope="module")
def serial_cold(three):
    _cold()
    return _numbers(build_report(three, config=CONFIG, workers=1))


def test_the_case_takes_the_paths_of_the_cifar_report(three, serial_cold):
    # the exact row bootstrap, the comparison, the kernel block test on every model
    analysis = analyze(three.by_model()["plain"], CONFIG)
    assert {r.path for r in analysis.intervals.values()} >= {"fixed-bins", "sweep", "row-mean"}
    assert serial_cold["test"]["name"] == "skce-block"
    assert all(r["test"]["pvalue"] is not None for r in serial_cold["results"])
    assert len(serial_cold["comparison"]["models"]) == 3


def test_warm_memos_give_the_numbers_of_cold_ones(three, serial_cold):
    # second run in the same process: sort orders, point estimates, medians and bootstrap
    # distributions all come from memos
    assert _numbers(build_report(three, config=CONFIG, workers=1)) == serial_cold


@pytest.mark.skipif(not FORK, reason="worker processes are forked")
def test_worker_processes_give_the_numbers_of_one_process(three, serial_cold):
    _cold()
    assert _numbers(build_report(three, config=CONFIG, workers=2)) == serial_cold
    assert _numbers(build_report(three, config=CONFIG, workers=3)) == serial_cold


@pytest.mark.parametrize("workers", [1, 2])
def test_the_reports_comparison_is_compare_models(three, workers):
    # the report computes each model's part of the comparison in that model's job
    _cold()
    fresh = compare_models(three.by_model(), config=CONFIG).to_record()
    _cold()
    report = build_report(three, config=CONFIG, workers=workers)
    assert json.dumps(report.comparison.to_record()) == json.dumps(fresh)


def test_the_comparison_reads_the_analyses_distributions(three, monkeypatch):
    _cold()
    parts = three.by_model()
    fresh = compare_models(parts, config=CONFIG)
    _cold()
    for part in parts.values():
        analyze(part, CONFIG)
    planned = []
    real = resampling.plan_for
    monkeypatch.setattr(
        resampling, "plan_for", lambda stat, *a, **k: planned.append(stat) or real(stat, *a, **k)
    )
    warm = compare_models(parts, config=CONFIG)
    # the sweep, Brier score and log loss of every model were drawn by its analysis
    assert planned == []
    assert warm.table.equals(fresh.table) and warm.differences.equals(fresh.differences)
    for key, dist in fresh.distributions.items():
        np.testing.assert_array_equal(warm.distributions[key], dist)


def test_distribution_memo_keys_follow_the_validated_call():
    key = bootstrap._distribution_key
    base = key("d", "sweep", {"norm": 1}, False, 100, 0, 10)
    assert base == key(
        "d", "sweep", {"norm": "1", "lens": "top-label", "n_bins": 15}, False, 100, 0, 10
    )
    assert base != key("d", "sweep", {"norm": 2}, False, 100, 0, 10)
    assert base != key("d", "sweep", {"norm": 1}, False, 100, 1, 10)
    assert base != key("e", "sweep", {"norm": 1}, False, 100, 0, 10)
    assert base != key("d", "sweep", {"norm": 1}, True, 100, 0, 10)
    assert key("d", len, {}, False, 100, 0, 10) is None  # callables are not memoised
    assert key(None, "brier", {}, False, 100, 0, 10) is None  # a Generator seed: no digest
    assert key("d", "sweep", {"bins": 3}, False, 100, 0, 10) is None  # invalid: plan_for says


def test_a_memoised_distribution_equals_a_fresh_bootstrap():
    p, y = _models(n=300)["plain"]
    views = BinnedViews(p, y)
    specs = {"a": ("debiased", {"norm": 1}), "b": ("brier", {})}
    _cold()
    first = bootstrap.bootstrap_many(None, None, specs, n_resamples=150, seed=4, views=views)
    again = bootstrap.bootstrap_many(None, None, specs, n_resamples=150, seed=4, views=views)
    other = bootstrap.bootstrap_many(None, None, specs, n_resamples=150, seed=5, views=views)
    _cold()
    cold = bootstrap.bootstrap_many(None, None, specs, n_resamples=150, seed=4, views=views)
    for k in specs:
        assert again[k].distribution is first[k].distribution  # from the memo
        np.testing.assert_array_equal(cold[k].distribution, first[k].distribution)
        assert cold[k].confidence_interval == first[k].confidence_interval
        assert not np.array_equal(other[k].distribution, first[k].distribution)
        assert not first[k].distribution.flags.writeable


# --------------------------------------------------------------------------- processes


def _square_or_fail(i: int) -> int:
    if i in (3, 5):
        raise ConfigError(f"job {i} failed")
    return i * i


def test_process_jobs_keep_order_and_raise_the_first_error():
    workers = parallel.process_count(6)
    with parallel.ProcessJobs(lambda i: i * i, 6, workers) as jobs:
        assert jobs.results() == [i * i for i in range(6)]
    with pytest.raises(ConfigError, match="job 3 failed"):
        parallel.ProcessJobs(_square_or_fail, 6, workers).results()
    # one process: the jobs run in results()
    jobs = parallel.ProcessJobs(lambda i: -i, 3, 1)
    assert not jobs.running and jobs.results() == [0, -1, -2]


@pytest.mark.skipif(not FORK, reason="worker processes are forked")
def test_workers_are_other_processes_with_one_thread_each():
    parent = os.getpid()
    with parallel.ProcessJobs(
        lambda i: (os.getpid(), os.environ.get("CALIBSCOPE_THREADS"), parallel.process_count(4)),
        4,
        2,
    ) as jobs:
        assert jobs.running
        got = jobs.results()
    assert all(pid != parent and threads == "1" and inner == 1 for pid, threads, inner in got)
    assert parallel.process_count(1) == 1


def test_process_count_follows_the_thread_setting(monkeypatch):
    monkeypatch.setenv("CALIBSCOPE_THREADS", "1")
    assert parallel.process_count(14) == 1
    monkeypatch.setenv("CALIBSCOPE_THREADS", "2")
    assert parallel.process_count(14) == (2 if FORK else 1)
    assert parallel.process_count(1) == 1
