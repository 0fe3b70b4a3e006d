"""Label encoding: label values to class indices ``0..K-1`` and the class names.

Binary labels may be 0/1, booleans, 1/2, -1/+1 or two values with a positive class
(given, or inferred from the probability column's name or yes/no-style words).
Multiclass labels may be ``0..K-1``, ``1..K`` (shifted, with a notice) or class
names matching the probability columns. Class names come from the probability
columns unless given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from core.base.errors import DataError, arg
from core.data.columns import ColumnError, class_part, column_list
from core.data.lint import LintFinding, first_rows, format_rows

#: Label values read as the positive and negative class of a binary column (lower case).
POSITIVE_WORDS = frozenset({"1", "true", "t", "yes", "y", "pos", "positive"})
NEGATIVE_WORDS = frozenset({"0", "false", "f", "no", "n", "neg", "negative"})

#: ``rows_of(mask) -> (first rows, count)``: where a mask over label values holds.
RowsOf = Callable[[np.ndarray], tuple[tuple[int, ...], int]]


def label_series(values: Any) -> pd.Series:
    """Return label values as a Series (numbers kept as they are, others as objects)."""
    if isinstance(values, pd.Series) and values.dtype != object:
        return values.reset_index(drop=True)
    arr = np.asarray(values)
    if arr.dtype.kind in "biuf":
        return pd.Series(arr, copy=False)
    return pd.Series(np.asarray(values, dtype=object), copy=False).infer_objects()


def resolve_class_names(
    prob_names: Sequence[str], headerless: bool, given: Sequence[str] | None, k: int
) -> tuple[str, ...]:
    """Return the class names: those given, else from the probability columns or indices."""
    if given is not None:
        names = tuple(str(c) for c in given)
        if len(names) != max(k, 2):
            raise DataError(
                f"{len(names)} class names given for {max(k, 2)} classes; give one name per "
                f"class, in column order, with {arg('class_names')}."
            )
        twice = [c for i, c in enumerate(names) if c in names[:i]]
        if twice:
            raise DataError(
                f"The class names must differ: {twice[0]!r} is given twice in {arg('class_names')}."
            )
        return names
    if k == 1:
        return ("0", "1")
    if headerless:
        return tuple(str(i) for i in range(k))
    parts = [class_part(c) for c in prob_names]
    if all(parts) and len(set(parts)) == k:
        return tuple(parts)  # type: ignore[arg-type]
    return tuple(prob_names)


def encode_labels(
    values: pd.Series,
    names: tuple[str, ...],
    binary: bool,
    positive_class: Any,
    prob_names: Sequence[str],
    label_name: str | None,
    columns: Sequence[str],
    rows_of: RowsOf = first_rows,
) -> tuple[np.ndarray, tuple[str, ...], Any, list[LintFinding]]:
    """Encode label values as class indices; return them, the class names and the positive class.

    ``rows_of(mask)`` gives the first rows (and the count of rows) where a mask over
    ``values`` holds, for the messages; a stream passes its distinct labels as ``values``
    with a ``rows_of`` that knows where each of them occurs.
    """
    col = (label_name,) if label_name else ()
    arr = values.to_numpy()
    kind = _label_kind(arr)
    if kind == "bool":
        arr = arr.astype(bool).astype(np.int64)
        kind = "int"
    elif kind == "int":
        arr = _whole_labels(arr, rows_of)
    elif kind == "str":
        arr = _strings(arr)
    uniques = pd.unique(arr)
    if not binary:
        return _multiclass_labels(arr, kind, uniques, names, positive_class, col, columns, rows_of)
    if kind == "float":
        raise _float_label_error(arr, rows_of)
    if len(uniques) > 2:
        shown = ", ".join(repr(_py(u)) for u in uniques[:6])
        raise DataError(
            f"There is one probability column but the labels take {len(uniques)} values "
            f"({shown}{' ...' if len(uniques) > 6 else ''}). For multiclass data choose all "
            f"K probability columns ({arg('prob_columns')})."
        )
    strs = [str(_py(u)) for u in uniques]
    if positive_class is not None:
        return _binary_with_positive(arr, kind, strs, positive_class, columns)
    if kind == "int":
        return _binary_integers(arr, uniques, names, col)
    return _binary_words(arr, strs, prob_names, col, columns)


def _binary_with_positive(
    arr: np.ndarray, kind: str, strs: list[str], positive_class: Any, columns: Sequence[str]
) -> tuple[np.ndarray, tuple[str, ...], Any, list[LintFinding]]:
    """Binary labels whose positive class is given."""
    findings: list[LintFinding] = []
    pos = str(positive_class)
    if pos not in strs:
        if kind == "int" and len(strs) == 1 and pos in ("0", "1"):
            strs.append(pos)  # a single observed class: the other is implied
        else:
            raise ColumnError(
                f"{arg('positive_class', repr(positive_class))} is not among the label values "
                f"({', '.join(map(repr, strs))}).",
                argument="positive_class",
                candidates=strs,
                columns=columns,
            )
    y = (_strings(arr) == pos).astype(np.int64)
    others = [s for s in strs if s != pos]
    neg = others[0] if others else ("0" if pos == "1" else f"not {pos}")
    return y, (neg, pos), _py(positive_class), findings


def _binary_integers(
    arr: np.ndarray, uniques: np.ndarray, names: tuple[str, ...], col: tuple[str, ...]
) -> tuple[np.ndarray, tuple[str, ...], Any, list[LintFinding]]:
    """Binary labels as integers: 0/1, 1/2 (one-indexed) or -1/+1."""
    findings: list[LintFinding] = []
    ints = set(int(u) for u in uniques)
    if ints <= {0, 1}:
        return arr.astype(np.int64), names, None, findings
    if ints <= {1, 2}:
        findings.append(_one_indexed_note(2, col))
        return arr.astype(np.int64) - 1, ("1", "2"), None, findings
    if ints <= {-1, 1}:
        findings.append(
            LintFinding(
                "label-mapping",
                "warning",
                "Labels are -1/+1; read -1 as the negative class and +1 as the positive "
                "class (the probability column is P(y=+1)).",
                columns=col,
            )
        )
        return (arr.astype(np.int64) == 1).astype(np.int64), ("-1", "1"), 1, findings
    raise DataError(
        f"Binary labels must be 0/1, booleans, or two values with positive_class; found "
        f"{', '.join(map(str, sorted(ints)))}. Use {arg('positive_class')} (the value "
        "the probability column refers to)."
    )


def _binary_words(
    arr: np.ndarray,
    strs: list[str],
    prob_names: Sequence[str],
    col: tuple[str, ...],
    columns: Sequence[str],
) -> tuple[np.ndarray, tuple[str, ...], Any, list[LintFinding]]:
    """Binary labels as two words: the column's name or the words say which is positive."""
    findings: list[LintFinding] = []
    part = (class_part(prob_names[0]) or prob_names[0]).lower() if prob_names else ""
    match = [s for s in strs if s.lower() == part]
    if not match and len(strs) == 2:
        low = [s.lower() for s in strs]
        if low[0] in POSITIVE_WORDS and low[1] in NEGATIVE_WORDS:
            match = [strs[0]]
        elif low[1] in POSITIVE_WORDS and low[0] in NEGATIVE_WORDS:
            match = [strs[1]]
    if len(match) != 1:
        raise ColumnError(
            f"The labels are the values {', '.join(map(repr, sorted(strs)))}; use "
            f"{arg('positive_class')} to say which one the probability column is the "
            "probability of.",
            argument="positive_class",
            candidates=sorted(strs),
            columns=columns,
        )
    pos = match[0]
    neg = next((s for s in strs if s != pos), f"not {pos}")
    findings.append(
        LintFinding(
            "label-mapping",
            "info",
            f"The probability column was read as P(y = {pos!r}) (inferred from the "
            f"{'column name' if pos.lower() == part else 'label values'}); use "
            f"{arg('positive_class')} to change it.",
            columns=col,
        )
    )
    y = (arr == pos).astype(np.int64)
    return y, (neg, pos), pos, findings


