"""Numbers stored as text are read as numbers, and one class's column is never taken silently.

A Parquet column of strings such as ``"0.8"`` and ``"N/A"`` is read as the same text in a CSV
file is (numbers, the missing-value tokens as missing), on every engine; a left-out column of
numbers spoiled by a few words beside a single probability column is refused rather than
letting the other class's column stand for P(y=1).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import core
from core.analyses.analysis import AnalysisConfig
from core.base.errors import DataError
from core.data.tables import numeric_text
from core.stream.analysis import analyze_stream

CAT = [0.2, 0.1, 0.6, 0.3]


def _write(tmp_path, dog, label=(1, 1, 0, 1), repeat=1):
    table = {"cat": CAT * repeat, "dog": list(dog) * repeat, "label": list(label) * repeat}
    pq.write_table(pa.table(table), tmp_path / "t.parquet")
    pd.DataFrame(table).to_csv(tmp_path / "t.csv", index=False)
    return tmp_path / "t.parquet", tmp_path / "t.csv"


def _outcome(path, engine="memory"):
    try:
        if engine == "memory":
            return core.load_predictions(path).probs.tolist()
        result = analyze_stream(str(path), AnalysisConfig(n_resamples=0))
        return result.results[0][2].headline.value
    except DataError as exc:
        return str(exc)


def test_the_issue_reproduction_no_longer_flips(tmp_path):
    parquet, csv = _write(tmp_path, ["0.8", "0.9", "N/A", "0.7"])
    # before: the 'cat' column was read as P(y=1), 1 − truth, and 'dog' ignored
    assert _outcome(parquet) == _outcome(csv)
    assert "1 of 4 rows has a missing" in _outcome(parquet)


def test_text_numbers_load_as_the_csv_does(tmp_path):
    parquet, csv = _write(tmp_path, ["0.8", "0.9", "0.4", "0.7"], label=("1", "1", "0", "1"))
    a, b = core.load_predictions(parquet), core.load_predictions(csv)
    np.testing.assert_array_equal(a.probs, b.probs)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.class_names == b.class_names == ("cat", "dog")
    assert a.probs[:, 1].tolist() == [0.8, 0.9, 0.4, 0.7]


@pytest.mark.parametrize("engine", ["memory", "stream"])
def test_numbers_beside_words_are_refused_not_flipped(tmp_path, engine):
    parquet, csv = _write(tmp_path, ["0.8", "0.9", "oops", "0.7"], repeat=30)
    for path in (parquet, csv):
        message = _outcome(path, engine)
        assert isinstance(message, str), message
        assert message.startswith("Column 'dog' holds numbers and text")
        assert "'cat' alone would be read as P(y=1)" in message


@pytest.mark.parametrize("engine", ["memory", "stream"])
def test_missing_tokens_are_missing_on_every_engine(tmp_path, engine):
    parquet, _ = _write(tmp_path, ["0.8", "0.9", "N/A", "0.7"], repeat=30)
    message = _outcome(parquet, engine)
    assert "missing, NaN or infinite probability" in message


def test_a_text_column_of_words_is_still_left_out(tmp_path):
    path = tmp_path / "w.parquet"
    pq.write_table(pa.table({"p": CAT, "note": ["x", "y", "z", "w"], "label": [1, 1, 0, 1]}), path)
    pred = core.load_predictions(path)
    assert pred.binary and pred.probs[:, 1].tolist() == CAT
    assert any(f.code == "ignored-columns" for f in pred.lint.findings)


def test_numeric_text_rules():
    codes = np.array([0, 1, 2, -1])
    out = numeric_text(["0.5", " 2 ", "NA"], codes)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [0.5, 2.0, np.nan, np.nan])
    ints = numeric_text(["0", "1"], np.array([1, 0, 1]))
    assert ints.dtype.kind == "i" and ints.tolist() == [1, 0, 1]
    assert numeric_text(["0.5", "oops"], codes[:2]) is None
    assert numeric_text(["NA", ""], codes[:2]) is None  # no number at all: text
    assert numeric_text([b"\xff"], np.array([0])) is None
