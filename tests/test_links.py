"""Links that reproduce: a copied URL names its data on every page; other data is said, not hidden."""

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
RELIABILITY = "app_pages/reliability.py"
DATA = "app_pages/data.py"
SAMPLE = "breast-cancer (binary)"
TIMEOUT = 60


@pytest.fixture(scope="module", autouse=True)
def _sample_available():
    from dashboard.state import sample_catalog

    if SAMPLE not in sample_catalog():
        pytest.skip("the bundled breast-cancer sample is missing")


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at


def _csv(n: int, seed: int, models: tuple[str, ...] = ()) -> bytes:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    frame = pd.DataFrame({"p": p.round(6), "label": (rng.uniform(size=n) < p).astype(int)})
    if models:
        frame["model"] = [models[i % len(models)] for i in range(n)]
    return frame.to_csv(index=False).encode()


def _upload(at: AppTest, data: bytes, name: str = "preds.csv") -> AppTest:
    at.file_uploader(key="upload").set_value((name, data, "text/csv"))
    return at.run()


def _code(at: AppTest) -> str:
    return at.session_state["predictions"].digest[:12]


def _param(at: AppTest, key: str) -> str | None:
    value = at.query_params.get(key)
    if isinstance(value, list):
        return value[-1] if value else None
    return value


def _notes(at: AppTest) -> list[str]:
    return [plain(w.value) for w in [*at.warning, *at.sidebar.warning]]


def _expected_code(data: bytes) -> str:
    from core.data import load_predictions
    from dashboard.state import KEEP_COLUMNS

    return load_predictions(data, name="x.csv", keep_columns=KEEP_COLUMNS).digest[:12]


def test_a_sample_stays_in_the_link_on_every_page():
    at = _app().run()
    at.selectbox(key="sample").set_value(SAMPLE).run()
    code = _code(at)
    assert _param(at, "sample") == SAMPLE and _param(at, "data") == code
    at.switch_page(RELIABILITY)
    at.query_params.clear()  # Streamlit drops a page's parameters when another page opens
    at.run()
    assert not at.exception
    assert _param(at, "sample") == SAMPLE and _param(at, "data") == code
    assert not _notes(at)


def test_an_upload_puts_its_fingerprint_in_the_link():
    data = _csv(400, 1)
    at = _upload(_app().run(), data)
    assert _param(at, "data") == _expected_code(data)
    assert _param(at, "sample") is None
    at.switch_page(RELIABILITY)
    at.query_params.clear()
    at.run()
    assert _param(at, "data") == _expected_code(data)


def test_a_link_to_an_upload_says_the_data_is_missing_then_other_then_matches():
    right, wrong = _csv(400, 1), _csv(400, 2)
    code = _expected_code(right)
    at = _app(data=code, n_bins="7").run()
    (note,) = [w for w in _notes(at) if "link was made" in w]
    assert "an uploaded file" in note and code in note and "not loaded here" in note
    assert _param(at, "data") == code  # nothing loaded: the link keeps what it names
    _upload(at, wrong, "wrong.csv")
    (note,) = [w for w in _notes(at) if "link was made" in w]
    assert "other data" in note and _expected_code(wrong) in note and "wrong.csv" in note
    assert _param(at, "data") == _expected_code(wrong)  # the link now names what is shown
    _upload(at, right, "right.csv")
    assert not [w for w in _notes(at) if "link was made" in w]
    assert at.sidebar.number_input(key="n_bins").value == 7  # the link's options stayed


def test_a_link_to_a_sample_loads_it_and_checks_its_fingerprint():
    at = _app().run()
    at.selectbox(key="sample").set_value(SAMPLE).run()
    code = _code(at)
    same = _app(sample=SAMPLE, data=code).run()
    assert _code(same) == code and not [w for w in _notes(same) if "link was made" in w]
    other = _app(sample=SAMPLE, data="0123456789ab").run()
    (note,) = [w for w in _notes(other) if "link was made" in w]
    assert "different version" in note and code in note
    # the note can be dismissed
    other.button(key="link_data_dismiss").click().run()
    assert not [w for w in _notes(other) if "link was made" in w]


def test_a_link_to_a_sample_not_bundled_here_says_what_is_missing():
    at = _app(sample="no-such-sample", data="0123456789ab").run()
    assert not at.exception
    notes = _notes(at)
    assert any("not bundled here" in w for w in notes)
    (note,) = [w for w in notes if "link was made" in w]
    assert "no-such-sample" in note and "0123456789ab" in note and "not loaded here" in note


def test_a_stale_model_in_the_link_is_cleared_with_a_note():
    at = _app(model="no-such-model", data="0123456789ab").run()
    _upload(at, _csv(300, 3), "one.csv")
    notes = [w for w in _notes(at) if "no-such-model" in w]
    assert notes and "one model" in notes[0]
    assert _param(at, "model") is None
    assert not at.exception


def test_the_model_of_the_data_loaded_before_is_cleared_with_a_note():
    at = _app().run()
    _upload(at, _csv(400, 4, ("alpha", "beta")), "two.csv")
    at.sidebar.selectbox(key="model").set_value("beta").run()
    _upload(at, _csv(400, 5, ("gamma", "delta")), "other.csv")
    assert not at.exception
    notes = [w for w in _notes(at) if "beta" in w]
    assert notes and "gamma" in notes[0]
    assert at.sidebar.selectbox(key="model").value == "gamma"


