"""AppTest: the Bias page (presets without data, simulations, cache, stop notice, fit diagnostics)."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.io
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

import core  # noqa: E402
from core.bias import EstimatorSpec  # noqa: E402
from core.worlds import PRESET_WORLDS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
PAGE = "app_pages/bias.py"
TIMEOUT = 180


def _page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def _csv(n: int = 2000, seed: int = 3) -> bytes:
    f, y = PRESET_WORLDS["resnet152_imgnet"].sample(n, seed)
    # three classes: the top score f on a random class, the rest split evenly
    rng = np.random.default_rng(seed)
    top = rng.integers(0, 3, n)
    probs = np.repeat(((1 - f) / 2)[:, None], 3, axis=1)
    probs[np.arange(n), top] = f
    probs = np.clip(probs, 1e-12, None)
    probs /= probs.sum(1, keepdims=True)
    labels = np.where(y == 1, top, (top + 1 + rng.integers(0, 2, n)) % 3)
    frame = pd.DataFrame(probs, columns=["p_a", "p_b", "p_c"])
    frame["label"] = labels
    return frame.to_csv(index=False, float_format="%.15f").encode()


def _decode(values):
    if isinstance(values, dict) and "bdata" in values:
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
    return np.asarray(values)


def _figure(at: AppTest, i: int = 0):
    return plotly.io.from_json(at.get("plotly_chart")[i].proto.spec)


def _small_run(at: AppTest, **extra) -> AppTest:
    at.multiselect(key="bias_ns").set_value([200, 400])
    at.number_input(key="bias_replicates").set_value(40)
    for key, value in extra.items():
        at.radio(key=key).set_value(value) if key == "bias_source" else None
    at.button(key="FormSubmitter:bias_form-Run simulation").click().run()
    assert not at.exception, at.exception
    return at


def test_without_data_the_page_explains_and_presets_still_work():
    at = _page()
    assert at.title[0].value == "Bias vs n"
    assert any("No predictions are loaded" in i.value for i in at.info)
    assert at.radio(key="bias_source").options == ["Preset world (known truth)"]
    at.button(key="preset_fig1").click().run()
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown)
    mean = float(text.split("n = 200: **")[1].split(" %")[0])
    assert mean == pytest.approx(6.70, abs=0.25)  # Roelofs et al. Fig. 1 (digest §5.5: 6.70 %)
    assert at.status[-1].state == "complete"


def test_simulation_matches_core_and_is_cached():
    at = _small_run(_page())
    fig = _figure(at)
    assert len(fig.data) == 6  # one line per default estimator
    want = core.bias_vs_n(
        None, PRESET_WORLDS[at.selectbox(key="bias_world").value], ns=[200, 400],
        n_resamples=40, seed=0,
    )  # fmt: skip
    first = fig.data[0]
    assert first.name == want["label"].iloc[0] == "Plug-in binned (ECE), equal width, B = 15"
    np.testing.assert_allclose(_decode(first.y), 100 * want["bias"].iloc[:2].to_numpy(), rtol=1e-9)
    shown = next(df.value for df in at.dataframe if "bias" in df.value.columns)
    assert len(shown) == 12 and shown["reference_kind"].eq("true CE").all()
    # human labels, not the papers' shorthand ("plugin EW-15") or registry codes
    assert "estimator" not in shown.columns and "name" not in shown.columns
    assert shown["label"].iloc[0] == "Plug-in binned (ECE), equal width, B = 15"
    assert not shown["label"].str.contains("EW-|EM-").any()
    # one CSV button per table (the table's own, holding every column in the API's units)
    csv = [b.proto.label for b in at.get("download_button") if "CSV" in b.proto.label]
    assert csv == ["CSV"] * len(at.dataframe)
    # the tab opens with its finding: the estimator closest to the truth at the largest n
    texts = [m.value.replace("\\", "") for m in at.markdown]
    at_400 = want[want.n == 400].assign(gap=lambda t: t.bias.abs()).sort_values("gap")
    finding = next(t for t in texts if t.startswith("**At n = 400,"))
    assert "closest to the true CE" in finding and "over 40 datasets" in finding
    assert f"{100 * at_400.bias.iloc[0]:+.2g}"[:4] in finding.replace("−", "-")
    assert len(at.status) == 1 and at.status[0].state == "complete"
    at.run()  # a rerun uses the kept result: no new simulation, so no progress box
    assert not at.exception and len(at.status) == 0
    assert len(_figure(at).data) == 6


def test_stopped_simulation_is_reported():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page(PAGE)
    at.session_state["_cache_running"] = ("sim", "never finished")
    at.run()
    assert not at.exception
    assert any("stopped before it finished" in w.value for w in at.warning)


def test_heat_map_lesson_runs():
    at = _page()
    at.button(key="preset_bins-grow").click().run()
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "Least-biased number of bins per n" in text


def test_with_data_fitted_world_subsampling_and_fit_diagnostics():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.file_uploader(key="upload").set_value(("preds.csv", _csv(), "text/csv"))
    at.run()
    assert not at.exception, at.exception
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert len(at.radio(key="bias_source").options) == 3
    glm = next(df.value for df in at.dataframe if "aic" in df.value.columns)
    assert len(glm) == 12 and glm["aic"].is_monotonic_increasing
    at.radio(key="bias_source").set_value("subsample")
    _small_run(at)
    shown = next(df.value for df in at.dataframe if "bias" in df.value.columns)
    assert shown["reference_kind"].eq("full-data estimate").all()
    at.radio(key="bias_source").set_value("fitted")
    _small_run(at)
    shown = next(df.value for df in at.dataframe if "bias" in df.value.columns)
    assert shown["reference_kind"].eq("true CE of the fitted world").all()


def _world_label(key: str) -> str:
    return f"{key} — {PRESET_WORLDS[key].description}"


def _estimator_label(option: str) -> str:
    return EstimatorSpec.parse(option).label.replace("-15", "")


def test_settings_are_restored_from_the_url_and_presets_still_work():
    # every setting is in the URL (key = parameter name); this link carries the labels shown
    # in the controls, as links did before the URL held registry names
    url = {
        "bias_world": _world_label("kumar-sine"),
        "bias_estimators": [
            _estimator_label("plugin:equal-width"),
            _estimator_label("sweep:equal-mass"),
        ],
        "bias_ns": ["200", "400"],
        "bias_replicates": "40",
        "bias_n_bins": "10",
        "bias_norm": "ℓ1 (ECE)",
        "bias_dist_n": "400",
        "bias_hm_binning": "equal-mass",
        "bias_hm_value": "rmse",
        "bias_hm_reps": "100",
        "bias_tce_family": "Uniform(0, 1)",
        "bias_tce_est": _estimator_label("debiased:equal-mass"),
        "bias_tce_n": "500",
        "bias_tce_reps": "100",
        "bias_tce_obs": "4.5",
        "bias_pw_family": "Beta(2.8, 0.05) (CIFAR-10-like)",
        "bias_pw_est": [_estimator_label("plugin:equal-mass")],
        "bias_pw_reps": "100",
    }
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in url.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception

    def check() -> None:
        assert at.selectbox(key="bias_world").value == "kumar-sine"
        assert at.multiselect(key="bias_estimators").value == [
            "plugin:equal-width",
            "sweep:equal-mass",
        ]
        assert at.multiselect(key="bias_ns").value == [200, 400]
        assert at.number_input(key="bias_replicates").value == 40
        assert at.number_input(key="bias_n_bins").value == 10
        assert at.selectbox(key="bias_norm").value == "1"
        assert at.radio(key="bias_hm_binning").value == "equal-mass"
        assert at.radio(key="bias_hm_value").value == "rmse"
        assert at.number_input(key="bias_hm_reps").value == 100
        assert at.selectbox(key="bias_tce_family").value == "Uniform(0, 1)"
        assert at.selectbox(key="bias_tce_est").value == "debiased:equal-mass"
        assert at.number_input(key="bias_tce_n").value == 500
        assert at.number_input(key="bias_tce_reps").value == 100
        assert at.number_input(key="bias_tce_obs").value == 4.5
        assert at.selectbox(key="bias_pw_family").value == "Beta(2.8, 0.05) (CIFAR-10-like)"
        assert at.multiselect(key="bias_pw_est").value == ["plugin:equal-mass"]
        assert at.number_input(key="bias_pw_reps").value == 100

    check()
    # labels in the link (as older links have) are read; the link now holds registry names
    assert at.query_params["bias_estimators"] == ["plugin:equal-width", "sweep:equal-mass"]
    assert at.query_params["bias_norm"] == "1"
    assert at.query_params["bias_world"] == "kumar-sine"
    assert not at.status  # a shared link restores settings; it does not start a simulation
    # a teaching preset opens its lesson and leaves the URL's settings alone
    at.button(key="preset_fig1").click().run()
    assert not at.exception, at.exception
    assert any("n = 200: **" in m.value for m in at.markdown)
    check()
    # the restored settings drive the simulation; the view of one n comes from the URL too
    at.button(key="FormSubmitter:bias_form-Run simulation").click().run()
    assert not at.exception, at.exception
    shown = next(df.value for df in at.dataframe if "bias" in df.value.columns)
    assert len(shown) == 4 and set(shown["n"]) == {200, 400}
    assert at.selectbox(key="bias_dist_n").value == 400
    check()


def test_source_from_the_url_needs_data():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["bias_source"] = "Subsamples of my data"
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    # without data only preset worlds exist: the URL's value is ignored
    assert at.radio(key="bias_source").value == "world"
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["bias_source"] = "Subsamples of my data"
    at.run()
    at.file_uploader(key="upload").set_value(("preds.csv", _csv(600), "text/csv"))
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert at.radio(key="bias_source").value == "subsample"
