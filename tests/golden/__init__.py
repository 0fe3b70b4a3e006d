"""The command line's JSON on the bundled samples, as the golden outputs of the suite.

``python -m tests.golden`` writes them again (after a change that is meant to change numbers,
and only then); ``tests/test_golden_outputs.py`` compares the command line with them.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BINARY = "sample_data/binary_breast_cancer.csv"
MULTICLASS = "sample_data/multiclass_digits.csv"

#: name → the command line's arguments (``--json`` output)
CASES: dict[str, list[str]] = {
    "metrics_binary": ["metrics", BINARY, "--json", "--resamples", "200"],
    "metrics_binary_equal_mass_basic": [
        "metrics", BINARY, "--json", "--resamples", "100", "--binning", "equal-mass",
        "--estimator", "debiased", "--bootstrap-interval", "basic",
    ],
    "metrics_multiclass_cells": [
        "metrics", MULTICLASS, "--json", "--resamples", "100", "--bootstrap", "cells",
    ],
    "metrics_by_group": ["metrics", BINARY, "--json", "--resamples", "100", "--by", "group"],
    "metrics_stream": ["metrics", BINARY, "--json", "--resamples", "100", "--engine", "stream"],
    "metrics_sklearn_convention": [
        "metrics", BINARY, "--json", "--resamples", "0", "--convention", "sklearn",
    ],
    "compare_binary": ["compare", BINARY, "--json", "--resamples", "100"],
    "compare_multiclass": ["compare", MULTICLASS, "--json", "--resamples", "50"],
    "compare_stream": ["compare", BINARY, "--json", "--resamples", "100", "--engine", "stream"],
    "report_binary": ["report", BINARY, "--json", "--resamples", "100"],
}  # fmt: skip

#: Fields that say when and with what the output was made, not what it found.
VOLATILE = ("created", "versions")


def run(args: list[str]) -> dict:
    """Return the JSON the command line prints for ``args``."""
    from core.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    if code != 0:
        raise RuntimeError(f"calibscope {' '.join(args)} exited {code}: {err.getvalue()}")
    return json.loads(out.getvalue())


def stable(record: dict) -> dict:
    """Return the record without its volatile fields."""
    return {k: v for k, v in record.items() if k not in VOLATILE}


def write() -> None:
    """Write every golden output again."""
    for name, args in CASES.items():
        path = HERE / f"{name}.json"
        path.write_text(json.dumps(stable(run(args)), indent=1, sort_keys=False) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(write())
