"""Timing helper and optional-peer detection shared by the benchmark modules."""

from __future__ import annotations

import importlib
import importlib.metadata
import time
from collections.abc import Callable
from typing import Any

#: Optional peers: import name -> distribution name on PyPI.
PEERS: dict[str, str] = {
    "relplot": "relplot",
    "torchmetrics": "torchmetrics",
    "netcal": "netcal",
    "calibration": "uncertainty-calibration",
    "sklearn": "scikit-learn",
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


def row(name: str, seconds: float, floor: float | None, notes: str = "") -> dict[str, Any]:
    """Return one result row (``ratio_to_floor`` is NaN without a floor)."""
    ratio = seconds / floor if floor else float("nan")
    return {"name": name, "seconds": seconds, "ratio_to_floor": ratio, "notes": notes}
