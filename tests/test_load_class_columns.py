"""Loads that once went silently wrong: class columns, headerless words, column roles.

Each case is a file as a user would write it; the load must equal the ground truth or
raise a typed error that names what to pass.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core import load_predictions
from core.base.errors import DataError
from core.data.columns import ColumnError
from core.stream.analysis import analyze_stream

THREE = "0.5,0.3,0.2,cat\n0.1,0.7,0.2,dog\n0.6,0.2,0.2,cat\n"
PROBS = np.array([[0.5, 0.3, 0.2], [0.1, 0.7, 0.2], [0.6, 0.2, 0.2]])


def _write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("header", ["p_cat,p_dog,p_bird", "P(cat),P(dog),P(bird)", "cat,dog,bird"])
def test_a_column_naming_an_unobserved_class_is_a_class(tmp_path: Path, header: str) -> None:
    pred = load_predictions(_write(tmp_path, f"{header},label\n{THREE}"))
    assert pred.class_names == ("cat", "dog", "bird")
    np.testing.assert_array_equal(pred.probs, PROBS)
    np.testing.assert_array_equal(pred.labels, [0, 1, 0])


def test_logit_columns_of_an_unobserved_class_take_part_in_the_softmax(tmp_path: Path) -> None:
    logits = np.array([[2.5, 0.3, -1.2], [0.1, 1.7, 0.2], [1.6, 0.2, 0.2]])
    rows = "\n".join(
        ",".join(map(str, r)) + f",{y}" for r, y in zip(logits, ["cat", "dog", "cat"], strict=True)
    )
    pred = load_predictions(_write(tmp_path, f"logit_cat,logit_dog,logit_bird,label\n{rows}\n"))
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(pred.probs, e / e.sum(axis=1, keepdims=True), rtol=1e-12)
    assert pred.class_names == ("cat", "dog", "bird")


def test_a_stream_reads_the_same_classes(tmp_path: Path) -> None:
    path = _write(tmp_path, "p_cat,p_dog,p_bird,label\n" + THREE * 40)
    stream = analyze_stream(path)
    memory = load_predictions(path)
    assert stream.input.class_names == memory.class_names == ("cat", "dog", "bird")


def test_other_prefixed_columns_stay_out(tmp_path: Path) -> None:
    rows = "".join(
        f"{line.rsplit(',', 1)[0]},0.9,{line.rsplit(',', 1)[1]}\n" for line in THREE.split()
    )
    pred = load_predictions(_write(tmp_path, f"p_cat,p_dog,p_bird,score_total,label\n{rows}"))
    assert pred.class_names == ("cat", "dog", "bird")
    assert any(f.code == "ignored-columns" for f in pred.lint.findings)


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("0.3,yes\n0.6,no\n0.8,yes\n0.1,no\n", [1, 0, 1, 0]),
        ("0.3,no\n0.6,yes\n", [0, 1]),
        ('0.3,"yes"\n0.6,"no"\n0.8,"yes"\n', [1, 0, 1]),
    ],
)
def test_a_headerless_file_with_word_labels_keeps_its_first_row(
    tmp_path: Path, text: str, labels: list[int]
) -> None:
    pred = load_predictions(_write(tmp_path, text))
    assert pred.n == len(labels)
    np.testing.assert_array_equal(pred.labels, labels)
    assert pred.probs[0, 1] == 0.3


def test_a_missing_first_label_is_reported_not_taken_for_a_header(tmp_path: Path) -> None:
    path = _write(tmp_path, "0.3,NA\n0.6,no\n0.8,yes\n0.1,no\n")
    with pytest.raises(DataError, match="row 0"):
        load_predictions(path)
    pred = load_predictions(path, drop_missing=True)
    np.testing.assert_array_equal(pred.probs[:, 1], [0.6, 0.8, 0.1])


def test_a_header_of_words_over_numbers_is_still_a_header(tmp_path: Path) -> None:
    pred = load_predictions(_write(tmp_path, "score,outcome\n0.3,yes\n0.6,no\n"))
    assert pred.n == 2
    assert pred.columns["label"] == "outcome"


def test_the_label_column_is_not_a_probability_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "p,y\n0.3,1\n0.6,0\n0.8,1\n")
    with pytest.raises(ColumnError, match="label") as info:
        load_predictions(path, prob_columns="y")
    assert info.value.argument == "prob_columns"
    with pytest.raises(DataError, match="more than once"):
        load_predictions(path, prob_columns=["p", "p"])


def test_a_repeated_probability_header_is_refused(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "logit_owl,logit_owl,logit_cat,label\n0.5,0.3,0.2,cat\n0.1,0.7,0.2,owl\n"
    )
    with pytest.raises(DataError, match="'logit_owl' appear more than once"):
        load_predictions(path)


def test_positive_class_is_refused_where_it_cannot_apply(tmp_path: Path) -> None:
    three = _write(tmp_path, "p_0,p_1,p_2,y\n0.3,0.5,0.2,1\n0.6,0.2,0.2,0\n0.1,0.8,0.1,2\n")
    with pytest.raises(ColumnError, match="3 columns") as info:
        load_predictions(three, positive_class=2)
    assert info.value.argument == "positive_class"
    two = _write(tmp_path, "p_no,p_yes,y\n0.3,0.7,yes\n0.6,0.4,no\n", "two.csv")
    assert load_predictions(two, positive_class="yes").class_names == ("no", "yes")
    with pytest.raises(ColumnError, match="second") as info:
        load_predictions(two, positive_class="no")
    assert info.value.argument == "prob_columns"
