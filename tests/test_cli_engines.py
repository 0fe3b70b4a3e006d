"""``--engine stream`` and ``--engine dask``: the same JSON as ``--engine memory``, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_checks import one_line_error

from core.cli import main

ROOT = Path(__file__).resolve().parents[1]
BINARY = ROOT / "sample_data" / "binary_breast_cancer.csv"
DIGITS = ROOT / "sample_data" / "multiclass_digits.csv"


def _json(capsys, *argv: str) -> dict:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _comparable(record: dict) -> dict:
    """Everything but the intervals (memory bootstraps rows, a stream cells) and versions."""
    out = {k: v for k, v in record.items() if k not in ("versions", "calibscope")}
    out["input"] = {k: v for k, v in record["input"].items() if k not in ("file",)}
    for result in out["results"]:
        result["headline"] = {
            k: v for k, v in result["headline"].items() if k not in ("low", "high")
        }
        result["metrics"] = [
            {k: v for k, v in row.items() if k not in ("low", "high", "note")}
            for row in result["metrics"]
        ]
    return out


@pytest.mark.parametrize("sample", [BINARY, DIGITS])
def test_metrics_stream_json_equals_memory(capsys, sample):
    memory = _json(capsys, "metrics", str(sample), "--resamples", "0")
    stream = _json(capsys, "metrics", str(sample), "--resamples", "0", "--engine", "stream")
    a, b = _comparable(memory), _comparable(stream)
    assert a.keys() == b.keys() and a["input"] == b["input"] and a["lint"] == b["lint"]
    for x, y in zip(a["results"], b["results"], strict=True):
        assert x["digest"] == y["digest"] and x["n"] == y["n"]
        assert x["headline"]["value"] == pytest.approx(y["headline"]["value"], rel=1e-12)
        for r, s in zip(x["metrics"], y["metrics"], strict=True):
            assert r["metric"] == s["metric"]
            if r["value"] is None:
                assert s["value"] is None
            else:
                assert s["value"] == pytest.approx(r["value"], rel=1e-12, abs=1e-15)
        for bins_x, bins_y in zip(x["bins"], y["bins"], strict=True):
            for row_x, row_y in zip(bins_x["rows"], bins_y["rows"], strict=True):
                assert row_x["count"] == row_y["count"]
                if row_x["mean_score"] is None:  # an empty bin
                    assert row_y["mean_score"] is None
                else:
                    assert row_y["mean_score"] == pytest.approx(row_x["mean_score"], rel=1e-12)


def test_lint_stream_equals_memory(capsys):
    memory = _json(capsys, "lint", str(DIGITS))
    stream = _json(capsys, "lint", str(DIGITS), "--engine", "stream", "--batch-rows", "333")
    assert (
        stream["lint"] == memory["lint"] and stream["input"]["digest"] == memory["input"]["digest"]
    )


def test_report_stream_json(tmp_path, capsys):
    target = tmp_path / "report.json"
    code = main(["report", str(BINARY), "--engine", "stream", "-o", str(target)])
    assert code == 0, capsys.readouterr().err
    record = json.loads(target.read_text())
    assert record["command"] == "report" and record["results"][0]["test"]["pvalue"] is not None


def test_engine_errors_are_one_line(tmp_path, capsys):
    assert "--labels" in one_line_error(
        capsys, "metrics", str(BINARY), "--engine", "stream", "--labels", str(BINARY)
    )
    assert "--test" in one_line_error(
        capsys, "compare", str(DIGITS), "--engine", "stream", "--test", "hosmer-lemeshow"
    )
    assert "No files match" in one_line_error(
        capsys, "metrics", str(tmp_path / "*.parquet"), "--engine", "stream"
    )
    assert "canonical" in one_line_error(
        capsys, "metrics", str(BINARY), "--engine", "stream", "--lens", "canonical"
    )


def test_output_is_never_half_written(tmp_path, monkeypatch):
    target = tmp_path / "out.json"
    target.write_text("previous")
    import core.cli as cli

    def interrupted(src, dst):  # the run is stopped as the file is put in place
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.os, "replace", interrupted)
    code = main(["metrics", str(BINARY), "--resamples", "0", "--json", "-o", str(target)])
    assert code == cli.EXIT_INTERRUPTED
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left


def test_stream_reads_a_folder_of_parts(tmp_path, capsys):
    frame = pd.read_csv(BINARY)
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), 3)):
        frame.iloc[rows].to_parquet(folder / f"part-{i}.parquet", index=False)
    whole = _json(capsys, "metrics", str(BINARY), "--resamples", "0", "--engine", "stream")
    parts = _json(capsys, "metrics", str(folder), "--resamples", "0", "--engine", "stream")
    assert parts["input"]["digest"] == whole["input"]["digest"]
    assert parts["results"][0]["headline"]["value"] == whole["results"][0]["headline"]["value"]


@pytest.mark.slow
def test_metrics_dask_on_a_scheduler_and_on_a_local_cluster(tmp_path, capsys):
    distributed = pytest.importorskip("dask.distributed", reason="the dask extra is not installed")
    frame = pd.read_csv(BINARY)
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), 2)):
        frame.iloc[rows].to_parquet(folder / f"part-{i}.parquet", index=False)
    pattern = str(folder / "*.parquet")
    stream = _json(capsys, "metrics", pattern, "--engine", "stream", "--resamples", "100")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        on_scheduler = _json(
            capsys, "metrics", pattern, "--engine", "dask", "--scheduler", cluster.scheduler_address,
            "--resamples", "100",
        )  # fmt: skip
    local = _json(capsys, "metrics", pattern, "--engine", "dask", "--resamples", "100")
    for record in (on_scheduler, local):
        assert record["input"]["digest"] == stream["input"]["digest"]
        assert record["results"][0]["metrics"] == stream["results"][0]["metrics"]
