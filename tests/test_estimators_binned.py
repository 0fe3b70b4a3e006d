"""Binned estimators: hand-computed cases, Kumar et al.'s exact vectors, Roelofs et al.'s checks."""

from __future__ import annotations

import numpy as np
import pytest

from core.base.errors import ConfigError
from core.estimators import ESTIMATORS, aggregate, debiased_sq_from_stats, plugin_from_stats
from core.estimators.base import NormalStream
from core.estimators.binned import (
    debiased_l1_from_stats,
    sweep_b_star,
    sweep_candidate_starts,
    sweep_row_starts,
    sweep_search,
)
from core.inference.calibration import calibration_error
from core.stats.binned_view import bin_view
from core.stats.binning import bin_indices, bin_stats
from core.stats.lenses import LensView

# Kumar et al. 2019, reference 000 §3.12
V1_P = [0.5, 0.5, 0.5, 0.6, 0.5, 0.6, 0.6, 0.6, 0.6]
V1_Y = [0, 1, 0, 1, 0, 1, 1, 1, 0]
V2_P = np.array([[0.6, 0.3, 0.1]] * 6 + [[0.1, 0.8, 0.1]] * 4 + [[0.1, 0.0, 0.9]] * 4)
V2_Y = [0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2]
V3_P = np.array(
    [[0.8, 0.1, 0.1], [0.6, 0.2, 0.2], [0, 0.9, 0.1], [0, 1, 0], [0.3, 0.3, 0.4], [0.15, 0, 0.85]]
)  # 000 §3.12 prints [0.2, 0, 0.85] (sums to 1.05); only the top label and 0.85 matter
V3_Y = [0, 0, 1, 1, 0, 2]


def ce(p, y, **kw):
    return calibration_error(p, y, **kw).value


def test_registry_entries_and_meta():
    assert ESTIMATORS.names(binned=True)[:4] == ["plugin", "label-binned", "debiased", "sweep"]
    for name in ("plugin", "label-binned", "sweep"):
        assert ESTIMATORS.get(name).norms == (1.0, 2.0, np.inf)
    assert ESTIMATORS.get("debiased").norms == (1.0, 2.0)
    assert ESTIMATORS.names(lenses="canonical") == [
        n for n in ESTIMATORS.names() if "canonical" in ESTIMATORS.get(n).lenses
    ]
    assert "canonical" not in ESTIMATORS.get("plugin").lenses


# --------------------------------------------------------------------------- plug-in


def test_kumar_v1_discrete_plugin():
    kw = {"lens": "binary", "binning": "discrete"}
    assert ce(V1_P, V1_Y, norm=1, **kw) == pytest.approx(4 / 9 * 0.25 + 5 / 9 * 0.2, abs=1e-15)
    assert ce(V1_P, V1_Y, norm=2, **kw) == pytest.approx(np.sqrt(0.05), abs=1e-15)
    assert ce(V1_P, V1_Y, norm="inf", **kw) == pytest.approx(0.25, abs=1e-15)


def test_kumar_v2_marginal_and_top_label_plugin():
    kw = {"binning": "discrete"}
    r = calibration_error(V2_P, V2_Y, lens="classwise", norm=2, **kw)
    assert r.value == pytest.approx(0.115813, abs=5e-7)
    np.testing.assert_allclose(
        np.square(r.component_values), [0.029048, 0.008333, 0.002857], atol=5e-7
    )
    top = (6 / 14 * (5 / 6 - 0.6) ** 2 + 4 / 14 * 0.05**2 + 4 / 14 * 0.1**2) ** 0.5
    assert ce(V2_P, V2_Y, lens="top-label", norm=2, **kw) == pytest.approx(top, abs=1e-15)
    assert top == pytest.approx(0.164027, abs=5e-7)
    assert ce(V2_P, V2_Y, lens="top-label", norm=1, **kw) == pytest.approx(0.142857, abs=5e-7)


def test_kumar_v3_top_label_ece():
    assert ce(V3_P, V3_Y, n_bins=3) == pytest.approx(4 / 6 * (1 - 3.55 / 4), abs=1e-15)
    assert ce(V3_P, V3_Y, n_bins=3) == pytest.approx(0.075, abs=1e-15)
    em = {"binning": "equal-mass", "n_bins": 2}
    assert ce(V3_P, V3_Y, norm=1, **em) == pytest.approx(0.075, abs=1e-15)
    l2 = (0.5 * (2 / 3 - 0.6) ** 2 + 0.5 * (1 - 2.75 / 3) ** 2) ** 0.5
    assert ce(V3_P, V3_Y, norm=2, **em) == pytest.approx(l2, abs=1e-15)


