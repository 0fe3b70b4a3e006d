"""Loading predictions: sources, layouts, column inference, conversions, digest, subsets."""

from __future__ import annotations

import gzip
import io
import os
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, softmax

import core
from core.base.errors import DataError
from core.data import ColumnError, Predictions, combine_models, load_predictions, read_table

ROOT = Path(__file__).resolve().parents[1]
CIFAR = ROOT.parent / "shared" / "data" / "cifar10-14-networks"


def _binary_frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, n)
    return pd.DataFrame({"p": p, "label": (rng.uniform(size=n) < p).astype(int)})


def _multi(n: int = 300, k: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(k) * 2, size=n)
    return P, rng.integers(0, k, n)


# ----------------------------------------------------------------------------- binary


def test_binary_frame_becomes_two_columns():
    df = _binary_frame()
    pred = load_predictions(df)
    assert isinstance(pred, Predictions) and pred.binary and pred.n == 300 and pred.n_classes == 2
    np.testing.assert_array_equal(pred.probs[:, 1], df.p.to_numpy())
    np.testing.assert_array_equal(pred.probs[:, 0], 1.0 - df.p.to_numpy())
    np.testing.assert_array_equal(pred.labels, df.label.to_numpy())
    assert pred.labels.dtype == np.int64 and pred.probs.dtype == np.float64
    assert pred.class_names == ("0", "1")
    assert pred.columns["label"] == "label" and pred.columns["probs"] == ["p"]


def test_boolean_labels():
    df = _binary_frame()
    pred = load_predictions(df.assign(label=df.label.astype(bool)))
    np.testing.assert_array_equal(pred.labels, df.label)


def test_string_labels_need_or_infer_the_positive_class():
    df = _binary_frame(n=200)
    words = df.assign(label=np.where(df.label == 1, "spam", "ham"))
    with pytest.raises(ColumnError, match="positive_class=") as info:
        load_predictions(words)
    assert info.value.argument == "positive_class"
    assert info.value.candidates == ("ham", "spam")
    pred = load_predictions(words, positive_class="spam")
    np.testing.assert_array_equal(pred.labels, df.label)
    assert pred.class_names == ("ham", "spam")
    flipped = load_predictions(words, positive_class="ham")
    np.testing.assert_array_equal(flipped.labels, 1 - df.label)
    # inferred from the column name, then from yes/no values
    named = load_predictions(words.rename(columns={"p": "p_spam"}))
    np.testing.assert_array_equal(named.labels, df.label)
    assert "P(y = 'spam')" in named.lint.get("label-mapping").message
    yes_no = load_predictions(df.assign(label=np.where(df.label == 1, "Yes", "No")))
    np.testing.assert_array_equal(yes_no.labels, df.label)


def test_binary_labels_one_and_two_are_one_indexed():
    df = _binary_frame()
    pred = load_predictions(df.assign(label=df.label + 1))
    np.testing.assert_array_equal(pred.labels, df.label)
    assert "one-indexed-labels" in pred.lint.codes


# ----------------------------------------------------------------------------- multiclass


def test_multiclass_columns_with_integer_labels():
    P, y = _multi()
    df = pd.DataFrame(P, columns=["p_a", "p_b", "p_c"]).assign(target=y)
    pred = load_predictions(df)
    assert not pred.binary and pred.class_names == ("a", "b", "c")
    np.testing.assert_array_equal(pred.probs, P)
    np.testing.assert_array_equal(pred.labels, y)
    assert pred.columns["label"] == "target"


def test_class_name_labels_follow_column_order():
    P, y = _multi()
    names = np.array(["bird", "cat", "dog"])
    df = pd.DataFrame(P, columns=["dog", "bird", "cat"]).assign(y=names[y])
    pred = load_predictions(df)
    assert pred.class_names == ("dog", "bird", "cat")
    expected = np.array([{"dog": 0, "bird": 1, "cat": 2}[s] for s in names[y]])
    np.testing.assert_array_equal(pred.labels, expected)
    upper = load_predictions(df.assign(y=np.char.upper(names[y].astype(str))))
    np.testing.assert_array_equal(upper.labels, expected)


