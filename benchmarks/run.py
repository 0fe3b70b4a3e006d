"""Run every ``benchmarks/bench_*.py`` module and print one table.

Usage: ``python -m benchmarks.run [--quick] [--only NAME]``.
"""

from __future__ import annotations

import argparse
import importlib
import math
import pkgutil
from pathlib import Path

from benchmarks.common import find_peers


def _modules(only: str | None) -> list[str]:
    here = Path(__file__).resolve().parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    return [n for n in names if only is None or only in n]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks and print the table; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--only", help="run only bench modules whose name contains this")
    args = parser.parse_args(argv)
    peers = find_peers()
    print("optional peers:", ", ".join(f"{d} {v or '(not installed)'}" for d, v in peers.items()))
    rows = []
    for name in _modules(args.only):
        module = importlib.import_module(f"benchmarks.{name}")
        print(f"running {name} ...", flush=True)
        rows.extend({"module": name, **r} for r in module.run(args.quick))
    width = max((len(r["name"]) for r in rows), default=10)
    print(f"\n{'benchmark':<{width}}  {'seconds':>10}  {'× floor':>8}  notes")
    for r in rows:
        ratio = "" if math.isnan(r["ratio_to_floor"]) else f"{r['ratio_to_floor']:.2f}"
        print(f"{r['name']:<{width}}  {r['seconds']:>10.4f}  {ratio:>8}  {r['notes']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
