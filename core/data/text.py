"""Text columns held once per distinct value, whatever their length.

A role column (model, split, group) or a kept text column repeats a few distinct values on
every row. Converting such a column with ``astype(str)`` makes a fixed-width numpy array as
wide as its longest value on every row: one 200 KB model name in a 15,000-row part (a
Parquet dictionary page of 141 KB) becomes 12 GB. The functions here work on the distinct
values instead (:func:`pandas.factorize`), so a column costs a pointer per row and each
distinct string once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from core.base.errors import DataError
from core.base.names import visible

__all__ = ["MAX_NAME_CHARS", "kept_row", "role_values", "rows_in", "text_codes", "text_values"]

#: Characters of a model, split or group name at most (a name, not a document).
MAX_NAME_CHARS = 1024


def text_values(values: Any) -> np.ndarray:
    """Return a column's values as an object array of ``str``, missing values as ``""``.

    Parameters
    ----------
    values : array-like
        One column (numbers, strings, missing values).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` object array; rows with equal values share one ``str``.
    """
    codes, uniques = text_codes(values)
    return uniques[codes] if codes.size else np.empty(0, dtype=object)


def text_codes(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """Return each row's distinct value as a code, and the distinct values as ``str``.

    Parameters
    ----------
    values : array-like
        One column; missing values read as ``""``.

    Returns
    -------
    codes : numpy.ndarray
        ``(n,)`` int64 index into ``uniques`` (in order of first appearance).
    uniques : numpy.ndarray
        Object array of the distinct values as ``str`` (values whose ``str`` agree, such
        as ``1`` and ``"1"``, share a code).
    """
    import pandas as pd  # not on the array path's imports (tests/test_imports.py)

    arr = np.asarray(values, dtype=object)
    if arr.size:
        # rows sharing one object (a dictionary's value) are grouped by identity first:
        # comparing a long string with itself on every row would read it on every row
        by_id, ids = pd.factorize(np.fromiter(map(id, arr), dtype=np.uint64, count=arr.size))
        first = np.empty(ids.size, dtype=np.int64)
        first[by_id[::-1]] = np.arange(arr.size - 1, -1, -1)
        codes, names = _value_codes(arr[first])
        return codes[by_id], names
    return _value_codes(arr)


def _value_codes(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import pandas as pd

    missing = pd.isna(arr)
    if missing.any():
        arr = arr.copy()
        arr[missing] = ""
    if len({type(v) for v in arr} - {str}) > 1:
        # True == 1 == 1.0 for pandas, not for str: mixed kinds are keyed by (kind, value)
        arr = np.fromiter(((type(v), v) for v in arr), dtype=object, count=arr.size)
        keys = list(dict.fromkeys(arr.tolist()))
        index = {key: j for j, key in enumerate(keys)}
        codes = np.fromiter((index[key] for key in arr.tolist()), dtype=np.int64, count=arr.size)
        uniques = [v for _, v in keys]
    else:
        codes, uniques = pd.factorize(arr)
    # values that differ but print alike (1 and "1") are one value, as astype(str) has them
    first: dict[str, int] = {}
    remap = np.array([first.setdefault(str(v), len(first)) for v in uniques], dtype=np.int64)
    names = np.empty(len(first), dtype=object)
    names[:] = [visible(name) for name in first]  # a name shows as stored, never reordered
    return remap[codes] if remap.size else codes.astype(np.int64), names


def rows_in(values: Any, chosen: Any) -> np.ndarray:
    """Return the rows of a column whose value (as ``str``) is one of ``chosen``.

    Parameters
    ----------
    values : array-like
        One column.
    chosen : iterable of str
        The values kept.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` bool mask.
    """
    codes, names = text_codes(values)
    wanted = set(chosen)
    return np.fromiter((n in wanted for n in names), dtype=bool, count=names.size)[codes]


def role_values(values: Any, role: str, where: Callable[[int], str]) -> np.ndarray:
    """Return a role column's values (:func:`text_values`), refusing names that are too long.

    Parameters
    ----------
    values : array-like
        The ``model``, ``split`` or ``group`` column.
    role : str
        Which.
    where : callable
        ``where(i)`` says where row ``i`` of ``values`` is (file and row).

    Raises
    ------
    DataError
        For a value longer than :data:`MAX_NAME_CHARS`, naming where it first is.
    """
    codes, names = text_codes(values)
    sizes = np.fromiter(map(len, names), dtype=np.int64, count=names.size)
    if sizes.size and sizes.max() > MAX_NAME_CHARS:
        j = int(np.argmax(sizes))
        row = int(np.argmax(codes == j))
        raise DataError(
            f"{where(row)}: a value of the {role} column is {int(sizes[j]):,} characters long; "
            f"{role} names of at most {MAX_NAME_CHARS:,} characters are read. Shorten them or "
            "leave the column out."
        )
    return names[codes] if codes.size else np.empty(0, dtype=object)


def kept_row(keep: np.ndarray | None, i: int) -> int:
    """Return the row, among all, of row ``i`` of those ``keep`` kept (None: all kept)."""
    return i if keep is None else int(np.flatnonzero(keep)[i])
