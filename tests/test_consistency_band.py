"""Consistency bands of the reliability diagram: numerics, analysis, figure and page."""

from __future__ import annotations

import base64
import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats

from core.analyses.analysis import CONSISTENCY_BAND_RESAMPLES, AnalysisConfig, analyze
from core.base.errors import ConfigError, DataError
from core.stats import consistency_bands as cb
from core.stats.binning import bin_indices
from core.stats.consistency_bands import consistency_band, poisson_binomial_pmf

ROOT = Path(__file__).resolve().parents[1]


def _brute_force_band(s, idx, b, r, confidence_level, seed):
    """One resample at a time, one bin at a time: the definition, written out."""
    rng = np.random.default_rng(seed)
    freq = np.full((r, b), np.nan)
    for i in range(r):
        y_star = rng.random(s.size) < s
        for k in range(b):
            rows = [j for j in range(s.size) if idx[j] == k]
            if rows:
                freq[i, k] = sum(y_star[j] for j in rows) / len(rows)
    tail = (1 - confidence_level) / 2
    low = np.array([np.nan if np.isnan(c).all() else np.quantile(c, tail) for c in freq.T])
    high = np.array([np.nan if np.isnan(c).all() else np.quantile(c, 1 - tail) for c in freq.T])
    return low, high


# --- the resampling itself ----------------------------------------------------------


def test_bernoulli_path_equals_a_brute_force_loop_with_the_same_seed():
    rng = np.random.default_rng(11)
    s = np.concatenate([rng.uniform(0, 0.5, 25), [0.0, 1.0, 0.95]])  # an empty upper bin
    idx, _ = bin_indices(s, binning="equal-width", n_bins=5)
    band = consistency_band(s, n_bins=5, n_resamples=300, confidence_level=0.9, seed=4)
    assert band.method == "bernoulli"
    low, high = _brute_force_band(s, idx, 5, 300, 0.9, 4)
    assert_array_equal(np.isnan(band.low), np.isnan(low))
    assert_allclose(band.low, low, rtol=0, atol=1e-15, equal_nan=True)
    assert_allclose(band.high, high, rtol=0, atol=1e-15, equal_nan=True)
    assert np.isnan(band.low[3]) and np.isnan(band.center[3]) and band.counts[3] == 0
    # the chunked draw is the same stream as the loop, whatever the chunk size
    small_chunks = pytest.MonkeyPatch()
    small_chunks.setattr(cb, "_CHUNK_DRAWS", 7 * s.size)
    try:
        again = consistency_band(s, n_bins=5, n_resamples=300, confidence_level=0.9, seed=4)
    finally:
        small_chunks.undo()
    assert_array_equal(again.low, band.low)
    assert_array_equal(again.high, band.high)


def test_poisson_binomial_pmf_against_enumeration_recursion_and_binomial():
    q = np.array([0.1, 0.5, 0.7, 0.2, 0.9, 0.33, 0.05])
    enum = np.zeros(q.size + 1)
    for bits in itertools.product([0, 1], repeat=q.size):
        b = np.array(bits)
        enum[b.sum()] += np.prod(np.where(b, q, 1 - q))
    assert_allclose(poisson_binomial_pmf(q), enum, atol=1e-15)
    q = np.random.default_rng(0).uniform(size=777)  # FFT levels, non-power-of-two length
    rec = np.array([1.0])
    for x in q:  # the O(m²) recursion
        rec = np.concatenate([rec * (1 - x), [0.0]]) + np.concatenate([[0.0], rec * x])
    pmf = poisson_binomial_pmf(q)
    assert pmf.shape == (778,) and (pmf >= 0).all()
    assert_allclose(pmf, rec, atol=1e-14)
    assert_allclose(
        poisson_binomial_pmf(np.full(300, 0.3)),
        stats.binom.pmf(np.arange(301), 300, 0.3),
        atol=1e-14,
    )
    assert_array_equal(poisson_binomial_pmf([]), [1.0])


