"""AppTest: the Subgroups page (sample render, values against core, several columns, URL, windows)."""

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
PAGE = "app_pages/subgroups.py"
TIMEOUT = 180
SAMPLE = "breast-cancer (binary)"


def _app(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at


def _csv(n: int = 1200, seed: int = 4) -> bytes:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    sex = rng.choice(["F", "M"], size=n)
    site = rng.choice(["north", "south", "<b>east</b>"], size=n, p=[0.48, 0.48, 0.04])
    y = (rng.uniform(size=n) < np.where(sex == "M", p**2, p)).astype(int)
    day = pd.Timestamp("2024-05-01") + pd.to_timedelta(np.arange(n) // 200, unit="D")
    frame = pd.DataFrame({"p": p.round(6), "label": y, "sex": sex, "site": site, "day": day})
    return frame.to_csv(index=False).encode()


def _chart_names(at: AppTest) -> list[list[str]]:
    return [
        [t.get("name") for t in json.loads(c.proto.spec)["data"]] for c in at.get("plotly_chart")
    ]


def test_page_is_registered():
    from dashboard.pages import PAGES

    spec = next(p for p in PAGES if p.file == PAGE)
    assert (spec.title, spec.url_path, spec.section) == ("Subgroups", "subgroups", "Analysis")


def test_without_data_the_page_explains_what_to_do():
    at = _app().run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert any("No predictions are loaded" in i.value for i in at.info)


def test_sample_renders_and_matches_core():
    from dashboard.state import sample_catalog

    if SAMPLE not in sample_catalog():
        pytest.skip("the breast-cancer sample is not bundled")
    from core.analyses.analysis import AnalysisConfig
    from core.analyses.subgroups import subgroup_analysis

    at = _app(sample=SAMPLE, lens="binary", n_resamples="200", model="logistic-regression").run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert at.title[0].value == "Subgroups"
    assert at.multiselect(key="subgroups_by").value == ["group"]
    pred = at.session_state["predictions"].by_model()["logistic-regression"]
    expected = subgroup_analysis(pred, AnalysisConfig(lens="binary", n_resamples=200))
    shown = at.dataframe[0].value
    assert shown.group.tolist() == ["(all rows)", *expected.groups]
    assert_allclose(shown.value.to_numpy()[1:], expected.table.value.to_numpy())
    assert_allclose(shown.gap_low.to_numpy()[1:], expected.table.gap_low.to_numpy())
    names = _chart_names(at)
    assert names[0][:2] == ["perfect calibration", "all rows"]
    # the sample's groups split the scores (large tumours near 1, small near 0): no bin holds
    # two groups with enough expected events, and the page says so
    assert expected.test is None
    assert any("No test of equal calibration" in m.value for m in at.markdown)
    assert any("Worst group" in x.value and "large" in x.value for x in [*at.info, *at.warning])


def test_any_columns_intersections_small_groups_and_url():
    at = _app(lens="binary").run()
    at.file_uploader(key="upload").set_value(("preds.csv", _csv(), "text/csv"))
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    by = at.multiselect(key="subgroups_by")
    assert set(by.options) >= {"sex", "site", "day"}
    by.set_value(["sex", "site"]).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert "sex=M & site=north" in table.group.tolist()
    assert any("Equal calibration across" in m.value for m in at.markdown)
    # the small group is named, escaped, in the warning
    assert any("Too small to judge" in w.value and "east" in w.value for w in at.warning)
    assert not any("<b>" in w.value for w in at.warning)
    # the worst intersection is one of the miscalibrated sex
    worst = next(x.value for x in [*at.warning, *at.info] if "Worst group" in x.value)
    assert "sex=M" in worst.replace("\\", "")


def test_url_restores_the_columns_and_size():
    at = _app(subgroups_by=["site", "sex"], subgroups_min_rows="100").run()
    at.file_uploader(key="upload").set_value(("preds.csv", _csv(), "text/csv"))
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert at.multiselect(key="subgroups_by").value == ["site", "sex"]
    assert at.number_input(key="subgroups_min_rows").value == 100
    table = at.dataframe[0].value
    assert table.group.iloc[1].startswith("site=")
    assert table.small.tolist()[1:] == (table.n.to_numpy()[1:] < 100).tolist()


def test_over_time_tab_names_the_first_window_over_the_threshold():
    at = _app(windows_time="day", windows_unit="day", windows_threshold="0.02").run()
    at.file_uploader(key="upload").set_value(("preds.csv", _csv(), "text/csv"))
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[-1].value
    assert table.group.tolist()[1:] == [f"2024-05-0{d}" for d in range(1, 7)]
    assert any("First window over" in w.value for w in at.warning)
    names = _chart_names(at)
    assert any(n[-1] == "threshold" for n in names)


def test_data_without_grouping_columns_points_to_the_data_page():
    rng = np.random.default_rng(1)
    p = rng.uniform(size=200)
    csv = pd.DataFrame({"p": p, "label": (p > 0.5).astype(int)}).to_csv(index=False).encode()
    at = _app().run()
    at.file_uploader(key="upload").set_value(("plain.csv", csv, "text/csv"))
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert any("no column to group by" in i.value for i in at.info)
