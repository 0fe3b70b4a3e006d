"""AppTest: the Compare page (sample render, values against core, settings, URL, messages)."""

from __future__ import annotations

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
PAGE = "app_pages/compare.py"
TIMEOUT = 180
SAMPLE = "breast-cancer (binary)"


def _app(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at


def _sample_or_skip() -> None:
    from dashboard.state import sample_catalog

    if SAMPLE not in sample_catalog():
        pytest.skip("the breast-cancer sample is not bundled")


def _one_model_csv(n: int = 300, seed: int = 3) -> bytes:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**1.5).astype(int)
    return pd.DataFrame({"p": p.round(6), "label": y}).to_csv(index=False).encode()


def _chart_names(at: AppTest) -> list[list[str]]:
    return [
        [t.get("name") for t in json.loads(c.proto.spec)["data"]] for c in at.get("plotly_chart")
    ]


def test_page_is_registered():
    from dashboard.pages import PAGES

    spec = next(p for p in PAGES if p.file == PAGE)
    assert (spec.title, spec.url_path, spec.section, spec.icon) == (
        "Compare",
        "compare",
        "Analysis",
        ":material/leaderboard:",
    )


def test_without_data_the_page_explains_what_to_do():
    at = _app().run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert any("No predictions are loaded" in i.value for i in at.info)
    assert not at.get("plotly_chart")


def test_one_model_explains_how_to_get_several():
    at = _app().run()
    at.file_uploader(key="upload").set_value(("preds.csv", _one_model_csv(), "text/csv"))
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert any("at least two models" in i.value and "`model`" in i.value for i in at.info)
    assert not at.get("plotly_chart")


def test_sample_renders_and_matches_core():
    _sample_or_skip()
    from core.analyses.model_comparison import compare_models

    at = _app(sample=SAMPLE, lens="binary", compare_resamples="200").run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert not at.error
    assert at.title[0].value == "Compare"
    assert at.multiselect(key="compare_models").value == [
        "naive-bayes",
        "random-forest",
        "adaboost",
        "logistic-regression",
    ]
    names = _chart_names(at)
    assert len(names) == 4  # forest, differences, overlay, ranks
    assert names[2][:5] == [
        "perfect calibration",
        "naive-bayes",
        "random-forest",
        "adaboost",
        "logistic-regression",
    ]
    assert any("Paired" in c.value for c in at.caption)
    assert any("rankings disagree" in h.value for h in at.subheader)
    # the differences table holds core's numbers for the same settings
    pred = at.session_state["predictions"]
    from core.analyses.analysis import AnalysisConfig

    expected = compare_models(
        pred.by_model(),
        config=AnalysisConfig(lens="binary"),
        n_resamples=200,
        test="skce-ul-asymptotic",
    )
    shown = next(d.value for d in at.dataframe if "significant" in d.value.columns)
    assert_allclose(shown["difference"].to_numpy(), expected.differences.difference.to_numpy())
    assert_allclose(shown["low"].to_numpy(), expected.differences.low.to_numpy())
    assert at.get("download_button")


def test_settings_change_and_url_round_trip():
    _sample_or_skip()
    at = _app(
        sample=SAMPLE,
        lens="binary",
        compare_resamples="0",
        compare_models=["adaboost", "logistic-regression"],
        compare_metrics=["brier", "plugin@1"],
        compare_reference="adaboost",
        compare_test="spiegelhalter",
    ).run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert at.multiselect(key="compare_models").value == ["adaboost", "logistic-regression"]
    assert at.multiselect(key="compare_metrics").value == ["brier", "plugin@1"]
    assert at.selectbox(key="compare_reference").value == "adaboost"
    assert at.selectbox(key="compare_test").value == "spiegelhalter"
    assert at.number_input(key="compare_resamples").value == 0
    assert any("Differences to adaboost" in h.value for h in at.subheader)
    names = _chart_names(at)
    assert names[2][1:3] == ["adaboost", "logistic-regression"]
    # a setting change: a third model joins
    at.multiselect(key="compare_models").select("naive-bayes").run()
    assert not at.exception, at.exception
    assert len(_chart_names(at)[2]) == 1 + 2 * 3
    # one model only: a message, no traceback
    at.multiselect(key="compare_models").set_value(["adaboost"]).run()
    assert not at.exception, at.exception
    assert any("at least two models" in i.value for i in at.info)


