"""Fuzzing the loader: malformed CSV, gzip and Parquet files load right or fail typed.

A ground-truth table (binary or three classes) is written as CSV, gzip or Parquet and then
damaged: truncated, junk bytes, bad numbers, NaN, extra or duplicate columns, a byte-order
mark, blank lines, a trailing delimiter, gzip cut short, pandas metadata that is not JSON.
:func:`core.load_predictions` must then either raise a :class:`core.base.errors.CalibscopeError`
or load exactly the ground truth (rows, classes, labels, probabilities) — nothing else: no
other exception, and never other numbers. Mutations that may legitimately make a smaller
valid file (a cut at a line end) expect the rows that remain.
"""

from __future__ import annotations

import gzip
import io
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.base.errors import CalibscopeError
from core.data import load_predictions

# derandomize: the same examples on every run (reproducible CI); a few seconds in all
fuzz = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: Bytes that are never part of a number, a label or a sign: junk that changes no value
#: silently (digits, '.', '-', 'e', 'inf', 'nan' could).
JUNK = b"#@!?%&*\x00\xff\xfe\"' \t;|xyzXYZ,\n"


@dataclass
class Truth:
    """The ground truth: probabilities in thousandths (exact in text), labels, classes."""

    probs: np.ndarray  # (n, K): K = 1 for a binary P(y=1) column
    labels: np.ndarray
    names: tuple[str, ...] | None = None  # the probability columns, when not p / p_j

    @property
    def n(self) -> int:
        return int(self.labels.shape[0])

    @property
    def columns(self) -> list[str]:
        k = self.probs.shape[1]
        if self.names is not None:
            return list(self.names)
        return ["p"] if k == 1 else [f"p_{j}" for j in range(k)]

    def frame(self) -> pd.DataFrame:
        data = {c: self.probs[:, j] for j, c in enumerate(self.columns)}
        return pd.DataFrame({**data, "label": self.labels})

    def rows(self, m: int) -> Truth:
        return Truth(self.probs[:m], self.labels[:m], self.names)

    def text_lines(self, sep: str = ",") -> list[str]:
        lines = [sep.join([*self.columns, "label"])]
        for row, y in zip(self.probs, self.labels, strict=True):
            lines.append(sep.join([*(f"{v:.3f}" for v in row), str(int(y))]))
        return lines


@st.composite
def truths(draw) -> Truth:
    n = draw(st.integers(2, 25))
    k = draw(st.sampled_from([1, 2, 3]))
    if k == 1:
        probs = np.array(draw(st.lists(st.integers(1, 999), min_size=n, max_size=n)))[:, None]
        labels = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    elif k == 2:  # a binary pair: the columns of a class each (a flip would pass as data)
        first = np.array(draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n)))
        probs = np.column_stack([first, 1000 - first])
        labels = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    else:
        rows = []
        for _ in range(n):
            a = draw(st.integers(0, 1000))
            b = draw(st.integers(0, 1000 - a))
            rows.append([a, b, 1000 - a - b])
        probs = np.array(rows)
        labels = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    # bare class names (the columns of a binary pair) or the p_j pattern
    names = draw(st.sampled_from([None, ("cat", "dog")])) if k == 2 else None
    return Truth(probs / 1000.0, np.array(labels, dtype=np.int64), names)


def _check(data: bytes, name: str, truths_ok: list[Truth]) -> None:
    """The one property: a typed error, or exactly one of the acceptable truths."""
    try:
        pred = load_predictions(data, name=name)
    except CalibscopeError:
        return
    for truth in truths_ok:
        k = truth.probs.shape[1]
        want = (
            np.column_stack([1 - truth.probs[:, 0], truth.probs[:, 0]]) if k == 1 else truth.probs
        )
        if (
            pred.n == truth.n
            and pred.n_classes == max(k, 2)
            and np.array_equal(pred.labels, truth.labels)
            and np.allclose(pred.probs, want, rtol=0, atol=1e-12)
        ):
            return
    raise AssertionError(
        f"{name} loaded as something else: {pred.n} rows, {pred.n_classes} classes"
    )


# ----------------------------------------------------------------------------- CSV


