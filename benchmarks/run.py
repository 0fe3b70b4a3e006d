"""Run every ``benchmarks/bench_*.py`` module and print one table.

Usage: ``python -m benchmarks.run [--quick] [--only NAME] [--json FILE]``.

Each row's seconds are the median of at least five calls made in turn with its floor and
peers (``benchmarks.common.round_robin``), shown with the fastest and slowest call. Rows with a target (``benchmarks.common.TARGETS``) say whether it is met; a missed target
is reported, never an error: the exit code is 0 whatever the timings.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import math
import pkgutil
from pathlib import Path
from typing import Any

from benchmarks.common import find_peers, row, smoke


def _modules(only: str | None) -> list[str]:
    here = Path(__file__).resolve().parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    return [n for n in names if only is None or only in n]


def _verdict(r: dict[str, Any]) -> str:
    if r.get("met") is None:
        return ""
    return "met" if r["met"] else "NOT met"


def spread(r: dict[str, Any]) -> str:
    """Return a row's fastest and slowest call and its repeats, e.g. ``0.31–0.36 ×5``."""
    if r.get("repeats") is None:
        return ""
    if r["repeats"] == 1:
        return "once"
    return f"{r['low']:.4g}–{r['high']:.4g} ×{r['repeats']}"


def print_table(rows: list[dict[str, Any]]) -> None:
    """Print the rows: median seconds, fastest–slowest, ratio to the floor, target, notes."""
    width = max((len(r["name"]) for r in rows), default=10)
    tw = max((len(r.get("target", "")) for r in rows), default=6)
    sw = max((len(spread(r)) for r in rows), default=8)
    print(
        f"\n{'benchmark':<{width}}  {'median s':>10}  {'min–max':<{sw}}  {'× floor':>8}  "
        f"{'target':<{tw}}  {'':<7}  notes"
    )
    for r in rows:
        ratio = "" if math.isnan(r["ratio_to_floor"]) else f"{r['ratio_to_floor']:.2f}"
        seconds = "" if math.isnan(r["seconds"]) else f"{r['seconds']:.4f}"
        print(
            f"{r['name']:<{width}}  {seconds:>10}  {spread(r):<{sw}}  {ratio:>8}  "
            f"{r.get('target', ''):<{tw}}  {_verdict(r):<7}  {r['notes']}"
        )
    targeted = [r for r in rows if r.get("met") is not None]
    if targeted:
        missed = [r for r in targeted if not r["met"]]
        print(f"\ntargets: {len(targeted) - len(missed)} of {len(targeted)} met")
        for r in missed:
            print(f"  NOT met: {r['name']} ({'; '.join(r['missed'])}; target {r['target']})")


def _run_modules(only: str | None, quick: bool) -> list[dict[str, Any]]:
    rows = []
    for name in _modules(only):
        module = importlib.import_module(f"benchmarks.{name}")
        print(f"running {name} ...", flush=True)
        try:
            rows.extend({"module": name, **r} for r in module.run(quick))
        except Exception as exc:  # noqa: BLE001 - one broken module must not lose the others
            print(f"{name} failed: {type(exc).__name__}: {exc}", flush=True)
            failed = row(f"{name} failed", float("nan"), None, f"{type(exc).__name__}: {exc}")
            rows.append({"module": name, **failed})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks and print the table; return the exit code (0)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--only", help="run only bench modules whose name contains this")
    parser.add_argument("--json", metavar="FILE", help="also write the rows to FILE as JSON")
    args = parser.parse_args(argv)
    peers = find_peers()
    print("optional peers:", ", ".join(f"{d} {v or '(not installed)'}" for d, v in peers.items()))
    with smoke() if args.quick else contextlib.nullcontext():
        rows = _run_modules(args.only, args.quick)
    if args.quick:
        # the targets are stated at the full sizes, where fixed costs no longer dominate
        for r in rows:
            r["met"] = None
    print_table(rows)
    if args.quick:
        print("--quick: targets are stated for the full sizes and not judged here")
    if args.json:
        record = {"quick": args.quick, "peers": peers, "rows": rows}
        Path(args.json).write_text(json.dumps(record, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
