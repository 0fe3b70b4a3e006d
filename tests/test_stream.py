"""Streamed analyses equal the in-memory ones; streamed loads decide like the in-memory loader."""

from __future__ import annotations

import gzip
import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

import core
from core.analyses.analysis import AnalysisConfig, analyze
from core.base.errors import ConfigError, DataError, phrase
from core.data.lint import TieCounts, ValueFacts, lint_values
from core.data.predictions import Digest, _digest
from core.stats.binning import BINNINGS
from core.stats.consistency_bands import BandStats
from core.stream import bins as stream_bins
from core.stream import ranks
from core.stream.analysis import analyze_stream
from core.stream.load import LoadOptions

EXACT = 1e-12


def _binary_frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 3, n)
    y = (rng.random(n) < p**1.3).astype(int)
    return pd.DataFrame({"p": p, "y": y})


def _multiclass_frame(n: int, seed: int, k: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2.0
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    probs = np.round(probs, 3)  # ties, and exact 0s and 1s
    probs /= probs.sum(axis=1, keepdims=True)
    names = [f"c{j}" for j in range(k)]
    y = (probs.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1).clip(0, k - 1)
    frame = pd.DataFrame(probs, columns=[f"p_{c}" for c in names])
    frame["label"] = np.array(names)[y]
    frame["model"] = np.where(rng.random(n) < 0.5, "m1", "m2")
    return frame


def _same(memory: core.ReliabilityAnalysis, stream: core.ReliabilityAnalysis) -> None:
    """Every exact statistic equal to 1e-12; intervals (both from the cell bootstrap) too."""
    a = memory.metrics.set_index("metric")
    b = stream.metrics.set_index("metric")
    assert list(a.index) == list(b.index)
    for metric in a.index:
        if "subsample" in b.loc[metric, "note"]:
            continue  # the stream runs the sweep and the smooth ECE on the kernel subsample
        for col in ("value", "low", "high"):
            assert_allclose(b.loc[metric, col], a.loc[metric, col], rtol=EXACT, atol=1e-15)
    assert memory.headline.value == pytest.approx(stream.headline.value, rel=EXACT, abs=1e-15)
    assert len(memory.components) == len(stream.components)
    for x, y in zip(memory.components, stream.components, strict=True):
        assert_array_equal(x.bins.edges, y.bins.edges)
        assert_array_equal(x.bins.counts, y.bins.counts)
        assert_allclose(y.bins.score_sums, x.bins.score_sums, rtol=EXACT, atol=1e-12)
        assert_array_equal(x.bins.label_sums, y.bins.label_sums)
        assert_allclose(y.low, x.low, rtol=EXACT)
        if x.band is not None:
            assert_allclose(y.band.low, x.band.low, rtol=EXACT)
            assert_allclose(y.band.high, x.band.high, rtol=EXACT)
    for field in ("brier", "reliability", "resolution", "uncertainty"):
        assert getattr(stream.brier_decomposition, field) == pytest.approx(
            getattr(memory.brier_decomposition, field), rel=EXACT, abs=1e-15
        )
    for field in ("within_bin_variance", "within_bin_covariance"):
        assert getattr(stream.brier_decomposition, field) == pytest.approx(
            getattr(memory.brier_decomposition, field), rel=1e-9, abs=1e-14
        )


@pytest.fixture(scope="module")
def binary_parquet(tmp_path_factory):
    path = tmp_path_factory.mktemp("stream") / "binary.parquet"
    _binary_frame(12_000, 0).to_parquet(path, row_group_size=2_500)
    return path


@pytest.fixture(scope="module")
def multiclass_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("stream") / "multi.csv"
    _multiclass_frame(9_000, 1).to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("binning", "tie_policy", "norm"),
    [("equal-width", "split", 1), ("equal-mass", "split", 2), ("equal-mass", "keep", "inf")],
)
def test_binary_stream_equals_memory(binary_parquet, binning, tie_policy, norm):
    config = AnalysisConfig(
        lens="binary",
        binning=binning,
        tie_policy=tie_policy,
        norm=norm,
        n_resamples=200,
        bootstrap="cells",
    )
    pred = core.load_predictions(binary_parquet)
    result = analyze_stream(binary_parquet, config, batch_rows=1_700)
    assert result.input.n == pred.n and result.input.digest == pred.digest
    assert result.input.columns == pred.columns
    _same(analyze(pred, config), result.analysis)


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_a_streams_basic_intervals_equal_memory(binary_parquet, binning):
    config = AnalysisConfig(
        lens="binary", binning=binning, norm=2, n_bins=11, n_resamples=200, bootstrap="cells",
        bootstrap_interval="basic",
    )  # fmt: skip
    memory = analyze(core.load_predictions(binary_parquet), config)
    result = analyze_stream(binary_parquet, config, batch_rows=1_700)
    _same(memory, result.analysis)
    deb = result.analysis.intervals["debiased"]
    assert deb.method == "basic"
    assert deb.truth == pytest.approx(memory.metrics.set_index("metric").loc["plugin", "value"])


