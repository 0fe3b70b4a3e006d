"""Split protocols: seeded, disjoint, covering, labelled."""

from __future__ import annotations

import numpy as np
import pytest

from core.base.errors import ConfigError, DataError
from core.recalibration import make_splits


def test_fraction_split_is_seeded_and_disjoint():
    a = make_splits(101, protocol="fraction", calibration_fraction=0.3, seed=4)
    b = make_splits(101, protocol="fraction", calibration_fraction=0.3, seed=4)
    assert len(a) == 1
    assert np.array_equal(a[0].calibration, b[0].calibration)
    assert a[0].calibration.size == 30
    assert np.intersect1d(a[0].calibration, a[0].test).size == 0
    assert np.union1d(a[0].calibration, a[0].test).size == 101
    c = make_splits(101, protocol="fraction", calibration_fraction=0.3, seed=5)
    assert not np.array_equal(a[0].calibration, c[0].calibration)


def test_repeated_splits_differ():
    s = make_splits(50, protocol="repeated", n_repeats=4, seed=0)
    assert [x.name for x in s] == ["repeat 1", "repeat 2", "repeat 3", "repeat 4"]
    assert len({tuple(x.calibration) for x in s}) == 4


def test_cross_fit_folds_partition_rows():
    s = make_splits(23, protocol="cross-fit", n_folds=5, seed=1)
    tests = np.concatenate([x.test for x in s])
    assert np.array_equal(np.sort(tests), np.arange(23))
    for x in s:
        assert np.intersect1d(x.calibration, x.test).size == 0
        assert x.calibration.size + x.test.size == 23


def test_stratified_split_keeps_class_shares():
    y = np.array([0] * 90 + [1] * 10)
    s = make_splits(100, protocol="fraction", calibration_fraction=0.5, stratify=y, seed=2)[0]
    assert (y[s.calibration] == 1).sum() == 5
    folds = make_splits(100, protocol="cross-fit", n_folds=5, stratify=y, seed=2)
    assert all((y[f.test] == 1).sum() == 2 for f in folds)


def test_column_protocol():
    col = np.array(["calibration", "Test", "cal", "test", "VAL"])
    s = make_splits(5, protocol="column", split_labels=col)[0]
    assert s.calibration.tolist() == [0, 2, 4]
    assert s.test.tolist() == [1, 3]
    with pytest.raises(DataError, match="neither calibration"):
        make_splits(2, protocol="column", split_labels=["cal", "banana"])
    with pytest.raises(DataError, match="has none"):
        make_splits(5, protocol="column")


def test_in_sample_is_labelled():
    s = make_splits(10, protocol="in-sample")[0]
    assert s.in_sample and np.array_equal(s.calibration, s.test)
    assert not any(x.in_sample for x in make_splits(10, protocol="repeated", n_repeats=2))


def test_bad_options():
    with pytest.raises(ConfigError, match="protocol"):
        make_splits(10, protocol="nope")
    with pytest.raises(ConfigError, match="calibration_fraction"):
        make_splits(10, calibration_fraction=1.5)
    with pytest.raises(ConfigError, match="n_folds"):
        make_splits(10, protocol="cross-fit", n_folds=1)