def test_kumar_v4_v5_equal_width_versus_equal_mass():
    p, y = [0.6, 0.7, 0.8, 0.9], [0, 0, 1, 1]
    assert ce(p, y, lens="binary", n_bins=2) == pytest.approx(0.25, abs=1e-15)
    assert ce(p, y, lens="binary", binning="equal-mass", n_bins=2) == pytest.approx(0.4, abs=1e-15)
    p = [0.1, 0.7, 0.5, 0.9]
    em = {"lens": "binary", "binning": "equal-mass"}
    assert ce(p, [0, 1, 0, 1], n_bins=2, **em) == pytest.approx(0.25, abs=1e-15)
    assert ce(p, [0, 1, 0, 1], n_bins=4, **em) == pytest.approx(0.25, abs=1e-15)
    assert ce(p, [0, 1, 1, 1], n_bins=2, **em) == pytest.approx(0.2, abs=1e-15)
    assert ce(p, [0, 1, 1, 1], n_bins=4, **em) == pytest.approx(0.25, abs=1e-15)


def test_kumar_v6_missing_classes_and_single_bin():
    assert ce([[0.9, 0.1], [0.8, 0.2]], [0, 0]) == pytest.approx(0.15, abs=1e-15)
    b = {"lens": "binary", "n_bins": 1}
    assert ce([0.9, 0.1, 0.3], [0, 0, 0], **b) == pytest.approx(1.3 / 3, abs=1e-15)
    assert ce([0.9, 0.1, 0.3], [1, 1, 1], **b) == pytest.approx(1.7 / 3, abs=1e-15)


@pytest.mark.parametrize("norm", [1, 2, np.inf])
@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_one_bin_is_mean_gap(norm, binning):
    rng = np.random.default_rng(1)
    p = rng.random(50)
    y = (rng.random(50) < 0.3).astype(int)
    v = ce(p, y, lens="binary", n_bins=1, norm=norm, binning=binning)
    assert v == pytest.approx(abs(p.mean() - y.mean()), abs=1e-14)


def test_plugin_hand_example_with_empty_and_single_point_bins():
    # bins of width 1/4: [0.1] y=1, empty, empty, [0.8, 0.9] y=(0, 1)
    p, y = [0.1, 0.8, 0.9], [1, 0, 1]
    kw = {"lens": "binary", "n_bins": 4}
    assert ce(p, y, norm=1, **kw) == pytest.approx((0.9 + 2 * 0.35) / 3)
    assert ce(p, y, norm=2, **kw) == pytest.approx(np.sqrt((0.81 + 2 * 0.35**2) / 3))
    assert ce(p, y, norm=np.inf, **kw) == pytest.approx(0.9)  # max over non-empty bins


def test_scores_zero_and_one():
    p, y = [0.0, 0.0, 1.0, 1.0], [0, 1, 1, 1]
    kw = {"lens": "binary", "n_bins": 10}
    assert ce(p, y, **kw) == pytest.approx(0.5 * 0.5)
    assert ce(p, y, estimator="label-binned", **kw) == pytest.approx(0.25)
    r = calibration_error(p, y, estimator="debiased", norm=2, **kw)
    # bin 0: gap² = 0.25, correction 0.25/(2-1) → 0; bin 9: gap 0, correction 0
    assert r.details["signed_square"] == pytest.approx(0.5 * (0.25 - 0.25))


def test_all_equal_scores():
    p = np.full(8, 0.7)
    y = np.array([1, 1, 0, 1, 1, 0, 1, 1])
    gap = abs(0.7 - 0.75)
    for binning in ("equal-width", "equal-mass", "discrete"):
        for est in ("plugin", "label-binned"):
            v = ce(p, y, lens="binary", binning=binning, estimator=est, tie_policy="keep")
            assert v == pytest.approx(gap, abs=1e-15)
    # equal mass with split ties: ranks in input order, 4 bins of 2
    v = ce(p, y, lens="binary", binning="equal-mass", n_bins=4, norm=1)
    assert v == pytest.approx(np.mean(np.abs(0.7 - np.array([1.0, 0.5, 1.0, 0.5]))))


# --------------------------------------------------------------------------- label-binned


def test_label_binned_hand_example():
    p, y = [0.2, 0.4, 0.9], [0, 1, 1]
    kw = {"lens": "binary", "n_bins": 2, "estimator": "label-binned"}
    # bin 0: ȳ = 0.5 → |0.2-0.5|, |0.4-0.5|; bin 1: |0.9-1|
    assert ce(p, y, norm=1, **kw) == pytest.approx((0.3 + 0.1 + 0.1) / 3)
    assert ce(p, y, norm=2, **kw) == pytest.approx(np.sqrt((0.09 + 0.01 + 0.01) / 3))
    assert ce(p, y, norm=np.inf, **kw) == pytest.approx(0.3)
    assert ce(p, y, norm=2, lens="binary", n_bins=2) < ce(p, y, norm=2, **kw)


# --------------------------------------------------------------------------- debiased