def test_a_stream_spares_the_laws_and_rows_merging_would_drop(binary_parquet, monkeypatch):
    """Bins past the exact-law limit get no law and rows past the sampler's no copy: same band."""
    import core.stats.consistency_bands as bands

    monkeypatch.setattr(bands, "BAND_EXACT_ROWS", 600)
    monkeypatch.setattr(bands, "DIRECT_MAX_DRAWS", 6_000)
    # 12 bins: no other test's analysis of these rows (kept in the memo) is this one
    config = AnalysisConfig(lens="binary", n_bins=12, n_resamples=200, bootstrap="cells")
    memory = analyze(core.load_predictions(binary_parquet), config)
    trials = []
    pmfs = bands.poisson_binomial_pmfs
    monkeypatch.setattr(
        bands,
        "poisson_binomial_pmfs",
        lambda groups: trials.append(sum(map(len, groups))) or pmfs(groups),
    )
    result = analyze_stream(binary_parquet, config, batch_rows=400)
    _same(memory, result.analysis)
    assert "moments above 600" in memory.components[0].band.method
    # without sparing, every batch's bins would get laws (12,000 rows); with it, a bin's rows
    # enter laws only up to the limit (12 bins of at most 600)
    assert 0 < sum(trials) <= 12 * 600


@pytest.mark.parametrize(
    ("lens", "binning", "tie_policy"),
    [
        ("top-label", "equal-width", "split"),
        ("top-label", "discrete", "split"),
        ("classwise", "equal-mass", "split"),
        ("classwise", "equal-mass", "keep"),
    ],
)
def test_multiclass_models_stream_equal_memory(multiclass_csv, lens, binning, tie_policy):
    config = AnalysisConfig(
        lens=lens, binning=binning, tie_policy=tie_policy, n_bins=10, n_resamples=100,
        bootstrap="cells",
    )  # fmt: skip
    pred = core.load_predictions(multiclass_csv)
    result = analyze_stream(multiclass_csv, config, batch_rows=2_000)
    parts = pred.by_model()
    assert [name for name, _, _ in result.results] == list(parts)
    assert result.input.digest == pred.digest and result.input.models == pred.models
    assert result.input.lint.to_records() == pred.lint.to_records()
    for name, part, analysis in result.results:
        assert part.n == parts[name].n and part.digest == parts[name].digest
        assert part.lint.to_records() == parts[name].lint.to_records()
        _same(analyze(parts[name], config), analysis)


def test_batching_does_not_change_any_number(binary_parquet):
    config = AnalysisConfig(lens="binary", binning="equal-mass", n_resamples=300)
    a = analyze_stream(binary_parquet, config, batch_rows=997).analysis
    b = analyze_stream(binary_parquet, config, batch_rows=6_000).analysis
    pd.testing.assert_frame_equal(
        a.metrics.drop(columns="note"), b.metrics.drop(columns="note"), rtol=EXACT
    )


def test_kernel_estimates_run_on_the_in_memory_subsample(binary_parquet):
    config = AnalysisConfig(lens="binary", n_resamples=0, kernel_sample=1_000)
    memory = analyze(core.load_predictions(binary_parquet), config).metrics.set_index("metric")
    stream = analyze_stream(binary_parquet, config).analysis.metrics.set_index("metric")
    for name in ("skce-ul", "skce-uq", "skce-b"):
        assert stream.loc[name, "value"] == pytest.approx(memory.loc[name, "value"], rel=EXACT)
        assert "1,000 of the 12,000 rows" in stream.loc[name, "note"]


# --------------------------------------------------------------------------- loads


