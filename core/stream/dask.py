"""The Dask engine: the passes of a streamed analysis as tasks on a Dask cluster.

:func:`analyze_dask` runs each pass of :mod:`core.stream.analysis` as one task per row group
of a Parquet dataset: a local one (a file, a folder, a glob) resolved as the stream resolves it,
or a remote one (any URL fsspec reads: a file, a folder or a glob), each part in the stream's
order. Every task reads its row group as the stream reads it
(:func:`core.stream.sources.read_row_group`), in batches of ``batch_rows`` rows, so a huge row
group (150 million run-length-encoded rows in a 1 MB file) is never decoded whole, and an error
names the file (its URL, remotely) and the row, in the stream's words. The tasks run the
chunk functions of :mod:`core.stream.stats`, whose statistics are merged by a tree
reduction in partition order. Where a partition starts (in all rows and in each
model's rows) comes from a first pass that counts rows and collects the load facts; so the
numbers are those of the stream engine and of memory. Ties at equal-mass boundaries are
ordered by partition: when a partition holds a tied boundary score, the pass runs again with
the counts of the partitions before it.

Before Dask reads anything, :func:`check_dataset` reads every file's footer and applies the
stream's checks: the column limit of :class:`core.data.limits.LoadLimits`, no extension or
nested column type (:func:`core.data.tables.check_parquet_schema`), and the first part's
columns in every part (:func:`core.stream.sources.check_same_columns`), with the stream's
messages.

Dask is an optional dependency (``pip install calibscope[dask]``); the tasks run on the
client's cluster (:class:`dask.distributed.Client`), or on a local cluster the command line
starts when no scheduler is given.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.analyses.analysis import AnalysisConfig, check_config
from core.base.errors import CalibscopeError, ConfigError, DataError
from core.base.validation import MAX_BATCH_ROWS, check_count
from core.data.limits import LoadLimits
from core.data.sql import as_query
from core.data.tables import unique_names
from core.data.text import text_codes
from core.stream.analysis import check_stream_config, run_analysis
from core.stream.bins import add_seen
from core.stream.load import LoadFacts, LoadOptions, Plan, batch_facts, plan_from, read_rows
from core.stream.sources import (
    BATCH_ROWS,
    Batch,
    Layout,
    Part,
    Parts,
    check_same_columns,
    layout,
    parquet_file,
    read_row_group,
    resolve_parts,
)
from core.stream.stats import ALL_ROWS, Offsets, merge_groups

#: Rows of the first partition the columns are inferred from.
HEAD_ROWS = 100_000
#: Row positions per block of :meth:`DaskRunner.side_by_side` (each block task holds this
#: many rows of every model).
SIDE_BY_SIDE_ROWS = 1_000_000


def _import_dask() -> Any:
    try:
        import dask
        import dask.dataframe  # noqa: F401
    except ImportError:
        raise ConfigError("The Dask engine needs Dask: pip install 'calibscope[dask]'.") from None
    return dask


#: Where a partition's rows come from: the part (a file, or the dataset's partition) and the
#: position of its first row in that part.
Where = tuple[Part, int]


def _batch(frame: Any, offset: int, where: Where) -> Batch:
    part, start = where
    return Batch(part, start, offset, frame)


@dataclass(frozen=True)
class RowGroup:
    """A partition of a local dataset: one row group of a part, which its task reads."""

    part: Part
    group: int


@dataclass(frozen=True)
class Reading:
    """How a task reads its partition: the columns, the layout and the rows per batch."""

    columns: tuple[str, ...]
    layout: Layout
    batch_rows: int


def _batches(src: RowGroup, offset: int, where: Where, reading: Reading) -> Iterator[Batch]:
    """Yield a partition's rows in bounded batches."""
    part, start = where
    for skip, frame in read_row_group(
        src.part, src.group, reading.columns, reading.layout, reading.batch_rows
    ):
        yield Batch(part, start + skip, offset + skip, frame)


def _facts_task(
    src: Any, index: int, offset: int, plan: Plan, where: Where, reading: Reading
) -> tuple[LoadFacts, dict[Any, int]]:
    """Return a partition's load facts and its kept rows: all, and per model."""
    facts = None
    counts: dict[Any, int] = {None: 0, ALL_ROWS: 0}
    col = plan.roles.get("model")
    for batch in _batches(src, offset, where, reading):
        got, _, _, keep = batch_facts(batch, plan)
        facts = got if facts is None else facts + got
        counts[None] += got.n
        counts[ALL_ROWS] += got.n
        if col is not None:
            arr = batch.frame[col].to_numpy(dtype=object)
            codes, uniques = text_codes(arr[keep] if keep is not None else arr)
            for j, n in enumerate(np.bincount(codes, minlength=len(uniques))):
                name = str(uniques[j])
                counts[name] = counts.get(name, 0) + int(n)
    assert facts is not None  # every partition yields a batch, an empty one at least
    return facts, counts


