"""Load predictions and labels from files, DataFrames or arrays, with a lint report.

Accepted layouts (see :func:`load_predictions`):

- **binary**: one P(y=1) column and a label column (0/1, booleans, or two values
  with a ``positive_class``);
- **multiclass**: K probability columns and a label column holding ``0..K-1``,
  ``1..K`` (converted, with a notice) or class names matching the column names;
- **headerless matrix + labels file**: a CSV of probabilities without a header
  row and a separate file with one label per row;
- **logits** instead of probabilities in any of these, converted by softmax
  (sigmoid for one column) with a notice.

Optional ``model``, ``split`` and ``group`` columns (names matched
case-insensitively) are kept as object arrays. Files are parsed as CSV or Parquet
(pyarrow); nothing is ever unpickled. Problems that make the data unusable raise
:class:`core.errors.DataError` with what is wrong and how to fix it; everything
else goes into the :class:`core.lint.LintReport` of the result.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core._numeric import sigmoid, softmax
from core._validation import ROW_SUM_TOL, check_predictions, trust
from core.errors import DataError
from core.io import _is_filelike, _is_pathlike, _read, _source_table, _Table, read_table
from core.lint import VALUE_CODES, LintFinding, LintReport, first_rows, format_rows, lint_values

__all__ = [
    "ColumnError",
    "LintFinding",
    "LintReport",
    "Predictions",
    "as_predictions",
    "combine_models",
    "load_predictions",
    "read_table",
]

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
POSITIVE_WORDS = frozenset({"1", "true", "t", "yes", "y", "pos", "positive"})
NEGATIVE_WORDS = frozenset({"0", "false", "f", "no", "n", "neg", "negative"})
#: Values this far outside [0, 1] are rounding noise and are clipped.
CLIP_TOL = 1e-6


class ColumnError(DataError):
    """The columns cannot be inferred unambiguously; one argument resolves it.

    Attributes
    ----------
    argument : str
        The :func:`load_predictions` argument to pass (``"label_column"``,
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


@dataclass(frozen=True, eq=False)
class Predictions:
    """Validated predictions, labels and their lint report.

    Attributes
    ----------
    probs : numpy.ndarray
        ``(n, K)`` float64 probabilities, ``K >= 2``, rows summing to 1 (read-only).
    labels : numpy.ndarray
        ``(n,)`` int64 class indices ``0..K-1`` (read-only).
    class_names : tuple of str
        Names of the ``K`` classes (for binary input: negative, positive).
    binary : bool
        Whether the input was a single P(y=1) column.
    model, split, group : numpy.ndarray or None
        Object arrays of the optional role columns.
    lint : LintReport
        Findings of the load.
    source : str
        Where the data came from (a file name, ``"DataFrame"`` or ``"arrays"``).
    digest : str
        Exact content hash (blake2b) of the arrays, class names and role columns;
        equal data gives an equal digest, so caches can key on it.
    columns : dict
        The column mapping used: ``label``, ``probs``, ``model``, ``split``,
        ``group`` (source column names or None), ``positive_class``, ``logits``.
    """

    probs: np.ndarray
    labels: np.ndarray
    class_names: tuple[str, ...]
    binary: bool
    model: np.ndarray | None
    split: np.ndarray | None
    group: np.ndarray | None
    lint: LintReport
    source: str
    digest: str
    columns: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.labels.shape[0])

    @property
    def n_classes(self) -> int:
        """Number of classes ``K``."""
        return int(self.probs.shape[1])

    @property
    def models(self) -> tuple[str, ...]:
        """Model names in order of first appearance (empty without a model column)."""
        if self.model is None:
            return ()
        return tuple(str(m) for m in pd.unique(self.model))

    def subset(self, mask: np.ndarray | Sequence[int] | Sequence[bool]) -> Predictions:
        """Return the rows selected by a boolean mask or an index array.

        The value-level lint findings (ties, missing classes, few rows, ...) are
        recomputed on the subset; findings about the load itself are kept.

        Parameters
        ----------
        mask : array_like
            Boolean ``(n,)`` mask or integer row positions.

        Returns
        -------
        Predictions
            The subset, with its own digest.

        Raises
        ------
        DataError
            If the subset is empty or the mask has the wrong length.
        """
        m = np.asarray(mask)
        if m.dtype == bool and m.shape != (self.n,):
            raise DataError(f"A boolean mask must have {self.n} entries; got shape {m.shape}.")
        idx = np.flatnonzero(m) if m.dtype == bool else m.astype(np.int64).ravel()
        if idx.size == 0:
            raise DataError("The selection is empty: no rows match.")
        if idx.min() < -self.n or idx.max() >= self.n:
            raise DataError(f"Row positions must lie in 0..{self.n - 1}.")
        probs, labels = self.probs[idx], self.labels[idx]
        roles = {k: None if v is None else v[idx] for k, v in self._roles().items()}
        kept = [f for f in self.lint if f.code not in VALUE_CODES]
        found = lint_values(
            probs,
            labels,
            binary=self.binary,
            class_names=self.class_names,
            prob_columns=tuple(self.columns.get("probs") or ()),
        )
        return _make(
            probs,
            labels,
            self.class_names,
            self.binary,
            roles,
            LintReport(tuple(kept + found)),
            self.source,
            dict(self.columns),
        )

    def by_model(self) -> dict[str, Predictions]:
        """Split a long file with a ``model`` column into one :class:`Predictions` per model.

        Returns
        -------
        dict of str to Predictions
            In order of first appearance; without a model column, one entry named
            after the source holding ``self``.
        """
        if self.model is None:
            return {Path(self.source).stem or "model": self}
        names = self.model.astype(str)
        return {m: self.subset(names == m) for m in self.models}

    def _roles(self) -> dict[str, np.ndarray | None]:
        return {"model": self.model, "split": self.split, "group": self.group}


