"""The dashboard pages' core work, without Streamlit, against a one-pass ``bincount`` floor.

What each page computes with the sidebar's defaults (``AnalysisConfig()``: top-label or
classwise lens as stated, 15 equal-width bins, plug-in headline, 1,000 resamples, seed 0,
Wilson per-bin intervals, consistency band on):

- **Reliability, first view** (``dashboard/app_pages/reliability.py``): ``analyze`` with the
  bootstrap off (the diagram and point estimates), then ``analyze`` with the config itself
  (the bootstrap gate: exact up to 10⁷ row-resamples, the cell bootstrap beyond). Kernel
  memos are cleared first: a fresh upload has none. The figure is timed on its own row.
- **Reliability, number of bins changed** (15 → 20): the same two calls at the new ``n_bins``,
  with the kernel memos the first view left (as in a running session).
- **Estimators, default view** (``dashboard/app_pages/estimators.py``): ``compare_estimators``
  with binned intervals (kernel intervals wait for a click) and ``error_versus_bins`` for
  B = 2 … 50, kernel memos cleared (a visit straight to the page).
- **Tests, default view** (``dashboard/app_pages/tests.py``): ``run_tests`` of the default
  suite (canonical kernel lens, 1,000 resamples) with the page's budget ``PAGE_ROW_WORK``:
  a test that would exceed it waits for a click (its cost is what :func:`slow_tests` says).
- **Consistency test by estimator** (binary data): 200 resamples with the plug-in and the
  debiased estimator, against the one-pass floor (``consistency-debiased``: ≤150×).
- **analyze, linear to 10⁷**: ``analyze`` of 10⁶ and 10⁷ binary rows with the default
  config, each in a fresh process with empty memos, the median of three; the 10⁷ row's
  floor is ten times the 10⁶ time (``analyze-linear``: ≤1.2×, under 1 GB of extra peak
  memory). The child touches 3.2 GB before it starts: on a virtual machine the first
  touch of memory the guest never used costs about 2 ms a MB, which would otherwise be
  timed as the analysis's.
- **Compare, default view** (``dashboard/app_pages/compare.py``): ``compare_models`` of four
  models (the multiclass scores at four temperatures, paired: the same labels) with the
  default metrics, 1,000 resamples and the block test, on the top-label and the classwise
  lens; no target. Floor: each model's lens floor.

Data: 10⁶ binary rows (one P(y=1) column, as an upload gives), and 2·10⁵ × 10 multiclass
rows on the top-label and the classwise lens (``--quick``: 10⁵ and 3,000 × 10, a smoke run).

Floor: one pass that bins the lens's scores into 15 equal-width bins and sums counts,
scores and outcomes per bin with ``bincount`` (for the top-label lens after the max and
argmax, or the larger of two columns; for classwise, every class's column with class offsets) — the least work behind a
reliability diagram. Targets (``benchmarks.common.TARGETS``): first view ≤150× the floor and
under 2 s, a change of bins ≤50×, the Estimators page under 3 s.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

from benchmarks.common import MIN_REPEATS, median_of, row
from core.analyses import analysis
from core.analyses.analysis import AnalysisConfig, analyze, bootstrap_mode
from core.analyses.calibration_tests import (
    DEFAULT_SUITE,
    PAGE_ROW_WORK,
    calibration_test,
    run_tests,
    slow_tests,
)
from core.analyses.estimator_comparison import compare_estimators, error_versus_bins
from core.analyses.model_comparison import compare_models
from core.base.memo import ORDERS
from core.data import Predictions, as_predictions
from core.estimators import kernel as kern
from core.figures.reliability import analysis_figure
from core.inference import bootstrap
from core.inference.cells import cells_of
from core.report import DEFAULT_TEST
from core.stats.binned_view import BinnedViews
from core.stats.lenses import lens_components

B = 15


def _binary(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    s = rng.beta(2.0, 1.0, n)
    # a true curve that crosses the diagonal, so the diagram has something to show
    t = 1.0 / (1.0 + np.exp(-(1.6 * np.log(s / (1.0 - s + 1e-12) + 1e-12) + 0.35)))
    return s, (rng.random(n) < t).astype(np.int64)


def _multiclass(n: int, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    logits = rng.normal(size=(n, k)) * 3.0
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    # labels from a tempered version of the model: miscalibrated on purpose
    top = probs.argmax(axis=1)
    y = np.where(rng.random(n) < 0.8, top, rng.integers(0, k, n))
    return probs, y


def _bincounts(k: np.ndarray, s: np.ndarray, hits: np.ndarray, size: int) -> tuple[np.ndarray, ...]:
    return (
        np.bincount(k, minlength=size),
        np.bincount(k, weights=s, minlength=size),
        np.bincount(k, weights=hits, minlength=size),
    )


def _top_label_floor(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """Top-label scores and outcomes, then one equal-width bincount pass."""
    if p.shape[1] == 2:
        # two columns: the larger one is the confidence, no argmax and gather needed
        conf = np.maximum(p[:, 0], p[:, 1])
        correct = (p[:, 1] >= p[:, 0]) == (y == 1)
    else:
        pred = p.argmax(axis=1)
        conf = p[np.arange(p.shape[0]), pred]
        correct = pred == y
    k = np.minimum((conf * B).astype(np.intp), B - 1)
    return _bincounts(k, conf, correct.astype(np.float64), B)


def _classwise_floor(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """Every class column binned with an offset per class; outcomes only where they are 1."""
    n, c = p.shape
    k = np.minimum((p * B).astype(np.intp), B - 1)
    k += np.arange(c) * B
    return (
        np.bincount(k.ravel(), minlength=c * B),
        np.bincount(k.ravel(), weights=p.ravel(), minlength=c * B),
        np.bincount(k[np.arange(n), y], minlength=c * B),
    )


def _clear_kernel_memos() -> None:
    """Forget memoised kernel sums, bandwidths, sort orders and point estimates: what a fresh
    upload finds."""
    kern._SUM_CACHE.clear()
    kern._MEDIAN_CACHE.clear()
    ORDERS.clear()
    analysis._POINTS.clear()
    analysis._UNBINNED.clear()
    bootstrap.DISTRIBUTIONS.clear()


def _reliability(pred: Predictions, config: AnalysisConfig) -> Any:
    """The Reliability page's two core calls: bootstrap off, then the bootstrap gate's."""
    analyze(pred, dataclasses.replace(config, n_resamples=0))
    return analyze(pred, config)


def _estimators(pred: Predictions, config: AnalysisConfig) -> None:
    """The Estimators page's default work: binned intervals and the error against B."""
    config = dataclasses.replace(config, estimator="plugin")
    compare_estimators(pred, config, intervals="binned")
    error_versus_bins(pred, config, n_bins_range=(2, 50))


