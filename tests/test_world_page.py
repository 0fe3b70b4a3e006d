"""AppTest: drawing from a ground-truth world on the Data page; the link reproduces the rows."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from core.worlds import draw_predictions, true_error  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
TIMEOUT = 120


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def _infos(at: AppTest) -> str:
    return " ".join(i.value for i in at.sidebar.info)


def test_link_draws_the_rows_and_shows_the_truth():
    at = _app(world="roelofs-fig14", n="700", seed="5")
    assert not at.exception, at.exception
    pred = at.session_state["predictions"]
    assert pred.digest == draw_predictions("roelofs-fig14", 700, seed=5).digest
    truth = true_error("roelofs-fig14", lens="binary", norm=1)
    assert truth.text in _infos(at)
    # every page works on the rows and the link keeps the world
    for page in ("app_pages/reliability.py", "app_pages/estimators.py"):
        at.switch_page(page).run()
        assert not at.exception, at.exception
        assert at.session_state["predictions"].digest == pred.digest
        assert at.query_params["world"] == "roelofs-fig14"
        assert at.query_params["n"] == "700"


def test_picker_draws_and_the_seed_redraws():
    at = _app()
    at.selectbox(key="world").select("widmann-m2").run()
    assert not at.exception, at.exception
    pred = at.session_state["predictions"]
    assert pred.digest == draw_predictions("widmann-m2", 2000, seed=0).digest
    assert pred.n_classes == 10
    assert "45 %" in _infos(at) or "31." in _infos(at)
    at.number_input(key="n").set_value(300).run()
    assert (
        at.session_state["predictions"].digest == draw_predictions("widmann-m2", 300, seed=0).digest
    )
    at.number_input(key="seed").set_value(9).run()
    assert (
        at.session_state["predictions"].digest == draw_predictions("widmann-m2", 300, seed=9).digest
    )
    # a sample replaces the world
    from dashboard.state import sample_catalog

    if sample_catalog():
        name = next(iter(sample_catalog()))
        at.selectbox(key="sample").select(name).run()
        assert not at.exception, at.exception
        assert at.session_state["predictions"].source != "world"
        assert "_world_loaded" not in at.session_state
        assert not at.sidebar.info or "True calibration error" not in _infos(at)


def test_any_glm_world_and_a_bad_link():
    at = _app()
    at.button(key="_glm_use").click().run()
    assert not at.exception, at.exception
    name = at.session_state["world"]
    assert name.startswith("glm:2,0.5,logit_logit_b0_b1")
    assert at.session_state["predictions"].digest == draw_predictions(name, 2000, seed=0).digest
    bad = _app(world="no-such-world")
    assert not bad.exception, bad.exception
    assert "predictions" not in bad.session_state
    warnings = [w.value.replace("\\", "") for w in bad.warning]
    assert sum("no-such-world" in w for w in warnings) == 1, warnings
