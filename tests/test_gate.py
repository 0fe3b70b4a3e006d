"""`calibscope check` and core.analyses.gate: the CI gate reads the analysis's own numbers."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core import AnalysisConfig, ConfigError, analyze, load_predictions
from core.analyses.gate import check_calibration
from core.cli import main

ROOT = Path(__file__).resolve().parents[1]
BREAST = ROOT / "sample_data" / "binary_breast_cancer.csv"
CONFIG = AnalysisConfig(lens="binary", n_resamples=200, seed=3)


@pytest.fixture(scope="module")
def breast():
    return load_predictions(BREAST)


def test_every_scope_carries_the_analysis_numbers(breast):
    result = check_calibration(breast, max_error=0.05, config=CONFIG)
    models = breast.by_model()
    assert len(result.rows) == len(models) * 3  # each model, then its groups 'large', 'small'
    for row in result.rows:
        part = models[row.model]
        if row.group is not None:
            part = part.subset(part.group.astype(str) == row.group)
        expected = analyze(part, CONFIG)
        ci = expected.headline_interval.confidence_interval
        assert (row.n, row.value, row.low, row.high) == (
            part.n,
            expected.headline.value,
            ci.low,
            ci.high,
        )
        assert row.status == ("pass" if ci.high <= 0.05 else "fail")
    assert result.passed is all(r.status == "pass" for r in result.rows)


def _calibrated(n: int = 4000, seed: int = 0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n)
    return p, (rng.uniform(size=n) < p).astype(int)


def test_the_threshold_is_compared_with_the_upper_bound():
    data = _calibrated()
    high = check_calibration(data, max_error=1.0, config=CONFIG).rows[0].high
    assert check_calibration(data, max_error=high, config=CONFIG).passed
    below = check_calibration(data, max_error=np.nextafter(high, 0), config=CONFIG)
    assert not below.passed and below.rows[0].status == "fail"
    assert below.summary.startswith("FAIL: 1 of 1 scope(s); all rows:")


def test_a_rejecting_test_fails_the_gate():
    p, y = _calibrated()
    bent = np.clip(p + 0.15, 0, 1)  # shifted by 0.15: the test rejects
    result = check_calibration(
        (bent, y), max_error=1.0, config=CONFIG, test="skce-ul-asymptotic", alpha=0.05
    )
    assert not result.passed and result.rows[0].pvalue < 0.01
    assert "rejects calibration" in result.rows[0].reason
    ok = check_calibration((p, y), max_error=1.0, config=CONFIG, test="skce-ul-asymptotic")
    assert ok.rows[0].pvalue >= 0.05 and ok.passed


def test_small_groups_are_skipped_and_listed(tmp_path):
    p, y = _calibrated(400)
    group = np.where(np.arange(400) < 390, "big", "tiny")
    path = tmp_path / "g.csv"
    pd.DataFrame({"p": p, "label": y, "group": group}).to_csv(path, index=False)
    result = check_calibration(load_predictions(path), max_error=1.0, config=CONFIG)
    status = {r.group: r.status for r in result.rows}
    assert status == {None: "pass", "big": "pass", "tiny": "skipped"}
    assert result.passed and "1 small group(s) skipped" in result.summary


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_error": -0.1}, "threshold"),
        ({"max_error": float("nan")}, "threshold"),
        ({"max_error": 0.1, "alpha": 1.5}, "alpha"),
        ({"max_error": 0.1, "test": "nope"}, "Unknown calibration test"),
        ({"max_error": 0.1, "config": AnalysisConfig(n_resamples=0)}, "bootstrap"),
    ],
)
def test_bad_options_are_refused(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        check_calibration(_calibrated(200), **kwargs)


def test_cli_exit_codes_json_and_junit(tmp_path, capsys):
    args = [str(BREAST), "--model", "logistic-regression", "--resamples", "200", "--seed", "3"]
    assert main(["check", *args, "--max-ece", "0.5"]) == 0
    assert capsys.readouterr().out.startswith("PASS: plugin 95% upper bound ≤ 0.5")
    junit = tmp_path / "gate.xml"
    assert main(["check", *args, "--max-ece", "0.01", "--json", "--junit", str(junit)]) == 1
    record = json.loads(capsys.readouterr().out)
    assert record["passed"] is False and record["command"] == "check"
    suite = ET.parse(junit).getroot()
    failed = [s for s in record["scopes"] if s["status"] == "fail"]
    assert int(suite.get("tests")) == len(record["scopes"]) == 3
    assert int(suite.get("failures")) == len(failed) == len(suite.findall("testcase/failure"))
    assert main(["check", *args, "--max-ece", "-1"]) == 2
    assert main(["check", str(tmp_path / "missing.csv"), "--max-ece", "0.1"]) == 2
    assert main(["check", *args, "--max-ece", "0.1", "--junit", str(BREAST)]) == 2
    assert "would overwrite the input" in capsys.readouterr().err


def test_junit_escapes_user_names(tmp_path):
    p, y = _calibrated(200)
    path = tmp_path / "g.csv"
    name = '<script>alert("x")</script> & co'
    pd.DataFrame({"p": p, "label": y, "group": name}).to_csv(path, index=False)
    result = check_calibration(load_predictions(path), max_error=1.0, config=CONFIG)
    root = ET.fromstring(result.to_junit().split("\n", 1)[1])
    assert any(name in case.get("name") for case in root.iter("testcase"))


def test_a_scope_that_cannot_be_judged_has_its_own_exit_code(tmp_path, capsys):
    # Spiegelhalter's Z is undefined on scores of exactly 0 or 1: neither a pass nor a fail
    rng = np.random.default_rng(0)
    p = rng.integers(0, 2, 300).astype(float)
    path = tmp_path / "hard.csv"
    pd.DataFrame({"p": p, "label": p.astype(int)}).to_csv(path, index=False)
    args = ["check", str(path), "--max-ece", "0.5", "--resamples", "100"]
    assert main([*args, "--test", "spiegelhalter"]) == 3
    out = capsys.readouterr().out
    assert out.startswith("CANNOT JUDGE: 1 of 1 scope(s) could not be judged; all rows: ")
    assert "gated: all rows" in out
    assert main([*args, "--test", "spiegelhalter", "--json"]) == 3
    record = json.loads(capsys.readouterr().out)
    assert record["verdict"] == "cannot judge" and record["passed"] is False
    assert main(args) == 0  # without the test every scope is judged
    # a failing scope beside an unjudged one: the gate fails
    q = rng.uniform(size=300)
    frame = pd.DataFrame(
        {
            "p": np.concatenate([p, q]),
            "label": np.concatenate([p.astype(int), (q > 0.9).astype(int)]),
            "model": ["hard"] * 300 + ["bad"] * 300,
        }
    )
    result = check_calibration(
        load_predictions(frame), max_error=0.05, config=CONFIG, test="spiegelhalter"
    )
    assert sorted(r.status for r in result.rows) == ["error", "fail"]
    assert result.verdict == "fail" and result.summary.startswith("FAIL: 2 of 2")


def test_the_output_says_which_scopes_are_gated(breast, capsys):
    result = check_calibration(breast, max_error=0.5, config=CONFIG)
    assert result.scopes == (
        f"each of the {len(breast.models)} models and each of the 2 values of the group column "
        "within each model"
    )
    assert "group column" in main.__globals__["COMMANDS"]["check"][0]
