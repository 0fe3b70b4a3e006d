"""Hostile and malformed files: load limits, Parquet types, damaged gzip, odd CSV layouts.

Every case ends in one of three ways, in memory and in the stream engine alike: a correct
load, a typed :class:`core.base.errors.DataError` naming the file, or (on the command line) one
line on stderr and exit code 2.
"""

from __future__ import annotations

import gzip
import io
import re
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.base.errors import ConfigError, DataError
from core.cli import main
from core.data import load_predictions
from core.data.limits import BLOCK, ENV, GzipReader, LoadLimits, gunzip
from core.stream.analysis import lint_stream
from core.stream.engine import StreamRunner
from core.stream.load import LoadOptions

ROOT = Path(__file__).resolve().parents[1]
CSV = b"p,label\n0.2,0\n0.7,1\n0.4,1\n0.9,1\n"
PROBS = [0.2, 0.7, 0.4, 0.9]
LABELS = [0, 1, 1, 1]


def _stream(path, **load):
    """Load every row through the stream engine (lint pass)."""
    runner = StreamRunner(str(path), LoadOptions(**load), batch_rows=2)
    return lint_stream(runner).input


def _loads_the_truth(path):
    """Assert that memory loads the ground truth from ``path``, and the stream the same rows."""
    pred = load_predictions(path)
    assert pred.probs[:, 1].tolist() == PROBS and pred.labels.tolist() == LABELS
    assert _stream(path).digest == pred.digest
    return pred


def _one_line_error(capsys, *argv) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2 and out == "", err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _table(**columns) -> pa.Table:
    return pa.table({"p": PROBS, "label": LABELS, **columns})


# ----------------------------------------------------------------------------- dependencies


def test_pyarrow_floor_excludes_the_unpickling_release():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [d for d in deps if d.startswith("pyarrow")]
    floor = tuple(int(x) for x in re.fullmatch(r"pyarrow>=([\d.]+)", spec).group(1).split("."))
    assert floor >= (14, 0, 1)


# ----------------------------------------------------------------------------- Parquet


class _Secret(pa.ExtensionType):
    def __init__(self):
        super().__init__(pa.float64(), "calibscope.test.secret")

    def __arrow_ext_serialize__(self):
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls()


@pytest.fixture
def extension_parquet(tmp_path):
    pa.register_extension_type(_Secret())
    try:
        storage = pa.array(PROBS)
        table = _table(x=pa.ExtensionArray.from_storage(_Secret(), storage))
        path = tmp_path / "ext.parquet"
        pq.write_table(table, path)
        yield path
    finally:
        pa.unregister_extension_type("calibscope.test.secret")


def test_parquet_extension_types_are_refused(extension_parquet, capsys):
    for load in (load_predictions, _stream):
        with pytest.raises(DataError, match=r"column 'x' holds an extension type"):
            load(extension_parquet)
    line = _one_line_error(capsys, "lint", str(extension_parquet))
    assert "'x'" in line and "extension type" in line


@pytest.mark.parametrize(
    ("column", "what"),
    [
        (pa.array([{"a": 1}] * 4), "structs"),
        (pa.array([[1.0]] * 4), "lists"),
        (pa.array([[("k", 1)]] * 4, type=pa.map_(pa.string(), pa.int64())), "maps"),
        (pa.array([[1.0]] * 4, type=pa.large_list(pa.float64())), "lists"),
    ],
)
def test_parquet_nested_columns_are_refused_by_name(tmp_path, capsys, column, what):
    path = tmp_path / "nested.parquet"
    pq.write_table(_table(nested=column), path)
    for load in (load_predictions, _stream):
        with pytest.raises(DataError, match=rf"column 'nested' holds {what}"):
            load(path)
    assert "'nested'" in _one_line_error(capsys, "metrics", str(path), "--resamples", "0")


def test_invalid_pandas_metadata_is_ignored(tmp_path):
    path = tmp_path / "meta.parquet"
    table = _table().replace_schema_metadata({b"pandas": b"{not json"})
    pq.write_table(table, path)
    _loads_the_truth(path)


def test_duplicate_parquet_names_are_renamed_with_a_finding(tmp_path):
    path = tmp_path / "dupes.parquet"
    arrays = [pa.array(PROBS), pa.array(LABELS), pa.array([0.5] * 4)]
    pq.write_table(pa.Table.from_arrays(arrays, names=["p", "label", "p"]), path)
    pred = load_predictions(path, prob_columns=["p"])
    assert pred.probs[:, 1].tolist() == PROBS
    assert "duplicate-columns" in pred.lint.codes
    assert not any("FieldRef" in f.message for f in pred.lint)


def test_damaged_parquet_is_a_data_error(tmp_path):
    path = tmp_path / "cut.parquet"
    pq.write_table(_table(), path)
    data = path.read_bytes()
    path.write_bytes(data[:4] + data[40:])  # pages and footer out of step
    with pytest.raises(DataError, match="cut.parquet"):
        load_predictions(path)


# ----------------------------------------------------------------------------- gzip