def as_predictions(data: Any, *, class_names: Sequence[str] | None = None) -> Predictions:
    """Return ``data`` as :class:`Predictions`: the one input of every page-level analysis.

    Parameters
    ----------
    data : Predictions or tuple
        Loaded predictions (returned as they are), or a ``(probs, labels)`` pair of arrays:
        ``probs`` ``(n,)`` P(y=1) (binary predictions) or ``(n, K)`` class probabilities,
        ``labels`` class indices ``0..K−1``. The arrays are copied (a :class:`Predictions`
        is read-only) and not linted.
    class_names : sequence of str, optional
        Class names of a pair of arrays (default ``"0"``, ``"1"``, ...).

    Returns
    -------
    Predictions
        The predictions.

    Raises
    ------
    DataError
        For invalid arrays, or anything else than predictions or a pair.

    Examples
    --------
    >>> pred = as_predictions(([0.2, 0.9], [0, 1]))
    >>> pred.binary, pred.probs.shape
    (True, (2, 2))
    """
    if isinstance(data, Predictions):
        if class_names is not None and tuple(class_names) != data.class_names:
            raise DataError("class_names are given by the Predictions object; leave them out.")
        return data
    if not isinstance(data, tuple) or len(data) != 2:
        raise DataError(
            "Pass predictions as a Predictions object (core.load_predictions) or a "
            "(probs, labels) pair of arrays."
        )
    p, y, binary = check_predictions(*data)
    k = p.shape[1]
    names = tuple(str(c) for c in class_names) if class_names is not None else None
    if names is None:
        names = tuple(str(i) for i in range(k))
    if len(names) != k:
        raise DataError(f"{len(names)} class names given for {k} classes.")
    return _make(
        np.array(p, dtype=np.float64, copy=True),
        np.array(y, dtype=np.int64, copy=True),
        names,
        binary,
        {},
        LintReport(()),
        "arrays",
        {},
    )


# ---------------------------------------------------------------------------------------------
# the loader


