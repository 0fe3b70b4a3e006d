"""One test per lint finding and per fatal load error, checking what the message says."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from core.base.errors import DataError
from core.data import ColumnError, load_predictions
from core.data.lint import LintFinding, LintReport


def _calibrated(n: int = 500, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    return pd.DataFrame({"p": p, "label": (rng.uniform(size=n) < p).astype(int)})


def _multiclass(n: int = 400, k: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(k), size=n)
    y = (rng.uniform(size=n)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    return P, np.minimum(y, k - 1)


def _codes(pred) -> set[str]:
    return set(pred.lint.codes)


# ----------------------------------------------------------------------------- clean data


def test_clean_binary_data_has_no_findings():
    pred = load_predictions(_calibrated())
    assert len(pred.lint) == 0


def test_clean_multiclass_data_has_no_findings():
    P, y = _multiclass()
    pred = load_predictions(P, labels=y)
    assert len(pred.lint) == 0


# ----------------------------------------------------------------------------- findings


def test_few_rows_warning():
    pred = load_predictions(_calibrated(n=40))
    f = pred.lint.get("few-rows")
    assert f.severity == "warning"
    assert "Only 40 rows" in f.message and "fewer than 100" in f.message
    assert "few-rows" not in _codes(load_predictions(_calibrated(n=100)))


def test_class_never_observed_multiclass():
    P, y = _multiclass()
    y = np.where(y == 2, 0, y)  # class 2 never occurs
    pred = load_predictions(pd.DataFrame(P, columns=["a", "b", "c", "d"]).assign(label=y))
    f = pred.lint.get("class-never-observed")
    assert f.severity == "warning"
    assert "1 of 4 classes never occur" in f.message and "'c'" in f.message
    assert f.columns == ("c",)


def test_class_never_observed_binary():
    df = _calibrated()
    df["label"] = 1
    f = load_predictions(df).lint.get("class-never-observed")
    assert "Every label is '1'" in f.message and "class '0' never occurs" in f.message


def test_class_never_predicted():
    P, y = _multiclass()
    P[:, 3] *= 0.01  # class 3 never wins the arg-max
    P /= P.sum(axis=1, keepdims=True)
    pred = load_predictions(P, labels=y)
    f = pred.lint.get("class-never-predicted")
    assert f.severity == "info"
    assert "never the predicted (arg-max) class: '3'" in f.message
    assert "class-never-observed" not in _codes(pred)


def test_heavy_ties():
    rng = np.random.default_rng(1)
    p = rng.choice([0.1, 0.3, 0.6, 0.9], size=300)
    pred = load_predictions(pd.DataFrame({"p": p, "y": rng.integers(0, 2, 300)}))
    f = pred.lint.get("heavy-ties")
    assert f.severity == "warning"
    assert "100% of the P(y=1) scores take one of only 4 repeated values" in f.message
    assert "'discrete' binning" in f.message and f.count == 300


def test_no_heavy_ties_for_continuous_scores():
    assert "heavy-ties" not in _codes(load_predictions(_calibrated(n=30)))


def test_exact_zero_one():
    df = _calibrated()
    df.loc[[3, 7], "p"] = [0.0, 1.0]
    df.loc[[3, 7], "label"] = 1  # P(y=1) = 0 but y = 1: infinite log loss
    f = load_predictions(df).lint.get("exact-zero-one")
    assert f.severity == "info" and f.rows == (3, 7) and f.count == 2
    assert "2 rows have a P(y=1) of exactly 0 or 1" in f.message
    assert "1 row gives the true class a probability of exactly 0" in f.message
    df.loc[3, "p"] = 0.5  # one row left at 0 or 1, its class right
    f = load_predictions(df).lint.get("exact-zero-one")
    assert f.count == 1 and "1 row has a P(y=1) of exactly 0 or 1" in f.message
    assert "give the true class" not in f.message


def test_exact_one_multiclass_confidence():
    P, y = _multiclass()
    P[5] = [0.0, 1.0, 0.0, 0.0]
    f = load_predictions(P, labels=y).lint.get("exact-zero-one")
    assert f.rows == (5,) and "top-label confidence of exactly 1" in f.message


def test_binary_ambiguity_warning_and_error():
    rng = np.random.default_rng(2)
    conf = rng.uniform(0.5, 1.0, 200)
    mostly_pos = pd.DataFrame({"p": conf, "y": (rng.uniform(size=200) < 0.8).astype(int)})
    f = load_predictions(mostly_pos).lint.get("binary-ambiguity")
    assert f.severity == "warning"
    assert "confidence of the predicted class rather than P(y=1)" in f.message
    mostly_neg = mostly_pos.assign(y=(rng.uniform(size=200) < 0.3).astype(int))
    assert load_predictions(mostly_neg).lint.get("binary-ambiguity").severity == "error"
    assert "binary-ambiguity" not in _codes(load_predictions(_calibrated()))


def test_duplicate_columns_in_csv():
    text = "p,p,label\n0.2,0.9,0\n0.7,0.1,1\n0.6,0.5,1\n"
    pred = load_predictions(text.encode(), prob_columns=["p"], name="dup.csv")
    f = pred.lint.get("duplicate-columns")
    assert f.severity == "warning" and f.columns == ("p",)
    assert "'p' appear more than once" in f.message and "renamed" in f.message
    np.testing.assert_array_equal(pred.probs[:, 1], [0.2, 0.7, 0.6])


def test_ignored_columns_info():
    df = _calibrated().assign(id=np.arange(500), notes="x")
    f = load_predictions(df).lint.get("ignored-columns")
    assert f.severity == "info" and set(f.columns) == {"id", "notes"}
    assert "'id'" in f.message and "prob_columns=" in f.message


def test_logits_converted_multiclass():
    rng = np.random.default_rng(3)
    Z = rng.normal(0, 2, size=(200, 3))
    pred = load_predictions(Z, labels=rng.integers(0, 3, 200))
    f = pred.lint.get("logits-converted")
    assert f.severity == "warning"
    assert "read as logits" in f.message and "softmax" in f.message and "logits=False" in f.message


def test_logits_converted_binary_and_log_probabilities():
    rng = np.random.default_rng(4)
    pred = load_predictions(rng.normal(0, 3, 200), labels=rng.integers(0, 2, 200))
    assert "sigmoid" in pred.lint.get("logits-converted").message
    P, y = _multiclass()
    f = load_predictions(np.log(P), labels=y).lint.get("logits-converted")
    assert "read as log-probabilities" in f.message


def test_renormalized_warning():
    P, y = _multiclass()
    P[[4, 9]] *= 1.1
    pred = load_predictions(P, labels=y, renormalize=True)
    f = pred.lint.get("renormalized")
    assert f.rows == (4, 9) and "2 rows did not sum to 1" in f.message
    assert "largest deviation 0.1" in f.message


def test_clipped_rounding_info():
    df = _calibrated()
    df.loc[2, "p"] = 1.0 + 1e-9
    pred = load_predictions(df)
    f = pred.lint.get("clipped")
    assert f.rows == (2,) and "clipped to [0, 1]" in f.message
    assert pred.probs[2, 1] == 1.0


def test_missing_values_dropped_with_option():
    df = _calibrated()
    df.loc[[1, 6], "p"] = np.nan
    df.loc[8, "label"] = np.nan
    pred = load_predictions(df, drop_missing=True)
    f = pred.lint.get("missing-values")
    assert f.rows == (1, 6, 8) and f.count == 3 and pred.n == 497
    assert "Dropped 3 rows" in f.message


def test_one_indexed_labels():
    P, y = _multiclass()
    pred = load_predictions(P, labels=y + 1)
    f = pred.lint.get("one-indexed-labels")
    assert f.severity == "warning" and "Labels run from 1 to 4" in f.message
    np.testing.assert_array_equal(pred.labels, y)


def test_label_mapping_minus_one_plus_one():
    df = _calibrated()
    pred = load_predictions(df.assign(label=2 * df.label - 1))
    assert "-1/+1" in pred.lint.get("label-mapping").message
    np.testing.assert_array_equal(pred.labels, df.label)


# ----------------------------------------------------------------------------- fatal errors


def test_nan_is_fatal_without_drop_missing():
    df = _calibrated()
    df.loc[[4, 11], "p"] = [np.nan, np.inf]
    with pytest.raises(DataError, match=r"2 of 500 rows .*rows 4, 11 \(0-based.*drop_missing=True"):
        load_predictions(df)


def test_probabilities_outside_unit_interval_with_logits_false():
    df = _calibrated()
    df.loc[0, "p"] = 1.7
    with pytest.raises(DataError, match=r"outside \[0, 1\].*row 0 .*logits=True"):
        load_predictions(df, logits=False)


def test_out_of_range_rows_summing_to_one_are_not_logits():
    P = np.array([[1.2, -0.2], [0.5, 0.5], [0.3, 0.7]])
    with pytest.raises(DataError, match="rows sum to 1, so they are not logits either"):
        load_predictions(P, labels=[0, 1, 1])


def test_rows_not_summing_to_one_are_fatal_without_renormalize():
    P, y = _multiclass()
    P[7] *= 0.5
    with pytest.raises(DataError, match=r"1 of 400 rows .*do not sum to 1.*renormalize=True"):
        load_predictions(P, labels=y)


def test_zero_rows_cannot_be_renormalized():
    P, y = _multiclass()
    P[3] = 0.0
    with pytest.raises(DataError, match=r"1 rows .* are all zero \(row 3 .*cannot be renormalised"):
        load_predictions(P, labels=y, renormalize=True)


def test_labels_out_of_range():
    P, y = _multiclass()
    y = y.copy()
    y[[2, 5]] = 7
    with pytest.raises(DataError, match=r"0\.\.3 .*found values from 0 to 7 \(2 out of range"):
        load_predictions(P, labels=y)


def test_fractional_labels():
    with pytest.raises(DataError, match=r"1 are fractional \(row 1 .*label_column="):
        load_predictions(pd.DataFrame({"p": [0.1, 0.2, 0.3], "label": [0, 0.5, 1]}))


def test_unknown_class_names():
    df = pd.DataFrame({"cat": [0.3, 0.6], "dog": [0.7, 0.4], "label": ["cat", "cow"]})
    with pytest.raises(DataError, match=r"'cow' do not match any class name \('cat', 'dog'"):
        load_predictions(df)


def test_non_numeric_probability_column():
    text = "p_a,p_b,label\n0.2,0.8,0\nabc,0.5,1\n0.6,0.4,1\n"
    with pytest.raises(DataError, match=r"'p_a' holds non-numeric values such as 'abc' \(row 1"):
        load_predictions(text.encode(), name="x.csv")


def test_decimal_comma_hint():
    # quoted decimal commas in a comma-separated file are text: the hint says what they are
    text = 'p,label\n"0,2",0\n"0,7",1\n"0,9",1\n'
    with pytest.raises(DataError, match="decimal comma"):
        load_predictions(text.encode(), prob_columns=["p"], name="x.csv")


def test_semicolon_file_with_decimal_commas_is_read():
    # the spreadsheet export of locales that write 0,25: semicolons between columns
    text = "p;label\n0,2;0\n0,7;1\n0,9;1\n"
    pred = load_predictions(text.encode(), name="x.csv")
    assert pred.probs[:, 1].tolist() == [0.2, 0.7, 0.9]
    assert "decimal-comma" in pred.lint.codes


def test_mismatched_lengths_of_matrix_and_labels_file():
    matrix = b"0.2,0.8\n0.6,0.4\n0.5,0.5\n"
    labels = io.BytesIO(b"1\n2\n")
    with pytest.raises(DataError, match=r"3 rows but the labels file .* has 2; .*row for row"):
        load_predictions(matrix, labels=labels, name="m.csv")


def test_fewer_than_two_rows_is_fatal():
    with pytest.raises(DataError, match="Only 1 usable row"):
        load_predictions(pd.DataFrame({"p": [0.3], "y": [1]}))


def test_binary_column_with_three_label_values():
    with pytest.raises(DataError, match="one probability column but the labels take 3 values"):
        load_predictions(pd.DataFrame({"p": [0.1, 0.5, 0.9], "y": [0, 1, 2]}))


def test_empty_and_header_only_files():
    with pytest.raises(DataError, match="is empty"):
        load_predictions(b"  \n", name="e.csv")
    with pytest.raises(DataError, match="h.csv has no data rows"):
        load_predictions(b"p,label\n", name="h.csv")


def test_missing_file():
    with pytest.raises(DataError, match="File not found"):
        load_predictions("/no/such/file.csv")


def test_damaged_parquet():
    with pytest.raises(DataError, match="not a readable Parquet file"):
        load_predictions(b"PAR1 this is not parquet", name="x.parquet")


def test_headerless_file_without_labels():
    with pytest.raises(ColumnError, match="no header row") as info:
        load_predictions(b"0.2,0.8\n0.6,0.4\n", name="m.csv")
    assert info.value.argument == "labels"


# ----------------------------------------------------------------------------- report object


def test_report_orders_by_severity_and_exports():
    report = LintReport(
        (
            LintFinding("b", "info", "i"),
            LintFinding("a", "warning", "w", rows=(1, 2), columns=("p",), count=2),
            LintFinding("c", "error", "e"),
        )
    )
    assert report.codes == ("c", "a", "b")
    assert [f.code for f in report.errors] == ["c"] and [f.code for f in report.warnings] == ["a"]
    frame = report.to_frame()
    assert list(frame.columns) == ["severity", "code", "message", "rows", "columns", "count"]
    assert frame.loc[1, "rows"] == "1, 2"
    assert report.to_records()[1]["rows"] == [1, 2]
    with pytest.raises(ValueError, match="severity"):
        LintFinding("x", "fatal", "m")


def test_binary_labels_other_than_zero_one():
    df = pd.DataFrame({"p": [0.1, 0.5, 0.9], "y": [0, 7, 7]})
    with pytest.raises(DataError, match=r"Binary labels must be 0/1.*found 0, 7.*positive_class="):
        load_predictions(df)
    np.testing.assert_array_equal(load_predictions(df, positive_class=7).labels, [0, 1, 1])


def test_positive_class_not_among_labels():
    df = pd.DataFrame({"p": [0.1, 0.5, 0.9], "y": ["a", "b", "b"]})
    with pytest.raises(ColumnError, match=r"positive_class='c' is not among the label values"):
        load_predictions(df, positive_class="c")


def test_label_column_position_out_of_range():
    with pytest.raises(DataError, match="label_column=5 is out of range: the table has 2 columns"):
        load_predictions(b"0.2,0\n0.7,1\n", label_column=5, name="m.csv")
    pred = load_predictions(b"0.2,0\n0.7,1\n0.6,1\n", label_column=-1, name="m.csv")
    np.testing.assert_array_equal(pred.labels, [0, 1, 1])