def test_exact_law_path_draws_from_the_poisson_binomial_law():
    rng = np.random.default_rng(3)
    s = np.concatenate([rng.uniform(0.05, 0.95, 400), [0.0, 1.0, 1.0]])
    r = 20_000
    band = consistency_band(s, n_bins=1, n_resamples=r, confidence_level=0.5, seed=9)
    assert band.method == "poisson-binomial"
    # the same draws, read back: u → inverse CDF of the bin's exact law
    cdf = np.cumsum(poisson_binomial_pmf(s[(s > 0) & (s < 1)]))
    exact_q = (2 + np.searchsorted(cdf, [0.25, 0.75])) / s.size  # two rows are certain 1s
    assert_allclose([band.low[0], band.high[0]], exact_q, atol=1.01 / s.size)


def test_equal_scores_bin_is_binomial_on_both_paths():
    m = 200
    s = np.full(m, 0.5)
    exact = stats.binom.ppf([0.025, 0.975], m, 0.5) / m
    for r, method in ((4000, "bernoulli"), (20_000, "poisson-binomial")):
        band = consistency_band(s, n_bins=1, n_resamples=r, confidence_level=0.95, seed=1)
        assert band.method == method
        # sample quantiles of R draws of a lattice law: within one lattice step
        assert_allclose([band.low[0], band.high[0]], exact, atol=1.0 / m + 1e-12)
        assert band.center[0] == 0.5


def test_discrete_binning_uses_binomial_per_distinct_score():
    rng = np.random.default_rng(5)
    s = rng.choice([0.1, 0.4, 0.8], size=3000)
    band = consistency_band(s, binning="discrete", n_resamples=40_000, seed=2)
    assert band.method == "poisson-binomial"
    for k, v in enumerate([0.1, 0.4, 0.8]):
        m = int(np.sum(s == v))
        assert band.counts[k] == m
        lo, hi = stats.binom.ppf([0.025, 0.975], m, v) / m
        # Monte Carlo sd of these sample quantiles is ~0.2 lattice steps at R = 40,000
        assert abs(band.low[k] - lo) <= 2.0 / m + 1e-12
        assert abs(band.high[k] - hi) <= 2.0 / m + 1e-12


def test_determinism_and_seed_dependence():
    s = np.random.default_rng(8).beta(2, 2, 3000)
    a = consistency_band(s, n_bins=10, seed=123)
    b = consistency_band(s, n_bins=10, seed=123)
    c = consistency_band(s, n_bins=10, seed=124)
    assert_array_equal(a.low, b.low) and a.seed == 123
    assert_array_equal(a.high, b.high)
    assert not (np.array_equal(a.low, c.low) and np.array_equal(a.high, c.high))
    d = consistency_band(s, n_bins=10, seed=np.random.default_rng(123))
    assert_array_equal(d.low, a.low) and d.seed is None
    assert "Bernoulli" in a.convention


def test_precomputed_bin_index_matches_binning():
    s = np.random.default_rng(1).uniform(size=500)
    idx, edges = bin_indices(s, binning="equal-mass", n_bins=6)
    a = consistency_band(s, binning="equal-mass", n_bins=6, seed=0)
    b = consistency_band(s, bin_index=idx, n_bins=6, seed=0)
    assert_array_equal(a.low, b.low)
    assert_array_equal(a.counts, np.bincount(idx, minlength=6))


def test_outside_flags_and_bad_input():
    s = np.full(100, 0.5)
    band = consistency_band(s, n_bins=2, seed=0)  # bin 0 is empty
    flags = band.outside([np.nan, 0.9])
    assert flags.tolist() == [False, True]
    assert band.outside([np.nan, 0.5]).tolist() == [False, False]
    with pytest.raises(DataError, match="shape"):
        band.outside([0.5])
    with pytest.raises(DataError, match=r"\[0, 1\]"):
        consistency_band([0.2, 1.3])
    with pytest.raises(DataError, match="one-dimensional"):
        consistency_band([[0.2, 0.3]])
    with pytest.raises(ConfigError, match="n_resamples"):
        consistency_band(s, n_resamples=1)
    with pytest.raises(ConfigError):
        consistency_band(s, confidence_level=1.5)
    with pytest.raises(DataError, match="bin_index"):
        consistency_band(s, bin_index=np.full(100, 3), n_bins=2)