def load_predictions(
    source: Any,
    *,
    labels: Any = None,
    prob_columns: Sequence[str] | str | None = None,
    label_column: str | int | None = None,
    positive_class: Any = None,
    logits: bool | str = "auto",
    renormalize: bool = False,
    drop_missing: bool = False,
    class_names: Sequence[str] | None = None,
    name: str | None = None,
) -> Predictions:
    """Load predictions and labels, infer their layout and lint them.

    Parameters
    ----------
    source : path, file object, bytes, DataFrame or array_like
        A CSV or Parquet file (chosen by extension, else by content; ``.gz`` is
        decompressed), its bytes or an open binary file (pass ``name`` for the
        extension), a DataFrame, or an array of probabilities (``(n,)`` P(y=1) or
        ``(n, K)``) with ``labels``.
    labels : path, file object, bytes or array_like, optional
        Labels kept apart from the probabilities: a labels file (one label per
        row, header optional, e.g. the CIFAR format) or an array. When given, the
        table's columns are all probability candidates.
    prob_columns : str or sequence of str, optional
        The probability (or logit) columns, in class order. Default: inferred.
    label_column : str or int, optional
        The label column (a name, matched case-insensitively, or a position for a
        headerless file). Default: inferred from common names (``label``, ``y``,
        ``target``, ``class``, ...).
    positive_class : optional
        For one probability column with two label values: the value the column
        is the probability of. Default: inferred from the column name or
        yes/no-style values.
    logits : {"auto", True, False}
        Whether the columns are logits. ``"auto"`` converts (with a notice) when
        there are negative values: in one column, or with rows not summing to 1 in
        several columns. Non-negative values above 1 are refused (percentages or
        unnormalised scores: see ``renormalize``).
    renormalize : bool
        Divide rows that do not sum to 1 by their sum (with a notice) instead of
        refusing them.
    drop_missing : bool
        Drop rows with NaN/inf probabilities or missing labels (with a notice)
        instead of refusing them.
    class_names : sequence of str, optional
        Class names for a headerless matrix or arrays (default ``"0"``, ``"1"``, ...).
    name : str, optional
        File name of bytes or a file object, e.g. an uploaded file's name.

    Returns
    -------
    Predictions
        The validated data, its lint report and digest.

    Raises
    ------
    ColumnError
        If the label or probability columns (or the positive class) cannot be
        inferred; ``argument`` and ``candidates`` say what to pass.
    DataError
        If the data cannot be used (see the message for the fix).

    Notes
    -----
    Row numbers in messages and findings are 0-based positions of data rows.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"p": [0.2, 0.7, 0.9], "y": [0, 1, 1]})
    >>> pred = load_predictions(df)
    >>> pred.probs[:, 1].tolist(), pred.labels.tolist(), pred.binary
    ([0.2, 0.7, 0.9], [0, 1, 1], True)
    """
    if logits not in ("auto", True, False):
        raise DataError(f"logits must be 'auto', True or False, not {logits!r}.")
    table = _source_table(source, name)
    frame = table.frame
    findings = list(table.findings)
    columns = tuple(frame.columns)
    if frame.shape[0] == 0:
        raise DataError(f"{table.name} has no data rows.")
    roles = {} if table.headerless else _find_roles(columns)
    used = set(roles.values())

    if labels is not None:
        label_values = _external_labels(labels, label_column, frame.shape[0])
        label_name = None
    else:
        label_name = _find_label_column(frame, table, label_column, used)
        used.add(label_name)
        label_values = frame[label_name]
    label_values = _label_series(label_values)
    prob_names, notes = _find_prob_columns(
        frame, prob_columns, used, label_values, logits, table.headerless
    )
    findings += notes
    P = _numeric_matrix(frame, prob_names)

    # missing values in probabilities or labels
    bad = ~np.isfinite(P).all(axis=1) | label_values.isna().to_numpy()
    keep = None
    if bad.any():
        rows, count = first_rows(bad)
        if not drop_missing:
            raise DataError(
                f"{count} of {P.shape[0]} rows have a missing, NaN or infinite probability or "
                f"label ({format_rows(rows, count)}). Fix or remove them, or load with "
                "drop_missing=True to drop them."
            )
        if count == P.shape[0]:
            raise DataError("Every row has a missing, NaN or infinite probability or label.")
        findings.append(
            LintFinding(
                "missing-values",
                "warning",
                f"Dropped {count} rows with a missing, NaN or infinite probability or label "
                "(drop_missing=True). Results describe the remaining rows only.",
                rows=rows,
                columns=tuple(prob_names) + ((label_name,) if label_name else ()),
                count=count,
            )
        )
        keep = ~bad
        P = P[keep]
        label_values = label_values[keep].reset_index(drop=True)

    P, notes = _to_probabilities(P, prob_names, logits, renormalize)
    findings += notes
    names = _class_names(prob_names, table.headerless, class_names, P.shape[1])
    binary = P.shape[1] == 1
    y, names, positive, notes = _encode_labels(
        label_values, names, binary, positive_class, prob_names, label_name, columns
    )
    findings += notes
    if binary:
        P = np.column_stack([1.0 - P[:, 0], P[:, 0]])
    if P.shape[0] < 2:
        raise DataError(
            f"Only {P.shape[0]} usable row: calibration needs at least 2 predictions "
            "(and a few hundred to say much)."
        )
    findings += lint_values(P, y, binary=binary, class_names=names, prob_columns=prob_names)
    role_arrays = {}
    for role in ("model", "split", "group"):
        col = roles.get(role)
        arr = None
        if col is not None:
            arr = frame[col].to_numpy(dtype=object)
            arr = arr[keep] if keep is not None else arr
            arr = np.where(pd.isna(arr), "", arr).astype(str).astype(object)
        role_arrays[role] = arr
    mapping = {
        "label": label_name,
        "probs": list(prob_names),
        **{r: roles.get(r) for r in ("model", "split", "group")},
        "positive_class": positive,
        "logits": any(f.code == "logits-converted" for f in findings),
    }
    return _make(P, y, names, binary, role_arrays, LintReport(tuple(findings)), table.name, mapping)


