"""Property tests of binning and binned estimators (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from core.inference.calibration import calibration_error
from core.stats.binning import (
    bin_indices,
    bin_stats,
    equal_mass_by_selection,
    equal_mass_by_sorting,
)

NORMS = (1.0, 2.0, np.inf)
BINNINGS = ("equal-width", "equal-mass")

unit = st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=False)
# a mix of arbitrary floats and values on tenth/edge grids, so ties and edges occur
score = st.one_of(unit, st.integers(0, 20).map(lambda k: k / 20), st.sampled_from([0.1, 0.3, 0.7]))


@st.composite
def binary_data(draw, min_size=1, max_size=60):
    n = draw(st.integers(min_size, max_size))
    p = np.array(draw(st.lists(score, min_size=n, max_size=n)))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    return p, y


@st.composite
def multiclass_data(draw):
    n = draw(st.integers(2, 40))
    k = draw(st.integers(2, 4))
    raw = draw(arrays(np.float64, (n, k), elements=st.floats(0.01, 1.0)))
    # rounding creates tied probabilities across rows
    probs = np.round(raw / raw.sum(axis=1, keepdims=True), draw(st.integers(1, 6)))
    probs[:, -1] = 1.0 - probs[:, :-1].sum(axis=1)
    probs = np.clip(probs, 0.0, 1.0)
    probs /= probs.sum(axis=1, keepdims=True)
    y = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    return probs, y


# local settings object: a loaded profile would change every other test module too
# derandomize: the same examples on every run, so CI is reproducible
examples = settings(max_examples=40, deadline=None, derandomize=True)


@examples
@given(binary_data(), st.integers(1, 20), st.sampled_from(BINNINGS), st.sampled_from(NORMS))
def test_bounded_between_zero_and_one(data, n_bins, binning, norm):
    p, y = data
    kw = {"lens": "binary", "n_bins": n_bins, "binning": binning, "norm": norm}
    for est in ("plugin", "label-binned", "sweep"):
        v = calibration_error(p, y, estimator=est, **kw).value
        assert 0.0 <= v <= 1.0 + 1e-12
    if norm != np.inf:
        v = calibration_error(p, y, estimator="debiased", n_resamples=20, **kw).value
        assert 0.0 <= v <= 1.0 + 1e-12


@examples
@given(binary_data(), st.integers(1, 20), st.sampled_from(BINNINGS), st.sampled_from(NORMS))
def test_jensen_label_binned_at_least_plugin(data, n_bins, binning, norm):
    p, y = data
    kw = {"lens": "binary", "n_bins": n_bins, "binning": binning, "norm": norm}
    plug = calibration_error(p, y, **kw).value
    lb = calibration_error(p, y, estimator="label-binned", **kw).value
    assert lb >= plug - 1e-12


@examples
@given(binary_data(), st.integers(1, 12), st.sampled_from(BINNINGS))
def test_debiased_square_never_above_plugin_square(data, n_bins, binning):
    p, y = data
    kw = {"lens": "binary", "n_bins": n_bins, "binning": binning, "norm": 2}
    plug = calibration_error(p, y, **kw).value
    deb = calibration_error(p, y, estimator="debiased", **kw)
    assert deb.details["signed_square"] <= plug**2 + 1e-12
    assert deb.value <= plug + 1e-9


@examples
@given(binary_data(min_size=2), st.integers(1, 12), st.data())
def test_permutation_invariance(data, n_bins, draw):
    p, y = data
    perm = draw.draw(st.permutations(range(len(p))))
    perm = np.array(perm)
    binning = draw.draw(st.sampled_from(("equal-width", "discrete", "equal-mass")))
    # rank order among equal scores depends on input order unless ties are kept together
    kw = {"lens": "binary", "n_bins": n_bins, "binning": binning, "tie_policy": "keep"}
    for est, norm in (("plugin", 1), ("plugin", np.inf), ("label-binned", 2), ("debiased", 2)):
        a = calibration_error(p, y, estimator=est, norm=norm, **kw).value
        b = calibration_error(p[perm], y[perm], estimator=est, norm=norm, **kw).value
        assert abs(a - b) <= 1e-12
    if binning != "discrete":
        a = calibration_error(p, y, estimator="sweep", **kw).details["b_star"]
        b = calibration_error(p[perm], y[perm], estimator="sweep", **kw).details["b_star"]
        assert a == b


@examples
@given(multiclass_data(), st.data())
def test_classwise_invariant_under_relabelling(data, draw):
    probs, y = data
    k = probs.shape[1]
    perm = np.array(draw.draw(st.permutations(range(k))))
    weights = np.arange(1, k + 1, dtype=float)
    # new class j is old class perm[j]: permute columns, map labels, carry weights along
    inverse = np.argsort(perm)
    probs2, y2, w2 = probs[:, perm], inverse[y], weights[perm]
    norm = draw.draw(st.sampled_from(NORMS))
    binning = draw.draw(st.sampled_from(("equal-width", "equal-mass", "discrete")))
    kw = {"lens": "classwise", "n_bins": 5, "binning": binning, "norm": norm}
    for est in ("plugin", "label-binned") + (("debiased",) if norm == 2.0 else ()):
        a = calibration_error(probs, y, estimator=est, class_weights=weights, **kw)
        b = calibration_error(probs2, y2, estimator=est, class_weights=w2, **kw)
        assert abs(a.value - b.value) <= 1e-12
        np.testing.assert_allclose(
            np.array(a.component_values)[perm], b.component_values, atol=1e-12
        )


@examples
@given(multiclass_data())
def test_top_label_invariant_under_relabelling(data):
    probs, y = data
    # reversing the classes would change argmax tie-breaking; use rows without ties
    if (np.sort(probs, axis=1)[:, -1] == np.sort(probs, axis=1)[:, -2]).any():
        return
    perm = np.arange(probs.shape[1])[::-1]
    a = calibration_error(probs, y).value
    b = calibration_error(probs[:, perm], np.argsort(perm)[y]).value
    assert abs(a - b) <= 1e-12


@examples
@given(binary_data(min_size=2), st.integers(1, 59), st.integers(1, 25))
def test_bin_stats_merge_equals_union(data, cut, n_bins):
    p, y = data
    cut = min(cut, len(p) - 1)
    a = bin_stats(p[:cut], y[:cut], n_bins=n_bins)
    b = bin_stats(p[cut:], y[cut:], n_bins=n_bins)
    whole = bin_stats(p, y, n_bins=n_bins)
    assert (a + b).isclose(whole)
    assert np.array_equal((a + b).counts, whole.counts)


@examples
@given(arrays(np.float64, st.integers(1, 200), elements=score), st.integers(1, 300))
def test_equal_width_index_is_exact(s, n_bins):
    idx, edges = bin_indices(s, n_bins=n_bins)
    # a score lies in [edges[k], edges[k+1]) (last bin closed), compared exactly in float
    assert np.all(edges[idx] <= s)
    last = idx == n_bins - 1
    assert np.all(s[~last] < edges[idx[~last] + 1])


@examples
@given(arrays(np.float64, st.integers(1, 200), elements=score), st.integers(1, 40))
def test_equal_mass_split_sizes_and_order(s, n_bins):
    idx, _ = bin_indices(s, binning="equal-mass", n_bins=n_bins)
    counts = np.bincount(idx, minlength=n_bins)
    assert counts.max() - counts.min() <= 1
    # bins are contiguous in score order
    order = np.argsort(s, kind="stable")
    assert np.all(np.diff(idx[order]) >= 0)
    keep, keep_edges = bin_indices(s, binning="equal-mass", n_bins=n_bins, tie_policy="keep")
    assert keep.max() + 1 == len(keep_edges) - 1 <= n_bins
    assert np.all(np.bincount(keep) >= 1)
    assert all(len(np.unique(keep[s == v])) == 1 for v in np.unique(s))


@examples
@given(
    arrays(np.float64, st.integers(1, 300), elements=score),
    st.integers(1, 400),
    st.sampled_from(("split", "keep")),
)
def test_equal_mass_selection_equals_the_sort(s, n_bins, tie_policy):
    # the score strategy draws from a grid of 21 values and three fixed ones: long runs of
    # ties, on and across boundaries; n_bins > n gives empty bins
    idx, edges = equal_mass_by_selection(s, n_bins, tie_policy)
    ref_idx, ref_edges = equal_mass_by_sorting(s, n_bins, tie_policy)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(edges, ref_edges)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.integers(1, 2_000),
    st.integers(1, 60),
    st.integers(1, 40),
    st.sampled_from(("split", "keep")),
    st.integers(0, 2**32 - 1),
)
def test_equal_mass_selection_equals_the_sort_on_few_distinct_values(
    n, n_values, n_bins, tie_policy, seed
):
    rng = np.random.default_rng(seed)
    s = rng.choice(rng.random(n_values), size=n)  # every score tied with about n/n_values
    idx, edges = equal_mass_by_selection(s, n_bins, tie_policy)
    ref_idx, ref_edges = equal_mass_by_sorting(s, n_bins, tie_policy)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(edges, ref_edges)


@examples
@given(
    arrays(np.float64, st.integers(2, 80), elements=score),
    st.sampled_from(("tv", "l1", "l2")),
    st.integers(1, 40),
)
def test_two_column_pair_selection_equals_sorting_every_pair(s, metric, limit):
    # the k-th pairwise distance of [1 − s, s] found by counting along sorted rows, with a
    # small selection limit so the narrowing loop runs; ties come from the score grid
    from core.estimators import kernel as kern

    p = np.column_stack([1.0 - s, s])
    d = kern.pairwise_distances(p, metric=metric)
    upper = np.sort(d[np.triu_indices(s.shape[0], 1)])
    columns = kern._opposite_columns(p)
    saved = kern.EXACT_SELECT_MAX
    kern.EXACT_SELECT_MAX = limit
    try:
        for rank in {1, (upper.shape[0] + 1) // 2, upper.shape[0] // 2 + 1, upper.shape[0]}:
            if rank <= upper.shape[0]:
                assert kern._kth_pairs_sorted(*columns, rank, metric) == upper[rank - 1]
    finally:
        kern.EXACT_SELECT_MAX = saved
