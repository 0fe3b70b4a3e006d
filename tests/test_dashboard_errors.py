"""AppTest: the dashboard after bad input says what happened, in words, never a traceback.

Malformed values in the link, a model too small for the Bias page, a refused upload after a
good one, and any error of a core call on any page.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from dashboard.text import plain  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
PAGES = (
    "app_pages/data.py",
    "app_pages/reliability.py",
    "app_pages/estimators.py",
    "app_pages/tests.py",
    "app_pages/bias.py",
    "app_pages/recalibration.py",
    "app_pages/validity.py",
    "app_pages/compare.py",
    "app_pages/report.py",
)


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    return at


def _csv(n: int = 200, seed: int = 0, models: tuple[str, ...] = ()) -> bytes:
    rng = np.random.default_rng(seed)
    frames = []
    for model in models or (None,):
        p = rng.uniform(0.05, 0.95, n)
        frame = pd.DataFrame({"p": p.round(6), "label": (rng.uniform(size=n) < p).astype(int)})
        if model is not None:
            frame["model"] = model
        frames.append(frame)
    return pd.concat(frames).to_csv(index=False).encode()


def _upload(at: AppTest, data: bytes, name: str) -> AppTest:
    at.file_uploader(key="upload").set_value((name, data, "text/csv"))
    return at.run()


def _warnings(at: AppTest) -> list[str]:
    return [plain(w.value) for w in at.warning]


# ----------------------------------------------------------------------------- the link


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("seed", "1e400"),  # an infinite integer: Streamlit itself raises on it
        ("seed", "-1e400"),
        ("seed", "99999999999999999999999"),
        ("seed", "-1"),
        ("seed", "abc"),
        ("seed", ""),
        ("n_bins", "-3"),
        ("n_bins", "2.5"),
        ("n_resamples", "nan"),
        ("confidence_level", "7"),
        ("confidence_level", "inf"),
        ("lens", "bogus"),
        ("consistency_band", "maybe"),
    ],
)
def test_a_malformed_value_in_the_link_falls_back_with_a_warning(key, value):
    from dashboard.state import config_defaults

    at = _app(**{key: value}).run()
    assert not at.exception, at.exception
    default = config_defaults()[key]
    if key == "lens":
        assert at.sidebar.selectbox(key=key).value == default
    else:
        assert at.session_state[key] == default
    said = [w for w in _warnings(at) if f"The link sets {key} = “{value}”" in w]
    assert len(said) == 1, _warnings(at)
    if key == "lens":  # the control shows the lens's label
        from core.stats.lenses import LENSES

        assert f"default, {LENSES.get(default).label}" in said[0]
    elif key == "consistency_band":  # a toggle is on or off
        assert f"default, {'on' if default else 'off'}" in said[0]
    else:
        assert f"default, {default}" in said[0]
    # the warning stays beside the widget until the user sets it
    at.run()
    assert any(f"The link sets {key}" in w for w in _warnings(at))
    if key == "seed":
        at.sidebar.number_input(key="seed").set_value(5).run()
        assert not any("The link sets seed" in w for w in _warnings(at))
        assert at.session_state["seed"] == 5


def test_valid_values_in_the_link_are_used_without_a_warning():
    at = _app(seed="7", n_bins="20", confidence_level="0.9", lens="classwise").run()
    assert not at.exception and not _warnings(at)
    assert at.session_state["seed"] == 7 and at.session_state["n_bins"] == 20


def test_the_link_takes_every_number_of_bins_the_cli_and_api_take():
    # one maximum everywhere (core.base.options.N_BINS): 5,000 bins was refused by the sidebar
    from core.analyses.analysis import AnalysisConfig
    from core.base.options import N_BINS

    top = N_BINS.maximum
    at = _app(n_bins="5000").run()
    assert not at.exception and not _warnings(at)
    assert at.session_state["n_bins"] == 5000
    assert AnalysisConfig(n_bins=top).n_bins == top
    assert at.sidebar.number_input(key="n_bins").max == top
    at = _app(n_bins=str(top + 1)).run()
    assert any(f"The link sets n_bins = “{top + 1}”" in w for w in _warnings(at))


def test_page_numbers_in_the_link_are_checked_too():
    at = _app(validity_n="1e400", validity_alpha="-2").run()
    at.switch_page("app_pages/validity.py").run()
    assert not at.exception, at.exception
    assert at.number_input(key="validity_n").value == 1000
    warned = " ".join(_warnings(at))
    assert "validity_n = “1e400”" in warned and "validity_alpha = “-2”" in warned


def test_an_unknown_sample_in_the_link_is_named():
    at = _app(sample="no such sample").run()
    assert not at.exception
    assert any("“no such sample”, which is not bundled" in w for w in _warnings(at))


# ----------------------------------------------------------------------------- Bias vs n


@pytest.mark.parametrize("n", [2, 12, 19])
def test_bias_page_with_a_tiny_model_explains_instead_of_failing(n):
    at = _upload(_app().run(), _csv(n=n), "tiny.csv")
    at.switch_page("app_pages/bias.py").run()
    assert not at.exception, at.exception
    assert any(f"has {n} rows: simulating from it needs at least 20" in w for w in _warnings(at))
    assert at.radio(key="bias_source").options == ["Preset world (known truth)"]
    assert any("Fit diagnostics need at least 20 rows" in i.value for i in at.info)
    # the preset worlds still run
    at.multiselect(key="bias_ns").set_value([100])
    at.number_input(key="bias_replicates").set_value(10)
    at.button(key="FormSubmitter:bias_form-Run simulation").click().run()
    assert not at.exception and at.get("plotly_chart")


def test_bias_page_with_one_small_model_of_several():
    data = _csv(n=200, models=("big",)) + _csv(n=10, models=("small",)).split(b"\n", 1)[1]
    at = _upload(_app().run(), data, "two.csv")
    at.sidebar.selectbox(key="model").set_value("small").run()
    at.switch_page("app_pages/bias.py").run()
    assert not at.exception, at.exception
    assert any("model small) has 10 rows" in w for w in _warnings(at))


# ----------------------------------------------------------------------------- refused upload


def test_a_refused_upload_says_what_is_still_loaded():
    at = _upload(_app().run(), _csv(n=150), "good.csv")
    assert not at.error
    at = _upload(at, b"\x00\x01 not a table \xff", "broken.csv")
    assert not at.exception
    (error,) = at.error
    assert plain(error.value).startswith("broken.csv was not loaded")
    assert any(
        w.startswith("Still showing **good.csv**, the data loaded before") for w in _warnings(at)
    )
    # the summary and the lint box name the data they are about
    assert any("Summary · good.csv" in plain(s.value) for s in at.subheader)
    assert any("no problems in good.csv" in plain(s.value) for s in at.success)
    assert at.session_state["predictions"].n == 150
    assert "good.csv" in plain(at.sidebar.caption[0].value)
    # a good file clears it all
    at = _upload(at, _csv(n=120, seed=1), "better.csv")
    assert not at.error and not any("Still showing" in w for w in _warnings(at))
    assert at.session_state["predictions"].n == 120


def test_a_refused_first_upload_says_nothing_is_loaded():
    at = _upload(_app().run(), b"\x00\x01 not a table \xff", "broken.csv")
    assert not at.exception and at.error
    assert any("Nothing is loaded." in i.value for i in at.info)


# ----------------------------------------------------------------------------- any error


def test_no_page_shows_a_traceback_when_a_core_call_fails(monkeypatch):
    from dashboard import cache

    at = _upload(_app(n_resamples="20").run(), _csv(n=150, models=("a", "b")), "two.csv")
    assert not at.exception

    def broken(*args, **kwargs):
        raise RuntimeError("boom in a core call")

    monkeypatch.setattr(cache, "compute", broken)
    monkeypatch.setattr(cache, "cached", lambda *a, **k: None)
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
        said = [plain(e.value) for e in at.error]
        assert any("failed unexpectedly (RuntimeError)" in e for e in said), page
        # the message stays in the server log (the app shows no error details)
        assert not any("boom" in e for e in said), page


def test_a_calibscope_error_reads_as_its_message(monkeypatch):
    from core.base.errors import DataError
    from dashboard import cache

    at = _upload(_app(n_resamples="0").run(), _csv(n=150), "one.csv")

    def refused(*args, **kwargs):
        raise DataError("these rows cannot be analysed: [why](https://x.example)")

    monkeypatch.setattr(cache, "compute", refused)
    at.switch_page("app_pages/reliability.py").run()
    assert not at.exception
    assert [plain(e.value) for e in at.error] == [
        "these rows cannot be analysed: [why](https://x.example)"
    ]
