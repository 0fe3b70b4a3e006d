"""Column roles: which columns hold the labels, the probabilities and the role columns.

Label columns are found by common names (:data:`LABEL_NAMES`), probability or logit
columns by number type and name patterns (:data:`PROB_PREFIX`, :data:`PROB_PAREN`),
and the optional ``model``, ``split`` and ``group`` columns by :data:`ROLE_NAMES`, all
matched case-insensitively. When a choice is ambiguous, :class:`ColumnError` names
the :func:`core.data.load_predictions` argument that resolves it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from core.base.errors import DataError, arg
from core.base.names import quoted
from core.base.validation import ROW_SUM_TOL
from core.data.lint import LintFinding
from core.data.probabilities import numeric_matrix
from core.data.tables import MISSING_TOKENS, LoadedTable

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


def find_roles(columns: Sequence[str]) -> dict[str, str]:
    """Return the role columns found by name (:data:`ROLE_NAMES`): role → column."""
    lower = {c.lower(): c for c in reversed(columns)}
    roles = {}
    for role, options in ROLE_NAMES.items():
        for opt in options:
            if opt in lower:
                roles[role] = lower[opt]
                break
    return roles


def find_label_column(
    frame: pd.DataFrame, table: LoadedTable, label_column: str | int | None, used: set[str]
) -> str:
    """Return the label column: the one asked for, else the one found by name or position."""
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
                f"No column named {label_column!r}. Columns: {column_list(columns)}.",
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
            f"Several columns could be the labels: {column_list(named)}. Use "
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
        f"Could not tell which column holds the labels among {column_list(free)}. Use "
        f"{arg('label_column')} (or {arg('labels')} for a separate labels file); common names "
        "such as 'label', 'y' or 'target' are found automatically.",
        argument="label_column",
        candidates=free,
        columns=columns,
    )


def column_list(cols: Sequence[str], limit: int = 12) -> str:
    """Return column names for a message, at most ``limit`` of them and how many more."""
    shown = ", ".join(quoted(c) for c in cols[:limit])
    return shown + (f" and {len(cols) - limit} more" if len(cols) > limit else "") or "(none)"


def class_part(column: str) -> str | None:
    """Return the class a probability column names (``p_cat`` → ``cat``), or None."""
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
    P = numeric_matrix(frame, list(cols), strict=False)
    ok = np.isfinite(P).all(axis=1)
    if not ok.any():
        return False
    P = P[ok]
    return bool(np.abs(P.sum(axis=1) - 1.0).max() <= ROW_SUM_TOL and P.min() >= 0 and P.max() <= 1)


def _parsed_text(series: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Return a column's present values as stripped text, and them as numbers (NaN: none)."""
    texts = series.dropna().astype(str).str.strip()
    return texts, pd.to_numeric(texts, errors="coerce")


def _mostly_numeric(series: pd.Series) -> bool:
    texts, parsed = _parsed_text(series)
    return not texts.empty and parsed.notna().mean() >= 0.9


@dataclass(frozen=True, eq=False)
class ColumnCandidates:
    """The columns that may hold probabilities, as the rules of :data:`PROB_COLUMN_RULES` see them.

    Attributes
    ----------
    frame : pandas.DataFrame
        The table.
    numeric : list of str
        Columns of numbers (or of text that mostly reads as numbers, or named like a
        class's probability), in table order.
    label_set : set of str
        The distinct label values, as text.
    text_labels : bool
        Whether the labels are text (class names) rather than numbers.
    """

    frame: pd.DataFrame
    numeric: list[str]
    label_set: set[str]
    text_labels: bool


@dataclass(frozen=True)
class ColumnRule:
    """One rule of the loader's choice of probability columns.

    Attributes
    ----------
    name : str
        What the rule goes by.
    description : str
        Which columns it picks.
    pick : callable
        ``pick(candidates) -> list of str or None``: the columns, or None when the rule
        does not apply to the table.
    check_rows : bool
        Whether columns picked for being numeric alone must form probability rows.
    """

    name: str
    description: str
    pick: Callable[[ColumnCandidates], list[str] | None]
    check_rows: bool = False


