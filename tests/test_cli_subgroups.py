"""calibscope metrics --by / --window and the report's Subgroups section: the API's numbers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core.analyses.analysis import AnalysisConfig
from core.analyses.subgroups import subgroup_analysis, window_analysis
from core.base.records import dumps
from core.cli import main
from core.data import load_predictions
from core.report import build_report


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    rng = np.random.default_rng(6)
    n = 1500
    p = rng.uniform(size=n)
    sex = rng.choice(["F", "M"], size=n)
    age = rng.choice(["young", "old"], size=n)
    y = (rng.uniform(size=n) < np.where(sex == "M", p**2, p)).astype(int)
    when = pd.Timestamp("2024-02-05") + pd.to_timedelta(np.arange(n) // 300, unit="D")
    path = tmp_path_factory.mktemp("sub") / "preds.csv"
    pd.DataFrame({"p": p.round(6), "label": y, "sex": sex, "age": age, "when": when}).to_csv(
        path, index=False
    )
    return path


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


CONFIG = AnalysisConfig(lens="binary", n_resamples=200)


def test_metrics_by_json_equals_the_api(capsys, csv_file):
    code, out, err = _run(
        capsys, "metrics", csv_file, "--lens", "binary", "--resamples", 200,
        "--by", "sex", "--by", "age", "--min-group-rows", 50, "--json",
    )  # fmt: skip
    assert code == 0, err
    record = json.loads(out)
    got = record["results"][0]["subgroups"]
    pred = load_predictions(csv_file, keep_columns=["sex", "age"])
    want = json.loads(
        dumps(subgroup_analysis(pred, CONFIG, by=("sex", "age"), min_rows=50).to_record())
    )
    assert got == want
    assert got["groups"][0]["group"] == "sex=F & age=old"
    assert got["test"]["df"] > 0


def test_metrics_by_text_prints_the_table(capsys, csv_file):
    code, out, err = _run(
        capsys, "metrics", csv_file, "--lens", "binary", "--resamples", 100, "--by", "sex"
    )
    assert code == 0, err
    assert "all rows: subgroups by sex" in out
    assert "Worst group: 'M'" in out
    assert "Equal calibration across 2 groups" in out
    assert "significant" in out
    # a kept column is not an ignored one
    assert "'sex'" not in out.split("data checks:")[-1]


def test_metrics_window_json_and_text(capsys, csv_file):
    argv = ("metrics", csv_file, "--lens", "binary", "--resamples", 100, "--window", "day",
            "--time", "when", "--threshold", "0.05")  # fmt: skip
    code, out, err = _run(capsys, *argv, "--json")
    assert code == 0, err
    got = json.loads(out)["results"][0]["windows"]
    pred = load_predictions(csv_file, keep_columns=["when"])
    want = window_analysis(
        pred, AnalysisConfig(lens="binary", n_resamples=100), time="when", every="day",
        threshold=0.05,
    )  # fmt: skip
    assert got == json.loads(dumps(want.to_record()))
    assert [g["group"] for g in got["groups"]] == [f"2024-02-0{d}" for d in range(5, 10)]
    code, out, err = _run(capsys, *argv)
    assert code == 0, err
    assert "windows:" in out and "First window over 0.05" in out
    code, out, err = _run(capsys, "metrics", csv_file, "--window", "500", "--json")
    assert code == 0, err
    assert json.loads(out)["results"][0]["windows"]["groups"][-1]["group"] == "rows 1001–1500"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--by", "nope"), "No column named 'nope'"),
        (("--by", "sex", "--engine", "stream"), "in memory"),
        (("--threshold", "0.1"), "--threshold applies to --window"),
        (("--window", "month"), "give day, week or a number of rows"),
        (("--window", "day"), "need a time column"),
        (("--by", "sex", "--estimator", "sweep"), "identical bins"),
    ],
)
def test_metrics_by_errors_are_one_line(capsys, csv_file, argv, message):
    code, out, err = _run(capsys, "metrics", csv_file, "--resamples", 0, *argv)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_report_has_a_subgroups_section_with_the_same_numbers(capsys, csv_file, tmp_path):
    code, out, err = _run(
        capsys, "report", csv_file, "--lens", "binary", "--resamples", 200, "--test", "none",
        "--by", "sex", "--json",
    )  # fmt: skip
    assert code == 0, err
    got = json.loads(out)["results"][0]["subgroups"]
    code, out, err = _run(
        capsys, "metrics", csv_file, "--lens", "binary", "--resamples", 200, "--by", "sex", "--json"
    )
    assert got == json.loads(out)["results"][0]["subgroups"]
    html_path = tmp_path / "r.html"
    code, _, err = _run(
        capsys, "report", csv_file, "--lens", "binary", "--resamples", 50, "--test", "none",
        "--by", "sex", "-o", html_path,
    )  # fmt: skip
    assert code == 0, err
    text = html_path.read_text()
    assert "Subgroups by sex" in text and "Worst group" in text and "χ²" in text


def test_report_groups_by_the_group_column_by_default():
    rng = np.random.default_rng(2)
    n = 600
    p = rng.uniform(size=n)
    df = pd.DataFrame(
        {"p": p, "y": (rng.uniform(size=n) < p).astype(int), "group": rng.choice(["x", "y"], n)}
    )
    pred = load_predictions(df)
    config = AnalysisConfig(lens="binary", n_resamples=50)
    report = build_report(pred, config=config, test=None)
    assert report.models[0].subgroups.groups == ("x", "y")
    assert report.models[0].subgroups.to_record() == subgroup_analysis(pred, config).to_record()
    captions = [c for c, _ in report.figures()]
    assert "Reliability per subgroup — all rows" in captions
    assert build_report(pred, config=config, test=None, by=()).models[0].subgroups is None
    # an estimator without fixed bins: the section says why instead
    sweep = build_report(
        pred, config=AnalysisConfig(lens="binary", n_resamples=0, estimator="sweep"), test=None
    )
    assert sweep.models[0].subgroups is None
    assert "identical bins" in sweep.models[0].subgroups_error
    assert "not analysed" in sweep.to_html()