def _multiclass_labels(
    arr: np.ndarray,
    kind: str,
    uniques: np.ndarray,
    names: tuple[str, ...],
    positive_class: Any,
    col: tuple[str, ...],
    columns: Sequence[str],
    rows_of: RowsOf,
) -> tuple[np.ndarray, tuple[str, ...], Any, list[LintFinding]]:
    """Labels of K classes: class names, or class indices 0..K-1 (or 1..K)."""
    findings: list[LintFinding] = []
    k = len(names)
    if positive_class is not None:
        _check_positive_of_columns(positive_class, names, columns)
    strs = {str(_py(u)) for u in uniques}
    plain = names == tuple(str(i) for i in range(k))
    if not plain and strs <= set(names) and kind != "float":
        index = {nm: i for i, nm in enumerate(names)}
        y = pd.Series(_strings(arr)).map(index).to_numpy(dtype=np.int64)
        return y, names, None, findings
    if kind == "str":
        lower = {nm.lower(): i for i, nm in enumerate(names)}
        if {s.lower() for s in strs} <= set(lower):
            y = pd.Series(arr).str.lower().map(lower).to_numpy(dtype=np.int64)
            return y, names, None, findings
        unknown = sorted(s for s in strs if s.lower() not in lower)
        raise DataError(
            f"Label value(s) {column_list(unknown)} do not match any class name "
            f"({column_list(list(names))}, taken from the probability columns). Rename the "
            "columns or the labels so that they match, or use integer labels 0..K-1."
        )
    if kind == "float":
        raise _float_label_error(arr, rows_of)
    y = arr.astype(np.int64)
    lo, hi = int(y.min()), int(y.max())
    if lo >= 0 and hi <= k - 1:
        return y, names, None, findings
    if lo >= 1 and hi == k:
        findings.append(_one_indexed_note(k, col))
        return y - 1, names, None, findings
    out = (y < 0) | (y > k - 1)
    rows, count = rows_of(out)
    raise DataError(
        f"Labels must be class indices 0..{k - 1} (or 1..{k}) for the {k} probability columns; "
        f"found values from {lo} to {hi} ({count} out of range: {format_rows(rows, count)}). "
        "Check that every class has a probability column, in the same order as the labels.",
        rows=rows,
    )