def test_one_indexed_multiclass_labels_shift():
    P, y = _multi()
    pred = load_predictions(pd.DataFrame(P, columns=["a", "b", "c"]).assign(label=y + 1))
    np.testing.assert_array_equal(pred.labels, y)


def test_labels_matching_numeric_class_names():
    # columns p_1..p_3 and labels 1..3: matched by name, which is the same as the shift
    P, y = _multi()
    df = pd.DataFrame(P, columns=["p_1", "p_2", "p_3"]).assign(label=y + 1)
    pred = load_predictions(df)
    np.testing.assert_array_equal(pred.labels, y)
    assert pred.class_names == ("1", "2", "3")


# ----------------------------------------------------------------------------- sources


def test_csv_path_bytes_file_object_parquet_and_gzip_agree(tmp_path):
    P, y = _multi()
    df = pd.DataFrame(P, columns=["p_a", "p_b", "p_c"]).assign(label=y)
    csv_path = tmp_path / "preds.csv"
    df.to_csv(csv_path, index=False)
    pq_path = tmp_path / "preds.parquet"
    df.to_parquet(pq_path, index=False)
    reference = load_predictions(df).digest
    assert load_predictions(pq_path).digest == reference
    assert load_predictions(str(pq_path)).digest == reference
    pq_bytes = pq_path.read_bytes()
    assert load_predictions(pq_bytes).digest == reference  # sniffed by magic number
    # CSV text round-trips floats exactly (repr), so the digest is equal too
    via_csv = load_predictions(csv_path)
    np.testing.assert_array_equal(via_csv.probs, P)
    assert via_csv.digest == reference
    assert load_predictions(csv_path.read_bytes(), name="preds.csv").digest == reference
    with open(csv_path, "rb") as fh:
        assert load_predictions(fh).digest == reference
    gz = tmp_path / "preds.csv.gz"
    gz.write_bytes(gzip.compress(csv_path.read_bytes()))
    assert load_predictions(gz).digest == reference
    assert load_predictions(gz.read_bytes(), name="upload.csv.gz").digest == reference


def test_delimiters_tab_semicolon_whitespace():
    text = "p\tlabel\n0.2\t0\n0.8\t1\n0.4\t1\n"
    for sep in ("\t", ";", " "):
        pred = load_predictions(text.replace("\t", sep).encode(), name="x.txt")
        np.testing.assert_array_equal(pred.probs[:, 1], [0.2, 0.8, 0.4])
        np.testing.assert_array_equal(pred.labels, [0, 1, 1])


def test_headerless_matrix_with_labels_file(tmp_path):
    P, y = _multi(n=50, k=4)
    matrix = tmp_path / "model.csv"
    np.savetxt(matrix, P.astype(np.float32), delimiter=",", fmt="%.9g")
    labels = tmp_path / "labels.csv"
    np.savetxt(labels, y + 1, fmt="%d")  # the CIFAR convention: 1-indexed, no header
    pred = load_predictions(matrix, labels=labels)
    assert pred.n == 50 and pred.class_names == ("0", "1", "2", "3")
    np.testing.assert_array_equal(pred.labels, y)
    np.testing.assert_allclose(pred.probs, P, atol=1e-6)
    assert read_table(matrix).shape == (50, 4)
    # the same with uploaded bytes and a BytesIO labels file
    buf = io.BytesIO(labels.read_bytes())
    again = load_predictions(matrix.read_bytes(), labels=buf, name="model.csv")
    assert again.digest != "" and np.array_equal(again.probs, pred.probs)
    # a labels file with a header line works too
    labels_h = tmp_path / "labels_h.csv"
    labels_h.write_text("label\n" + "\n".join(str(v) for v in y) + "\n")
    np.testing.assert_array_equal(load_predictions(matrix, labels=labels_h).labels, y)


def test_range_index_header_is_a_header():
    P, y = _multi(n=20)
    text = pd.DataFrame(P).to_csv(index=False)  # header "0,1,2"
    frame = read_table(text.encode(), name="x.csv")
    assert frame.shape == (20, 3) and list(frame.columns) == ["0", "1", "2"]