def _warm_up(rng: np.random.Generator) -> None:
    """First calls import scipy, pandas and plotly; a small run pays that outside the timings."""
    small = as_predictions(_multiclass(2_000, 4, rng))
    for lens in ("top-label", "classwise"):
        config = AnalysisConfig(lens=lens, n_resamples=50)
        analysis_figure(_reliability(small, config))
        _estimators(small, config)


def _page_rows(
    label: str,
    pred: Predictions,
    config: AnalysisConfig,
    floor_func: Any,
    repeat: int,
) -> list[dict[str, Any]]:
    p, y = pred.probs, pred.labels
    floor = median_of(lambda: floor_func(p, y))
    components = lens_components(config.lens, pred.n_classes)
    mode = bootstrap_mode(config, pred.n, components)
    rows = [row(f"floor {label}: one-pass EW bincount", floor, floor, f"{config.lens} lens")]
    how = f"{config.n_resamples:,} resamples, {mode}"
    if mode == "cells":
        view = BinnedViews(p, y, tuple(pred.class_names), None).binned(
            config.lens, config.binning, config.n_bins, config.tie_policy
        )
        how += f" bootstrap of {cells_of(view, {}).n_cells:,} cells"

    def first_view() -> None:
        _clear_kernel_memos()
        _reliability(pred, config)

    t = median_of(first_view, repeat=repeat, warmup=0)
    rows.append(
        row(
            f"Reliability page first view, {label}",
            t,
            floor,
            f"analyze ×2 (no bootstrap, then {how})",
            target="page-first-view",
        )
    )
    result = analyze(pred, config)
    t = median_of(lambda: analysis_figure(result), repeat=repeat, warmup=0)
    rows.append(row(f"Reliability figure, {label}", t, floor, "core.figures (plotly), no target"))
    rebinned = dataclasses.replace(config, n_bins=20)

    def change_bins() -> None:
        # B = 20 for the first time: the data's memos (sort orders, kernel sums) stay warm,
        # the point estimates at B = 20 are not yet known
        analysis._POINTS.clear()
        _reliability(pred, rebinned)

    t = median_of(change_bins, repeat=repeat, warmup=0)
    rows.append(
        row(
            f"Reliability page, bins 15 → 20, {label}",
            t,
            floor,
            "analyze ×2 at B = 20, memos of the data warm",
            target="page-change-bins",
        )
    )

    def estimators_page() -> None:
        _clear_kernel_memos()
        _estimators(pred, config)

    t = median_of(estimators_page, repeat=repeat, warmup=0)
    rows.append(
        row(
            f"Estimators page default view, {label}",
            t,
            floor,
            "compare_estimators (binned intervals) + error_versus_bins B = 2…50",
            target="estimators-page",
        )
    )
    waiting = ", ".join(slow_tests(pred, config, DEFAULT_SUITE, 1000, PAGE_ROW_WORK)) or "none"

    def tests_page() -> None:
        _clear_kernel_memos()
        run_tests(pred, config, n_resamples=1000, max_row_work=PAGE_ROW_WORK)

    t = median_of(tests_page, repeat=repeat, warmup=0)
    rows.append(
        row(
            f"Tests page default view, {label}",
            t,
            floor,
            f"run_tests: default suite, 1,000 resamples; waiting for a click: {waiting}",
            target="tests-page",
        )
    )
    return rows