@pytest.mark.slow
def test_calibrated_world_is_outside_at_most_the_nominal_rate_and_miscalibration_is_caught():
    rng = np.random.default_rng(2024)
    confidence_level, n, bins, worlds = 0.9, 2000, 10, 150
    outside = miscal = 0
    expected = 0.0  # Σ over bins of the exact P(outside the band) under calibration
    for _ in range(worlds):
        s = rng.beta(2, 2, n)
        idx, _ = bin_indices(s, n_bins=bins)
        counts = np.bincount(idx, minlength=bins)
        y = rng.random(n) < s
        y_bad = rng.random(n) < s**1.6  # over-confident
        band = consistency_band(
            s, n_bins=bins, confidence_level=confidence_level, n_resamples=1000, seed=rng
        )
        with np.errstate(invalid="ignore"):
            obs = np.bincount(idx, weights=y, minlength=bins) / counts
            bad = np.bincount(idx, weights=y_bad, minlength=bins) / counts
        outside += int(band.outside(obs).sum())
        for k in np.flatnonzero(counts):
            pmf = poisson_binomial_pmf(s[idx == k])
            lattice = np.arange(pmf.size) / counts[k]
            expected += pmf[(lattice < band.low[k]) | (lattice > band.high[k])].sum()
        miscal += int(band.outside(bad).sum())
    trials = worlds * bins
    rate = outside / trials
    print(
        f"outside rate {rate:.4f} (exact {expected / trials:.4f}), flagged under miscalibration {miscal / trials:.3f}"
    )
    # strict exclusion from a lattice law's quantile band is at most 1 − level (up to the
    # Monte Carlo error of the band's edges); the hits match their exact expectation
    se = np.sqrt(0.1 * 0.9 / trials)
    assert 0.05 < expected / trials < 0.1 + 0.01, expected / trials
    assert abs(outside - expected) / trials < 4 * se, (rate, expected / trials)
    assert miscal / trials > 0.5  # strong miscalibration at n = 2000 is flagged in most bins


# --- analysis, figure, page -----------------------------------------------------------


def _data(n=600, k=3, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=n)
    y = np.array([rng.choice(k, p=row) for row in p])
    return p, y


def test_analysis_band_per_component_with_its_own_seeded_generator():
    p, y = _data()
    cfg = AnalysisConfig(lens="classwise", n_bins=6, n_resamples=0, confidence_level=0.9, seed=3)
    a = analyze((p, y), cfg)
    rng = np.random.default_rng(3)
    for k, comp in enumerate(a.components):
        ref = consistency_band(
            p[:, k],
            n_bins=6,
            n_resamples=CONSISTENCY_BAND_RESAMPLES,
            confidence_level=0.9,
            seed=rng,
        )
        assert_array_equal(comp.band.low, ref.low)
        assert_array_equal(comp.band.high, ref.high)
        assert comp.band.seed == 3 and comp.band.confidence_level == 0.9
        frame = comp.to_frame()
        assert_array_equal(frame["band_low"], ref.low)
        assert_array_equal(frame["outside_band"], ref.outside(comp.bins.mean_label))


@pytest.mark.parametrize(
    ("binning", "estimator", "tie_policy"),
    [
        ("equal-width", "sweep", "split"),
        ("equal-mass", "plugin", "keep"),
        ("discrete", "plugin", "split"),
    ],
)
def test_analysis_band_follows_the_bin_table(binning, estimator, tie_policy):
    rng = np.random.default_rng(4)
    s = np.round(rng.uniform(size=800), 1)  # ties and few distinct values
    y = (rng.random(800) < s).astype(int)
    cfg = AnalysisConfig(
        lens="binary", binning=binning, estimator=estimator, tie_policy=tie_policy, n_resamples=0
    )
    (comp,) = analyze((s, y), cfg).components
    assert comp.band is not None
    assert comp.band.low.shape == comp.bins.counts.shape
    assert_array_equal(comp.band.counts, comp.bins.counts)
    assert_allclose(comp.band.center, comp.bins.mean_score, equal_nan=True)