def test_arrays_source():
    P, y = _multi()
    pred = load_predictions(P, labels=y, class_names=["x", "y", "z"])
    assert pred.class_names == ("x", "y", "z") and pred.source == "arrays"
    p1 = load_predictions(P[:, 0], labels=(y == 0))
    assert p1.binary and np.array_equal(p1.probs[:, 1], P[:, 0])


def test_refuses_other_sources(tmp_path):
    np.save(tmp_path / "a.npy", np.ones(3))
    with pytest.raises(DataError, match="a NumPy .npy file"):
        load_predictions(tmp_path / "a.npy")
    with pytest.raises(DataError, match="Excel workbook"):
        load_predictions(b"PK\x03\x04rest", name="book.xlsx")
    with pytest.raises(DataError, match="Cannot read predictions from a dict"):
        load_predictions({"p": [0.1]})
    with pytest.raises(DataError, match="non-numeric"):
        load_predictions(np.array(["a", "b"]), labels=[0, 1])


def test_never_unpickles(tmp_path):
    marker = tmp_path / "executed"

    class Payload:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    blob = pickle.dumps(Payload())
    for name in ("x.pkl", "x.csv", "x.parquet", None):
        with pytest.raises(DataError, match="looks like a Python pickle, which is not read"):
            load_predictions(blob, name=name)
    path = tmp_path / "x.pkl"
    path.write_bytes(blob)
    with pytest.raises(DataError, match="never unpickled"):
        load_predictions(path)
    with pytest.raises(DataError, match="Python pickle"):
        load_predictions(b"0.5\n0.4\n", labels=blob, name="x.csv")
    assert not marker.exists()
    source = "".join(path.read_text() for path in sorted((ROOT / "core" / "data").glob("*.py")))
    for word in ("import pickle", "allow_pickle=True", "joblib", "read_pickle"):
        assert word not in source


# ----------------------------------------------------------------------------- inference


def test_role_columns_case_insensitive_and_ignored_ids():
    df = _binary_frame(n=120)
    df["Model"] = np.repeat(["m1", "m2"], 60)
    df["SPLIT"] = np.tile(["calibration", "test"], 60)
    df["Group"] = np.tile(["a", "b", "c"], 40)
    df["ID"] = np.arange(120)
    df["y_pred"] = (df.p > 0.5).astype(int)
    pred = load_predictions(df)
    assert pred.binary and pred.columns["model"] == "Model" and pred.columns["split"] == "SPLIT"
    assert pred.models == ("m1", "m2")
    assert set(pred.split) == {"calibration", "test"} and set(pred.group) == {"a", "b", "c"}
    assert set(pred.lint.get("ignored-columns").columns) == {"ID", "y_pred"}


def test_ambiguous_label_columns_name_candidates():
    df = _binary_frame().assign(y=0)
    with pytest.raises(
        ColumnError, match=r"Several columns could be the labels: 'label', 'y'"
    ) as e:
        load_predictions(df)
    assert e.value.argument == "label_column" and e.value.candidates == ("label", "y")
    assert set(e.value.columns) == {"p", "label", "y"}
    pred = load_predictions(df, label_column="LABEL")  # case-insensitive
    assert pred.columns["label"] == "label" and pred.columns["probs"] == ["p"]
    assert pred.lint.get("ignored-columns").columns == ("y",)


def test_no_label_column_says_what_to_pass():
    df = pd.DataFrame({"p": [0.1, 0.2], "q": [0.9, 0.8]})
    with pytest.raises(ColumnError, match="Use label_column= ") as e:
        load_predictions(df)
    assert e.value.argument == "label_column"


def test_unconventional_label_name_is_found_when_alone_non_float():
    P, y = _multi()
    df = pd.DataFrame(P, columns=["a", "b", "c"]).assign(species=np.array(["a", "b", "c"])[y])
    np.testing.assert_array_equal(load_predictions(df).labels, y)


