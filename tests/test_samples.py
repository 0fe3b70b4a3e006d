"""The bundled sample files: catalog, layout, calibration shapes, and exact regeneration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import sample_data
from core.data import load_predictions

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_data"


def _by_model(file_name: str):
    return load_predictions(SAMPLES / file_name).by_model()


def test_catalog_lists_existing_small_files():
    cat = sample_data.catalog()
    assert len(cat) == 2
    kinds = {s.kind for s in cat.values()}
    assert kinds == {"binary", "multiclass"}
    for name, sample in cat.items():
        assert sample.name == name and sample.path.is_file() and sample.description
        assert sample.path.stat().st_size < 2_000_000
        load_predictions(sample.path)  # every catalog entry loads without error


def test_binary_file_layout():
    pred = load_predictions(SAMPLES / "binary_breast_cancer.csv")
    assert pred.binary and pred.n == 4 * 569
    assert pred.models == ("naive-bayes", "random-forest", "adaboost", "logistic-regression")
    assert pred.columns["probs"] == ["p_malignant"] and pred.columns["group"] == "group"
    assert set(pred.group) == {"large", "small"}
    parts = pred.by_model()
    labels = [p.labels for p in parts.values()]
    splits = [p.split for p in parts.values()]
    for y, s in zip(labels, splits, strict=True):
        np.testing.assert_array_equal(y, labels[0])  # same tumours in the same order
        np.testing.assert_array_equal(s, splits[0])  # same split for every model
    assert labels[0].sum() == 212  # malignant tumours in load_breast_cancer
    assert (splits[0] == "calibration").sum() == 569 // 2


def test_multiclass_file_layout():
    pred = load_predictions(SAMPLES / "multiclass_digits.csv")
    assert pred.n_classes == 10 and pred.n == 4 * 1797 and not pred.binary
    assert pred.class_names[:3] == ("zero", "one", "two")
    assert pred.models[2] == "gradient-boosting"
    assert np.abs(pred.probs.sum(axis=1) - 1).max() < 1e-4
    counts = np.bincount(pred.by_model()["naive-bayes"].labels)
    assert counts.sum() == 1797 and counts.min() >= 174  # digits has 174..183 per class


def _sharpness_excess(p: np.ndarray, y: np.ndarray) -> float:
    # > 0: scores more extreme than the outcomes (over-confident); < 0: under-confident
    return float(np.mean(np.sign(p - 0.5) * (p - y)))


def test_binary_models_show_their_classic_shapes():
    parts = _by_model("binary_breast_cancer.csv")
    excess = {m: _sharpness_excess(p.probs[:, 1], p.labels) for m, p in parts.items()}
    assert excess["naive-bayes"] > 0.03
    assert excess["random-forest"] < -0.015
    assert excess["adaboost"] < -0.15  # scores squeezed towards 0.5: a sigmoid-shaped curve
    assert abs(excess["logistic-regression"]) < 0.015
    ada = parts["adaboost"].probs[:, 1]
    assert 0.05 < ada.min() and ada.max() < 0.95
    for p in parts.values():
        assert (p.probs.argmax(axis=1) == p.labels).mean() > 0.93


def test_multiclass_models_show_their_classic_shapes():
    parts = _by_model("multiclass_digits.csv")
    gap = {}
    for m, p in parts.items():
        gap[m] = p.probs.max(axis=1).mean() - (p.probs.argmax(axis=1) == p.labels).mean()
    assert gap["naive-bayes"] > 0.1  # over-confident
    assert gap["random-forest"] < -0.1  # under-confident
    assert gap["gradient-boosting"] < -0.02
    assert abs(gap["logistic-regression"]) < 0.02


def test_rows_are_out_of_fold_predictions():
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    from sample_data import make_samples

    X, target = load_breast_cancer(return_X_y=True)
    y = (target == 0).astype(int)
    model = make_samples.models(make_samples.SEED, multiclass=False)["logistic-regression"]()
    cv = StratifiedKFold(make_samples.N_FOLDS, shuffle=True, random_state=make_samples.SEED)
    expected = cross_val_predict(model, X, y, cv=cv, method="predict_proba")[:, 1]
    got = _by_model("binary_breast_cancer.csv")["logistic-regression"].probs[:, 1]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-12)  # written with %.6g
    # an in-sample fit would be sharper than the held-out predictions
    in_sample = model.fit(X, y).predict_proba(X)[:, 1]
    assert np.abs(in_sample - y).mean() < np.abs(got - y).mean()


def test_readme_describes_every_file():
    text = (SAMPLES / "README.md").read_text()
    for file_name in ("binary_breast_cancer.csv", "multiclass_digits.csv"):
        assert f"`{file_name}`" in text
    for column in ("p_malignant", "`split`", "`group`", "`model`", "cross_val_predict"):
        assert column in text


@pytest.mark.slow
def test_regeneration_is_byte_identical(tmp_path):
    pytest.importorskip("sklearn")
    run = subprocess.run(
        [sys.executable, "-m", "sample_data.make_samples", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    for path in sorted(SAMPLES.glob("*.csv")):
        _assert_regenerated(path, tmp_path / path.name)


def _assert_regenerated(committed: Path, fresh: Path) -> None:
    """The script gives the committed file: byte for byte, or up to a few boosted rows.

    A boosted tree picks each split by comparing floats; on another processor a one-ulp
    difference in a logarithm can flip one choice and move that model's scores in the third
    decimal (AdaBoost's scores, seen between two x86-64 machines with the same libraries).
    Everything else must be identical, and every score within 0.05.
    """
    if fresh.read_bytes() == committed.read_bytes():
        return
    old = [line.split(",") for line in committed.read_text().splitlines()]
    new = [line.split(",") for line in fresh.read_text().splitlines()]
    assert old[0] == new[0] and len(old) == len(new), committed.name
    header = old[0]
    numeric = [
        i for i, c in enumerate(header) if c not in ("id", "model", "split", "group", "label")
    ]
    moved = set()
    for a, b in zip(old[1:], new[1:], strict=True):
        assert [a[i] for i in range(len(header)) if i not in numeric] == [
            b[i] for i in range(len(header)) if i not in numeric
        ], (committed.name, a[:3])
        if a != b:
            moved.add(a[header.index("model")])
            assert max(abs(float(a[i]) - float(b[i])) for i in numeric) < 0.05, (committed.name, a)
    rows = len(old) - 1
    changed = sum(a != b for a, b in zip(old[1:], new[1:], strict=True))
    assert changed <= 0.02 * rows, (committed.name, changed)
    assert moved <= {"adaboost", "gradient-boosting"}, (committed.name, moved)


def test_script_entry_point_runs_without_package_context():
    run = subprocess.run(
        [sys.executable, str(SAMPLES / "make_samples.py"), "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0 and "--out" in run.stdout
