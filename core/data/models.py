"""Several models from several files: :func:`load_models`.

A model review often starts from one file per model (a headerless probability matrix each,
as the CIFAR-10 predictions, or a table each) and one labels file for all of them. Each file
is loaded by :func:`core.data.load_predictions` with the shared labels and the same options,
named after the file (its name without the extensions), and the models are stacked with
:func:`core.data.combine_models`, so every page, the CLI and the report see one file with a
``model`` column. Files that disagree (classes, a model column of their own, two files with
one name) are refused with one message naming the file.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.base.errors import CalibscopeError, DataError
from core.base.names import quoted
from core.data.lint import LintFinding, LintReport
from core.data.loader import load_predictions
from core.data.predictions import Predictions, combine_models

__all__ = ["load_models", "model_name"]


def model_name(file_name: str) -> str:
    """Return the model name of a file: its base name without ``.csv``, ``.parquet``, ``.gz``...

    Examples
    --------
    >>> model_name("runs/densenet121.csv.gz")
    'densenet121'
    """
    name = Path(str(file_name)).name
    for suffix in (".gz", ".csv", ".tsv", ".txt", ".parquet", ".pq"):
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name


def load_models(
    sources: Sequence[Any],
    *,
    labels: Any = None,
    names: Sequence[str] | None = None,
    **options: Any,
) -> Predictions:
    """Load one model per file and stack them into one :class:`Predictions`.

    Parameters
    ----------
    sources : sequence
        Two or more files: paths, or ``(file name, bytes)`` pairs (uploads).
    labels : path, file object, bytes or array_like, optional
        One labels source shared by every file (same rows, same order).
    names : sequence of str, optional
        The model names (default: :func:`model_name` of each file).
    **options
        Passed to :func:`core.data.load_predictions` for every file (``prob_columns``,
        ``label_column``, ``logits``, ...).

    Returns
    -------
    Predictions
        Every file's rows in order, with a ``model`` column of the names.

    Raises
    ------
    DataError
        Naming the file: one that cannot be loaded (with the loader's reason), one whose
        rows do not match the labels, one with other classes than the first, one with a
        model column of its own, or two files with the same model name.
    """
    items = [_named(s) for s in sources]
    if len(items) < 1:
        raise DataError("No files given: pass one predictions file per model.")
    given = [model_name(file) for file, _ in items] if names is None else [str(n) for n in names]
    if len(given) != len(items):
        raise DataError(f"{len(given)} model names for {len(items)} files; give one per file.")
    seen: dict[str, str] = {}
    for (file, _), name in zip(items, given, strict=True):
        if name in seen:
            raise DataError(
                f"{seen[name]} and {file} would both be model {name!r}; rename one of the files."
            )
        seen[name] = file
    shared = _replayable(labels)
    parts: dict[str, Predictions] = {}
    first: tuple[str, Predictions] | None = None
    for (file, data), name in zip(items, given, strict=True):
        try:
            pred = load_predictions(data, labels=shared(), name=file, **options)
        except CalibscopeError as exc:
            short = Path(file).name
            raise (exc if short in str(exc) else exc.prefixed(f"{short}: ")) from None
        if pred.models and len(pred.models) > 1:
            raise DataError(
                f"{file} has a model column with {len(pred.models)} models; give one model per "
                "file, or load that file on its own."
            )
        if pred.models:  # one value: the file's name is the model's, and that is said
            pred = dataclasses.replace(
                pred, lint=LintReport((*pred.lint.findings, _unused_model_column(pred, name)))
            )
        if first is None:
            first = (file, pred)
        elif pred.class_names != first[1].class_names or pred.binary != first[1].binary:
            raise DataError(
                f"{file} has classes {_classes(pred)} but {first[0]} has "
                f"{_classes(first[1])}; the models of one review must predict the same classes."
            )
        parts[name] = pred
    return combine_models(parts)


def _classes(pred: Predictions) -> str:
    kind = "P(y=1) of " if pred.binary else ""
    return kind + ", ".join(pred.class_names)


def _named(source: Any) -> tuple[str, Any]:
    if isinstance(source, tuple) and len(source) == 2 and isinstance(source[1], bytes):
        return str(source[0]), source[1]
    return str(source), source


def _replayable(labels: Any) -> Any:
    """Return a function giving the labels source afresh for every file (file objects are read once)."""
    if labels is None or not hasattr(labels, "read"):
        return lambda: labels
    data = labels.read()
    name = getattr(labels, "name", None)

    def fresh() -> Any:
        buf = io.BytesIO(data if isinstance(data, bytes) else str(data).encode("utf-8"))
        if name is not None:
            buf.name = name
        return buf

    return fresh


def _unused_model_column(pred: Predictions, name: str) -> LintFinding:
    column = pred.columns.get("model", "model")
    return LintFinding(
        "model-column-unused",
        "warning",
        f"The file's own {column!r} column (model {quoted(pred.models[0])}) was not used: each "
        f"file is one model, named {quoted(name)} after its file.",
        columns=(column,),
    )
