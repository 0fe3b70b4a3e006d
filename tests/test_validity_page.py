"""AppTest: the Validity page (calculator without data, plots with the sample, URL, lenses)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from core.base.numbers import format_number  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
PAGE = "app_pages/validity.py"
TIMEOUT = 120
BINARY = "breast-cancer (binary)"
DIGITS = "digits (10 classes)"


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at


def _page(**query: str) -> AppTest:
    at = _app(**query).run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _chart(at: AppTest, key: str) -> dict:
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        if c.proto.id and key in c.proto.id:
            return spec
    raise AssertionError(f"no chart {key}")


def _needs(sample: str) -> None:
    from dashboard.state import sample_catalog

    if sample not in sample_catalog():
        pytest.skip(f"the {sample} sample is not bundled")


def test_page_is_registered():
    from dashboard.pages import PAGES

    spec = next(p for p in PAGES if p.file == PAGE)
    assert (spec.title, spec.url_path, spec.section, spec.icon) == (
        "Validity",
        "validity",
        "Analysis",
        ":material/verified:",
    )


def test_calculator_works_without_data():
    at = _page()
    assert at.title[0].value == "Validity"
    m = _metrics(at)
    # Gupta & Ramdas digest §3.6, n = 1000, B = 10, α = 0.1
    assert m["Conditional ε (Theorem 3)"] == "0.1636"
    assert m["Marginal ε (Theorem 4)"] == "0.1230"
    assert m["Zadrozny–Elkan ε (Corollary 1)"] == "0.1736"
    assert m["Expected ECE ≤"] == "0.0503"
    text = " ".join(md.value for md in at.markdown)
    assert "conditional **2,660**" in text and "marginal **1,510**" in text
    assert "conditional **4**" in text and "marginal **6**" in text
    # the plots say what they need; only the calculator's chart is drawn
    assert any("Validity plots need predictions" in i.value for i in at.info)
    assert len(at.get("plotly_chart")) == 1


def test_calculator_round_trips_through_the_url():
    at = _page(validity_n="20000", validity_bins="22", validity_target="0.05")
    assert at.number_input(key="validity_n").value == 20000
    m = _metrics(at)
    assert m["Conditional ε (Theorem 3)"] == "0.0579"  # Figure 2's n = 20K, B = 22
    text = " ".join(md.value for md in at.markdown)
    assert "conditional **17**" in text and "marginal **33**" in text  # largest B at ε = 0.05
    # a change recomputes (the browser test checks that it reaches the URL)
    at.number_input(key="validity_bins").set_value(10).run()
    assert not at.exception, at.exception
    assert _metrics(at)["Conditional ε (Theorem 3)"] == "0.0364"
    # n < 2B: a warning and n/a, no traceback
    at.number_input(key="validity_n").set_value(15).run()
    assert not at.exception, at.exception
    assert any("n ≥ 2B" in w.value for w in at.warning)
    assert _metrics(at)["Conditional ε (Theorem 3)"] == "n/a"


def test_plots_with_the_sample_match_core():
    _needs(BINARY)
    from core.analyses.validity import validity_curves
    from core.data import load_predictions

    at = _page(sample=BINARY, lens="binary", n_bins="10")
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == 3
    assert at.status[0].state == "complete"
    pred = dict(load_predictions(ROOT / "sample_data" / "binary_breast_cancer.csv").by_model())
    first = next(iter(pred))  # the model picker starts on the first model
    expected = validity_curves(pred[first], n_bins=10, n_cal=0.5, n_resamples=50, seed=0)
    assert _metrics(at)["ℓ1-ECE = 1 − AUC"] == format_number(expected.ece_mean)
    spec = _chart(at, "validity_chart")
    names = [t.get("name", "") for t in spec["data"]]
    assert "Theory, marginal" in names and "Theory, conditional" in names
    assert any("holds" in c.value for c in at.caption)
    table = at.dataframe[0].value  # the bin table comes before the pooled one
    assert_allclose(table["mean_label"], expected.bins["mean_label"])


def test_setting_changes_and_url_bound_plot_options():
    _needs(BINARY)
    at = _page(sample=BINARY, lens="binary", n_bins="10", validity_runs="5")
    assert at.number_input(key="validity_runs").value == 5
    assert any("mean of 5 runs" in c.value for c in at.caption)
    at.selectbox(key="validity_method").set_value("histogram-ums").run()
    assert not at.exception, at.exception
    names = [t.get("name", "") for t in _chart(at, "validity_chart")["data"]]
    assert not any(n.startswith("Theory") for n in names)
    assert any("No theory curve" in c.value for c in at.caption)
    at.toggle(key="validity_conditional").set_value(False).run()
    names = [t.get("name", "") for t in _chart(at, "validity_chart")["data"]]
    assert not any(n.startswith("Conditional") for n in names)
    # the same options from the URL give the same page
    again = _page(
        sample=BINARY,
        lens="binary",
        n_bins="10",
        validity_runs="5",
        validity_method="Histogram binning (UMS, split)",  # bound select boxes store the label
        validity_conditional="false",
    )
    assert again.selectbox(key="validity_method").value == "histogram-ums"
    assert again.toggle(key="validity_conditional").value is False
    assert _metrics(again) == _metrics(at)


def test_top_label_lens_on_the_digits():
    _needs(DIGITS)
    at = _page(sample=DIGITS, lens="top-label", n_bins="10", validity_runs="10")
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == 3
    assert np.isfinite(float(_metrics(at)["ℓ1-ECE = 1 − AUC"]))


def test_lens_messages():
    _needs(DIGITS)
    at = _page(sample=DIGITS, lens="classwise")
    assert any("binary or top-label" in i.value for i in at.info)
    assert len(at.get("plotly_chart")) == 1  # the calculator still works
    at = _page(sample=DIGITS, lens="binary")
    assert any("binary lens needs two classes" in i.value for i in at.info)
    assert len(at.get("plotly_chart")) == 1


def test_too_few_rows_for_the_bins():
    _needs(BINARY)
    at = _page(sample=BINARY, lens="binary", n_bins="200")
    assert any("at least 2 calibration rows per bin" in i.value for i in at.info)
    assert len(at.get("plotly_chart")) == 1
