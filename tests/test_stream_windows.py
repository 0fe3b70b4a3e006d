"""Windows over a stream: the numbers of the in-memory window analysis, from daily part files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import core
from core.analyses.analysis import AnalysisConfig
from core.analyses.subgroups import WindowOptions, window_analysis
from core.base.errors import ConfigError, DataError
from core.cli import main
from core.data import load_predictions
from core.stream.engine import StreamRunner
from core.stream.load import LoadOptions
from core.stream.windows import WindowStats, run_windows, window_analysis_stream

EXACT = 1e-12
NUMBERS = ["n", "value", "low", "high", "gap", "gap_low", "gap_high"]
DAY = 86_400


def _frame(seed: int = 3, days: int = 6, per_day: int = 700) -> pd.DataFrame:
    """Rows over ``days`` days in time order; the scores drift out of calibration from day 4."""
    rng = np.random.default_rng(seed)
    n = days * per_day
    seconds = np.sort(rng.uniform(0, days * DAY, n))
    day = (seconds // DAY).astype(int)
    p = rng.beta(2, 2, n)
    truth = np.where(day >= 3, np.clip(p + 0.12, 0, 1), p)
    y = (rng.random(n) < truth).astype(int)
    ts = pd.Timestamp("2024-05-06") + pd.to_timedelta(seconds, unit="s")  # a Monday
    return pd.DataFrame({"p": p, "y": y, "ts": ts})


def _write_daily(folder, frame: pd.DataFrame, like: pd.DataFrame | None = None) -> str:
    """Daily parts: day 1 over two files, one file holding the end of day 2 and days 3–4.

    ``like``: the frame whose times place the cuts (``frame`` when its times are clean).
    """
    folder.mkdir(parents=True, exist_ok=True)
    ts = (frame if like is None else like).ts
    day = ((ts - ts.iloc[0].normalize()) // pd.Timedelta(days=1)).to_numpy()
    starts = np.searchsorted(day, np.arange(day.max() + 2))
    cuts = [
        0,
        starts[1] // 2,  # day 0 over two files
        starts[1],
        (starts[1] + starts[2]) // 2,
        starts[4],  # the second half of day 1 with days 2 and 3
        starts[5],
        len(frame),
    ]
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
        frame.iloc[a:b].to_parquet(folder / f"day-{i:02d}.parquet", index=False)
    return str(folder / "*.parquet")


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return _frame()


@pytest.fixture(scope="module")
def daily(tmp_path_factory, frame) -> str:
    return _write_daily(tmp_path_factory.mktemp("daily"), frame)


@pytest.fixture(scope="module")
def pred(frame):
    return load_predictions(frame, keep_columns=["ts"])


def _same(memory, stream, *, intervals: bool = True) -> None:
    a, b = memory.result, stream.result
    assert a.groups == b.groups
    assert a.n == b.n
    cols = NUMBERS if intervals else ["n", "value", "gap"]
    assert_allclose(
        a.table[cols].to_numpy(float), b.table[cols].to_numpy(float), rtol=EXACT, atol=1e-15
    )
    assert a.table.small.tolist() == b.table.small.tolist()
    assert abs(a.pooled["value"] - b.pooled["value"]) <= EXACT
    if intervals:
        assert_allclose([a.pooled["low"], a.pooled["high"]], [b.pooled["low"], b.pooled["high"]])
    assert a.test is not None and b.test is not None
    assert b.test.df == a.test.df
    assert_allclose(b.test.statistic, a.test.statistic, rtol=EXACT)
    assert_allclose(b.test.pvalue, a.test.pvalue, rtol=1e-9)
    assert a.worst == b.worst
    for g in a.groups:
        for x, y in zip(a.bins[g], b.bins[g], strict=True):
            assert_allclose(x.edges, y.edges, rtol=0, atol=0)
            assert np.array_equal(x.counts, y.counts)
            assert_allclose(x.score_sums, y.score_sums, rtol=EXACT)
            assert_allclose(x.label_sums, y.label_sums, rtol=EXACT)
    assert (memory.first_breach, memory.first_sure_breach) == (
        stream.first_breach,
        stream.first_sure_breach,
    )


def test_the_parts_split_days_and_hold_several_days(daily):
    days = [pd.read_parquet(p).ts.dt.normalize().nunique() for p in sorted(_glob(daily))]
    assert 1 in days and max(days) >= 3
    firsts = [pd.read_parquet(p).ts.dt.normalize().iloc[0] for p in sorted(_glob(daily))]
    assert len(set(firsts)) < len(firsts)  # a day starts in one file and goes on in the next


def _glob(pattern: str) -> list[str]:
    import glob

    return glob.glob(pattern)


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
@pytest.mark.parametrize("estimator", ["plugin@1", "debiased@1", "debiased@2"])
def test_stream_windows_equal_memory_with_the_cell_bootstrap(daily, pred, binning, estimator):
    config = AnalysisConfig(binning=binning, n_bins=10, n_resamples=200, bootstrap="cells")
    memory = window_analysis(
        pred, config, time="ts", every="day", threshold=0.05, estimator=estimator
    )
    stream = window_analysis_stream(
        daily, config, time="ts", every="day", threshold=0.05, estimator=estimator, batch_rows=333
    )
    assert isinstance(stream, core.WindowAnalysis)
    assert stream.result.groups == tuple(f"2024-05-{d:02d}" for d in range(6, 12))
    _same(memory, stream)


def test_stream_windows_basic_intervals_equal_memory(daily, pred):
    config = AnalysisConfig(
        n_bins=10, n_resamples=200, bootstrap="cells", bootstrap_interval="basic"
    )
    kw = dict(time="ts", every="day", threshold=0.05, estimator="debiased@2")
    memory = window_analysis(pred, config, **kw)
    stream = window_analysis_stream(daily, config, batch_rows=333, **kw)
    _same(memory, stream)
    # the windows pivot on their plug-in errors: not the percentile intervals
    pct = window_analysis_stream(
        daily, AnalysisConfig(n_bins=10, n_resamples=200, bootstrap="cells"), **kw
    )
    assert not np.allclose(stream.table["high"], pct.table["high"], equal_nan=True)


def test_all_rows_of_the_windows_have_the_streamed_analysis_interval(daily):
    # one path: the (all rows) line of a stream's windows is analyze_stream's interval
    from core.stream.analysis import analyze_stream

    for interval in ("percentile", "basic"):
        config = AnalysisConfig(n_resamples=300, seed=4, bootstrap_interval=interval)
        windows = window_analysis_stream(daily, config, time="ts", every="day", batch_rows=500)
        whole = analyze_stream(daily, config, batch_rows=500)
        want = whole.analysis.metrics.set_index("metric").loc["plugin"]
        assert windows.result.pooled["low"] == pytest.approx(want.low, rel=EXACT)
        assert windows.result.pooled["high"] == pytest.approx(want.high, rel=EXACT)


def test_the_batching_does_not_change_anything(daily):
    config = AnalysisConfig(n_resamples=300, seed=5)
    small = window_analysis_stream(daily, config, time="ts", threshold=0.05, batch_rows=97)
    large = window_analysis_stream(daily, config, time="ts", threshold=0.05)
    _same(small, large)


def test_a_drift_is_found_from_day_four(daily):
    result = window_analysis_stream(
        daily, AnalysisConfig(lens="binary", n_resamples=300), time="ts", threshold=0.08
    )
    # days 1–3 calibrated (ECE about the noise of 700 rows), days 4–6 off by 0.12
    values = result.table.set_index("group").value
    assert values.iloc[:3].max() < 0.08 < values.iloc[3:].min()
    assert result.first_breach == "2024-05-09"
    assert result.first_sure_breach == "2024-05-09"
    assert result.result.test.pvalue < 1e-6


def test_cell_intervals_agree_with_the_exact_paired_bootstrap(daily, pred):
    """The cell scheme (normal score sums) and row resampling: intervals of equal width."""
    config = AnalysisConfig(n_resamples=1000, seed=2)
    exact = window_analysis(pred, config, time="ts", every="day")  # rows resampled
    cells = window_analysis_stream(daily, config, time="ts", every="day")
    for a, b in [(exact.table, cells.table)]:
        width_a = (a.high - a.low).to_numpy()
        width_b = (b.high - b.low).to_numpy()
        # 1000 resamples: a percentile interval's ends move by a few percent between schemes
        assert_allclose(width_b, width_a, rtol=0.2)
        gap_a = (a.gap_high - a.gap_low).to_numpy()
        gap_b = (b.gap_high - b.gap_low).to_numpy()
        assert_allclose(gap_b, gap_a, rtol=0.2)


def test_weeks_and_windows_of_rows(tmp_path, frame):
    long = _frame(seed=4, days=15, per_day=150)
    pattern = _write_daily(tmp_path / "weeks", long)
    memory_pred = load_predictions(long, keep_columns=["ts"])
    config = AnalysisConfig(n_resamples=100, bootstrap="cells")
    weeks = window_analysis_stream(pattern, config, time="ts", every="week", batch_rows=200)
    assert weeks.result.groups == ("2024-05-06", "2024-05-13", "2024-05-20")
    _same(window_analysis(memory_pred, config, time="ts", every="week"), weeks)
    # N rows in file order, with and without the (sorted) time column
    for time in (None, "ts"):
        rows = window_analysis_stream(pattern, config, time=time, every=400, batch_rows=250)
        memory = window_analysis(memory_pred, config, time=time, every=400)
        assert rows.result.groups[-1] == "rows 2001–2250"
        _same(memory, rows)


def test_windows_of_rows_need_the_rows_in_time_order(tmp_path, frame):
    shuffled = frame.copy()
    shuffled.loc[2000:2010, "ts"] = shuffled.ts.iloc[10]  # back in time, in the 4th part
    pattern = _write_daily(tmp_path / "shuffled", shuffled, frame)
    with pytest.raises(ConfigError, match=r"day-03\.parquet, row .* earlier than the row before"):
        window_analysis_stream(pattern, time="ts", every=500, n_resamples=0)
    # without the time column: windows of rows in file order
    result = window_analysis_stream(pattern, every=500, n_resamples=0)
    assert result.result.n["rows 1–500"] == 500


def test_bad_times_name_the_file_and_row(tmp_path, frame):
    text = frame.assign(ts=frame.ts.dt.strftime("%Y-%m-%d %H:%M:%S"))
    text.loc[2500, "ts"] = "not a time"
    pattern = _write_daily(tmp_path / "text", text, frame)
    with pytest.raises(
        ConfigError, match=r"day-03\.parquet, row [\d,]+ of that file: .*not a time"
    ):
        window_analysis_stream(pattern, time="ts", n_resamples=0)
    # text times parse as in memory
    minutes = frame.assign(ts=frame.ts.dt.strftime("%Y-%m-%dT%H:%M"))
    good = _write_daily(tmp_path / "good", minutes, frame)
    assert window_analysis_stream(good, time="ts", n_resamples=0).result.groups[0] == "2024-05-06"

    gaps = frame.copy()
    gaps.loc[3000, "ts"] = pd.NaT
    pattern = _write_daily(tmp_path / "nat", gaps, frame)
    with pytest.raises(ConfigError, match=r"have no time in 'ts'"):
        window_analysis_stream(pattern, time="ts", n_resamples=0)
    with pytest.raises(ConfigError, match="rows have no time"):
        window_analysis(load_predictions(gaps, keep_columns=["ts"]), time="ts")

    with pytest.raises(DataError, match="No column named 'when' to keep"):
        window_analysis_stream(pattern, time="when")
    with pytest.raises(DataError, match="No column named 'when' to keep"):
        load_predictions(frame, keep_columns=["when"])


def test_nat_is_located(tmp_path, frame):
    gaps = frame.copy()
    gaps.loc[3000, "ts"] = pd.NaT
    pattern = _write_daily(tmp_path / "nat", gaps, frame)
    sizes = [pd.read_parquet(p).shape[0] for p in sorted(_glob(pattern))]
    part = int(np.searchsorted(np.cumsum(sizes), 3000, side="right"))
    row = 3000 - sum(sizes[:part])
    with pytest.raises(ConfigError, match=rf"day-{part:02d}\.parquet, row {row:,} of that file"):
        window_analysis_stream(pattern, time="ts", n_resamples=0, batch_rows=128)


def test_options_a_stream_cannot_honour(daily):
    with pytest.raises(ConfigError, match="exact bootstrap"):
        window_analysis_stream(daily, AnalysisConfig(bootstrap="exact"), time="ts")
    with pytest.raises(ConfigError, match="read bin sums"):
        window_analysis_stream(daily, time="ts", estimator="label-binned@1")
    with pytest.raises(ConfigError, match="time column"):
        window_analysis_stream(daily, every="day")
    with pytest.raises(ConfigError, match="threshold"):
        window_analysis_stream(daily, time="ts", threshold=-1)


def test_models_are_windowed_apart(tmp_path, frame):
    rng = np.random.default_rng(8)
    two = frame.assign(model=np.where(rng.random(len(frame)) < 0.5, "a", "b"))
    pattern = _write_daily(tmp_path / "models", two)
    config = AnalysisConfig(n_resamples=100, bootstrap="cells")
    pred = load_predictions(two, keep_columns=["ts"])
    runner = StreamRunner(pattern, LoadOptions(keep_columns=("ts",)), batch_rows=500)
    got = run_windows(runner, config, WindowOptions(time="ts"))
    assert set(got) == {"a", "b"}
    for name, part in pred.by_model().items():
        _same(window_analysis(part, config, time="ts"), got[name])
    one = window_analysis_stream(pattern, config, time="ts", model="b")
    _same(got["b"], one)


def test_memory_is_windows_times_cells(daily):
    """The statistics kept are each window's cells: at most 2·B per window, whatever n."""
    from core.stream.windows import _Windows

    runner = StreamRunner(daily, LoadOptions(keep_columns=("ts",)), batch_rows=100)
    job = _Windows(runner, AnalysisConfig(n_bins=10), split=True, only=None)
    _, got = job.cells("ts", "day")
    (stats,) = got.values()
    assert isinstance(stats, WindowStats)
    assert len(stats.cells) == 6
    assert all(c.n_cells <= 2 * 10 for c in stats.cells.values())
    assert stats.n == 4200


