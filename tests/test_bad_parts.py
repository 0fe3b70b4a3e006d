"""Bad part folders get the same outcome in memory, on the stream and on Dask.

Each folder holds two good parts and one bad one (or a loop). An engine either gives the
numbers of the others or refuses the folder with the same one-line message, naming the file
(and the row where there is one).
"""

from __future__ import annotations

import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from numpy.testing import assert_allclose

from core.analyses.analysis import AnalysisConfig, analyze
from core.base.errors import DataError
from core.data.loader import load_predictions
from core.data.text import MAX_NAME_CHARS
from core.stream.analysis import analyze_stream
from core.stream.gather import load_parts
from core.stream.sources import BATCH_BYTES, Layout, fitting_rows, read_row_group, resolve_parts

pytest.importorskip("dask.distributed", reason="the dask extra is not installed")
from core.stream.dask import analyze_dask  # noqa: E402

CONFIG = AnalysisConfig(n_resamples=0)
EXACT = 1e-12


def _good(rng: np.random.Generator, n: int = 400, model: str | None = None) -> pa.Table:
    p = rng.uniform(size=n)
    columns = {"p": p, "label": (rng.uniform(size=n) < p).astype(np.int64)}
    if model is not None:
        columns["model"] = pa.array([model] * n).dictionary_encode()
    return pa.table(columns)


def _folder(tmp_path, name: str, model: str | None = None):
    rng = np.random.default_rng(7)
    d = tmp_path / name
    d.mkdir()
    for i in range(2):
        pq.write_table(_good(rng, model=model), d / f"part-{i:03d}.parquet")
    return d, rng


def _bad(tmp_path, case: str) -> str:
    """Write the folder of one bad case; return the source to read."""
    model = "m" if case in ("dictionary_bomb", "plain_text_bomb") else None
    d, rng = _folder(tmp_path, case, model=model)
    bad = d / "part-002.parquet"
    if case == "corrupt_page":  # a data page that does not decompress
        pq.write_table(_good(rng), bad, compression="snappy", use_dictionary=False)
        raw = bytearray(bad.read_bytes())
        raw[8:200] = bytes(192)
        bad.write_bytes(bytes(raw))
    elif case == "truncated":
        pq.write_table(_good(rng), bad)
        bad.write_bytes(bad.read_bytes()[:-40])
    elif case == "extra_column":
        t = _good(rng)
        pq.write_table(t.append_column("extra", pa.array(np.zeros(len(t)))), bad)
    elif case == "string_columns":  # numbers written as text: read as numbers
        t = _good(rng)
        pq.write_table(pa.table({"p": t["p"].cast(pa.string()), "label": t["label"]}), bad)
    elif case == "nan_in_one_batch":
        t = _good(rng)
        p = t["p"].to_numpy().copy()
        p[246] = np.nan
        pq.write_table(pa.table({"p": p, "label": t["label"]}), bad)
    elif case == "empty_part":
        pq.write_table(_good(rng).slice(0, 0), bad)
    elif case == "csv_among_parquet":
        (d / "part-002.csv").write_text("p,label\n0.5,1\n")
    elif case == "rle_bomb":  # one row group of constant rows, a few kB on disk
        n = 300_000
        table = pa.table({"p": np.full(n, 0.25), "label": np.ones(n, dtype=np.int64)})
        pq.write_table(table, bad, row_group_size=n)
    elif case == "dictionary_bomb":  # one long name on every row: 2,000 × 200 kB decoded
        t = _good(rng, 2_000)
        name = pa.array(["x" * 200_000] * len(t)).dictionary_encode()
        pq.write_table(t.append_column("model", name), bad, compression="zstd")
    elif case == "plain_text_bomb":  # the same without a dictionary: compressed, not encoded
        t = _good(rng, 2_000)
        name = pa.array(["x" * 200_000] * len(t))
        pq.write_table(
            t.append_column("model", name), bad, compression="zstd", use_dictionary=False
        )
        for i in range(2):  # the good parts' model column, written the same way
            path = d / f"part-{i:03d}.parquet"
            good = pq.read_table(path)
            model = good["model"].cast(pa.string())
            pq.write_table(good.set_column(2, "model", model), path, use_dictionary=False)
    elif case == "symlink_loop":
        os.symlink(".", d / "loop")
        return str(d / "**" / "*.parquet")
    return str(d)