def test_kumar_v1_debiased_is_zero():
    r = calibration_error(
        V1_P, V1_Y, lens="binary", binning="discrete", estimator="debiased", norm=2
    )
    assert abs(r.details["signed_square"]) < 1e-15
    assert r.value < 1e-7
    assert r.value < ce(V1_P, V1_Y, lens="binary", binning="discrete", norm=2)


def test_kumar_v2_debiased_aggregates_signed_squares_and_clips_once():
    r = calibration_error(
        V2_P, V2_Y, lens="classwise", binning="discrete", estimator="debiased", norm=2
    )
    np.testing.assert_allclose(
        r.details["component_signed_squares"], [0.017143, -0.021429, -0.004286], atol=5e-7
    )
    assert r.details["signed_square"] == pytest.approx(np.mean([0.12 / 7, -0.15 / 7, -0.03 / 7]))
    assert r.value == 0.0  # paper style; the per-class clip would give 0.075593
    assert np.sqrt(np.mean(np.maximum(r.details["component_signed_squares"], 0))) == pytest.approx(
        0.075593, abs=5e-7
    )
    top = calibration_error(V2_P, V2_Y, binning="discrete", estimator="debiased", norm=2)
    assert top.details["signed_square"] == pytest.approx(-0.002857, abs=5e-7)
    assert top.value == 0.0


def test_debiased_single_point_bin_contributes_zero():
    # bin 0 holds one point; bin 1: scores (0.8, 0.9, 0.85), labels (0, 0, 1)
    p, y = [0.1, 0.8, 0.9, 0.85], [1, 0, 0, 1]
    r = calibration_error(p, y, lens="binary", n_bins=2, estimator="debiased", norm=2)
    term = 3 / 4 * ((0.85 - 1 / 3) ** 2 - (1 / 3) * (2 / 3) / 2)
    assert r.details["signed_square"] == pytest.approx(term, abs=1e-15)
    assert r.value == pytest.approx(np.sqrt(term))
    assert r.details["small_bins"] == (1,)


def test_debiased_never_above_plugin_square():
    rng = np.random.default_rng(4)
    for _ in range(20):
        p = rng.random(60)
        y = (rng.random(60) < p).astype(int)
        r = calibration_error(p, y, lens="binary", estimator="debiased", norm=2, n_bins=6)
        plug = ce(p, y, lens="binary", norm=2, n_bins=6)
        assert r.details["signed_square"] <= plug**2 + 1e-15
        assert r.value <= plug + 1e-12


def test_debiased_l1_is_seeded_and_matches_kumar_algorithm():
    rng = np.random.default_rng(2)
    p = rng.random(400)
    y = (rng.random(400) < p**1.3).astype(int)
    kw = {"lens": "binary", "estimator": "debiased", "norm": 1, "binning": "equal-mass"}
    a = calibration_error(p, y, seed=7, **kw)
    b = calibration_error(p, y, seed=7, **kw)
    c = calibration_error(p, y, seed=8, **kw)
    assert a.value == b.value and a.value != c.value
    assert a.details["n_resamples"] == 1000
    # Kumar's normal_debiased_ce, written out: 2·plugin − mean of resampled ECEs
    st = bin_stats(p, y, binning="equal-mass", n_bins=15)
    w, fbar, ybar = st.weights, st.mean_score, st.mean_label
    draws = np.random.default_rng(7).normal(
        ybar, np.sqrt(ybar * (1 - ybar) / st.counts), (1000, 15)
    )
    expected = 2 * np.sum(w * np.abs(fbar - ybar)) - np.mean(np.abs(draws - fbar) @ w)
    assert a.details["signed_value"] == pytest.approx(expected, abs=1e-12)
    assert a.value < ce(p, y, lens="binary", norm=1, binning="equal-mass")


def _kumar_l1(counts, score_sums, label_sums, rng, n_draws):
    """normal_debiased_ce (power 1) over the non-empty bins, drawing from ``rng``."""
    keep = counts > 0
    c, s, lab = counts[keep], score_sums[keep], label_sums[keep]
    w, fbar, ybar = c / c.sum(), s / c, lab / c
    draws = rng.normal(ybar, np.sqrt(ybar * (1 - ybar) / c), size=(n_draws, c.size))
    return 2 * np.sum(w * np.abs(fbar - ybar)) - np.mean(np.abs(draws - fbar) @ w)