def test_scores_read_as_logits_when_a_late_batch_is_negative(tmp_path):
    rng = np.random.default_rng(2)
    z = np.concatenate([rng.uniform(0.1, 0.9, 3_000), rng.normal(size=3_000)])  # logits later
    frame = pd.DataFrame({"score": z, "y": rng.integers(0, 2, z.size)})
    path = tmp_path / "late.csv"
    frame.to_csv(path, index=False)
    pred = core.load_predictions(path)
    assert pred.columns["logits"]
    result = analyze_stream(path, AnalysisConfig(lens="binary", n_resamples=0), batch_rows=1_000)
    assert result.input.columns["logits"] and result.input.digest == pred.digest
    assert result.input.lint.to_records() == pred.lint.to_records()


def test_one_indexed_labels_decided_from_all_rows(tmp_path):
    rng = np.random.default_rng(3)
    n, k = 4_000, 3
    probs = rng.dirichlet(np.ones(k), n)
    y = rng.integers(1, k + 1, n)
    y[:2_000] = np.minimum(y[:2_000], 2)  # the first batches lack label 3 (0-indexed reading)
    frame = pd.DataFrame(probs, columns=["a", "b", "c"]).assign(label=y)
    path = tmp_path / "one.parquet"
    frame.to_parquet(path, row_group_size=500)
    pred = core.load_predictions(path)
    assert "one-indexed-labels" in pred.lint.codes
    result = analyze_stream(path, AnalysisConfig(n_resamples=0), batch_rows=500)
    assert result.input.digest == pred.digest
    assert result.input.lint.codes == pred.lint.codes


def test_heavy_ties_counted_over_all_batches(tmp_path):
    rng = np.random.default_rng(4)
    p = rng.choice([0.1, 0.3, 0.7, 0.9], 8_000)
    frame = pd.DataFrame({"p": p, "y": (rng.random(p.size) < p).astype(int)})
    path = tmp_path / "ties.parquet"
    frame.to_parquet(path, row_group_size=1_000)
    pred = core.load_predictions(path)
    result = analyze_stream(path, AnalysisConfig(lens="binary", n_resamples=0), batch_rows=1_000)
    assert "heavy-ties" in result.input.lint.codes
    assert result.input.lint.to_records() == pred.lint.to_records()


# --------------------------------------------------------------------------- bad files


