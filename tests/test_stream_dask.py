"""The Dask engine on a real local cluster gives the numbers of the stream and of memory."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import core
from core.analyses.analysis import AnalysisConfig, analyze
from core.base.errors import DataError
from core.stream.analysis import analyze_stream

distributed = pytest.importorskip("dask.distributed", reason="the dask extra is not installed")
from core.stream.dask import analyze_dask  # noqa: E402

EXACT = 1e-12


def _write(folder, frame: pd.DataFrame, cuts: list[int]) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    bounds = [0, *cuts, len(frame)]
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        frame.iloc[a:b].to_parquet(folder / f"part-{i:03d}.parquet", index=False)
    return str(folder / "*.parquet")


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(21)
    n = 9_000
    # half the rows from a model with discrete scores: ties at equal-mass boundaries
    p = np.where(np.arange(n) % 2 == 0, rng.beta(2, 3, n), rng.choice([0.2, 0.4, 0.7], n))
    y = (rng.random(n) < p).astype(int)
    model = np.where(rng.random(n) < 0.5, "a", "b")
    return pd.DataFrame({"p": p, "y": y, "model": model})


def _table(a: core.ReliabilityAnalysis) -> np.ndarray:
    return a.metrics.set_index("metric")[["value", "low", "high"]].to_numpy(dtype=float)


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_dask_equals_stream_and_memory(tmp_path, client, frame, binning):
    pattern = _write(tmp_path / "a", frame, [1_000, 4_500, 7_777])
    config = AnalysisConfig(lens="binary", binning=binning, n_resamples=200, bootstrap="cells")
    dask_result = analyze_dask(pattern, config, client=client)
    stream = analyze_stream(pattern, config, batch_rows=2_000)
    whole = core.load_predictions(_concat(tmp_path / "whole.parquet", frame))
    assert dask_result.input.digest == stream.input.digest == whole.digest
    assert dask_result.input.lint.to_records() == whole.lint.to_records()
    parts = whole.by_model()
    for (name, part, a), (_, _, b) in zip(dask_result.results, stream.results, strict=True):
        assert part.digest == parts[name].digest
        assert_allclose(_table(a), _table(b), rtol=EXACT, atol=1e-15)
        memory = analyze(parts[name], config)
        # the estimators that read rows (the sweep, the smooth ECE) run on the kernel subsample
        rows = ~a.metrics.note.str.contains("subsample")
        assert_allclose(
            _table(a)[rows.to_numpy()], _table(memory)[rows.to_numpy()], rtol=EXACT, atol=1e-15
        )


def test_intervals_do_not_depend_on_the_partitioning(tmp_path, client, frame):
    config = AnalysisConfig(lens="binary", binning="equal-mass", n_resamples=300)
    one = analyze_dask(_write(tmp_path / "x", frame, [3_000]), config, client=client)
    other = analyze_dask(
        _write(tmp_path / "y", frame, [10, 2_222, 5_000, 8_999]), config, client=client
    )
    for (_, _, a), (_, _, b) in zip(one.results, other.results, strict=True):
        assert_allclose(_table(a), _table(b), rtol=EXACT, atol=1e-15)


def test_a_bad_partition_is_reported(tmp_path, client, frame):
    bad = frame.copy()
    bad.loc[5_000, "p"] = np.nan
    pattern = _write(tmp_path / "bad", bad, [4_000])
    with pytest.raises(DataError) as dasked:
        analyze_dask(pattern, AnalysisConfig(lens="binary"), client=client)
    # the file and the row in it, in the stream's words
    assert "part-001.parquet, row 1,000 of that file" in str(dasked.value)
    with pytest.raises(DataError) as streamed:
        core.analyze_stream(pattern, AnalysisConfig(lens="binary"))
    assert str(dasked.value) == str(streamed.value)


def _concat(path, frame: pd.DataFrame):
    frame.to_parquet(path, index=False)
    return path


def _nested(folder) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {"p": [0.2, 0.7], "y": [0, 1], "extra": pa.array([[1], [2, 3]], pa.list_(pa.int64()))}
    )
    pq.write_table(table, folder / "part-000.parquet")
    return str(folder)


def test_nested_columns_are_refused_before_dask_reads(tmp_path, client):
    folder = _nested(tmp_path / "nested")
    with pytest.raises(DataError, match=r"part-000.parquet: column 'extra' holds lists"):
        analyze_dask(folder, AnalysisConfig(lens="binary"), client=client)
    # the same through fsspec, as a remote dataset is read
    with pytest.raises(DataError, match="column 'extra' holds lists"):
        analyze_dask(f"file://{folder}", AnalysisConfig(lens="binary"), client=client)


def test_the_column_limit_holds_for_dask(tmp_path, client, frame, monkeypatch):
    pattern = _write(tmp_path / "wide", frame, [4_000])
    monkeypatch.setenv("CALIBSCOPE_MAX_COLUMNS", "2")
    with pytest.raises(DataError, match="CALIBSCOPE_MAX_COLUMNS"):
        analyze_dask(pattern, AnalysisConfig(lens="binary"), client=client)


def test_a_csv_dataset_is_sent_to_the_stream_engine(tmp_path, client, frame):
    path = tmp_path / "rows.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(DataError, match="stream engine"):
        analyze_dask(str(path), AnalysisConfig(lens="binary"), client=client)


def test_windows_on_dask_equal_the_stream(tmp_path, client):
    from core.analyses.subgroups import WindowOptions
    from core.stream.dask import DaskRunner
    from core.stream.load import LoadOptions
    from core.stream.windows import run_windows, window_analysis_stream

    rng = np.random.default_rng(5)
    n = 3_000
    seconds = np.sort(rng.uniform(0, 4 * 86_400, n))
    p = rng.beta(2, 2, n)
    y = (rng.random(n) < p).astype(int)
    ts = pd.Timestamp("2024-05-06") + pd.to_timedelta(seconds, unit="s")
    pattern = _write(tmp_path / "w", pd.DataFrame({"p": p, "y": y, "ts": ts}), [500, 1_700])
    config = AnalysisConfig(lens="binary", binning="equal-mass", n_resamples=200)
    runner = DaskRunner(pattern, LoadOptions(keep_columns=("ts",)), client=client)
    (dask_result,) = run_windows(runner, config, WindowOptions("ts", threshold=0.05)).values()
    stream = window_analysis_stream(pattern, config, time="ts", threshold=0.05, batch_rows=700)
    a, b = dask_result.result, stream.result
    assert a.groups == b.groups == ("2024-05-06", "2024-05-07", "2024-05-08", "2024-05-09")
    cols = ["n", "value", "low", "high", "gap", "gap_low", "gap_high"]
    assert_allclose(a.table[cols].to_numpy(float), b.table[cols].to_numpy(float), rtol=EXACT)
    assert_allclose(a.test.statistic, b.test.statistic, rtol=EXACT)
    assert dask_result.first_breach == stream.first_breach


def test_a_part_with_other_columns_is_refused_as_the_stream_refuses_it(tmp_path, client, frame):
    folder = tmp_path / "extra"
    _write(folder, frame, [4_000])
    frame.iloc[:10].assign(extra=1).to_parquet(folder / "part-009.parquet", index=False)
    config = AnalysisConfig(lens="binary", n_resamples=0)
    with pytest.raises(DataError) as streamed:
        core.analyze_stream(str(folder / "*.parquet"), config)
    with pytest.raises(DataError) as dasked:
        analyze_dask(str(folder / "*.parquet"), config, client=client)
    assert "part-009.parquet has other columns than the first part (has 'extra' besides)" in str(
        dasked.value
    )
    assert str(dasked.value) == str(streamed.value)  # one message, whatever the engine
    with pytest.raises(DataError, match="has 'extra' besides"):  # and through fsspec
        analyze_dask(f"file://{folder}", config, client=client)


def test_dask_reads_the_rows_in_the_streams_order(tmp_path, client, frame):
    # Dask orders files by a natural sort (part-9 before part-10), the stream by path: the
    # Dask engine reads the stream's parts, one row group per partition, in the stream's order
    folder = tmp_path / "order"
    folder.mkdir()
    frame.iloc[:3_000].to_parquet(folder / "part-9.parquet", index=False, row_group_size=1_000)
    frame.iloc[3_000:].to_parquet(folder / "part-10.parquet", index=False, row_group_size=2_500)
    config = AnalysisConfig(lens="binary", n_resamples=0)
    dasked = analyze_dask(str(folder), config, client=client)
    streamed = core.analyze_stream(str(folder), config)
    assert dasked.input.n == streamed.input.n == len(frame)
    assert dasked.input.digest == streamed.input.digest  # the same rows in the same order


def test_a_worker_that_dies_is_one_line_of_the_data(tmp_path, frame):
    # what the client raises when workers are killed (out of memory) becomes a DataError
    from distributed import KilledWorker

    from core.stream.dask import DaskRunner, worker_died

    class Dying:  # a client whose workers die, as a partition too large for them makes them
        def compute(self, values, sync):
            raise KilledWorker("read-row-group-0", None, 3)

    pattern = _write(tmp_path / "ok", frame, [4_000])
    runner = DaskRunner(pattern, core.stream.load.LoadOptions(), client=Dying())
    with pytest.raises(DataError, match=r"A Dask worker died during a pass over .*KilledWorker"):
        runner.run(runner.plan(), lambda rows, offsets: ({}, {}, {}), "a pass")
    assert worker_died(MemoryError()) and not worker_died(ValueError("a bad row"))


def test_a_remote_dataset_is_read_by_file_and_row_group(tmp_path, client, frame):
    # through fsspec, as a remote dataset is: the stream's numbers, errors named by the URL
    pattern = _write(tmp_path / "remote", frame, [4_000])
    config = AnalysisConfig(lens="binary", n_resamples=0)
    local = analyze_dask(pattern, config, client=client)
    remote = analyze_dask(f"file://{tmp_path / 'remote'}", config, client=client)
    assert remote.input.n == local.input.n and remote.input.digest == local.input.digest
    for (_, _, a), (_, _, b) in zip(local.results, remote.results, strict=True):
        assert_allclose(_table(b)[:, 0], _table(a)[:, 0], rtol=EXACT, atol=1e-15)
    bad = frame.copy()
    bad.loc[5_000, "p"] = np.nan
    _write(tmp_path / "remote_bad", bad, [4_000])
    url = f"file://{tmp_path / 'remote_bad'}"
    with pytest.raises(DataError, match=r"^file://.*/part-001\.parquet, row 1,000 of that file"):
        analyze_dask(url, config, client=client)
    with pytest.raises(DataError, match=r"^No files match"):
        analyze_dask(f"file://{tmp_path}/nothing-*.parquet", config, client=client)