def test_debiased_l1_kernel_rows_read_one_stream_from_their_offsets():
    rng = np.random.default_rng(31)
    counts = rng.integers(0, 9, size=(4, 3, 6)).astype(float)
    counts[0, 0] = [0, 5, 0, 0, 1, 7]  # empty and one-point bins
    label_sums = np.floor(counts * rng.random(counts.shape))
    score_sums = counts * rng.random(counts.shape)
    offset = rng.integers(0, 50, size=(4, 3))
    g = np.random.default_rng(5)
    batch = debiased_l1_from_stats(counts, score_sums, label_sums, g, 40, offset=offset)
    assert batch.shape == (4, 3)
    for i in np.ndindex(4, 3):
        own = np.random.default_rng(5)
        own.standard_normal(offset[i])  # the stream before the row's offset
        expected = _kumar_l1(counts[i], score_sums[i], label_sums[i], own, 40)
        assert batch[i] == pytest.approx(expected, abs=1e-13)
    # the generator advanced past the longest row: offset + draws × non-empty bins
    used = int(np.max(offset + 40 * (counts > 0).sum(axis=-1)))
    assert g.standard_normal() == np.random.default_rng(5).standard_normal(used + 1)[-1]


def test_debiased_l1_kernel_single_set_consumes_exactly_its_draws():
    # one set of bins is exactly Kumar's draw: rng.normal(ȳ, σ, size=(D, m))
    counts = np.array([4.0, 0.0, 6.0])
    score_sums, label_sums = np.array([1.2, 0.0, 4.1]), np.array([1.0, 0.0, 5.0])
    a, b = np.random.default_rng(2), np.random.default_rng(2)
    value = float(debiased_l1_from_stats(counts, score_sums, label_sums, a, 25))
    assert value == pytest.approx(_kumar_l1(counts, score_sums, label_sums, b, 25), abs=1e-15)
    assert a.random() == b.random()
    # no label noise: σ = 0 and the value is the plug-in ECE; no points: NaN
    no_noise = debiased_l1_from_stats([2, 3], [0.4, 2.4], [0, 3], a, 10)
    assert float(no_noise) == pytest.approx((0.4 + 0.6) / 5, abs=1e-15)
    assert np.isnan(debiased_l1_from_stats([0, 0], [0.0, 0.0], [0.0, 0.0], a, 10))


def test_debiased_l1_without_label_noise_equals_plugin():
    # every bin has ȳ ∈ {0, 1}: the resampling has zero variance
    p, y = [0.1, 0.2, 0.7, 0.9], [0, 0, 1, 1]
    kw = {"lens": "binary", "n_bins": 2, "norm": 1}
    r = calibration_error(p, y, estimator="debiased", n_resamples=10, **kw)
    assert r.value == pytest.approx(ce(p, y, **kw), abs=1e-15)


def test_debiased_rejects_inf_and_bad_options():
    with pytest.raises(ConfigError, match="ℓ∞"):
        calibration_error(V1_P, V1_Y, estimator="debiased", norm=np.inf)
    # accepted (and unused) for ℓ2, validated for both
    calibration_error(V1_P, V1_Y, estimator="debiased", norm=2, n_resamples=10)
    with pytest.raises(ConfigError, match="n_resamples"):
        calibration_error(V1_P, V1_Y, estimator="debiased", norm=2, n_resamples=2.5)
    with pytest.raises(ConfigError, match="n_resamples"):
        calibration_error(V1_P, V1_Y, estimator="debiased", norm=1, n_resamples=0)


# --------------------------------------------------------------------------- sweep


def naive_sweep(s, y, binning, tie_policy="split"):
    """Reference ECE_sweep selection with one bincount per candidate (caltrain's rule)."""
    n = len(s)
    b_star = 1
    for b in range(2, n):
        idx, _ = bin_indices(s, binning=binning, n_bins=b, tie_policy=tie_policy)
        counts = np.bincount(idx, minlength=idx.max() + 1)
        means = np.bincount(idx, weights=y)[counts > 0] / counts[counts > 0]
        if np.any(np.diff(means) < 0):
            break
        b_star = b
    return b_star


@pytest.mark.parametrize("binning", ["equal-mass", "equal-width"])
@pytest.mark.parametrize("tie_policy", ["split", "keep"])
def test_sweep_matches_naive_reference(binning, tie_policy):
    rng = np.random.default_rng(12)
    for trial in range(40):
        n = int(rng.integers(2, 120))
        s = np.round(rng.beta(2, 1, n), int(rng.integers(1, 4)))  # ties on purpose
        y = (rng.random(n) < s ** (1 + trial % 3)).astype(float)
        b_star, tb, tm = sweep_b_star(s, y, binning=binning, tie_policy=tie_policy)
        assert b_star == naive_sweep(s, y, binning, tie_policy)
        if tb.size:
            assert tb[0] == 2 and tm[:-1].all()
            assert tb[-1] == b_star + (0 if tm[-1] else 1)