# --------------------------------------------------------------------------- the CLI


def test_cli_json_and_text(capsys, tmp_path, daily, pred, frame):
    argv = ["metrics", daily, "--engine", "stream", "--window", "day", "--time", "ts"]
    argv += ["--threshold", "0.08", "--resamples", "200", "--batch-rows", "1000"]
    assert main([*argv, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    windows = record["results"][0]["windows"]
    memory = window_analysis(
        pred, AnalysisConfig(lens="binary", n_resamples=200, bootstrap="cells"), time="ts",
        threshold=0.08,
    )  # fmt: skip
    assert windows["first_breach"] == memory.first_breach == "2024-05-09"
    # the rows' digest, whatever columns are kept and on either engine
    assert record["input"]["digest"] == pred.digest == load_predictions(frame).digest
    whole = tmp_path / "all.parquet"
    frame.to_parquet(whole)
    assert main(["metrics", str(whole), "--window", "day", "--time", "ts", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["input"]["digest"] == pred.digest
    assert [g["group"] for g in windows["groups"]] == list(memory.result.groups)
    assert_allclose(
        [[g[k] for k in NUMBERS] for g in windows["groups"]],
        memory.table[NUMBERS].to_numpy(float),
        rtol=EXACT,
    )
    assert windows["test"]["statistic"] == pytest.approx(memory.result.test.statistic, rel=EXACT)
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "all rows: windows:" in text
    assert "First window over 0.08: 2024-05-09" in text
    assert "ignored-columns" not in text  # the time column is kept, not ignored


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--window", "day", "--time", "when"], "No column named 'when'"),
        (["--window", "day"], "need a time column"),
        (["--window", "fortnight", "--time", "ts"], "give day, week or a number"),
        (["--threshold", "0.1"], "--threshold applies to --window"),
        (["--by", "ts"], "--by reads the rows in memory"),
        (["--window", "day", "--time", "ts", "--estimator", "sweep"], "identical bins"),
    ],
)
def test_cli_bad_input_exits_2(capsys, daily, extra, message):
    assert main(["metrics", daily, "--engine", "stream", "--resamples", "0", *extra]) == 2
    assert message in capsys.readouterr().err


def test_cli_bad_window_option_fails_before_the_first_pass(capsys, daily, monkeypatch):
    import core.stream.analysis as stream_analysis

    def no_pass(*_args, **_kwargs):
        raise AssertionError("the stream was read before the window options were checked")

    monkeypatch.setattr(stream_analysis, "run_analysis", no_pass)
    argv = ["metrics", daily, "--engine", "stream", "--resamples", "0"]
    assert main([*argv, "--window", "day", "--time", "ts", "--estimator", "sweep"]) == 2
    assert "identical bins" in capsys.readouterr().err