def test_gzip_csv_loads_in_memory_and_stream(tmp_path):
    path = tmp_path / "x.csv.gz"
    path.write_bytes(gzip.compress(CSV))
    _loads_the_truth(path)


@pytest.mark.parametrize("damage", ["truncated", "corrupted"])
def test_damaged_gzip_is_a_data_error(tmp_path, capsys, damage):
    data = gzip.compress(CSV * 200)
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:  # deflate blocks overwritten: zlib.error "invalid distance code" and the like
        data = data[:12] + bytes(range(40, 80)) + data[52:]
    path = tmp_path / "x.csv.gz"
    path.write_bytes(data)
    for load in (load_predictions, _stream):
        with pytest.raises(DataError, match="gzip file is damaged"):
            load(path)
    assert "damaged" in _one_line_error(capsys, "lint", str(path))


def test_gzip_reader_stops_at_the_byte_limit_while_decompressing():
    data = gzip.compress(b"0" * (32 << 20))
    limits = LoadLimits(max_bytes=2 << 20)
    reader = GzipReader(io.BytesIO(data), "zeros.gz", limits, max_bytes=limits.max_bytes)
    with pytest.raises(DataError, match=r"zeros.gz holds more than 2 MiB once decompressed"):
        while reader.read(BLOCK):
            pass
    # one block past the limit at most: checked while reading, not after
    assert reader.out <= limits.max_bytes + BLOCK


