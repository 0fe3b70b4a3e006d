"""AppTest: the Estimators page (table, charts, intervals on request, no-data message)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
PAGE = "app_pages/estimators.py"
TIMEOUT = 120


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at


def _binary_csv(n: int = 500, seed: int = 3) -> bytes:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**1.5).astype(int)
    return pd.DataFrame({"p": p.round(6), "label": y}).to_csv(index=False).encode()


def _decode(values):
    """Plotly ≥ 6 sends numeric arrays as base64 typed arrays."""
    if isinstance(values, dict) and "bdata" in values:
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
    return np.asarray(values)


def _chart_specs(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_page_is_registered_after_reliability():
    from dashboard.pages import PAGES

    files = [p.file for p in PAGES]
    assert files.index(PAGE) == files.index("app_pages/reliability.py") + 1
    spec = PAGES[files.index(PAGE)]
    assert (spec.url_path, spec.section, spec.icon) == (
        "estimators",
        "Analysis",
        ":material/compare_arrows:",
    )


def test_without_data_the_page_explains_what_to_do():
    at = _app().run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert any("No predictions are loaded" in i.value for i in at.info)
    assert not at.get("plotly_chart")


def test_sample_renders_table_and_charts():
    from dashboard.state import sample_catalog

    catalog = sample_catalog()
    if "digits (10 classes)" not in catalog:
        pytest.skip("the digits sample is not bundled")
    at = _app(sample="digits (10 classes)", n_resamples="50").run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert not at.error
    assert at.title[0].value == "Estimators"
    table = at.dataframe[0].value
    assert {"label", "lens", "value", "note", "formula"} <= set(table.columns)
    # SKCE on the full vector for 10 classes; the table shows the lenses by label
    assert "Canonical (full vector)" in set(table.lens) and "canonical" not in set(table.lens)
    # binned estimators get intervals at once; kernel ones wait for the button
    binned = table[table.lens.eq("top-label") & table.binning.ne("")]
    assert binned["low"].notna().all()
    assert len(at.get("plotly_chart")) == 4  # binned, kernel, error vs B, sweep trace
    assert any("Why" in h.value for h in at.subheader)
    assert any("Plug-in is biased upward" in m.value for m in at.markdown)


def test_values_match_core_and_kernel_intervals_on_request():
    from core.inference.calibration import calibration_error

    at = _app(lens="binary", n_resamples="30", n_bins="10").run()
    at.file_uploader(key="upload").set_value(("preds.csv", _binary_csv(), "text/csv"))
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    pred = at.session_state["predictions"]
    table = at.dataframe[0].value
    plug = table[table.label.str.startswith("Plug-in")].iloc[0]
    expected = calibration_error(pred.probs, pred.labels, lens="binary", n_bins=10)
    assert_allclose(plug["value"], expected.value, rtol=1e-12)
    # the smooth ECE has no bins but is on the ℓ1 scale: its interval comes with the binned ones
    smooth = table.label.eq("Smooth ECE")
    assert table[smooth]["low"].notna().all()
    kernel = table[table.binning.eq("") & table.value.notna() & ~smooth]
    assert kernel["low"].isna().all()
    # the experimental KDE-ECE waits for its own button
    kde = table.label.str.startswith("KDE")
    assert table[kde].value.isna().all() and table[kde].note.str.contains("asked for").all()
    at.button(key="estimators_kernel_intervals").click().run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    kernel = table[table.binning.eq("") & table.value.notna()]
    # every one but the median-variance ECE, whose note says why it has none
    no_interval = table.label.str.contains("median-variance")
    assert kernel[~kernel.label.str.contains("median-variance")]["low"].notna().all()
    assert table[no_interval].note.str.contains("no bootstrap interval").all()
    at.button(key="estimators_experimental").click().run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    got = table[table.label.str.startswith("KDE")].iloc[0]
    from core.stats.lenses import LENSES

    lens = {e.label: e.name for e in LENSES}[got["lens"]]  # the table shows the lens's label
    want = calibration_error(pred.probs, pred.labels, estimator="kde", lens=lens)
    assert_allclose(got["value"], want.value, rtol=1e-12)
    assert "estimators_experimental" not in [b.key for b in at.button]
    # the range slider redraws the error-versus-B chart
    at.slider(key="estimators_bins_range").set_value((3, 8)).run()
    assert not at.exception, at.exception
    spec = _chart_specs(at)[2]
    xs = np.concatenate([_decode(t["x"]) for t in spec["data"] if t.get("mode") == "lines+markers"])
    assert xs.size and xs.min() == 3 and xs.max() == 8


def test_zero_resamples_and_max_norm():
    at = _app(lens="binary", n_resamples="0", norm="inf").run()
    at.file_uploader(key="upload").set_value(("preds.csv", _binary_csv(300), "text/csv"))
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert any("Bootstrap intervals are off" in c.value for c in at.caption)
    table = at.dataframe[0].value
    assert "low" not in table.columns
    deb = table[table.label.str.startswith("Debiased")].iloc[0]
    assert np.isnan(deb["value"]) and "ℓ∞" in deb["note"]


def test_bins_range_is_restored_from_the_url():
    # the range slider is bound to the URL (bind="query-params"): one parameter per end
    at = _app(lens="binary", n_resamples="0", estimators_bins_range=["3", "8"]).run()
    at.file_uploader(key="upload").set_value(("preds.csv", _binary_csv(300), "text/csv"))
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert at.slider(key="estimators_bins_range").value == (3, 8)
    spec = _chart_specs(at)[2]
    xs = np.concatenate([_decode(t["x"]) for t in spec["data"] if t.get("mode") == "lines+markers"])
    assert xs.size and xs.min() == 3 and xs.max() == 8
    # out of range: ignored, the default range is drawn
    at2 = _app(lens="binary", n_resamples="0", estimators_bins_range=["0", "500"]).run()
    at2.file_uploader(key="upload").set_value(("preds.csv", _binary_csv(300), "text/csv"))
    at2.run()
    at2.switch_page(PAGE).run()
    assert not at2.exception, at2.exception
    assert at2.slider(key="estimators_bins_range").value == (2, 50)