# ----------------------------------------------------------------------------- page controls


def test_an_invalid_value_of_a_page_control_gets_a_note_not_a_silent_reset():
    at = _app(bias_source="bogus", bias_norm="7").run()
    at.switch_page("app_pages/bias.py").run()
    assert not at.exception
    notes = _notes(at)
    (source,) = [w for w in notes if "bias_source = “bogus”" in w]
    assert "Preset world (known truth)" in source  # the default, as the control shows it
    assert any("bias_norm = “7”" in w for w in notes)
    assert at.radio(key="bias_source").value == "world"
    assert "bias_source" not in at.query_params  # the refused value left the link


def test_test_pickers_show_labels_and_the_link_keeps_registry_names():
    from core.analyses.calibration_tests import TESTS

    at = _app(sample=SAMPLE, compare_resamples="0", compare_test="no-such-test").run()
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception
    assert any("compare_test = “no-such-test”" in w for w in _notes(at))
    picker = at.selectbox(key="compare_test")
    assert "none" in picker.options
    assert TESTS.get("hosmer-lemeshow").label in picker.options
    assert not set(picker.options) & set(TESTS.names())  # no registry name on the control
    picker.set_value("hosmer-lemeshow").run()
    assert _param(at, "compare_test") == "hosmer-lemeshow"


def test_a_multiselect_link_keeps_its_valid_values_and_names_the_others():
    at = _app(sample=SAMPLE, compare_resamples="0")
    at.query_params["compare_metrics"] = ["plugin@2", "bogus@9", "brier"]
    at.run()
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception
    assert at.multiselect(key="compare_metrics").value == ["plugin@2", "brier"]
    assert any("“bogus@9”" in w for w in _notes(at))
    assert at.query_params["compare_metrics"] == ["plugin@2", "brier"]


def test_sidebar_controls_show_labels_and_the_link_keeps_codes():
    at = _app(estimator="skce-uq", norm="inf").run()
    assert not at.exception and not _notes(at)
    sb = at.sidebar
    estimator = sb.selectbox(key="estimator")
    assert estimator.value == "skce-uq"
    assert "SKCE (unbiased, quadratic)" in estimator.options
    assert "skce-uq" not in estimator.options and "plugin" not in estimator.options
    assert "ℓ∞ (max CE)" in sb.selectbox(key="norm").options
    assert "inf" not in sb.selectbox(key="norm").options
    sb.selectbox(key="binning").set_value("equal-mass").run()
    assert _param(at, "binning") == "equal-mass"
    assert _param(at, "estimator") == "skce-uq" and _param(at, "norm") == "inf"
    # back to the default: the parameter leaves the link
    sb.selectbox(key="binning").set_value("equal-width").run()
    assert _param(at, "binning") is None


@pytest.mark.parametrize("raw", [["0", "50"], ["9", "3"], ["a", "b"], ["5"]])
def test_a_bad_range_in_the_link_gets_a_note(raw):
    at = _app(sample=SAMPLE, n_resamples="0")
    at.query_params["estimators_bins_range"] = raw
    at.run()
    at.switch_page("app_pages/estimators.py").run()
    assert not at.exception
    assert any("The link sets estimators_bins_range" in w for w in _notes(at))
    assert at.slider(key="estimators_bins_range").value == (2, 50)


def test_a_good_range_in_the_link_is_used():
    at = _app(sample=SAMPLE, n_resamples="0")
    at.query_params["estimators_bins_range"] = ["3", "20"]
    at.run()
    at.switch_page("app_pages/estimators.py").run()
    assert not at.exception and not _notes(at)
    assert at.slider(key="estimators_bins_range").value == (3, 20)


def test_recalibrator_settings_keep_registry_names_in_the_link():
    at = _app(sample=SAMPLE, n_resamples="0", **{"recal_scaling-binning_mode": "three-splits"})
    at.run()
    at.switch_page("app_pages/recalibration.py").run()
    assert not at.exception
    mode = at.selectbox(key="recal_scaling-binning_mode")
    assert mode.value == "three-splits"
    assert "three disjoint splits (theory)" in mode.options and "three-splits" not in mode.options
    assert _param(at, "recal_scaling-binning_mode") == "three-splits"


def test_the_bootstrap_interval_comes_from_the_link_and_reaches_the_numbers():
    from core.analyses.analysis import AnalysisConfig, analyze
    from core.base.numbers import format_interval

    at = _app(sample=SAMPLE, bootstrap_interval="basic", n_resamples="200").run()
    at.switch_page(RELIABILITY).run()
    assert not at.exception and not _notes(at)
    control = at.sidebar.selectbox(key="bootstrap_interval")
    assert control.value == "basic" and "Basic (pivotal)" in control.options
    captions = " ".join(plain(c.value) for c in at.caption)
    assert "basic bootstrap interval" in captions
    assert "basic (pivotal) bootstrap intervals" in captions
    pred = at.session_state["predictions"]
    config = AnalysisConfig(lens="binary", n_resamples=200, bootstrap_interval="basic")
    part = pred.by_model()[at.session_state["model"]] if pred.model is not None else pred
    head = analyze(part, config).headline_interval.confidence_interval
    assert format_interval(head.low, head.high) in captions
    control.set_value("percentile").run()
    assert _param(at, "bootstrap_interval") is None
    assert "basic bootstrap interval" not in " ".join(plain(c.value) for c in at.caption)
