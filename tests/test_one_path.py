"""One number, one path: every surface shows the same numbers for the same data and options.

The Reliability page, ``calibscope metrics --json``, the report's JSON and the Compare page's
table all run :func:`core.analyses.analysis.analyze` (the Compare page the model comparison, on the
same equal-width bins and the same resamples), so every metric — value and interval — must
agree exactly, on the binary and the multiclass sample and on two lenses each.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from core.analyses.analysis import AnalysisConfig, analyze  # noqa: E402
from core.analyses.model_comparison import parse_metric  # noqa: E402
from core.cli import main  # noqa: E402
from core.data import load_predictions  # noqa: E402
from core.report import build_report  # noqa: E402
from core.stats.binning import BINNINGS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
CASES = [
    ("breast-cancer (binary)", "binary_breast_cancer.csv", "top-label"),
    ("breast-cancer (binary)", "binary_breast_cancer.csv", "binary"),
    ("digits (10 classes)", "multiclass_digits.csv", "top-label"),
    ("digits (10 classes)", "multiclass_digits.csv", "classwise"),
]
RESAMPLES = 40
SEED = 3
COLUMNS = ["metric", "value", "low", "high"]


def _frame(records: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(records)[COLUMNS].set_index("metric").astype(float)


def _same(a: pd.DataFrame, b: pd.DataFrame, where: str) -> None:
    assert a.index.tolist() == b.index.tolist(), where
    np.testing.assert_array_equal(a.to_numpy(), b.to_numpy(), err_msg=where)


@pytest.mark.parametrize(("sample", "file", "lens"), CASES)
def test_every_surface_shows_the_same_numbers(sample, file, lens, tmp_path):
    path = ROOT / "sample_data" / file
    pred = load_predictions(path)
    config = AnalysisConfig(lens=lens, n_resamples=RESAMPLES, seed=SEED)
    models = pred.by_model()

    # the API
    api = {
        m: _frame(analyze(part, config).metrics.to_dict("records")) for m, part in models.items()
    }

    # calibscope metrics --json
    out = tmp_path / "metrics.json"
    args = ["metrics", str(path), "--lens", lens, "--resamples", str(RESAMPLES)]
    assert main([*args, "--seed", str(SEED), "--json", "-o", str(out)]) == 0
    cli = {r["model"]: _frame(r["metrics"]) for r in json.loads(out.read_text())["results"]}

    # the report's JSON
    record = build_report(pred, config=config, test=None, compare=False).to_record()
    report = {r["model"]: _frame(r["metrics"]) for r in record["results"]}

    for m in models:
        _same(cli[m], api[m], f"CLI vs API, {m}")
        _same(report[m], api[m], f"report vs API, {m}")
    # the Brier decomposition, too
    cli_terms = {
        r["model"]: r["brier_decomposition"] for r in json.loads(out.read_text())["results"]
    }
    brier = {m: analyze(part, config).brier_decomposition for m, part in models.items()}
    for r in record["results"]:
        assert r["brier_decomposition"] == cli_terms[r["model"]] == brier[r["model"]].to_record()

    # the Reliability page, one model at a time
    for m in models:
        at = AppTest.from_file(APP, default_timeout=180)
        query = {"sample": sample, "lens": lens, "n_resamples": str(RESAMPLES), "seed": str(SEED)}
        for k, v in {**query, "model": m}.items():
            at.query_params[k] = v
        at.run()
        at.switch_page("app_pages/reliability.py").run()
        assert not at.exception, at.exception
        (shown,) = [d.value for d in at.dataframe if "metric" in d.value.columns]
        _same(_frame(shown.to_dict("records")), api[m], f"Reliability page vs API, {m}")
        (terms,) = [d.value for d in at.dataframe if "term" in d.value.columns]
        pd.testing.assert_frame_equal(terms, brier[m].to_frame())

    # the Compare page's table: the metrics of the config's norm, on identical bins
    keys = ["plugin@1", "label-binned@1", "sweep@1", "brier", "log-loss"]
    assert not BINNINGS.get(config.binning).data_dependent  # shared bins = each model's own
    at = AppTest.from_file(APP, default_timeout=300)
    query = {
        "sample": sample,
        "lens": lens,
        "seed": str(SEED),
        "compare_metrics": keys,
        "compare_resamples": str(RESAMPLES),
        "compare_test": "",
    }
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    labels = {key: parse_metric(key).label for key in keys}
    for m in models:
        for key in keys:
            name = key.split("@")[0]
            v, lo, hi = api[m].loc[name]
            label = labels[key]
            shown = table.loc[m, [label, f"{label} low", f"{label} high"]].to_numpy(dtype=float)
            assert np.allclose(shown, [v, lo, hi], rtol=1e-12, atol=0), (
                m,
                key,
                shown - [v, lo, hi],
            )
