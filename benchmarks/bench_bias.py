"""Bias-vs-n runner: the default run (7 sizes 200…12,800, 1,000 replicates, 6 binned estimators).

Floor: drawing the datasets and one stable sort of every (replicate, n) prefix, the least
work any exact equal-mass estimator needs. Also timed: the same run farmed out to two
joblib workers (identical results by construction), and the naive path of one registry
call per dataset and estimator, extrapolated from a few replicates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.common import median_of, row
from core.bias import DEFAULT_NS, default_estimators, draw_replicate, simulate_estimates
from core.inference.calibration import calibration_error
from core.worlds import PRESET_WORLDS


def _floor(world: Any, n_resamples: int) -> None:
    for r in range(n_resamples):
        s, _ = draw_replicate(world, DEFAULT_NS[-1], 0, r)
        for n in DEFAULT_NS:
            np.argsort(s[:n], kind="stable")


def _joblib_map(n_jobs: int) -> Any:
    try:
        from joblib import Parallel, delayed
    except ImportError:
        return None

    def mapper(func: Any, ranges: Any) -> Any:
        return Parallel(n_jobs=n_jobs)(delayed(func)(ab) for ab in ranges)

    return mapper


def run(quick: bool) -> list[dict[str, Any]]:
    """Time the bias-vs-n runner; return benchmark rows."""
    reps = 100 if quick else 1000
    specs = default_estimators()
    rows = []
    for name in ("resnet110_c10", "roelofs-fig14"):
        world = PRESET_WORLDS[name]
        t_floor = median_of(lambda world=world: _floor(world, reps), warmup=0)
        res: dict[str, Any] = {}

        def call(world=world, res=res, map_chunks=None) -> None:
            res["out"] = simulate_estimates(
                specs, world, ns=DEFAULT_NS, n_resamples=reps, seed=0, map_chunks=map_chunks
            )

        size = f"{reps:,} replicates × 7 sizes × 6 estimators"
        rows.append(row(f"bias floor ({name})", t_floor, t_floor, "draw + sort every prefix"))
        rows.append(row(f"bias_vs_n default ({name})", median_of(call, warmup=0), t_floor, size))
        mapper = _joblib_map(2)
        if mapper is not None:
            single = res["out"].values
            seconds = median_of(lambda m=mapper: call(map_chunks=m), warmup=0)
            same = np.array_equal(single, res["out"].values)
            rows.append(
                row(f"bias_vs_n 2 joblib workers ({name})", seconds, t_floor, f"identical: {same}")
            )
        few = 5 if quick else 20

        def naive(world=world, few=few) -> None:
            for r in range(few):
                s, y = draw_replicate(world, DEFAULT_NS[-1], 0, r)
                for n in DEFAULT_NS:
                    for spec in specs:
                        calibration_error(
                            s[:n], y[:n].astype(np.int64), lens="binary", norm=2,
                            estimator=spec.estimator, binning=spec.binning, n_bins=spec.n_bins,
                        )  # fmt: skip

        t_naive = median_of(naive, warmup=0) * reps / few
        rows.append(
            row(
                f"per-dataset registry calls ({name})",
                t_naive,
                t_floor,
                f"extrapolated from {few} replicates",
            )
        )
    return rows
