"""Binning schemes and bin statistics: hand-computed cases and edge conventions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import core.stats.binning as binning_module
from core.base.errors import ConfigError, DataError
from core.stats.binning import (
    BINNINGS,
    BinStats,
    bin_indices,
    bin_stats,
    equal_mass_by_selection,
    equal_mass_by_sorting,
    equal_mass_starts,
    equal_width_edges,
)


def _reference_equal_width(s: np.ndarray, n_bins: int) -> np.ndarray:
    """Bin by exact float comparison with the edges np.arange(B+1)/B (score on an edge goes up)."""
    edges = np.arange(n_bins + 1) / n_bins
    return np.searchsorted(edges[1:-1], s, side="right")


# --------------------------------------------------------------------------- equal width


def test_registry_names():
    assert BINNINGS.names() == ["equal-width", "equal-mass", "discrete"]


def test_equal_width_point_three_is_in_bin_three():
    idx, edges = bin_indices([0.3], n_bins=10)
    assert idx.tolist() == [3]
    assert edges[3] == 0.3  # np.arange(11)/10 is the correctly rounded k/10
    # 0.1 * 3 = 0.30000000000000004 is above the edge: still bin 3
    assert bin_indices([0.1 * 3], n_bins=10)[0].tolist() == [3]
    # the float just below 0.3 is in bin 2
    assert bin_indices([np.nextafter(0.3, 0.0)], n_bins=10)[0].tolist() == [2]


def test_equal_width_peer_table_row():
    # peers.md §e.1: our convention is the floor(10x) row (calibra / TFP float32), 1.0 in the last bin
    x = [0.0, 0.1, 0.2, 0.3, 0.5, 0.6, 0.7, 0.9, 1.0]
    assert bin_indices(x, n_bins=10)[0].tolist() == [0, 1, 2, 3, 5, 6, 7, 9, 9]


@pytest.mark.parametrize("n_bins", list(range(1, 121)))
def test_equal_width_every_float_edge_lands_in_upper_bin(n_bins):
    # each edge is the double nearest k/B (checked with exact fractions), and lands in bin k
    edges = equal_width_edges(n_bins)
    for k in range(n_bins + 1):
        assert Fraction(edges[k]) == Fraction(float(Fraction(k, n_bins)))
    idx, _ = bin_indices(edges, n_bins=n_bins)
    assert idx.tolist() == [min(k, n_bins - 1) for k in range(n_bins + 1)]
    below = np.nextafter(edges[1:], 0.0)
    assert bin_indices(below, n_bins=n_bins)[0].tolist() == list(range(n_bins))
    above = np.nextafter(edges[:-1], 1.0)
    assert bin_indices(above, n_bins=n_bins)[0].tolist() == list(range(n_bins))


@pytest.mark.parametrize("n_bins", [1, 3, 7, 10, 15, 49, 97, 100, 107, 1000])
def test_equal_width_tenths_and_random_match_exact_comparison(n_bins):
    rng = np.random.default_rng(n_bins)
    tenths = np.array([float(Fraction(j, 10)) for j in range(11)])
    k_over_b = np.arange(n_bins + 1) / n_bins
    s = np.concatenate([tenths, 0.1 * np.arange(11), k_over_b, rng.random(5000), [0.0, 1.0]])
    s = np.clip(s, 0.0, 1.0)
    idx, _ = bin_indices(s, n_bins=n_bins)
    np.testing.assert_array_equal(idx, _reference_equal_width(s, n_bins))


def test_equal_width_zero_and_one():
    idx, edges = bin_indices([0.0, 1.0, 0.999999], n_bins=4)
    assert idx.tolist() == [0, 3, 3]
    np.testing.assert_array_equal(edges, [0.0, 0.25, 0.5, 0.75, 1.0])


def test_equal_width_single_bin():
    idx, edges = bin_indices([0.0, 0.5, 1.0], n_bins=1)
    assert idx.tolist() == [0, 0, 0]
    assert edges.tolist() == [0.0, 1.0]


def test_sklearn_uniform_calibration_curve_matches_off_the_edges():
    sklearn_calibration = pytest.importorskip("sklearn.calibration")
    rng = np.random.default_rng(3)
    s = rng.random(3000) ** 2  # continuous scores: no score lies on an edge
    y = (rng.random(3000) < s).astype(float)
    prob_true, prob_pred = sklearn_calibration.calibration_curve(
        y, s, n_bins=10, strategy="uniform"
    )
    st = bin_stats(s, y, n_bins=10)
    full = st.counts > 0
    np.testing.assert_allclose(st.mean_label[full], prob_true, rtol=1e-12)
    np.testing.assert_allclose(st.mean_score[full], prob_pred, rtol=1e-12)
    # Documented difference: sklearn's bins are right-closed ((0.2, 0.3] holds 0.3), ours are
    # left-closed ([0.3, 0.4) holds 0.3), so scores exactly on an inner edge differ by one bin.
    pt, pp = sklearn_calibration.calibration_curve([1, 0], [0.3, 0.35], n_bins=10)
    assert len(pt) == 2  # sklearn: two bins
    assert bin_stats([0.3, 0.35], [1, 0], n_bins=10).counts[3] == 2  # ours: one bin


# --------------------------------------------------------------------------- equal mass


@pytest.mark.parametrize("n", [1, 2, 3, 7, 10, 14, 100, 101])
@pytest.mark.parametrize("n_bins", [1, 2, 3, 4, 6, 15])
def test_equal_mass_sizes_and_starts(n, n_bins):
    rng = np.random.default_rng(n * 100 + n_bins)
    s = rng.random(n)
    idx, edges = bin_indices(s, binning="equal-mass", n_bins=n_bins)
    counts = np.bincount(idx, minlength=n_bins)
    assert counts.shape == (n_bins,)
    assert counts.max() - counts.min() <= 1
    if n_bins <= n:
        assert counts.min() >= 1
    starts = np.array([(k * n + n_bins - 1) // n_bins for k in range(n_bins + 1)])
    np.testing.assert_array_equal(equal_mass_starts(n, n_bins), starts)
    order = np.argsort(s, kind="stable")
    expected = np.searchsorted(starts, np.arange(n), side="right") - 1
    np.testing.assert_array_equal(idx[order], expected)
    assert edges[0] == 0.0 and edges[-1] == 1.0 and np.all(np.diff(edges) >= 0)


def test_equal_mass_ceil_convention_small():
    # n = 10, B = 4: starts ceil(k*10/4) = 0, 3, 5, 8 -> sizes 3, 2, 3, 2
    s = np.linspace(0.05, 0.95, 10)[::-1]
    idx, edges = bin_indices(s, binning="equal-mass", n_bins=4)
    assert np.bincount(idx).tolist() == [3, 2, 3, 2]
    np.testing.assert_allclose(edges[1:-1], [0.3, 0.5, 0.8])  # midpoints of ranks 2|3, 4|5, 7|8


def test_equal_mass_all_equal_scores_split_in_input_order():
    s = np.full(7, 0.4)
    idx, edges = bin_indices(s, binning="equal-mass", n_bins=3)
    assert idx.tolist() == [0, 0, 0, 1, 1, 2, 2]  # ranks 0-2, 3-4, 5-6 (stable sort)
    np.testing.assert_array_equal(edges, [0.0, 0.4, 0.4, 1.0])
    keep, keep_edges = bin_indices(s, binning="equal-mass", n_bins=3, tie_policy="keep")
    assert keep.tolist() == [0] * 7
    np.testing.assert_array_equal(keep_edges, [0.0, 1.0])


def test_equal_mass_more_bins_than_points():
    s = [0.9, 0.1, 0.5]
    idx, edges = bin_indices(s, binning="equal-mass", n_bins=5)
    assert len(edges) == 6
    counts = np.bincount(idx, minlength=5)
    assert counts.sum() == 3 and (counts == 0).sum() == 2
    keep, keep_edges = bin_indices(s, binning="equal-mass", n_bins=5, tie_policy="keep")
    assert keep.tolist() == [2, 0, 1] and len(keep_edges) == 4


@pytest.mark.parametrize(
    ("values", "n_bins", "kumar_edges"),
    [
        ([0.3, 0.5, 0.2, 0.3, 0.5, 0.7], 2, [0.4, 1.0]),
        ([0.3, 0.5, 0.2, 0.3, 0.5, 0.7], 3, [0.3, 0.5, 1.0]),
        ([0.3, 0.5, 1, 1, 1, 1], 3, [0.75, 1.0]),
        ([0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], 3, [0.55, 0.75, 1.0]),
    ],
)
def test_equal_mass_keep_matches_kumar_get_equal_bins(values, n_bins, kumar_edges):
    # Kumar et al. (000 §2.1b): midpoint edges, ties to the lower bin, searchsorted side="left"
    idx, edges = bin_indices(values, binning="equal-mass", n_bins=n_bins, tie_policy="keep")
    kumar_idx = np.searchsorted(kumar_edges, values, side="left")
    np.testing.assert_array_equal(idx, kumar_idx)
    assert len(edges) == len(kumar_edges) + 1


def test_equal_mass_keep_edges_reproduce_assignment_and_never_split_a_value():
    rng = np.random.default_rng(11)
    s = np.round(rng.random(500), 2)  # many ties
    idx, edges = bin_indices(s, binning="equal-mass", n_bins=15, tie_policy="keep")
    np.testing.assert_array_equal(np.searchsorted(edges[1:-1], s, side="left"), idx)
    frame = pd.DataFrame({"s": s, "b": idx})
    assert frame.groupby("s")["b"].nunique().max() == 1
    assert len(edges) - 1 <= 15
    assert np.bincount(idx).min() >= 1
    split, _ = bin_indices(s, binning="equal-mass", n_bins=15)
    assert np.ptp(np.bincount(split)) <= 1


def _assert_same_bins(scores, n_bins, tie_policy):
    idx, edges = equal_mass_by_selection(np.asarray(scores, float), n_bins, tie_policy)
    ref_idx, ref_edges = equal_mass_by_sorting(np.asarray(scores, float), n_bins, tie_policy)
    assert idx.dtype == ref_idx.dtype
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(edges, ref_edges)
    return idx, edges


def test_equal_mass_selection_resolves_a_tie_block_by_input_order():
    # sorted (stable): 0.2 (row 1), 0.5 (rows 0, 2, 3, 5), 0.8 (row 4); ranks 0-1, 2-3, 4-5
    s = [0.5, 0.2, 0.5, 0.5, 0.8, 0.5]
    idx, edges = _assert_same_bins(s, 3, "split")
    assert idx.tolist() == [0, 0, 1, 1, 2, 2]
    assert edges.tolist() == [0.0, 0.5, 0.5, 1.0]
    # both boundaries cut the run of 0.5 and move to its end (rank 5): two bins remain
    idx, edges = _assert_same_bins(s, 3, "keep")
    assert idx.tolist() == [0, 0, 0, 0, 1, 0]
    assert edges.tolist() == [0.0, 0.65, 1.0]


@pytest.mark.parametrize("tie_policy", ["split", "keep"])
def test_equal_mass_selection_hand_cases(tie_policy):
    _assert_same_bins(np.full(7, 0.4), 3, tie_policy)  # one run of ties
    _assert_same_bins([0.9, 0.1, 0.5], 5, tie_policy)  # more bins than rows
    _assert_same_bins([0.3], 4, tie_policy)
    _assert_same_bins([0.0, 1.0, 1.0, 1.0, 0.0, 1.0], 4, tie_policy)  # runs at 0 and 1
    # a run that spans several boundaries, one boundary on its first row
    _assert_same_bins([0.1, 0.2, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.9, 0.95], 5, tie_policy)


@pytest.mark.parametrize("tie_policy", ["split", "keep"])
@pytest.mark.parametrize("n_bins", [1, 15, 30])
def test_equal_mass_large_input_selects_and_matches_the_sort(monkeypatch, tie_policy, n_bins):
    rng = np.random.default_rng(n_bins)
    s = np.concatenate([np.round(rng.random(12_000), 2), rng.random(8_000), [0.5] * 500])
    s = s[rng.permutation(s.shape[0])]
    ref = equal_mass_by_sorting(s, n_bins, tie_policy)

    def refuse(*args, **kwargs):
        raise AssertionError("sorted although the boundaries could be selected")

    monkeypatch.setattr(binning_module, "equal_mass_by_sorting", refuse)
    idx, edges = bin_indices(s, binning="equal-mass", n_bins=n_bins, tie_policy=tie_policy)
    np.testing.assert_array_equal(idx, ref[0])
    np.testing.assert_array_equal(edges, ref[1])


def test_equal_mass_uses_a_given_order_and_sorts_small_inputs(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("selected although the order was given or n is small")

    monkeypatch.setattr(binning_module, "equal_mass_by_selection", refuse)
    s = np.random.default_rng(0).random(20_000)
    func = BINNINGS.get("equal-mass").func
    idx, _ = func(s, 15, "split", np.argsort(s, kind="stable"))
    np.testing.assert_array_equal(np.bincount(idx), np.diff(equal_mass_starts(20_000, 15)))
    func(s[:100], 3, "split")  # few rows
    func(s, 1000, "split")  # few rows per bin


# --------------------------------------------------------------------------- discrete


def test_discrete_bins_kumar_vector():
    idx, edges = bin_indices([0.3, 0.5, 0.2, 0.3, 0.5, 0.7], binning="discrete", n_bins=99)
    np.testing.assert_allclose(edges, [0.0, 0.25, 0.4, 0.6, 1.0])
    assert idx.tolist() == [1, 2, 0, 1, 2, 3]


def test_discrete_single_value_and_extremes():
    idx, edges = bin_indices([0.0, 1.0, 0.0], binning="discrete")
    assert idx.tolist() == [0, 1, 0]
    np.testing.assert_array_equal(edges, [0.0, 0.5, 1.0])
    idx, edges = bin_indices([0.6] * 4, binning="discrete")
    assert idx.tolist() == [0] * 4 and edges.tolist() == [0.0, 1.0]


# --------------------------------------------------------------------------- BinStats


def test_bin_stats_hand_example():
    st = bin_stats([0.2, 0.8, 0.9, 0.4], [0, 1, 1, 1], n_bins=2)
    assert st.counts.dtype == np.int64
    assert st.counts.tolist() == [2, 2]
    np.testing.assert_allclose(st.score_sums, [0.6, 1.7])
    np.testing.assert_allclose(st.label_sums, [1.0, 2.0])
    np.testing.assert_allclose(st.mean_score, [0.3, 0.85])
    np.testing.assert_allclose(st.weights, [0.5, 0.5])
    assert st.n == 4 and st.n_bins == 2 and st.scheme == "equal-width"


def test_bin_stats_empty_and_single_point_bins_and_frame():
    st = bin_stats([0.05, 0.95, 0.97], [1, 0, 1], n_bins=4)
    assert st.counts.tolist() == [1, 0, 0, 2]
    frame = st.to_frame()
    assert list(frame.columns) == [
        "bin",
        "lower",
        "upper",
        "count",
        "mean_score",
        "mean_label",
        "gap",
    ]
    assert frame["mean_score"].isna().tolist() == [False, True, True, False]
    np.testing.assert_allclose(frame["gap"].iloc[[0, 3]], [0.05 - 1.0, 0.96 - 0.5])
    np.testing.assert_allclose(frame["lower"], [0.0, 0.25, 0.5, 0.75])
    np.testing.assert_allclose(frame["upper"], [0.25, 0.5, 0.75, 1.0])


def test_bin_stats_matches_masks():
    rng = np.random.default_rng(5)
    s = rng.random(1000)
    y = (rng.random(1000) < s).astype(float)
    for binning in BINNINGS.names():
        idx, edges = bin_indices(s, binning=binning, n_bins=7)
        st = bin_stats(s, y, binning=binning, n_bins=7)
        for k in range(st.n_bins):
            m = idx == k
            assert st.counts[k] == m.sum()
            assert st.score_sums[k] == pytest.approx(s[m].sum(), abs=1e-12)
            assert st.label_sums[k] == pytest.approx(y[m].sum(), abs=1e-12)


def test_bin_stats_add_merges_chunks():
    rng = np.random.default_rng(8)
    s = rng.random(300)
    y = (rng.random(300) < 0.5).astype(float)
    whole = bin_stats(s, y, n_bins=12)
    parts = [bin_stats(s[i : i + 100], y[i : i + 100], n_bins=12) for i in (0, 100, 200)]
    assert (parts[0] + parts[1] + parts[2]).isclose(whole)
    assert sum(parts).isclose(whole)
    assert not parts[0].isclose(whole)


def test_bin_stats_add_rejects_different_edges():
    a = bin_stats([0.1, 0.6], [0, 1], n_bins=2)
    b = bin_stats([0.1, 0.6], [0, 1], n_bins=3)
    with pytest.raises(ConfigError, match="identical edges"):
        a + b
    c = bin_stats([0.1, 0.6], [0, 1], binning="equal-mass", n_bins=2)
    with pytest.raises(ConfigError):
        a + c


def test_bin_stats_is_frozen():
    st = bin_stats([0.1], [1], n_bins=2)
    with pytest.raises(AttributeError):
        st.scheme = "x"  # type: ignore[misc]
    assert isinstance(st, BinStats)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "15", None])
def test_n_bins_validated(bad):
    with pytest.raises(ConfigError, match="n_bins"):
        bin_indices([0.1, 0.2], n_bins=bad)


def test_numpy_integer_n_bins_accepted():
    assert bin_indices([0.1, 0.9], n_bins=np.int64(2))[0].tolist() == [0, 1]


@pytest.mark.parametrize("bad", [[0.1, 1.2], [-0.1, 0.5], [0.1, np.nan], [0.1, np.inf], []])
def test_scores_validated(bad):
    with pytest.raises(DataError):
        bin_indices(bad)


def test_shape_and_names_validated():
    with pytest.raises(DataError, match="1-D"):
        bin_indices([[0.1, 0.2]])
    with pytest.raises(DataError, match="labels"):
        bin_stats([0.1, 0.2], [1])
    with pytest.raises(ConfigError, match="Choose one of"):
        bin_indices([0.1], binning="quantile")
    with pytest.raises(ConfigError, match="tie_policy"):
        bin_indices([0.1], binning="equal-mass", tie_policy="random")
