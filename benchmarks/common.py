"""Timing helper, optional-peer detection and the targets shared by the benchmark modules."""

from __future__ import annotations

import importlib
import importlib.metadata
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
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
    # the 14-network Compare page (with intervals), Report page and `calibscope report` (issue 29)
    "reviews": Target("<10 s", max_seconds=10.0),
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


#: A call this long is not repeated to a median: the row says it was timed once.
LONG_CALL_SECONDS = 20.0

#: Timed calls of every row at least (medians of five; ``--quick`` times each once).
MIN_REPEATS = 5

_SMOKE = {"on": False}


@contextmanager
def smoke() -> Iterator[None]:
    """Time every call once, without warm-up, inside the block (``--quick``: a smoke run)."""
    before = _SMOKE["on"]
    _SMOKE["on"] = True
    try:
        yield
    finally:
        _SMOKE["on"] = before


@dataclass(frozen=True)
class Timing:
    """Wall times of repeated calls of one function.

    Attributes
    ----------
    median : float
        Median wall time in seconds (what a row reports and divides by its floor).
    low, high : float
        Fastest and slowest call.
    repeats : int
        How many calls were timed (after the warm-up).
    """

    median: float
    low: float
    high: float
    repeats: int

    def scaled(self, factor: float) -> Timing:
        """Return the times multiplied by ``factor`` (a part timed for the whole)."""
        return Timing(self.median * factor, self.low * factor, self.high * factor, self.repeats)

    def __mul__(self, factor: float) -> Timing:
        """A part timed for the whole: ``t * resamples / timed``."""
        return self.scaled(factor)

    def __truediv__(self, other: float | Timing) -> Any:
        """By a number: the times scaled; by a timing: the ratio of the medians."""
        if isinstance(other, Timing):
            return self.median / other.median
        return self.scaled(1.0 / other)

    def __radd__(self, other: float) -> Timing:
        """``sum`` of timings starts from 0."""
        if other != 0:
            return NotImplemented
        return self

    def __add__(self, other: Timing) -> Timing:
        """The times of two calls made one after the other (medians, lows, highs added)."""
        return Timing(
            self.median + other.median,
            self.low + other.low,
            self.high + other.high,
            min(self.repeats, other.repeats),
        )


def _timing(times: list[float]) -> Timing:
    return Timing(statistics.median(times), min(times), max(times), len(times))


def round_robin(
    funcs: Sequence[Callable[[], Any]], *, repeat: int = MIN_REPEATS, warmup: int = 1
) -> list[Timing]:
    """Time functions in turn, ``repeat`` rounds of one call each, after ``warmup`` rounds.

    Calling them in turn exposes every function, floor and peers alike, to the same load of a
    shared machine. A function whose warm-up (or, without one, first) call took longer than
    :data:`LONG_CALL_SECONDS` is timed once; its :class:`Timing` says ``repeats=1``.

    Parameters
    ----------
    funcs : sequence of callables
        What to time, each called without arguments.
    repeat : int
        Timed rounds (medians of at least 5 unless a call is long).
    warmup : int
        Untimed rounds first (imports, first allocations, memo fills of the data).

    Returns
    -------
    list of Timing
        One per function, in order.
    """
    if _SMOKE["on"]:
        repeat, warmup = 1, 0
    times: list[list[float]] = [[] for _ in funcs]
    long = [False] * len(funcs)
    for _ in range(warmup):
        for i, func in enumerate(funcs):
            start = time.perf_counter()
            func()
            long[i] = long[i] or time.perf_counter() - start > LONG_CALL_SECONDS
    for _ in range(repeat):
        for i, func in enumerate(funcs):
            if long[i] and times[i]:
                continue
            start = time.perf_counter()
            func()
            took = time.perf_counter() - start
            times[i].append(took)
            long[i] = long[i] or took > LONG_CALL_SECONDS
    return [_timing(t) for t in times]


def median_of(func: Callable[[], Any], *, repeat: int = MIN_REPEATS, warmup: int = 1) -> Timing:
    """Return the :class:`Timing` of ``repeat`` calls of one function (after ``warmup``)."""
    return round_robin([func], repeat=repeat, warmup=warmup)[0]


def seconds_of(value: Timing | float) -> float:
    """Return a row's seconds: a timing's median, or a number as it is."""
    return value.median if isinstance(value, Timing) else float(value)


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
    seconds: Timing | float,
    floor: Timing | float | None,
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
    seconds : Timing or float
        The wall time: a :class:`Timing` (its median is the row's seconds, its fastest and
        slowest call and repeats are shown beside) or seconds measured otherwise (a
        subprocess's own clock, a sum of parts).
    floor : Timing or float, optional
        The floor's time in the same run (its median).
    notes : str
        Shown after the numbers.
    target : str, optional
        A key of :data:`TARGETS`; the row then says whether it is met.
    **extra
        Further measurements a target may read (``peak_rss_mb``).

    Returns
    -------
    dict
        ``name, seconds, low, high, repeats, ratio_to_floor, notes, target, met`` and
        ``extra`` (``low``, ``high`` and ``repeats`` are None for seconds given as a number).
    """
    took = seconds_of(seconds)
    base = None if floor is None else seconds_of(floor)
    ratio = took / base if base else float("nan")
    timing = seconds if isinstance(seconds, Timing) else None
    out: dict[str, Any] = {
        "name": name,
        "seconds": took,
        "low": None if timing is None else timing.low,
        "high": None if timing is None else timing.high,
        "repeats": None if timing is None else timing.repeats,
        "ratio_to_floor": ratio,
        "notes": notes,
        **extra,
    }
    goal = None if target is None else TARGETS[target]
    out["target"] = "" if goal is None else goal.text
    out["met"] = None if goal is None else goal.met(out)
    out["missed"] = [] if goal is None else goal.missed(out)
    return out