def test_state_survives_a_page_switch():
    _sample_or_skip()
    at = _app(sample=SAMPLE, compare_resamples="0").run()
    at.switch_page(PAGE).run()
    at.selectbox(key="compare_test").set_value("").run()
    assert not at.exception, at.exception
    at.switch_page("app_pages/reliability.py").run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="compare_test").value == ""


def test_classwise_lens_offers_a_class_picker():
    from dashboard.state import sample_catalog

    if "digits (10 classes)" not in sample_catalog():
        pytest.skip("the digits sample is not bundled")
    at = _app(
        sample="digits (10 classes)",
        lens="classwise",
        compare_resamples="0",
        compare_test="none",
        compare_component="three",  # the URL holds the class name
    ).run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert not at.error
    assert at.selectbox(key="compare_component").value == 3
    assert any("Identical bins" in c.value for c in at.caption)


def _bounds(table):
    """The interval bounds of the metrics table (the columns ``<metric> low`` / ``high``)."""
    return table[[c for c in table.columns if c.endswith((" low", " high"))]]


def _budgets_page(monkeypatch, resamples: int, **budgets: int) -> AppTest:
    """The Compare page on the binary sample with ``resamples`` and patched budgets."""
    _sample_or_skip()
    import dashboard.cache

    for name, value in budgets.items():
        monkeypatch.setattr(dashboard.cache, name, value)
    at = _app(sample=SAMPLE, lens="binary", compare_resamples=str(resamples)).run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def test_a_longer_bootstrap_runs_at_once_with_its_progress(monkeypatch):
    # 4 models x 569 rows x 50 resamples: above the (patched) quick budget, within the
    # budget run behind a progress bar
    at = _budgets_page(monkeypatch, 50, AUTO_BOOTSTRAP_BUDGET=1_000)
    assert not any("Bootstrap intervals on" in i.value for i in at.info)
    assert at.status and at.status[0].label == "Comparing 4 models with 50 resamples — done"
    shown = at.dataframe[0].value
    assert _bounds(shown).iloc[:, :2].notna().all().all()
    # the same numbers as the quick path (and core): one comparison, whatever the bar
    quick = _budgets_page(monkeypatch, 50, AUTO_BOOTSTRAP_BUDGET=10**12)
    assert not quick.status
    pd.testing.assert_frame_equal(quick.dataframe[0].value, shown)


def test_large_bootstrap_waits_for_a_click(monkeypatch):
    at = _budgets_page(
        monkeypatch, 50, AUTO_BOOTSTRAP_BUDGET=1_000, PROGRESS_BOOTSTRAP_BUDGET=1_000
    )
    # 4 models x 569 rows x 50 resamples is over the (patched) budget: point estimates first
    assert any("Bootstrap intervals on 2,276 rows" in i.value for i in at.info)
    first = at.dataframe[0].value
    at.button(key="compare_run_bootstrap").click().run()
    assert not at.exception, at.exception
    assert not any("Bootstrap intervals on" in i.value for i in at.info)
    second = at.dataframe[0].value
    assert first.shape[0] == second.shape[0] == 4
    # the intervals' bounds are columns of numbers, there once the bootstrap has run
    assert _bounds(second).iloc[:, :2].notna().all().all() and _bounds(first).empty


def test_the_cell_bootstrap_runs_without_a_click(monkeypatch):
    # 569 rows x 20,000 resamples is above the exact bootstrap's work: compare_models draws
    # cells, quick at any n, so no button waits
    at = _budgets_page(monkeypatch, 20000, AUTO_BOOTSTRAP_BUDGET=1_000)
    assert not any("Bootstrap intervals on" in i.value for i in at.info)
    assert _bounds(at.dataframe[0].value).iloc[:, :2].notna().all().all()  # the first metric's
    assert any("joint cells" in c.value for c in at.caption)
