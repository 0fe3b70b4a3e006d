"""End to end at scale: ``calibscope metrics`` on files, the stream engine and the Dask engine.

Every command runs in its own Python process (``python -m core.cli metrics ... --json``, the
JSON discarded), started from this checkout, so its time is what a user waits for: the
interpreter, the imports, reading the file and the analysis with the defaults (top-label
lens for a binary file means ``binary``: 15 equal-width bins, 1,000 resamples). The peak
resident memory of that process is its ``VmHWM`` at exit (Linux ``/proc``). The floor of each row is another
process that reads the same file with pyarrow alone (``pyarrow.parquet.read_table``,
``pyarrow.csv.read_csv``, or a batch-by-batch ``pyarrow.dataset`` scan of the same columns
for a dataset of parts), interpreter start included.

Data are generated here, seeded (``numpy.random.default_rng(SEED)``), in chunks of at most
2·10⁶ rows so generation stays bounded in memory, into a temporary folder removed at the
end: one binary score column (float64, ``score``) and an int8 ``label`` column.

- ``metrics`` (memory engine) on single files of 10⁶ and 10⁷ rows, Parquet and CSV.
- Stream: a 10⁸-row dataset of 50 Parquet parts (0.9 GB) read by ``--engine stream``
  (batches of 10⁶ rows); target ``stream`` of :data:`benchmarks.common.TARGETS` (within 3× of
  the pyarrow scan, peak RSS under 1 GB).
- Dask: ``--engine dask`` with the local cluster the command starts (2 worker processes, one
  thread each; their start is included) on the first 10⁷ rows (5 parts), beside the stream
  engine and the pyarrow scan of the same parts. Its peak RSS is the client's only.
- DuckDB: its own minimal query of the same exact statistics (equal-width: one ``GROUP BY``;
  equal-mass: a 2¹⁶-bucket histogram, the rows of the boundary buckets, then the cells), in
  the same run, beside ``--engine stream --resamples 0`` with each binning: target
  ``stream-duckdb`` (within 1.5×, peak RSS under 1 GB; issue 28).
- Reference: the least numpy work of the exact statistics a stream must give (two scans,
  the cells' sums, the label-binned distances: ``_STREAM_FLOOR``), against the same scan.
- Compiled reference: the same statistics, each pass one fused compiled loop
  (:mod:`benchmarks.stream_compiled`, numba from the bench extra; left out without it): what
  compiled kernels would cost the statistics of a stream.
- Load path: the stream engine's two reads with their conversion, checks, label facts, digest
  and lint, and no statistic (``_LOAD_PATH``): what the engine costs before it bins or sums a
  row, whatever computes its statistics.
- Phases: the stream engine once more, in a process that times its imports, each pass and
  the analysis after the last pass (the breakdown of the stream's time).

``--quick``: 10⁵-row files and a 10⁶-row dataset (Dask on all of it).
"""

from __future__ import annotations

import importlib.util
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from benchmarks.common import row

ROOT = Path(__file__).resolve().parents[1]
SEED = 20240601
#: Rows generated at once (and rows per Parquet row group).
CHUNK = 1_000_000
#: Rows per part of the streamed dataset.
PART_ROWS = 2_000_000