def _by_label_names(c: ColumnCandidates) -> list[str] | None:
    if not c.text_labels or len(c.label_set) < 2:
        return None
    by_name = [
        col for col in c.numeric if col in c.label_set or (class_part(col) or "\0") in c.label_set
    ]
    # a column that names a class is a class, observed or not: every column named in the
    # same form as a column of an observed class ("p_{}") is one
    forms = {_name_form(col) for col in by_name} - {"{}"}
    named = [col for col in c.numeric if col in by_name or _name_form(col) in forms]
    if len(named) >= 2 and not forms and not _sums_to_one(c.frame, named):
        # bare class names ("cat", "dog"): the other numeric columns complete the rows
        named = c.numeric if _sums_to_one(c.frame, c.numeric) else named
    return named if len(named) >= 2 else None


def _by_class_pattern(c: ColumnCandidates) -> list[str] | None:
    return [col for col in c.numeric if class_part(col) is not None] or None


#: How the loader chooses the probability columns when none are named, in order: the first
#: rule that applies picks them.
PROB_COLUMN_RULES: tuple[ColumnRule, ...] = (
    ColumnRule(
        "label-names",
        "columns named after the label values ('cat', 'p_cat', 'P(cat)'), with every column "
        "named in the same form",
        _by_label_names,
    ),
    ColumnRule(
        "class-pattern",
        "columns named like a class's probability ('p_<class>', 'prob_<class>', 'P(<class>)')",
        _by_class_pattern,
    ),
    ColumnRule(
        "numeric",
        "every numeric column, which must then form probability rows (or be logits)",
        lambda c: list(c.numeric),
        check_rows=True,
    ),
)


def _given_prob_columns(
    frame: pd.DataFrame, prob_columns: Sequence[str] | str, used: set[str], headerless: bool
) -> tuple[list[str], list[LintFinding]]:
    """Return the probability columns a user named, refusing a name that does not fit."""
    columns = list(frame.columns)
    wanted = [prob_columns] if isinstance(prob_columns, str) else list(prob_columns)
    lower = {c.lower(): c for c in reversed(columns)}
    missing = [w for w in wanted if str(w).lower() not in lower]
    if missing:
        raise ColumnError(
            f"Probability column(s) {column_list(missing)} not found. Columns: "
            f"{column_list(columns)}.",
            argument="prob_columns",
            candidates=[c for c in columns if c not in used],
            columns=columns,
        )
    if not wanted:
        raise DataError("prob_columns is empty; name at least one probability column.")
    chosen = [lower[str(w).lower()] for w in wanted]
    _refuse_taken(chosen, used, columns)
    if len(set(chosen)) < len(chosen):
        raise DataError(
            f"prob_columns names a column more than once ({column_list(chosen)}); each class "
            "has one probability column."
        )
    rest = [c for c in columns if c not in used and c not in chosen]
    return chosen, [ignored_note(rest)] if rest and not headerless else []


def _refuse_taken(chosen: Sequence[str], used: set[str], columns: list[str]) -> None:
    """Refuse named probability columns that the table uses in another role."""
    taken = [c for c in chosen if c in used]
    if taken:
        raise ColumnError(
            f"prob_columns names {column_list(taken)}, which the table uses as its label "
            "(or model, split or group) column. Choose the probability columns only, or "
            f"use {arg('label_column')} with the column that holds the labels.",
            argument="prob_columns",
            candidates=[c for c in columns if c not in used],
            columns=columns,
        )


def _split_free(frame: pd.DataFrame, used: set[str]) -> tuple[list[str], list[str], list[str]]:
    """Return the free columns, those that may hold probabilities and those left out.

    Left out: ids, predictions and label-like names, then text columns.
    """
    free = [c for c in frame.columns if c not in used]
    ignored = [c for c in free if c.lower() in ID_NAMES | PRED_NAMES or c.lower() in LABEL_NAMES]
    free = [c for c in free if c not in ignored]
    numeric = []
    for c in free:
        kind = frame[c].dtype.kind
        if kind in "iuf":
            numeric.append(c)
        elif kind in "OSUT" and (class_part(c) is not None or _mostly_numeric(frame[c])):
            numeric.append(c)  # kept so that the non-numeric values are reported
        else:
            ignored.append(c)
    return free, numeric, ignored