def combine_models(parts: Mapping[str, Predictions]) -> Predictions:
    """Stack several models' predictions (e.g. one file per model) into one long table.

    Parameters
    ----------
    parts : mapping of str to Predictions
        Model name → its predictions; all must have the same class names and layout.

    Returns
    -------
    Predictions
        Rows of every part in order, with a ``model`` column holding the names
        (which replace any model column of the parts). ``by_model()`` undoes it.

    Raises
    ------
    DataError
        If there are no parts or their classes differ.
    """
    if not parts:
        raise DataError("No predictions to combine.")
    items = list(parts.items())
    first = items[0][1]
    for name, part in items[1:]:
        if part.class_names != first.class_names or part.binary != first.binary:
            raise DataError(
                f"Model {name!r} has classes {part.class_names} but {items[0][0]!r} has "
                f"{first.class_names}; only predictions of the same classes can be compared."
            )
    roles: dict[str, np.ndarray | None] = {
        "model": np.concatenate([np.full(p.n, str(m), dtype=object) for m, p in items])
    }
    for role in ("split", "group"):
        arrays = [getattr(p, role) for _, p in items]
        roles[role] = None if any(a is None for a in arrays) else np.concatenate(arrays)
    findings = []
    for m, p in items:
        for f in p.lint:
            if f.code not in VALUE_CODES:
                findings.append(dataclasses.replace(f, message=f"{m}: {f.message}"))
    probs = np.concatenate([p.probs for _, p in items])
    labels = np.concatenate([p.labels for _, p in items])
    findings += lint_values(probs, labels, binary=first.binary, class_names=first.class_names)
    mapping = dict(first.columns, model="model")
    source = " + ".join(p.source for _, p in items)
    return _make(
        probs,
        labels,
        first.class_names,
        first.binary,
        roles,
        LintReport(tuple(findings)),
        source,
        mapping,
    )


def _find_roles(columns: Sequence[str]) -> dict[str, str]:
    lower = {c.lower(): c for c in reversed(columns)}
    roles = {}
    for role, options in ROLE_NAMES.items():
        for opt in options:
            if opt in lower:
                roles[role] = lower[opt]
                break
    return roles