_READ_PARQUET = "import sys, pyarrow.parquet as pq; pq.read_table(sys.argv[1])"
_READ_CSV = "import sys, pyarrow.csv as pc; pc.read_csv(sys.argv[1])"
#: The stream engine in process, timing its phases: imports, each pass (from the end of the
#: previous one to its last batch, by the progress messages) and the analysis after the last
#: pass (estimators, intervals). Prints ``phase<TAB>seconds`` lines.
_PASSES = """
import sys, time
t0 = time.perf_counter()
from core.analyses.analysis import AnalysisConfig
from core.stream.analysis import analyze_stream
t1 = time.perf_counter()
last = {}
def progress(fraction, message):
    last[message.split(' (')[0]] = time.perf_counter()
analyze_stream(sys.argv[1], AnalysisConfig(lens='binary'), progress=progress)
end = time.perf_counter()
print(f'imports\t{t1 - t0}')
start = t1
for what, at in last.items():
    print(f'{what}\t{at - start}')
    start = at
print(f'analysis after the passes\t{end - start}')
"""
#: DuckDB's own minimal query of the exact equal-width statistics the engine must give: per
#: (bin, label) cell the count and the sums of s and s² (the plug-in ECE, Brier score and the
#: cell bootstrap's inputs), with the range, NaN and label checks in the same scan.
_DUCKDB_EQUAL_WIDTH = """
import sys, duckdb
con = duckdb.connect(config={"threads": 2, "memory_limit": "512MB"})
files = sys.argv[1:]
con.execute(
    "SELECT least(floor(score * 15), 14)::INT AS b, label, count(*), sum(score), "
    "sum(score * score), min(score), max(score), count(*) FILTER (WHERE isnan(score)) "
    "FROM read_parquet($1) GROUP BY ALL", [files]
).fetchall()
"""
#: The same for exact equal-mass bins: a 2¹⁶-bucket histogram pass locates the bucket of each
#: rank boundary ⌈k·n/15⌉, a second pass fetches the rows of those buckets only (sorted here)
#: and reads the boundary scores, a third sums the cells on those edges.
_DUCKDB_EQUAL_MASS = """
import sys, duckdb, numpy as np
con = duckdb.connect(config={"threads": 2, "memory_limit": "512MB"})
files = sys.argv[1:]
hist = con.execute(
    "SELECT least(floor(score * 65536), 65535)::INT AS k, count(*) FROM read_parquet($1) "
    "GROUP BY ALL ORDER BY k", [files]
).fetchnumpy()
counts = np.zeros(65536, dtype=np.int64)
counts[hist["k"]] = hist["count_star()"]
n = int(counts.sum())
ranks = np.ceil(np.arange(1, 15) * n / 15).astype(np.int64)
ends = np.cumsum(counts)
keys = np.searchsorted(ends, ranks)
before = ends[keys] - counts[keys]
wanted = ", ".join(str(int(k)) for k in np.unique(keys))
rows = con.execute(
    "SELECT least(floor(score * 65536), 65535)::INT AS k, score FROM read_parquet($1) "
    f"WHERE least(floor(score * 65536), 65535)::INT IN ({wanted})", [files]
).fetchnumpy()
edges = []
for r, key, b in zip(ranks, keys, before):
    values = np.sort(rows["score"][rows["k"] == key])
    edges.append(values[r - 1 - b])
above = " + ".join(f"(score > {float(e)!r})::INT" for e in edges)
con.execute(
    f"SELECT {above} AS b, label, count(*), sum(score), sum(score * score) "
    "FROM read_parquet($1) GROUP BY ALL", [files]
).fetchall()
"""

_SCAN = (
    "import sys, pyarrow.dataset as ds\n"
    "for _ in ds.dataset(sys.argv[1:], format='parquet').to_batches(columns=['score', 'label']):\n"
    "    pass\n"
)