def test_decompression_bomb_is_refused_by_its_ratio(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("core.data.limits.RATIO_FLOOR", 1 << 20)
    bomb = b"p,label\n" + b"0.5,1\n0.5,0\n" * 1_000_000  # 12 MB of a few bytes' worth
    path = tmp_path / "bomb.csv.gz"
    path.write_bytes(gzip.compress(bomb, 9))
    for load in (load_predictions, _stream):
        with pytest.raises(DataError, match=r"expands to more than 200 times"):
            load(path)
    with pytest.raises(DataError, match="expands"):
        gunzip(path.read_bytes(), "bomb.csv.gz", LoadLimits())
    assert ENV["max_ratio"] in _one_line_error(capsys, "lint", str(path))


# ----------------------------------------------------------------------------- limits


def test_rows_columns_and_bytes_limits_in_memory(tmp_path):
    path = tmp_path / "x.csv"
    path.write_bytes(CSV)
    with pytest.raises(DataError, match=r"more than 3 rows, more than the in-memory"):
        load_predictions(path, limits=LoadLimits(max_rows=3))
    with pytest.raises(DataError, match=r"has 2 columns, more than the limit of 1"):
        load_predictions(path, limits=LoadLimits(max_columns=1))
    with pytest.raises(DataError, match=r"more than the in-memory loader's limit of 10 bytes"):
        load_predictions(path, limits=LoadLimits(max_bytes=10))
    with pytest.raises(DataError, match="more than the in-memory"):
        load_predictions(CSV, name="x.csv", limits=LoadLimits(max_bytes=10))
    assert load_predictions(path, limits=LoadLimits(max_rows=4)).n == 4


def test_parquet_limits_come_from_the_footer(tmp_path):
    path = tmp_path / "x.parquet"
    pq.write_table(_table(), path)
    with pytest.raises(DataError, match="has 4 rows"):
        load_predictions(path, limits=LoadLimits(max_rows=3))
    big = tmp_path / "big.parquet"  # constant columns: a small file of many bytes
    pq.write_table(pa.table({"p": [0.5] * 200_000, "label": [1] * 200_000}), big)
    assert big.stat().st_size < 100_000
    with pytest.raises(DataError, match="uncompressed, more than the in-memory"):
        load_predictions(big, limits=LoadLimits(max_bytes=1 << 20))


def test_stream_limits_columns_not_rows(tmp_path):
    path = tmp_path / "x.csv"
    path.write_bytes(CSV)
    runner = StreamRunner(str(path), LoadOptions(), limits=LoadLimits(max_rows=1, max_bytes=1))
    assert lint_stream(runner).input.n == 4
    with pytest.raises(DataError, match="columns, more than the limit"):
        StreamRunner(str(path), LoadOptions(), limits=LoadLimits(max_columns=1))


def test_limits_from_the_environment(tmp_path, monkeypatch, capsys):
    path = tmp_path / "x.csv"
    path.write_bytes(CSV)
    assert LoadLimits.from_env({"CALIBSCOPE_MAX_BYTES": "4G"}).max_bytes == 4 << 30
    assert LoadLimits.from_env({"CALIBSCOPE_MAX_RATIO": "50"}).max_ratio == 50.0
    with pytest.raises(ConfigError, match="CALIBSCOPE_MAX_ROWS"):
        LoadLimits.from_env({"CALIBSCOPE_MAX_ROWS": "lots"})
    with pytest.raises(ConfigError, match="max_rows"):
        LoadLimits(max_rows=0)
    monkeypatch.setenv("CALIBSCOPE_MAX_ROWS", "2")
    with pytest.raises(DataError, match="more than 2 rows"):
        load_predictions(path)
    assert "CALIBSCOPE_MAX_ROWS" in _one_line_error(capsys, "lint", str(path))
    monkeypatch.setenv("CALIBSCOPE_MAX_ROWS", "-1")
    assert "CALIBSCOPE_MAX_ROWS" in _one_line_error(capsys, "lint", str(path))


# ----------------------------------------------------------------------------- odd files


def test_bom_only_and_blank_files_are_empty(tmp_path, capsys):
    for content in (b"\xef\xbb\xbf", b"\xef\xbb\xbf\n\n", b"\n" * 100):
        path = tmp_path / "x.csv"
        path.write_bytes(content)
        for load in (load_predictions, _stream):
            with pytest.raises(DataError, match="is empty"):
                load(path)
        assert "is empty" in _one_line_error(capsys, "lint", str(path))


def test_leading_blank_lines_beyond_the_head(tmp_path):
    path = tmp_path / "x.csv"
    path.write_bytes(b"\n" * 70_000 + b"  \r\n" + CSV)
    _loads_the_truth(path)


@pytest.mark.parametrize(
    "content",
    [
        b"p,label,\n0.2,0,\n0.7,1,\n0.4,1,\n0.9,1,\n",  # every line
        b"p,label\n0.2,0,\n0.7,1,\n0.4,1,\n0.9,1,\n",  # every data line
        b"p,label,\n0.2,0\n0.7,1\n0.4,1\n0.9,1\n",  # the header only
        b"p;label;\n0.2;0;\n0.7;1;\n0.4;1;\n0.9;1;\n",
    ],
)
def test_trailing_delimiter_loads_like_the_clean_file(tmp_path, content):
    path = tmp_path / "x.csv"
    path.write_bytes(content)
    clean = load_predictions(CSV, name="clean.csv")
    memory = load_predictions(path)
    assert memory.digest == clean.digest and memory.lint.codes == clean.lint.codes
    if content.split(b"\n")[1].endswith((b",", b";")):  # the stream needs every row alike
        assert _stream(path).digest == clean.digest


def test_trailing_delimiter_of_a_headerless_matrix(tmp_path):
    path = tmp_path / "m.csv"
    path.write_bytes(b"0.2,0.8,\n0.6,0.4,\n0.5,0.5,\n")
    pred = load_predictions(path, labels=[1, 0, 1])
    assert pred.probs.tolist() == [[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]


def test_rows_longer_than_the_header_are_refused(tmp_path):
    path = tmp_path / "x.csv"
    path.write_bytes(b"p,label\n0.2,0,5,6\n0.7,1,5,6\n")
    with pytest.raises(DataError, match="the first row has 2 header fields but the data rows"):
        load_predictions(path)


def test_semicolon_file_with_decimal_commas_in_memory_and_stream(tmp_path):
    path = tmp_path / "x.csv"
    path.write_bytes(b"p;label\n0,2;0\n0,7;1\n0,4;1\n0,9;1\n")
    assert "decimal-comma" in _loads_the_truth(path).lint.codes


def test_semicolon_file_mixing_decimal_marks_is_named(tmp_path, capsys):
    path = tmp_path / "x.csv"
    path.write_bytes(b"p;label\n0,3;0\n0.6;1\n0,8;1\n0.1;0\n")
    for load in (load_predictions, _stream):
        with pytest.raises(DataError, match=r"decimal commas \(0,3\) and decimal points \(0.6\)"):
            load(path)
    assert "one decimal mark" in _one_line_error(capsys, "lint", str(path))


def test_huge_integer_labels_are_named_as_they_are(tmp_path, capsys):
    for label in ("100000000000000000000", "18446744073709551615", "1e300"):
        path = tmp_path / "x.csv"
        path.write_text(f"p,label\n0.2,0\n0.7,{label}\n0.4,1\n")
        for load in (load_predictions, _stream):
            with pytest.raises(DataError, match=r"far too large to be a class index \(row 1"):
                load(path)
        line = _one_line_error(capsys, "lint", str(path))
        assert "-9223372036854775808" not in line


def test_nan_in_one_model_names_the_model(tmp_path, capsys):
    path = tmp_path / "x.csv"
    path.write_text("model,p,label\na,0.2,0\na,0.7,1\nb,nan,1\nb,0.3,0\n")
    for load in (load_predictions, _stream):
        with pytest.raises(DataError, match=r"rows of model 'b' has a missing"):  # one row
            load(path)
    assert "model 'b'" in _one_line_error(capsys, "metrics", str(path), "--resamples", "0")


def test_devices_are_not_regular_files(capsys):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    for load in (load_predictions, _stream):
        with pytest.raises(DataError, match="not a regular file"):
            load("/dev/zero")
    assert "not a regular file" in _one_line_error(capsys, "lint", "/dev/zero")


def test_arrays_and_frames_still_load():
    frame = pd.DataFrame({"p": PROBS, "label": LABELS})
    assert load_predictions(frame).n == 4
    pred = load_predictions(np.asarray(PROBS), labels=LABELS)
    assert pred.probs[:, 1].tolist() == PROBS