@pytest.mark.parametrize("binning", ["equal-mass", "equal-width"])
def test_sweep_late_stop_is_not_taken_for_monotone(binning):
    # sorted outcomes 0…0 1 0 1…1: not monotone, but only fine bins see the flipped pair,
    # so the sweep stops well past the first block of candidates (b* from 11 to 79)
    n = 120
    p = (np.arange(n) + 0.5) / n
    for flip in range(50, 70, 3):
        y = (p > 0.5).astype(float)
        y[flip], y[flip + 1] = 1.0, 0.0
        b_star, tb, tm = sweep_b_star(p, y, binning=binning)
        assert b_star == naive_sweep(p, y, binning) < n - 1
        assert tb[-1] == b_star + 1 and not tm[-1]
    assert sweep_b_star(p, (p > 0.5).astype(float), binning=binning)[0] == n - 1


@pytest.mark.parametrize(
    ("binning", "tie_policy"), [("equal-mass", "split"), ("equal-width", "split")]
)
def test_sweep_search_batch_equals_each_row(binning, tie_policy):
    # several outcome vectors over the same sorted scores, searched at once
    rng = np.random.default_rng(14)
    s = np.sort(np.round(rng.beta(2, 1, 90), 2))
    ys = (rng.random((12, 90)) < s**2).astype(float)
    ys[3] = np.sort(ys[3])  # monotone outcomes: runs to the bound
    ys[4] = (s > 0.6).astype(float)
    cy = np.concatenate([np.zeros((12, 1)), np.cumsum(ys, axis=1)], axis=1)

    def boundaries(rows, k, b):
        t = np.broadcast_to(sweep_candidate_starts(s, k, b, binning), (rows.size, k.size))
        return t, np.take_along_axis(cy[rows], t, axis=1)

    def monotone(rows):
        return np.array([sweep_b_star(s, ys[i], binning=binning)[0] == 89 for i in rows])

    batch = sweep_search(12, 89, boundaries, monotone)
    expected = [naive_sweep(s, ys[i], binning, tie_policy) for i in range(12)]
    np.testing.assert_array_equal(batch, expected)
    assert batch[3] == batch[4] == 89 and len(set(batch.tolist())) > 3


@pytest.mark.parametrize("binning", ["equal-mass", "equal-width"])
def test_sweep_row_starts_equal_the_candidate_starts_of_each_row(binning):
    # one search over many datasets at once; ties, scores on edges, 0 and 1 included
    rng = np.random.default_rng(21)
    for n in (1, 2, 5, 64, 301):
        s = np.sort(np.round(rng.beta(2, 0.8, (9, n)), 1), axis=1)
        s[0] = 1.0
        s[1] = 0.0
        bs = np.arange(1, 40, dtype=np.int64)
        b = np.repeat(bs, bs + 1)
        k = np.concatenate([np.arange(v + 1) for v in bs])
        rows = np.array([4, 0, 1, 8, 4])
        got = sweep_row_starts(s, rows, k, b, binning)
        assert got.shape == (rows.size, k.size)
        assert binning == "equal-mass" or got.flags["C_CONTIGUOUS"]  # sums need row-major
        for j, i in enumerate(rows):
            np.testing.assert_array_equal(got[j], sweep_candidate_starts(s[i], k, b, binning))


def test_sweep_edge_cases_small_n():
    for p, y in (([0.3], [1]), ([0.3, 0.8], [1, 0])):
        r = calibration_error(p, y, lens="binary", estimator="sweep", binning="equal-mass")
        assert r.details["b_star"] == 1
        assert r.value == pytest.approx(abs(np.mean(p) - np.mean(y)))
        assert len(r.details["sweep_trace"]) == 0


def test_sweep_all_labels_equal_uses_n_minus_one_bins():
    p = np.linspace(0.1, 0.9, 9)
    r = calibration_error(
        p, np.ones(9, int), lens="binary", estimator="sweep", binning="equal-mass"
    )
    assert r.details["b_star"] == 8
    trace = r.details["sweep_trace"]
    assert trace["b"].tolist() == list(range(2, 9)) and trace["monotone"].all()
    # each bin gap is 1 − f̄_k: the error is the mean of 1 − p
    assert r.value == pytest.approx(np.mean(1 - p))


def test_sweep_stops_at_first_non_monotone_split():
    p = [0.1, 0.2, 0.3, 0.4]
    r = calibration_error(p, [1, 1, 0, 0], lens="binary", estimator="sweep", binning="equal-mass")
    assert r.details["b_star"] == 1
    assert r.details["sweep_trace"].values.tolist() == [[2, False]]
    assert r.value == pytest.approx(abs(0.25 - 0.5))


def test_sweep_equal_adjacent_means_do_not_stop():
    p = np.arange(1, 9) / 10
    y = [0, 1, 0, 1, 0, 1, 0, 1]
    # b = 2: means (0.5, 0.5) monotone; b = 3 (sizes 3, 3, 2): 1/3, 2/3, 1/2 → stop
    r = calibration_error(p, y, lens="binary", estimator="sweep", binning="equal-mass", norm=2)
    assert r.details["b_star"] == 2
    assert r.details["sweep_trace"].values.tolist() == [[2, True], [3, False]]
    same = calibration_error(p, y, lens="binary", binning="equal-mass", n_bins=2, norm=2)
    assert r.value == pytest.approx(same.value, abs=1e-15)


