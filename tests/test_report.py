"""The report: a self-contained HTML document and JSON of every number (core.report, CLI)."""

from __future__ import annotations

import base64
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.analyses.analysis import AnalysisConfig, analyze
from core.analyses.calibration_tests import calibration_test
from core.base.errors import ConfigError
from core.base.numbers import format_number
from core.cli import main
from core.data import load_predictions
from core.report import DEFAULT_TEST, build_report, versions

ROOT = Path(__file__).resolve().parents[1]
BREAST = ROOT / "sample_data" / "binary_breast_cancer.csv"
CONFIG = AnalysisConfig(lens="binary", n_bins=10, n_resamples=60, seed=7)


def _binary(n: int = 400, seed: int = 3):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**1.5).astype(int)
    return load_predictions(pd.DataFrame({"p": p, "label": y}), name="toy.csv")


def _three_class(n: int = 300, seed: int = 5):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(3), size=n)
    labels = (rng.uniform(size=n)[:, None] > probs.cumsum(1)).sum(1)
    frame = pd.DataFrame(probs, columns=["a", "b", "c"])
    frame["label"] = np.array(["a", "b", "c"])[labels]
    return load_predictions(frame, name="three.csv")


@pytest.fixture(scope="module")
def toy_report():
    return build_report(_binary(), config=CONFIG, title="Toy <report>")


@pytest.fixture(scope="module")
def toy_html(toy_report):
    return toy_report.to_html()


# ---------------------------------------------------------------- HTML


def test_html_is_one_document_with_plotly_inlined_once(toy_html):
    from plotly.offline import get_plotlyjs

    assert toy_html.startswith("<!doctype html>")
    assert toy_html.count("<html") == 1 and toy_html.rstrip().endswith("</html>")
    bundle = get_plotlyjs()
    assert toy_html.count(bundle[:400]) == 1
    assert toy_html.count(bundle) == 1
    # nothing loaded from the network: no external scripts, styles or images
    assert not re.search(r"<script[^>]+src=", toy_html, flags=re.I)
    assert not re.search(r"<link[^>]+href=\s*[\"']?https?:", toy_html, flags=re.I)
    assert not re.search(r"<img[^>]+src=\s*[\"']?https?:", toy_html, flags=re.I)


def test_html_escapes_the_title(toy_html):
    assert "<title>Toy &lt;report&gt;</title>" in toy_html
    assert "Toy <report>" not in toy_html


