"""The loader: :func:`load_predictions` runs every phase of reading predictions.

Read the source table (:mod:`core.data.tables`), find the role, label and
probability columns (:mod:`core.data.columns`) or read a separate labels source,
drop or refuse missing values, turn the scores into probabilities
(:mod:`core.data.probabilities`), encode the labels (:mod:`core.data.labels`), lint
the values (:mod:`core.data.lint`) and build the
:class:`~core.data.predictions.Predictions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.base.errors import DataError, arg
from core.data.columns import (
    LABEL_NAMES,
    ColumnError,
    find_label_column,
    find_prob_columns,
    find_roles,
    ignored_note,
    repeated_names,
)
from core.data.labels import encode_labels, label_series, resolve_class_names
from core.data.limits import LoadLimits
from core.data.lint import LintFinding, LintReport, first_rows, format_rows, lint_values
from core.data.predictions import Predictions, make_predictions
from core.data.probabilities import numeric_matrix, to_probabilities
from core.data.sql import QUERY_NAME, as_query, run_query
from core.data.tables import is_filelike, is_pathlike, read_source, source_table
from core.data.text import kept_row, role_values, text_values

__all__ = ["load_predictions"]


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
    limits: LoadLimits | None = None,
    keep_columns: Sequence[str] | str | None = None,
) -> Predictions:
    """Load predictions and labels, infer their layout and lint them.

    Parameters
    ----------
    source : path, file object, bytes, DataFrame, Query or array_like
        A CSV or Parquet file (chosen by extension, else by content; ``.gz`` is
        decompressed), its bytes or an open binary file (pass ``name`` for the
        extension), a DataFrame, a SQL query or DuckDB relation
        (:class:`core.data.sql.Query`, read as its result's Parquet file), or an array of
        probabilities (``(n,)`` P(y=1) or ``(n, K)``) with ``labels``.
    labels : path, file object, bytes or array_like, optional
        Labels kept apart from the probabilities: a labels file (one label per
        row, header optional, e.g. the CIFAR format) or an array. When given, the
        table's columns are all probability candidates.
    prob_columns : str or sequence of str, optional
        The probability (or logit) columns, in class order. Default: inferred.
    label_column : str or int, optional
        The label column (a name, matched case-insensitively, or a 0-based position;
        a negative position counts from the last column, as in Python: ``-1`` is the
        last). Default: inferred from common names (``label``, ``y``,
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
    limits : LoadLimits, optional
        Bytes, rows and columns a file may hold (default :meth:`LoadLimits.from_env`:
        the defaults, or those of the ``CALIBSCOPE_MAX_*`` environment variables).
    keep_columns : sequence of str or "all", optional
        Further columns to keep on :attr:`Predictions.extra` (grouping or time columns),
        by name (matched case-insensitively); ``"all"`` keeps every column that is not a
        probability, label or role column. Default: none (every other column is dropped).

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
        If the data cannot be used or passes a limit (see the message for the fix).

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
    limits = LoadLimits.from_env() if limits is None else limits
    query = as_query(source)
    if query is not None:  # its result, as a Parquet file (core.data.sql)
        result = run_query(query, max_rows=limits.max_rows)
        try:
            limits.check_rows(result.rows, name or QUERY_NAME, more=result.rows > limits.max_rows)
            table = source_table(result.path, name or QUERY_NAME, limits)
        finally:
            result.folder.cleanup()
    else:
        table = source_table(source, name, limits)
    frame = table.frame
    findings = list(table.findings)
    columns = tuple(frame.columns)
    if frame.shape[0] == 0:
        raise DataError(f"{table.name} has no data rows.")
    roles = {} if table.headerless else find_roles(columns)
    used = set(roles.values())

    if labels is not None:
        label_values = _external_labels(labels, label_column, frame.shape[0], limits)
        label_name = None
        own = _own_label_column(frame, table, used)
        if own is not None:  # the file's own labels: the same, or a contradiction refused
            findings.append(_same_labels(frame[own], label_values, own, table.name, labels))
            used.add(own)
    else:
        label_name = find_label_column(frame, table, label_column, used)
        used.add(label_name)
        label_values = frame[label_name]
    label_values = label_series(label_values)
    prob_names, notes = find_prob_columns(
        frame,
        prob_columns,
        used,
        label_values,
        logits,
        table.headerless,
        repeated_names(table.findings),
    )
    findings += notes
    P = numeric_matrix(frame, prob_names)

    # missing values in probabilities or labels
    bad = ~np.isfinite(P).all(axis=1) | label_values.isna().to_numpy()
    keep = None
    if bad.any():
        rows, count = first_rows(bad)
        if not drop_missing:
            where = models_of(frame[roles["model"]], bad) if "model" in roles else ""
            raise DataError(
                f"{count} of {P.shape[0]} rows{where} {'has' if count == 1 else 'have'} a "
                "missing, NaN or infinite probability or label"
                f" ({format_rows(rows, count)}). Fix or remove them, or load with "
                f"{arg('drop_missing')} to drop them.",
                rows=rows,
            )
        if count == P.shape[0]:
            raise DataError("Every row has a missing, NaN or infinite probability or label.")
        findings.append(
            LintFinding(
                "missing-values",
                "warning",
                f"Dropped {count} rows with a missing, NaN or infinite probability or label "
                f"({arg('drop_missing')}). Results describe the remaining rows only.",
                rows=rows,
                columns=tuple(prob_names) + ((label_name,) if label_name else ()),
                count=count,
            )
        )
        keep = ~bad
        P = P[keep]
        label_values = label_values[keep].reset_index(drop=True)

    P, notes = to_probabilities(P, prob_names, logits, renormalize)
    findings += notes
    names = resolve_class_names(prob_names, table.headerless, class_names, P.shape[1])
    binary = P.shape[1] == 1
    y, names, positive, notes = encode_labels(
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
            arr = role_values(
                arr[keep] if keep is not None else arr,
                role,
                lambda i: f"{table.name}, row {kept_row(keep, i):,} (0-based data rows)",
            )
        role_arrays[role] = arr
    extra = _kept_columns(frame, keep_columns, {*roles.values(), label_name, *prob_names}, keep)
    if extra:
        findings = not_ignored(findings, extra)
    mapping = {
        "label": label_name,
        "probs": list(prob_names),
        **{r: roles.get(r) for r in ("model", "split", "group")},
        "positive_class": positive,
        "logits": any(f.code == "logits-converted" for f in findings),
    }
    return make_predictions(
        P, y, names, binary, role_arrays, LintReport(tuple(findings)), table.name, mapping, extra
    )


def _kept_columns(
    frame: pd.DataFrame,
    keep_columns: Sequence[str] | str | None,
    used: set[Any],
    keep: np.ndarray | None,
) -> dict[str, np.ndarray]:
    """Return the columns to keep on :attr:`Predictions.extra` (see :func:`load_predictions`)."""
    if keep_columns is None:
        return {}
    columns = [str(c) for c in frame.columns]
    if isinstance(keep_columns, str):
        if keep_columns != "all":
            keep_columns = [keep_columns]
        else:
            keep_columns = [c for c in columns if c not in {str(u) for u in used if u is not None}]
    out = {}
    for found in kept_names(columns, keep_columns):
        series = frame[frame.columns[columns.index(found)]]
        if keep is not None:
            series = series[keep]
        out[found] = kept_values(series)
    return out


def not_ignored(findings: Sequence[LintFinding], kept: Any) -> list[LintFinding]:
    """Return the findings with the kept columns out of the ignored-columns note."""
    notes = []
    for f in findings:
        if f.code == "ignored-columns":
            rest = [c for c in f.columns if str(c) not in kept]
            if rest:
                notes.append(ignored_note(rest))
            continue
        notes.append(f)
    return notes


def kept_names(columns: Sequence[Any], wanted: Sequence[str]) -> tuple[str, ...]:
    """Return the columns to keep as the table names them (exact, else case-insensitive).

    Raises
    ------
    ColumnError
        For a column the table does not have.
    """
    columns = [str(c) for c in columns]
    lower = {c.lower(): c for c in reversed(columns)}
    out = []
    for want in wanted:
        found = want if want in columns else lower.get(str(want).strip().lower())
        if found is None:
            raise ColumnError(
                f"No column named {want!r} to keep. Columns: {', '.join(map(repr, columns))}.",
                argument="keep_columns",
                candidates=columns,
                columns=columns,
            )
        out.append(found)
    return tuple(dict.fromkeys(out))


def kept_values(series: pd.Series) -> np.ndarray:
    """Return a kept column's values: numbers, times, or strings (missing as ``""``)."""
    missing = series.isna().to_numpy()
    if pd.api.types.is_bool_dtype(series.dtype) and not missing.any():
        return series.to_numpy(dtype=bool)
    if pd.api.types.is_integer_dtype(series.dtype) and not missing.any():
        return series.to_numpy(dtype=np.int64)
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        values = series
        if getattr(series.dtype, "tz", None) is not None:
            values = series.dt.tz_convert("UTC").dt.tz_localize(None)
        return values.to_numpy(dtype="datetime64[ns]")
    return text_values(series.to_numpy(dtype=object))


def models_of(models: Any, mask: np.ndarray, limit: int = 3) -> str:
    """Say which models the rows of ``mask`` belong to: ``" of model 'b'"``, for a message.

    A long file holds several models; a bad row refuses them all, so the message names the
    model to fix (or to analyse alone).
    """
    values = pd.unique(np.asarray(models, dtype=object)[np.asarray(mask, dtype=bool)])
    names = ["" if pd.isna(v) else str(v) for v in values]
    if not names:
        return ""
    shown = ", ".join(map(repr, names[:limit])) + (" ..." if len(names) > limit else "")
    return f" of model{'s' if len(names) > 1 else ''} {shown}"


def _own_label_column(frame: pd.DataFrame, table: Any, used: set[str]) -> str | None:
    """Return the file's own label column (found by its name), when it has one."""
    if table.headerless:
        return None
    named = [c for c in frame.columns if c not in used and c.lower() in LABEL_NAMES]
    return named[0] if len(named) == 1 else None


def _label_text(values: Any) -> np.ndarray:
    """Labels as text for comparing two sources: ``1``, ``1.0`` and ``"1"`` alike."""
    series = label_series(values)
    if series.dtype.kind in "biuf":
        numbers = series.to_numpy(dtype=np.float64, na_value=np.nan)
        return np.array([repr(float(v)) for v in numbers], dtype=object)
    out = []
    for v in series.to_numpy(dtype=object):
        text = "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v).strip()
        try:
            text = repr(float(text))
        except ValueError:
            pass
        out.append(text)
    return np.array(out, dtype=object)


def _same_labels(own: pd.Series, given: Any, column: str, name: str, source: Any) -> LintFinding:
    """Refuse a labels file that contradicts the file's own label column; else say it was unused."""
    where = f"the labels file {Path(str(source)).name}" if is_pathlike(source) else "the labels"
    differ = _label_text(own) != _label_text(given)
    if differ.any():
        rows, count = first_rows(differ)
        raise DataError(
            f"{name}'s own label column {column!r} and {where} disagree on {count:,} of "
            f"{differ.size:,} rows ({format_rows(rows, count)}). Give the labels once: drop "
            f"the column or {arg('labels')}, or choose the labels with {arg('label_column')} "
            "and no labels file.",
            rows=rows,
        )
    return LintFinding(
        "label-column-unused",
        "warning",
        f"{name}'s own label column {column!r} was not used: the labels come from {where} "
        "(they agree on every row).",
        columns=(column,),
    )


def _external_labels(
    labels: Any, label_column: str | int | None, n: int, limits: LoadLimits
) -> np.ndarray:
    if is_pathlike(labels) or is_filelike(labels) or isinstance(labels, (bytes, bytearray)):
        seekable = not is_filelike(labels) or (hasattr(labels, "seekable") and labels.seekable())
        start = labels.tell() if is_filelike(labels) and seekable else None
        table = read_source(labels, None, limits)
        frame = table.frame
        short = frame.shape[1] == 1 and not table.headerless and frame.shape[0] == n - 1
        if short and seekable:
            # one row short: the first row was a label, not a header ("True", "cat")
            if start is not None:
                labels.seek(start)
            table = read_source(labels, table.name, limits, header=False)
            frame = table.frame
        if frame.shape[1] == 1:
            values = frame.iloc[:, 0].to_numpy()
        else:
            col = find_label_column(frame, table, label_column, set())
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
