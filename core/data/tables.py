"""Read CSV / Parquet tables from paths, file objects, bytes or DataFrames.

Pickles and other foreign formats (ZIP / Excel, NumPy ``.npy``, HDF5) are
refused by their magic bytes; nothing is ever unpickled. Gzip-compressed files
are decompressed a block at a time within the :class:`core.data.limits.LoadLimits`
(bytes, rows, columns, expansion ratio), which every reader checks while reading.
A CSV's separator (comma, tab, semicolon or whitespace), a missing header row,
leading blank lines, a trailing delimiter on every row and decimal commas in a
semicolon file are detected, and duplicate column names are renamed with a lint
finding. Parquet files are read by their columns' own types (the pandas metadata
is ignored); extension types and nested columns are refused. Problems that make
a file unreadable raise :class:`core.base.errors.DataError`.

See Also
--------
core.data.load_predictions : Builds :class:`core.data.Predictions` from these tables.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.base.errors import DataError, arg
from core.data.limits import LoadLimits, gunzip
from core.data.lint import LintFinding

__all__ = ["read_table"]

PARQUET_SUFFIXES = frozenset({".parquet", ".pq", ".parq"})
#: Magic numbers of formats people upload by mistake, with what they are.
FOREIGN_FORMATS = {
    b"PK\x03\x04": "a ZIP archive or an Excel workbook",
    b"\x93NUMPY": "a NumPy .npy file",
    b"\x80": "a Python pickle",
    b"\x89HDF": "an HDF5 file",
}


@dataclass
class LoadedTable:
    frame: pd.DataFrame
    headerless: bool
    name: str
    findings: list[LintFinding]


def read_table(
    source: Any, *, name: str | None = None, limits: LoadLimits | None = None
) -> pd.DataFrame:
    """Read a CSV or Parquet source into a DataFrame, detecting a missing header row.

    Parameters
    ----------
    source : path, file object, bytes or DataFrame
        What :func:`core.data.load_predictions` accepts as ``source``.
    name : str, optional
        File name of bytes or a file object (its extension picks the format).
    limits : LoadLimits, optional
        Bytes, rows and columns allowed (default :meth:`LoadLimits.from_env`).

    Returns
    -------
    pandas.DataFrame
        Columns are strings; a headerless file gets columns ``"0"``, ``"1"``, ...

    Raises
    ------
    DataError
        If the file cannot be found or parsed, or passes a limit.
    """
    return read_source(source, name, limits).frame


def is_pathlike(x: Any) -> bool:
    return isinstance(x, (str, os.PathLike))


def is_filelike(x: Any) -> bool:
    return hasattr(x, "read") and not isinstance(x, (str, bytes, os.PathLike))


def read_source(
    source: Any, name: str | None, limits: LoadLimits | None = None, *, header: bool | None = None
) -> LoadedTable:
    """Read a CSV or Parquet source (path, file, bytes) or take a DataFrame as a table.

    ``header`` overrides whether a CSV file's first row names the columns (None: decided
    from the first rows, :func:`read_layout`).
    """
    limits = LoadLimits.from_env() if limits is None else limits
    if isinstance(source, pd.DataFrame):
        limits.check_columns(source.shape[1], name or "The DataFrame")
        frame, findings = _dedupe_columns(source, list(map(str, source.columns)))
        return LoadedTable(frame, False, name or "DataFrame", findings)
    data, name = _source_bytes(source, name, limits)
    name = Path(name).name if name else "upload"
    suffixes = [s.lower() for s in Path(name).suffixes]
    if data[:2] == b"\x1f\x8b":
        data = gunzip(data, name, limits)
        suffixes = suffixes[:-1] if suffixes and suffixes[-1] == ".gz" else suffixes
    # a byte-order mark is no content: a file holding only one is empty
    data = data[len(codecs.BOM_UTF8) :] if data.startswith(codecs.BOM_UTF8) else data
    if not data[:65536].strip() and not data.strip():
        raise DataError(f"{name} is empty: it holds no rows.")
    for magic, what in FOREIGN_FORMATS.items():
        if data.startswith(magic):
            raise DataError(
                f"{name} looks like {what}, which is not read (and never unpickled); save the "
                "predictions as CSV or Parquet."
            )
    is_parquet = data[:4] == b"PAR1" or (suffixes and suffixes[-1] in PARQUET_SUFFIXES)
    if is_parquet:
        return _read_parquet(data, name, limits)
    tab = bool(suffixes) and suffixes[-1] == ".tsv"
    return _read_csv(data, name, limits, tab=tab, header=header)


def _source_bytes(source: Any, name: str | None, limits: LoadLimits) -> tuple[bytes, str | None]:
    """Return the bytes of a path, file object or bytes (within the limits) and its name."""
    if is_pathlike(source):
        path = Path(source)
        check_regular_file(path)
        name = name or path.name
        with open(path, "rb") as fh:
            return _read_bounded(fh, Path(name).name, limits), name
    if is_filelike(source):
        name = name or str(getattr(source, "name", "") or "")
        return _read_bounded(source, Path(name).name if name else "upload", limits), name
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        limits.check_bytes(len(data), Path(name).name if name else "upload")
        return data, name
    raise DataError(
        f"Cannot read predictions from a {type(source).__name__}; pass a path, a file object, "
        "bytes, a DataFrame or arrays."
    )


def check_regular_file(path: Path) -> None:
    """Raise :class:`DataError` unless ``path`` is a regular file (not a folder or a device).

    Parameters
    ----------
    path : pathlib.Path
        The path given.

    Raises
    ------
    DataError
        For a folder, a missing path, or a device, pipe or socket (``/dev/zero`` never ends).
    """
    if path.is_dir():
        raise DataError(
            f"{str(path)!r} is a folder; give the path of a CSV or Parquet file, or read the "
            f"folder's part files with {arg('stream')}."
        )
    if not path.exists():
        raise DataError(f"File not found: {str(path)!r}. Check the path.")
    if not path.is_file():
        raise DataError(
            f"{str(path)!r} is not a regular file (a device, pipe or socket); give the path of a "
            "CSV or Parquet file."
        )


def _read_bounded(fh: Any, name: str, limits: LoadLimits) -> bytes:
    # one byte past the limit tells a file at the limit from a larger one, without reading it
    data = fh.read(limits.max_bytes + 1)
    if isinstance(data, str):
        data = data.encode("utf-8")
    limits.check_bytes(len(data), name, more=len(data) > limits.max_bytes)
    return bytes(data)


def parquet_type_problem(dtype: Any) -> str | None:
    """Say why an Arrow column type is not read (None for flat numbers, text, dates, ...).

    Extension types are refused outright: their metadata is code-defined (pyarrow 14.0.0
    unpickled it, CVE-2023-47248) and no prediction column needs one. Nested values
    (structs, lists, maps, unions) are refused because a cell must be one number or label.
    """
    import pyarrow as pa

    if isinstance(dtype, pa.BaseExtensionType):
        return f"an extension type ({dtype.extension_name})"
    if pa.types.is_dictionary(dtype):
        return parquet_type_problem(dtype.value_type)
    if pa.types.is_struct(dtype):
        return "structs (nested records)"
    if pa.types.is_map(dtype):
        return "maps"
    if pa.types.is_union(dtype):
        return "unions"
    if pa.types.is_nested(dtype):
        return "lists"
    return None


def check_parquet_schema(schema: Any, name: str, limits: LoadLimits) -> None:
    """Raise :class:`DataError` for a Parquet schema with too many or unreadable columns.

    Parameters
    ----------
    schema : pyarrow.Schema
        The file's Arrow schema.
    name : str
        The file as named in messages.
    limits : LoadLimits
        ``max_columns`` is checked.

    Raises
    ------
    DataError
        Naming the first column of a type :func:`parquet_type_problem` refuses.
    """
    limits.check_columns(len(schema), name)
    for field in schema:
        problem = parquet_type_problem(field.type)
        if problem is not None:
            raise DataError(
                f"{name}: column {field.name!r} holds {problem}, which is not read; save the "
                "predictions with one number or label per cell (flatten or drop that column)."
            )


def text_columns(schema: Any) -> list[str]:
    """Return the text and binary columns of an Arrow schema (by name; names used once).

    They are read dictionary-encoded, and :func:`column_values` gives their rows as object
    arrays sharing the dictionary's strings.
    """
    import pyarrow as pa

    def is_text(t: Any) -> bool:
        if pa.types.is_dictionary(t):
            return is_text(t.value_type)
        return (
            pa.types.is_string(t)
            or pa.types.is_large_string(t)
            or pa.types.is_binary(t)
            or pa.types.is_large_binary(t)
        )

    text = [f.name for f in schema if is_text(f.type)]
    return [n for n in text if text.count(n) == 1]


def column_values(column: Any, *, numbers: bool = False) -> np.ndarray:
    """Return an Arrow column (array or chunked array) as a numpy array.

    A dictionary-encoded column becomes an object array whose rows share the dictionary's
    values (missing values as None), never an array with each row's value spelled out;
    with ``numbers``, a text column of numbers and missing-value tokens becomes numbers
    (:func:`numeric_text`), as the in-memory reader reads it.
    """
    import pyarrow as pa

    if not pa.types.is_dictionary(column.type):
        return column.to_numpy(zero_copy_only=False)
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    if numbers and chunks:
        read = [
            numeric_text(
                chunk.dictionary.to_pylist(),
                chunk.indices.fill_null(-1).to_numpy(zero_copy_only=False),
            )
            for chunk in chunks
        ]
        if all(r is not None for r in read):
            return np.concatenate(read)
    out = [
        shared_values(
            chunk.dictionary.to_pylist(),
            chunk.indices.fill_null(-1).to_numpy(zero_copy_only=False),
        )
        for chunk in chunks
    ]
    return np.concatenate(out) if out else np.empty(0, dtype=object)


def shared_values(values: list[Any], codes: np.ndarray) -> np.ndarray:
    """Return ``values[codes]`` as an object array whose rows share ``values``' objects.

    A code of -1 (missing) gives None.
    """
    table = np.empty(len(values) + 1, dtype=object)
    table[:-1] = values
    return table[np.asarray(codes, dtype=np.int64)]


def _read_parquet(data: bytes, name: str, limits: LoadLimits) -> LoadedTable:
    try:
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(io.BytesIO(data))
        schema = pf.schema_arrow
        meta = pf.metadata
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise DataError(f"{name} is not a readable Parquet file: {_first_line(exc)}") from None
    check_parquet_schema(schema, name, limits)
    limits.check_rows(int(meta.num_rows), name)
    # a Parquet file is a compressed file too: the footer's encoded sizes stand for the text,
    # and every cell becomes at least 8 bytes in pandas (a number or a pointer), which bounds
    # constant columns that encode to next to nothing
    encoded = sum(int(meta.row_group(i).total_byte_size) for i in range(meta.num_row_groups))
    limits.check_bytes(encoded + 8 * int(meta.num_rows) * len(schema), name, what=" uncompressed")
    # text is read dictionary-encoded: a value repeated on every row is held once (Arrow
    # would otherwise spell it out on every row before pandas shares it)
    try:
        pf = pq.ParquetFile(io.BytesIO(data), read_dictionary=text_columns(schema))
        table = pf.read(use_pandas_metadata=False)
        # the pandas metadata (index, dtypes) is the writer's say, and may be invalid JSON:
        # the columns' own types are all that is read
        table = table.replace_schema_metadata(None)
        raw = [str(c) for c in table.column_names]
        names, dupes = unique_names(raw)
        frame = table.rename_columns(names).to_pandas()
    except Exception as exc:  # damaged pages, values pandas cannot hold
        raise DataError(f"{name} is not a readable Parquet file: {_first_line(exc)}") from None
    for c in frame.columns:
        if isinstance(frame[c].dtype, pd.CategoricalDtype):
            cat = frame[c].cat
            codes, distinct = cat.codes.to_numpy(), cat.categories.to_list()
            numbers = numeric_text(distinct, codes)
            if numbers is not None:  # numbers stored as text, read as a CSV reads them
                frame[c] = pd.Series(numbers, index=frame.index)
                continue
            # object arrays sharing the dictionary's strings, as text columns are read
            values = shared_values(distinct, codes)
            frame[c] = pd.Series(values, index=frame.index, dtype=object)
    return LoadedTable(frame, False, name, duplicate_columns_finding(dupes))


def numeric_text(values: list[Any], codes: np.ndarray) -> np.ndarray | None:
    """Return a text column of numbers and missing-value tokens as numbers, else None.

    ``values`` are the column's distinct strings and ``codes`` each row's index into them
    (-1 for a missing row). A Parquet column of strings such as ``"0.8"`` and ``"N/A"`` is
    read as the same text in a CSV file is: numbers, the tokens of :data:`MISSING_TOKENS`
    as NaN (integers stay integers when nothing is missing). None when a value is neither,
    or when no value is a number.
    """
    texts = []
    for v in values:
        if isinstance(v, bytes):
            try:
                v = v.decode("utf-8")
            except UnicodeDecodeError:
                return None
        if not isinstance(v, str):
            return None
        texts.append(v.strip())
    missing = np.array([t.lower() in MISSING_TOKENS for t in texts], dtype=bool)
    if missing.all():
        return None
    parsed = pd.to_numeric(
        pd.Series([None if m else t for t, m in zip(texts, missing, strict=True)], dtype=object),
        errors="coerce",
    )
    if parsed.isna().to_numpy()[~missing].any():
        return None
    table = parsed.to_numpy()
    codes = np.asarray(codes, dtype=np.int64)
    if table.dtype.kind in "iu" and not (codes < 0).any():
        return table[codes]
    table = np.append(table.astype(np.float64), np.nan)
    return table[codes]


@dataclass(frozen=True)
class CsvLayout:
    """How a CSV file is laid out, read from its first lines.

    Attributes
    ----------
    sep : str
        A comma, a tab, a semicolon, or the regular expression for runs of whitespace.
    fields : list of str
        The first row, split and stripped (a trailing delimiter's empty field left out).
    headerless : bool
        The first row holds numbers, not column names.
    skip : int
        Blank lines before the first row.
    trailing : bool
        Every data row ends with the delimiter (one more, empty, field than columns).
    decimal : str
        The decimal mark: ``","`` in a semicolon file of numbers such as ``0,25``.
    """

    sep: str
    fields: list[str]
    headerless: bool
    skip: int = 0
    trailing: bool = False
    decimal: str = "."


def csv_layout(head: bytes, *, tab: bool = False) -> tuple[str, list[str], bool]:
    """Return a CSV's separator, its first row's fields and whether it lacks a header row.

    Parameters
    ----------
    head : bytes
        The start of the file (64 KiB are plenty).
    tab : bool, default=False
        The file is named ``.tsv``.

    Returns
    -------
    sep : str
        A comma, a tab, a semicolon, or the regular expression for runs of whitespace.
    fields : list of str
        The first row, split and stripped.
    headerless : bool
        The first row holds numbers, not column names.
    """
    lay = read_layout(head, tab=tab)
    return lay.sep, lay.fields, lay.headerless


#: Rows of the head that decide a trailing delimiter and a decimal comma.
SAMPLE_LINES = 50


def read_layout(head: bytes, *, tab: bool = False, name: str = "The file") -> CsvLayout:
    """Return the layout of a CSV from its first bytes (:class:`CsvLayout`).

    Parameters
    ----------
    head : bytes
        The start of the file, from its first line that is not blank (64 KiB are plenty).
    tab : bool, default=False
        The file is named ``.tsv``.
    name : str
        The file as named in messages.

    Raises
    ------
    DataError
        When the head holds no line that is not blank.
    """
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    raw_lines = text.splitlines()
    skip = next((i for i, ln in enumerate(raw_lines) if ln.strip()), None)
    if skip is None:
        raise DataError(f"{name} is empty: it holds no rows.")
    lines = [ln for ln in raw_lines if ln.strip()]
    first = lines[0]
    sep = _separator(first, tab)
    fields = first.split() if sep == r"\s+" else next(csv.reader([first], delimiter=sep))
    fields = [f.strip() for f in fields]
    headerless = _looks_headerless(fields, lines[1] if len(lines) > 1 else None, sep)
    # a line cut off by the end of the head says nothing of how lines end
    whole = lines[: SAMPLE_LINES + 1]
    if not head.endswith((b"\n", b"\r")) and len(lines) > 1 and whole[-1] == lines[-1]:
        whole = whole[:-1]
    data_lines = whole if headerless else whole[1:]
    fields, trailing = _trailing_delimiter(fields, data_lines, sep, headerless)
    decimal = _decimal_mark(data_lines, name) if sep == ";" else "."
    return CsvLayout(sep, fields, headerless, skip, trailing, decimal)


def _separator(first: str, tab: bool) -> str:
    """Return the column separator that the first line shows."""
    if tab or ("\t" in first and "," not in first):
        return "\t"
    if ";" in first and "," not in first:
        return ";"
    if "," not in first and len(first.split()) > 1:
        return r"\s+"
    return ","


def _trailing_delimiter(
    fields: list[str], data_lines: list[str], sep: str, headerless: bool
) -> tuple[list[str], bool]:
    """Return the fields without an empty last one, and whether every row ends with ``sep``."""
    trailing = (
        sep != r"\s+"
        and len(fields) > 1
        and bool(data_lines)
        and all(ln.rstrip().endswith(sep) for ln in data_lines)
    )
    if trailing and (headerless or fields[-1] == ""):
        return fields[:-1], trailing
    if not headerless and len(fields) > 1 and fields[-1] == "" and data_lines:
        # only the header ends with the delimiter: its last, empty, name names no column
        return fields[:-1], trailing
    return fields, trailing


def _decimal_mark(data_lines: list[str], name: str) -> str:
    """Return the decimal mark of a semicolon file's numbers, refusing a mix of both."""
    cells = [c.strip() for ln in data_lines for c in ln.split(";")]
    comma = next((c for c in cells if _DECIMAL_COMMA.fullmatch(c)), None)
    point = next((c for c in cells if _DECIMAL_POINT.fullmatch(c)), None)
    if comma is not None and point is not None:
        raise DataError(
            f"{name} writes numbers with both decimal commas ({comma}) and decimal points "
            f"({point}) in its semicolon-separated columns, so neither reading is right; "
            "write every number with one decimal mark."
        )
    return "," if comma is not None else "."


_DECIMAL_COMMA = re.compile(r"[-+]?\d*,\d+(?:[eE][-+]?\d+)?")
_DECIMAL_POINT = re.compile(r"[-+]?\d*\.\d+(?:[eE][-+]?\d+)?")


def decimal_comma_finding(columns: Sequence[str] = ()) -> LintFinding:
    """Return the finding that a semicolon file's numbers were read with decimal commas."""
    return LintFinding(
        "decimal-comma",
        "info",
        "The file separates its columns with semicolons and writes numbers with decimal "
        "commas (0,25); they were read as decimal numbers.",
        columns=tuple(columns),
    )


def _first_content(data: bytes) -> int:
    """Return the position of the first line that is not blank (0 if there is none)."""
    m = re.search(rb"[^\s]", data)
    if m is None:
        return 0
    return data.rfind(b"\n", 0, m.start()) + 1


def _read_csv(
    data: bytes, name: str, limits: LoadLimits, *, tab: bool, header: bool | None = None
) -> LoadedTable:
    start = _first_content(data)
    lay = read_layout(data[start : start + 65536], tab=tab, name=name)
    if header is not None and header == lay.headerless:
        lay = replace(lay, headerless=not header)
    fields = lay.fields
    limits.check_columns(len(fields), name)
    n = len(fields)
    # lines before the first row (blank ones, counted as the readers count lines) and the header
    skip = data[:start].count(b"\n") + (0 if lay.headerless else 1)
    try:
        frame = pd.read_csv(
            io.BytesIO(data),
            sep=lay.sep,
            header=None,
            skiprows=skip,
            # the row past the limit is read to know the limit was passed
            nrows=limits.max_rows + 1,
            usecols=range(n) if lay.trailing else None,
            decimal=lay.decimal,
            encoding="utf-8-sig",
            skipinitialspace=lay.sep != r"\s+",
            **({"engine": "python"} if lay.sep == r"\s+" else {"engine": "c", "low_memory": False}),
        )
    except pd.errors.EmptyDataError:
        frame = pd.DataFrame({i: pd.Series(dtype=object) for i in range(n)})
    except UnicodeDecodeError:
        raise DataError(
            f"{name} is neither UTF-8 text (CSV) nor Parquet; save it as a CSV (UTF-8) or "
            "Parquet file."
        ) from None
    except (pd.errors.ParserError, ValueError, OverflowError) as exc:
        msg = _first_line(exc)
        raise DataError(
            f"{name} could not be parsed as CSV ({msg}). Check that every row has the same "
            "number of comma-separated fields."
        ) from None
    limits.check_rows(frame.shape[0], name, more=True)
    if frame.shape[1] != n:
        what = "columns" if lay.headerless else "header fields"
        raise DataError(
            f"{name}: the first row has {n} {what} but the data rows have {frame.shape[1]}; "
            "every row must have the same number of fields."
        )
    findings = [decimal_comma_finding()] if lay.decimal == "," else []
    if lay.headerless:
        frame.columns = [str(i) for i in range(frame.shape[1])]
        return LoadedTable(frame, True, name, findings)
    frame, dupes = _dedupe_columns(frame, fields)
    return LoadedTable(frame, False, name, dupes + findings)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


#: Field values read as missing (lower case), which a data row may hold where a header cannot.
MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "none", "<na>", "#n/a"})