def _plotted(html_text: str) -> list[list[dict]]:
    """The trace lists passed to ``Plotly.newPlot`` in the document, decoded."""
    out = []
    decoder = json.JSONDecoder()
    for match in re.finditer(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*", html_text):
        data, _ = decoder.raw_decode(html_text, match.end())
        out.append(data)
    return out


def _array(values) -> np.ndarray:
    """Plotly ≥ 6 writes numeric arrays as base64 typed arrays."""
    if isinstance(values, dict) and "bdata" in values:
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
    return np.asarray(values, dtype=float)


def test_html_draws_every_figure_with_its_data(toy_report, toy_html):
    figures = toy_report.figures()
    assert [c for c, _ in figures] == ["Reliability diagram — all rows"]
    assert toy_html.count('class="plotly-graph-div"') == len(figures)
    (traces,) = _plotted(toy_html)
    # reliability_figure's trace order: diagonal, observed, counts
    bins = toy_report.models[0].analysis.components[0].bins
    filled = bins.counts > 0
    observed = _array(traces[1]["y"])
    assert observed.shape == (int(filled.sum()),)
    assert np.array_equal(observed, bins.mean_label[filled])
    assert np.array_equal(_array(traces[1]["x"]), bins.mean_score[filled])
    assert int(_array(traces[2]["y"]).sum()) == toy_report.predictions.n


def test_html_lists_every_parameter_seed_and_version(toy_report, toy_html):
    text = re.sub(r"<script.*?</script>", "", toy_html, flags=re.S)
    for name, value in CONFIG.to_dict().items():
        assert f"<th>{name}</th><td>{value if value is not None else '–'}</td>" in text, name
    assert "one seed <b>7</b>" in text
    pred = toy_report.predictions
    assert f"<td>{pred.digest}</td>" in text
    assert "<th>n</th><td>400</td>" in text and "<th>K (classes)</th><td>2</td>" in text
    found = versions()
    assert set(found) >= {"python", "numpy", "scipy", "pandas", "plotly", "calibscope"}
    for name, version in found.items():
        if version is not None:
            assert f"<th>{name}</th><td>{version}</td>" in text


def test_html_tables_carry_the_analysis_numbers(toy_report, toy_html):
    a = toy_report.models[0].analysis
    text = re.sub(r"<script.*?</script>", "", toy_html, flags=re.S)
    row = a.metrics.set_index("metric").loc["plugin"]
    # the app's words: the label, not the registry code; the value to 4 significant digits
    assert f'<tr><td>{row.label}</td><td class="num">{format_number(row.value)}</td>' in text
    assert f"<td>plugin</td><td>{row.label}</td>" not in text
    assert "<th>observed frequency</th>" in text and "<th>mean_label</th>" not in text
    counts = a.components[0].bins.counts
    cells = re.findall(r'<td>1</td><td class="num">\d+</td>(?:<td class="num">[^<]*</td>){2}'
                       r'<td class="num">([\d,]+)</td>', text)  # fmt: skip
    assert [int(c.replace(",", "")) for c in cells] == counts.tolist()


def test_lint_findings_are_listed():
    frame = pd.DataFrame(
        {"p": [0.2, 0.2, 0.2, 0.9, 0.9, 0.9] * 10, "label": [0, 1, 0, 1, 1, 0] * 10}
    )
    pred = load_predictions(frame, name="ties.csv")
    assert len(pred.lint.findings) > 0
    report = build_report(pred, config=AnalysisConfig(lens="binary", n_resamples=0), test=None)
    text = re.sub(r"<script.*?</script>", "", report.to_html(), flags=re.S)
    for finding in pred.lint.findings:
        assert f"<td>{finding.code}</td>" in text


# ---------------------------------------------------------------- JSON


def test_json_numbers_equal_analyze_exactly(toy_report):
    pred = toy_report.predictions
    record = json.loads(toy_report.to_json())
    assert record["command"] == "report"
    assert record["config"] == CONFIG.to_dict() and record["seed"] == 7
    expected = analyze(pred, CONFIG)
    (result,) = record["results"]
    got = pd.DataFrame(result["metrics"]).set_index("metric")
    want = expected.metrics.set_index("metric")
    assert list(got.index) == list(want.index)
    for metric, row in want.iterrows():
        for col in ("value", "low", "high"):
            value = row[col]
            if isinstance(value, float) and math.isnan(value):
                assert got.loc[metric, col] is None or math.isnan(got.loc[metric, col])
            else:
                assert got.loc[metric, col] == value, (metric, col)
    assert result["headline"]["value"] == expected.headline.value
    ci = expected.headline_interval.confidence_interval
    assert (result["headline"]["low"], result["headline"]["high"]) == (ci.low, ci.high)
    bins = result["bins"][0]["rows"]
    assert [b["count"] for b in bins] == expected.components[0].bins.counts.tolist()
    assert [b["low"] for b in bins if b["count"]] == [
        v
        for v, c in zip(expected.components[0].low, expected.components[0].bins.counts, strict=True)
        if c
    ]


def test_json_matches_the_metrics_command(tmp_path):
    args = [str(BREAST), "--model", "adaboost", "--lens", "binary", "--resamples", "40"]
    metrics_out, report_out = tmp_path / "m.json", tmp_path / "r.json"
    # the sample has a group column: the report's Subgroups section is metrics --by group
    assert main(["metrics", *args, "--by", "group", "--json", "-o", str(metrics_out)]) == 0
    assert main(["report", *args, "-o", str(report_out)]) == 0
    metrics, report = json.loads(metrics_out.read_text()), json.loads(report_out.read_text())
    assert report["results"] == [
        {**r, "test": report["results"][0]["test"]} for r in metrics["results"]
    ]
    assert (
        report["config"] == metrics["config"]
        # --model: the report describes the model's rows
        and report["input"]["digest"] == metrics["results"][0]["digest"]
    )


def test_json_test_result_equals_calibration_test(toy_report):
    pred = toy_report.predictions
    direct = calibration_test(pred.probs[:, 1], pred.labels, test=DEFAULT_TEST, seed=7)
    record = json.loads(toy_report.to_json())
    test = record["results"][0]["test"]
    assert test["test"] == DEFAULT_TEST
    assert test["statistic"] == direct.statistic and test["pvalue"] == direct.pvalue
    assert record["test"] == {"name": DEFAULT_TEST, "resamples": 1000}


def test_resampling_test_follows_the_config_and_seed():
    pred = _binary(n=200)
    config = AnalysisConfig(lens="binary", n_bins=8, n_resamples=0, seed=11)
    report = build_report(pred, config=config, test="consistency", test_options={"n_resamples": 99})
    direct = calibration_test(
        pred.probs[:, 1], pred.labels, test="consistency", seed=11, n_resamples=99,
        binning="equal-width", n_bins=8, norm=1.0, tie_policy="split",
    )  # fmt: skip
    got = report.models[0].test
    assert got.n_resamples == 99 and got.pvalue == direct.pvalue


def test_seed_argument_overrides_the_config():
    pred = _binary(n=200)
    a = build_report(pred, config=CONFIG, seed=1, test=None)
    b = build_report(pred, config=CONFIG, seed=2, test=None)
    assert a.config.seed == 1 and b.config.seed == 2
    la = a.models[0].analysis.headline_interval.confidence_interval.low
    lb = b.models[0].analysis.headline_interval.confidence_interval.low
    assert la != lb  # different resamples
    assert a.models[0].analysis.headline.value == b.models[0].analysis.headline.value


def test_json_round_trips_and_is_strict(toy_report):
    text = toy_report.to_json()
    record = json.loads(text)
    assert json.loads(json.dumps(record, allow_nan=False)) == record
    assert "NaN" not in text and "Infinity" not in text
    assert AnalysisConfig.from_dict(record["config"]) == CONFIG
    assert record["versions"] == versions()


def test_multiclass_top_label_and_classwise():
    pred = _three_class()
    top = build_report(pred, config=AnalysisConfig(n_resamples=0), test=None)
    assert top.models[0].analysis.config.lens == "top-label"
    assert len(top.figures()) == 1
    cw = build_report(pred, config=AnalysisConfig(lens="classwise", n_resamples=0), test=None)
    html = cw.to_html()
    assert "Reliability diagram — all rows" in html
    assert json.loads(cw.to_json())["results"][0]["bins"][2]["component"] == "c"


# ---------------------------------------------------------------- several models


@pytest.fixture(scope="module")
def breast():
    if not BREAST.exists():
        pytest.skip("the breast-cancer sample is not bundled")
    return load_predictions(BREAST)


def test_model_comparison_only_with_two_or_more_models(breast, toy_html):
    config = AnalysisConfig(lens="binary", n_resamples=30)
    report = build_report(breast, config=config, test=None)
    assert report.comparison is not None
    assert [m.model for m in report.models] == list(breast.models)
    html = report.to_html()
    assert "<h2>Model comparison</h2>" in html
    # the comparison's tables speak the app's words: metric labels, never registry keys
    tables = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    assert "<th>plugin@1</th>" not in tables and "<td>plugin@1</td>" not in tables
    assert "<th>Plug-in binned (ECE) · ℓ1</th>" in tables
    # a diagram per model, its two subgroup figures (the group column), the comparison's two
    assert html.count('class="plotly-graph-div"') == 3 * len(breast.models) + 2
    record = json.loads(report.to_json())
    assert record["comparison"]["models"] == list(breast.models)
    assert [r["model"] for r in record["results"]] == list(breast.models)
    # every model's numbers are analyze's on its own rows
    part = breast.by_model()[breast.models[1]]
    own = analyze(part, config)
    assert record["results"][1]["headline"]["value"] == own.headline.value
    # one model → no comparison
    assert "Model comparison" not in toy_html
    single = build_report(part, config=config, test=None)
    assert single.comparison is None and json.loads(single.to_json())["comparison"] is None


# ---------------------------------------------------------------- writing and errors


def test_write_chooses_the_format_by_suffix(toy_report, tmp_path):
    html_path = toy_report.write(tmp_path / "r.html")
    json_path = toy_report.write(tmp_path / "r.json")
    assert html_path.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert json.loads(json_path.read_text())["title"] == "Toy <report>"
    with pytest.raises(ConfigError, match=r"\.html"):
        toy_report.write(tmp_path / "r.txt")


def test_unknown_test_is_a_config_error():
    with pytest.raises(ConfigError):
        build_report(_binary(n=50), config=CONFIG, test="no-such-test")


def test_cli_writes_both_formats(tmp_path, capsys):
    pred = _binary(n=150)
    src = tmp_path / "preds.csv"
    pd.DataFrame({"p": pred.probs[:, 1], "label": pred.labels}).to_csv(src, index=False)
    html_path, json_path = tmp_path / "report.html", tmp_path / "report.json"
    common = ["--resamples", "20", "--seed", "3", "--bins", "5"]
    assert main(["report", str(src), "-o", str(html_path), "--title", "CLI run", *common]) == 0
    assert main(["report", str(src), "-o", str(json_path), *common]) == 0
    text = html_path.read_text(encoding="utf-8")
    assert "<title>CLI run</title>" in text and "<th>n_bins</th><td>5</td>" in text
    record = json.loads(json_path.read_text())
    assert record["config"]["seed"] == 3 and record["input"]["file"] == "preds.csv"
    assert main(["report", str(src), "--json", *common]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["n_bins"] == 5


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report", "missing.csv", "-o", "r.html"], "not found"),
        (["report", "{src}", "-o", "r.txt"], ".html or .json"),
        (["report", "{src}"], "-o report.html"),
        (["report", "{src}", "--model", "x", "-o", "r.html"], "no model column"),
    ],
)
def test_cli_errors_are_one_line(tmp_path, capsys, argv, message):
    src = tmp_path / "preds.csv"
    pd.DataFrame({"p": [0.1, 0.8, 0.6, 0.3], "label": [0, 1, 1, 0]}).to_csv(src, index=False)
    argv = [a.format(src=src) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("calibscope: error:") and err.count("\n") == 1
    assert message in err
    assert not (tmp_path / "r.txt").exists()


def test_canonical_lens_reports_why_models_are_not_compared():
    pred = _three_class(n=120)
    frame = pd.DataFrame(pred.probs, columns=["a", "b", "c"])
    frame["label"] = np.array(["a", "b", "c"])[pred.labels]
    frame = pd.concat([frame.assign(model="m1"), frame.assign(model="m2")], ignore_index=True)
    two = load_predictions(frame, name="two.csv")
    config = AnalysisConfig(lens="canonical", estimator="skce-ul", n_resamples=0)
    report = build_report(two, config=config, test=None)
    assert report.comparison is None and "canonical" in report.comparison_error
    assert [m.model for m in report.models] == ["m1", "m2"]
    assert report.figures() == []  # no bins to draw on the canonical lens
    html_text = report.to_html()
    assert "The models were not compared" in html_text
    record = json.loads(report.to_json())
    assert record["comparison"] is None and "canonical" in record["comparison_error"]
    # identical rows for both models: identical numbers
    assert record["results"][0]["headline"] == record["results"][1]["headline"]


def test_html_shows_the_brier_decomposition(toy_report, toy_html):
    d = toy_report.models[0].analysis.brier_decomposition
    assert "<h3>Brier score decomposition</h3>" in toy_html
    for label, value in zip(d.to_frame()["term"], d.to_frame()["value"], strict=True):
        assert label in toy_html
        assert np.isfinite(value)
    assert d.to_frame()["value"].iloc[1:].to_numpy() @ [1, -1, 1, 1, 1] == pytest.approx(d.brier)


def test_a_report_of_several_files_is_titled_by_its_models():
    from core.report import default_title

    source = " + ".join(f"net{i}.csv" for i in range(14))
    names = [f"net{i}" for i in range(14)]
    assert default_title(source, names) == "Calibration report: 14 models (net0, net1, …, net13)"
    assert default_title("a.csv + b.csv + c.csv", ["a", "b", "c"]) == (
        "Calibration report: 3 models (a, b, c)"
    )
    # one file keeps its name, whatever its model column holds
    assert default_title("sample.csv", ["lr", "rf", "nb"]) == "Calibration report: sample.csv"
    assert default_title("sample.csv", [None]) == "Calibration report: sample.csv"


def test_headline_names_estimator_lens_bins_and_norm_by_their_labels(toy_html):
    # the words of the pages, not the registry codes (plugin, binary, equal-width)
    head = re.search(r'<p class="headline">(.*?)</p>', toy_html).group(1)
    assert "<b>Plug-in binned (ECE)</b> (Binary P(y=1) lens, equal width bins, B = " in head
    assert "plugin" not in head and "equal-width" not in head
    assert re.search(r"Assumes: [^<]*\.( |</p>)", toy_html)  # the sentence ends before the next
