"""The ``calibscope`` command line: tables, JSON, bad input, and the console script."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.cli import main
from core.data import load_predictions

ROOT = Path(__file__).resolve().parents[1]
BINARY = ROOT / "sample_data" / "binary_breast_cancer.csv"
DIGITS = ROOT / "sample_data" / "multiclass_digits.csv"
CIFAR = ROOT.parent / "shared" / "data" / "cifar10-14-networks"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys, *argv: str) -> dict:
    code, out, err = _run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def _ece_equal_width(scores: np.ndarray, outcomes: np.ndarray, n_bins: int) -> float:
    # the documented convention: bin k = [k/B, (k+1)/B), the last bin closed at 1
    edges = np.arange(n_bins + 1) / n_bins
    idx = np.clip(np.searchsorted(edges, scores, side="right") - 1, 0, n_bins - 1)
    gap = np.bincount(idx, scores - outcomes, minlength=n_bins)
    return float(np.abs(gap).sum() / scores.size)


def _one_line_error(code: int, out: str, err: str) -> str:
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("calibscope: error: ")
    assert "Traceback" not in err
    return lines[0]


# ----------------------------------------------------------------------------- metrics


def test_metrics_json_matches_calibration_error(capsys):
    calibration_error = pytest.importorskip("core.inference.calibration").calibration_error
    record = _json(capsys, "metrics", str(BINARY), "--resamples", "50", "--seed", "7")
    assert record["command"] == "metrics" and record["seed"] == 7
    assert record["config"]["lens"] == "binary" and record["config"]["n_bins"] == 15
    assert record["config"]["n_resamples"] == 50 and record["config"]["norm"] == "1"
    assert set(record["versions"]) >= {"python", "numpy", "scipy", "pandas", "pyarrow"}
    assert record["input"]["n"] == 2276 and record["input"]["binary"] is True
    assert [r["model"] for r in record["results"]] == [
        "naive-bayes",
        "random-forest",
        "adaboost",
        "logistic-regression",
    ]
    assert any(f["code"] == "exact-zero-one" for f in record["lint"])
    parts = load_predictions(BINARY).by_model()
    for result in record["results"]:
        part = parts[result["model"]]
        p, y = part.probs[:, 1], part.labels
        assert result["n"] == 569 and result["digest"] == part.digest
        expected = calibration_error(p, y, lens="binary", n_bins=15).value
        head = result["headline"]
        assert head["value"] == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert head["value"] == pytest.approx(_ece_equal_width(p, y.astype(float), 15), abs=1e-12)
        assert head["low"] <= head["high"]
        metrics = {m["metric"]: m for m in result["metrics"]}
        assert metrics["plugin"]["value"] == head["value"]
        accuracy = float(((p > 0.5).astype(int) == y).mean())
        assert metrics["accuracy"]["value"] == pytest.approx(accuracy, abs=1e-12)
        bins = result["bins"][0]["rows"]
        assert sum(b["count"] for b in bins) == 569 and len(bins) == 15


def test_metrics_options_reach_the_config(capsys):
    record = _json(
        capsys,
        "metrics",
        str(DIGITS),
        "--model",
        "logistic-regression",
        "--lens",
        "classwise",
        "--binning",
        "equal-mass",
        "--bins",
        "10",
        "--norm",
        "2",
        "--estimator",
        "debiased",
        "--resamples",
        "0",
    )
    cfg = record["config"]
    assert (cfg["lens"], cfg["binning"], cfg["n_bins"], cfg["norm"], cfg["estimator"]) == (
        "classwise",
        "equal-mass",
        10,
        "2",
        "debiased",
    )
    (result,) = record["results"]
    assert result["model"] == "logistic-regression" and result["n"] == 1797
    assert result["headline"]["estimator"] == "debiased"
    assert result["headline"]["low"] is None  # no resamples, no interval
    assert len(result["headline"]["components"]) == 10


def test_metrics_table(capsys):
    code, out, err = _run(
        capsys, "metrics", str(BINARY), "--resamples", "20", "--model", "adaboost"
    )
    assert code == 0 and err == ""
    assert "binary_breast_cancer.csv: 2,276 rows, one P(y=1) column; 1 model of 569 rows" in out
    assert "model 'adaboost': n = 569; headline plugin = " in out
    assert "95% interval" in out and "Accuracy" in out and "seed=0" in out
    assert "naive-bayes" not in out
    # every term of the decomposition is named, and the named terms add up to the Brier score
    line = next(x for x in out.splitlines() if "Brier decomposition" in x)
    total, terms = line.split(": ", 1)[1].split(" = ")
    pattern = r"([+−]?) ?(REL|RES|UNC|within-bin variance|within-bin covariance) (\S+)"
    found = re.findall(pattern, terms)
    assert [name for _, name, _ in found] == [
        "REL",
        "RES",
        "UNC",
        "within-bin variance",
        "within-bin covariance",
    ]
    added = sum((-1.0 if sign == "−" else 1.0) * float(v) for sign, _, v in found)
    assert added == pytest.approx(float(total), abs=1e-3)


def test_output_file(capsys, tmp_path):
    target = tmp_path / "m.json"
    code, out, _ = _run(
        capsys, "metrics", str(BINARY), "--resamples", "0", "--json", "-o", str(target)
    )
    assert code == 0 and out == ""
    assert json.loads(target.read_text())["input"]["digest"] == load_predictions(BINARY).digest
    missing = tmp_path / "no" / "such" / "dir" / "m.json"
    line = _one_line_error(*_run(capsys, "lint", str(BINARY), "-o", str(missing)))
    assert line.endswith(
        f"Cannot write {missing}: the folder {missing.parent} does not exist; create it first."
    )


@pytest.mark.data
def test_metrics_on_cifar(capsys):
    if not (CIFAR / "densenet121.csv").is_file():
        pytest.skip(f"CIFAR-10 predictions not found at {CIFAR}")
    args = ("metrics", str(CIFAR / "densenet121.csv"), "--labels", str(CIFAR / "labels.csv"))
    record = _json(capsys, *args, "--resamples", "0")
    pred = load_predictions(CIFAR / "densenet121.csv", labels=CIFAR / "labels.csv")
    conf = pred.probs.max(axis=1)
    correct = (pred.probs.argmax(axis=1) == pred.labels).astype(float)
    (result,) = record["results"]
    assert record["config"]["lens"] == "top-label"
    assert result["headline"]["value"] == pytest.approx(
        _ece_equal_width(conf, correct, 15), abs=1e-12
    )
    assert any(f["code"] == "one-indexed-labels" for f in record["lint"])
    # Widmann et al. (2019) errors.csv: SKCE_ul of densenet121 = -0.0003430021466092365
    kernel = _json(
        capsys, *args, "--lens", "canonical", "--estimator", "skce-ul", "--resamples", "0"
    )
    value = kernel["results"][0]["headline"]["value"]
    assert value == pytest.approx(-0.0003430021466092365, rel=1e-9)


# ----------------------------------------------------------------------------- lint


def test_lint_command(capsys):
    code, out, _ = _run(capsys, "lint", str(DIGITS))
    assert code == 0
    assert "multiclass_digits.csv: 7,188 rows, 10 classes; 4 models of 1,797 rows each" in out
    assert "model 'naive-bayes' (n = 1,797):" in out and "heavy-ties" in out
    record = _json(capsys, "lint", str(DIGITS))
    models = {m["model"]: {f["code"] for f in m["lint"]} for m in record["models"]}
    assert (
        "heavy-ties" in models["naive-bayes"] and "heavy-ties" not in models["logistic-regression"]
    )


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "File not found"),
        (b"", "is empty"),
        (b"\x00\x81\xfe garbage \x00\x00\x07", "neither UTF-8 text (CSV) nor Parquet"),
        (b"p,label\n0.2,0\nnan,1\n0.5,1\n", "load with --drop-missing"),  # its flag
        (b"p,label\n0.2,0\n1.5,1\n0.5,1\n", "outside [0, 1]"),
        (b"a,b,label\n0.2,0.3,0\n0.5,0.5,1\n", "do not sum to 1"),
        (b"p,label\n0.2,0\n0.4,7\n", "Binary labels must be 0/1"),
        (b"p,label\n0.2,0\n0.4,7\n0.3,1\n", "labels take 3 values"),
        (b"p,q\n0.2,0.8\n0.4,0.6\n", "Use --label-column (or --labels"),
    ],
)
def test_bad_files_give_one_line_and_exit_2(capsys, tmp_path, content, expected):
    path = tmp_path / "bad.csv"
    if content is not None:
        path.write_bytes(content)
    line = _one_line_error(*_run(capsys, "metrics", str(path)))
    assert expected in line


def test_bad_parquet_and_folder(capsys, tmp_path):
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"PAR1 nope")
    assert "Parquet" in _one_line_error(*_run(capsys, "metrics", str(path)))
    # a folder is a dataset of parts, read as the stream reads it: the bad part is named
    line = _one_line_error(*_run(capsys, "lint", str(tmp_path)))
    assert "bad.parquet is not a readable Parquet file" in line


def test_mismatched_labels_file(capsys, tmp_path):
    matrix, labels = tmp_path / "m.csv", tmp_path / "y.csv"
    matrix.write_text("0.2,0.8\n0.6,0.4\n0.5,0.5\n")
    labels.write_text("1\n2\n")
    line = _one_line_error(*_run(capsys, "metrics", str(matrix), "--labels", str(labels)))
    assert "3 rows but the labels file y.csv has 2" in line


def test_bad_options_give_one_line_and_exit_2(capsys):
    line = _one_line_error(*_run(capsys, "metrics", str(BINARY), "--bins", "0"))
    assert "--bins" in line and "from 1 to 10,000" in line
    assert "invalid choice" in _one_line_error(*_run(capsys, "metrics", str(BINARY), "--lens", "x"))
    line = _one_line_error(*_run(capsys, "metrics", str(BINARY), "--model", "svm"))
    assert "No model 'svm'" in line and "'adaboost'" in line
    line = _one_line_error(*_run(capsys, "metrics", str(DIGITS), "--lens", "binary"))
    assert "binary lens needs two classes" in line
    line = _one_line_error(*_run(capsys, "metrics", str(BINARY), "--label-column", "nope"))
    assert "No column named 'nope'" in line
    code, out, err = _run(capsys)
    assert code == 2 and "metrics" in err


def test_help_and_version_exit_0(capsys):
    code, out, _ = _run(capsys, "metrics", "--help")
    assert code == 0 and "--resamples" in out and "equal-mass" in out
    code, out, _ = _run(capsys, "--version")
    assert code == 0 and out.startswith("calibscope ")


# ----------------------------------------------------------------------------- processes


def test_module_entry_point_subprocess(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("p,label\n0.2,0\nnan,1\n")
    run = subprocess.run(
        [sys.executable, "-m", "core.cli", "metrics", str(bad)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("calibscope: error: ")


def test_installed_console_script():
    script = shutil.which("calibscope", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the calibscope console script is not installed (pip install -e .)")
    run = subprocess.run(
        [script, "metrics", str(BINARY), "--json", "--resamples", "0", "--model", "naive-bayes"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["results"][0]["model"] == "naive-bayes"


def test_the_command_line_turns_off_numpys_huge_page_advice():
    """``small_pages`` flips numpy's switch (restored here for the other tests)."""
    from numpy._core import multiarray

    from core.base.allocator import small_pages

    before = multiarray._set_madvise_hugepage(True)
    try:
        assert small_pages() is True
        assert multiarray._set_madvise_hugepage(True) is False  # it was off
    finally:
        multiarray._set_madvise_hugepage(before)


@pytest.mark.parametrize("command", ["metrics", "lint", "compare"])
def test_first_line_says_the_rows_of_each_model_on_both_engines(capsys, command):
    # stacked models' rows add up: the line gives each model's rows too, the same on both engines
    extra = ["--resamples", "0"] if command != "lint" else []
    lines = []
    for engine in ("memory", "stream"):
        code, out, err = _run(capsys, command, str(BINARY), "--engine", engine, *extra)
        assert code == 0, err
        lines.append(out.splitlines()[0])
    assert lines[0] == lines[1]
    assert lines[0].endswith("2,276 rows, one P(y=1) column; 4 models of 569 rows each")
