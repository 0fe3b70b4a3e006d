"""compare_recalibrators: honest splits, labels, discrete evaluation, exports."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from core.inference.calibration import calibration_error
from core.recalibration import make_recalibrator, make_splits
from core.recalibration.base import softmax
from core.recalibration.evaluation import compare_recalibrators


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n, k = 3000, 3
    z = rng.normal(0, 3, (n, k))
    y = (rng.random(n)[:, None] > np.cumsum(softmax(z / 2), 1)).sum(1).clip(0, k - 1)
    return z, y


def _binary(n=3000, seed=1):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, n)
    y = (rng.random(n) < p**1.4).astype(int)
    return p, y


def test_judged_only_on_test_rows(data):
    z, y = data
    c = compare_recalibrators(
        z, y, ["temperature", "histogram-umd"], logits=True, seed=3, n_resamples=50
    )
    split = make_splits(len(y), calibration_fraction=0.5, stratify=y, seed=3)[0]
    assert np.array_equal(c.rows, split.test)
    assert np.intersect1d(c.rows, split.calibration).size == 0
    assert set(c.metrics.evaluation) == {"test"}
    # the table's value is the estimate on those rows
    p_test = softmax(z)[split.test]
    direct = calibration_error(p_test, y[split.test], n_bins=15).value
    row = c.metrics.query("method == 'uncalibrated' and metric == 'plugin'")
    assert_allclose(row.value.iloc[0], direct)
    assert (row.low <= row.value).all() and (row.value <= row.high).all()
    # and the recalibrated predictions are those of a fit on the calibration rows
    t = make_recalibrator("temperature").fit(
        z[split.calibration], y[split.calibration], logits=True
    )
    assert_allclose(c.predictions["temperature"], t.predict_proba(z[split.test], logits=True))


def test_in_sample_is_labelled(data):
    z, y = data
    c = compare_recalibrators(z, y, ["platt"], logits=True, protocol="in-sample", n_resamples=20)
    assert c.evaluation == "in-sample"
    assert set(c.metrics.evaluation) == {"in-sample"}
    assert c.rows.size == len(y)


def test_cross_fit_gives_out_of_fold_predictions(data):
    z, y = data
    c = compare_recalibrators(
        z, y, ["temperature"], logits=True, protocol="cross-fit", n_folds=3, n_resamples=20, seed=5
    )
    assert c.evaluation == "out-of-fold"
    assert c.predictions["temperature"].shape == (len(y), 3)
    folds = make_splits(len(y), protocol="cross-fit", n_folds=3, stratify=y, seed=5)
    f = folds[1]
    t = make_recalibrator("temperature").fit(z[f.calibration], y[f.calibration], logits=True)
    assert_allclose(c.predictions["temperature"][f.test], t.predict_proba(z[f.test], logits=True))
    assert len(c.fitted["temperature"]) == 3


def test_repeated_splits_report_mean_and_sd(data):
    z, y = data
    c = compare_recalibrators(
        z, y, ["temperature"], logits=True, protocol="repeated", n_repeats=3, n_resamples=20, seed=2
    )
    splits = make_splits(len(y), protocol="repeated", n_repeats=3, stratify=y, seed=2)
    vals = [calibration_error(softmax(z)[s.test], y[s.test], n_bins=15).value for s in splits]
    row = c.metrics.query("method == 'uncalibrated' and metric == 'plugin'").iloc[0]
    assert_allclose(row.mean_over_splits, np.mean(vals))
    assert_allclose(row.sd_over_splits, np.std(vals, ddof=1))


def test_histogram_binning_is_judged_with_discrete_bins():
    p, y = _binary()
    c = compare_recalibrators(p, y, ["histogram-umd", "platt"], lens="binary", n_resamples=20)
    assert c.evaluation_binning["histogram-umd"] == "discrete"
    assert c.evaluation_binning["platt"] == "equal-width"
    assert np.unique(c.predictions["histogram-umd"][:, 1]).size <= 10
    note = c.metrics.query("method == 'histogram-umd'").note.iloc[0]
    assert "discrete" in note
    cfg = compare_recalibrators(
        p, y, ["histogram-umd"], lens="binary", evaluation_binning="config", n_resamples=20
    )
    assert cfg.evaluation_binning["histogram-umd"] == "equal-width"


def test_failed_fit_is_reported_and_others_proceed():
    p, y = _binary(n=60)
    c = compare_recalibrators(
        p, y, [("histogram-umd", {"n_bins": 25}), "platt"], lens="binary", n_resamples=20
    )
    assert "histogram-umd" in c.errors and "2B" in c.errors["histogram-umd"]
    assert "platt" in c.predictions


def test_metacal_views_and_exports(data):
    z, y = data
    c = compare_recalibrators(z, y, ["meta-cal"], logits=True, n_resamples=20)
    view = c.selective["meta-cal"]
    cov = c.metrics.query("metric == 'coverage'").value.iloc[0]
    assert_allclose(cov, view.accepted.mean())
    assert_allclose(c.predictions["meta-cal"][~view.accepted], 1 / 3)
    assert "NOT controlled" in view.guarantee
    frame = c.predictions_frame(["a", "b", "c"])
    assert set(frame.model) == {"Uncalibrated", "Meta-Cal (selective)"}
    assert (frame.groupby("model").size() == len(c.rows)).all()
    from core.data import load_predictions

    back = load_predictions(
        frame.drop(columns=["row", "evaluation", "accepted"]),
        prob_columns=["a", "b", "c"],
        label_column="label",
    )
    assert set(back.models) == {"Uncalibrated", "Meta-Cal (selective)"}
    assert_allclose(back.by_model()["Meta-Cal (selective)"].probs, c.predictions["meta-cal"])
    import json

    rec = json.loads(c.parameters_json("meta-cal"))
    assert rec["settings"]["seed"] == 0 and rec["fits"][0]["method"] == "meta-cal"


CIFAR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cifar10-14-networks"


@pytest.mark.data
def test_cifar10_network_recalibration():
    if not (CIFAR / "densenet121.csv").exists():
        pytest.skip(f"CIFAR-10 predictions not found at {CIFAR}")
    p = np.loadtxt(CIFAR / "densenet121.csv", delimiter=",")
    p = p / p.sum(1, keepdims=True)  # float32 rows sum to 1 only up to rounding
    y = np.loadtxt(CIFAR / "labels.csv", dtype=np.int64) - 1  # 1-indexed on disk
    c = compare_recalibrators(
        p, y, ["temperature", "histogram-umd", "meta-cal"], n_resamples=100, seed=0
    )
    val = c.metrics.set_index(["method", "metric"]).value
    assert val["temperature", "plugin"] < val["uncalibrated", "plugin"]
    assert val["temperature", "accuracy"] == val["uncalibrated", "accuracy"]
    assert c.evaluation_binning["histogram-umd"] == "discrete"
    assert 0.8 < val["meta-cal", "coverage"] < 1.0
    assert val["meta-cal", "miscoverage"] < 0.15


def test_same_method_twice_gets_distinct_keys_and_labels():
    p, y = _binary(n=2000)
    c = compare_recalibrators(
        p,
        y,
        [("histogram-umd", {"n_bins": 5}), ("histogram-umd", {"n_bins": 20})],
        lens="binary",
        n_resamples=20,
    )
    assert list(c.predictions) == ["uncalibrated", "histogram-umd", "histogram-umd #2"]
    assert c.labels_of["histogram-umd"] == "Histogram binning (UMD) (n_bins=5) #1"
    assert c.labels_of["histogram-umd #2"] == "Histogram binning (UMD) (n_bins=20) #2"
    assert np.unique(c.predictions["histogram-umd #2"][:, 1]).size <= 20


def test_public_names_from_core():
    import core

    r = core.make_recalibrator("temperature")
    assert "meta-cal" in core.RECALIBRATORS
    assert r.get_params() == {"bounds": (0.01, 100.0)}