def test_sweep_equal_width_ignores_empty_bins():
    # scores cluster at the ends; empty middle bins never count as a violation
    p = [0.05, 0.06, 0.07, 0.93, 0.94, 0.95]
    y = [0, 0, 1, 1, 1, 1]
    b_star, tb, tm = sweep_b_star(np.array(p), np.array(y, float), binning="equal-width")
    assert b_star == naive_sweep(np.array(p), np.array(y, float), "equal-width")
    assert b_star >= 2


def test_sweep_separable_labels_grow_b_star():
    p = np.linspace(0.01, 0.99, 200)
    y = (p > 0.5).astype(int)
    r = calibration_error(p, y, lens="binary", estimator="sweep", binning="equal-mass")
    assert r.details["b_star"] == 199
    r = calibration_error(p, y, lens="binary", estimator="sweep", binning="equal-mass", max_bins=20)
    assert r.details["b_star"] == 20


@pytest.mark.parametrize("binning", ["equal-mass", "equal-width"])
def test_sweep_equals_plugin_at_b_star(binning):
    rng = np.random.default_rng(9)
    p = rng.beta(3, 1, 2000)
    y = (rng.random(2000) < p**2).astype(int)
    for norm in (1, 2, np.inf):
        r = calibration_error(p, y, lens="binary", estimator="sweep", binning=binning, norm=norm)
        b = r.details["b_star"]
        assert 2 <= b < 200
        plug = calibration_error(p, y, lens="binary", binning=binning, n_bins=b, norm=norm)
        assert r.value == pytest.approx(plug.value, abs=1e-15)
        assert r.bins[0].isclose(plug.bins[0])


@pytest.mark.parametrize(
    ("binning", "tie_policy"),
    [("equal-mass", "split"), ("equal-mass", "keep"), ("equal-width", "split")],
)
def test_rebinned_from_sorted_rows_equals_binning_again(binning, tie_policy):
    # scores in [0, 0.55] on a grid: ties, scores on edges and empty equal-width bins at the top
    rng = np.random.default_rng(4)
    s = np.round(rng.random(400) * 0.55, 2)
    y = (rng.random(400) < s).astype(float)
    view = LensView("binary", (s,), (y,), ("1",), np.ones(1))
    comp = bin_view(view, binning, 15, tie_policy, (np.argsort(s, kind="stable"),)).components[0]
    order = comp.order
    prefix = np.concatenate([[0.0], np.cumsum(y[order])])
    for b in (1, 2, 7, 15, 16, 40, 150, 399):
        fast = comp.rebinned_sorted(b, s[order], prefix)
        assert comp.rebinned(b) is fast  # one cache: the bin table reads the sweep's bins
        idx, edges = bin_indices(s, binning=binning, n_bins=b, tie_policy=tie_policy)
        np.testing.assert_array_equal(fast.index, idx)
        np.testing.assert_array_equal(fast.edges, edges)
        ref = bin_stats(s, y, binning=binning, n_bins=b, tie_policy=tie_policy)
        assert fast.stats.isclose(ref, rtol=1e-14, atol=1e-13)
        if binning == "equal-width" and b > 2:
            assert ref.counts[-1] == 0  # the empty top bins are covered


def test_sweep_rejects_discrete_and_bad_max_bins():
    with pytest.raises(ConfigError, match="equal-mass or equal-width"):
        calibration_error(V1_P, V1_Y, estimator="sweep", binning="discrete")
    with pytest.raises(ConfigError, match="max_bins"):
        calibration_error(V1_P, V1_Y, estimator="sweep", max_bins=0)


def test_sweep_classwise_reports_per_component():
    r = calibration_error(V2_P, V2_Y, lens="classwise", estimator="sweep", binning="equal-mass")
    assert isinstance(r.details["b_star"], tuple) and len(r.details["b_star"]) == 3
    trace = r.details["sweep_trace"]
    assert list(trace.columns) == ["component", "b", "monotone"]
    assert set(trace["component"]) <= {"0", "1", "2"}
    # class 0 in score order: outcomes 0×8 then 1,1,1,1,1,0; b = 3 (sizes 5,5,4): 0, 0.4, 0.75;
    # b = 4 (sizes 4,3,4,3): 0, 0, 0.75, 2/3 → stop, b* = 3
    assert r.details["b_star"][0] == 3
    for k in range(3):
        outcome = (np.asarray(V2_Y) == k).astype(float)
        assert r.details["b_star"][k] == naive_sweep(V2_P[:, k], outcome, "equal-mass")


# --------------------------------------------------------------------------- aggregation


