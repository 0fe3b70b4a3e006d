"""AppTest: the dashboard's Data and Reliability pages, state across pages, URL settings."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from core.base.numbers import format_number  # noqa: E402
from dashboard.text import plain  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
RELIABILITY = "app_pages/reliability.py"
DATA = "app_pages/data.py"
TIMEOUT = 60


def _binary_csv(n: int = 600, seed: int = 3) -> bytes:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**1.5).astype(int)  # over-confident: true rate below p
    return pd.DataFrame({"p": p.round(6), "label": y}).to_csv(index=False).encode()


def _multiclass_csv(n: int = 900, k: int = 3, seed: int = 4) -> bytes:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 0.7, size=n)
    y = np.array([rng.choice(k, p=row) for row in p])
    frame = pd.DataFrame(p, columns=[f"p_{c}" for c in "abc"[:k]])
    frame["label"] = y
    return frame.to_csv(index=False, float_format="%.10f").encode()


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at


def _upload(at: AppTest, data: bytes, name: str = "preds.csv") -> AppTest:
    at.file_uploader(key="upload").set_value((name, data, "text/csv"))
    return at.run()


def _decode(values):
    """Plotly ≥ 6 sends numeric arrays as base64 typed arrays."""
    if isinstance(values, dict) and "bdata" in values:
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
    return np.asarray(values)


def _charts(at: AppTest) -> dict[str, dict]:
    out = {}
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        out[chart.proto.id] = spec
    return out


def _chart_specs(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_default_page_renders_with_sidebar_controls():
    at = _app().run()
    assert not at.exception
    assert at.title[0].value == "Data"
    sb = at.sidebar
    assert sb.selectbox(key="lens").value == "top-label"
    assert sb.selectbox(key="binning").value == "equal-width"
    assert sb.selectbox(key="estimator").value == "plugin"
    assert sb.selectbox(key="norm").value == "1"
    assert sb.selectbox(key="tie_policy").value == "split"
    assert sb.number_input(key="n_bins").value == 15
    assert sb.number_input(key="seed").value == 0
    assert sb.number_input(key="n_resamples").value == 1000
    assert sb.selectbox(key="interval_method").value == "wilson"
    # options come from the registries
    from core.estimators import ESTIMATORS
    from core.stats.binning import BINNINGS

    # the controls show the registries' labels (the URL keeps their names)
    assert list(sb.selectbox(key="binning").options) == [e.label for e in BINNINGS]
    assert len(sb.selectbox(key="estimator").options) == len(ESTIMATORS)
    assert any("Nothing loaded" in i.value for i in at.info)


def test_reliability_without_data_explains_what_to_do():
    at = _app().run()
    at.switch_page(RELIABILITY).run()
    assert not at.exception
    assert any("No predictions are loaded" in i.value for i in at.info)


def test_upload_csv_shows_summary_and_lint():
    at = _upload(_app().run(), _binary_csv(600))
    assert not at.exception
    assert not at.error
    values = {m.label: m.value for m in at.metric}
    assert values["Rows (n)"] == "600"
    assert values["Classes (K)"] == "2"
    pred = at.session_state["predictions"]
    assert pred.n == 600 and pred.binary
    specs = _chart_specs(at)
    assert len(specs) == 2  # class balance + confidence histogram
    balance = specs[0]["data"]
    labels = pd.read_csv(io.BytesIO(_binary_csv(600)))["label"].to_numpy()
    assert_allclose(_decode(balance[0]["y"]), np.bincount(labels, minlength=2) / 600)


def test_sample_load_and_url():
    from dashboard.state import sample_catalog

    catalog = sample_catalog()
    if not catalog:
        pytest.skip("no bundled samples yet (sample_data catalog missing)")
    name = next(iter(catalog))
    at = _app().run()
    at.selectbox(key="sample").set_value(name).run()
    assert not at.exception
    assert at.session_state["predictions_source"] == f"sample: {name}"
    # a shared link with ?sample= reloads it, even straight onto the Reliability page
    at2 = _app(sample=name, n_resamples="0")
    at2.run()
    assert at2.session_state["predictions_source"] == f"sample: {name}"
    at2.switch_page(RELIABILITY).run()
    assert not at2.exception
    assert len(_chart_specs(at2)) == 1


def test_switch_pages_keeps_data_and_settings():
    at = _app(n_resamples="50").run()
    _upload(at, _binary_csv(500))
    at.sidebar.number_input(key="n_bins").set_value(7).run()
    digest = at.session_state["predictions_digest"]
    at.switch_page(RELIABILITY).run()
    assert not at.exception, at.exception
    assert at.session_state["predictions_digest"] == digest
    assert at.sidebar.number_input(key="n_bins").value == 7
    (spec,) = _chart_specs(at)
    names = [t.get("name") for t in spec["data"]]
    assert names[0] == "perfect calibration" and names[1].startswith("observed frequency")
    # the diagram's points are the analysis' bins (7 equal-width bins, the binary lens a
    # binary file opens on)
    from core.stats.binning import bin_stats

    assert at.sidebar.selectbox(key="lens").value == "binary"
    pred = at.session_state["predictions"]
    st = bin_stats(pred.probs[:, 1], pred.labels.astype(float), n_bins=7)
    ok = st.counts > 0
    assert_allclose(_decode(spec["data"][1]["x"]), st.mean_score[ok], rtol=1e-12)
    assert_allclose(_decode(spec["data"][1]["y"]), st.mean_label[ok], rtol=1e-12)
    assert_allclose(_decode(spec["data"][2]["y"]), st.counts)
    # back on the Data page the summary is still there without re-uploading
    at.switch_page(DATA).run()
    assert {m.label: m.value for m in at.metric}["Rows (n)"] == "500"


def test_query_params_initialise_widgets():
    at = _app(n_bins="20", binning="equal-mass", norm="2", seed="7", lens="classwise").run()
    assert not at.exception
    sb = at.sidebar
    assert sb.number_input(key="n_bins").value == 20
    assert sb.selectbox(key="binning").value == "equal-mass"
    assert sb.selectbox(key="norm").value == "2"
    assert sb.number_input(key="seed").value == 7
    assert sb.selectbox(key="lens").value == "classwise"


def test_broken_upload_shows_error_not_exception():
    at = _app().run()
    _upload(at, b"\x00\x01\x02 this is not a table \xff\xfe", name="broken.csv")
    assert not at.exception
    assert at.error, "a broken file must be explained with st.error"
    assert "broken.csv" in plain(at.error[0].value)
    assert "predictions" not in at.session_state or at.session_state["predictions"] is None


def test_probabilities_out_of_range_upload_is_explained():
    bad = b"p,label\n0.2,0\n1.7,1\n0.4,0\n-3,1\n"
    at = _upload(_app().run(), bad, name="bad.csv")
    assert not at.exception
    # either refused with a message, or converted as logits with a notice in the lint table
    if not at.error:
        pred = at.session_state["predictions"]
        codes = [f.code for f in pred.lint if "logit" in f.message.lower()]
        assert codes
        shown = at.dataframe[0].value
        assert set(codes) <= set(shown["code"])
        assert any(s.endswith(("warning", "info", "error")) for s in shown["severity"])


def test_classwise_grid_has_one_panel_per_class():
    at = _app(lens="classwise", n_resamples="0", n_bins="5").run()
    _upload(at, _multiclass_csv(900, 3))
    at.switch_page(RELIABILITY).run()
    assert not at.exception
    (spec,) = _chart_specs(at)
    assert len(spec["data"]) == 9  # diagonal + observed per class, then each class's band
    titles = [a["text"] for a in spec["layout"]["annotations"]]
    assert len(titles) == 3 and all("n = 900" in t for t in titles)
    # the bin table has one block of bins per class
    frame = at.dataframe[0].value
    assert set(frame["component"]) == set(at.session_state["predictions"].class_names)


def test_a_lens_the_data_cannot_have_falls_back_with_a_note():
    # the binary lens needs two classes: a 3-class file falls back to top-label, and says so
    at = _app(lens="binary", n_resamples="0").run()
    _upload(at, _multiclass_csv(300, 3))
    assert any("two classes" in t.value for t in at.toast), [t.value for t in at.toast]
    at.switch_page(RELIABILITY).run()
    assert not at.exception and not at.error
    assert at.sidebar.selectbox(key="lens").value == "top-label"


def test_incompatible_options_fall_back_with_a_note_and_keep_the_page():
    at = _app(estimator="sweep", binning="discrete", n_resamples="0").run()
    _upload(at, _binary_csv(300))
    at.switch_page(RELIABILITY).run()
    assert not at.exception and not at.error
    (note,) = [plain(w.value) for w in at.warning if "sweep" in plain(w.value)]
    assert "discrete" in note and "default headline estimator (plugin)" in note
    assert at.get("plotly_chart")  # the diagram and the tables stay
    assert at.session_state["estimator"] == "sweep"  # the user's choice is not overwritten
    # ℓ∞ with the debiased estimator, the same way
    at.sidebar.selectbox(key="binning").set_value("equal-width")
    at.sidebar.selectbox(key="estimator").set_value("debiased")
    at.sidebar.selectbox(key="norm").set_value("inf").run()
    assert not at.error and any("debiased" in plain(w.value) for w in at.warning)


def test_bins_suggestion_follows_gupta_ramdas():
    at = _app(n_bins="10").run()
    _upload(at, _binary_csv(5000))
    captions = " ".join(c.value for c in at.sidebar.caption)
    # n = 5000, alpha = 0.1: B = 10 gives eps = 0.0729, largest B with eps <= 0.1 is 17
    assert "ε ≈ 0.073" in captions and "**17**" in captions
    at.sidebar.button(key="use_suggested_bins").click().run()
    assert at.sidebar.number_input(key="n_bins").value == 17


def test_large_data_gets_fast_intervals_and_the_exact_bootstrap_on_a_click(monkeypatch):
    import core.analyses.analysis

    monkeypatch.setattr(core.analyses.analysis, "EXACT_BOOTSTRAP_WORK", 1_000)
    at = _app(n_resamples="20").run()
    _upload(at, _binary_csv(400))
    at.switch_page(RELIABILITY).run()
    assert not at.exception
    # 400 rows x 20 resamples is over the (patched) budget: the cell bootstrap at once
    assert any("cells" in c.value for c in at.caption)
    metrics = at.dataframe[1].value.set_index("metric")
    points = metrics["value"].to_numpy()
    assert metrics.loc[["plugin", "accuracy"], "low"].notna().all()
    assert (
        np.isnan(metrics.loc["sweep", "low"]) and "exact bootstrap" in metrics.loc["sweep", "note"]
    )
    at.button(key="run_bootstrap").click().run()
    assert not at.exception
    metrics = at.dataframe[1].value.set_index("metric")
    assert_allclose(metrics["value"], points, rtol=1e-12)  # the same point estimates
    ests = metrics.loc[["plugin", "sweep", "accuracy"]]
    assert ests["low"].notna().all() and (ests["low"] <= ests["value"]).all()
    assert any("bootstrap interval [" in c.value for c in at.caption)
    # the same options later are served from the cache without running again
    at.switch_page(DATA).run()
    at.switch_page(RELIABILITY).run()
    assert not at.status and any("exact bootstrap" in c.value for c in at.caption)


def test_headline_matches_calibration_error_and_metrics_have_intervals():
    from core.inference.calibration import calibration_error

    at = _app(n_resamples="100", lens="binary", estimator="debiased", norm="2").run()
    _upload(at, _binary_csv(800))
    at.switch_page(RELIABILITY).run()
    assert not at.exception
    pred = at.session_state["predictions"]
    expected = calibration_error(
        pred.probs[:, 1], pred.labels, estimator="debiased", norm=2, lens="binary"
    )
    tile = next(m for m in at.metric if "Debiased" in m.label)
    assert tile.value == format_number(expected.value)
    metrics = at.dataframe[1].value
    row = metrics[metrics["metric"] == "debiased"].iloc[0]
    assert_allclose(row["value"], expected.value, rtol=1e-12)
    assert row["low"] <= row["high"]


def test_model_picker_for_multi_model_files():
    rng = np.random.default_rng(5)
    n = 300
    frame = pd.DataFrame(
        {
            "model": np.repeat(["alpha", "beta"], n),
            "p": rng.uniform(size=2 * n).round(6),
            "label": rng.integers(0, 2, size=2 * n),
        }
    )
    at = _app(n_resamples="0").run()
    _upload(at, frame.to_csv(index=False).encode(), name="two_models.csv")
    assert not at.exception
    picker = at.sidebar.selectbox(key="model")
    assert list(picker.options) == ["All rows", "alpha", "beta"]
    assert picker.value == "alpha"
    assert {m.label: m.value for m in at.metric}["Rows (n)"] == "300"
    picker.set_value("All rows").run()
    assert {m.label: m.value for m in at.metric}["Rows (n)"] == "600"


def test_column_mapping_resolves_what_the_loader_cannot_infer():
    rng = np.random.default_rng(8)
    frame = pd.DataFrame(
        {"p": rng.uniform(size=200).round(5), "label": rng.choice(["sick", "well"], size=200)}
    )
    at = _upload(_app(n_resamples="0").run(), frame.to_csv(index=False).encode(), "strings.csv")
    assert not at.exception
    # the Data page speaks of its own control, not of the API's argument
    said = plain(at.error[0].value) if at.error else ""
    assert "“Positive class” box" in said and "positive_class" not in said
    choice = at.selectbox(key="map_positive_choice")
    assert list(choice.options) == ["(choose)", "sick", "well"]
    choice.set_value("sick").run()
    assert not at.exception and not at.error
    pred = at.session_state["predictions"]
    assert pred.n == 200
    # P(y=1) is the probability of "sick": label 1 exactly where the file says sick
    assert (pred.labels == (frame["label"] == "sick").to_numpy()).all()
    assert_allclose(pred.probs[:, 1], frame["p"])


def test_headerless_matrix_with_separate_labels_file():
    rng = np.random.default_rng(9)
    p = rng.dirichlet(np.ones(4), size=250)
    y = rng.integers(1, 5, size=250)  # 1-indexed, as in the CIFAR files
    matrix = pd.DataFrame(p).to_csv(index=False, header=False, float_format="%.12f").encode()
    labels = "\n".join(map(str, y)).encode() + b"\n"
    at = _app(n_resamples="0").run()
    at.file_uploader(key="upload_labels").set_value(("labels.csv", labels, "text/csv"))
    _upload(at, matrix, "probs.csv")
    assert not at.exception and not at.error
    pred = at.session_state["predictions"]
    assert pred.n == 250 and pred.n_classes == 4
    assert (pred.labels == y - 1).all()
    assert {m.label: m.value for m in at.metric}["Classes (K)"] == "4"


def test_page_specs_are_consistent():
    from dashboard.pages import PAGES

    assert sum(p.default for p in PAGES) == 1
    assert len({p.url_path for p in PAGES}) == len(PAGES)
    for spec in PAGES:
        assert (ROOT / "dashboard" / spec.file).is_file(), spec.file
        assert spec.icon.startswith(":material/") and spec.icon.endswith(":")


CIFAR = ROOT.parent / "shared" / "data" / "cifar10-14-networks"


@pytest.mark.data
def test_cifar_headerless_upload_with_labels_file():
    if not (CIFAR / "labels.csv").is_file():
        pytest.skip(f"CIFAR-10 predictions not found at {CIFAR}")
    at = _app(n_resamples="0", n_bins="15").run()
    at.file_uploader(key="upload_labels").set_value(
        ("labels.csv", (CIFAR / "labels.csv").read_bytes(), "text/csv")
    )
    _upload(at, (CIFAR / "densenet121.csv").read_bytes(), "densenet121.csv")
    assert not at.exception and not at.error
    pred = at.session_state["predictions"]
    assert pred.n_classes == 10 and pred.labels.min() == 0  # 1-indexed labels converted
    at.switch_page(RELIABILITY).run()
    assert not at.exception
    from core.inference.calibration import calibration_error

    expected = calibration_error(pred.probs, pred.labels, n_bins=15)
    tile = next(m for m in at.metric if "Plug-in" in m.label)
    assert tile.value == format_number(expected.value)


def test_several_files_are_several_models_sharing_one_labels_file():
    rng = np.random.default_rng(8)
    y = rng.integers(0, 3, 200)
    matrices = {m: rng.dirichlet(np.ones(3), 200) for m in ("resnet", "vgg")}

    def csv(a: np.ndarray) -> bytes:
        return pd.DataFrame(a).to_csv(index=False, header=False, float_format="%.12f").encode()

    at = _app().run()
    at.toggle(key="upload_several").set_value(True).run()
    at.file_uploader(key="upload_models").set_value(
        [(f"{m}.csv", csv(a), "text/csv") for m, a in matrices.items()]
    )
    at.file_uploader(key="upload_labels").set_value(
        ("labels.csv", "\n".join(map(str, y)).encode(), "text/csv")
    )
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    pred = at.session_state["predictions"]
    assert pred.models == ("resnet", "vgg") and pred.n == 400
    assert [m.value for m in at.metric if m.label == "Models"] == ["2"]
    # one file with other rows is named, and the data loaded before stays
    at.file_uploader(key="upload_models").set_value(
        [
            ("resnet.csv", csv(matrices["resnet"]), "text/csv"),
            ("short.csv", csv(matrices["vgg"][:150]), "text/csv"),
        ]
    )
    at.run()
    (message,) = [plain(e.value) for e in at.error]
    assert message.startswith("2 files (resnet.csv, short.csv) were not loaded: short.csv: ")
    assert "150 rows" in message
    assert at.session_state["predictions"].models == ("resnet", "vgg")


def test_binary_data_opens_on_the_binary_lens_and_multiclass_on_top_label():
    at = _app().run()
    assert at.selectbox(key="lens").value == "top-label"  # nothing loaded yet
    _upload(at, _binary_csv())
    assert not at.exception, at.exception
    assert at.selectbox(key="lens").value == "binary"
    _upload(at, _multiclass_csv(), name="three.csv")
    assert at.selectbox(key="lens").value == "top-label"  # the binary lens needs two classes
    at.selectbox(key="lens").set_value("classwise").run()
    _upload(at, _multiclass_csv(seed=9), name="other.csv")
    assert at.selectbox(key="lens").value == "classwise"  # the user's choice is kept
    # a lens in the link wins over the data's
    at = _app(sample="breast-cancer (binary)", lens="top-label").run()
    assert at.selectbox(key="lens").value == "top-label"
    at = _app(sample="breast-cancer (binary)").run()
    assert at.selectbox(key="lens").value == "binary"


def test_bins_suggestion_never_offers_a_useless_number_of_bins():
    # n = 569 (the breast-cancer sample's size): only B ≤ 2 reaches ε ≤ 0.1
    from core.stats.guarantees import largest_bins

    assert largest_bins(569, max_bins=1000) == 2
    at = _app().run()
    _upload(at, _binary_csv(569))
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "too few bins for a useful diagram" in captions
    assert not [b for b in at.sidebar.button if b.key == "use_suggested_bins"]


def test_missing_values_are_blank_cells_not_none():
    from dashboard.state import sample_catalog

    catalog = sample_catalog()
    if not catalog:
        pytest.skip("no bundled samples")
    name = [c for c in catalog if "10 classes" in c] or list(catalog)
    at = _app(sample=name[0], lens="classwise", n_resamples="0").run()
    at.switch_page(RELIABILITY).run()
    assert not at.exception, at.exception
    # the classwise bin table has empty bins (no mean score): the cell is blank, not "None"
    table = at.dataframe[0]
    assert table.value.isna().any().any()
    for frame in at.dataframe:
        assert frame.proto.HasField("placeholder") and frame.proto.placeholder == ""


def test_headline_says_when_its_interval_misses_the_estimate():
    """The plug-in ECE of the digits sample's logistic regression (classwise) lies below its
    percentile interval: the caption under the headline says why, in the tables' words."""
    from core.analyses.analysis import AnalysisConfig, analyze
    from core.data import load_predictions
    from core.stats.intervals import outside_note

    at = _app(sample="digits (10 classes)", lens="classwise", model="logistic-regression")
    at.run()
    at.switch_page(RELIABILITY).run()
    assert not at.exception
    path = Path(__file__).parents[1] / "sample_data" / "multiclass_digits.csv"
    part = load_predictions(path).by_model()["logistic-regression"]
    a = analyze(part, AnalysisConfig(lens="classwise"))
    ci = a.headline_interval.confidence_interval
    said = outside_note(a.headline.value, ci.low, ci.high)
    assert said  # 0.0050 against [0.0057, 0.0076]
    assert any(said in c.value for c in at.caption)