def test_ambiguous_probability_columns():
    df = _binary_frame().assign(age=np.arange(300.0))
    with pytest.raises(ColumnError, match=r"'p', 'age' are all numeric .*prob_columns=") as e:
        load_predictions(df)
    assert e.value.argument == "prob_columns" and e.value.candidates == ("p", "age")
    pred = load_predictions(df, prob_columns="p")
    assert pred.binary and pred.columns["probs"] == ["p"]
    assert pred.lint.get("ignored-columns").columns == ("age",)


def test_prefixed_columns_win_over_other_numbers():
    P, y = _multi()
    df = pd.DataFrame(P, columns=["prob_a", "prob_b", "prob_c"]).assign(label=y, weight=1.5)
    pred = load_predictions(df)
    assert pred.class_names == ("a", "b", "c")
    assert pred.lint.get("ignored-columns").columns == ("weight",)


def test_missing_requested_columns():
    with pytest.raises(ColumnError, match="'nope' not found"):
        load_predictions(_binary_frame(), prob_columns=["nope"])
    with pytest.raises(ColumnError, match="No column named 'nope'"):
        load_predictions(_binary_frame(), label_column="nope")


# ----------------------------------------------------------------------------- conversions


def test_softmax_and_sigmoid_conversion_values():
    rng = np.random.default_rng(5)
    Z = rng.normal(0, 3, size=(100, 4))
    y = rng.integers(0, 4, 100)
    np.testing.assert_allclose(load_predictions(Z, labels=y).probs, softmax(Z, axis=1), rtol=1e-13)
    z = rng.normal(0, 3, 100)
    np.testing.assert_allclose(load_predictions(z, labels=y % 2).probs[:, 1], expit(z), rtol=1e-13)
    # logits=True converts even scores inside [0, 1]
    inside = rng.uniform(size=(100, 4))
    np.testing.assert_allclose(
        load_predictions(inside, labels=y, logits=True).probs, softmax(inside, axis=1)
    )
    with pytest.raises(DataError, match="logits must be"):
        load_predictions(inside, labels=y, logits="maybe")


def test_renormalize_divides_rows_and_percentages():
    P, y = _multi()
    Q = P * np.linspace(0.5, 2.0, P.shape[0])[:, None]
    np.testing.assert_allclose(load_predictions(Q, labels=y, renormalize=True).probs, P)
    np.testing.assert_allclose(load_predictions(100 * P, labels=y, renormalize=True).probs, P)
    with pytest.raises(DataError, match="percentages or unnormalised scores.*renormalize=True"):
        load_predictions(100 * P, labels=y)
    with pytest.raises(DataError, match="If these are percentages, divide them by 100"):
        load_predictions(100 * P[:, 0], labels=y == 0)


# ----------------------------------------------------------------------------- digest, subsets


def test_digest_is_exact_and_stable():
    P, y = _multi()
    a = load_predictions(P, labels=y)
    assert a.digest == load_predictions(P.copy(), labels=y.copy()).digest
    assert len(a.digest) == 32
    Q = P.copy()
    Q[0, 0] = np.nextafter(Q[0, 0], 1.0)
    Q[0, 1] = 1.0 - Q[0, 0] - Q[0, 2]
    assert load_predictions(Q, labels=y).digest != a.digest
    z = y.copy()
    z[0] = (z[0] + 1) % 3
    assert load_predictions(P, labels=z).digest != a.digest
    assert load_predictions(P, labels=y, class_names=["a", "b", "c"]).digest != a.digest
    with pytest.raises(ValueError):
        a.probs[0, 0] = 0.5  # read-only, so the digest cannot go stale


def test_digest_is_injective_in_names_and_role_values():
    from core.data.predictions import _digest

    p = np.array([[0.3, 0.7], [0.6, 0.4]])
    y = np.array([1, 0])

    def digest(names=("a", "b"), **roles):
        arrays = {k: np.array(v, dtype=object) for k, v in roles.items()}
        return _digest(p, y, names, False, arrays)

    # each pair fed the same bytes to the hash when names and values were joined with a
    # separator and no length: a separator inside a name moved the boundary
    assert digest(("a\x1fb", "c")) != digest(("a", "b\x1fc"))
    assert digest(model=["x\x1fy", "z"]) != digest(model=["x", "y\x1fz"])
    # a role's values ran into the next role's name
    assert digest(model=["m", "m"], split=["splitq", "s"]) != digest(
        model=["m", "msplit"], split=["q", "s"]
    )
    # through the loader: two different files, one table each
    first = pd.DataFrame({"p": [0.7, 0.4], "label": [1, 0], "model": ["x\x1fy", "z"]})
    second = first.assign(model=["x", "y\x1fz"])
    a, b = load_predictions(first), load_predictions(second)
    assert a.models != b.models and a.digest != b.digest