def _external_labels(labels: Any, label_column: str | int | None, n: int) -> np.ndarray:
    if _is_pathlike(labels) or _is_filelike(labels) or isinstance(labels, (bytes, bytearray)):
        table = _read(labels, None)
        frame = table.frame
        if frame.shape[1] == 1:
            values = frame.iloc[:, 0].to_numpy()
        else:
            col = _find_label_column(frame, table, label_column, set())
            values = frame[col].to_numpy()
        what = f"the labels file {table.name}"
    elif isinstance(labels, pd.DataFrame):
        if labels.shape[1] != 1:
            raise DataError(
                f"labels must be one column; got a DataFrame with {labels.shape[1]} columns."
            )
        values = labels.iloc[:, 0].to_numpy()
        what = "the labels"
    else:
        values = np.asarray(labels, dtype=object if not isinstance(labels, np.ndarray) else None)
        if values.ndim == 2 and values.shape[1] == 1:
            values = values[:, 0]
        if values.ndim != 1:
            raise DataError(f"labels must be a 1-D vector; got shape {values.shape}.")
        what = "the labels"
    if values.shape[0] != n:
        raise DataError(
            f"The predictions have {n} rows but {what} has {values.shape[0]}; they must match row "
            "for row, in the same order (check for a header line or a trailing summary row)."
        )
    return values