def test_no_band_beyond_the_bin_cap():
    from core.analyses.analysis import CONSISTENCY_BAND_MAX_BINS

    s = np.random.default_rng(2).uniform(size=CONSISTENCY_BAND_MAX_BINS + 5)
    y = (np.random.default_rng(3).random(s.size) < s).astype(int)
    cfg = AnalysisConfig(lens="binary", binning="discrete", n_resamples=0)
    (comp,) = analyze((s, y), cfg).components
    assert comp.bins.n_bins == s.size and comp.band is None
    assert "band_low" not in comp.to_frame().columns


def test_band_flag_changes_no_existing_number_and_parses_url_strings():
    p, y = _data(400, 2, seed=6)
    on = analyze((p, y), AnalysisConfig(n_resamples=40))
    off = analyze((p, y), AnalysisConfig(n_resamples=40, consistency_band=False))
    pd.testing.assert_frame_equal(on.metrics, off.metrics)
    assert off.components[0].band is None and on.components[0].band is not None
    assert "band_low" not in off.bin_table.columns
    pd.testing.assert_frame_equal(on.bin_table[off.bin_table.columns], off.bin_table)
    assert AnalysisConfig.from_dict({"consistency_band": "False"}).consistency_band is False
    assert AnalysisConfig.from_dict({"consistency_band": "true"}).consistency_band is True
    c = AnalysisConfig(consistency_band=False)
    assert (
        AnalysisConfig.from_dict({k: str(v) for k, v in c.to_dict().items() if v is not None}) == c
    )
    with pytest.raises(ConfigError, match="consistency_band"):
        AnalysisConfig(consistency_band="maybe")


def test_reliability_figure_draws_the_band_as_a_last_trace():
    from core.figures import classwise_grid, reliability_figure

    p, y = _data(500, 2, seed=1)
    (comp,) = analyze((p, y), AnalysisConfig(lens="binary", n_bins=8, n_resamples=0)).components
    band = comp.band
    fig = reliability_figure(
        comp, band_low=band.low, band_high=band.high, band_level=band.confidence_level
    )
    assert [t.name for t in fig.data[:2]] == ["perfect calibration", "observed frequency"]
    last = fig.data[3]
    assert last.name == "consistency band (95%)" and last.fill == "toself"
    ok = comp.bins.counts > 0
    x = comp.bins.mean_score[ok]
    assert_allclose(last.x, np.concatenate([x, x[::-1]]))
    assert_allclose(last.y, np.concatenate([band.low[ok], band.high[ok][::-1]]))
    assert len(reliability_figure(comp).data) == 3  # no band unless given
    p3, y3 = _data(300, 3)
    comps = analyze((p3, y3), AnalysisConfig(lens="classwise", n_resamples=0)).components
    assert len(classwise_grid(comps).data) == 6
    grid = classwise_grid(comps, show_band=True)
    assert len(grid.data) == 9
    assert [t.showlegend for t in grid.data[6:]] == [True, False, False]


# --- page -------------------------------------------------------------------------------

APP = str(ROOT / "dashboard" / "app.py")
RELIABILITY = "app_pages/reliability.py"


def _decode(values):
    if isinstance(values, dict) and "bdata" in values:
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
    return np.asarray(values)


def _page(**query):
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    rng = np.random.default_rng(3)
    p = rng.uniform(size=600)
    y = (rng.uniform(size=600) < p**1.5).astype(int)
    data = pd.DataFrame({"p": p.round(6), "label": y}).to_csv(index=False).encode()
    at.file_uploader(key="upload").set_value(("preds.csv", data, "text/csv"))
    at.run()
    at.switch_page(RELIABILITY).run()
    return at


