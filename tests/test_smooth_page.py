"""AppTest: the Reliability page's Diagram choice "Smooth" draws the smooth diagram."""

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
RELIABILITY = "app_pages/reliability.py"
ESTIMATORS_PAGE = "app_pages/estimators.py"


def _csv(n: int = 500, seed: int = 3) -> bytes:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**1.5).astype(int)
    return pd.DataFrame({"p": p.round(6), "label": y}).to_csv(index=False).encode()


def _decode(values):
    import base64

    if isinstance(values, dict) and "bdata" in values:
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
    return np.asarray(values)


def _loaded(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    at.file_uploader(key="upload").set_value(("preds.csv", _csv(), "text/csv"))
    return at.run()


def test_choosing_smooth_draws_the_smooth_diagram():
    at = _loaded(n_resamples="40")
    at.switch_page(RELIABILITY).run()
    at.segmented_control(key="diagram").set_value("smooth").run()
    assert not at.exception, at.exception
    charts = {c.proto.id: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    (spec,) = [s for s in charts.values() if "Smooth ECE" in str(s["layout"].get("title"))]
    curve = next(t for t in spec["data"] if t.get("name") == "smoothed frequency")
    from core.analyses.analysis import AnalysisConfig
    from core.figures.diagrams import reliability_diagram

    pred = at.session_state["predictions"]
    lens = at.sidebar.selectbox(key="lens").value  # binary data opens on the binary lens
    config = AnalysisConfig(lens=lens, n_resamples=40)
    want = reliability_diagram(pred, config, kind="smooth").components[0]
    assert_allclose(_decode(curve["y"]), want.curve, rtol=1e-12)
    assert any("bootstrap band" in str(t.get("name")) for t in spec["data"])
    assert any("Smooth ECE" in c.value for c in at.caption)
    # the metrics table lists the smooth ECE with its bootstrap interval
    metrics = next(df.value for df in at.dataframe if "metric" in df.value.columns)
    row = metrics.set_index("metric").loc["smooth"]
    assert np.isfinite(row.value)


def test_estimators_page_lists_the_smooth_ece():
    at = _loaded(n_resamples="30")
    at.switch_page(ESTIMATORS_PAGE).run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    row = table[table.label == "Smooth ECE"]
    assert len(row) == 1 and np.isfinite(row.value.iloc[0])
    assert np.isfinite(row.low.iloc[0]) and np.isfinite(row.high.iloc[0])
