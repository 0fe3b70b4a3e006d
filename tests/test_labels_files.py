"""A labels file of words keeps its first row; a headerless matrix can be given class names.

The first line of a one-column labels file is a header only when the file holds one row
more than the predictions; ``--class-names`` (``class_names=``) names the columns of a
headerless matrix, so labels may be class names; long names are cut in lines of text.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

import core
from core.base.errors import DataError
from core.base.names import quoted
from core.cli import main

MATRIX = "0.3,0.7\n0.6,0.4\n0.8,0.2\n0.1,0.9\n"


@pytest.fixture
def matrix(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text(MATRIX)
    return path


def _labels(tmp_path, text, name="lab.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("True\nFalse\nTrue\nFalse\n", [1, 0, 1, 0]),  # the reproduction
        ("1\n0\n1\n0\n", [1, 0, 1, 0]),
        ("label\n1\n0\n1\n0\n", [1, 0, 1, 0]),  # a header: one row more than the predictions
        ("y\nTrue\nFalse\nTrue\nFalse\n", [1, 0, 1, 0]),
    ],
)
def test_a_labels_file_keeps_every_label(matrix, tmp_path, text, want):
    pred = core.load_predictions(matrix, labels=_labels(tmp_path, text))
    assert pred.n == 4 and pred.labels.tolist() == want


def test_word_labels_from_an_open_file_keep_their_first_row(matrix, tmp_path):
    path = _labels(tmp_path, "True\nFalse\nTrue\nFalse\n")
    with open(path, "rb") as fh:
        assert core.load_predictions(matrix, labels=fh).labels.tolist() == [1, 0, 1, 0]
    data = io.BytesIO(b"True\nFalse\nTrue\nFalse\n")
    assert core.load_predictions(matrix, labels=data).n == 4


def test_a_labels_file_two_rows_short_is_still_refused(matrix, tmp_path):
    with pytest.raises(DataError, match="4 rows but the labels file lab.csv has 2"):
        core.load_predictions(matrix, labels=_labels(tmp_path, "True\nFalse\nTrue\n"))


def test_class_names_name_a_headerless_matrix(capsys, matrix, tmp_path):
    labels = _labels(tmp_path, "dog\ncat\ncat\ndog\n")
    with pytest.raises(DataError, match="do not match any class name"):
        core.load_predictions(matrix, labels=labels)
    pred = core.load_predictions(matrix, labels=labels, class_names=["cat", "dog"])
    assert pred.class_names == ("cat", "dog") and pred.labels.tolist() == [1, 0, 0, 1]
    code = main(["metrics", str(matrix), "--labels", str(labels), "--class-names", "cat,dog"])
    assert code == 0
    assert "4 rows, 2 classes" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (
            "cat",
            "1 class names given for 2 classes; give one name per class, in column order, "
            "with --class-names.",
        ),
        ("cat,cat", "The class names must differ: 'cat' is given twice in --class-names."),
    ],
)
def test_bad_class_names_are_one_line(capsys, matrix, tmp_path, names, message):
    labels = _labels(tmp_path, "dog\ncat\ncat\ndog\n")
    assert main(["lint", str(matrix), "--labels", str(labels), "--class-names", names]) == 2
    assert capsys.readouterr().err.strip() == f"calibscope: error: {message}"


def test_a_long_model_name_is_cut_in_the_lint_text(capsys, tmp_path):
    rng = np.random.default_rng(0)
    long = "m" * 1000
    lines = ["p,label,model"] + [
        f"{p:.3f},{int(rng.uniform() < p)},{long if i < 50 else 'b'}"
        for i, p in enumerate(rng.uniform(size=100))
    ]
    path = tmp_path / "big.csv"
    path.write_text("\n".join(lines) + "\n")
    assert main(["lint", str(path)]) == 0
    out = capsys.readouterr().out
    assert long not in out
    assert f"model {quoted(long)} (n = 50)" in out
    assert max(len(line) for line in out.splitlines()) < 300


def test_quoted_cuts_long_names_only():
    assert quoted("resnet") == "'resnet'"
    assert quoted("x" * 80) == repr("x" * 80)
    assert quoted("x" * 81) == f"'{'x' * 80}…' (81 characters)"


# ----------------------------------------------------------------------------- two label sources


def _own(tmp_path, labels, name="own.csv", model=None):
    lines = ["p,label" + (",model" if model else "")]
    for p, y in zip([0.2, 0.7, 0.4, 0.9], labels, strict=True):
        lines.append(f"{p},{y}" + (f",{model}" if model else ""))
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_labels_file_contradicting_the_label_column_is_refused(capsys, tmp_path):
    data = _own(tmp_path, [0, 1, 0, 1])
    flipped = _labels(tmp_path, "1\n0\n1\n0\n", "y.csv")
    with pytest.raises(
        DataError,
        match=r"own label column 'label' and the labels file y.csv "
        r"disagree on 4 of 4 rows",
    ):
        core.load_predictions(data, labels=flipped)
    assert main(["lint", str(data), "--labels", str(flipped)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "drop the column or --labels" in err


def test_an_agreeing_label_column_is_a_warning(tmp_path):
    data = _own(tmp_path, [0, 1, 0, 1])
    pred = core.load_predictions(data, labels=_labels(tmp_path, "0.0\n1.0\n0.0\n1.0\n", "y.csv"))
    found = {f.code: f for f in pred.lint.findings}
    assert found["label-column-unused"].severity == "warning"
    assert "agree on every row" in found["label-column-unused"].message
    assert "ignored-columns" not in found


def test_several_files_check_each_label_column(tmp_path):
    a = _own(tmp_path, [0, 1, 0, 1], "a.csv")
    b = _own(tmp_path, [1, 0, 1, 0], "b.csv")  # the file b: its labels are 1 − y
    labels = _labels(tmp_path, "0\n1\n0\n1\n", "y.csv")
    with pytest.raises(DataError, match="b.csv's own label column 'label' and the labels file"):
        core.load_models([str(a), str(b)], labels=str(labels))


def test_a_model_column_inside_one_of_several_files_is_reported(tmp_path):
    a = _own(tmp_path, [0, 1, 0, 1], "a.csv", model="foo")
    b = _own(tmp_path, [0, 1, 1, 1], "b.csv")
    pred = core.load_models([str(a), str(b)])
    assert pred.models == ("a", "b")
    warned = [f for f in pred.lint.findings if f.code == "model-column-unused"]
    assert len(warned) == 1 and warned[0].severity == "warning"
    assert "(model 'foo') was not used" in warned[0].message and "named 'a'" in warned[0].message
