"""Every table of every page has a formula-safe CSV download beside it."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from dashboard.widgets import _table_csv  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
SAMPLE = "breast-cancer (binary)"


def test_csv_is_the_table_at_full_precision_with_formulas_neutralised():
    frame = pd.DataFrame(
        {"model": ["=HYPERLINK(1)", "+a", "@b", "plain"], "gap": [-0.1, 1 / 3, 2e-17, 5]}
    )
    text = _table_csv(frame, False).decode()
    back = pd.read_csv(io.StringIO(text))
    assert back["model"].tolist() == ["'=HYPERLINK(1)", "'+a", "'@b", "plain"]
    # numbers stay numbers, negative ones too, at 15 significant digits (no binary noise)
    assert back["gap"].tolist() == [-0.1, 0.333333333333333, 2e-17, 5]
    # a styled table downloads its data; a list of rows becomes a table
    assert _table_csv(frame.style.format("{:.2f}", subset=["gap"]), False) == text.encode()
    rows = [{"model": "m", "n": 3}]
    assert _table_csv(rows, False).decode().splitlines() == ["model,n", "m,3"]


@pytest.mark.parametrize("page", ["reliability", "estimators", "tests", "compare", "subgroups"])
def test_every_table_has_its_csv_button(page):
    from dashboard.state import sample_catalog

    if SAMPLE not in sample_catalog():
        pytest.skip("the breast-cancer sample is not bundled")
    at = AppTest.from_file(APP, default_timeout=300)
    for k, v in {"sample": SAMPLE, "n_resamples": "20", "compare_resamples": "20"}.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, at.exception
    tables = [d.proto.id for d in at.dataframe]
    buttons = [b for b in at.get("download_button") if b.proto.label == "CSV"]
    assert tables and len(buttons) == len(tables)


def test_a_table_may_download_another_frame_than_it_shows():
    """``csv=`` (the Bias page: percentages shown, the API's fractions and codes downloaded)."""
    from dashboard import widgets

    class Where:
        def dataframe(self, *args, **kwargs):
            self.shown = args[0]

        def download_button(self, label, data, **kwargs):
            self.label, self.data = label, data

    raw = pd.DataFrame({"name": ["plugin"], "bias": [0.0123]})
    shown = raw.drop(columns=["name"]).assign(bias=lambda t: 100 * t.bias)
    where = Where()
    widgets.table(shown, key="k", container=where, csv=raw, hide_index=True)
    assert where.label == "CSV" and where.data() == _table_csv(raw, False)
    widgets.table(shown, key="k", container=where, hide_index=True)
    assert where.data() == _table_csv(shown, False)