def _outcome(run):
    try:
        return "numbers", run()
    except DataError as exc:
        return "refused", str(exc)


def _numbers(result) -> tuple[int, np.ndarray, tuple[str, ...]]:
    only = result.results[0][2]
    table = only.metrics.set_index("metric")["value"].to_numpy(dtype=float)
    return result.input.n, table, tuple(f.code for f in result.input.lint.findings)


CASES = {
    "corrupt_page": r"part-002\.parquet is damaged: reading stopped after row 0",
    "truncated": r"part-002\.parquet is not a readable Parquet file",
    "extra_column": r"part-002\.parquet has other columns than the first part",
    "string_columns": None,
    "nan_in_one_batch": r"part-002\.parquet, row 246 of that file: 1 of this batch's rows",
    "empty_part": None,
    "csv_among_parquet": r"The parts mix Parquet and CSV files",
    "rle_bomb": None,
    "dictionary_bomb": r"part-002\.parquet, row 0 of that file: a value of the model column",
    "plain_text_bomb": r"part-002\.parquet, row 0 of that file: a value of the model column",
    "symlink_loop": None,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_part_has_one_outcome_on_every_engine(tmp_path, client, case):
    source = _bad(tmp_path, case)
    options = {"batch_rows": 50_000} if case == "rle_bomb" else {}
    stream = _outcome(lambda: analyze_stream(source, CONFIG, **options))
    dask = _outcome(lambda: analyze_dask(source, CONFIG, client=client, **options))
    memory = _outcome(lambda: load_parts(source, **options))
    expected = CASES[case]
    if expected is None:
        assert stream[0] == dask[0] == memory[0] == "numbers", (stream, dask, memory)
        n, values, codes = _numbers(stream[1])
        n_dask, values_dask, codes_dask = _numbers(dask[1])
        assert n == n_dask and codes == codes_dask
        assert_allclose(values_dask, values, rtol=EXACT, atol=EXACT)
        pred = memory[1]  # in memory: the same rows, digest, findings and numbers
        assert pred.n == n and pred.digest == stream[1].input.digest
        assert tuple(f.code for f in pred.lint.findings) == codes
        in_memory = analyze(pred, CONFIG).metrics
        if n <= CONFIG.kernel_sample:
            assert_allclose(
                in_memory["value"].to_numpy(dtype=float), values, rtol=EXACT, atol=EXACT
            )
        else:  # above kernel_sample rows the stream runs the sweep, smooth ECE, mcb on a subsample
            sampled = stream[1].analysis.metrics["note"].str.contains("subsample").to_numpy()
            # sums of 3·10⁵ rows in another order: rounding of about n·ε
            exact = in_memory["value"].to_numpy(dtype=float)[~sampled]
            assert_allclose(exact, values[~sampled], rtol=1e-10, atol=EXACT)
        if case == "symlink_loop":  # each file once, and a warning that a path repeated
            assert n == 800 and "repeated-parts" in codes
        if case == "rle_bomb":
            assert n == 300_800
    else:
        assert stream[0] == dask[0] == memory[0] == "refused", (stream, dask, memory)
        assert stream[1] == dask[1] == memory[1]
        assert "\n" not in stream[1]
        assert re.search(expected, stream[1]), stream[1]


def test_the_dictionary_bomb_is_refused_before_it_is_decoded(tmp_path):
    source = _bad(tmp_path, "dictionary_bomb")
    pool = pa.default_memory_pool()
    start = pool.max_memory()
    with pytest.raises(DataError, match="model names of at most 1,024 characters"):
        analyze_stream(source, CONFIG)
    part = os.path.join(source, "part-002.parquet")
    with pytest.raises(DataError, match=r"part-002\.parquet, row 0 \(0-based data rows\): a valu"):
        load_predictions(part)
    # 2,000 rows of a 200 kB value would be 400 MB spelled out; each is held once
    assert pool.max_memory() - start < 100 << 20


def test_long_names_up_to_the_limit_are_read_on_every_engine(tmp_path, client):
    rng = np.random.default_rng(3)
    d = tmp_path / "names"
    d.mkdir()
    long = "m" * MAX_NAME_CHARS
    for i, name in enumerate([long, "short"]):
        pq.write_table(_good(rng, model=name), d / f"part-{i}.parquet")
    stream = analyze_stream(str(d), CONFIG, split_models=True)
    dask = analyze_dask(str(d), CONFIG, client=client, split_models=True)
    assert stream.input.models == dask.input.models == (long, "short")
    frame = pq.read_table(d).to_pandas()
    memory = analyze(load_predictions(frame[frame["model"] == long]), CONFIG)
    assert_allclose(
        stream.results[0][2].metrics["value"].to_numpy(dtype=float),
        memory.metrics["value"].to_numpy(dtype=float),
        rtol=EXACT,
        atol=EXACT,
    )


def test_a_row_group_is_read_in_batches_of_the_asked_rows(tmp_path):
    n = 120_000
    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"p": np.linspace(0, 1, n), "label": np.arange(n) % 2}), path)
    (part,) = resolve_parts(str(path))
    got = list(read_row_group(part, 0, ["p", "label"], Layout(("p", "label")), 50_000))
    assert [(start, len(frame)) for start, frame in got] == [
        (0, 50_000),
        (50_000, 50_000),
        (100_000, 20_000),
    ]
    assert_allclose(np.concatenate([f["p"].to_numpy() for _, f in got]), np.linspace(0, 1, n))