#: Reference, not the target's floor: the least numpy work of the exact statistics the stream
#: must give, on the same scan. Pass 1: each row's equal-width bin and (bin, label) cell; per
#: cell the count and the sums of s, s², s³, s⁴ (the label is fixed in a cell, so the scores,
#: the Brier score and its square and the Spiegelhalter terms are polynomials of these), of the
#: log loss and its square and of the hits; the linear SKCE's pair terms. Pass 2 (the bins' mean
#: labels are known only after pass 1): the label-binned distances and one ``bincount``.
#: No checks, digest, lint, consistency band, Brier decomposition or subsample.
_STREAM_FLOOR = """
import sys
import numpy as np, pyarrow.dataset as ds
B, C = 15, 30
parts = sys.argv[1:]
def batches():
    for b in ds.dataset(parts, format="parquet").to_batches(columns=["score", "label"]):
        yield b.column(0).to_numpy(), b.column(1).to_numpy()
sums, pairs = np.zeros((8, C)), 0.0
for s, y in batches():
    k = np.minimum((s * B).astype(np.intp), B - 1)
    cell = 2 * k + y
    sums[0] += np.bincount(cell, minlength=C)
    power = s.copy()
    for j in (1, 2, 3, 4):
        sums[j] += np.bincount(cell, weights=power, minlength=C)
        if j < 4:
            power *= s
    loss = np.where(y == 1, s, 1.0 - s)
    np.maximum(loss, 1e-15, out=loss)
    np.log(loss, out=loss)
    sums[5] += np.bincount(cell, weights=loss, minlength=C)
    sums[6] += np.bincount(cell, weights=loss * loss, minlength=C)
    sums[7] += np.bincount(cell, weights=(s >= 0.5) == (y == 1), minlength=C)
    m = s.shape[0] // 2 * 2
    r = y[:m] - s[:m]
    pairs += float(np.sum(r[0::2] * r[1::2] * np.exp(-np.abs(s[0:m:2] - s[1:m:2]) / 0.1)))
counts = sums[0].reshape(B, 2).sum(1)
means = sums[0].reshape(B, 2)[:, 1] / np.maximum(counts, 1)
deviations = np.zeros(B)
for s, y in batches():
    k = np.minimum((s * B).astype(np.intp), B - 1)
    d = np.take(means, k)
    np.subtract(s, d, out=d)
    np.abs(d, out=d)
    deviations += np.bincount(k, weights=d, minlength=B)
n, cells = counts.sum(), sums.reshape(8, B, 2)
brier = cells[2].sum() - 2.0 * cells[1, :, 1].sum() + cells[0, :, 1].sum()
ece = np.abs(cells[1].sum(1) - cells[0, :, 1]).sum()
print(deviations.sum() / n, ece / n, brier / n)
"""


#: Reference, not a floor: the stream engine's load path alone, as :func:`core.stream.analysis`
#: runs it for the default analysis: the same two reads of the parts (batches read and checked
#: in a thread), the conversion and checks of every row, the labels' facts, and in pass 1 the
#: digest and lint facts of all rows (``lint_stats``, hashed beside the caller); no bin, sum or
#: statistic. What no implementation of the statistics can go below while the stream keeps its
#: two passes, its checks, digest and lint. Prints the digest and the rows read.
_LOAD_PATH = """
import sys
from functools import partial
from core.stream.engine import StreamRunner
from core.stream.load import LoadOptions
from core.stream.stats import ALL_ROWS, lint_stats
runner = StreamRunner(sys.argv[1:] if len(sys.argv) > 2 else sys.argv[1], LoadOptions())
plan = runner.plan()
plan, facts, got = runner.run(plan, partial(lint_stats, split=False, only=None), "load")
runner.run(plan, lambda rows, offsets: ({}, {}, {}), "rows")
print(got[ALL_ROWS].digest.hexdigest(plan.class_names, plan.binary), facts.n)
"""

#: Runs a module (``-m NAME ARGS``) or code (``-c CODE ARGS``) and, at exit, writes the
#: process's peak resident memory (``VmHWM``, KiB) to the file named by ``_RSS_FILE``. Read
#: in the process itself: a child's ``ru_maxrss`` also counts the parent's memory it was
#: forked (or vforked) from before ``exec``.
_LAUNCHER = """
import atexit, os, runpy, sys

def _peak():
    with open("/proc/self/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(os.environ["CALIBSCOPE_BENCH_RSS"], "w") as out:
        out.write(kib)

atexit.register(_peak)
mode, target, *rest = sys.argv[1:]
if mode == "-m":
    sys.argv = [target, *rest]
    runpy.run_module(target, run_name="__main__", alter_sys=True)
else:
    sys.argv = ["-c", *rest]
    exec(compile(target, "<benchmark>", "exec"), {"__name__": "__main__"})
"""
_RSS_FILE = "CALIBSCOPE_BENCH_RSS"


@dataclass(frozen=True)
class Run:
    """One finished process: wall time, peak resident memory, exit code and its stderr."""

    seconds: float
    peak_rss_mb: float
    returncode: int
    stderr: str


