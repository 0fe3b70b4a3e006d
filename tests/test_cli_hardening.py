"""The command line never loses data or prints a traceback, and bounds every size it reads."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import core.cli as cli
from core.analyses.analysis import AnalysisConfig
from core.analyses.calibration_tests import calibration_test
from core.analyses.model_comparison import compare_models
from core.base.errors import ConfigError, ExportError
from core.cli import main
from core.inference.bootstrap import bootstrap_interval

ROOT = Path(__file__).resolve().parents[1]
BINARY = ROOT / "sample_data" / "binary_breast_cancer.csv"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(capsys, *argv: str, code: int = 2) -> str:
    got, out, err = _run(capsys, *argv)
    assert got == code, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("calibscope: ")
    return lines[0]


@pytest.fixture
def small_csv(tmp_path):
    rng = np.random.default_rng(0)
    p = rng.uniform(size=200)
    path = tmp_path / "t.csv"
    pd.DataFrame({"p": p, "label": (rng.uniform(size=200) < p).astype(int)}).to_csv(
        path, index=False
    )
    return path


# ----------------------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    ("argv", "bound"),
    [
        (["--bins", "20000000"], "from 1 to 10,000"),
        (["--bins", "0"], "from 1 to 10,000"),
        (["--resamples", "1e9"], "from 0 to 100,000"),
        (["--resamples", "1000000000"], "from 0 to 100,000"),
        (["--resamples", "2.5"], "whole number"),
        (["--engine", "stream", "--batch-rows", "0"], "from 1 to 50,000,000"),
    ],
)
def test_size_options_are_bounded_where_parsed(capsys, argv, bound):
    line = _one_line(capsys, "metrics", str(BINARY), *argv)
    assert argv[-2] in line and bound in line


def test_test_resamples_are_bounded(capsys):
    line = _one_line(capsys, "report", str(BINARY), "--json", "--test-resamples", "1e7")
    assert "--test-resamples" in line and "100,000" in line


def test_core_refuses_the_same_sizes():
    with pytest.raises(ConfigError, match="n_bins must be at most 10,000"):
        AnalysisConfig(n_bins=20_000_000)
    with pytest.raises(ConfigError, match="n_resamples must be at most 100,000"):
        AnalysisConfig(n_resamples=10**9)
    with pytest.raises(ConfigError, match="kernel_sample must be at most"):
        AnalysisConfig(kernel_sample=10**9)
    with pytest.raises(ConfigError, match="n_bins must be at most"):
        AnalysisConfig.from_dict({"n_bins": "20000000"})
    p, y = np.array([0.2, 0.8, 0.6, 0.3]), np.array([0, 1, 1, 0])
    with pytest.raises(ConfigError, match="n_resamples must be at most"):
        bootstrap_interval(p, y, lens="binary", n_resamples=10**9)
    with pytest.raises(ConfigError, match="n_resamples must be at most"):
        calibration_test(p, y, test="consistency", n_resamples=10**9)
    with pytest.raises(ConfigError, match="n_resamples must be at most"):
        compare_models({"a": (p, y), "b": (p, y)}, n_resamples=10**9)


def test_negative_label_positions_are_refused(capsys, tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("0.2,0\n0.7,1\n0.4,1\n")
    for position in ("-0", "-1"):
        line = _one_line(capsys, "lint", str(path), "--label-column", position)
        assert f"--label-column {position} is not a column position" in line
    code, out, _ = _run(capsys, "lint", str(path), "--label-column", "1")
    assert code == 0 and "3 rows" in out


# ----------------------------------------------------------------------------- failures


def test_ctrl_c_is_one_line_and_exit_130(capsys, monkeypatch, small_csv):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("core.analyses.analysis.analyze", interrupted)
    line = _one_line(capsys, "metrics", str(small_csv), code=cli.EXIT_INTERRUPTED)
    assert line == "calibscope: interrupted"


def test_sigint_in_a_process_exits_130(small_csv, tmp_path):
    # a real Ctrl-C: the process is interrupted mid-run, without a traceback
    started = tmp_path / "started"
    script = (
        "import pathlib, time, core.analyses.analysis, core.cli\n"
        f"def slow(*a, **k):\n    pathlib.Path({str(started)!r}).touch()\n    time.sleep(60)\n"
        "core.analyses.analysis.analyze = slow\n"
        f"raise SystemExit(core.cli.main(['metrics', {str(small_csv)!r}]))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120  # imports are slow on a busy machine
    while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert started.exists(), "the command never reached the analysis"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and out == ""
    assert err.strip().splitlines()[-1] == "calibscope: interrupted" and "Traceback" not in err


def test_unexpected_errors_are_one_line_exit_1_and_debug_shows_the_traceback(
    capsys, monkeypatch, small_csv
):
    def broken(*args, **kwargs):
        raise RuntimeError("something internal\nover two lines")

    monkeypatch.setattr("core.analyses.analysis.analyze", broken)
    line = _one_line(capsys, "metrics", str(small_csv), code=cli.EXIT_INTERNAL)
    assert "internal error: RuntimeError: something internal over two lines" in line
    assert "--debug" in line
    for argv in (["--debug", "metrics", str(small_csv)], ["metrics", str(small_csv), "--debug"]):
        code, out, err = _run(capsys, *argv)
        assert code == cli.EXIT_INTERNAL and out == ""
        assert "Traceback" in err and err.strip().splitlines()[-1].startswith("calibscope: ")


def test_memory_errors_say_what_to_change(capsys, monkeypatch, small_csv):
    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr("core.analyses.analysis.analyze", exhausted)
    line = _one_line(capsys, "metrics", str(small_csv), code=cli.EXIT_INTERNAL)
    assert "out of memory" in line and "--engine stream" in line


def test_typed_errors_with_debug_keep_exit_2(capsys, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("p,label\n0.2,0\nnan,1\n")
    code, _, err = _run(capsys, "metrics", str(path), "--debug")
    assert code == 2 and "Traceback" in err and "--drop-missing" in err.splitlines()[-1]


# ----------------------------------------------------------------------------- outputs


@pytest.mark.parametrize("command", ["metrics", "lint", "compare", "report"])
def test_output_that_is_the_input_is_refused(capsys, small_csv, command):
    before = small_csv.read_bytes()
    line = _one_line(capsys, command, str(small_csv), "-o", str(small_csv))
    assert "would overwrite the input" in line
    assert small_csv.read_bytes() == before


def test_output_reaching_an_input_another_way_is_refused(capsys, tmp_path, small_csv):
    before = small_csv.read_bytes()
    link = tmp_path / "link.csv"
    link.symlink_to(small_csv)
    hard = tmp_path / "hard.csv"
    os.link(small_csv, hard)
    relative = os.path.relpath(small_csv)
    for output in (link, hard, Path(relative), tmp_path / "sub" / ".." / "t.csv"):
        line = _one_line(capsys, "metrics", str(small_csv), "-o", str(output))
        assert "would overwrite the input" in line
    labels = tmp_path / "labels.csv"
    labels.write_text("0\n1\n")
    line = _one_line(capsys, "metrics", str(small_csv), "--labels", str(labels), "-o", str(labels))
    assert "would overwrite the input" in line and str(labels) in line
    assert small_csv.read_bytes() == before and labels.read_text() == "0\n1\n"


def test_stream_outputs_inside_input_folders_and_globs_are_refused(capsys, tmp_path, small_csv):
    folder = tmp_path / "parts"
    folder.mkdir()
    pd.read_csv(small_csv).to_csv(folder / "a.csv", index=False)
    line = _one_line(
        capsys, "metrics", str(folder), "--engine", "stream", "-o", str(folder / "new.json")
    )
    assert "would overwrite the input" in line
    pattern = str(folder / "*.csv")
    for output in (folder / "a.csv", folder / "b.csv"):  # an existing part, a future one
        line = _one_line(capsys, "metrics", pattern, "--engine", "stream", "-o", str(output))
        assert "would overwrite the input" in line
    code, _, err = _run(
        capsys, "metrics", pattern, "--engine", "stream", "--json", "-o", str(tmp_path / "o.json")
    )
    assert code == 0, err and json.loads((tmp_path / "o.json").read_text())["command"] == "metrics"


def test_a_failed_report_leaves_the_earlier_file(capsys, monkeypatch, small_csv, tmp_path):
    target = tmp_path / "report.html"
    target.write_text("earlier report")

    def failing(*args, **kwargs):
        raise ConfigError("the report could not be built")

    monkeypatch.setattr("core.report.build_report", failing)
    line = _one_line(capsys, "report", str(small_csv), "-o", str(target))
    assert "could not be built" in line
    monkeypatch.undo()

    def half_written(self):
        raise RuntimeError("rendering stopped midway")

    monkeypatch.setattr("core.report.Report.to_html", half_written)
    _one_line(capsys, "report", str(small_csv), "-o", str(target), code=cli.EXIT_INTERNAL)
    assert target.read_text() == "earlier report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "t.csv"]


def test_report_write_is_atomic(monkeypatch, small_csv, tmp_path):
    from core.data import load_predictions
    from core.report import build_report

    report = build_report(
        load_predictions(small_csv), config=AnalysisConfig(lens="binary", n_resamples=0)
    )
    target = tmp_path / "r.json"
    target.write_text("earlier")

    def failing(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("core.base.files.os.replace", failing)
    with pytest.raises(ExportError, match="Cannot write .*r.json: disk full"):
        report.write(target)
    assert target.read_text() == "earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "t.csv"]
    monkeypatch.undo()
    assert report.write(target) == target and json.loads(target.read_text())


# ----------------------------------------------------------------------------- compare


def test_compare_warns_beside_differences_of_few_rows(capsys, tmp_path):
    rng = np.random.default_rng(3)
    rows = []
    for model, n, shift in (("big", 400, 0.0), ("tiny", 3, 0.4)):
        p = rng.uniform(0.05, 0.55, size=n)
        y = (rng.uniform(size=n) < p).astype(int)
        rows.append(pd.DataFrame({"model": model, "p": np.clip(p + shift, 0, 1), "label": y}))
    path = tmp_path / "models.csv"
    pd.concat(rows).to_csv(path, index=False)
    code, out, err = _run(capsys, "compare", str(path), "--resamples", "200", "--reference", "big")
    assert code == 0, err
    assert "Few rows: 'tiny' (3) has fewer than 100 rows" in out
    for line in out.splitlines():
        if line.strip().startswith("tiny") and "*" in line:
            assert "few rows" in line
    code, out, _ = _run(capsys, "compare", str(path), "--resamples", "50", "--json")
    assert any(note.startswith("Few rows") for note in json.loads(out)["notes"])


# ----------------------------------------------------------------------------- progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_lines_on_a_terminal_at_once_and_elsewhere_only_when_long():
    term = _Terminal()
    with cli.Progress(term, every=60) as progress:
        progress("loading x.csv")
        progress.update(0.5, "500 of 1,000 resamples")  # within the step: throttled
        progress("analysing all rows")
    lines = term.getvalue().splitlines()
    assert [ln.split(" [")[0] for ln in lines] == [
        "calibscope: loading x.csv",
        "calibscope: analysing all rows",
    ]
    log = io.StringIO()  # not a terminal: quiet until the run has lasted `delay`
    with cli.Progress(log, delay=0.3, every=0.2) as progress:
        progress("loading x.csv")
        assert log.getvalue() == ""
        time.sleep(1.8)  # the watcher shows the step once it is due, and repeats it
    assert log.getvalue().startswith("calibscope: loading x.csv [")
    assert len(log.getvalue().splitlines()) >= 2


def test_metrics_progress_goes_to_stderr_and_stdout_stays_json(capsys, monkeypatch, small_csv):
    monkeypatch.setattr(cli, "PROGRESS_DELAY", 0.0)
    code, out, err = _run(capsys, "metrics", str(small_csv), "--json", "--resamples", "50")
    assert code == 0 and json.loads(out)["command"] == "metrics"
    assert "calibscope: loading" in err and "calibscope: analysing all rows, 200 rows" in err