def _check_positive_of_columns(positive_class: Any, names: Sequence[str], columns: Any) -> None:
    """Refuse a positive class that the probability columns cannot honour.

    With one column per class, the binary view reads the second column; a positive class
    names that column or is refused (it would otherwise be silently ignored).
    """
    pos = str(positive_class)
    if len(names) == 2 and pos == names[1]:
        return
    if len(names) == 2 and pos == names[0]:
        raise ColumnError(
            f"{arg('positive_class', repr(positive_class))} is the first of the two probability "
            f"columns; the positive class is the second one. Use {arg('prob_columns')} with "
            "the two columns in the "
            f"order [{names[1]!r} column, {names[0]!r} column].",
            argument="prob_columns",
            columns=columns,
        )
    raise ColumnError(
        f"{arg('positive_class', repr(positive_class))} applies to one probability column "
        f"(binary data); these predictions have {len(names)} columns, one per class "
        f"({column_list(list(names))}). Leave {arg('positive_class')} empty (the classwise lens "
        "shows each class against the rest).",
        argument="positive_class",
        candidates=list(names),
        columns=columns,
    )


def _label_kind(arr: np.ndarray) -> str:
    if arr.dtype == bool:
        return "bool"
    if arr.dtype.kind in "iu":
        return "int"
    if arr.dtype.kind == "f":
        return "int" if (arr == np.round(arr)).all() else "float"
    inferred = pd.api.types.infer_dtype(arr, skipna=True)
    if inferred == "boolean":
        return "bool"
    if inferred == "integer":
        return "int"
    if inferred in ("floating", "mixed-integer-float", "decimal"):
        f = np.asarray(arr, dtype=np.float64)
        return "int" if (f == np.round(f)).all() else "float"
    return "str"


def _whole_labels(arr: np.ndarray, rows_of: RowsOf = first_rows) -> np.ndarray:
    """Return whole-number labels as int64, refusing those no int64 holds (not class indices)."""
    if arr.dtype.kind == "i":
        return arr
    # through float64 when not integers already: exact below 2**53, and only the range is
    # checked above it (such labels are refused anyway)
    f = np.asarray(arr, dtype=np.float64)
    big = np.abs(f) >= 2.0**63
    if arr.dtype.kind == "u":
        big = arr > np.iinfo(np.int64).max
    if big.any():
        rows, count = rows_of(big)
        example = arr[np.flatnonzero(big)[0]]
        raise DataError(
            f"Label value {_py(example)!r} is far too large to be a class index "
            f"({format_rows(rows, count)}). Labels must be class indices 0..K-1 (or "
            f"1..K), booleans or class names; use {arg('label_column')} if this is not the label "
            "column.",
            rows=rows,
        )
    if arr.dtype.kind == "u":
        return arr.astype(np.int64)
    if arr.dtype == object:
        # Python ints keep their exact value (float64 would round those above 2**53)
        return np.asarray([int(v) for v in arr], dtype=np.int64)
    return f.astype(np.int64)


def _strings(arr: np.ndarray) -> np.ndarray:
    return pd.Series(arr, copy=False).astype(str).to_numpy(dtype=object)


def _float_label_error(arr: np.ndarray, rows_of: RowsOf = first_rows) -> DataError:
    f = np.asarray(arr, dtype=np.float64)
    rows, count = rows_of(f != np.round(f))
    return DataError(
        f"Labels must be whole class indices or class names; {count} are fractional "
        f"({format_rows(rows, count)}). Did you pick a probability column as the label column? "
        f"Use {arg('label_column')} to choose another.",
        rows=rows,
    )


def _one_indexed_note(k: int, col: tuple[str, ...]) -> LintFinding:
    return LintFinding(
        "one-indexed-labels",
        "warning",
        f"Labels run from 1 to {k}: read as 1-indexed and shifted to 0..{k - 1} (label 1 is the "
        "first probability column). If label 1 means the second column, relabel the data.",
        columns=col,
    )


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
