"""Column roles: which columns hold the labels, the probabilities and the role columns.

Label columns are found by common names (:data:`LABEL_NAMES`), probability or logit
columns by number type and name patterns (:data:`PROB_PREFIX`, :data:`PROB_PAREN`),
and the optional ``model``, ``split`` and ``group`` columns by :data:`ROLE_NAMES`, all
matched case-insensitively. When a choice is ambiguous, :class:`ColumnError` names
the :func:`core.data.load_predictions` argument that resolves it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from core._validation import ROW_SUM_TOL
from core.data.lint import LintFinding
from core.data.probabilities import _numeric_matrix
from core.data.tables import _Table
from core.errors import DataError, arg

#: Column names taken as the label column (compared in lower case).
LABEL_NAMES = (
    "label",
    "labels",
    "y",
    "y_true",
    "target",
    "class",
    "true",
    "truth",
    "true_label",
    "true_class",
    "ground_truth",
    "gt",
    "outcome",
    "actual",
    "y_test",
)
#: Optional role columns and the names that select them (lower case).
ROLE_NAMES = {
    "model": ("model", "model_name"),
    "split": ("split",),
    "group": ("group",),
}
#: Columns never taken as probabilities: row identifiers and predicted classes.
ID_NAMES = frozenset(
    {
        "id",
        "index",
        "idx",
        "row",
        "row_id",
        "sample",
        "sample_id",
        "unnamed: 0",
        "__index_level_0__",
    }
)
PRED_NAMES = frozenset(
    {
        "pred",
        "predicted",
        "prediction",
        "y_pred",
        "pred_class",
        "predicted_class",
        "pred_label",
        "predicted_label",
    }
)
#: Prefixes that mark probability (or logit) columns; the rest of the name is the class name.
PROB_PREFIX = re.compile(
    r"^(?:probability|proba|prob|logits?|score|p)(?:[_\-. :]+|(?=\d))(.+)$", re.IGNORECASE
)
PROB_PAREN = re.compile(r"^p\((?:y\s*=\s*)?(.+)\)$", re.IGNORECASE)


class ColumnError(DataError):
    """The columns cannot be inferred unambiguously; one argument resolves it.

    Attributes
    ----------
    argument : str
        The :func:`core.data.load_predictions` argument to pass (``"label_column"``,
        ``"prob_columns"`` or ``"positive_class"``).
    candidates : tuple of str
        The values that argument could take (column names or label values).
    columns : tuple of str
        All columns of the table, for a column-mapping UI.
    """

    def __init__(
        self,
        message: str,
        *,
        argument: str,
        candidates: Sequence[str] = (),
        columns: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.argument = argument
        self.candidates = tuple(candidates)
        self.columns = tuple(columns)

    def __reduce__(self) -> tuple[Any, ...]:
        # keyword-only fields: rebuilt by name when the error crosses processes (Dask)
        return _column_error, (self.template, self.argument, self.candidates, self.columns)


def _column_error(
    message: str, argument: str, candidates: Sequence[str], columns: Sequence[str]
) -> ColumnError:
    return ColumnError(message, argument=argument, candidates=candidates, columns=columns)


def _find_roles(columns: Sequence[str]) -> dict[str, str]:
    lower = {c.lower(): c for c in reversed(columns)}
    roles = {}
    for role, options in ROLE_NAMES.items():
        for opt in options:
            if opt in lower:
                roles[role] = lower[opt]
                break
    return roles


def _find_label_column(
    frame: pd.DataFrame, table: _Table, label_column: str | int | None, used: set[str]
) -> str:
    columns = list(frame.columns)
    if label_column is not None:
        if isinstance(label_column, (int, np.integer)) and not isinstance(label_column, bool):
            pos = int(label_column)
            if not -len(columns) <= pos < len(columns):
                raise DataError(
                    f"{arg('label_column', label_column)} is out of range: the table has "
                    f"{len(columns)} "
                    "columns."
                )
            return columns[pos]
        match = [c for c in columns if c.lower() == str(label_column).strip().lower()]
        if not match:
            raise ColumnError(
                f"No column named {label_column!r}. Columns: {_col_list(columns)}.",
                argument="label_column",
                candidates=columns,
                columns=columns,
            )
        return match[0]
    free = [c for c in columns if c not in used]
    named = [] if table.headerless else [c for c in free if c.lower() in LABEL_NAMES]
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        raise ColumnError(
            f"Several columns could be the labels: {_col_list(named)}. Use "
            f"{arg('label_column')} with one of them.",
            argument="label_column",
            candidates=named,
            columns=columns,
        )
    # no conventional name: the one non-float column among float columns, if it has no more
    # distinct values than there are classes, is the label
    kinds = {c: frame[c].dtype.kind for c in free}
    n_float = sum(kinds[c] == "f" for c in free)
    non_float = [c for c in free if kinds[c] in "iubOSUT" and c.lower() not in ID_NAMES]
    if len(non_float) == 1 and n_float and frame[non_float[0]].nunique() <= max(n_float, 2):
        return non_float[0]
    if table.headerless:
        raise ColumnError(
            f"{table.name} has no header row, so its label column cannot be found by name. Use "
            f"{arg('labels')} (a labels file, as in the CIFAR format) or "
            f"{arg('label_column', '<position>')}.",
            argument="labels",
            columns=columns,
        )
    raise ColumnError(
        f"Could not tell which column holds the labels among {_col_list(free)}. Use "
        f"{arg('label_column')} (or {arg('labels')} for a separate labels file); common names "
        "such as 'label', 'y' or 'target' are found automatically.",
        argument="label_column",
        candidates=free,
        columns=columns,
    )


def _col_list(cols: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(repr(c) for c in cols[:limit])
    return shown + (f" and {len(cols) - limit} more" if len(cols) > limit else "") or "(none)"


def _class_part(column: str) -> str | None:
    m = PROB_PAREN.match(column) or PROB_PREFIX.match(column)
    return m.group(1).strip() if m else None


def _name_form(column: str) -> str:
    """Return the column name with its class part replaced by ``{}`` (``"{}"`` without one)."""
    m = PROB_PAREN.match(column) or PROB_PREFIX.match(column)
    return column[: m.start(1)] + "{}" + column[m.end(1) :] if m else "{}"


def repeated_names(findings: Sequence[LintFinding]) -> frozenset[str]:
    """Return the column names a table repeated (from its ``duplicate-columns`` finding)."""
    return frozenset(c for f in findings if f.code == "duplicate-columns" for c in f.columns)


def _sums_to_one(frame: pd.DataFrame, cols: Sequence[str]) -> bool:
    P = _numeric_matrix(frame, list(cols), strict=False)
    ok = np.isfinite(P).all(axis=1)
    if not ok.any():
        return False
    P = P[ok]
    return bool(np.abs(P.sum(axis=1) - 1.0).max() <= ROW_SUM_TOL and P.min() >= 0 and P.max() <= 1)


def _mostly_numeric(series: pd.Series) -> bool:
    values = series.dropna()
    if values.empty:
        return False
    parsed = pd.to_numeric(values.astype(str).str.strip(), errors="coerce")
    return parsed.notna().mean() >= 0.9


def _find_prob_columns(
    frame: pd.DataFrame,
    prob_columns: Sequence[str] | str | None,
    used: set[str],
    label_values: pd.Series,
    logits: bool | str,
    headerless: bool,
    repeated: frozenset[str] = frozenset(),
) -> tuple[list[str], list[LintFinding]]:
    columns = list(frame.columns)
    if prob_columns is not None:
        wanted = [prob_columns] if isinstance(prob_columns, str) else list(prob_columns)
        lower = {c.lower(): c for c in reversed(columns)}
        missing = [w for w in wanted if str(w).lower() not in lower]
        if missing:
            raise ColumnError(
                f"Probability column(s) {_col_list(missing)} not found. Columns: "
                f"{_col_list(columns)}.",
                argument="prob_columns",
                candidates=[c for c in columns if c not in used],
                columns=columns,
            )
        if not wanted:
            raise DataError("prob_columns is empty; name at least one probability column.")
        chosen = [lower[str(w).lower()] for w in wanted]
        taken = [c for c in chosen if c in used]
        if taken:
            raise ColumnError(
                f"prob_columns names {_col_list(taken)}, which the table uses as its label "
                "(or model, split or group) column. Choose the probability columns only, or "
                f"use {arg('label_column')} with the column that holds the labels.",
                argument="prob_columns",
                candidates=[c for c in columns if c not in used],
                columns=columns,
            )
        if len(set(chosen)) < len(chosen):
            raise DataError(
                f"prob_columns names a column more than once ({_col_list(chosen)}); each class "
                "has one probability column."
            )
        rest = [c for c in columns if c not in used and c not in chosen]
        return chosen, [_ignored_note(rest)] if rest and not headerless else []

    free = [c for c in columns if c not in used]
    ignored = [c for c in free if c.lower() in ID_NAMES | PRED_NAMES or c.lower() in LABEL_NAMES]
    free = [c for c in free if c not in ignored]
    numeric, text = [], []
    for c in free:
        kind = frame[c].dtype.kind
        if kind in "iuf":
            numeric.append(c)
        elif kind in "OSUT" and (_class_part(c) is not None or _mostly_numeric(frame[c])):
            numeric.append(c)  # kept so that the non-numeric values are reported
        else:
            text.append(c)
    ignored += text
    chosen, basis = numeric, "numeric"
    label_set = {str(v) for v in pd.unique(label_values.dropna())}
    if label_values.dtype.kind in "OSUT" and len(label_set) >= 2:
        by_name = [c for c in numeric if c in label_set or (_class_part(c) or "\0") in label_set]
        # a column that names a class is a class, observed or not: every column named in the
        # same form as a column of an observed class ("p_{}") is one
        forms = {_name_form(c) for c in by_name} - {"{}"}
        named = [c for c in numeric if c in by_name or _name_form(c) in forms]
        if len(named) >= 2 and not forms and not _sums_to_one(frame, named):
            # bare class names ("cat", "dog"): the other numeric columns complete the rows
            named = numeric if _sums_to_one(frame, numeric) else named
        if len(named) >= 2:
            chosen, basis = named, "named"
    if basis == "numeric":
        patterned = [c for c in numeric if _class_part(c) is not None]
        if patterned:
            chosen, basis = patterned, "named"
    ignored += [c for c in numeric if c not in chosen]
    copies = sorted({c for c in chosen if c in repeated or c.rsplit(".", 1)[0] in repeated})
    if copies:
        original = sorted({c if c in repeated else c.rsplit(".", 1)[0] for c in copies})
        raise DataError(
            f"Column name(s) {_col_list(original)} appear more than once among the probability "
            "columns; each class has exactly one column. Rename or drop the copies, or use "
            f"{arg('prob_columns')} to choose the columns yourself."
        )
    if not chosen:
        raise ColumnError(
            f"No numeric probability column found among {_col_list(free or columns)}. Use "
            f"{arg('prob_columns')} with the probability (or logit) columns in class order.",
            argument="prob_columns",
            candidates=free,
            columns=columns,
        )
    if basis == "numeric" and len(chosen) >= 2 and not headerless and logits is not True:
        P = _numeric_matrix(frame, chosen, strict=False)
        ok = np.isfinite(P).all(axis=1)
        if ok.any():
            sums = P[ok].sum(axis=1)
            if np.abs(sums - 1.0).max() > ROW_SUM_TOL or P[ok].min() < 0 or P[ok].max() > 1:
                raise ColumnError(
                    f"Columns {_col_list(chosen)} are all numeric but do not form probability "
                    f"rows (they do not sum to 1). Use {arg('prob_columns')} with the "
                    f"probability columns in class order (and {arg('logits')} if they are "
                    "logits).",
                    argument="prob_columns",
                    candidates=chosen,
                    columns=columns,
                )
    return chosen, [_ignored_note(ignored)] if ignored else []


def _ignored_note(ignored: Sequence[str]) -> LintFinding:
    return LintFinding(
        "ignored-columns",
        "info",
        f"Column(s) {_col_list(list(ignored))} were not used (not probabilities, labels, model, "
        f"split or group). Use {arg('prob_columns')} to choose the probability columns "
        "yourself.",
        columns=tuple(ignored),
    )