def _find_label_column(
    frame: pd.DataFrame, table: _Table, label_column: str | int | None, used: set[str]
) -> str:
    columns = list(frame.columns)
    if label_column is not None:
        if isinstance(label_column, (int, np.integer)) and not isinstance(label_column, bool):
            pos = int(label_column)
            if not -len(columns) <= pos < len(columns):
                raise DataError(
                    f"label_column={label_column} is out of range: the table has {len(columns)} "
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
    if table.headerless:
        raise ColumnError(
            f"{table.name} has no header row, so its label column cannot be found by name. Pass "
            "labels= (a labels file or array, as in the CIFAR format) or label_column=<position>.",
            argument="labels",
            columns=columns,
        )
    free = [c for c in columns if c not in used]
    named = [c for c in free if c.lower() in LABEL_NAMES]
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        raise ColumnError(
            f"Several columns could be the labels: {_col_list(named)}. Pass label_column= with one "
            "of them.",
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
    raise ColumnError(
        f"Could not tell which column holds the labels among {_col_list(free)}. Pass "
        "label_column= (or labels= for a separate labels file); common names such as 'label', "
        "'y' or 'target' are found automatically.",
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
        if len(by_name) >= 2:
            chosen, basis = by_name, "named"
    if basis == "numeric":
        patterned = [c for c in numeric if _class_part(c) is not None]
        if patterned:
            chosen, basis = patterned, "named"
    ignored += [c for c in numeric if c not in chosen]
    if not chosen:
        raise ColumnError(
            f"No numeric probability column found among {_col_list(free or columns)}. Pass "
            "prob_columns= with the probability (or logit) columns in class order.",
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
                    "rows (they do not sum to 1). Pass prob_columns= with the probability "
                    "columns in class order (and logits=True if they are logits).",
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
        "split or group). Pass prob_columns= to choose the probability columns yourself.",
        columns=tuple(ignored),
    )


def _label_series(values: Any) -> pd.Series:
    if isinstance(values, pd.Series) and values.dtype != object:
        return values.reset_index(drop=True)
    arr = np.asarray(values)
    if arr.dtype.kind in "biuf":
        return pd.Series(arr, copy=False)
    return pd.Series(np.asarray(values, dtype=object), copy=False).infer_objects()


def _numeric_matrix(frame: pd.DataFrame, names: Sequence[str], strict: bool = True) -> np.ndarray:
    if all(frame[c].dtype.kind in "iuf" for c in names):
        return frame[list(names)].to_numpy(dtype=np.float64)
    cols = []
    for c in names:
        s = frame[c]
        if s.dtype.kind == "b":
            s = s.astype(np.float64)
        elif s.dtype.kind not in "iuf":
            text = s.astype(str).str.strip()
            parsed = pd.to_numeric(text, errors="coerce")
            bad = parsed.isna().to_numpy() & s.notna().to_numpy()
            if bad.any() and strict:
                rows, count = first_rows(bad)
                example = text.to_numpy()[rows[0]]
                hint = ""
                if re.fullmatch(r"-?\d+,\d+", example):
                    hint = " It looks like a decimal comma: save the file with decimal points."
                raise DataError(
                    f"Probability column {c!r} holds non-numeric values such as {example!r} "
                    f"({format_rows(rows, count)}). Fix these cells or choose other columns "
                    f"with prob_columns=.{hint}"
                )
            s = parsed
        cols.append(s.to_numpy(dtype=np.float64, na_value=np.nan))
    return np.column_stack(cols) if cols else np.empty((frame.shape[0], 0))


def _to_probabilities(
    P: np.ndarray, names: Sequence[str], logits: bool | str, renormalize: bool
) -> tuple[np.ndarray, list[LintFinding]]:
    findings: list[LintFinding] = []
    cols = tuple(names)
    k = P.shape[1]
    negative = bool((P < -CLIP_TOL).any())
    sums = P.sum(axis=1)
    sums_ok = k == 1 or bool(np.abs(sums - 1.0).max() <= ROW_SUM_TOL)
    # logits take both signs; non-negative scores above 1 are rather percentages or counts
    if (
        logits is True
        or (logits == "auto" and negative and not sums_ok)
        or (logits == "auto" and negative and k == 1)
    ):
        log_probs = k > 1 and P.max() <= 0 and np.abs(_logsumexp(P)).max() <= ROW_SUM_TOL
        P = sigmoid(P) if k == 1 else softmax(P)
        how = "sigmoid" if k == 1 else "softmax"
        if logits is True:
            why = "logits=True"
        else:
            why = "negative values" + ("" if k == 1 else " and rows not summing to 1")
        kind = "log-probabilities" if log_probs else "logits"
        findings.append(
            LintFinding(
                "logits-converted",
                "warning",
                f"The scores were read as {kind} ({why}) and converted to probabilities with a "
                f"{how}. If they are already probabilities, load with logits=False to see "
                "what is wrong with them.",
                columns=cols,
                count=int(P.shape[0]),
            )
        )
        return P, findings
    if k > 1 and renormalize and not negative:
        P, note = _renormalize(P, sums, cols)
        findings += note
        sums = P.sum(axis=1)
    far = (P < -CLIP_TOL) | (P > 1.0 + CLIP_TOL)
    if far.any():
        rows, count = first_rows(far.any(axis=1))
        if k > 1 and sums_ok:
            hint = "Their rows sum to 1, so they are not logits either: fix the values."
        elif negative:
            hint = "If these are logits, load with logits=True; otherwise fix the values."
        elif k > 1:
            hint = (
                "If these are percentages or unnormalised scores, load with renormalize=True; "
                "if they are logits, with logits=True."
            )
        else:
            hint = "If these are percentages, divide them by 100; if logits, load with logits=True."
        raise DataError(
            f"{count} rows have probabilities outside [0, 1] (values from {np.min(P):.4g} "
            f"to {np.max(P):.4g}; {format_rows(rows, count)}). {hint}"
        )
    outside = (P < 0.0) | (P > 1.0)
    if outside.any():
        rows, count = first_rows(outside.any(axis=1))
        P = np.clip(P, 0.0, 1.0)
        findings.append(
            LintFinding(
                "clipped",
                "info",
                f"{count} rows had probabilities outside [0, 1] by less than {CLIP_TOL:g} "
                "(rounding); they were clipped to [0, 1].",
                rows=rows,
                columns=cols,
                count=count,
            )
        )
        sums = P.sum(axis=1)
    if k > 1:
        dev = np.abs(sums - 1.0)
        off = dev > ROW_SUM_TOL
        if off.any():
            if renormalize:
                P, note = _renormalize(P, sums, cols)
                return P, findings + note
            rows, count = first_rows(off)
            raise DataError(
                f"{count} of {P.shape[0]} rows of probabilities do not sum to 1 (largest "
                f"deviation {float(dev.max()):.3g}; {format_rows(rows, count)}). Load with "
                "renormalize=True to divide each row by its sum, or check that all K class "
                "columns were selected (prob_columns=) and that they are not logits "
                "(logits=True)."
            )
    return P, findings


def _renormalize(
    P: np.ndarray, sums: np.ndarray, cols: tuple[str, ...]
) -> tuple[np.ndarray, list[LintFinding]]:
    dev = np.abs(sums - 1.0)
    off = dev > ROW_SUM_TOL
    if not off.any():
        return P, []
    if (sums <= 0).any():
        rows, count = first_rows(sums <= 0)
        raise DataError(
            f"{count} rows of probabilities are all zero ({format_rows(rows, count)}) and cannot "
            "be renormalised; fix or drop them."
        )
    rows, count = first_rows(off)
    note = LintFinding(
        "renormalized",
        "warning",
        f"{count} rows did not sum to 1 (largest deviation {float(dev.max()):.3g}) and were "
        "divided by their sum (renormalize=True).",
        rows=rows,
        columns=cols,
        count=count,
    )
    return P / sums[:, None], [note]


def _logsumexp(a: np.ndarray) -> np.ndarray:
    m = a.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis=1, keepdims=True)))[:, 0]