def test_wide_rows_are_read_fewer_at_a_time(tmp_path):
    n = 3_000
    path = tmp_path / "wide.parquet"
    text = pa.array(["y" * 100_000] * n)  # 300 MB decoded, a few kB written
    table = pa.table({"p": np.full(n, 0.5), "label": np.ones(n, dtype=np.int64), "note": text})
    pq.write_table(table, path, use_dictionary=False, compression="zstd")
    meta = pq.ParquetFile(path).metadata
    # rows of two numbers fit by the million: the default batches are what they were
    assert fitting_rows(meta, 0, ["p", "label"]) > 1_000_000
    wide = fitting_rows(meta, 0, ["p", "label", "note"])
    rg = meta.row_group(0)
    decoded = sum(rg.column(i).total_uncompressed_size for i in range(3))
    assert decoded > 300_000_000 and wide == int(BATCH_BYTES // (decoded / n + 24)) < n
    (part,) = resolve_parts(str(path))
    lay = Layout(("p", "label", "note"))
    sizes = [len(f) for _, f in read_row_group(part, 0, ["p", "label", "note"], lay, 1_000_000)]
    assert sum(sizes) == n and max(sizes) <= wide < n


def test_the_memory_engine_reads_a_folder_as_the_stream_does(tmp_path, capsys):
    import json

    from core.cli import main

    rng = np.random.default_rng(5)
    d = tmp_path / "logs"
    d.mkdir()
    for i in range(3):
        t = _good(rng)
        group = pa.array(np.where(rng.random(len(t)) < 0.5, "x", "y"))
        pq.write_table(t.append_column("group", group), d / f"part-{i}.parquet")
    out = {}
    for engine in ("memory", "stream"):
        path = tmp_path / f"{engine}.json"
        args = [
            "metrics",
            str(d),
            "--engine",
            engine,
            "--resamples",
            "0",
            "--json",
            "-o",
            str(path),
        ]
        assert main(args) == 0
        out[engine] = json.loads(path.read_text())
    assert out["memory"]["input"] == out["stream"]["input"]
    mem, st = (out[e]["results"][0]["metrics"] for e in ("memory", "stream"))
    for a, b in zip(mem, st, strict=True):
        assert a["metric"] == b["metric"]
        if a["value"] is not None:
            assert a["value"] == pytest.approx(b["value"], rel=EXACT, abs=EXACT)
    # what only memory does, on the same folder: subgroups by a column
    assert main(["metrics", str(d), "--by", "group", "--resamples", "0"]) == 0
    assert "x" in capsys.readouterr().out