@st.composite
def csv_cases(draw) -> tuple[bytes, str, list[Truth]]:
    truth = draw(truths())
    sep = draw(st.sampled_from([",", ";", "\t"]))
    lines = truth.text_lines(sep)
    ok = [truth]
    kind = draw(
        st.sampled_from(
            [
                "none",
                "bad-number",
                "nan",
                "extra-text-column",
                "duplicate-column",
                "bom",
                "blank-lines",
                "trailing-delimiter",
                "junk",
                "cut-at-line",
                "cut-anywhere",
                "gzip",
                "gzip-cut",
                "gzip-junk",
                "many-blank-lines",
                "bom-only",
            ]
        )
    )
    if kind in ("bad-number", "nan"):
        row = draw(st.integers(1, len(lines) - 1))
        cells = lines[row].split(sep)
        col = draw(st.integers(0, len(cells) - 1))
        bad = ["abc", "1e999", "", "0x1F", "1.2.3", "--1", "100000000000000000000", "1e300"]
        missing = ["nan", "NaN", "", "NA"]
        cells[col] = draw(st.sampled_from(bad if kind == "bad-number" else missing))
        lines[row] = sep.join(cells)
    elif kind == "extra-text-column":
        at = draw(st.integers(0, len(truth.columns) + 1))
        for i, line in enumerate(lines):
            cells = line.split(sep)
            cells.insert(at, "note" if i == 0 else draw(st.sampled_from(["a", "b c", "x"])))
            lines[i] = sep.join(cells)
    elif kind == "duplicate-column":
        col = draw(st.integers(0, len(truth.columns)))  # a probability column or the label
        for i, line in enumerate(lines):
            cells = line.split(sep)
            lines[i] = sep.join([*cells, cells[col]])
    elif kind == "blank-lines":
        for _ in range(draw(st.integers(1, 4))):
            lines.insert(draw(st.integers(0, len(lines))), "")
    elif kind == "trailing-delimiter":
        lines = [line + sep for line in lines]
    data = ("\n".join(lines) + "\n").encode()
    if kind == "bom":
        data = b"\xef\xbb\xbf" + data
    elif kind == "junk":
        at = draw(st.integers(0, len(data)))
        junk = draw(
            st.binary(min_size=1, max_size=4).map(lambda b: bytes(JUNK[x % len(JUNK)] for x in b))
        )
        data = data[:at] + junk + data[at:]
    elif kind == "cut-at-line":
        m = draw(st.integers(0, truth.n))
        data = ("\n".join(lines[: m + 1]) + "\n").encode()
        ok = [truth.rows(m)]
    elif kind == "cut-anywhere":
        data = data[: draw(st.integers(0, len(data) - 1))]
        complete = data.count(b"\n") - 1  # data rows kept whole (the header ends a line too)
        ok = [truth.rows(complete)] if complete >= 0 else []
        if complete >= 0 and not data.endswith(b"\n"):
            # a row cut short may still be a row, of other (shorter) values: as its text reads
            ok += _cut_row(truth, data, sep, complete)
    elif kind == "gzip":
        data = gzip.compress(data, mtime=0)
    elif kind == "gzip-cut":
        packed = gzip.compress(data, mtime=0)
        data = packed[: draw(st.integers(2, len(packed) - 1))]
        ok = []
    elif kind == "gzip-junk":
        # the deflate stream overwritten past the header: bad codes, or a failed CRC check
        packed = gzip.compress(data, mtime=0)
        at = draw(st.integers(10, len(packed) - 1))
        junk = draw(st.binary(min_size=1, max_size=8))
        data = packed[:at] + junk + packed[at + len(junk) :]
        ok = [truth] if data == packed else []
    elif kind == "many-blank-lines":
        data = b"\n" * draw(st.integers(60_000, 70_000)) + data
    elif kind == "bom-only":
        data = b"\xef\xbb\xbf" + b"\n" * draw(st.integers(0, 3))
        ok = []
    name = draw(st.sampled_from(["x.csv", "x.tsv", "x", "x.csv.gz", "upload"]))
    return data, name, ok


def _cut_row(truth: Truth, data: bytes, sep: str, complete: int) -> list[Truth]:
    """The truth of the whole rows and the cut last row as its text reads (if it is a row)."""
    cells = data.decode().rsplit("\n", 1)[-1].split(sep)
    k = truth.probs.shape[1]
    try:
        if len(cells) != k + 1:
            return []
        values, label = [float(c) for c in cells[:k]], int(cells[k])
    except ValueError:
        return []
    probs = np.vstack([truth.probs[:complete], [values]])
    return [Truth(probs, np.append(truth.labels[:complete], label))]


@fuzz
@given(csv_cases())
def test_malformed_csv_loads_right_or_fails_typed(case):
    data, name, ok = case
    _check(data, name, ok)


# ----------------------------------------------------------------------------- Parquet