def _consistency_rows(label: str, pred: Predictions, floor_func: Any) -> list[dict[str, Any]]:
    """Consistency resampling with the plug-in and the debiased estimator, 200 resamples."""
    p, y = pred.probs, pred.labels
    floor = median_of(lambda: floor_func(p, y))
    rows = []
    for estimator in ("plugin", "debiased"):
        t = median_of(
            lambda e=estimator: calibration_test(
                p, y, test="consistency", estimator=e, n_resamples=200, seed=0
            ),
        )
        rows.append(
            row(
                f"Consistency test, {estimator}, 200 resamples, {label}",
                t,
                floor,
                "calibration_test(test='consistency'); floor: one-pass EW bincount",
                target="consistency-debiased" if estimator == "debiased" else None,
            )
        )
    return rows


def _compare_rows(label: str, probs: np.ndarray, y: np.ndarray) -> list[dict[str, Any]]:
    """The Compare page's core work on four paired models (temperatures of one model)."""
    logits = np.log(np.clip(probs, 1e-300, None))
    models = {}
    for t in (0.7, 1.0, 1.3, 1.6):
        z = np.exp((logits - logits.max(axis=1, keepdims=True)) / t)
        models[f"T={t}"] = as_predictions((z / z.sum(axis=1, keepdims=True), y))
    rows = []
    for lens, floor_func in (("top-label", _top_label_floor), ("classwise", _classwise_floor)):
        floor = sum(
            median_of(lambda m=m, f=floor_func: f(m.probs, m.labels)) for m in models.values()
        )
        config = AnalysisConfig(lens=lens, estimator="plugin")

        def page(config: AnalysisConfig = config) -> None:
            _clear_kernel_memos()
            compare_models(models, config=config, n_resamples=1000, test=DEFAULT_TEST)

        t = median_of(page, warmup=0)
        rows.append(
            row(
                f"Compare page default view, 4 models × {label}, {lens}",
                t,
                floor,
                "compare_models: default metrics, 1,000 resamples, block test; floor: 4 lens floors",
            )
        )
    return rows


