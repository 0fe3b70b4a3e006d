"""One message source, three phrasings: the API's arguments, the CLI's flags, the Data page's controls."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from core.base.errors import (
    ARGUMENTS,
    SURFACES,
    CalibscopeError,
    ConfigError,
    DataError,
    arg,
    phrase,
    render,
)
from core.cli import main
from core.data import ColumnError, load_models, load_predictions

ROOT = Path(__file__).resolve().parents[1]
NOT_SUMMING = b"a,b,label\n0.2,0.3,0\n0.5,0.5,1\n0.6,0.4,0\n"
MISSING = b"p,label\n0.2,0\nnan,1\n0.5,1\n"
NO_LABEL = b"p,q\n0.2,0.8\n0.4,0.6\n"
API_WORDS = ("renormalize=True", "drop_missing=True", "label_column=", "prob_columns=", "labels=")
CONTROLS = ("0x1e", "\x1e", "\x1d", "\x1f")


def _error(data: bytes) -> CalibscopeError:
    options = {"prob_columns": ["a", "b"]} if data is NOT_SUMMING else {}
    with pytest.raises(CalibscopeError) as info:
        load_predictions(data, name="bad.csv", **options)
    return info.value


# ----------------------------------------------------------------------------- the source


def test_every_option_has_a_phrase_on_every_surface():
    for name, words in ARGUMENTS.items():
        assert set(words) == set(SURFACES), name
        marked = f"Use {arg(name)}."
        assert render(marked, "api") == f"Use {words['api']}."
        assert render(marked, "cli") == f"Use {words['cli']}."
        assert render(marked, "ui") == f"Use {words['ui']}."
    assert render(arg("label_column", 7), "api") == "label_column=7"
    assert render(arg("label_column", 7), "cli") == "--label-column 7"
    assert render(arg("positive_class", "'yes'"), "ui").endswith(
        "box in the column-mapping expander on the Data page ('yes')"
    )
    with pytest.raises(KeyError):
        arg("no_such_option")
    with pytest.raises(ValueError, match="surface"):
        render("x", "web")


def test_str_is_the_api_phrasing_and_the_template_survives_pickling():
    exc = DataError(f"Load with {arg('renormalize')}.", rows=(3,))
    assert str(exc) == "Load with renormalize=True."
    again = pickle.loads(pickle.dumps(exc))
    assert phrase(again, "cli") == "Load with --renormalize." and again.rows == (3,)
    col = ColumnError(f"Use {arg('label_column')}.", argument="label_column", candidates=("a",))
    again = pickle.loads(pickle.dumps(col))
    assert phrase(again, "ui").startswith("Use the “Label column” choice") and again.argument == (
        "label_column"
    )
    assert pickle.loads(pickle.dumps(ConfigError("plain"))).args == ("plain",)
    assert phrase(RuntimeError("other"), "ui") == "other"  # not a core error: as it is
    assert phrase(exc.prefixed("f.csv: "), "api") == "f.csv: Load with renormalize=True."


# ----------------------------------------------------------------------------- API


@pytest.mark.parametrize(
    ("data", "api"),
    [
        (NOT_SUMMING, "renormalize=True"),
        (MISSING, "drop_missing=True"),
        (NO_LABEL, "label_column="),
    ],
)
def test_the_api_names_its_arguments(data, api):
    exc = _error(data)
    assert api in str(exc)
    assert not any(c in str(exc) for c in CONTROLS[1:])
    assert "--" not in str(exc) and "column-mapping" not in str(exc)


def test_several_files_keep_the_phrasing_behind_the_file_name():
    with pytest.raises(CalibscopeError) as info:
        load_models([("one.csv", MISSING), ("two.csv", MISSING)])
    assert str(info.value).startswith("one.csv: ")
    assert "--drop-missing" in phrase(info.value, "cli")


# ----------------------------------------------------------------------------- CLI


@pytest.mark.parametrize(
    ("data", "flag"),
    [(NOT_SUMMING, "--renormalize"), (MISSING, "--drop-missing"), (NO_LABEL, "--label-column")],
)
def test_the_cli_names_its_flags(capsys, tmp_path, data, flag):
    path = tmp_path / "bad.csv"
    path.write_bytes(data)
    options = ["--prob-columns", "a,b"] if data is NOT_SUMMING else []
    assert main(["metrics", str(path), *options]) == 2
    err = capsys.readouterr().err
    assert flag in err
    assert not any(word in err for word in API_WORDS), err


# ----------------------------------------------------------------------------- the Data page


@pytest.mark.parametrize(
    ("data", "control"),
    [
        (NOT_SUMMING, "“Renormalise rows that do not sum to 1” checkbox"),
        (MISSING, "“Drop rows with missing values” checkbox"),
        (NO_LABEL, "“Label column” choice"),
    ],
)
def test_the_data_page_names_its_controls(data, control):
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    from dashboard.text import plain

    at = AppTest.from_file(str(ROOT / "dashboard" / "app.py"), default_timeout=60).run()
    at.file_uploader(key="upload").set_value(("bad.csv", data, "text/csv")).run()
    if data is NOT_SUMMING:  # choose the columns in the mapping expander, as a user would
        at.multiselect(key="map_probs").set_value(["a", "b"]).run()
    assert not at.exception
    errors = [plain(e.value) for e in at.error]
    (said,) = [e for e in errors if "bad.csv was not loaded" in e]
    assert control in said and "column-mapping expander" in said
    assert not any(word in said for word in API_WORDS), said
    assert "--" not in said
    # the mapping expander says which control to set, by its label
    if data is NO_LABEL:
        assert any("Label column (below)" in plain(w.value) for w in at.warning)


# ----------------------------------------------------------------------------- lint findings


def test_lint_findings_are_phrased_per_surface_too():
    pred = load_predictions(MISSING, name="m.csv", drop_missing=True)
    (finding,) = [f for f in pred.lint if f.code == "missing-values"]
    assert "(drop_missing=True)" in finding.message  # the API's words, as before
    assert "(--drop-missing)" in finding.phrased("cli")
    assert "“Drop rows with missing values” checkbox" in finding.phrased("ui")
    frame = pred.lint.to_frame("ui")
    assert "checkbox" in frame.loc[frame.code == "missing-values", "message"].iloc[0]
    assert not any(c in m for m in pred.lint.to_frame().message for c in CONTROLS[1:])
    # several models: the model's name goes before the message on every surface
    both = load_models([("one.csv", MISSING), ("two.csv", MISSING)], drop_missing=True)
    (shared,) = [f for f in both.lint if f.code == "missing-values"]
    assert shared.message.startswith("every model: ")
    assert shared.phrased("cli").startswith("every model: ") and "--drop-missing" in (
        shared.phrased("cli")
    )


def test_the_cli_lint_names_its_flags(capsys, tmp_path):
    path = tmp_path / "m.csv"
    path.write_bytes(MISSING)
    main(["lint", str(path), "--drop-missing"])
    out = capsys.readouterr().out
    assert "--drop-missing" in out and "drop_missing=True" not in out


def test_the_logits_finding_asks_each_surface_for_what_it_has():
    # negative scores are read as logits; the way back to "as they are" differs per surface
    pred = load_predictions(b"p,label\n-0.5,0\n1.5,1\n0.2,1\n", name="neg.csv")
    finding = next(f for f in pred.lint.findings if f.code == "logits-converted")
    assert "load with logits=False" in finding.message
    assert "--logits no" in finding.phrased("cli") and "logits=False" not in finding.phrased("cli")
    ui = finding.phrased("ui")
    assert "logits=False" not in ui and "--logits" not in ui and "correct them in the file" in ui
    assert not any(c in ui for c in CONTROLS)
