"""Peak memory of the function-level paths (tracemalloc), against a one-pass numpy floor."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import numpy as np
import pytest

import core


def _peak(fn: Callable[[], object]) -> int:
    """Bytes allocated at the peak of a call, beyond what was held before it."""
    fn()  # imports, registries and caches are not the call's
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        if not tracing:
            tracemalloc.stop()


def _binary(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    p = rng.random(n)
    return p, (rng.random(n) < p).astype(np.int64)


def _bincount_floor(p: np.ndarray, y: np.ndarray, n_bins: int = 15) -> None:
    k = np.minimum((p * n_bins).astype(np.intp), n_bins - 1)
    np.bincount(k, minlength=n_bins)
    np.bincount(k, weights=p, minlength=n_bins)
    np.bincount(k, weights=y, minlength=n_bins)


@pytest.mark.parametrize(
    "settings",
    [
        {"lens": "binary"},
        {"lens": "binary", "binning": "equal-mass"},
        {"lens": "binary", "binning": "equal-mass", "tie_policy": "keep"},
        {"lens": "top-label"},
    ],
)
def test_binary_calibration_error_stays_near_a_one_pass_floor(settings):
    # 10⁶ rows: the floor holds a bin index and a product (16 MB); the (n, 2) matrix, a
    # float copy of the labels and full-length masks held 2.6-3.5× that
    p, y = _binary(1_000_000)
    floor = _peak(lambda: _bincount_floor(p, y))
    used = _peak(lambda: core.calibration_error(p, y, **settings))
    assert used <= 1.5 * floor, (used / 1e6, floor / 1e6)


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_classwise_calibration_error_holds_no_copy_of_the_matrix(binning):
    # 20,000 × 200: column copies and float one-hot outcomes held twice the matrix again
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(20_000, 200))
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = rng.integers(0, 200, 20_000)
    used = _peak(lambda: core.calibration_error(p, y, lens="classwise", binning=binning))
    assert used <= 1.5 * p.nbytes, (used / 1e6, p.nbytes / 1e6)


def test_as_predictions_makes_the_matrix_once():
    p, y = _binary(1_000_000)
    pred = core.as_predictions((p, y))
    held = pred.probs.nbytes + pred.labels.nbytes
    assert _peak(lambda: core.as_predictions((p, y))) <= 1.5 * held


def _fresh_analyze(pred: object) -> None:
    """``analyze`` as on a fresh upload: the memos of earlier calls forgotten."""
    from core.analyses import analysis
    from core.base.memo import ORDERS
    from core.estimators import kernel as kern
    from core.inference import bootstrap

    for memo in (
        analysis._POINTS, analysis._UNBINNED, ORDERS, kern._SUM_CACHE, kern._MEDIAN_CACHE,
        bootstrap.DISTRIBUTIONS,
    ):  # fmt: skip
        memo.clear()
    core.analyze(pred, core.AnalysisConfig(lens="binary"))


def test_analyze_holds_a_few_arrays_of_the_rows_at_once():
    # 10⁶ binary rows, default options (the cell bootstrap): mcb's discrete bins let go
    # once read, its fit in place, the three scores' rows not held together — 17 arrays
    # of n float64 at the peak before, 11 now (at 10⁷: 15 before, 6 now)
    pred = core.as_predictions(_binary(1_000_000))
    used = _peak(lambda: _fresh_analyze(pred))
    assert used <= 12 * 8 * pred.n, used / 1e6
