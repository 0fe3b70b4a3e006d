"""CORP everywhere it is offered: report, CLI, Reliability page, Compare, bias runner, stream."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core import AnalysisConfig
from core.cli import main
from core.data import load_predictions
from core.report import build_report
from core.stats.corp import corp_decomposition

ROOT = Path(__file__).resolve().parents[1]
BINARY = ROOT / "sample_data" / "binary_breast_cancer.csv"


def test_report_draws_the_corp_diagram_and_records_it() -> None:
    pred = load_predictions(BINARY)
    config = AnalysisConfig(lens="binary", n_resamples=50)
    report = build_report(pred, config=config, diagrams=("corp",), test=None, compare=False)
    record = report.to_record()
    got = record["results"][0]["diagrams"]["corp"]
    first = pred.by_model()[pred.models[0]] if pred.models else pred
    want = corp_decomposition(first)
    assert got["decomposition"]["mcb"] == pytest.approx(want.mcb, abs=1e-14)
    assert "CORP (isotonic) reliability diagram" in report.to_html()
    metrics = {row["metric"]: row for row in record["results"][0]["metrics"]}
    assert metrics["mcb"]["value"] == pytest.approx(want.mcb, abs=1e-14)


def test_cli_report_diagram_corp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "report.json"
    code = main(
        ["report", str(BINARY), "--diagram", "corp", "--test", "none", "--resamples", "20",
         "-o", str(target)]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    record = json.loads(target.read_text())
    corp = record["results"][0]["diagrams"]["corp"]
    assert corp["decomposition"]["score"] == pytest.approx(
        corp["decomposition"]["mcb"] - corp["decomposition"]["dsc"] + corp["decomposition"]["unc"]
    )


def test_compare_offers_mcb_and_uses_each_models_own_bins() -> None:
    from core.analyses.model_comparison import compare_models, metric_choices

    assert "mcb" in metric_choices("binary")
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, size=400)
    a = np.clip(0.5 + (y - 0.5) * 0.4 + rng.normal(0, 0.15, 400), 0, 1)
    b = np.clip(a**1.5, 0, 1)
    parts = {"a": (a, y), "b": (b, y)}
    config = AnalysisConfig(lens="binary", n_resamples=30)
    cmp = compare_models(parts, config=config, metrics=("mcb", "brier"))
    table = cmp.table.set_index(["model", "metric"])
    for name, p in parts.items():
        assert table.loc[(name, "mcb"), "value"] == pytest.approx(
            corp_decomposition(p[0], y).mcb, abs=1e-14
        )
    assert any("discrete bins" in note for note in cmp.notes)


def test_bias_runner_batches_mcb_like_one_call_per_dataset() -> None:
    from core.bias import bias_vs_n, estimator_choices
    from core.bias.specs import EstimatorSpec
    from core.worlds import PRESET_WORLDS

    assert "mcb" in estimator_choices() and "mcb" not in estimator_choices(binned_only=True)
    spec = EstimatorSpec.parse("mcb:equal-width")
    assert spec.binning == "discrete" and not spec.binned
    world = next(iter(PRESET_WORLDS.values()))
    frame = bias_vs_n(["mcb"], world, ns=(300,), n_resamples=8, norm=2, seed=3)
    assert np.isnan(frame.reference.iloc[0])
    assert 0 < frame["mean"].iloc[0] < 0.1


def test_estimators_page_row_plan_lists_mcb_once_with_discrete_bins() -> None:
    from core.analyses.estimator_comparison import CURVE_ESTIMATORS, compare_estimators

    assert "mcb" not in CURVE_ESTIMATORS
    rng = np.random.default_rng(2)
    p = rng.uniform(size=500)
    y = (rng.uniform(size=500) < p).astype(int)
    cmp = compare_estimators((p, y), AnalysisConfig(lens="binary", n_resamples=20))
    row = cmp.table.set_index("estimator").loc["mcb"]
    assert row.binning == "discrete"
    assert row.value == pytest.approx(corp_decomposition(p, y).mcb, abs=1e-14)


def test_stream_metrics_match_memory(tmp_path: Path) -> None:
    from core import analyze, analyze_stream

    rng = np.random.default_rng(4)
    p = np.round(rng.uniform(size=1000), 3)
    y = (rng.uniform(size=1000) < p).astype(int)
    path = tmp_path / "preds.csv"
    pd.DataFrame({"p": p, "label": y}).to_csv(path, index=False)
    for binning in ("discrete", "equal-width"):
        config = AnalysisConfig(lens="binary", n_resamples=0, binning=binning)
        stream = analyze_stream(path, config).results[0][2]
        memory = analyze(load_predictions(path), config)
        got = stream.metrics.set_index("metric").value["mcb"]
        assert got == pytest.approx(memory.metrics.set_index("metric").value["mcb"], abs=1e-12)


def test_reliability_page_corp_choice() -> None:
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "dashboard" / "app.py"), default_timeout=60)
    at.query_params["diagram"] = "corp"
    at.query_params["n_resamples"] = "0"
    at.run()
    frame = pd.read_csv(BINARY)
    at.file_uploader(key="upload").set_value(
        ("preds.csv", frame.to_csv(index=False).encode(), "text/csv")
    )
    at.run()
    at.switch_page("app_pages/reliability.py").run()
    assert not at.exception, at.exception
    at.button_group(key="diagram").set_value("corp").run()
    assert not at.exception, at.exception
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    names = [t.get("name") for spec in specs for t in spec["data"]]
    assert "CORP (isotonic fit)" in names
    assert any("MCB" in c.value for c in at.caption)
    tables = [d.value for d in at.dataframe]
    assert any(list(t.columns)[:3] == ["component", "weight", "score"] for t in tables)
