"""The part files of a stream and their batches of rows.

A source is one CSV or Parquet file, a folder of them (searched recursively, hidden and
``_``-prefixed files skipped, as Spark and Hive write them), a glob such as
``'logs/*.parquet'``, or a list of paths; the parts are read in sorted path order, which is
the row order of the stream. Every part must have the same columns as the first.

Parquet parts are read one row group at a time (:class:`pyarrow.parquet.ParquetFile`),
CSV parts block by block (:func:`pyarrow.csv.open_csv`, gzip decompressed on the fly), so
memory is bounded by the batch size whatever the size of the files. CSV separators and a
missing header row are detected as :func:`core.load_predictions` does; column types come
from the first block of each part.

Errors name the file and the row: a part that is not Parquet or CSV, a damaged part, a part
with other columns, a cell that cannot be read as the column's type.

Of the :class:`core.data.limits.LoadLimits`, a stream checks ``max_columns`` (every part) and
``max_ratio`` (every gzip part, while it is decompressed): rows and bytes are what a stream
is for, and memory is bounded by the batch size.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.base import options
from core.base.errors import DataError
from core.data.limits import GzipReader, LoadLimits
from core.data.lint import LintFinding
from core.data.sql import QUERY_NAME, as_query, run_query
from core.data.tables import (
    FOREIGN_FORMATS,
    PARQUET_SUFFIXES,
    check_parquet_schema,
    check_regular_file,
    column_values,
    decimal_comma_finding,
    duplicate_columns_finding,
    read_layout,
    text_columns,
    unique_names,
)

#: Rows per batch unless told otherwise (:data:`core.base.options.BATCH_ROWS`).
BATCH_ROWS: int = options.BATCH_ROWS.default  # type: ignore[assignment]

CSV_SUFFIXES = frozenset({".csv", ".tsv", ".txt"})


@dataclass(frozen=True)
class Part:
    """One file of a stream.

    Attributes
    ----------
    path : str
        Where it is.
    format : {"parquet", "csv"}
        How it is read.
    gzip : bool
        A gzip-compressed CSV.
    shown : str
        How messages name it when not by its path (a SQL query's result).
    """

    path: str
    format: str
    gzip: bool = False
    shown: str = ""

    @property
    def name(self) -> str:
        """The part as messages name it: its path, or what it holds."""
        return self.shown or self.path


def place(name: str, row: int) -> str:
    """Say where a row is: ``"part-002.parquet, row 246 of that file"``.

    A SQL query's rows are named by their row in its result.
    """
    of = "its result" if name == QUERY_NAME else "that file"
    return f"{name}, row {row:,} of {of}"


class Parts(tuple):
    """The parts of a stream in stream order, each file once, and the paths that repeated one.

    A tuple of :class:`Part`; ``repeated`` holds the paths left out because they name a file
    already among the parts (a symlinked folder reached twice, a path given twice).
    """

    repeated: tuple[str, ...] = ()
    #: The SQL query's result the parts read (kept while they are read), or None.
    result: Any = None

    def __new__(
        cls, parts: Sequence[Part], repeated: Sequence[str] = (), result: Any = None
    ) -> Parts:
        """Return the parts, with the paths left out as repeats."""
        out = super().__new__(cls, parts)
        out.repeated = tuple(repeated)
        out.result = result
        return out


@dataclass(frozen=True, eq=False)
class Batch:
    """Consecutive rows of one part.

    Attributes
    ----------
    part : Part
        The file.
    start : int
        Position of the first row in its file (0-based data rows).
    offset : int
        Position of the first row in the stream.
    frame : pandas.DataFrame
        The rows (the requested columns).
    """

    part: Part
    start: int
    offset: int
    frame: Any

    def where(self, row: int) -> str:
        """Say where stream row ``row`` (one of this batch's) is: file and row in the file."""
        return place(self.part.name, row - self.offset + self.start)


@dataclass(frozen=True)
class Layout:
    """The table layout every part shares.

    Attributes
    ----------
    columns : tuple of str
        Column names (made unique; ``"0"``, ``"1"``, ... for a headerless CSV).
    headerless : bool
        The CSV parts have no header row.
    sep : str or None
        The CSV separator.
    findings : tuple
        Lint findings of the layout (repeated column names, decimal commas).
    trailing : bool
        Every CSV row ends with the separator (an empty last field, not read).
    decimal : str
        The CSV decimal mark.
    limits : LoadLimits
        The limits every part is read within.
    """

    columns: tuple[str, ...]
    headerless: bool = False
    sep: str | None = None
    findings: tuple[Any, ...] = ()
    trailing: bool = False
    decimal: str = "."
    limits: LoadLimits = field(default_factory=LoadLimits.from_env)


def resolve_parts(source: Any) -> Parts:
    """Return the part files of a source, in stream order, each file once.

    A file reached by several paths (a recursive glob through a symlinked folder, a symlink
    loop, a path listed twice) is read once, at its first path; the others are kept in
    :attr:`Parts.repeated` and reported by the stream's lint (:func:`layout`).

    Parameters
    ----------
    source : str, path, sequence of them, or Query
        A file, a folder, a glob pattern or a list of files; or a SQL query or DuckDB
        relation (:class:`core.data.sql.Query`), run once and read as its result's Parquet
        file (one part, named :data:`core.data.sql.QUERY_NAME`).

    Returns
    -------
    Parts
        At least one part, all of one format.

    Raises
    ------
    DataError
        When nothing matches, a part is neither CSV nor Parquet, or the formats differ; for
        a query DuckDB cannot run.
    """
    query = as_query(source)
    if query is not None:
        result = run_query(query)
        return Parts([Part(result.path, "parquet", shown=QUERY_NAME)], result=result)
    paths, repeated = _each_file_once(_source_paths(source))
    parts = Parts([_part(p) for p in paths], repeated)
    formats = {p.format for p in parts}
    if len(formats) > 1:
        raise DataError(
            "The parts mix Parquet and CSV files; give one format (e.g. a glob such as "
            "'logs/*.parquet')."
        )
    return parts


def _source_paths(source: Any) -> list[str]:
    """Return the files a source names: a list as given, a folder's files, a glob's matches."""
    if isinstance(source, (list, tuple)):
        paths = [str(p) for p in source]
        if not paths:
            raise DataError("No files given: pass a file, a folder or a glob of part files.")
        return paths
    text = os.fspath(source) if isinstance(source, os.PathLike) else str(source)
    if "://" in text:
        raise DataError(
            f"{text!r} is a URL; the stream engine reads local files. Use the Dask engine "
            "(--engine dask) for remote storage."
        )
    path = Path(text)
    if path.is_dir():
        paths = sorted(
            str(p)
            for p in path.rglob("*")
            if p.is_file() and not any(x.startswith((".", "_")) for x in p.relative_to(path).parts)
        )
        if not paths:
            raise DataError(f"The folder {text!r} holds no files.")
        return paths
    if any(ch in text for ch in "*?["):
        paths = sorted(p for p in glob.glob(text, recursive=True) if Path(p).is_file())
        if not paths:
            raise DataError(f"No files match {text!r}. Check the pattern and the folder.")
        return paths
    check_regular_file(path)
    return [text]


def _each_file_once(paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """Return the paths in order with each file once (by device and inode), and the others."""
    seen: set[tuple[int, int]] = set()
    kept, repeated = [], []
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            kept.append(path)  # named as missing or unreadable by the part's own checks
            continue
        key = (info.st_dev, info.st_ino)
        (repeated if key in seen else kept).append(path)
        seen.add(key)
    return kept, repeated


def repeated_parts_finding(repeated: Sequence[str]) -> tuple[LintFinding, ...]:
    """Return the warning that paths naming a part already read were left out (none without)."""
    if not repeated:
        return ()
    shown = ", ".join(repeated[:3]) + (", …" if len(repeated) > 3 else "")
    return (
        LintFinding(
            "repeated-parts",
            "warning",
            f"{len(repeated):,} path(s) name a file already among the parts ({shown}): each file "
            "was read once. A recursive glob follows symlinked folders; check the folder for "
            "links or give the parts once.",
            count=len(repeated),
        ),
    )


def _part(path: str) -> Part:
    p = Path(path)
    check_regular_file(p)
    with open(p, "rb") as fh:
        head = fh.read(8)
    suffixes = [s.lower() for s in p.suffixes]
    gz = head[:2] == b"\x1f\x8b"
    if gz and suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    if head[:4] == b"PAR1":
        return Part(path, "parquet")
    for magic, what in FOREIGN_FORMATS.items():
        if head.startswith(magic):
            raise DataError(
                f"{path} looks like {what}, which is not read (and never unpickled); save the "
                "predictions as CSV or Parquet."
            )
    if suffixes and suffixes[-1] in PARQUET_SUFFIXES:
        raise DataError(f"{path} is not a readable Parquet file: it lacks the Parquet header.")
    if gz or (suffixes and suffixes[-1] in CSV_SUFFIXES) or not suffixes:
        return Part(path, "csv", gzip=gz)
    raise DataError(
        f"{path} is neither CSV nor Parquet (by its name and content); the stream reads "
        "*.parquet and *.csv (optionally .gz) parts."
    )


def layout(parts: Sequence[Part], limits: LoadLimits | None = None) -> Layout:
    """Return the layout of the first part, the one every part must share.

    Parameters
    ----------
    parts : sequence of Part
        The files, in stream order.
    limits : LoadLimits, optional
        Default :meth:`LoadLimits.from_env`; kept in the layout for every part.

    Returns
    -------
    Layout
        Columns, CSV dialect and limits.
    """
    limits = LoadLimits.from_env() if limits is None else limits
    first = parts[0]
    repeated = repeated_parts_finding(getattr(parts, "repeated", ()))
    if first.format == "parquet":
        raw = [str(c) for c in parquet_file(first, limits).schema_arrow.names]
        names, dupes = unique_names(raw)
        return Layout(tuple(names), findings=_dupe_findings(dupes) + repeated, limits=limits)
    csv = _csv_layout(first, limits)
    if csv is None:
        raise DataError(f"{first.name} is empty: it holds no rows.")
    if csv.sep not in (",", "\t", ";"):
        raise DataError(
            f"{first.name} separates its columns with spaces; the stream reads comma-, tab- or "
            "semicolon-separated files. Convert it, or load it in memory."
        )
    findings = repeated
    if csv.decimal == ",":
        findings += (decimal_comma_finding(),)
    options = {"trailing": csv.trailing, "decimal": csv.decimal, "limits": limits}
    if csv.headerless:
        columns = tuple(str(i) for i in range(len(csv.fields)))
        return Layout(columns, True, csv.sep, findings, **options)
    names, dupes = unique_names(csv.fields)
    return Layout(tuple(names), False, csv.sep, _dupe_findings(dupes) + findings, **options)


def _dupe_findings(dupes: list[str]) -> tuple[Any, ...]:

    return tuple(duplicate_columns_finding(dupes))


def read_batches(
    parts: Sequence[Part],
    lay: Layout,
    columns: Sequence[str],
    *,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[Batch]:
    """Yield the rows of every part in order, ``batch_rows`` at a time (at most).

    Parameters
    ----------
    parts : sequence of Part
        The files, in stream order.
    lay : Layout
        Their shared layout (:func:`layout`).
    columns : sequence of str
        The columns to read.
    batch_rows : int
        Rows per batch at most (a Parquet row group smaller than this is one batch).

    Yields
    ------
    Batch
        Consecutive rows.

    Raises
    ------
    DataError
        Naming the part (and the row) of a damaged part, a part with other columns or a
        cell that cannot be read.
    """
    offset = 0
    for part in parts:
        reader = _parquet_batches if part.format == "parquet" else _csv_batches
        start = 0
        for frame in reader(part, lay, list(columns), batch_rows):
            if frame.shape[0] == 0:
                continue
            yield Batch(part, start, offset, frame)
            start += frame.shape[0]
            offset += frame.shape[0]


def count_rows(parts: Sequence[Part], lay: Layout) -> list[int]:
    """Return the number of data rows of each part (Parquet from its footer)."""
    out = []
    for part in parts:
        if part.format == "parquet":
            out.append(int(parquet_file(part, lay.limits).metadata.num_rows))
        else:
            out.append(sum(b.frame.shape[0] for b in read_batches([part], lay, lay.columns[:1])))
    return out


# --------------------------------------------------------------------------- Parquet


def parquet_file(part: Part, limits: LoadLimits) -> Any:
    """Open a Parquet part (its footer only) and check its schema within ``limits``.

    Raises
    ------
    DataError
        For a damaged file, too many columns, or a column type that is not read.
    """
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(_opened(part.path))
        schema = pf.schema_arrow
        check_parquet_schema(schema, part.name, limits)
        # text is read dictionary-encoded: a value repeated on every row is decoded once
        # (a long value spelled out on every row of a batch is the dictionary bomb)
        text = text_columns(schema)
        if text:  # the footer already read is passed on, not read again
            pf = pq.ParquetFile(_opened(part.path), metadata=pf.metadata, read_dictionary=text)
    except DataError:
        raise
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise DataError(f"{part.name} is not a readable Parquet file: {_first_line(exc)}") from None
    return pf


def _opened(path: str) -> Any:
    """Return a path pyarrow opens itself, or a remote file (``scheme://``) opened by fsspec."""
    if "://" not in path:
        return path
    import fsspec

    fs, inner = fsspec.core.url_to_fs(path)
    return fs.open(inner, "rb")


def _check_columns(part: Part, found: Sequence[str], lay: Layout) -> None:
    check_same_columns(part.name, found, lay.columns)


def check_same_columns(name: str, found: Sequence[str], columns: Sequence[str]) -> None:
    """Refuse a part whose columns (``found``, as read) are not the first part's ``columns``.

    Every engine refuses such a part with this message (the stream while it reads the part,
    Dask from the footers before it reads anything).

    Raises
    ------
    DataError
        Naming the part, what it lacks or has besides, and the columns every part must have.
    """
    names = tuple(unique_names(list(found))[0])
    columns = tuple(columns)
    if names != columns:
        missing = [c for c in columns if c not in names]
        extra = [c for c in names if c not in columns]
        what = []
        if missing:
            what.append(f"lacks {', '.join(map(repr, missing[:6]))}")
        if extra:
            what.append(f"has {', '.join(map(repr, extra[:6]))} besides")
        if not what:
            what.append("has them in another order")
        raise DataError(
            f"{name} has other columns than the first part ({'; '.join(what)}): every part "
            f"of a stream must have the columns {', '.join(map(repr, columns[:8]))}"
            f"{' ...' if len(columns) > 8 else ''}."
        )


#: Decoded bytes of one batch at most: a batch of rows wider than usual holds fewer rows.
BATCH_BYTES = 256 << 20


def fitting_rows(meta: Any, group: int, names: Sequence[str]) -> int:
    """Return the rows of a row group that decode to at most :data:`BATCH_BYTES`.

    From the footer: the row group's uncompressed bytes of the columns read, per row, plus 8
    bytes a cell (a number or a pointer once converted). Rows of a few numbers fit by the
    million; a row group whose text compresses a thousandfold (a long value on every row,
    written without a dictionary) is read a few rows at a time instead of whole.
    """
    rg = meta.row_group(group)
    wanted = set(names)
    size = sum(
        rg.column(i).total_uncompressed_size
        for i in range(rg.num_columns)
        if rg.column(i).path_in_schema.split(".")[0] in wanted
    )
    n = max(rg.num_rows, 1)
    per_row = size / n + 8 * len(wanted)
    return max(1, int(BATCH_BYTES // per_row))


def _parquet_batches(part: Part, lay: Layout, columns: list[str], batch_rows: int) -> Iterator[Any]:
    pf = parquet_file(part, lay.limits)
    raw = [str(c) for c in pf.schema_arrow.names]
    _check_columns(part, raw, lay)
    # columns were made unique: read them by position under their unique names
    positions = [lay.columns.index(c) for c in columns]
    read = [raw[i] for i in positions]
    names = sorted(set(read))
    rows = min(
        [batch_rows] + [fitting_rows(pf.metadata, g, names) for g in range(pf.num_row_groups)]
    )
    done = 0
    try:
        for batch in pf.iter_batches(batch_size=rows, columns=names):
            yield _frame(batch, read, columns)
            done += batch.num_rows
    except DataError:
        raise
    except Exception as exc:
        raise DataError(
            f"{part.name} is damaged: reading stopped after row {done:,} ({_first_line(exc)})."
        ) from None


def read_row_group(
    part: Part, group: int, columns: Sequence[str], lay: Layout, batch_rows: int = BATCH_ROWS
) -> Iterator[tuple[int, Any]]:
    """Yield one row group of a Parquet part as the stream reads it, in bounded batches.

    The Dask engine's partitions: one task per row group, which reads it ``batch_rows`` rows
    at a time (a row group of 150 million run-length-encoded rows is never decoded whole),
    converted as the stream converts them, so an error names the file and the row.

    Yields
    ------
    (int, pandas.DataFrame)
        The position of the batch's first row in the row group, and its rows (one empty
        frame for an empty row group).

    Raises
    ------
    DataError
        For a damaged part or a part with other columns than ``lay``'s.
    """
    pf = parquet_file(part, lay.limits)
    raw = [str(c) for c in pf.schema_arrow.names]
    _check_columns(part, raw, lay)
    read = [raw[lay.columns.index(c)] for c in columns]
    names = sorted(set(read))
    rows = min(batch_rows, fitting_rows(pf.metadata, group, names))
    done = 0
    try:
        for batch in pf.iter_batches(batch_size=rows, row_groups=[group], columns=names):
            yield done, _frame(batch, read, columns)
            done += batch.num_rows
    except DataError:
        raise
    except Exception as exc:
        start = sum(pf.metadata.row_group(g).num_rows for g in range(group))
        raise DataError(
            f"{part.name} is damaged: reading stopped after row {start + done:,} "
            f"({_first_line(exc)})."
        ) from None
    if not done:
        yield 0, _frame(pf.schema_arrow.empty_table().select(names), read, columns)


# --------------------------------------------------------------------------- CSV


#: Bytes of leading blank lines read, at most, in search of a part's first row.
MAX_BLANK = 64 << 20


def _open_csv(part: Part, limits: LoadLimits) -> Any:
    """Open a CSV part as a binary file (a gzip part decompressed within ``limits``)."""
    raw = open(part.path, "rb")  # noqa: SIM115 (closed by the caller, or by the reader)
    return GzipReader(raw, part.name, limits) if part.gzip else raw


def _csv_layout(part: Part, limits: LoadLimits) -> Any:
    """Return a CSV part's layout (:func:`core.data.tables.read_layout`), or None if empty."""
    import dataclasses

    skipped = blank = 0
    with _open_csv(part, limits) as fh:
        head = fh.read(65536)
        # leading blank lines: counted (the reader skips them by number) until the first row
        while head and not head.strip() and blank < MAX_BLANK:
            skipped += head.count(b"\n")
            blank += len(head)
            head = fh.read(65536)
    if not head.strip():
        if blank < MAX_BLANK:
            return None
        raise DataError(f"{part.name} starts with more than 64 MiB of blank lines.")
    lay = read_layout(head, tab=Path(part.path).suffix.lower() == ".tsv", name=part.name)
    limits.check_columns(len(lay.fields), part.name)
    return dataclasses.replace(lay, skip=lay.skip + skipped)


def _csv_batches(part: Part, lay: Layout, columns: list[str], batch_rows: int) -> Iterator[Any]:
    import pyarrow.csv as pcsv

    csv = _csv_layout(part, lay.limits)
    if csv is None:  # an empty part holds no rows
        return
    if (csv.headerless, csv.sep, csv.trailing) != (lay.headerless, lay.sep, lay.trailing):
        raise DataError(
            f"{part.name} is laid out differently from the first part (separator, header row "
            "or a delimiter at the end of every row): every part of a stream must have the same "
            "columns."
        )
    if not csv.headerless:
        _check_columns(part, csv.fields, lay)
    # about 200 bytes a row: blocks of roughly batch_rows rows
    block = int(min(max(batch_rows * 64, 1 << 20), 1 << 30))
    # the empty field after a trailing delimiter gets a name no column has, and is not read
    names = list(lay.columns) + (["\x00trailing"] if lay.trailing else [])
    read_options = pcsv.ReadOptions(
        column_names=names,
        skip_rows=csv.skip + (0 if csv.headerless else 1),
        block_size=block,
        encoding="utf8",
    )
    parse_options = pcsv.ParseOptions(delimiter=csv.sep)
    convert_options = pcsv.ConvertOptions(
        include_columns=sorted(set(columns)), decimal_point=csv.decimal
    )
    done = 0
    try:
        with _open_csv(part, lay.limits) as stream:
            reader = pcsv.open_csv(
                stream,
                read_options=read_options,
                parse_options=parse_options,
                convert_options=convert_options,
            )
            for batch in reader:
                frame = _frame(batch, columns, columns)
                for lo in range(0, frame.shape[0], batch_rows):
                    chunk = frame.iloc[lo : lo + batch_rows]
                    yield chunk
                    done += chunk.shape[0]
    except DataError:
        raise
    except Exception as exc:
        raise DataError(
            f"{part.name}: a cell after row {done:,} cannot be read ({_first_line(exc)}). Every "
            "value of a column must have the type of its first rows, and every row the same "
            "number of fields."
        ) from None


def _frame(batch: Any, read: Sequence[str], names: Sequence[str]) -> Any:
    """Return a record batch's columns as a DataFrame over their numpy arrays."""
    import pandas as pd

    at = {name: i for i, name in enumerate(batch.schema.names)}
    data = {}
    for col, name in zip(read, names, strict=True):
        values = column_values(batch.column(at[col]), numbers=True)
        # object columns stay object: pandas would spell out every row's string in Arrow
        data[name] = (
            pd.Series(values, dtype=object, copy=False) if values.dtype == object else values
        )
    return pd.DataFrame(data, copy=False)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
