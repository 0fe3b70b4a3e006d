"""JSON records: every number of a result, as the CLI's ``--json`` and the report write them.

Each result object has a ``to_record()`` method (:class:`core.analyses.analysis.ReliabilityAnalysis`,
:class:`core.analyses.model_comparison.ModelComparison`,
:class:`core.analyses.calibration_tests.CalibrationTestResult`); this module adds what surrounds them
in a document: the input (:func:`input_record`), the per-model results of an analysis run
(:func:`metrics_record`), the versions of the packages the numbers depend on
(:func:`versions`), and the conversion to JSON (:func:`jsonable`, :func:`dumps`). The
command line and :mod:`core.report` both build their records here, so the same data and
options give the same JSON whichever wrote it.
"""

from __future__ import annotations

import json
import math
import platform
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import numpy as np

import core

#: Packages whose versions a record lists (besides Python).
VERSIONED = ("numpy", "scipy", "pandas", "pyarrow")


def package_version(dist: str) -> str | None:
    """Return an installed distribution's version (None when it is not installed).

    Parameters
    ----------
    dist : str
        Distribution name, e.g. ``"numpy"``; ``"calibscope"`` falls back to
        ``core.__version__`` when the project is not installed.

    Returns
    -------
    str or None
        The version.
    """
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        if dist == "calibscope":
            return core.__version__
        return None


def versions(*, plotting: bool = False) -> dict[str, str | None]:
    """Return the versions of Python and of the packages the numbers depend on.

    Parameters
    ----------
    plotting : bool, default=False
        Also list plotly and calibscope (the report, whose figures plotly draws).

    Returns
    -------
    dict
        ``python, numpy, scipy, pandas, pyarrow`` (and ``plotly, calibscope``) → version.
    """
    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in VERSIONED:
        out[dist] = package_version(dist)
    if plotting:
        out["plotly"] = package_version("plotly")
        out["calibscope"] = package_version("calibscope")
    return out


def input_record(pred: Any, *, file: str, labels: str | None) -> dict[str, Any]:
    """Return what was analysed: the file, the labels file, the shape, digest and columns.

    Parameters
    ----------
    pred : core.data.Predictions
        The loaded predictions (all models).
    file : str
        The predictions file as given.
    labels : str or None
        The separate labels file, when there was one.

    Returns
    -------
    dict
        ``file, labels, source, n, n_classes, class_names, binary, models, digest, columns``.
    """
    return {
        "file": str(file),
        "labels": None if labels is None else str(labels),
        "source": pred.source,
        "n": pred.n,
        "n_classes": pred.n_classes,
        "class_names": list(pred.class_names),
        "binary": pred.binary,
        "models": list(pred.models),
        "digest": pred.digest,
        "columns": pred.columns,
    }


def command_record(command: str, pred: Any, *, file: str, labels: str | None) -> dict[str, Any]:
    """Return the head of every command's JSON record: command, versions and input.

    Parameters
    ----------
    command : str
        The command's name.
    pred : core.data.Predictions
        The loaded predictions (all models).
    file, labels : str
        As for :func:`input_record`.

    Returns
    -------
    dict
        ``command, calibscope, versions, input``.
    """
    return {
        "command": command,
        "calibscope": package_version("calibscope"),
        "versions": versions(),
        "input": input_record(pred, file=file, labels=labels),
    }


def metrics_record(
    pred: Any,
    config: Any,
    results: Sequence[tuple[str | None, Any, Any]],
    *,
    file: str,
    labels: str | None,
) -> dict[str, Any]:
    """Return the record of ``calibscope metrics --json``: every number of every model.

    Parameters
    ----------
    pred : core.data.Predictions
        The loaded predictions (all models).
    config : core.analyses.analysis.AnalysisConfig
        The options.
    results : sequence of (model, Predictions, ReliabilityAnalysis)
        One entry per analysed model (model None for a file without a model column).
    file, labels : str
        As for :func:`input_record`.

    Returns
    -------
    dict
        ``command, calibscope, versions, input, config, seed, lint, results``; each result
        holds ``model, n, digest, lint`` and the analysis's :meth:`to_record`.
    """
    return {
        **command_record("metrics", pred, file=file, labels=labels),
        "config": config.to_dict(),
        "seed": config.seed,
        "lint": pred.lint.to_records(),
        "results": [
            {
                "model": name,
                "n": part.n,
                "digest": part.digest,
                "lint": part.lint.to_records(),
                **analysis.to_record(),
            }
            for name, part, analysis in results
        ],
    }


def jsonable(x: Any) -> Any:
    """Return ``x`` as JSON-ready values (non-finite floats as None, arrays as lists).

    Parameters
    ----------
    x : Any
        Dicts, lists, tuples, numpy values, DataFrames (through ``to_dict``), scalars.

    Returns
    -------
    Any
        Plain dicts, lists, strings, numbers, booleans and None.
    """
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, np.generic):
        return jsonable(x.item())
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if x is None or isinstance(x, str | int | bool):
        return x
    if hasattr(x, "to_dict"):
        return jsonable(x.to_dict())
    return str(x)


def dumps(record: dict[str, Any]) -> str:
    """Return a record as indented JSON text (non-finite numbers as ``null``).

    Parameters
    ----------
    record : dict
        A record of this module or a result's ``to_record()``.

    Returns
    -------
    str
        The JSON text, ending in a newline.
    """
    return json.dumps(jsonable(record), indent=2, allow_nan=False) + "\n"