def test_a_corrupt_part_is_named(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    _binary_frame(1_000, 5).to_parquet(folder / "part-0.parquet")
    (folder / "part-1.parquet").write_bytes(b"PAR1" + b"\x00" * 64 + b"garbage")
    with pytest.raises(DataError, match="part-1.parquet"):
        analyze_stream(folder, AnalysisConfig(lens="binary", n_resamples=0))


def test_a_part_with_other_columns_is_named(tmp_path):
    _binary_frame(1_000, 6).to_parquet(tmp_path / "a.parquet")
    _binary_frame(1_000, 7).rename(columns={"p": "score"}).to_parquet(tmp_path / "b.parquet")
    with pytest.raises(DataError, match=r"b\.parquet has other columns.*lacks 'p'"):
        analyze_stream(str(tmp_path / "*.parquet"), AnalysisConfig(lens="binary"))


def test_nan_in_one_batch_names_file_and_row(tmp_path):
    frame = _binary_frame(3_000, 8)
    frame.loc[2_345, "p"] = np.nan
    _binary_frame(1_000, 9).to_csv(tmp_path / "a.csv", index=False)
    with gzip.open(tmp_path / "b.csv.gz", "wt") as fh:
        frame.to_csv(fh, index=False)
    with pytest.raises(DataError, match=r"b\.csv\.gz, row 2,345 of that file.*row 3345") as got:
        analyze_stream(str(tmp_path / "*.csv*"), AnalysisConfig(lens="binary"), batch_rows=700)
    # one row: "has"; the option in each surface's words
    assert "1 of this batch's rows has a missing" in str(got.value)
    assert "drop_missing=True" in str(got.value)
    assert "--drop-missing" in phrase(got.value, "cli")
    result = analyze_stream(
        str(tmp_path / "*.csv*"),
        AnalysisConfig(lens="binary", n_resamples=0),
        load=LoadOptions(drop_missing=True),
    )
    assert result.input.n == 3_999
    assert result.input.lint.get("missing-values").rows == (3_345,)


def test_options_a_stream_cannot_honour():
    with pytest.raises(ConfigError, match="exact bootstrap"):
        analyze_stream("unused.parquet", AnalysisConfig(bootstrap="exact"))
    with pytest.raises(ConfigError, match="canonical"):
        analyze_stream("unused.parquet", AnalysisConfig(lens="canonical", estimator="skce-ul"))


def test_nothing_matches_a_glob(tmp_path):
    with pytest.raises(DataError, match="No files match"):
        analyze_stream(str(tmp_path / "*.parquet"))


# --------------------------------------------------------------------------- the pieces


@settings(max_examples=120, deadline=None)
@given(
    n=st.integers(1, 250),
    n_bins=st.integers(1, 40),
    kind=st.sampled_from(["uniform", "few", "rounded", "saturated"]),
    tie_policy=st.sampled_from(["split", "keep"]),
    chunk=st.integers(1, 90),
    gather=st.integers(1, 40),
    seed=st.integers(0, 10_000),
)
def test_stream_equal_mass_bins_equal_the_sort(n, n_bins, kind, tie_policy, chunk, gather, seed):
    rng = np.random.default_rng(seed)
    s = {
        "uniform": rng.random(n),
        "few": rng.choice([0.0, 0.25, 0.5, 1.0], n),
        "rounded": np.round(rng.random(n), 2),
        "saturated": np.where(rng.random(n) < 0.5, 1.0, rng.random(n)),
    }[kind]
    old = ranks.GATHER_MAX
    ranks.GATHER_MAX = gather  # forces refinement passes
    try:
        idx, edges = _stream_equal_mass(s, n_bins, tie_policy, chunk)
    finally:
        ranks.GATHER_MAX = old
    ref_idx, ref_edges = BINNINGS.get("equal-mass").func(s, n_bins, tie_policy)
    assert_array_equal(idx, ref_idx)
    assert_array_equal(edges, ref_edges)


def _stream_equal_mass(s, n_bins, tie_policy, chunk):
    n = s.size

    def find(wanted):
        search = ranks.RankSearch({0: wanted}, level1=1 << 10)
        while not search.done:
            total = ranks.PassCounts()
            for i in range(0, n, chunk):
                total = total + search.counts(0, s[i : i + chunk])
            search.update(0, total)
        return search.found(0)

    found = find(stream_bins.equal_mass_ranks(n, n_bins))
    bins, todo = stream_bins.equal_mass_bins(n, n_bins, tie_policy, found)
    if todo.size:
        bins = stream_bins.keep_bins(bins, n, {**found, **find(todo)})
    seen: dict[float, int] = {}
    parts = []
    for i in range(0, n, chunk):
        idx, held = bins.assign(s[i : i + chunk], seen)
        stream_bins.add_seen(seen, held)
        parts.append(idx)
    return np.concatenate(parts), bins.edges


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 90), cuts=st.lists(st.integers(1, 89), max_size=5), seed=st.integers(0, 99))
def test_digest_is_the_same_for_any_chunking(n, cuts, seed):
    import core.data.predictions as predictions

    old = predictions.LEAF_BYTES
    predictions.LEAF_BYTES = 240  # ten rows a leaf at K = 2
    try:
        _check_chunked_digest(n, cuts, seed)
    finally:
        predictions.LEAF_BYTES = old


def _check_chunked_digest(n, cuts, seed):
    rng = np.random.default_rng(seed)
    p = rng.random((n, 2))
    y = rng.integers(0, 2, n)
    m = np.array([f"m{i % 3}" for i in range(n)], dtype=object)
    reference = _digest(p, y, ("a", "b"), False, {"model": m})
    bounds = sorted({0, n, *[c for c in cuts if c < n]})
    chunks = []
    for lo, hi in itertools.pairwise(bounds):
        d = Digest(2, lo, ["model"])
        d.update(p[lo:hi], y[lo:hi], {"model": m[lo:hi]})
        chunks.append(d)
    while len(chunks) > 1:  # join adjacent chunks in a random order (a tree reduction)
        j = int(rng.integers(0, len(chunks) - 1))
        chunks[j : j + 2] = [chunks[j] + chunks[j + 1]]
    assert chunks[0].hexdigest(("a", "b"), False) == reference


def test_value_facts_merge_to_the_findings_of_all_rows():
    rng = np.random.default_rng(10)
    n = 5_000
    p = np.where(rng.random(n) < 0.6, 0.2, rng.random(n))
    probs = np.column_stack([1 - p, p])
    y = rng.integers(0, 2, n)
    whole = lint_values(probs, y, binary=True, class_names=("0", "1"))
    cuts = [0, 1_234, 2_000, 4_321, n]
    parts = [
        ValueFacts.of(probs[a:b], y[a:b], binary=True, offset=a, ties=True)
        for a, b in itertools.pairwise(cuts)
    ]
    merged = parts[0]
    for part in parts[1:]:
        merged = merged + part
    assert merged.findings(("0", "1")) == whole
    lazy = ValueFacts.of(probs, y, binary=True, ties=False)
    assert lazy.needs_ties  # 60% of the scores are 0.2: the buckets cannot rule ties out