def analyze_child(n: int) -> dict[str, float]:
    """Time one ``analyze`` of ``n`` binary rows in this (fresh) process; its extra peak RSS."""
    pred = as_predictions(_binary(n, np.random.default_rng(0)))
    for m in (1_000, 20_000, 200_000):  # imports and first calls of each bootstrap path
        analyze(as_predictions(_binary(m, np.random.default_rng(1))), AnalysisConfig())
    _clear_kernel_memos()
    warm = [np.ones(10**8) for _ in range(4)]  # memory the guest has touched (docstring)
    del warm
    with open("/proc/self/clear_refs", "w") as refs:  # the peak RSS starts again from now
        refs.write("5")
    before = _status_kb("VmRSS")
    start = time.perf_counter()
    analyze(pred, AnalysisConfig())
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "extra_mb": max(0, _status_kb("VmHWM") - before) / 1000}


def _status_kb(field: str) -> int:
    """A memory figure of this process from ``/proc/self/status``, in kB."""
    with open("/proc/self/status") as status:
        line = next(x for x in status if x.startswith(field + ":"))
    return int(line.split()[1]) * 1024 // 1000


def _analyze_in_child(n: int) -> dict[str, float]:
    code = (
        "import json, sys; from benchmarks.bench_pages import analyze_child; "
        f"print(json.dumps(analyze_child({n})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _linear_rows(quick: bool) -> list[dict[str, Any]]:
    """``analyze`` at 10⁶ and 10⁷ rows (10⁴ and 10⁵ with ``quick``), fresh processes."""
    small, large = (10_000, 100_000) if quick else (1_000_000, 10_000_000)
    repeat = 1 if quick else MIN_REPEATS
    runs = {n: [_analyze_in_child(n) for _ in range(repeat)] for n in (small, large)}
    t_small = statistics.median(r["seconds"] for r in runs[small])
    t_large = statistics.median(r["seconds"] for r in runs[large])
    extra = max(r["extra_mb"] for r in runs[large])
    return [
        row(f"analyze, binary n={small:,}", t_small, None, "fresh process, memos empty"),
        row(
            f"analyze, binary n={large:,}",
            t_large,
            10 * t_small,
            f"floor: 10 × the n={small:,} time; extra peak RSS {extra:.0f} MB",
            target="analyze-linear",
            peak_rss_mb=extra,
        ),
    ]


def run(quick: bool) -> list[dict[str, Any]]:
    """Time the pages' core work; return benchmark rows."""
    rng = np.random.default_rng(20240601)
    _warm_up(rng)
    n_bin, (n_mc, k) = (100_000, (3_000, 10)) if quick else (1_000_000, (200_000, 10))
    repeat = 1 if quick else MIN_REPEATS
    rows: list[dict[str, Any]] = []
    binary = as_predictions(_binary(n_bin, rng))
    rows.extend(
        _page_rows(f"binary n={n_bin:,}", binary, AnalysisConfig(), _top_label_floor, repeat)
    )
    rows.extend(_consistency_rows(f"binary n={n_bin:,}", binary, _top_label_floor))
    multi = as_predictions(_multiclass(n_mc, k, rng))
    size = f"{n_mc:,}×{k}"
    rows.extend(_page_rows(f"top-label {size}", multi, AnalysisConfig(), _top_label_floor, repeat))
    rows.extend(
        _page_rows(
            f"classwise {size}", multi, AnalysisConfig(lens="classwise"), _classwise_floor, repeat
        )
    )
    rows.extend(_linear_rows(quick))
    n_cmp = 3_000 if quick else 100_000
    rows.extend(_compare_rows(f"{n_cmp:,}×{k}", multi.probs[:n_cmp], multi.labels[:n_cmp]))
    return rows