def _refuse_half_read(frame: pd.DataFrame, chosen: str, left_out: Sequence[str]) -> None:
    """Refuse one probability column picked beside a left-out column of numbers and text.

    Such a column is most likely the other class's probabilities with a few values that are
    not numbers; reading the one column left as P(y=1) would silently score the wrong class.
    """
    for c in left_out:
        if frame[c].dtype.kind not in "OSUT":
            continue
        texts, parsed = _parsed_text(frame[c])
        present = ~texts.str.lower().isin(MISSING_TOKENS)
        if not present.any():
            continue
        if parsed[present].notna().mean() >= 0.5:
            words = parsed.isna()
            bad = texts[words].iloc[0] if words.any() else ""
            raise ColumnError(
                f"Column {c!r} holds numbers and text (such as {bad[:40]!r}), so it was not "
                f"read as probabilities, and {chosen!r} alone would be read as P(y=1). Fix "
                f"the values of {c!r} (mark missing ones NA), or choose the probability "
                f"columns with {arg('prob_columns')}.",
                argument="prob_columns",
                candidates=[chosen, c],
                columns=list(frame.columns),
            )


def _refuse_copies(chosen: Sequence[str], repeated: frozenset[str]) -> None:
    copies = sorted({c for c in chosen if c in repeated or c.rsplit(".", 1)[0] in repeated})
    if copies:
        original = sorted({c if c in repeated else c.rsplit(".", 1)[0] for c in copies})
        raise DataError(
            f"Column name(s) {column_list(original)} appear more than once among the probability "
            "columns; each class has exactly one column. Rename or drop the copies, or use "
            f"{arg('prob_columns')} to choose the columns yourself."
        )


def _refuse_non_rows(frame: pd.DataFrame, chosen: list[str]) -> None:
    """Refuse numeric columns that do not form probability rows."""
    P = numeric_matrix(frame, chosen, strict=False)
    ok = np.isfinite(P).all(axis=1)
    if not ok.any():
        return
    sums = P[ok].sum(axis=1)
    if np.abs(sums - 1.0).max() > ROW_SUM_TOL or P[ok].min() < 0 or P[ok].max() > 1:
        raise ColumnError(
            f"Columns {column_list(chosen)} are all numeric but do not form probability "
            f"rows (they do not sum to 1). Use {arg('prob_columns')} with the "
            f"probability columns in class order (and {arg('logits')} if they are "
            "logits).",
            argument="prob_columns",
            candidates=chosen,
            columns=list(frame.columns),
        )


def find_prob_columns(
    frame: pd.DataFrame,
    prob_columns: Sequence[str] | str | None,
    used: set[str],
    label_values: pd.Series,
    logits: bool | str,
    headerless: bool,
    repeated: frozenset[str] = frozenset(),
) -> tuple[list[str], list[LintFinding]]:
    """Return the probability columns in class order and the findings their choice made.

    Columns named by ``prob_columns`` are taken as they are; otherwise the first rule of
    :data:`PROB_COLUMN_RULES` that applies picks them among the columns that are not
    labels, roles, ids or text.
    """
    if prob_columns is not None:
        return _given_prob_columns(frame, prob_columns, used, headerless)
    columns = list(frame.columns)
    free, numeric, ignored = _split_free(frame, used)
    candidates = ColumnCandidates(
        frame,
        numeric,
        {str(v) for v in pd.unique(label_values.dropna())},
        label_values.dtype.kind in "OSUT",
    )
    for rule in PROB_COLUMN_RULES:
        chosen = rule.pick(candidates)
        if chosen is not None:
            break
    if len(chosen) == 1:
        _refuse_half_read(frame, chosen[0], [c for c in ignored if c in free])
    ignored += [c for c in numeric if c not in chosen]
    _refuse_copies(chosen, repeated)
    if not chosen:
        raise ColumnError(
            f"No numeric probability column found among {column_list(free or columns)}. Use "
            f"{arg('prob_columns')} with the probability (or logit) columns in class order.",
            argument="prob_columns",
            candidates=free,
            columns=columns,
        )
    if rule.check_rows and len(chosen) >= 2 and not headerless and logits is not True:
        _refuse_non_rows(frame, chosen)
    return chosen, [ignored_note(ignored)] if ignored else []


def ignored_note(ignored: Sequence[str]) -> LintFinding:
    """Return the finding that names the columns the loader did not use."""
    return LintFinding(
        "ignored-columns",
        "info",
        f"Column(s) {column_list(list(ignored))} were not used (not probabilities, labels, model, "
        f"split or group). Use {arg('prob_columns')} to choose the probability columns "
        "yourself.",
        columns=tuple(ignored),
    )