def _python(args: Sequence[str], scratch: Path) -> Run:
    """Run ``python ARGS`` (``-m`` or ``-c`` first) from the checkout: wall time, peak RSS."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    rss = scratch / "peak-rss"
    rss.unlink(missing_ok=True)
    env[_RSS_FILE] = str(rss)
    # stderr to a file: a pipe read only after the exit could fill up and stall the child
    with tempfile.TemporaryFile(dir=scratch) as err:
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            check=False,
        )
        seconds = time.perf_counter() - start
        err.seek(0)
        text = err.read().decode(errors="replace")
    peak = int(rss.read_text()) * 1024 / 1e6 if rss.exists() else float("nan")
    return Run(seconds, peak, proc.returncode, text)


def _phases(source: str) -> list[tuple[str, float]]:
    """Run the stream engine in a process of its own; return the seconds of each phase."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, "-c", _PASSES, source],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [(a, float(b)) for a, b in (line.split("\t") for line in out.splitlines() if line)]


def _best(args: Sequence[str], scratch: Path, repeat: int) -> Run:
    runs = [_python(args, scratch) for _ in range(repeat)]
    for r in runs:
        if r.returncode != 0:
            last = r.stderr.strip().splitlines()[-1:] or ["(no message)"]
            raise RuntimeError(f"{' '.join(args[:4])} failed: {last[0]}")
    return min(runs, key=lambda r: r.seconds)


def _metrics(source: str, *options: str) -> list[str]:
    return ["-m", "core.cli", "metrics", source, "--json", *options]


def _chunks(n: int, rng: np.random.Generator) -> Any:
    """Yield seeded binary (score, label) tables of at most :data:`CHUNK` rows."""
    done = 0
    while done < n:
        m = min(CHUNK, n - done)
        s = rng.beta(2.0, 1.0, m)
        # the true curve crosses the diagonal: a miscalibrated model
        t = 1.0 / (1.0 + np.exp(-(1.6 * np.log(s / (1.0 - s + 1e-12) + 1e-12) + 0.35)))
        y = (rng.random(m) < t).astype(np.int8)
        yield pa.table({"score": s, "label": y})
        done += m


def write_parquet(path: Path, n: int, rng: np.random.Generator) -> Path:
    """Write ``n`` seeded rows to one Parquet file, a row group per chunk."""
    writer = None
    for table in _chunks(n, rng):
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=CHUNK)
    if writer is not None:
        writer.close()
    return path


def write_csv(path: Path, n: int, rng: np.random.Generator) -> Path:
    """Write ``n`` seeded rows to one CSV file, chunk by chunk."""
    writer = None
    for table in _chunks(n, rng):
        if writer is None:
            writer = pacsv.CSVWriter(path, table.schema)
        writer.write_table(table)
    if writer is not None:
        writer.close()
    return path


def write_dataset(folder: Path, n: int, part_rows: int, rng: np.random.Generator) -> list[Path]:
    """Write ``n`` seeded rows as Parquet parts of ``part_rows`` rows in ``folder``."""
    folder.mkdir()
    parts = []
    for i, start in enumerate(range(0, n, part_rows)):
        parts.append(
            write_parquet(folder / f"part-{i:05d}.parquet", min(part_rows, n - start), rng)
        )
    return parts


def _file_rows(scratch: Path, n: int, rng: np.random.Generator, repeat: int) -> list[dict]:
    rows = []
    for fmt, write, read in (
        ("Parquet", write_parquet, _READ_PARQUET),
        ("CSV", write_csv, _READ_CSV),
    ):
        path = write(scratch / f"rows-{n}.{fmt.lower()}", n, rng)
        size = f"{path.stat().st_size / 1e6:.0f} MB"
        floor = _best(["-c", read, str(path)], scratch, repeat)
        rows.append(
            row(
                f"read {fmt} n={n:,} with pyarrow alone (process)",
                floor.seconds,
                floor.seconds,
                f"{size}; peak RSS {floor.peak_rss_mb:.0f} MB",
                peak_rss_mb=floor.peak_rss_mb,
            )
        )
        run = _best(_metrics(str(path)), scratch, repeat)
        rows.append(
            row(
                f"calibscope metrics {fmt} n={n:,} (process)",
                run.seconds,
                floor.seconds,
                f"memory engine, defaults; peak RSS {run.peak_rss_mb:.0f} MB",
                peak_rss_mb=run.peak_rss_mb,
            )
        )
        path.unlink()
    return rows