@pytest.mark.parametrize("norm", [1, 2, np.inf])
@pytest.mark.parametrize("estimator", ["plugin", "label-binned", "sweep"])
def test_classwise_aggregation_by_hand(norm, estimator):
    rng = np.random.default_rng(21)
    logits = rng.normal(size=(300, 4)) * 2
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = rng.integers(0, 4, 300)
    w = np.array([0.1, 0.2, 0.3, 0.4])
    kw = {"estimator": estimator, "norm": norm, "n_bins": 5, "binning": "equal-mass"}
    r = calibration_error(probs, y, lens="classwise", class_weights=w * 10, **kw)
    per = [ce(probs[:, k], (y == k).astype(int), lens="binary", **kw) for k in range(4)]
    np.testing.assert_allclose(r.component_values, per, rtol=1e-13)
    expected = max(per) if np.isinf(norm) else np.sum(w * np.power(per, norm)) ** (1 / norm)
    assert r.value == pytest.approx(expected, rel=1e-13)


def test_aggregate_helper():
    assert aggregate([0.3], [1.0], 2.0) == 0.3
    assert aggregate([0.1, 0.3], [0.5, 0.5], 1.0) == pytest.approx(0.2)
    assert aggregate([0.1, 0.3], [0.5, 0.5], 2.0) == pytest.approx(np.sqrt(0.05))
    assert aggregate([0.1, 0.9], [1.0, 0.0], np.inf) == 0.1  # zero weight is ignored


# --------------------------------------------------------------------------- batch kernels


def test_batch_kernels_match_single_sets():
    rng = np.random.default_rng(30)
    counts = rng.integers(0, 6, size=(3, 4, 7))
    counts[0, 0] = [0, 0, 3, 0, 1, 0, 0]  # empty and single-point bins
    score_sums = counts * rng.random(counts.shape)
    label_sums = np.floor(counts * rng.random(counts.shape))
    for norm in (1.0, 2.0, np.inf):
        batch = plugin_from_stats(counts, score_sums, label_sums, norm)
        assert batch.shape == (3, 4)
        for i in np.ndindex(3, 4):
            c, s, lab = counts[i], score_sums[i], label_sums[i]
            full = c > 0
            gap = np.abs(s[full] - lab[full]) / c[full]
            w = c[full] / c.sum()
            single = gap.max() if np.isinf(norm) else np.sum(w * gap**norm) ** (1 / norm)
            assert batch[i] == pytest.approx(single, rel=1e-12)
    deb = debiased_sq_from_stats(counts, score_sums, label_sums)
    assert deb.shape == (3, 4)
    for i in np.ndindex(3, 4):
        c, s, lab = counts[i], score_sums[i], label_sums[i]
        ok = c >= 2
        ybar = lab[ok] / c[ok]
        terms = c[ok] * ((s[ok] / c[ok] - ybar) ** 2 - ybar * (1 - ybar) / (c[ok] - 1))
        assert deb[i] == pytest.approx(terms.sum() / c.sum(), rel=1e-12, abs=1e-15)


def test_batch_kernels_empty_stats_are_nan():
    assert np.isnan(plugin_from_stats([0, 0], [0.0, 0.0], [0.0, 0.0], 1.0))
    assert np.isnan(plugin_from_stats([0, 0], [0.0, 0.0], [0.0, 0.0], np.inf))
    assert np.isnan(debiased_sq_from_stats([0, 0], [0.0, 0.0], [0.0, 0.0]))


def test_unknown_options_are_rejected():
    for est in ("plugin", "label-binned", "sweep", "debiased"):
        with pytest.raises(ConfigError, match="no option"):
            calibration_error(V1_P, V1_Y, estimator=est, norm=2, bandwidth=0.1)


# --------------------------------------------------------------------------- statistical checks


def test_plugin_bias_and_debiased_unbiasedness_on_a_discrete_calibrated_model():
    # Kumar et al. 000 §2.6–2.7: for a calibrated model with outputs S = {0.2, 0.5, 0.9},
    # E[plugin²] = Σ_s y*(1−y*)/n and E[debiased²] = 0 (conditionally on the bin counts).
    rng = np.random.default_rng(123)
    s = np.array([0.2, 0.5, 0.9])
    n, reps = 300, 20_000
    counts = rng.multinomial(n, [1 / 3] * 3, size=reps)
    label_sums = rng.binomial(counts, s).astype(float)
    score_sums = counts * s
    plug_sq = plugin_from_stats(counts, score_sums, label_sums, 2.0) ** 2
    deb = debiased_sq_from_stats(counts, score_sums, label_sums)
    expected_bias = np.sum(s * (1 - s)) / n
    se = plug_sq.std() / np.sqrt(reps)
    assert abs(plug_sq.mean() - expected_bias) < 4 * se
    assert abs(deb.mean()) < 4 * deb.std() / np.sqrt(reps)
    assert expected_bias > 20 * se  # the test can tell the two apart


