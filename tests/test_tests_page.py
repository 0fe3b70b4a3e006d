"""AppTest: the Tests page (table of tests, null distribution, teaching mode, large-n offer)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

import core  # noqa: E402
from core.analyses import calibration_tests  # noqa: E402
from core.base.numbers import format_pvalue
from core.estimators import kernel as kern  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
TESTS_PAGE = "app_pages/tests.py"
TIMEOUT = 120


def _csv(n: int = 300, k: int = 3, seed: int = 4, pi: float = 0.0) -> bytes:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 0.7, size=n)
    cdf = p.cumsum(1)
    y = np.minimum((rng.random(n)[:, None] >= cdf).sum(1), k - 1)
    y = np.where(rng.random(n) < pi, 0, y)
    frame = pd.DataFrame(p, columns=[f"p_{c}" for c in "abcdef"[:k]])
    frame["label"] = y
    return frame.to_csv(index=False, float_format="%.12f").encode()


def _loaded(data: bytes, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in {"n_resamples": "0", **query}.items():
        at.query_params[key] = value
    at.run()
    at.file_uploader(key="upload").set_value(("preds.csv", data, "text/csv"))
    at.run()
    assert not at.exception, at.exception
    at.switch_page(TESTS_PAGE).run()
    assert not at.exception, at.exception
    return at


def _table(at: AppTest) -> pd.DataFrame:
    return next(df.value for df in at.dataframe if "p-value" in df.value.columns)


def test_without_data_the_page_explains_and_still_teaches():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page(TESTS_PAGE).run()
    assert not at.exception
    assert at.title[0].value == "Calibration tests"
    assert any("no unit" in i.value for i in at.info)  # the paper's message
    assert any("No predictions are loaded" in i.value for i in at.info)
    assert not at.dataframe
    assert at.expander and "Teaching mode" in at.expander[0].label


def _shown_pvalues(at):
    """Test label → its p-value as the table shows it (the styled cells' display values)."""
    import pyarrow as pa

    (element,) = [df for df in at.dataframe if "p-value" in df.value.columns]
    shown = pa.ipc.open_stream(element.proto.arrow_data.styler.display_values).read_all()
    shown = shown.to_pandas()
    return dict(zip(shown["label"], shown["p-value"], strict=True))


def test_one_row_per_test_matching_core():
    data = _csv(300, pi=0.6)  # miscalibrated: 60 % of labels forced to class 0
    at = _loaded(data)
    table = _table(at)
    labels = [core.TESTS.get(t).label for t in calibration_tests.DEFAULT_SUITE]
    assert list(table["label"]) == labels
    assert table.columns.tolist()[:4] == ["label", "statistic", "p-value", "reject at α = 0.05"]
    frame = pd.read_csv(io.BytesIO(data))
    probs, y = frame.filter(like="p_").to_numpy(), frame["label"].to_numpy()
    want = core.calibration_test(probs, y, test="skce-ul-asymptotic")
    row = table[table["label"] == "Asymptotic test (SKCE_ul)"].iloc[0]
    assert row["statistic"] == pytest.approx(want.statistic, rel=1e-9)
    assert row["p-value"] == want.pvalue  # the number itself; the page formats it
    shown = _shown_pvalues(at)
    assert shown["Asymptotic test (SKCE_ul)"] == format_pvalue(want.pvalue)  # the one formatter
    assert shown["Distribution-free bound (SKCE_b)"].startswith("≤ ")
    boot = table[table["label"] == "Bootstrap test (SKCE_uq)"].iloc[0]
    assert "±" in shown["Bootstrap test (SKCE_uq)"] and boot["reject at α = 0.05"] == "reject"
    # α changes the decisions, not the p-values
    at.select_slider(key="tests_alpha").set_value(0.001).run()
    assert "reject at α = 0.001" in _table(at).columns


def test_null_distribution_view_marks_observed_statistic():
    at = _loaded(_csv(250))
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(specs) == 1
    spec = specs[0]
    assert spec["data"][0]["type"] == "histogram"
    shapes = spec["layout"]["shapes"]
    assert any(s["type"] == "rect" for s in shapes) and any(s["type"] == "line" for s in shapes)
    result = at.session_state["tests_null_choice"]
    assert result == "skce-uq-bootstrap"
    at.selectbox(key="tests_null_choice").set_value("consistency").run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 1


def test_large_data_offers_linear_and_block_tests(monkeypatch):
    monkeypatch.setattr(kern, "MAX_EXACT_N", 100)
    at = _loaded(_csv(150))
    assert any("skipped above" in w.value for w in at.warning)
    labels = list(_table(at)["label"])
    assert "Bootstrap test (SKCE_uq)" not in labels
    assert "Asymptotic test (SKCE_ul)" in labels and "Block test (SKCE block)" in labels
    assert any("did not run" in c.value for c in at.caption)
    at.checkbox(key="tests_force_quadratic").check().run()
    assert "Bootstrap test (SKCE_uq)" in list(_table(at)["label"])


def test_teaching_mode_draws_error_curves():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page(TESTS_PAGE).run()
    at.number_input(key="tests_teach_n").set_value(60)
    at.number_input(key="tests_teach_datasets").set_value(20)
    at.multiselect(key="tests_teach_tests").set_value(["skce-ul-asymptotic", "spiegelhalter"])
    at.toggle(key="tests_teach_run").set_value(True).run()
    assert not at.exception, at.exception
    (chart,) = at.get("plotly_chart")
    spec = json.loads(chart.proto.spec)
    names = [t["name"] for t in spec["data"]]
    assert names[0] == "type-I error = α"  # calibrated model M1: the diagonal
    assert "Spiegelhalter's Z" in names


def test_settings_are_restored_from_the_url():
    # the settings are bound to the URL (bind="query-params", key = parameter name); option
    # widgets with a format_func carry the label shown in the widget
    url = {
        "tests_alpha": "0.01",
        "tests_kernel_lens": "Top-label (confidence)",
        "tests_resamples": "200",
        "tests_null_choice": "Consistency resampling",
        "tests_teach_world": "M3: labels uniform (π = 1)",
        "tests_teach_n": "60",
        "tests_teach_datasets": "40",
        "tests_teach_tests": ["Spiegelhalter's Z", "Hosmer–Lemeshow"],
    }
    at = _loaded(_csv(200), **url)
    assert at.select_slider(key="tests_alpha").value == 0.01
    assert "reject at α = 0.01" in _table(at).columns
    assert at.selectbox(key="tests_kernel_lens").value == "top-label"
    assert at.number_input(key="tests_resamples").value == 200
    assert at.selectbox(key="tests_null_choice").value == "consistency"
    assert any("top-label lens" in c.value for c in at.caption)
    assert at.selectbox(key="tests_teach_world").value == "M3: labels uniform (π = 1)"
    assert at.number_input(key="tests_teach_n").value == 60
    assert at.number_input(key="tests_teach_datasets").value == 40
    assert at.multiselect(key="tests_teach_tests").value == ["spiegelhalter", "hosmer-lemeshow"]
    # one-shot, heavy toggles stay out of the URL: a shared link never starts the work
    assert at.toggle(key="tests_teach_run").value is False
    assert not at.get("plotly_chart")[1:]  # only the null distribution, no simulation


def test_invalid_url_values_are_ignored():
    at = _loaded(_csv(200), tests_kernel_lens="Binary P(y=1)", tests_alpha="0.2")
    # binary is not an option for three classes, 0.2 not a level: both keep their defaults
    assert at.selectbox(key="tests_kernel_lens").value == "canonical"
    assert at.select_slider(key="tests_alpha").value == 0.05


def test_a_slow_test_waits_for_a_click_and_names_the_fast_settings(monkeypatch):
    # 300 rows × 3 classes × 1,000 resamples on the classwise lens: 900,000 row draws
    monkeypatch.setattr(calibration_tests, "PAGE_ROW_WORK", 100_000)
    at = _loaded(_csv(300), lens="classwise")
    (warning,) = [w.value.replace("\\", "") for w in at.warning if "waits for" in w.value]
    assert "**Consistency resampling**" in warning
    assert "the sidebar's “Lens” choice (Top-label (confidence))" in warning
    assert "the “Resamples (bootstrap, consistency)” box (111) fits" in warning
    assert "Consistency resampling" not in list(_table(at)["label"])
    assert not any("Consistency resampling" in c.value for c in at.caption)  # said once
    at.button(key="tests_force_slow").click().run()
    assert not at.exception, at.exception
    assert not any("waits for you" in w.value for w in at.warning)
    assert at.status and "done" in at.status[0].label  # its progress, kept as done
    row = _table(at).set_index("label").loc["Consistency resampling"]
    frame = pd.read_csv(io.BytesIO(_csv(300)))
    want = core.calibration_test(
        frame.filter(like="p_").to_numpy(),
        frame["label"].to_numpy(),
        test="consistency",
        lens="classwise",
        n_resamples=1000,
    )
    assert row["p-value"] == want.pvalue
    assert row["statistic"] == pytest.approx(want.statistic, rel=1e-12)
    # kept: another option of the page shows the whole suite again without running it
    at.select_slider(key="tests_alpha").set_value(0.01).run()
    assert "Consistency resampling" in list(_table(at)["label"])
    assert not any("waits for you" in w.value for w in at.warning)
