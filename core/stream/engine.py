"""The stream engine: every pass reads the parts' batches in order on this machine.

A runner makes the passes :mod:`core.stream.analysis` asks for, each a function of
:mod:`core.stream.stats` applied to every chunk of rows with its offsets and merged by ``+``;
this one reads batches in order (:func:`core.stream.load.read_stream`), keeping the offsets as
it goes. :mod:`core.stream.dask` runs the same functions on Dask partitions.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.base.progress import Progress
from core.base.validation import MAX_BATCH_ROWS, check_count
from core.data.limits import LoadLimits
from core.stream.load import LoadFacts, LoadOptions, Plan, Rows, plan_from, read_stream
from core.stream.sources import (
    BATCH_ROWS,
    count_rows,
    layout,
    read_batches,
    resolve_parts,
)
from core.stream.stats import Offsets, merge_groups


class StreamRunner:
    """Passes over local files, batch after batch.

    Parameters
    ----------
    source : str, path or sequence of them
        A file, a folder, a glob or a list of files.
    load : LoadOptions
        How to read the columns.
    batch_rows : int
        Rows per batch.
    progress : callable, optional
        ``progress(fraction, message)`` during each pass.
    limits : LoadLimits, optional
        Columns and gzip expansion allowed (default :meth:`LoadLimits.from_env`).
    """

    name = "stream"

    def __init__(
        self,
        source: Any,
        load: LoadOptions,
        *,
        batch_rows: int = BATCH_ROWS,
        progress: Progress | None = None,
        limits: LoadLimits | None = None,
    ) -> None:
        self.load = load
        self.parts = resolve_parts(source)
        # one file is named as the in-memory loader names it; parts by the source as given
        single = len(self.parts) == 1 and self.parts[0].path == str(source)
        if self.parts.result is not None:
            self.source = self.parts[0].name
        else:
            self.source = Path(str(source)).name if single else str(source)
        self.layout = layout(self.parts, limits)
        self.batch_rows = check_count("batch_rows", batch_rows, MAX_BATCH_ROWS)
        self.progress = progress
        self.passes = 0
        self.total = (
            sum(count_rows(self.parts, self.layout)) if self.parts[0].format == "parquet" else None
        )

    def __enter__(self) -> StreamRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove what the runner made: a SQL query's result (its scratch folder)."""
        if self.parts.result is not None:
            self.parts.result.folder.cleanup()

    @property
    def part_names(self) -> tuple[str, ...]:
        """The files, in row order."""
        return tuple(p.name for p in self.parts)

    def plan(self) -> Plan:
        """Infer the columns from the first batch."""
        first = next(
            read_batches(self.parts, self.layout, self.layout.columns, batch_rows=self.batch_rows)
        )
        return plan_from(first, self.layout, self.load, self.source)

    def run(
        self, plan: Plan, func: Callable[[Rows, Offsets], tuple[dict, dict, dict]], what: str
    ) -> tuple[Plan, LoadFacts, dict]:
        """One pass: ``func(rows, offsets) -> (stats, rows per model, tied scores)`` per batch.

        Returns the plan of all rows, their load facts and the merged statistics.
        """
        self.passes += 1
        state: dict[str, Any] = {}

        def start() -> dict[str, Any]:
            state.update(stats={}, offsets=Offsets(), done=0)
            return state

        def visit(st: dict[str, Any], rows: Rows) -> None:
            st["offsets"].merged = st["stats"]
            stats, counts, held = func(rows, st["offsets"])
            st["stats"] = merge_groups(st["stats"], stats)
            st["offsets"].advance(counts, held)
            st["done"] += rows.labels.shape[0]
            if self.progress is not None:
                frac = min(st["done"] / self.total, 1.0) if self.total else 0.0
                self.progress(frac, f"pass {self.passes}: {what} ({st['done']:,} rows)")

        plan, facts, st = read_stream(
            self.parts, self.layout, plan, start, visit, batch_rows=self.batch_rows
        )
        return plan, facts, st["stats"]
