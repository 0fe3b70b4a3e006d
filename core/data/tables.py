"""Read CSV / Parquet tables from paths, file objects, bytes or DataFrames.

Pickles and other foreign formats (ZIP / Excel, NumPy ``.npy``, HDF5) are
refused by their magic bytes; nothing is ever unpickled. Gzip-compressed files
are decompressed first. A CSV's separator (comma, tab, semicolon or whitespace)
and a missing header row are detected, and duplicate column names are renamed
with a lint finding. Problems that make a file unreadable raise
:class:`core.errors.DataError`.

See Also
--------
core.data.load_predictions : Builds :class:`core.data.Predictions` from these tables.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.data.lint import LintFinding
from core.errors import DataError

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
class _Table:
    frame: pd.DataFrame
    headerless: bool
    name: str
    findings: list[LintFinding]


def read_table(source: Any, *, name: str | None = None) -> pd.DataFrame:
    """Read a CSV or Parquet source into a DataFrame, detecting a missing header row.

    Parameters
    ----------
    source : path, file object, bytes or DataFrame
        What :func:`core.data.load_predictions` accepts as ``source``.
    name : str, optional
        File name of bytes or a file object (its extension picks the format).

    Returns
    -------
    pandas.DataFrame
        Columns are strings; a headerless file gets columns ``"0"``, ``"1"``, ...

    Raises
    ------
    DataError
        If the file cannot be found or parsed.
    """
    return _read(source, name).frame


def _is_pathlike(x: Any) -> bool:
    return isinstance(x, (str, os.PathLike))


def _is_filelike(x: Any) -> bool:
    return hasattr(x, "read") and not isinstance(x, (str, bytes, os.PathLike))


def _read(source: Any, name: str | None) -> _Table:
    if isinstance(source, pd.DataFrame):
        frame, findings = _dedupe_columns(source, list(map(str, source.columns)))
        return _Table(frame, False, name or "DataFrame", findings)
    if _is_pathlike(source):
        path = Path(source)
        if path.is_dir():
            raise DataError(f"{str(path)!r} is a folder; give the path of a CSV or Parquet file.")
        if not path.is_file():
            raise DataError(f"File not found: {str(path)!r}. Check the path.")
        data = path.read_bytes()
        name = name or path.name
    elif _is_filelike(source):
        name = name or str(getattr(source, "name", "") or "")
        data = source.read()
        if isinstance(data, str):
            data = data.encode("utf-8")
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        raise DataError(
            f"Cannot read predictions from a {type(source).__name__}; pass a path, a file object, "
            "bytes, a DataFrame or arrays."
        )
    name = Path(name).name if name else "upload"
    suffixes = [s.lower() for s in Path(name).suffixes]
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise DataError(f"{name}: the gzip file is damaged ({exc}).") from None
        suffixes = suffixes[:-1] if suffixes and suffixes[-1] == ".gz" else suffixes
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
        return _read_parquet(data, name)
    return _read_csv(data, name, tab=bool(suffixes) and suffixes[-1] == ".tsv")


def _read_parquet(data: bytes, name: str) -> _Table:
    try:
        import pyarrow.parquet as pq

        table = pq.read_table(io.BytesIO(data))
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise DataError(f"{name} is not a readable Parquet file: {exc}") from None
    raw = list(map(str, table.column_names))
    frame = table.to_pandas(ignore_metadata=True)
    frame, findings = _dedupe_columns(frame, raw)
    return _Table(frame, False, name, findings)


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
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = lines[0]
    if tab or ("\t" in first and "," not in first):
        sep = "\t"
    elif ";" in first and "," not in first:
        sep = ";"
    elif "," not in first and len(first.split()) > 1:
        sep = r"\s+"
    else:
        sep = ","
    fields = first.split() if sep == r"\s+" else next(csv.reader([first], delimiter=sep))
    fields = [f.strip() for f in fields]
    return sep, fields, _looks_headerless(fields, lines[1] if len(lines) > 1 else None, sep)


def _read_csv(data: bytes, name: str, *, tab: bool) -> _Table:
    sep, fields, headerless = csv_layout(data[:65536], tab=tab)
    try:
        frame = pd.read_csv(
            io.BytesIO(data),
            sep=sep,
            header=None if headerless else 0,
            encoding="utf-8-sig",
            skipinitialspace=sep != r"\s+",
            **({"engine": "python"} if sep == r"\s+" else {"engine": "c", "low_memory": False}),
        )
    except UnicodeDecodeError:
        raise DataError(
            f"{name} is neither UTF-8 text (CSV) nor Parquet; save it as a CSV (UTF-8) or "
            "Parquet file."
        ) from None
    except (pd.errors.ParserError, ValueError) as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(
            f"{name} could not be parsed as CSV ({msg}). Check that every row has the same "
            "number of comma-separated fields."
        ) from None
    if headerless:
        frame.columns = [str(i) for i in range(frame.shape[1])]
        return _Table(frame, True, name, [])
    frame, findings = _dedupe_columns(frame, fields)
    return _Table(frame, False, name, findings)


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


def _source_table(source: Any, name: str | None) -> _Table:
    if isinstance(source, pd.DataFrame) or _is_pathlike(source) or _is_filelike(source):
        return _read(source, name)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _read(source, name)
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
    return _Table(frame, True, name or "arrays", [])
