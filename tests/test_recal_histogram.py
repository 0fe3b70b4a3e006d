"""Histogram binning: UMD index arithmetic, Z&E, UMS, fixed width, ties (Gupta & Ramdas 2021)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from core.base.errors import FitError
from core.recalibration import make_recalibrator
from core.recalibration.histogram import lexicographic_bins, umd_ranks

# worked example of the reference (§2.2): n = 10, B = 3, S_(i) = i/11
S = np.arange(1, 11) / 11
Y = np.array([0, 0, 1, 0, 1, 1, 0, 1, 1, 1])


def _component(r):
    return r.params_.values["components"][0]


def test_umd_ranks_exact_for_many_n_and_b():
    for n in range(2, 300):
        for b in range(1, n // 2 + 1):
            a = umd_ranks(n, b)
            expected = [0] + [-((-k * (n + 1)) // b) for k in range(1, b)] + [n + 1]
            assert a.tolist() == expected
            m = np.diff(a) - 1  # labels strictly between boundaries (last bin: up to rank n)
            assert m.sum() == n - b + 1
            assert m.min() >= n // b - 1
    # floating point gets this one wrong (E10): ceil(11 * 50 / 22) = 25
    assert umd_ranks(49, 22)[11] == 25
    assert math.ceil(11 * ((49 + 1) / 22)) == 26


@pytest.mark.parametrize(
    ("n", "b", "ranks", "counts"),
    [
        (20, 3, [0, 7, 14, 21], [6, 6, 6]),
        (10, 3, [0, 4, 8, 11], [3, 3, 2]),
        (100, 7, [0, 15, 29, 44, 58, 73, 87, 101], [14, 13, 14, 13, 14, 13, 13]),
        (11, 5, [0, 3, 5, 8, 10, 12], [2, 1, 2, 1, 1]),
    ],
)
def test_umd_bin_counts_table(n, b, ranks, counts):
    assert umd_ranks(n, b).tolist() == ranks
    rng = np.random.default_rng(n)
    s = rng.random(n)
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    r = make_recalibrator("histogram-umd", n_bins=b).fit(s, y)
    assert _component(r)["counts"].tolist() == counts


def test_umd_worked_example():
    r = make_recalibrator("histogram-umd", n_bins=3).fit(S, Y)
    c = _component(r)
    assert_allclose(c["edges"], [4 / 11, 8 / 11])
    assert_allclose(c["values"], [1 / 3, 2 / 3, 1.0])
    # left-closed bins, last closed at 1, 0 in the first bin
    q = r.predict_proba(np.array([0.0, 4 / 11 - 1e-12, 4 / 11, 8 / 11, 1.0]))[:, 1]
    assert_allclose(q, [1 / 3, 1 / 3, 2 / 3, 1.0, 1.0])


def test_zadrozny_elkan_worked_example():
    r = make_recalibrator("histogram-ze", n_bins=3).fit(S, Y)
    assert_allclose(_component(r)["values"], [1 / 4, 3 / 4, 1.0])
    assert _component(r)["counts"].tolist() == [4, 4, 2]


def test_umd_needs_two_rows_per_bin():
    with pytest.raises(FitError, match="n >= 2B"):
        make_recalibrator("histogram-umd", n_bins=6).fit(S, Y)


def test_umd_invariant_to_monotone_transform_of_scores():
    rng = np.random.default_rng(3)
    s = rng.random(500)
    y = (rng.random(500) < s).astype(int)
    a = make_recalibrator("histogram-umd", n_bins=8).fit(s, y)
    b = make_recalibrator("histogram-umd", n_bins=8).fit(s**3, y)
    assert_allclose(_component(a)["values"], _component(b)["values"])
    assert_allclose(a.predict_proba(s), b.predict_proba(s**3))


def test_random_tie_break_splits_tied_mass_like_algorithm_1():
    rng = np.random.default_rng(4)
    s = rng.choice([0.2, 0.5, 0.8], 1000)
    y = (rng.random(1000) < s).astype(int)
    r = make_recalibrator("histogram-umd", n_bins=10, seed=1).fit(s, y)
    c = _component(r)
    # the bins hold exactly Algorithm 1's counts although only three distinct scores exist
    assert_array_equal(c["counts"], np.diff(umd_ranks(1000, 10)) - 1)
    q = r.predict_proba(np.full(4000, 0.5))[:, 1]
    # 0.5 straddles several boundaries: tied test scores mix the adjacent bins' values
    assert np.unique(q).size >= 2
    assert set(np.unique(q)) <= set(np.asarray(c["values"]))
    # reproducible with the same seed
    r2 = make_recalibrator("histogram-umd", n_bins=10, seed=1).fit(s, y)
    assert_array_equal(r2.predict_proba(np.full(4000, 0.5)), r.predict_proba(np.full(4000, 0.5)))
    # without tie-breaking, ties stay together and the tied value maps to one bin
    r3 = make_recalibrator("histogram-umd", n_bins=10, tie_break="none").fit(s, y)
    assert np.unique(r3.predict_proba(np.full(100, 0.5))[:, 1]).size == 1


def test_lexicographic_bins_hand_case():
    edges = np.array([0.2, 0.5, 0.5, 0.8])
    keys = np.array([0.3, 0.1, 0.7, 0.5])
    s = np.array([0.1, 0.2, 0.2, 0.5, 0.5, 0.5, 0.9])
    u = np.array([0.9, 0.2, 0.4, 0.05, 0.5, 0.9, 0.0])
    assert lexicographic_bins(edges, keys, s, u).tolist() == [0, 0, 1, 1, 2, 3, 4]
    assert lexicographic_bins(edges, None, s, None).tolist() == [0, 1, 1, 3, 3, 3, 4]


def test_unique_values_jitter():
    r = make_recalibrator("histogram-umd", n_bins=3, unique_values=True).fit(S, Y)
    v = np.asarray(_component(r)["values"])
    assert_allclose(v, [1 / 3, 2 / 3, 1.0], atol=2e-10)
    assert np.unique(v).size == 3


def test_fixed_width_edges_and_empty_bins():
    s = np.array([0.05, 0.15, 0.3, 0.32, 0.95, 1.0])
    y = np.array([0, 1, 1, 0, 1, 1])
    r = make_recalibrator("histogram-fixed-width", n_bins=10).fit(s, y)
    c = _component(r)
    # 0.3 lies in bin 3 (float edge convention), 1.0 in the last bin
    assert c["counts"].tolist() == [1, 1, 0, 2, 0, 0, 0, 0, 0, 2]
    assert_allclose(c["values"][[0, 1, 3, 9]], [0.0, 1.0, 0.5, 1.0])
    assert_allclose(c["values"][2], 0.25)  # empty: midpoint
    assert any("empty" in m for m in r.params_.info["notes"])


def test_ums_uses_disjoint_parts():
    rng = np.random.default_rng(5)
    s = rng.random(400)
    y = (rng.random(400) < s).astype(int)
    r = make_recalibrator("histogram-ums", n_bins=5, seed=2).fit(s, y)
    c = _component(r)
    assert c["counts"].sum() == 200
    assert c["counts"].min() > 0
    assert len(c["edges"]) == 4
    with pytest.raises(FitError, match="each part"):
        make_recalibrator("histogram-ums", n_bins=30).fit(s[:40], y[:40])


def _oracle_l1_ece(r):
    """True ℓ1-ECE when S ~ U(0, 1) and E[Y | S = s] = s² (bins [a, b): Π = (b³ − a³)/(3(b − a)))."""
    c = _component(r)
    e = np.concatenate([[0.0], np.asarray(c["edges"]), [1.0]])
    a, b = e[:-1], e[1:]
    width = b - a
    true = np.where(width > 0, (b**3 - a**3) / (3 * np.where(width > 0, width, 1)), a**2)
    return float(np.sum(width * np.abs(true - np.asarray(c["values"]))))


@pytest.mark.slow
def test_umd_beats_ums_oracle_ece():
    rng = np.random.default_rng(2021)
    umd, ums = [], []
    for rep in range(300):
        s = rng.random(1000)
        y = (rng.random(1000) < s**2).astype(int)
        umd.append(
            _oracle_l1_ece(make_recalibrator("histogram-umd", n_bins=10, seed=rep).fit(s, y))
        )
        ums.append(
            _oracle_l1_ece(make_recalibrator("histogram-ums", n_bins=10, seed=rep).fit(s, y))
        )
    umd, ums = np.array(umd), np.array(ums)
    # reference §6 V8: E[ℓ1-ECE] of UMD at n = 1000, B = 10 with η = s² is 0.0272
    assert abs(umd.mean() - 0.0272) < 0.002
    assert umd.mean() < ums.mean() - 5 * np.std(umd - ums) / np.sqrt(umd.size)
    assert umd.mean() <= 1 / (2 * np.sqrt(1000 // 10 - 1))  # Thm 4(b), always-valid form