def _looks_headerless(fields: list[str], second: str | None, sep: str) -> bool:
    if not any(fields):
        return False
    if not all(_is_number(f) or f.strip().lower() in MISSING_TOKENS for f in fields):
        return _data_like(fields, second, sep)
    # a header of column positions ("0,1,2" as pandas writes a RangeIndex) over real numbers
    if second is not None and all(re.fullmatch(r"\d+", f) for f in fields) and len(fields) > 1:
        ints = [int(f) for f in fields]
        if ints in (list(range(len(ints))), list(range(1, len(ints) + 1))):
            nxt = second.split() if sep == r"\s+" else second.split(sep)
            if any(not re.fullmatch(r"\s*-?\d+\s*", v) for v in nxt):
                return False
    return True


def _data_like(fields: list[str], second: str | None, sep: str) -> bool:
    """Whether a first row with words (``0.3,yes``) is data: numbers where the next row has them.

    A header names its columns, so over numeric columns it holds words; a first row with
    numbers in exactly the next row's numeric places (words only where the next row has
    words, missing values anywhere) is a data row.
    """
    if second is None:
        return False
    nxt = second.split() if sep == r"\s+" else second.split(sep)
    if len(nxt) != len(fields):
        return False
    kinds = []
    for a, b in zip(fields, nxt, strict=True):
        a, b = a.strip().strip('"'), b.strip().strip('"')
        if a.lower() in MISSING_TOKENS or b.lower() in MISSING_TOKENS:
            kinds.append(None)
            continue
        if _is_number(a) != _is_number(b):
            return False
        kinds.append(_is_number(a))
    # at least one number (a row of words over words is a header) and one word column
    return True in kinds and False in kinds