def test_debiased_l1_reduces_bias_under_perfect_calibration():
    rng = np.random.default_rng(77)
    plug, deb = [], []
    for _ in range(60):
        p = rng.random(1000)
        y = (rng.random(1000) < p).astype(int)
        kw = {"lens": "binary", "binning": "equal-mass", "norm": 1}
        plug.append(ce(p, y, **kw))
        deb.append(ce(p, y, estimator="debiased", n_resamples=200, seed=rng, **kw))
    # The true ECE is 0.  Per bin the plug-in gap is |N(0, σ²)|, mean σ·sqrt(2/π); the Gaussian
    # resample adds a second N(0, σ²), so its mean is about sqrt(2)·σ·sqrt(2/π) and
    # 2·plugin − mean(resampled) ≈ (2 − sqrt(2))·plugin ≈ 0.586·plugin.
    assert np.mean(plug) > 0.02
    assert 0.5 < np.mean(deb) / np.mean(plug) < 0.7


@pytest.mark.parametrize(
    ("binning", "tie_policy"), [("equal-width", "split"), ("equal-mass", "keep")]
)
def test_sweep_on_discrete_scores_with_increasing_means_stops_at_the_bound(binning, tie_policy):
    # a binned model's outputs: every binning that keeps equal scores together is monotone
    rng = np.random.default_rng(5)
    values = np.array([0.1, 0.35, 0.6, 0.85])
    p = rng.choice(values, 20_000)
    y = (rng.random(20_000) < p).astype(float)
    b_star, tb, tm = sweep_b_star(p, y, binning=binning, tie_policy=tie_policy)
    assert b_star == 19_999 and tm.all() and tb[-1] == 19_999
    small = np.concatenate([p[:40], values])  # every value present
    small_y = np.concatenate([y[:40], [0.0, 0.0, 1.0, 1.0]])
    expected = naive_sweep(small, small_y, binning, tie_policy)
    assert sweep_b_star(small, small_y, binning=binning, tie_policy=tie_policy)[0] == expected


def test_debiased_l1_rows_sharing_draws_sort_them_once_with_the_same_values(monkeypatch):
    # a bootstrap's resamples read the same draws; from _L1_SHARED rows on, the kernel sorts
    # them once and sums |σz + ȳ − f̄| by prefix sums: the direct sums, in another order
    from core.estimators import base

    rng = np.random.default_rng(17)
    counts = rng.integers(0, 30, size=(120, 9)).astype(float)
    counts[:, :3] = rng.integers(1, 30, size=(120, 3))
    counts[5, 4] = 0  # an empty bin: another width, another group
    label_sums = np.floor(counts * rng.random(counts.shape))
    label_sums[7] = counts[7]  # ȳ = 1 in every bin: σ = 0
    label_sums[8, :2] = 0  # ȳ = 0 in two bins
    score_sums = counts * rng.random(counts.shape)
    offset = np.repeat([0, 50, 400], 40)  # three groups of rows sharing their draws
    monkeypatch.setattr(base, "_L1_SHARED", 10**9)
    direct = debiased_l1_from_stats(
        counts, score_sums, label_sums, NormalStream(3), 200, offset=offset
    )
    monkeypatch.setattr(base, "_L1_SHARED", 2)
    shared = debiased_l1_from_stats(
        counts, score_sums, label_sums, NormalStream(3), 200, offset=offset
    )
    np.testing.assert_allclose(shared, direct, rtol=0, atol=1e-13)
    # σ = 0 everywhere: the plug-in ECE exactly
    no_noise = debiased_l1_from_stats(
        counts[7:8].repeat(3, 0),
        score_sums[7:8].repeat(3, 0),
        label_sums[7:8].repeat(3, 0),
        NormalStream(3),
        50,
    )
    plugin = np.abs(score_sums[7] - label_sums[7]).sum() / counts[7].sum()
    np.testing.assert_allclose(no_noise, plugin, rtol=1e-14)


def test_estimators_that_do_not_read_the_number_of_bins_say_so():
    # reads_n_bins=False lets a change of bins reuse a value: it must not depend on B

    rng = np.random.default_rng(23)
    p = rng.beta(2.0, 1.5, size=3000)
    y = (rng.random(3000) < p**1.2).astype(int)
    seen = set()
    for info in ESTIMATORS:
        if "binary" not in info.lenses or info.quadratic:
            continue
        values = {
            b: calibration_error(p, y, estimator=info.name, lens="binary", n_bins=b).value
            for b in (7, 15)
        }
        same = values[7] == pytest.approx(values[15], rel=1e-12, abs=1e-15)
        assert same == (not info.reads_n_bins), info.name
        seen.add(info.reads_n_bins)
    assert seen == {True, False}
