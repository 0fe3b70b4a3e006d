"""The command line's JSON on the bundled samples equals the golden outputs (tests/golden).

A structural change keeps every number and message: these outputs were written by the code
before the layered core and hold for it. Numbers are compared to 1e-12 relative (a float's
last digits may differ between processors), text and structure exactly.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.golden import CASES, HERE, run, stable

ROOT = Path(__file__).resolve().parents[1]


def _diff(a, b, path="") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return [f"{path}: keys {list(a)} != {list(b)}"]
        return [d for k in a for d in _diff(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items != {len(b)}"]
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _diff(x, y, f"{path}[{i}]")
        ]
    if isinstance(a, float) and isinstance(b, float | int) and not isinstance(b, bool):
        if math.isnan(a) and math.isnan(b):
            return []
        if math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15):
            return []
    elif a == b and type(a) is type(b):
        return []
    return [f"{path}: {a!r} != {b!r}"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_command_line_json_equals_the_golden_output(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    golden = json.loads((HERE / f"{name}.json").read_text())
    got = json.loads(json.dumps(stable(run(CASES[name]))))
    assert _diff(golden, got)[:10] == []


def test_the_comparison_sees_a_changed_number_and_word():
    record = {"a": [1.0, {"b": "word", "c": 0.25}]}
    assert _diff(record, {"a": [1.0, {"b": "word", "c": 0.25 + 1e-15}]}) == []
    assert _diff(record, {"a": [1.0, {"b": "word", "c": 0.2500001}]}) != []
    assert _diff(record, {"a": [1.0, {"b": "other", "c": 0.25}]}) != []
    assert _diff(record, {"a": [1.0, {"c": 0.25, "b": "word"}]}) != []
