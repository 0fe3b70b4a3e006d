"""Canonical binned ECE (core.estimators.joint): hand cases, the reference code's bin index
conventions, the CIFAR-10 numbers of Widmann et al.'s updated experiments, and the registry."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import core
from core.base.errors import ConfigError
from core.estimators.joint import (
    hypercube_codes,
    joint_binned_error,
    median_variance_codes,
)

CIFAR = Path(__file__).resolve().parents[2] / "shared" / "data" / "cifar10-14-networks"

#: CalibrationPaper (HEAD) errors.csv: ÊCE with 10 uniform bins per class / with
#: median-variance bins of at least 100 rows (Widmann et al. digest §7.5).
CIFAR_HEAD = {
    "densenet121": (0.06607267260685921, 0.029532869835646354),
    "densenet161": (0.0641599504949732, 0.026845546917137465),
    "densenet169": (0.06496751907840302, 0.031188340072043963),
    "googlenet": (0.0701184185770028, 0.02272709769525614),
    "inception_v3": (0.06622328174328834, 0.027411723147251238),
    "mobilenet_v2": (0.08683923462654226, 0.03456354253906284),
    "resnet_orig": (0.09817285190958805, 0.04414388945292799),
    "resnet18": (0.07488154767161395, 0.03644622574154899),
    "resnet34": (0.079810632660301, 0.03298001339438637),
    "resnet50": (0.0748439824936457, 0.02879089355835557),
    "vgg11_bn": (0.0828966903027505, 0.03679525436809021),
    "vgg13_bn": (0.06477891304561932, 0.03209845815383053),
    "vgg16_bn": (0.06611851748458264, 0.02912703229915157),
    "vgg19_bn": (0.06025929364237089, 0.03345951015859006),
}


def test_bin_index_conventions_of_the_reference_code():
    # CalibrationErrors.jl's binindex tests: 0 → 1, 0.1 → 1, 0.45 → 5, 1 → 10 (1-based)
    p = np.array([[0.0, 1.0], [0.1, 0.9], [0.45, 0.55], [1.0, 0.0]])
    idx = np.clip(np.ceil(10 * p), 1, 10)
    assert idx[:, 0].tolist() == [1, 1, 5, 10]
    codes = hypercube_codes(p, 10)
    # (1,10), (1,9), (5,6), (10,1): four different hypercubes
    assert len(set(codes.tolist())) == 4
    # two rows whose index products agree but whose tuples differ stay apart (the
    # NeurIPS-version bug merged (2,3) and (3,2))
    q = np.array([[0.15, 0.25, 0.6], [0.25, 0.15, 0.6]])
    assert len(set(hypercube_codes(q, 10).tolist())) == 2


def test_hand_computed_uniform_case():
    # B = 2 per class, three classes; bins: rows 0–1 share (1, 2, 1)... by hand:
    p = np.array(
        [
            [0.2, 0.7, 0.1],  # idx (1, 2, 1)
            [0.3, 0.6, 0.1],  # idx (1, 2, 1)
            [0.6, 0.3, 0.1],  # idx (2, 1, 1)
            [0.1, 0.1, 0.8],  # idx (1, 1, 2)
        ]
    )
    y = np.array([1, 0, 0, 1])
    # bin A: mean (0.25, 0.65, 0.1), labels (0.5, 0.5, 0): TV = ½(0.25 + 0.15 + 0.1) = 0.25
    # bin B: (0.6, 0.3, 0.1) vs (1, 0, 0): TV = ½(0.4 + 0.3 + 0.1) = 0.4
    # bin C: (0.1, 0.1, 0.8) vs (0, 1, 0): TV = ½(0.1 + 0.9 + 0.8) = 0.9
    expected = 0.5 * 0.25 + 0.25 * 0.4 + 0.25 * 0.9
    got = core.calibration_error(p, y, estimator="canonical-uniform", n_bins=2)
    assert got.value == pytest.approx(expected, abs=1e-15)
    assert got.details["non_empty_bins"] == 3 and got.details["bins_per_class"] == 2
    # one bin per class (B = 1) is the TV distance of the overall means
    one = core.calibration_error(p, y, estimator="canonical-uniform", n_bins=1).value
    mean_p, freq = p.mean(axis=0), np.bincount(y, minlength=3) / 4
    assert one == pytest.approx(0.5 * np.abs(mean_p - freq).sum(), abs=1e-15)


def test_perfectly_binned_calibration_is_zero_and_one_hot_is_one():
    # every bin's mean equals its label frequencies: zero
    p = np.tile([[0.5, 0.5]], (4, 1))
    assert core.calibration_error(
        p, np.array([0, 1, 0, 1]), estimator="canonical-uniform"
    ).value == pytest.approx(0.0, abs=1e-15)
    # confident and always wrong: TV = 1
    p = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    assert core.calibration_error(
        p, np.array([1, 2]), estimator="canonical-uniform"
    ).value == pytest.approx(1.0)


def test_median_variance_split_rule_by_hand():
    # class 0 has the larger variance; ten rows, min_size 2: split at the 6th smallest
    p0 = np.array([0.05, 0.1, 0.15, 0.2, 0.25, 0.6, 0.65, 0.7, 0.75, 0.8])
    p = np.column_stack([p0, 1 - p0])
    codes = median_variance_codes(p, min_size=5)
    # 10 rows ≥ 2·5: split at v = 0.6 into 5 below and 5 above; each < 10 rows is a bin
    assert len(set(codes[:5])) == 1 and len(set(codes[5:])) == 1 and codes[0] != codes[5]
    # fewer than 2·min_size rows: one bin
    assert set(median_variance_codes(p, min_size=6).tolist()) == {0}
    # ties at the median: below = {p < v} may be too small, then the set is one bin
    tied = np.column_stack([np.r_[0.1, np.full(9, 0.5)], np.r_[0.9, np.full(9, 0.5)]])
    assert set(median_variance_codes(tied, min_size=2).tolist()) == {0}


def test_median_variance_recursion_reaches_min_size():
    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.ones(4), size=1000)
    codes = median_variance_codes(p, min_size=20)
    sizes = np.bincount(codes)
    assert sizes.min() >= 20 and sizes.max() < 40 and sizes.sum() == 1000
    y = rng.integers(0, 4, size=1000)
    value, counts, means, freqs = joint_binned_error(p, y, codes)
    assert counts.sum() == 1000 and np.allclose(means.sum(axis=1), 1.0)
    assert np.allclose(freqs.sum(axis=1), 1.0) and 0 <= value <= 1


def test_large_class_counts_use_row_keys():
    # 100 classes × 10 bins: 10¹⁰⁰ hypercubes do not fit one integer; the row keys agree
    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.full(100, 0.05), size=300)
    p[:50] = p[0]  # fifty identical rows share one hypercube
    codes = hypercube_codes(p, 10)
    assert len(set(codes[:50].tolist())) == 1
    idx = np.clip(np.ceil(10 * p), 1, 10)
    assert len(set(codes.tolist())) == np.unique(idx, axis=0).shape[0]


def test_registry_entry_and_lens():
    info = core.ESTIMATORS.get("canonical-uniform")
    assert info.lenses == ("canonical",) and info.family == "joint-binned"
    assert not info.lp_scale and not info.subsample and not info.quadratic
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), size=50)
    y = rng.integers(0, 3, size=50)
    with pytest.raises(ConfigError, match="canonical"):
        core.calibration_error(p, y, estimator="canonical-uniform", lens="top-label")
    with pytest.raises(ConfigError, match="min_size"):
        core.calibration_error(p, y, estimator="canonical-median-variance", min_size=0)
    # binary P(y=1) input is the two-column vector
    b = core.calibration_error(p[:, 0], (y == 1).astype(int), estimator="canonical-uniform")
    assert np.isfinite(b.value)


def test_estimators_table_reads_every_row():
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(3), size=3000)
    y = np.array([rng.choice(3, p=row) for row in p])
    config = core.AnalysisConfig(n_resamples=40, kernel_sample=1000)
    table = core.compare_estimators(core.load_predictions(p, labels=y), config).table
    row = table[table.key == "canonical-uniform"].iloc[0]
    full = core.calibration_error(p, y, estimator="canonical-uniform", n_bins=config.n_bins)
    assert row.value == full.value and "subsample" not in row.note
    assert np.isfinite(row.low) and np.isfinite(row.high)  # an interval was drawn
    mv = table[table.key == "canonical-median-variance"].iloc[0]
    assert np.isnan(mv.low) and "no bootstrap interval" in mv.note
    assert (table.key == "canonical-uniform").sum() == 1  # one canonical row, not two


@pytest.mark.skipif(not CIFAR.exists(), reason="CIFAR-10 predictions not in ../shared/data")
def test_cifar10_matches_the_papers_errors():
    labels = np.loadtxt(CIFAR / "labels.csv", dtype=np.int64) - 1
    for model, (uniform, dynamic) in CIFAR_HEAD.items():
        p = np.loadtxt(CIFAR / f"{model}.csv", delimiter=",")
        u = core.calibration_error(p, labels, estimator="canonical-uniform", n_bins=10).value
        d = core.calibration_error(
            p, labels, estimator="canonical-median-variance", min_size=100
        ).value
        assert u == pytest.approx(uniform, rel=1e-12), model
        assert d == pytest.approx(dynamic, rel=1e-12), model


@pytest.mark.parametrize(("k", "b", "n"), [(2, 10, 5000), (3, 15, 200), (10, 10, 500)])
def test_every_numbering_gives_the_partition_of_the_index_tuples(k, b, n):
    # dense key range (bincount), sparse (sorted keys): the same groups as the row tuples
    rng = np.random.default_rng(k * b)
    p = rng.dirichlet(np.full(k, 0.7), size=n)
    codes = hypercube_codes(p, b)
    _, tuples = np.unique(np.clip(np.ceil(b * p), 1, b), axis=0, return_inverse=True)
    pairs = set(zip(codes.tolist(), tuples.ravel().tolist(), strict=True))
    assert len(pairs) == len(set(codes.tolist())) == len(set(tuples.ravel().tolist()))
    assert codes.min() == 0 and codes.max() == len(set(codes.tolist())) - 1


def test_binary_hypercubes_are_the_binary_equal_width_bins():
    # two classes: the hypercube (⌈B(1 − s)⌉, ⌈Bs⌉) is fixed by s's equal-width bin when no
    # score sits on an edge, and TV = |f̄ − ȳ|: the whole-vector ECE is the binary plug-in ECE
    rng = np.random.default_rng(9)
    s = rng.beta(2.0, 1.0, 20_000)
    y = (rng.random(s.size) < s**1.3).astype(np.int64)
    whole = core.calibration_error(s, y, estimator="canonical-uniform", n_bins=15).value
    plugin = core.calibration_error(
        s, y, estimator="plugin", lens="binary", binning="equal-width", n_bins=15, norm=1
    ).value
    assert whole == pytest.approx(plugin, rel=1e-12)