@st.composite
def parquet_cases(draw) -> tuple[bytes, str, list[Truth]]:
    truth = draw(truths())
    frame = truth.frame()
    table = pa.Table.from_pandas(frame, preserve_index=False)
    ok = [truth]
    kind = draw(
        st.sampled_from(
            [
                "none",
                "nan",
                "extra-text-column",
                "duplicate-column",
                "labels-as-text",
                "probs-as-text",
                "bad-pandas-metadata",
                "nested-column",
                "cut",
                "junk-before",
                "junk-after",
            ]
        )
    )
    if kind == "nan":
        col = draw(st.integers(0, table.num_columns - 1))
        row = draw(st.integers(0, truth.n - 1))
        values = table.column(col).to_pylist()
        values[row] = None
        table = table.set_column(col, table.column_names[col], pa.array(values))
    elif kind == "extra-text-column":
        table = table.append_column("note", pa.array(["a"] * truth.n))
    elif kind == "duplicate-column":
        col = draw(st.integers(0, table.num_columns - 1))
        table = table.append_column(table.column_names[col], table.column(col))
    elif kind == "labels-as-text":
        table = table.set_column(
            table.num_columns - 1, "label", pa.array([str(v) for v in truth.labels])
        )
    elif kind == "probs-as-text":  # numbers stored as strings, maybe with a token or a word
        col = draw(st.integers(0, table.num_columns - 2))
        text = [f"{v:.3f}" for v in table.column(col).to_pylist()]
        token = draw(st.sampled_from([None, "N/A", "NA", "", "oops"]))
        if token is not None:
            text[draw(st.integers(0, truth.n - 1))] = token
        table = table.set_column(col, table.column_names[col], pa.array(text))
    elif kind == "bad-pandas-metadata":
        table = table.replace_schema_metadata({b"pandas": draw(st.binary(max_size=20))})
    elif kind == "nested-column":
        table = table.append_column("nested", pa.array([[1]] * truth.n))
        ok = []
    sink = io.BytesIO()
    pq.write_table(table, sink, compression=draw(st.sampled_from(["snappy", "none", "zstd"])))
    data = sink.getvalue()
    if kind == "cut":
        data = data[: draw(st.integers(0, len(data) - 1))]
        ok = []
    elif kind == "junk-before":
        data = draw(st.binary(min_size=1, max_size=8)) + data
        ok = [] if not data.startswith(b"PAR1") else ok
    elif kind == "junk-after":
        data = data + draw(st.binary(min_size=1, max_size=8))
        ok = []
    name = draw(st.sampled_from(["x.parquet", "x.pq", "upload"]))
    return data, name, ok


@fuzz
@given(parquet_cases())
def test_malformed_parquet_loads_right_or_fails_typed(case):
    data, name, ok = case
    _check(data, name, ok)


@st.composite
def text_pair_cases(draw) -> tuple[bytes, str, list[Truth]]:
    """A binary pair of class columns, one stored as text with maybe a token or a word."""
    n = draw(st.integers(2, 12))
    first = np.array(draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n)))
    labels = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    truth = Truth(np.column_stack([first, 1000 - first]) / 1000.0, labels, ("cat", "dog"))
    table = pa.Table.from_pandas(truth.frame(), preserve_index=False)
    col = draw(st.integers(0, 1))
    text = [f"{v:.3f}" for v in table.column(col).to_pylist()]
    for row in draw(st.lists(st.integers(0, n - 1), max_size=3)):
        text[row] = draw(st.sampled_from(["N/A", "NA", "null", "", "oops", "-", "?"]))
    table = table.set_column(col, table.column_names[col], pa.array(text))
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue(), "pair.parquet", [truth]


@fuzz
@given(text_pair_cases())
def test_a_text_class_column_never_flips_the_pair(case):
    data, name, ok = case
    _check(data, name, ok)


# ----------------------------------------------------------------------------- labels files


@st.composite
def word_label_cases(draw) -> tuple[bytes, bytes, list[int], list[str]]:
    """A headerless two-column matrix and a one-column labels file of words, maybe headed."""
    n = draw(st.integers(2, 20))
    words = draw(st.sampled_from([("False", "True"), ("cat", "dog"), ("no", "yes"), ("0", "1")]))
    y = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    first = draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n))
    matrix = "".join(f"{a / 1000:.3f},{1 - a / 1000:.3f}\n" for a in first).encode()
    header = draw(st.sampled_from([None, "label", "y", "target"]))
    lines = ([header] if header else []) + [words[v] for v in y]
    return matrix, ("\n".join(lines) + "\n").encode(), y, list(words)


@fuzz
@given(word_label_cases())
def test_a_labels_file_of_words_keeps_every_row(case):
    matrix, labels, y, words = case
    names = None if words == ["0", "1"] else words
    if words == ["False", "True"]:
        names = None  # booleans read as 0/1
    try:
        pred = load_predictions(matrix, name="m.csv", labels=labels, class_names=names)
    except CalibscopeError as exc:  # only a refusal naming the rows, never a lost row
        assert "rows but" not in str(exc), exc
        return
    assert pred.n == len(y)
    assert pred.labels.tolist() == y


@st.composite
def contradicting_files(draw) -> tuple[list[tuple[str, bytes]], bytes, bool]:
    """Two or three files with their own label column, and a labels file: agreeing or not."""
    n = draw(st.integers(2, 12))
    y = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    files, agree = [], True
    for i in range(draw(st.integers(2, 3))):
        own = list(y)
        if draw(st.booleans()):
            flip = draw(st.integers(0, n - 1))
            own[flip] = 1 - own[flip]
            agree = False
        rows = "".join(f"0.{(7 * j + i) % 10}{j % 10},{v}\n" for j, v in enumerate(own))
        files.append((f"m{i}.csv", ("p,label\n" + rows).encode()))
    return files, ("\n".join(map(str, y)) + "\n").encode(), agree


@fuzz
@given(contradicting_files())
def test_several_files_never_hide_a_contradicting_label_column(case):
    from core.data import load_models

    files, labels, agree = case
    try:
        pred = load_models(files, labels=labels)
    except CalibscopeError as exc:
        assert not agree and "disagree" in str(exc), exc
        return
    assert agree
    assert any(f.code == "label-column-unused" for f in pred.lint.findings)
