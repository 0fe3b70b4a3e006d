"""core.calibration_error: dispatch, validation, the result record and real data."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import core
from core.base.errors import ConfigError, DataError
from core.inference.calibration import CalibrationErrorResult, calibration_error

ROOT = Path(__file__).resolve().parents[1]
CIFAR = ROOT.parent / "shared" / "data" / "cifar10-14-networks"


def test_public_exports_and_docstring_example():
    assert core.calibration_error is calibration_error
    assert core.CalibrationErrorResult is CalibrationErrorResult
    p = np.array([0.2, 0.8, 0.9, 0.4])
    y = np.array([0, 1, 1, 1])
    # bins [0, .5): (0.2, 0.4) vs (0, 1) → gap 0.2; [.5, 1]: (0.8, 0.9) vs (1, 1) → 0.15
    assert core.calibration_error(p, y, lens="binary", n_bins=2).value == pytest.approx(0.175)


def test_result_fields_float_and_frozen():
    r = calibration_error([0.6, 0.7, 0.8, 0.9], [0, 0, 1, 1], lens="binary", n_bins=2, norm="l2")
    # all four scores lie in [0.5, 1]: one bin, mean score 0.75 against mean label 0.5
    assert float(r) == r.value == pytest.approx(0.25, abs=1e-15)
    assert (r.estimator, r.lens, r.binning, r.n_bins, r.norm) == (
        "plugin",
        "binary",
        "equal-width",
        2,
        2.0,
    )
    assert r.components == ("1",) and len(r.component_values) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.value = 0.0  # type: ignore[misc]
    table = r.bin_table
    assert list(table.columns) == [
        "bin",
        "lower",
        "upper",
        "count",
        "mean_score",
        "mean_label",
        "gap",
    ]
    assert table["count"].tolist() == [0, 4]


def test_default_is_top_label_15_bin_ece():
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.5, 0.4], [0.3, 0.3, 0.4]])
    y = np.array([0, 2, 2])
    r = calibration_error(probs, y)
    # confidences 0.7 (bin 10, hit), 0.5 (bin 7, miss), 0.4 (bin 6, hit) — one point per bin
    assert r.value == pytest.approx((0.3 + 0.5 + 0.6) / 3)
    assert (r.lens, r.n_bins, r.norm, r.estimator) == ("top-label", 15, 1.0, "plugin")
    assert r.bins[0].n_bins == 15


def test_one_dimensional_input_top_label_uses_max_of_p_and_1_minus_p():
    p = [0.2, 0.9]
    y = [0, 0]
    # top-label: confidences 0.8 (predicts 0, correct) and 0.9 (predicts 1, wrong)
    r = calibration_error(p, y, n_bins=1, lens="top-label")
    assert r.value == pytest.approx(abs(0.85 - 0.5))
    # binary data mean the binary lens when none is chosen (every surface's rule)
    assert calibration_error(p, y, n_bins=1).value == pytest.approx(0.55)
    assert calibration_error(p, y, n_bins=1).lens == "binary"


def test_classwise_bin_table_has_component_column_and_class_names():
    probs = np.array([[0.7, 0.3], [0.4, 0.6], [0.2, 0.8]])
    r = calibration_error(probs, [0, 1, 0], lens="classwise", n_bins=2, class_names=("a", "b"))
    assert r.components == ("a", "b")
    table = r.bin_table
    assert list(table.columns)[0] == "component"
    assert table["component"].tolist() == ["a", "a", "b", "b"]
    # two classes are mirror images: equal errors
    assert r.component_values[0] == pytest.approx(r.component_values[1])


def test_bin_table_without_bins_is_empty():
    r = CalibrationErrorResult(
        0.1, "x", "canonical", "equal-width", 15, 2.0, ("all",), (0.1,), None
    )
    assert isinstance(r.bin_table, pd.DataFrame) and r.bin_table.empty
    assert "mean_label" in r.bin_table.columns


def test_sweep_details_are_exposed():
    rng = np.random.default_rng(0)
    p = rng.random(500)
    y = (rng.random(500) < p).astype(int)
    r = calibration_error(p, y, lens="binary", estimator="sweep", binning="equal-mass", norm=2)
    assert r.details["b_star"] == r.bins[0].n_bins
    assert r.details["sweep_trace"]["b"].iloc[0] == 2


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_bins": 0}, ConfigError, "n_bins"),
        ({"n_bins": 2.5}, ConfigError, "n_bins"),
        ({"n_bins": True}, ConfigError, "n_bins"),
        ({"norm": 3}, ConfigError, "norm"),
        ({"norm": "l7"}, ConfigError, "norm"),
        ({"lens": "joint"}, ConfigError, "Unknown lens"),
        ({"estimator": "ece"}, ConfigError, "'plugin'"),
        ({"binning": "quantile"}, ConfigError, "Unknown binning"),
        ({"tie_policy": "random"}, ConfigError, "tie_policy"),
        ({"lens": "canonical"}, ConfigError, "does not support the 'canonical' lens"),
        ({"estimator": "debiased", "norm": "inf"}, ConfigError, "ℓ∞"),
        ({"estimator": "sweep", "binning": "discrete"}, ConfigError, "equal-mass or equal-width"),
        ({"lens": "binary"}, ConfigError, "two classes"),
        ({"lens": "classwise", "class_weights": [1, -1, 1]}, ConfigError, "class_weights"),
        ({"lens": "classwise", "class_names": ("a",)}, ConfigError, "class names"),
    ],
)
def test_bad_configuration_raises(kwargs, error, match):
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.5, 0.4]])
    with pytest.raises(error, match=match):
        calibration_error(probs, [0, 2], **kwargs)


@pytest.mark.parametrize(
    ("probs", "labels", "match"),
    [
        ([0.2, 1.3], [0, 1], r"\[0, 1\]"),
        ([0.2, np.nan], [0, 1], "NaN"),
        ([[0.2, 0.3], [0.5, 0.5]], [0, 1], "sum to 1"),
        ([0.2, 0.3], [0, 2], "0..1"),
        ([0.2, 0.3], [0], "match"),
    ],
)
def test_bad_data_raises(probs, labels, match):
    with pytest.raises(DataError, match=match):
        calibration_error(probs, labels)


def test_seed_controls_random_estimator():
    rng = np.random.default_rng(1)
    p = rng.random(300)
    y = (rng.random(300) < p).astype(int)
    kw = {"lens": "binary", "estimator": "debiased", "norm": 1}
    assert calibration_error(p, y, **kw).value == calibration_error(p, y, seed=0, **kw).value
    gen = np.random.default_rng(5)
    assert (
        calibration_error(p, y, seed=gen, **kw).value == calibration_error(p, y, seed=5, **kw).value
    )


def _load_cifar(model: str) -> tuple[np.ndarray, np.ndarray]:
    if not (CIFAR / f"{model}.csv").exists():
        pytest.skip(f"real data not available at {CIFAR}")
    probs = np.loadtxt(CIFAR / f"{model}.csv", delimiter=",")
    labels = np.loadtxt(CIFAR / "labels.csv", dtype=np.int64) - 1
    return probs / probs.sum(axis=1, keepdims=True), labels


@pytest.mark.data
def test_cifar_resnet18_against_direct_numpy():
    probs, labels = _load_cifar("resnet18")
    conf = probs.max(axis=1)
    hit = (probs.argmax(axis=1) == labels).astype(float)
    # independent assignment: exact comparison with the float edges (score on an edge goes up)
    edges = np.arange(16) / 15
    k = np.searchsorted(edges[1:-1], conf, side="right")
    counts = np.bincount(k, minlength=15)
    gaps = np.abs(np.bincount(k, conf, 15) - np.bincount(k, hit, 15))
    ece = gaps.sum() / len(conf)
    r = calibration_error(probs, labels)
    assert r.value == pytest.approx(ece, rel=1e-12)
    np.testing.assert_array_equal(r.bins[0].counts, counts)
    # a network with ~93% accuracy is over-confident by about 2-4 points
    assert 0.01 < r.value < 0.06
    # the estimators order as the theory says on real data
    l2 = calibration_error(probs, labels, norm=2).value
    lb = calibration_error(probs, labels, norm=2, estimator="label-binned").value
    db = calibration_error(probs, labels, norm=2, estimator="debiased").value
    assert db <= l2 <= lb
    cw = calibration_error(
        probs, labels, lens="classwise", binning="equal-mass", estimator="debiased", norm=2
    )
    per = [
        calibration_error(
            probs[:, j],
            labels == j,
            lens="binary",
            binning="equal-mass",
            estimator="debiased",
            norm=2,
        )
        for j in range(10)
    ]
    assert cw.details["signed_square"] == pytest.approx(
        np.mean([q.details["signed_square"] for q in per]), rel=1e-10
    )


def test_dispatch_is_generic_for_kernel_estimators(monkeypatch):
    from core.estimators import ESTIMATORS, Estimate, EstimatorInfo

    seen = {}

    def fake_kernel(probs, labels, *, lens, norm, rng, **kw):
        seen.update(lens=lens, norm=norm, shape=probs.shape, kw=sorted(kw))
        return Estimate(0.125, ("canonical",), (0.125,), None, {"statistic": 0.125})

    entry = EstimatorInfo(
        name="fake-kernel",
        func=fake_kernel,
        label="Fake",
        family="kernel",
        norms=None,
        lenses=("canonical",),
    )
    monkeypatch.setitem(ESTIMATORS._entries, "fake-kernel", entry)
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.5, 0.4]])
    r = calibration_error(probs, [0, 2], estimator="fake-kernel", lens="canonical", norm=2)
    assert r.value == 0.125 and r.bins is None and r.bin_table.empty
    assert r.details == {"statistic": 0.125}
    assert seen["lens"] == "canonical" and seen["shape"] == (2, 3)
    assert seen["kw"] == [
        "binning",
        "class_names",
        "class_weights",
        "n_bins",
        "tie_policy",
    ]
    with pytest.raises(ConfigError, match="Estimators for 'top-label'"):
        calibration_error(probs, [0, 2], estimator="fake-kernel", lens="top-label")
    # no lens: the estimator's own default lens (its only one here)
    assert calibration_error(probs, [0, 2], estimator="fake-kernel").lens == "canonical"
    # a binning name is only checked for binned estimators
    calibration_error(probs, [0, 2], estimator="fake-kernel", lens="canonical", binning="none")


def test_loaded_predictions_skip_revalidation_but_copies_do_not():
    import pandas as pd

    from core.base import validation
    from core.base.errors import DataError
    from core.data import load_predictions

    frame = pd.DataFrame({"p0": [0.2, 0.7, 0.5], "p1": [0.8, 0.3, 0.5], "label": [1, 0, 1]})
    pred = load_predictions(frame)
    assert not pred.probs.flags.writeable
    assert validation.as_prob_matrix(pred.probs) is pred.probs  # trusted: returned as is
    bad = pred.probs.copy()
    bad[0, 0] = -0.1  # a writable copy is checked again
    with pytest.raises(DataError, match=r"\[0, 1\]"):
        validation.as_prob_matrix(bad)


def test_binary_input_gives_a_contiguous_positive_column():
    from core.base.validation import as_prob_matrix

    p = np.array([0.1, 0.25, 0.9])
    matrix = as_prob_matrix(p)
    np.testing.assert_array_equal(matrix, np.column_stack([1 - p, p]))
    assert matrix[:, 1].flags.c_contiguous


ESTIMATOR_SETTINGS = [
    ("plugin", {"binning": "equal-width"}),
    ("plugin", {"binning": "equal-mass", "tie_policy": "keep", "norm": np.inf}),
    ("label-binned", {"binning": "equal-mass", "norm": 2}),
    ("debiased", {"binning": "equal-width", "norm": 1, "n_resamples": 50}),
    ("sweep", {"binning": "equal-mass"}),
    ("average", {"binning": "discrete"}),
    ("skce-ul", {}),
    ("skce-b", {"metric": "l2"}),
]


@pytest.mark.parametrize("lens", ["binary", "top-label", "classwise"])
@pytest.mark.parametrize(("estimator", "settings"), ESTIMATOR_SETTINGS)
def test_binary_vector_gives_the_numbers_of_its_two_column_matrix(lens, estimator, settings):
    # a P(y=1) vector is read as [1 − p, p] without building it: the same numbers to the
    # bit, ties at 0.5 (top-label: class 0), 0 and 1 included
    rng = np.random.default_rng(17)
    p = np.concatenate([np.round(rng.random(300), 2), [0.5, 0.5, 0.0, 1.0]])
    y = (rng.random(p.shape[0]) < p).astype(int)
    from core.base.validation import binary_matrix

    vector = calibration_error(p, y, estimator=estimator, lens=lens, seed=3, **settings)
    matrix = calibration_error(
        binary_matrix(p), y, estimator=estimator, lens=lens, seed=3, **settings
    )
    assert vector.value == matrix.value
    assert vector.component_values == matrix.component_values
    for a, b in zip(vector.bins or (), matrix.bins or (), strict=True):
        for field in ("edges", "counts", "score_sums", "label_sums"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def test_lens_view_keeps_outcomes_compact_and_apply_lens_gives_floats():
    from core.base.validation import as_probs
    from core.stats.lenses import apply_lens, lens_view

    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(4), 50)
    y = rng.integers(0, 4, 50)
    view = lens_view(probs, y, "classwise")
    assert all(o.dtype == bool for o in view.outcomes)
    assert all(np.shares_memory(s, probs) for s in view.scores)  # columns, not copies
    public = apply_lens(probs, y, "classwise")
    assert all(o.dtype == np.float64 for o in public.outcomes)
    for a, b in zip(view.outcomes, public.outcomes, strict=True):
        np.testing.assert_array_equal(a, b)
    p = rng.random(50)
    yb = (p > 0.4).astype(np.int64)
    binary = lens_view(as_probs(p), yb, "binary")
    assert binary.scores[0] is p and binary.outcomes[0] is yb  # the inputs themselves
    top = lens_view(as_probs(p), yb, "top-label")
    np.testing.assert_array_equal(top.scores[0], np.maximum(p, 1.0 - p))
    np.testing.assert_array_equal(top.outcomes[0], (p > 1.0 - p) == yb)


def test_as_predictions_copies_only_the_callers_arrays():
    p = np.array([0.2, 0.7, 0.9])
    y = np.array([0, 1, 1])
    pred = core.as_predictions((p, y))
    assert p.flags.writeable and y.flags.writeable  # the caller's arrays stay theirs
    assert not np.shares_memory(pred.labels, y)
    p[0], y[0] = 0.5, 1
    np.testing.assert_array_equal(pred.probs[:, 1], [0.2, 0.7, 0.9])
    assert pred.labels.tolist() == [0, 1, 1]
    matrix = np.array([[0.8, 0.2], [0.3, 0.7]])
    held = core.as_predictions((matrix, [0, 1]))
    assert matrix.flags.writeable and not np.shares_memory(held.probs, matrix)
    assert held.probs.flags.c_contiguous and not held.probs.flags.writeable
    fortran = np.asfortranarray(matrix)
    assert core.as_predictions((fortran, [0, 1])).probs.flags.c_contiguous
