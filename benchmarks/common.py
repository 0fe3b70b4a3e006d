"""Timing helper, optional-peer detection and the targets shared by the benchmark modules."""

from __future__ import annotations

import importlib
import importlib.metadata
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Optional peers: import name -> distribution name on PyPI (the ``bench`` extra).
PEERS: dict[str, str] = {
    "relplot": "relplot",
    "torch": "torch",
    "torchmetrics": "torchmetrics",
    "netcal": "netcal",
    "calibration": "uncertainty-calibration",
    "sklearn": "scikit-learn",
}


@dataclass(frozen=True)
class Target:
    """A performance target: limits on a row's ratio to its floor, its seconds, its memory.

    Attributes
    ----------
    text : str
        How the table states it, e.g. ``"≤150×"``.
    max_ratio : float, optional
        Largest ratio to the floor of the same run.
    max_seconds : float, optional
        Largest wall time on the reference machine (2 cores).
    max_rss_mb : float, optional
        Largest peak resident memory of the process, in MB (10⁶ bytes).
    """

    text: str
    max_ratio: float | None = None
    max_seconds: float | None = None
    max_rss_mb: float | None = None

    def missed(self, result: dict[str, Any]) -> list[str]:
        """The limits a result row misses, e.g. ``["ratio 15.9 > 3"]`` (a missing value misses)."""
        checks = (
            ("ratio", self.max_ratio, result.get("ratio_to_floor"), "{:.3g}"),
            ("seconds", self.max_seconds, result.get("seconds"), "{:.3g}"),
            ("peak RSS MB", self.max_rss_mb, result.get("peak_rss_mb"), "{:.0f}"),
        )
        out = []
        for what, limit, value, fmt in checks:
            if limit is None:
                continue
            if value is None or math.isnan(value):
                out.append(f"{what} not measured")
            elif value > limit:
                out.append(f"{what} {fmt.format(value)} > {limit:g}")
        return out

    def met(self, result: dict[str, Any]) -> bool:
        """Whether a result row satisfies every limit (a missing measurement does not)."""
        return not self.missed(result)


#: Every target of the benchmarks, in one place (ratios to a numpy floor of the same run).
TARGETS: dict[str, Target] = {
    # the Reliability page's first view (analyze without, then with intervals)
    "page-first-view": Target("≤150×, <2 s", max_ratio=150.0, max_seconds=2.0),
    # the same page after the number of bins changes
    "page-change-bins": Target("≤50×", max_ratio=50.0),
    # the Estimators page's default work (table with binned intervals, error against B)
    "estimators-page": Target("<3 s", max_seconds=3.0),
    # the Tests page's default work (every test, a slow one waiting for a click)
    "tests-page": Target("<2 s", max_seconds=2.0),
    # analyze at 10⁷ binary rows against ten times its time at 10⁶ (each in a fresh process,
    # memos empty), with the extra peak memory of the call (issue 29)
    "analyze-linear": Target("≤1.2× linear, <1 GB extra", max_ratio=1.2, max_rss_mb=1000.0),
    # consistency resampling of a seeded Monte Carlo estimator (debiased ℓ1), 200 resamples
    # of 10⁶ rows, against a one-pass 3-bincount floor (issue 29)
    "consistency-debiased": Target("≤150×", max_ratio=150.0),
    # a binned estimator on raw arrays, validation included
    "binned-end-to-end": Target("≤1.5×", max_ratio=1.5),
    # the smooth ECE with its bandwidth search (relplot's smECE is about 28× this floor)
    "smooth-ece": Target("≤10×", max_ratio=10.0),
    # the stream engine on a 10⁸-row binary Parquet dataset
    "stream": Target("≤3×, RSS <1 GB", max_ratio=3.0, max_rss_mb=1000.0),
    # the out-of-core engine against DuckDB's own minimal query of the same exact statistics
    # (equal-width and equal-mass, 15 bins, no resamples), 10⁸ rows (issue 28)
    "stream-duckdb": Target("≤1.5× DuckDB, RSS <1 GB", max_ratio=1.5, max_rss_mb=1000.0),
}


def best_of(func: Callable[[], Any], *, repeat: int = 5, warmup: int = 1) -> float:
    """Return the best wall time in seconds of ``repeat`` calls (after ``warmup`` calls)."""
    for _ in range(warmup):
        func()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def peer_module(name: str) -> Any | None:
    """Import an optional peer, or return None when it is not installed (or broken)."""
    try:
        module = importlib.import_module(name)
    except Exception:  # noqa: BLE001 - a broken optional install counts as absent
        return None
    if name == "calibration" and not hasattr(module, "get_ece"):
        return None  # calibration-belt installs a module of the same name
    return module


def find_peers() -> dict[str, str | None]:
    """Return ``{distribution: version or None}`` for every optional peer."""
    found: dict[str, str | None] = {}
    for module, dist in PEERS.items():
        if peer_module(module) is None:
            found[dist] = None
            continue
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found[dist] = "unknown version"
    return found


def row(
    name: str,
    seconds: float,
    floor: float | None,
    notes: str = "",
    *,
    target: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Return one result row (``ratio_to_floor`` is NaN without a floor).

    Parameters
    ----------
    name : str
        What was timed.
    seconds : float
        Best wall time.
    floor : float, optional
        The floor's time in the same run.
    notes : str
        Shown after the numbers.
    target : str, optional
        A key of :data:`TARGETS`; the row then says whether it is met.
    **extra
        Further measurements a target may read (``peak_rss_mb``).

    Returns
    -------
    dict
        ``name, seconds, ratio_to_floor, notes, target, met`` and ``extra``.
    """
    ratio = seconds / floor if floor else float("nan")
    out: dict[str, Any] = {
        "name": name,
        "seconds": seconds,
        "ratio_to_floor": ratio,
        "notes": notes,
        **extra,
    }
    goal = None if target is None else TARGETS[target]
    out["target"] = "" if goal is None else goal.text
    out["met"] = None if goal is None else goal.met(out)
    out["missed"] = [] if goal is None else goal.missed(out)
    return out