def test_subset_and_by_model():
    df = _binary_frame(n=300)
    df["model"] = np.repeat(["b-model", "a-model", "c-model"], 100)
    df.loc[:99, "p"] = np.round(df.loc[:99, "p"], 1)  # ties in one model only
    pred = load_predictions(df)
    parts = pred.by_model()
    assert list(parts) == ["b-model", "a-model", "c-model"]  # order of appearance
    first = parts["b-model"]
    assert first.n == 100 and set(first.model) == {"b-model"}
    np.testing.assert_array_equal(first.probs[:, 1], df.p.to_numpy()[:100])
    assert "heavy-ties" in first.lint.codes and "heavy-ties" not in parts["a-model"].lint.codes
    assert len({p.digest for p in parts.values()} | {pred.digest}) == 4
    by_index = pred.subset(np.arange(100))
    assert by_index.digest == first.digest
    with pytest.raises(DataError, match="empty"):
        pred.subset(np.zeros(300, dtype=bool))
    with pytest.raises(DataError, match=r"0\.\.299"):
        pred.subset([5, 300])
    with pytest.raises(DataError, match="300 entries"):
        pred.subset(np.ones(5, dtype=bool))
    single = load_predictions(_binary_frame())
    assert list(single.by_model().values()) == [single]


def test_combine_models_from_separate_files():
    P, y = _multi()
    a = load_predictions(P, labels=y + 1)  # with a conversion note
    Q, _ = _multi(seed=1)
    b = load_predictions(Q, labels=y)
    both = combine_models({"first": a, "second": b})
    assert both.n == 600 and both.models == ("first", "second")
    np.testing.assert_array_equal(both.probs, np.vstack([P, Q]))
    assert both.lint.get("one-indexed-labels").message.startswith("first: Labels run from 1")
    back = both.by_model()
    np.testing.assert_array_equal(back["second"].probs, Q)
    assert back["first"].digest != a.digest  # it now carries a model column
    with pytest.raises(DataError, match="same classes"):
        combine_models(
            {"a": a, "b": load_predictions(P[:, :2] / P[:, :2].sum(1, keepdims=True), labels=y % 2)}
        )
    with pytest.raises(DataError, match="No predictions"):
        combine_models({})


def test_lazy_export_from_core():
    assert core.load_predictions is load_predictions
    assert core.Predictions is Predictions


# ----------------------------------------------------------------------------- real data


@pytest.mark.data
def test_cifar_densenet121_reproduces_the_papers_skce_ul():
    if not (CIFAR / "densenet121.csv").is_file():
        pytest.skip(f"CIFAR-10 predictions not found at {CIFAR}")
    pred = load_predictions(CIFAR / "densenet121.csv", labels=CIFAR / "labels.csv")
    assert (pred.n, pred.n_classes) == (10000, 10)
    assert "one-indexed-labels" in pred.lint.codes
    # first CIFAR-10 test labels (0-based): cat, ship, ship, airplane, frog
    np.testing.assert_array_equal(pred.labels[:5], [3, 8, 8, 0, 6])
    np.testing.assert_array_equal(np.bincount(pred.labels), np.full(10, 1000))
    assert np.abs(pred.probs.sum(axis=1) - 1).max() < 1e-5
    # Widmann et al. (2019), errors.csv: SKCE_ul of densenet121 = -0.0003430021466092365
    calibration_error = pytest.importorskip("core.inference.calibration").calibration_error
    value = calibration_error(pred.probs, pred.labels, estimator="skce-ul", lens="canonical").value
    assert value == pytest.approx(-0.0003430021466092365, rel=1e-9)
