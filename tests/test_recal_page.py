"""AppTest: the Recalibration page (no data, fit and compare, Meta-Cal views, exports)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit")
from pathlib import Path  # noqa: E402

from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
PAGE = "app_pages/recalibration.py"
TIMEOUT = 180


def _csv(n: int = 1200, k: int = 3, seed: int = 4) -> bytes:
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 2.5, (n, k))
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    q = np.exp(z / 2) / np.exp(z / 2).sum(1, keepdims=True)  # over-confident model
    y = np.minimum((rng.random(n)[:, None] >= q.cumsum(1)).sum(1), k - 1)
    frame = pd.DataFrame(p, columns=[f"p_{c}" for c in "abc"[:k]])
    frame["label"] = y
    return frame.to_csv(index=False, float_format="%.12f").encode()


def _loaded() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["n_resamples"] = "50"
    at.run()
    at.file_uploader(key="upload").set_value(("preds.csv", _csv(), "text/csv"))
    at.run()
    assert not at.exception, at.exception
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def test_without_data_the_page_says_so():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert at.title[0].value == "Recalibration"
    assert any("No predictions are loaded" in i.value for i in at.info)
    assert not at.dataframe


def test_fit_compare_and_metacal_views():
    at = _loaded()
    assert any("Fit and compare" in i.value for i in at.info)
    at.multiselect(key="recal_methods").set_value(["temperature", "histogram-umd", "meta-cal"])
    at.button[0].click()  # the form's submit button
    at.run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert list(table.index) == [
        "Uncalibrated",
        "Temperature scaling",
        "Histogram binning (UMD)",
        "Meta-Cal (selective)",
    ]
    assert "Coverage" in table.columns
    # every number is the core comparison's, for the request the page made
    from core.recalibration.evaluation import compare_recalibrators

    request = at.session_state["recal_request"]["request"]
    pred = at.session_state["predictions"]
    want = compare_recalibrators(pred.probs, pred.labels, **request).metrics
    for row in want.itertuples(index=False):
        for field, column in (("value", ""), ("low", " low"), ("high", " high")):
            name = f"{row.metric_label}{column}"
            if name not in table.columns:  # a metric without intervals has no bound columns
                assert np.isnan(getattr(row, field)), (row.metric_label, field)
                continue
            shown = table.loc[row.method_label, name]
            assert shown == pytest.approx(getattr(row, field), rel=1e-12, nan_ok=True), (
                row.method_label,
                row.metric_label,
                field,
            )
    # histogram binning is judged with discrete bins, and the page says why
    assert any("discrete" in i.value for i in at.info)
    assert any("Guarantee" in c.value and "NOT controlled" in c.value for c in at.caption)
    charts = [c for c in at.get("plotly_chart")]
    assert len(charts) >= 5
    assert any("test rows the recalibrators never saw" in m.value for m in at.markdown)
    # the page opens its results with their finding (core.analyses.findings.recalibration_finding)
    texts = [m.value.replace("\\", "") for m in at.markdown]
    found = [t for t in texts if "On the test rows," in t]
    assert found and ("lowers" in found[0] or "no recalibrator" in found[0])


def test_in_sample_needs_confirmation():
    at = _loaded()
    at.selectbox(key="recal_protocol").set_value("in-sample")
    at.button[0].click()
    at.run()
    assert any("confirm in-sample" in w.value for w in at.warning)
    at.checkbox(key="recal_in_sample_ok").check()
    at.button[0].click()
    at.run()
    assert not at.exception, at.exception
    assert any("In-sample" in w.value for w in at.warning)


def test_send_recalibrated_predictions_to_other_pages():
    at = _loaded()
    at.multiselect(key="recal_methods").set_value(["temperature"])
    at.button[0].click()
    at.run()
    at.button(key="recal_send").click()
    at.run()
    assert not at.exception, at.exception
    assert any("Loaded 2 models" in s.value for s in at.success)
    pred = at.session_state["predictions"]
    assert set(pred.models) == {"Uncalibrated", "Temperature scaling"}


def test_settings_are_restored_from_the_url():
    # every setting widget is bound to the URL (bind="query-params", key = parameter name);
    # option widgets with a format_func carry the label shown in the widget
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["n_resamples"] = "50"
    at.run()
    at.file_uploader(key="upload").set_value(("preds.csv", _csv(), "text/csv"))
    at.run()
    url = {
        "recal_methods": ["Platt scaling", "Isotonic regression"],
        "recal_protocol": "Repeated random splits",
        "recal_fraction": "0.3",
        "recal_repeats": "7",
        "recal_bins": "15",
        "recal_scaling-binning_mode": "three disjoint splits (theory)",
        "recal_eval_binning": "the sidebar binning for all",
        "recal_meta-cal_mode": "coverage-accuracy",
        "recal_meta-cal_alpha": "0.1",
        "recal_meta-cal_threshold_rule": "Neyman–Pearson: ≤ α w.p. 1 − δ",
    }
    for key, value in url.items():
        at.query_params[key] = value
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert at.multiselect(key="recal_methods").value == ["platt", "isotonic"]
    assert at.selectbox(key="recal_protocol").value == "repeated"
    assert at.slider(key="recal_fraction").value == 0.3
    assert at.number_input(key="recal_repeats").value == 7
    assert at.number_input(key="recal_bins").value == 15
    assert at.selectbox(key="recal_scaling-binning_mode").value == "three-splits"
    assert at.selectbox(key="recal_eval_binning").value == "config"
    assert at.selectbox(key="recal_meta-cal_mode").value == "coverage-accuracy"
    assert at.number_input(key="recal_meta-cal_alpha").value == 0.1
    assert at.selectbox(key="recal_meta-cal_threshold_rule").value == "high-probability"
    # an invalid value in the URL is ignored (the widget keeps its default); writing the
    # URL from the widgets happens in the browser, which AppTest does not run
    at2 = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at2.query_params["recal_protocol"] = "no such protocol"
    at2.run()
    at2.file_uploader(key="upload").set_value(("preds.csv", _csv(), "text/csv"))
    at2.run()
    at2.switch_page(PAGE).run()
    assert not at2.exception, at2.exception
    assert at2.selectbox(key="recal_protocol").value == "fraction"


def test_every_registered_recalibrator_fits_on_the_page():
    from core.recalibration import RECALIBRATORS

    at = _loaded()
    names = RECALIBRATORS.names()
    at.multiselect(key="recal_methods").set_value(names)
    at.button[0].click()
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    labels = [RECALIBRATORS.get(n).label for n in names]
    assert len(table.index) == len(names) + 1
    assert all(any(label.split(" (")[0] in row for row in table.index) for label in labels)