def _run_task(
    src: Any,
    index: int,
    offset: int,
    plan: Plan,
    func: Callable[..., tuple[dict, dict, dict]],
    offsets: Offsets,
    where: Where,
    reading: Reading,
) -> tuple[dict, LoadFacts, dict]:
    """One partition of a pass: its statistics, load facts and tied boundary scores.

    The partition's batches are visited in order as the stream visits them: each starts
    where the one before it ended (:meth:`Offsets.advance`), and their statistics merge.
    """
    stats: dict = {}
    facts = None
    held: dict = {}
    for batch in _batches(src, offset, where, reading):
        got, P, labels, keep = batch_facts(batch, plan, decide=False)
        rows = read_rows(batch, plan, got, P, labels, keep)
        offsets.merged = stats
        more, counts, tied = func(rows, offsets)
        stats = merge_groups(stats, more)
        offsets.advance(counts, tied)
        for key, values in tied.items():
            add_seen(held.setdefault(key, {}), values)
        facts = rows.facts if facts is None else facts + rows.facts
    return stats, facts, held


def _model_pieces(
    src: Any,
    index: int,
    offset: int,
    plan: Plan,
    where: Where,
    reading: Reading,
    models: tuple[str, ...],
    starts: dict[Any, int],
    block: int,
) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    """Cut a partition's rows of each model by block of row positions (in that model's rows).

    Returns ``(model, block) → (probs, labels)`` of the model's rows of the partition whose
    positions fall in the block, in row order.
    """
    probs: dict[str, list[np.ndarray]] = {m: [] for m in models}
    labels: dict[str, list[np.ndarray]] = {m: [] for m in models}
    for batch in _batches(src, offset, where, reading):
        facts, P, y, keep = batch_facts(batch, plan, decide=False)
        rows = read_rows(batch, plan, facts, P, y, keep)
        codes, names = text_codes(rows.roles["model"])
        index = {name: j for j, name in enumerate(names)}
        for model in models:
            mine = codes == index.get(model, -1)
            probs[model].append(rows.probs[mine])
            labels[model].append(rows.labels[mine])
    out: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
    for model in models:
        p, y = np.concatenate(probs[model]), np.concatenate(labels[model])
        first = starts.get(model, 0)
        pos, end = first, first + y.shape[0]
        while pos < end:
            b = pos // block
            stop = min((b + 1) * block, end)
            out[(model, b)] = (p[pos - first : stop - first], y[pos - first : stop - first])
            pos = stop
    return out


def _piece(pieces: dict, key: tuple[str, int]) -> tuple[np.ndarray, np.ndarray]:
    return pieces[key]


def _block_task(
    chunk: Callable[[list[tuple[np.ndarray, np.ndarray]]], Any],
    held: list[list[tuple[np.ndarray, np.ndarray]]],
) -> Any:
    """``chunk`` of one block: each model's pieces joined in partition order."""
    if any(not pieces for pieces in held):  # a model without rows here: not side by side
        return None
    taken = [
        (np.concatenate([p for p, _ in pieces]), np.concatenate([y for _, y in pieces]))
        for pieces in held
    ]
    return chunk(taken)


def _merge_or_none(a: Any, b: Any) -> Any:
    return None if a is None or b is None else a + b


def _second(pair: tuple[Any, Any]) -> Any:
    return pair[1]


def _merge_facts(a: tuple[LoadFacts, Any], b: tuple[LoadFacts, Any]) -> tuple[LoadFacts, Any]:
    return a[0] + b[0], None


def _merge_pass(a: tuple[dict, LoadFacts], b: tuple[dict, LoadFacts]) -> tuple[dict, LoadFacts]:
    return merge_groups(a[0], b[0]), a[1] + b[1]


def _first_two(result: tuple[dict, LoadFacts, dict]) -> tuple[dict, LoadFacts]:
    return result[0], result[1]


def _held(result: tuple[dict, LoadFacts, dict]) -> dict:
    return result[2]


def tree_reduce(items: Sequence[Any], merge: Callable[[Any, Any], Any]) -> Any:
    """Merge delayed values pairwise, keeping their order (``merge(left, right)``)."""
    dask = _import_dask()
    level = list(items)
    while len(level) > 1:
        level = [
            dask.delayed(merge)(level[i], level[i + 1]) if i + 1 < len(level) else level[i]
            for i in range(0, len(level), 2)
        ]
    return level[0]