def _compiled_row(
    parts: Sequence[Path], scratch: Path, scan: float, stream: float, n: int
) -> dict[str, Any]:
    """The compiled reference (:mod:`benchmarks.stream_compiled`), or why it is left out."""
    what = f"reference (not a floor), compiled: one fused numba loop per pass, {n:,} rows"
    if importlib.util.find_spec("numba") is None:
        return row(what, math.nan, scan, "left out: numba is not installed (the bench extra)")
    # a first run compiles and caches the kernels; the second is what a user would wait for
    ran = _best(["-m", "benchmarks.stream_compiled", *map(str, parts)], scratch, 2)
    return row(
        what,
        ran.seconds,
        scan,
        "the same statistics as the numpy reference, each pass one compiled loop over a "
        f"batch (numba import and cached kernels included); the stream engine "
        f"{stream / ran.seconds:.2f}× this",
    )


def _dataset_rows(scratch: Path, n: int, part_rows: int, rng: np.random.Generator) -> list[dict]:
    folder = scratch / "dataset"
    parts = write_dataset(folder, n, part_rows, rng)
    size = sum(p.stat().st_size for p in parts) / 1e9
    label = f"{n:,} rows, {len(parts)} Parquet parts ({size:.2f} GB)"
    scan = _best(["-c", _SCAN, *map(str, parts)], scratch, 1)
    rows = [
        row(
            f"scan score+label with pyarrow alone, {n:,} rows",
            scan.seconds,
            scan.seconds,
            f"{label}; peak RSS {scan.peak_rss_mb:.0f} MB",
            peak_rss_mb=scan.peak_rss_mb,
        )
    ]
    stream = _best(_metrics(str(folder), "--engine", "stream"), scratch, 1)
    rows.append(
        row(
            f"calibscope metrics --engine stream, {n:,} rows",
            stream.seconds,
            scan.seconds,
            f"{n / stream.seconds / 1e6:.1f} M rows/s; peak RSS {stream.peak_rss_mb:.0f} MB",
            target="stream",
            peak_rss_mb=stream.peak_rss_mb,
        )
    )

    rows.extend(_duckdb_rows(folder, parts, scratch, n))

    least = _best(["-c", _STREAM_FLOOR, *map(str, parts)], scratch, 1)
    rows.append(
        row(
            f"reference (not a floor): least numpy work of the stream's statistics, {n:,} rows",
            least.seconds,
            scan.seconds,
            f"two scans, bins, cells and 8 bincounts, SKCE_ul pairs, label-binned distances; "
            f"the stream engine {stream.seconds / least.seconds:.2f}× this",
        )
    )

    rows.append(_compiled_row(parts, scratch, scan.seconds, stream.seconds, n))

    load = _best(["-c", _LOAD_PATH, str(folder)], scratch, 1)
    rows.append(
        row(
            f"reference (not a floor): the stream's load path alone, {n:,} rows",
            load.seconds,
            scan.seconds,
            "the engine's two reads, conversion, checks, label facts, digest and lint, no "
            f"statistic; the stream engine {stream.seconds / load.seconds:.2f}× this",
        )
    )

    # where the stream's time goes: a second run, phase by phase
    for what, seconds in _phases(str(folder)):
        rows.append(
            row(
                f"stream phase, {n:,} rows: {what}",
                seconds,
                scan.seconds,
                "in process, progress messages mark the passes' ends",
            )
        )

    # Dask on the first 10⁷ rows (all of a quick run's dataset), beside the same parts streamed
    some = parts[: max(1, 10_000_000 // part_rows)]
    source = folder
    if len(some) < len(parts):
        # a folder of links to the first parts: Dask's globs have no character ranges
        source = scratch / "dataset-head"
        source.mkdir()
        for p in some:
            os.link(p, source / p.name)
        n = sum(pq.ParquetFile(p).metadata.num_rows for p in some)
        scan = _best(["-c", _SCAN, *map(str, some)], scratch, 1)
        rows.append(
            row(
                f"scan score+label with pyarrow alone, {n:,} rows",
                scan.seconds,
                scan.seconds,
                f"{len(some)} parts; peak RSS {scan.peak_rss_mb:.0f} MB",
                peak_rss_mb=scan.peak_rss_mb,
            )
        )
        stream = _best(_metrics(str(source), "--engine", "stream"), scratch, 1)
        rows.append(
            row(
                f"calibscope metrics --engine stream, {n:,} rows",
                stream.seconds,
                scan.seconds,
                f"{n / stream.seconds / 1e6:.1f} M rows/s; peak RSS {stream.peak_rss_mb:.0f} MB",
                peak_rss_mb=stream.peak_rss_mb,
            )
        )
    dask = _best(_metrics(str(source), "--engine", "dask"), scratch, 1)
    rows.append(
        row(
            f"calibscope metrics --engine dask, {n:,} rows",
            dask.seconds,
            scan.seconds,
            f"LocalCluster 2 processes × 1 thread, start included; "
            f"{dask.seconds / stream.seconds:.2f}× the stream engine; "
            f"client peak RSS {dask.peak_rss_mb:.0f} MB",
            peak_rss_mb=dask.peak_rss_mb,
        )
    )
    shutil.rmtree(folder)
    if source != folder:
        shutil.rmtree(source)
    return rows


def _duckdb_rows(folder: Path, parts: Sequence[Path], scratch: Path, n: int) -> list[dict]:
    """The engine without resamples against DuckDB's own minimal query, equal-width and -mass."""
    rows = []
    for binning, script in (
        ("equal-width", _DUCKDB_EQUAL_WIDTH),
        ("equal-mass", _DUCKDB_EQUAL_MASS),
    ):
        duck = _best(["-c", script, *map(str, parts)], scratch, 1)
        rows.append(
            row(
                f"DuckDB's minimal query of the {binning} statistics, {n:,} rows",
                duck.seconds,
                duck.seconds,
                f"15 bins: per (bin, label) cell count, Σs, Σs², with the checks; 2 threads; "
                f"peak RSS {duck.peak_rss_mb:.0f} MB",
                peak_rss_mb=duck.peak_rss_mb,
            )
        )
        options = ("--engine", "stream", "--binning", binning, "--resamples", "0")
        stream = _best(_metrics(str(folder), *options), scratch, 1)
        rows.append(
            row(
                f"calibscope metrics --engine stream --binning {binning} --resamples 0, {n:,} rows",
                stream.seconds,
                duck.seconds,
                f"against DuckDB's minimal query in the same run; peak RSS "
                f"{stream.peak_rss_mb:.0f} MB",
                target="stream-duckdb",
                peak_rss_mb=stream.peak_rss_mb,
            )
        )
    return rows


def run(quick: bool) -> list[dict[str, Any]]:
    """Write the files, time the commands against pyarrow reads; return benchmark rows."""
    sizes = [100_000] if quick else [1_000_000, 10_000_000]
    n_stream, part_rows = (1_000_000, 200_000) if quick else (100_000_000, PART_ROWS)
    rng = np.random.default_rng(SEED)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="calibscope-bench-") as tmp:
        scratch = Path(tmp)
        free = shutil.disk_usage(scratch).free
        # 10⁸ float64 scores and int8 labels: about 0.9 GB of Parquet, plus the single files
        need = n_stream * 9.5 + 400e6
        if free < need:
            n_stream = int(max(free - 400e6, 0) / 9.5 // part_rows * part_rows)
            print(f"bench_scale: {free / 1e9:.1f} GB free, dataset cut to {n_stream:,} rows")
        for n in sizes:
            rows.extend(_file_rows(scratch, n, rng, repeat=2 if n <= 1_000_000 else 1))
        if n_stream > 0:
            rows.extend(_dataset_rows(scratch, n_stream, part_rows, rng))
    return rows