def unique_names(raw: list[str]) -> tuple[list[str], list[str]]:
    """Return column names made unique (``a``, ``a.1``, ...) and the names that repeated."""
    names = [str(c).strip() for c in raw]
    seen: dict[str, int] = {}
    out, dupes = [], []
    for c in names:
        if c in seen:
            seen[c] += 1
            new = f"{c}.{seen[c]}"
            while new in names:
                seen[c] += 1
                new = f"{c}.{seen[c]}"
            out.append(new)
            dupes.append(c)
        else:
            seen[c] = 0
            out.append(c)
    return out, dupes


def duplicate_columns_finding(dupes: list[str]) -> list[LintFinding]:
    """Return the finding that repeated column names were renamed (none without repeats)."""
    if not dupes:
        return []
    unique = sorted(set(dupes))
    return [
        LintFinding(
            "duplicate-columns",
            "warning",
            f"Column name(s) {', '.join(repr(d) for d in unique)} appear more than once; the "
            "copies were renamed with a suffix (.1, .2, ...). Check which one holds the data "
            "you mean and give each column a unique name.",
            columns=tuple(unique),
        )
    ]


def _dedupe_columns(frame: pd.DataFrame, raw: list[str]) -> tuple[pd.DataFrame, list[LintFinding]]:
    out, dupes = unique_names(raw)
    frame = frame.copy(deep=False)
    frame.columns = out if len(out) == frame.shape[1] else [str(c) for c in frame.columns]
    return frame, duplicate_columns_finding(dupes)


def source_table(source: Any, name: str | None, limits: LoadLimits | None = None) -> LoadedTable:
    if isinstance(source, pd.DataFrame) or is_pathlike(source) or is_filelike(source):
        return read_source(source, name, limits)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return read_source(source, name, limits)
    if isinstance(source, pd.Series):
        source = source.to_numpy()
    if isinstance(source, Mapping) or isinstance(source, str | bytes):
        raise DataError(
            f"Cannot read predictions from a {type(source).__name__}; pass a path, a file object, "
            "bytes, a DataFrame or arrays."
        )
    try:
        arr = np.asarray(source)
    except (TypeError, ValueError) as exc:
        raise DataError(f"Cannot read predictions from {type(source).__name__}: {exc}") from None
    if arr.dtype == object or arr.dtype.kind in "USV":
        raise DataError(
            f"The prediction array holds non-numeric values (dtype {arr.dtype}); pass numbers."
        )
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise DataError(
            f"Predictions must be 1-D (binary P(y=1)) or 2-D (n, K); got shape {arr.shape}."
        )
    frame = pd.DataFrame(arr, columns=[str(i) for i in range(arr.shape[1])], copy=False)
    return LoadedTable(frame, True, name or "arrays", [])


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