def check_source(source: Any) -> None:
    """Refuse a source the Dask engine does not read (a SQL query), before a cluster starts.

    Raises
    ------
    ConfigError
        For a :class:`core.data.sql.Query` or DuckDB relation.
    """
    if as_query(source) is not None:
        raise ConfigError(
            "The Dask engine reads Parquet datasets, not SQL queries; run the query in "
            "memory or with the stream engine (--engine stream)."
        )


def check_dataset(
    source: str, limits: LoadLimits
) -> tuple[list[tuple[Part, int, int, int]], Parts]:
    """Check every Parquet footer of a dataset before Dask reads it; return its row groups.

    The same checks as the stream's (:func:`core.data.tables.check_parquet_schema`): the
    column count of ``limits`` and no extension or nested column, read from each file's
    footer only. Local sources resolve as the stream's do (file, folder, glob: each file
    once, in the stream's order); remote ones (``scheme://``) through fsspec.

    Returns
    -------
    groups : list of (Part, int, int, int)
        The dataset's row groups in stream order: the part, the group's index, the
        position of its first row in the part and its rows.
    parts : Parts
        The parts, with the paths left out because they name a part already read.

    Raises
    ------
    DataError
        Naming the file and the column.
    """
    first: list[str] | None = None
    groups: list[tuple[Part, int, int, int]] = []
    if "://" in source:
        parts = Parts([Part(url, "parquet") for url in _remote_files(source)])
        if not parts:
            raise DataError(f"No files match {source!r}. Check the pattern and the folder.")
    else:
        parts = resolve_parts(source)
    for part in parts:
        if part.format != "parquet":
            raise DataError(
                f"{part.name} is not Parquet: the Dask engine reads Parquet datasets "
                "(use the stream engine for CSV)."
            )
        pf = parquet_file(part, limits)
        names = [str(c) for c in pf.schema_arrow.names]
        first = first or names
        check_same_columns(part.name, names, unique_names(first)[0])
        start = 0
        for g in range(pf.metadata.num_row_groups):
            rows = pf.metadata.row_group(g).num_rows
            groups.append((part, g, start, rows))
            start += rows
    return groups, parts


def _remote_files(source: str) -> list[str]:
    """Return the Parquet files of a remote source (a file, folder or glob) as URLs, sorted."""
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(source)
        if any(ch in path for ch in "*?["):
            files = sorted(fs.glob(path))
        elif fs.isdir(path):
            files = sorted(
                f
                for f in fs.find(path)
                if not any(x.startswith((".", "_")) for x in Path(f).relative_to(path).parts)
            )
        else:
            files = [path]
    except Exception as exc:  # fsspec backends raise their own types
        raise DataError(
            f"{source} cannot be listed: {str(exc).strip() or type(exc).__name__}"
        ) from None
    return [fs.unstrip_protocol(f) for f in files]


