"""Vectorised bootstrap against a floor of one ``bincount`` per resample on pre-drawn indices.

Setting: 1,000 resamples of 100,000 binary predictions (``--quick``: 100 × 10,000), 15 bins.
The floor draws every resample's row indices beforehand and times only
``np.bincount(bin_of_row[idx_r], minlength=15)`` for each resample: the least work any
bootstrap of a binned estimator does (it yields the counts, not yet the score and label sums).
The bootstrap timings include drawing the indices, all three bin statistics, the
estimator and the percentile interval. The sweep and the ℓ1 debiased estimator are also
timed as callables evaluated once per resample (a twentieth of the resamples; the ratio is
against the floor scaled to as many), which is what their vectorised paths replace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import MIN_REPEATS, median_of, row
from core.inference.bootstrap import DISTRIBUTIONS, bootstrap_interval
from core.inference.calibration import calibration_error
from core.stats.consistency_bands import consistency_band

B = 15


def _data(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    s = rng.beta(2.0, 1.0, n)
    return s, (rng.random(n) < s**1.3).astype(np.int64)


def _per_resample(estimator: str, binning: str = "equal-width") -> Callable[..., float]:
    """The estimator as a callable, which the bootstrap calls once per resample."""

    def statistic(p: np.ndarray, y: np.ndarray) -> float:
        return calibration_error(
            p, y, estimator=estimator, lens="binary", binning=binning, n_bins=B, norm=1
        ).value

    statistic.__name__ = f"{estimator} per resample"
    return statistic


def run(quick: bool) -> list[dict[str, Any]]:
    """Time the bootstrap paths; return benchmark rows."""
    n, r = (10_000, 100) if quick else (100_000, 1_000)
    repeat = 1 if quick else MIN_REPEATS
    s, y = _data(n)
    bin_of_row = np.minimum((s * B).astype(np.intp), B - 1)
    idx = np.random.default_rng(1).integers(0, n, size=(r, n))

    def floor() -> None:
        for i in range(r):
            np.bincount(bin_of_row[idx[i]], minlength=B)

    t_floor = median_of(floor, repeat=repeat, warmup=0)
    size = f"{r:,} resamples × {n:,} rows"
    rows = [row(f"bootstrap floor: {r:,} bincounts", t_floor, t_floor, size)]
    cases = [
        ("plugin ℓ1 equal-width", "plugin", {}, r),
        ("plugin ℓ1 equal-mass", "plugin", {"binning": "equal-mass"}, r),
        ("debiased ℓ2 equal-width", "debiased", {"norm": 2}, r),
        ("Brier score", "brier", {}, r),
        ("label-binned ℓ1 equal-width", "label-binned", {}, r),
        ("sweep ℓ1 equal-mass", "sweep", {"binning": "equal-mass"}, r),
        ("sweep ℓ1 equal-width", "sweep", {"binning": "equal-width"}, r),
        ("debiased ℓ1 equal-width", "debiased", {"norm": 1}, r),
        ("debiased ℓ1 equal-mass", "debiased", {"norm": 1, "binning": "equal-mass"}, r),
        # the same statistics called once per resample, for the speed-up of the paths above
        ("sweep ℓ1 equal-mass, per resample", _per_resample("sweep", "equal-mass"), {}, r // 20),
        ("debiased ℓ1 equal-width, per resample", _per_resample("debiased"), {}, r // 20),
    ]
    for label, statistic, opts, resamples in cases:
        if isinstance(statistic, str) and statistic != "brier":
            opts = {"lens": "binary", "n_bins": B, **opts}
        elif callable(statistic):
            opts = {"resample_order": "rows"}  # as binned estimators see their resamples
        result: dict[str, Any] = {}

        def call(statistic=statistic, opts=opts, resamples=resamples, result=result) -> None:
            DISTRIBUTIONS.clear()  # the memo would answer every repeat after the first
            result["res"] = bootstrap_interval(
                s, y, statistic=statistic, n_resamples=resamples, seed=0, **opts
            )

        seconds = median_of(call, repeat=repeat, warmup=0)
        res = result["res"]
        note = f"path {res.path}; {resamples:,} resamples"
        if resamples != r:
            note += f"; ratio against the floor scaled to {resamples:,} resamples"
        rows.append(row(f"bootstrap {label}", seconds, t_floor * resamples / r, note))
    rows.append(_band_row(quick, repeat))
    return rows


def _band_row(quick: bool, repeat: int) -> dict[str, Any]:
    """Consistency band of 15 equal-width bins against drawing every outcome.

    The floor is what redrawing the labels row by row costs: ``R`` times one
    ``random(n) < s`` and one ``bincount``, timed on ten resamples and scaled.
    """
    n, r = (100_000, 1_000) if quick else (1_000_000, 1_000)
    s, _y = _data(n)
    bin_of_row = np.minimum((s * B).astype(np.intp), B - 1)
    rng = np.random.default_rng(0)

    def ten_resamples() -> None:
        for _ in range(10):
            np.bincount(bin_of_row, weights=rng.random(n) < s, minlength=B)

    floor = median_of(ten_resamples, repeat=repeat, warmup=0) * r / 10
    result: dict[str, Any] = {}

    def call() -> None:
        result["band"] = consistency_band(s, n_bins=B, n_resamples=r, seed=0)

    seconds = median_of(call, repeat=repeat, warmup=1)
    return row(
        f"consistency band {r:,} resamples × {n:,} rows",
        seconds,
        floor,
        f"path {result['band'].method}; floor = {r:,} Bernoulli redraws of every row",
    )
