"""AppTest: the Report page (download buttons, the served files, settings, no-data message)."""

from __future__ import annotations

import json
from pathlib import Path
from unittest.mock import patch

import pytest

pytest.importorskip("streamlit")
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
PAGE = "app_pages/report.py"
SAMPLE = "breast-cancer (binary)"
TIMEOUT = 180


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at


def _run_capturing(at: AppTest, *, switch: bool = True) -> dict[str, bytes]:
    """Run (switching to the page) and return the files handed to the media storage, by name."""
    served: dict[str, bytes] = {}
    original = MemoryMediaFileStorage.load_and_get_id

    def spy(self, path_or_data, mimetype, kind, filename=None):
        if filename is not None and isinstance(path_or_data, bytes):
            served[filename] = path_or_data
        return original(self, path_or_data, mimetype, kind, filename)

    with patch.object(MemoryMediaFileStorage, "load_and_get_id", spy):
        (at.switch_page(PAGE) if switch else at).run()
    return served


@pytest.fixture(scope="module")
def sample_available():
    from dashboard.state import sample_catalog

    if SAMPLE not in sample_catalog():
        pytest.skip("the breast-cancer sample is not bundled")


def test_page_is_registered():
    from dashboard.pages import PAGES

    spec = next(p for p in PAGES if p.file == PAGE)
    assert (spec.title, spec.url_path, spec.icon) == ("Report", "report", ":material/description:")
    assert "HTML report" in spec.help


def test_without_data_the_page_explains_what_to_do():
    at = _app().run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert any("No predictions are loaded" in i.value for i in at.info)
    assert not at.get("download_button")


def test_sample_gives_html_and_json_downloads(sample_available):
    # the sidebar picks one model, the report still covers all four by default
    at = _app(sample=SAMPLE, model="adaboost", lens="binary", n_resamples="40", seed="5").run()
    served = _run_capturing(at)
    assert not at.exception, at.exception
    assert not at.error
    assert at.title[0].value == "Report"
    # built behind a progress bar with a Stop button, then kept as done
    assert [s.label for s in at.status] == [
        "Building the report (analysis, bootstrap, test, figures) — done"
    ]
    buttons = at.get("download_button")
    assert [b.proto.label for b in buttons] == [
        "CSV",  # the summary table's
        "Download the report (HTML)",
        "Download every number (JSON)",
    ]
    html_text = served["calibscope-report.html"].decode("utf-8")
    title = "Calibration report: binary_breast_cancer.csv"
    assert f"<title>{title}</title>" in html_text
    assert "<h2>Model comparison</h2>" in html_text  # four models in the sample
    record = json.loads(served["calibscope-report.json"])
    assert record["config"]["seed"] == 5 and record["config"]["n_resamples"] == 40
    assert len(record["results"]) == 4
    summary = at.dataframe[0].value
    assert len(summary) == 4 and summary["n"].tolist() == [r["n"] for r in record["results"]]


def test_url_settings_reach_the_report(sample_available):
    at = _app(
        sample=SAMPLE,
        lens="binary",
        n_resamples="0",
        report_title="Quarterly check",
        report_test="hosmer-lemeshow",
        model="adaboost",
        report_one_model="true",
    ).run()
    served = _run_capturing(at)
    assert not at.exception, at.exception
    assert at.text_input(key="report_title").value == "Quarterly check"
    assert at.selectbox(key="report_test").value == "hosmer-lemeshow"
    assert "<title>Quarterly check</title>" in served["calibscope-report.html"].decode()
    record = json.loads(served["calibscope-report.json"])
    assert [r["model"] for r in record["results"]] == ["adaboost"]  # picked in the sidebar
    assert record["results"][0]["test"]["test"] == "hosmer-lemeshow"
    assert record["comparison"] is None
    # a setting change rebuilds the report
    at.selectbox(key="report_test").set_value("")
    served = _run_capturing(at, switch=False)
    assert not at.exception, at.exception
    assert json.loads(served["calibscope-report.json"])["test"]["name"] is None


def test_the_report_covers_every_model_unless_told_otherwise(sample_available):
    at = _app(sample=SAMPLE, model="adaboost", lens="binary", n_resamples="0").run()
    served = _run_capturing(at)
    assert not at.exception, at.exception
    assert len(json.loads(served["calibscope-report.json"])["results"]) == 4
    at.toggle(key="report_one_model").set_value(True)
    served = _run_capturing(at, switch=False)
    assert [r["model"] for r in json.loads(served["calibscope-report.json"])["results"]] == [
        "adaboost"
    ]


def test_the_report_draws_the_diagrams_asked_for(sample_available):
    at = _app(sample=SAMPLE, model="adaboost", lens="binary", n_resamples="0").run()
    at.switch_page(PAGE).run()
    at.button_group(key="report_diagrams").set_value(["smooth", "corp"])
    served = _run_capturing(at, switch=False)
    assert not at.exception, at.exception
    html_text = served["calibscope-report.html"].decode()
    assert "<h3>Smooth reliability diagram</h3>" in html_text
    assert "<h3>CORP (isotonic) reliability diagram</h3>" in html_text
    record = json.loads(served["calibscope-report.json"])
    assert set(record["results"][0]["diagrams"]) == {"smooth", "corp"}