class DaskRunner:
    """Passes over the partitions of a Parquet dataset on Dask.

    Parameters
    ----------
    source : str
        A Parquet file, folder, glob or fsspec URL.
    load : LoadOptions
        How to read the columns.
    client : dask.distributed.Client, optional
        Where the tasks run (default: Dask's current scheduler).
    progress : callable, optional
        ``progress(fraction, message)`` after each pass.
    batch_rows : int
        Rows a task reads at a time from its row group (a row group larger than this is
        read in batches, as the stream reads it).
    """

    name = "dask"

    def __init__(
        self,
        source: Any,
        load: LoadOptions,
        *,
        client: Any = None,
        progress: Callable[[float, str], Any] | None = None,
        batch_rows: int = BATCH_ROWS,
    ) -> None:
        check_source(source)
        _import_dask()
        self.source = str(source)
        self.load = load
        self.batch_rows = check_count("batch_rows", batch_rows, MAX_BATCH_ROWS)
        self.client = client
        self.progress = progress
        self.limits = LoadLimits.from_env()
        # a local dataset: one partition per row group, read as the stream reads it, so the
        # rows come in the stream's order and an error names the file and the row
        self.groups, parts = check_dataset(self.source, self.limits)
        self.layout = layout(parts, self.limits)
        self.passes = 0
        self._final: Plan | None = None
        self._offsets: list[int] = []
        self._starts: list[dict[Any, int]] = []
        self._totals: dict[Any, int] = {}
        self._facts: LoadFacts | None = None

    def _partitions(self, columns: Sequence[str]) -> list[Any]:
        """Return the dataset's partitions of ``columns`` in stream order.

        Each is a row group of a part, which its task reads in batches.
        """
        return [RowGroup(part, g) for part, g, _, _ in self.groups]

    def _reading(self, plan: Plan) -> Reading:
        return Reading(tuple(plan.columns), self.layout, self.batch_rows)

    def _where(self, index: int) -> Where:
        """Where partition ``index``'s rows come from: a file and its first row there."""
        part, _, start, _ = self.groups[index]
        return part, start

    @property
    def part_names(self) -> tuple[str, ...]:
        """The dataset as given."""
        return (self.source,)

    def _compute(self, *values: Any) -> Any:
        dask = _import_dask()
        try:
            if self.client is not None:
                return self.client.compute(list(values), sync=True)
            return dask.compute(*values)
        except CalibscopeError:
            raise
        except Exception as exc:
            if not worker_died(exc):
                raise
            raise DataError(
                f"A Dask worker died during a pass over {self.source} ({type(exc).__name__}): "
                "most often one partition needs more memory than a worker has. Write the "
                "parts with smaller row groups, give the workers more memory, or use "
                "--engine stream."
            ) from None

    def plan(self) -> Plan:
        """Infer the columns from the first rows (the first partition's, at most HEAD_ROWS)."""
        head = next(
            (
                next(read_row_group(part, g, self.layout.columns, self.layout, HEAD_ROWS))[1]
                for part, g, _, rows in self.groups
                if rows
            ),
            None,
        )
        if head is None or head.shape[0] == 0:
            raise DataError(f"{self.source} has no data rows.")
        return plan_from(_batch(head, 0, self._where(0)), self.layout, self.load, self.source)

    def _decide(self, plan: Plan) -> Plan:
        """Count the rows of each partition, merge the load facts, decide the plan."""
        dask = _import_dask()
        parts = self._partitions(plan.columns)
        lengths = [rows for *_, rows in self.groups]  # the footers count them
        self._offsets = [int(x) for x in np.concatenate([[0], np.cumsum(lengths)[:-1]])]
        reading = self._reading(plan)
        tasks = [
            dask.delayed(_facts_task)(p, i, off, plan, self._where(i), reading)
            for i, (p, off) in enumerate(zip(parts, self._offsets, strict=True))
        ]
        counts = [dask.delayed(_second)(t) for t in tasks]
        facts = tree_reduce(tasks, _merge_facts)
        (merged, _), per_part = self._compute(facts, counts)
        self.passes += 1
        if merged.n == 0:
            raise DataError(f"{self.source} has no data rows.")
        self._starts = []
        running: dict[Any, int] = {}
        for c in per_part:
            self._starts.append(dict(running))
            for key, n in c.items():
                running[key] = running.get(key, 0) + n
        self._totals = running
        self._final = plan.decided(merged)
        return self._final

    def side_by_side(
        self,
        plan: Plan,
        models: Sequence[str],
        n: int,
        chunk: Callable[[list[tuple[np.ndarray, np.ndarray]]], Any],
    ) -> Any:
        """Merge ``chunk`` over aligned blocks of the models' rows (row positions side by side).

        The rows at positions ``[b·L, (b + 1)·L)`` of every model (``L`` =
        :data:`SIDE_BY_SIDE_ROWS`) are gathered from the partitions that hold them into one
        task, which returns ``chunk([(probs, labels) per model])``; the blocks' results
        merge by ``+`` in block order (None, a block whose models' rows differ, makes the
        whole None). The models' rows move between workers: this pass is a shuffle.

        Parameters
        ----------
        plan : Plan
            The decided plan (after a pass).
        models : sequence of str
            Models of the model column, each with ``n`` rows.
        n : int
            Rows of each model.
        chunk : callable
            Of the models' rows at the same positions (the joint cells of a comparison).

        Returns
        -------
        object
            The merged results of the blocks (None when there are no rows).
        """
        dask = _import_dask()
        models = tuple(models)
        block = SIDE_BY_SIDE_ROWS
        parts = self._partitions(plan.columns)
        ends = [*self._starts[1:], self._totals]
        tasks = [
            dask.delayed(_model_pieces)(
                p, i, off, plan, self._where(i), self._reading(plan), models, start, block
            )
            for i, (p, off, start) in enumerate(
                zip(parts, self._offsets, self._starts, strict=True)
            )
        ]
        results = []
        for b in range(-(-n // block)):
            lo, hi = b * block, min((b + 1) * block, n)
            held = []
            for m in models:
                held.append(
                    [
                        dask.delayed(_piece)(task, (m, b))
                        for task, start, end in zip(tasks, self._starts, ends, strict=True)
                        if start.get(m, 0) < hi and end.get(m, 0) > lo
                    ]
                )
            results.append(dask.delayed(_block_task)(chunk, held))
        if not results:
            return None
        (merged,) = self._compute(tree_reduce(results, _merge_or_none))
        self.passes += 1
        if self.progress is not None:
            self.progress(1.0, f"pass {self.passes}: {len(models)} models side by side")
        return merged

    def run(
        self, plan: Plan, func: Callable[..., tuple[dict, dict, dict]], what: str
    ) -> tuple[Plan, LoadFacts, dict]:
        """One pass over every partition (after the counting pass the first time)."""
        dask = _import_dask()
        if self._final is None:
            plan = self._decide(plan)
        plan = self._final
        parts = self._partitions(plan.columns)
        seen: list[dict] = [{} for _ in parts]
        while True:
            tasks = [
                dask.delayed(_run_task)(
                    p,
                    i,
                    off,
                    plan,
                    func,
                    Offsets(dict(start), seen[i]),
                    self._where(i),
                    self._reading(plan),
                )
                for i, (p, off, start) in enumerate(
                    zip(parts, self._offsets, self._starts, strict=True)
                )
            ]
            merged = tree_reduce([dask.delayed(_first_two)(t) for t in tasks], _merge_pass)
            helds = [dask.delayed(_held)(t) for t in tasks]
            (stats, facts), held = self._compute(merged, helds)
            self.passes += 1
            if self.progress is not None:
                self.progress(1.0, f"pass {self.passes}: {what}")
            wanted = _seen_before(held)
            if all(w == s for w, s in zip(wanted, seen, strict=True)):
                return plan, facts, stats
            seen = wanted  # tied boundary scores: again, with the counts of earlier partitions


def _seen_before(held: Sequence[dict]) -> list[dict]:
    """For each partition, the tied boundary scores held by the partitions before it."""
    out: list[dict] = []
    running: dict = {}
    for h in held:
        out.append({key: dict(values) for key, values in running.items()})
        for key, values in h.items():
            mine = running.setdefault(key, {})
            for v, c in values.items():
                mine[v] = mine.get(v, 0) + c
    return out


def worker_died(exc: BaseException) -> bool:
    """Whether ``exc`` says a worker died or ran out of memory (not an error of the rows)."""
    if isinstance(exc, MemoryError):
        return True
    try:
        from distributed import KilledWorker
        from distributed.comm.core import CommClosedError
    except ImportError:
        return False
    return isinstance(exc, (KilledWorker, CommClosedError))


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, *, workers: int = 2) -> Iterator[Any]:
    """Yield a Dask client of the scheduler at ``scheduler``, else of a new local cluster.

    Parameters
    ----------
    scheduler : str, optional
        A scheduler address such as ``tcp://host:8786``.
    workers : int, default=2
        Worker processes of the local cluster.

    Yields
    ------
    dask.distributed.Client
        Closed (with its local cluster) on exit.
    """
    _import_dask()
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ConfigError(
            "The Dask engine needs dask.distributed: pip install 'calibscope[dask]'."
        ) from None
    if scheduler:
        try:
            client = Client(scheduler, timeout=10)
        except (OSError, TimeoutError) as exc:
            raise ConfigError(f"No Dask scheduler answers at {scheduler} ({exc}).") from None
        with client:
            yield client
        return
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            # the cluster's own log lines are not the command's: a failure is one line
            silence_logs=logging.CRITICAL,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def analyze_dask(
    source: Any,
    config: AnalysisConfig | None = None,
    *,
    client: Any = None,
    load: LoadOptions | None = None,
    split_models: bool = True,
    model: str | None = None,
    progress: Callable[[float, str], Any] | None = None,
    batch_rows: int = BATCH_ROWS,
) -> Any:
    """Analyse a Parquet dataset on Dask: the numbers of :func:`core.analyze_stream`.

    Parameters
    ----------
    source : str
        A Parquet file, folder, glob or fsspec URL.
    config : AnalysisConfig, optional
        The options (as for :func:`core.stream.analysis.analyze_stream`).
    client : dask.distributed.Client, optional
        The cluster to run on (default: Dask's current scheduler).
    load, split_models, model, progress
        As for :func:`core.stream.analysis.analyze_stream`.
    batch_rows : int
        Rows a task reads at a time from its row group.

    Returns
    -------
    core.stream.analysis.StreamAnalysis
        The input and one analysis per model.
    """
    config = check_config(config)
    check_stream_config(config)
    runner = DaskRunner(
        source, load or LoadOptions(), client=client, progress=progress, batch_rows=batch_rows
    )
    return run_analysis(runner, config, split_models=split_models, model=model)