def _class_names(
    prob_names: Sequence[str], headerless: bool, given: Sequence[str] | None, k: int
) -> tuple[str, ...]:
    if given is not None:
        names = tuple(str(c) for c in given)
        if len(names) != max(k, 2):
            raise DataError(f"{len(names)} class names given for {max(k, 2)} classes.")
        return names
    if k == 1:
        return ("0", "1")
    if headerless:
        return tuple(str(i) for i in range(k))
    parts = [_class_part(c) for c in prob_names]
    if all(parts) and len(set(parts)) == k:
        return tuple(parts)  # type: ignore[arg-type]
    return tuple(prob_names)


def _encode_labels(
    values: pd.Series,
    names: tuple[str, ...],
    binary: bool,
    positive_class: Any,
    prob_names: Sequence[str],
    label_name: str | None,
    columns: Sequence[str],
) -> tuple[np.ndarray, tuple[str, ...], Any, list[LintFinding]]:
    findings: list[LintFinding] = []
    col = (label_name,) if label_name else ()
    k = 2 if binary else len(names)
    arr = values.to_numpy()
    kind = _label_kind(arr)
    if kind == "bool":
        arr = arr.astype(bool).astype(np.int64)
        kind = "int"
    elif kind == "int":
        arr = (
            np.asarray(arr, dtype=np.float64).astype(np.int64)
            if arr.dtype.kind not in "iu"
            else arr
        )
    elif kind == "str":
        arr = _strings(arr)
    uniques = pd.unique(arr)

    if binary:
        if kind == "float":
            raise DataError(_float_label_message(arr))
        if len(uniques) > 2:
            shown = ", ".join(repr(_py(u)) for u in uniques[:6])
            raise DataError(
                f"There is one probability column but the labels take {len(uniques)} values "
                f"({shown}{' ...' if len(uniques) > 6 else ''}). For multiclass data pass all K "
                "probability columns (prob_columns=)."
            )
        strs = [str(_py(u)) for u in uniques]
        if positive_class is not None:
            pos = str(positive_class)
            if pos not in strs:
                if kind == "int" and len(strs) == 1 and pos in ("0", "1"):
                    strs.append(pos)  # a single observed class: the other is implied
                else:
                    raise ColumnError(
                        f"positive_class={positive_class!r} is not among the label values "
                        f"({', '.join(map(repr, strs))}).",
                        argument="positive_class",
                        candidates=strs,
                        columns=columns,
                    )
            y = (_strings(arr) == pos).astype(np.int64)
            others = [s for s in strs if s != pos]
            neg = others[0] if others else ("0" if pos == "1" else f"not {pos}")
            return y, (neg, pos), _py(positive_class), findings
        if kind == "int":
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
                f"{', '.join(map(str, sorted(ints)))}. Pass positive_class= (the value the "
                "probability column refers to)."
            )
        # two string values: which one is the column about?
        part = (_class_part(prob_names[0]) or prob_names[0]).lower() if prob_names else ""
        match = [s for s in strs if s.lower() == part]
        if not match and len(strs) == 2:
            low = [s.lower() for s in strs]
            if low[0] in POSITIVE_WORDS and low[1] in NEGATIVE_WORDS:
                match = [strs[0]]
            elif low[1] in POSITIVE_WORDS and low[0] in NEGATIVE_WORDS:
                match = [strs[1]]
        if len(match) != 1:
            raise ColumnError(
                f"The labels are the values {', '.join(map(repr, sorted(strs)))}; pass "
                "positive_class= to say which one the probability column is the probability of.",
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
                f"{'column name' if pos.lower() == part else 'label values'}); pass "
                "positive_class= to change it.",
                columns=col,
            )
        )
        y = (arr == pos).astype(np.int64)
        return y, (neg, pos), pos, findings

    # multiclass
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
            f"Label value(s) {_col_list(unknown)} do not match any class name "
            f"({_col_list(list(names))}, taken from the probability columns). Rename the "
            "columns or the labels so that they match, or use integer labels 0..K-1."
        )
    if kind == "float":
        raise DataError(_float_label_message(arr))
    y = arr.astype(np.int64)
    lo, hi = int(y.min()), int(y.max())
    if lo >= 0 and hi <= k - 1:
        return y, names, None, findings
    if lo >= 1 and hi == k:
        findings.append(_one_indexed_note(k, col))
        return y - 1, names, None, findings
    out = (y < 0) | (y > k - 1)
    rows, count = first_rows(out)
    raise DataError(
        f"Labels must be class indices 0..{k - 1} (or 1..{k}) for the {k} probability columns; "
        f"found values from {lo} to {hi} ({count} out of range: {format_rows(rows, count)}). "
        "Check that every class has a probability column, in the same order as the labels."
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


def _strings(arr: np.ndarray) -> np.ndarray:
    return pd.Series(arr, copy=False).astype(str).to_numpy(dtype=object)


def _float_label_message(arr: np.ndarray) -> str:
    f = np.asarray(arr, dtype=np.float64)
    rows, count = first_rows(f != np.round(f))
    return (
        f"Labels must be whole class indices or class names; {count} are fractional "
        f"({format_rows(rows, count)}). Did you pick a probability column as the label column? "
        "Pass label_column= to choose another."
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


def _digest(
    probs: np.ndarray,
    labels: np.ndarray,
    names: tuple[str, ...],
    binary: bool,
    roles: Mapping[str, np.ndarray | None],
) -> str:
    h = hashlib.blake2b(digest_size=16)
    for arr in (probs, labels):
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(memoryview(np.ascontiguousarray(arr)).cast("B"))
    h.update("\x1f".join(names).encode())
    h.update(b"binary" if binary else b"matrix")
    for role in ("model", "split", "group"):
        arr = roles.get(role)
        h.update(role.encode())
        if arr is None:
            h.update(b"\x00")
            continue
        codes, uniques = pd.factorize(arr)
        h.update(codes.astype(np.int64).tobytes())
        h.update("\x1f".join(map(str, uniques)).encode())
    return h.hexdigest()


def _make(
    probs: np.ndarray,
    labels: np.ndarray,
    names: tuple[str, ...],
    binary: bool,
    roles: Mapping[str, np.ndarray | None],
    lint: LintReport,
    source: str,
    mapping: dict[str, Any],
) -> Predictions:
    probs = trust(np.ascontiguousarray(probs, dtype=np.float64))
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    labels.setflags(write=False)
    frozen = {}
    for role in ("model", "split", "group"):
        arr = roles.get(role)
        if arr is not None:
            arr = np.asarray(arr, dtype=object)
            arr.setflags(write=False)
        frozen[role] = arr
    return Predictions(
        probs=probs,
        labels=labels,
        class_names=tuple(names),
        binary=binary,
        model=frozen["model"],
        split=frozen["split"],
        group=frozen["group"],
        lint=lint,
        source=source,
        digest=_digest(probs, labels, tuple(names), binary, frozen),
        columns=mapping,
    )