def test_tie_counts_keep_heavy_values_beyond_the_cap(monkeypatch):
    import core.data.lint as lint

    monkeypatch.setattr(lint, "TIE_CAP", 50)
    rng = np.random.default_rng(11)
    chunks = [np.concatenate([rng.random(400), np.full(300, 0.5)]) for _ in range(5)]
    merged = TieCounts.of(chunks[0])
    for c in chunks[1:]:
        merged = merged + TieCounts.of(c)
    top, _ = merged.top()
    assert merged.values[top[0]] == 0.5
    # a kept count is low by at most the floor (Misra–Gries)
    assert 1_500 - merged.floor <= merged.counts[top[0]] <= 1_500
    assert merged.floor > 0 and merged.distinct >= 50


def test_band_from_moments_agrees_with_the_exact_law(monkeypatch):
    import core.stats.consistency_bands as bands

    rng = np.random.default_rng(12)
    s = rng.beta(2, 5, 30_000)
    idx = np.zeros(s.size, dtype=np.intp)
    moments = BandStats.of(s, idx, 1).band(4_000, 0.95, np.random.default_rng(1))
    assert "moments" in moments.method
    monkeypatch.setattr(bands, "BAND_EXACT_ROWS", 10**6)
    exact = BandStats.of(s, idx, 1).band(4_000, 0.95, np.random.default_rng(1))
    assert exact.method == "poisson-binomial"
    # the same uniforms through two quantile functions: within a count or two
    assert abs(moments.low[0] - exact.low[0]) <= 2.0 / s.size
    assert abs(moments.high[0] - exact.high[0]) <= 2.0 / s.size


def test_band_stats_merge_to_the_band_of_all_rows():
    rng = np.random.default_rng(13)
    s = rng.beta(2, 5, 60_000)
    idx = np.minimum((s * 15).astype(np.intp), 14)
    whole = BandStats.of(s, idx, 15, keep_rows=True).band(1_000, 0.9, np.random.default_rng(3))
    parts = [
        BandStats.of(s[i : i + 7_000], idx[i : i + 7_000], 15) for i in range(0, 60_000, 7_000)
    ]
    merged = parts[0]
    for part in parts[1:]:
        merged = merged + part
    again = merged.band(1_000, 0.9, np.random.default_rng(3))
    assert_allclose(again.low, whole.low, rtol=EXACT)
    assert_allclose(again.high, whole.high, rtol=EXACT)


def test_digest_of_labels_hashed_narrow_is_batch_free_and_injective():
    """Leaves hash labels in the narrowest type their largest needs: any chunking agrees."""
    import core.data.predictions as predictions

    rng = np.random.default_rng(12)
    n, k = 95, 70_000
    p = np.full((n, k), 1.0 / k)[:, :2]  # the digest reads any matrix; two columns suffice
    y = rng.integers(0, 200, n)
    y[30:40] = rng.integers(256, 60_000, 10)  # one leaf of uint16
    y[60] = 69_999 + 0  # one of uint32 (past 65,535)
    y[61] = 65_536
    old = predictions.LEAF_BYTES
    predictions.LEAF_BYTES = 240  # ten rows a leaf at K = 2
    try:
        whole = _digest(p, y, ("a", "b"), False, {})
        for cuts in ([7], [33, 62], [10, 20, 30, 40, 50, 60, 70, 80, 90], list(range(1, 95))):
            bounds = [0, *cuts, n]
            parts = []
            for lo, hi in itertools.pairwise(bounds):
                d = Digest(2, lo)
                d.update(p[lo:hi], y[lo:hi])
                parts.append(d)
            total = parts[0]
            for d in parts[1:]:
                total = total + d
            assert total.hexdigest(("a", "b"), False) == whole
        seen = {whole}
        for i, value in ((5, 5 + 256), (35, y[35] % 256), (61, 0), (61, 65_536 + 2**32)):
            z = y.copy()
            z[i] = value  # a value a narrower type would wrap onto another
            seen.add(_digest(p, z, ("a", "b"), False, {}))
        z = y.copy()
        z[5] = -1  # not a valid label, but not 255 either
        seen.add(_digest(p, z, ("a", "b"), False, {}))
        assert len(seen) == 6
    finally:
        predictions.LEAF_BYTES = old