def test_page_shows_the_band_the_toggle_removes_it_and_the_url_keeps_it():
    at = _page(n_resamples="0", lens="binary", n_bins="8")
    assert not at.exception, at.exception
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    names = [t.get("name") for t in spec["data"]]
    assert names[-1] == "consistency band (95%)"
    pred = at.session_state["predictions"]
    ref = consistency_band(pred.probs[:, 1], n_bins=8, seed=0)
    ok = ref.counts > 0
    assert_allclose(_decode(spec["data"][-1]["y"])[: ok.sum()], ref.low[ok])
    table = at.dataframe[0].value
    assert {"band_low", "band_high", "outside_band"} <= set(table.columns)
    assert any("consistency band" in c.value for c in at.caption)
    toggle = at.sidebar.toggle(key="consistency_band")
    assert toggle.value is True
    toggle.set_value(False).run()
    assert not at.exception
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert "consistency band (95%)" not in [t.get("name") for t in spec["data"]]
    assert "band_low" not in at.dataframe[0].value.columns
    # AppTest does not write widget changes back to at.query_params: URL → widget below
    # a shared link with the band off opens with it off
    again = _page(n_resamples="0", lens="binary", consistency_band="false")
    assert not again.exception
    assert again.sidebar.toggle(key="consistency_band").value is False
    spec = json.loads(again.get("plotly_chart")[0].proto.spec)
    assert len(spec["data"]) == 3


def test_poisson_binomial_laws_of_many_groups_equal_one_group_at_a_time():
    # the bins of a component multiply their trees level by level together: same values
    from core.stats.consistency_bands import poisson_binomial_pmfs

    rng = np.random.default_rng(8)
    groups = [rng.random(m) ** 3 for m in (0, 1, 2, 3, 8, 9, 100, 1023, 1024, 1025, 5000)]
    together = poisson_binomial_pmfs(groups)
    assert len(together) == len(groups)
    for q, law in zip(groups, together, strict=True):
        assert_array_equal(law, poisson_binomial_pmf(q))
        assert law.shape == (q.size + 1,)
    # and each is the enumerated law on a small group
    q = groups[3]
    enum = np.zeros(4)
    for bits in range(8):
        hits = [(bits >> i) & 1 for i in range(3)]
        enum[sum(hits)] += np.prod([q[i] if h else 1 - q[i] for i, h in enumerate(hits)])
    assert_allclose(together[3], enum, atol=1e-15)


def test_band_facts_equal_their_formulas_written_out():
    """Counts of inner and certain rows, Σ s(1 − s) and Σ s(1 − s)(1 − 2s) per bin, to the bit."""
    from core.stats.consistency_bands import BandStats

    rng = np.random.default_rng(3)
    for trial in range(30):
        n, b = int(rng.integers(1, 5_000)), int(rng.integers(1, 30))
        s = rng.choice([0.0, 1.0, -0.0, 0.5], n) if trial % 3 == 0 else rng.random(n)
        s[rng.random(n) < 0.1] = 1.0
        s[rng.random(n) < 0.1] = 0.0
        idx = rng.integers(0, b, n)
        st = BandStats.of(s, idx, b)
        q = s * (1.0 - s)
        inner = (s > 0.0) & (s < 1.0)
        assert np.array_equal(st.counts, np.bincount(idx, minlength=b))
        assert np.array_equal(st.inner, np.bincount(idx, weights=inner, minlength=b).astype(int))
        assert np.array_equal(
            st.certain, np.bincount(idx, weights=s == 1.0, minlength=b).astype(int)
        )
        assert np.array_equal(st.variance, np.bincount(idx, weights=q, minlength=b))
        assert np.array_equal(st.third, np.bincount(idx, weights=q * (1.0 - 2.0 * s), minlength=b))
        assert np.array_equal(st.score_sums, np.bincount(idx, weights=s, minlength=b))
