import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.analyses.analysis import (
    CONSISTENCY_BAND_RESAMPLES,
    METRIC_COLUMNS,
    AnalysisConfig,
    ReliabilityAnalysis,
    analyze,
)
from core.base.errors import ConfigError
from core.data import as_predictions
from core.estimators import ESTIMATORS
from core.inference.bootstrap import bootstrap_interval
from core.inference.calibration import calibration_error
from core.stats.binning import bin_indices, bin_stats
from core.stats.consistency_bands import consistency_band
from core.stats.intervals import bin_intervals
from core.stats.scores import accuracy, brier_score, log_loss

ROOT = Path(__file__).resolve().parents[1]
CIFAR = ROOT.parent / "shared" / "data" / "cifar10-14-networks"


def _data(n=400, k=3, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.7), size=n)
    sharp = p**2 / (p**2).sum(1, keepdims=True)  # labels drawn from sharper probabilities
    y = (sharp.cumsum(1) < rng.uniform(size=(n, 1))).sum(1)
    return p, y


CONFIGS = [
    AnalysisConfig(n_resamples=30),
    AnalysisConfig(norm=2, estimator="debiased", binning="equal-mass", n_bins=8, n_resamples=30),
    AnalysisConfig(lens="classwise", norm=np.inf, n_bins=6, n_resamples=20, seed=3),
    AnalysisConfig(lens="classwise", binning="discrete", class_weights=(1, 2, 1), n_resamples=0),
    AnalysisConfig(estimator="sweep", binning="equal-mass", n_resamples=20),
]


@pytest.mark.parametrize("config", CONFIGS)
def test_metrics_equal_direct_calls(config):
    p, y = _data()
    a = analyze((p, y), config)
    assert isinstance(a, ReliabilityAnalysis)
    assert a.metrics.columns.tolist() == METRIC_COLUMNS
    opts = config.calibration_options()
    estimators = a.metrics.metric.tolist()[:-3]
    for name in estimators:
        direct = calibration_error(p, y, estimator=name, seed=config.seed, **opts).value
        row = a.metrics.set_index("metric").loc[name]
        assert row.value == direct, name
    assert (
        a.headline.value
        == calibration_error(p, y, estimator=config.estimator, seed=config.seed, **opts).value
    )
    scores = a.metrics.set_index("metric").loc[["accuracy", "brier", "log-loss"], "value"]
    assert scores.tolist() == [accuracy(p, y), brier_score(p, y), log_loss(p, y)]


def test_metric_rows_follow_the_registry_capabilities():
    p, y = _data()
    rows = analyze((p, y), AnalysisConfig(n_resamples=0)).metrics.metric.tolist()
    kernel = ["skce-b", "skce-uq", "skce-ul", "skce-block", "mmce"]  # not the experimental kde
    binned = ESTIMATORS.names(lp_scale=True)  # every binned (and smooth) estimator, in order
    assert binned[:4] == ["plugin", "label-binned", "debiased", "sweep"]
    assert rows == [*binned, *kernel, "accuracy", "brier", "log-loss"]
    # no ℓ∞ debiased estimator; no sweep over discrete bins
    rows = analyze((p, y), AnalysisConfig(norm="inf", n_resamples=0)).metrics.metric.tolist()
    assert "debiased" not in rows and "plugin" in rows
    rows = analyze(
        (p, y), AnalysisConfig(binning="discrete", n_resamples=0)
    ).metrics.metric.tolist()
    assert "sweep" not in rows
    # MMCE has only the top-label lens
    rows = analyze((p, y), AnalysisConfig(lens="classwise", n_resamples=0)).metrics.metric.tolist()
    assert "mmce" not in rows and "skce-ul" in rows


def test_kernel_rows_are_point_estimates_or_say_why_not():
    p, y = _data()
    a = analyze((p, y), AnalysisConfig(n_resamples=20))
    table = a.metrics.set_index("metric")
    direct = calibration_error(p, y, estimator="skce-uq", lens="top-label").value
    assert table.loc["skce-uq", "value"] == direct
    assert (
        np.isnan(table.loc["skce-uq", "low"]) and "Estimators page" in table.loc["skce-uq", "note"]
    )
    # every kernel number shows its lens (the config's, given explicitly) beside it
    for name in ("skce-uq", "mmce"):
        assert table.loc[name, "note"].startswith("lens top-label; ")
    # the experimental KDE is left out of the table unless it is the headline
    assert "kde" not in table.index
    head = analyze((p, y), AnalysisConfig(estimator="kde", n_resamples=0)).metrics
    kde = calibration_error(p, y, estimator="kde", lens="top-label", norm=1).value
    assert head.set_index("metric").loc["kde", "value"] == kde
    # a kernel headline's row says its lens too
    head = analyze((p, y), AnalysisConfig(estimator="skce-b", n_resamples=0))
    assert head.metrics.set_index("metric").loc["skce-b", "note"].startswith("lens top-label")
    # identical predictions: no bandwidth can be derived, and the row says so without
    # asking for a control the dashboard does not have
    flat = np.full_like(p, 1.0 / p.shape[1])
    table = analyze((flat, y), AnalysisConfig(n_resamples=0)).metrics.set_index("metric")
    note = table.loc["skce-b", "note"]
    assert np.isnan(table.loc["skce-b", "value"]) and "Every prediction is the same" in note
    assert "set bandwidth" not in note
    # most pairs identical (a confidence of 1.0 on most rows): the median of the pairs that
    # differ, said beside the number
    most = p.copy()
    most[: int(0.8 * len(p))] = np.eye(p.shape[1])[0]
    table = analyze((most, y), AnalysisConfig(n_resamples=0)).metrics.set_index("metric")
    assert np.isfinite(table.loc["skce-b", "value"])
    assert "median of the nonzero pairwise distances" in table.loc["skce-b", "note"]


def test_zero_median_falls_back_to_the_median_of_the_pairs_that_differ():
    from core.estimators.kernel import (
        pairwise_distances,
        positive_median_bandwidth,
        resolve_bandwidth,
    )

    rng = np.random.default_rng(3)
    for metric in ("tv", "l1", "l2"):
        for n_same in (29, 30, 33):
            p = rng.dirichlet(np.ones(3), 40)
            p[:n_same] = p[0]
            d = pairwise_distances(p, metric=metric)[np.triu_indices(40, 1)]
            assert np.median(d) == 0.0
            want = float(np.median(d[d > 0]))  # by hand: the pairs that differ
            assert positive_median_bandwidth(p, metric=metric) == pytest.approx(want, rel=1e-15)
            nu, how = resolve_bandwidth(p, "median", metric)
            assert nu == pytest.approx(want, rel=1e-15) and how.startswith("median of the nonzero")
    # a normal case keeps the median heuristic itself
    p = rng.dirichlet(np.ones(3), 40)
    assert resolve_bandwidth(p, "median", "tv")[1] == "median heuristic (full matrix)"


def test_intervals_use_common_resamples_from_the_config_seed():
    p, y = _data()
    config = AnalysisConfig(n_bins=10, n_resamples=40, confidence_level=0.9, seed=7)
    a = analyze((p, y), config)
    ref = bootstrap_interval(
        p, y, statistic="plugin", n_resamples=40, confidence_level=0.9, seed=7, n_bins=10
    )
    np.testing.assert_array_equal(a.intervals["plugin"].distribution, ref.distribution)
    np.testing.assert_array_equal(
        a.intervals["brier"].distribution,
        bootstrap_interval(p, y, statistic="brier", n_resamples=40, seed=7).distribution,
    )
    assert a.headline_interval is a.intervals["plugin"]
    m = a.metrics.set_index("metric")
    for name, boot in a.intervals.items():
        assert (m.loc[name, "low"], m.loc[name, "high"]) == tuple(boot.confidence_interval)
        assert boot.value == pytest.approx(m.loc[name, "value"], rel=1e-14)
    with_interval = m.low.notna()  # kernel rows are point estimates
    assert set(m.index[with_interval]) == set(a.intervals)
    assert (m.low <= m.high)[with_interval].all()


def test_no_resamples_means_no_intervals():
    p, y = _data()
    a = analyze((p, y), AnalysisConfig(n_resamples=0))
    assert a.intervals == {} and a.headline_interval is None
    assert a.metrics[["low", "high"]].isna().all().all()


def test_brier_decomposition_on_the_config_binning():
    from core.stats.scores import brier_decomposition

    p, y = _data()
    a = analyze((p, y), AnalysisConfig(binning="equal-mass", n_bins=5, n_resamples=0))
    ref = brier_decomposition(p, y, binning="equal-mass", n_bins=5)
    assert a.brier_decomposition == ref
    assert a.brier_decomposition.brier == a.metrics.set_index("metric").loc["brier", "value"]


def test_sweep_note_reports_b_star():
    p, y = _data()
    a = analyze((p, y), AnalysisConfig(binning="equal-mass", n_resamples=0))
    direct = calibration_error(p, y, estimator="sweep", binning="equal-mass")
    note = a.metrics.set_index("metric").loc["sweep", "note"]
    assert f"b* = {direct.details['b_star']}" in note


@pytest.mark.parametrize(
    ("binning", "tie_policy"),
    [("equal-mass", "split"), ("equal-mass", "keep"), ("equal-width", "split")],
)
def test_sweep_headline_tables_equal_a_fresh_binning_with_b_star(binning, tie_policy):
    rng = np.random.default_rng(12)
    p = np.round(rng.beta(2, 1, 3000), 2)  # ties, some on equal-width edges
    y = (rng.random(3000) < p**1.5).astype(int)
    config = AnalysisConfig(
        lens="binary", estimator="sweep", binning=binning, tie_policy=tie_policy, n_resamples=0
    )
    a = analyze((p, y), config)
    b_star = a.headline.details["b_star"]
    assert b_star != config.n_bins
    (comp,) = a.components
    idx, edges = bin_indices(p, binning=binning, n_bins=b_star, tie_policy=tie_policy)
    fresh = bin_stats(p, y, binning=binning, n_bins=b_star, tie_policy=tie_policy)
    assert comp.bins.isclose(fresh, rtol=1e-13, atol=1e-12)
    assert a.headline.bins[0] is comp.bins
    plugin = calibration_error(
        p, y, lens="binary", binning=binning, n_bins=b_star, tie_policy=tie_policy
    )
    assert a.headline.value == pytest.approx(plugin.value, rel=1e-13, abs=1e-15)
    # the band was drawn on exactly those bins: the same rows in the same bins
    band = consistency_band(
        p,
        bin_index=idx,
        n_bins=len(edges) - 1,
        n_resamples=CONSISTENCY_BAND_RESAMPLES,
        seed=np.random.default_rng(config.seed),
    )
    np.testing.assert_array_equal(comp.band.low, band.low)
    np.testing.assert_array_equal(comp.band.high, band.high)


def test_component_tables_top_label():
    p, y = _data()
    config = AnalysisConfig(
        n_bins=7, interval_method="clopper-pearson", confidence_level=0.9, n_resamples=0
    )
    a = analyze((p, y), config)
    (comp,) = a.components
    conf, pred = p.max(1), p.argmax(1)
    ref = bin_stats(conf, (pred == y).astype(float), n_bins=7)
    assert comp.name == "top-label" and comp.weight == 1.0
    assert comp.bins.isclose(ref)
    low, high = bin_intervals(
        ref.counts, ref.label_sums, method="clopper-pearson", confidence_level=0.9
    )
    np.testing.assert_array_equal(comp.low, low)
    np.testing.assert_array_equal(comp.high, high)
    frame = comp.to_frame()
    assert {"low", "high", "count", "mean_label"} <= set(frame.columns)


def test_component_tables_classwise_with_weights_and_names():
    p, y = _data(k=3)
    config = AnalysisConfig(lens="classwise", class_weights=(2, 1, 1), n_resamples=0)
    a = analyze(as_predictions((p, y), class_names=("cat", "dog", "eel")), config)
    assert [c.name for c in a.components] == ["cat", "dog", "eel"]
    assert [c.weight for c in a.components] == [0.5, 0.25, 0.25]
    for k, comp in enumerate(a.components):
        assert comp.bins.isclose(bin_stats(p[:, k], (y == k).astype(float), n_bins=15))
    table = a.bin_table
    assert table.component.unique().tolist() == ["cat", "dog", "eel"]
    assert len(table) == 3 * 15


def test_binary_vector_input_and_kernel_headline():
    rng = np.random.default_rng(1)
    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p).astype(int)
    a = analyze((p, y), AnalysisConfig(lens="binary", estimator="skce-ul", n_resamples=20))
    assert a.metrics.metric.iloc[0] == "skce-ul"
    assert a.headline.value == calibration_error(p, y, estimator="skce-ul", lens="binary").value
    assert np.isfinite(a.metrics.low.iloc[0])
    # the brier row uses the binary convention for a 1-D input
    assert a.metrics.set_index("metric").loc["brier", "value"] == brier_score(p, y)


# --- config --------------------------------------------------------------------------


def test_config_defaults_round_trip_and_hash():
    c = AnalysisConfig()
    assert (c.lens, c.binning, c.n_bins, c.norm, c.estimator) == (
        "top-label",
        "equal-width",
        15,
        1.0,
        "plugin",
    )
    assert (c.tie_policy, c.seed, c.n_resamples, c.confidence_level, c.interval_method) == (
        "split",
        0,
        1000,
        0.95,
        "wilson",
    )
    assert c.class_weights is None
    assert AnalysisConfig.from_dict(c.to_dict()) == c
    assert hash(AnalysisConfig()) == hash(c)
    assert {c: 1}[AnalysisConfig()] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.n_bins = 3


def test_config_round_trips_through_json_and_url_strings():
    import json

    c = AnalysisConfig(
        lens="classwise", norm=np.inf, n_bins=9, class_weights=(1, 3), seed=5, confidence_level=0.9
    )
    assert c.class_weights == (0.25, 0.75) and c.norm == np.inf
    d = json.loads(json.dumps(c.to_dict()))
    assert d["norm"] == "inf"
    assert AnalysisConfig.from_dict(d) == c
    url = {k: str(v) for k, v in c.to_dict().items()}
    url["class_weights"] = "0.25,0.75"
    assert AnalysisConfig.from_dict(url) == c
    assert AnalysisConfig.from_dict({"class_weights": "", "norm": "2"}).norm == 2.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"estimator": "ece"}, "Unknown estimator 'ece'. Choose one of: 'plugin'"),
        ({"lens": "marginal"}, "Unknown lens 'marginal'"),
        ({"binning": "quantile"}, "Unknown binning 'quantile'"),
        ({"interval_method": "exact"}, "Unknown per-bin interval method 'exact'"),
        ({"n_bins": 0}, "n_bins"),
        ({"n_bins": 2.5}, "n_bins"),
        ({"norm": 3}, "norm"),
        ({"estimator": "debiased", "norm": np.inf}, "does not support norm inf"),
        ({"estimator": "sweep", "binning": "discrete"}, "bins with equal-mass or equal-width"),
        ({"estimator": "plugin", "lens": "canonical"}, "does not support the 'canonical' lens"),
        ({"tie_policy": "random"}, "tie_policy"),
        ({"seed": -2}, "seed"),
        ({"n_resamples": -1}, "n_resamples"),
        ({"confidence_level": 95}, "fraction"),
        ({"confidence_level": "high"}, "level"),
        ({"class_weights": (1, -1)}, "class_weights"),
        ({"class_weights": "a,b"}, "class_weights"),
    ],
)
def test_bad_config_raises_config_error(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        AnalysisConfig(**kwargs)


def test_from_dict_rejects_unknown_fields():
    with pytest.raises(ConfigError, match="Unknown analysis option\\(s\\) 'bins'"):
        AnalysisConfig.from_dict({"bins": 10})


def test_config_incompatible_with_data():
    p, y = _data(k=3)
    with pytest.raises(ConfigError, match="binary lens needs two classes"):
        analyze((p, y), AnalysisConfig(lens="binary", n_resamples=0))
    with pytest.raises(ConfigError, match="class_weights"):
        analyze((p, y), AnalysisConfig(lens="classwise", class_weights=(1, 1), n_resamples=0))
    with pytest.raises(ConfigError, match="AnalysisConfig"):
        analyze((p, y), {"lens": "binary"})


# --- real data -----------------------------------------------------------------------


@pytest.mark.data
def test_cifar10_resnet18_top_label():
    if not (CIFAR / "resnet18.csv").exists():
        pytest.skip(f"CIFAR-10 predictions not found at {CIFAR}")
    p = pd.read_csv(CIFAR / "resnet18.csv", header=None).to_numpy(np.float64)
    y = pd.read_csv(CIFAR / "labels.csv", header=None).to_numpy().ravel() - 1
    a = analyze((p, y), AnalysisConfig(n_resamples=100))
    m = a.metrics.set_index("metric")
    assert m.loc["plugin", "value"] == calibration_error(p, y).value
    assert m.loc["accuracy", "value"] == pytest.approx(np.mean(p.argmax(1) == y), abs=0)
    # a well-trained CIFAR-10 network: high accuracy and a small, resolvable ECE
    assert m.loc["accuracy", "value"] > 0.9
    assert 0 < m.loc["plugin", "low"] < m.loc["plugin", "value"] < m.loc["plugin", "high"] < 0.1
    assert sum(c.bins.n for c in a.components) == 10_000


# --- one binned view per call ----------------------------------------------------------


def _count_binning_calls(monkeypatch):
    import dataclasses

    from core.stats.binning import BINNINGS

    calls = []
    for name in BINNINGS.names():
        entry = BINNINGS.get(name)

        def counting(scores, n_bins, tie_policy, order=None, _f=entry.func, _name=name):
            calls.append((_name, n_bins, scores.shape[0]))
            return _f(scores, n_bins, tie_policy, order)

        monkeypatch.setitem(BINNINGS._entries, name, dataclasses.replace(entry, func=counting))
    return calls


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_analyze_bins_each_component_once(monkeypatch, binning):
    calls = _count_binning_calls(monkeypatch)
    rng = np.random.default_rng(5)
    p = rng.uniform(size=800)
    y = (rng.uniform(size=800) < p).astype(int)
    config = AnalysisConfig(lens="binary", binning=binning, n_resamples=30)
    a = analyze((p, y), config)
    # the estimators, bin table, band, bootstrap and Brier decomposition share one binning;
    # the sweep takes its b* bins from the rows it sorted, without binning again
    assert "b* = " in a.metrics.set_index("metric").loc["sweep", "note"]
    # estimators with their own binning (mcb: discrete bins) bin once more, with it
    own = [(e.own_binning, 15, 800) for e in ESTIMATORS if e.own_binning is not None]
    assert calls == [(binning, 15, 800), *own], calls
    # classwise: one binning per class, shared with the decomposition
    calls.clear()
    p3, y3 = _data(n=500, k=4)
    analyze((p3, y3), AnalysisConfig(lens="classwise", binning=binning, n_resamples=20))
    fixed = [c for c in calls if c[1] == 15 and c[0] == binning]
    assert len(fixed) == 4, calls


def test_notes_have_no_empty_parts():
    p, y = _data()
    for lens in ("top-label", "classwise"):
        notes = analyze((p, y), AnalysisConfig(lens=lens, n_resamples=20)).metrics["note"]
        assert not notes.str.contains("; ;").any(), notes.tolist()
        assert notes.loc[notes.str.len() > 0].str.endswith(";").sum() == 0


def test_point_estimates_are_computed_once_per_data_and_options(monkeypatch):
    from core.analyses import analysis

    p, y = _data()
    calls = []
    real = analysis._point_estimates
    monkeypatch.setattr(
        analysis, "_point_estimates", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    analysis._POINTS.clear()
    quick = analyze((p, y), AnalysisConfig(n_bins=11, n_resamples=0, seed=5))
    full = analyze((p, y), AnalysisConfig(n_bins=11, n_resamples=30, seed=5))
    assert len(calls) == 1  # the page's second call only adds the intervals
    np.testing.assert_array_equal(quick.metrics.value, full.metrics.value)
    assert np.isfinite(full.metrics.low).any() and quick.metrics.low.isna().all()
    # the same without the memo: identical numbers, intervals included
    analysis._POINTS.clear()
    fresh = analyze((p, y), AnalysisConfig(n_bins=11, n_resamples=30, seed=5))
    pd.testing.assert_frame_equal(fresh.metrics, full.metrics)
    # other data, or another option, computes again
    analyze((p[:-1], y[:-1]), AnalysisConfig(n_bins=11, n_resamples=0, seed=5))
    analyze((p, y), AnalysisConfig(n_bins=12, n_resamples=0, seed=5))
    assert len(calls) == 4


@pytest.mark.parametrize("lens", ["classwise", "canonical"])
def test_a_change_of_bins_reuses_the_values_that_do_not_read_them(monkeypatch, lens):
    from core.analyses import analysis
    from core.estimators import ESTIMATORS
    from core.inference.calibration import EstimatorCall
    from core.stats import scores

    p, y = _data(n=600, seed=4)
    runs = []
    for method in ("run_on", "run"):  # binned estimators, kernel estimators
        real = getattr(EstimatorCall, method)
        monkeypatch.setattr(
            EstimatorCall,
            method,
            lambda self, *a, real=real, **k: runs.append(self.info.name) or real(self, *a, **k),
        )
    info = type(scores.SCORES.get("brier"))
    real_value = info.value
    monkeypatch.setattr(
        info, "value", lambda self, *a, **k: runs.append("brier") or real_value(self, *a, **k)
    )
    analysis._POINTS.clear()
    analysis._UNBINNED.clear()
    headline = {"estimator": "canonical-uniform"} if lens == "canonical" else {}
    analyze((p, y), AnalysisConfig(lens=lens, n_bins=10, n_resamples=0, **headline))
    first = set(runs)
    assert "brier" in first
    runs.clear()
    changed = analyze((p, y), AnalysisConfig(lens=lens, n_bins=12, n_resamples=0, **headline))
    # only the estimators that read the number of bins ran again; the scores read none
    unbinned = {name for name in first - {"brier"} if not ESTIMATORS.get(name).reads_n_bins}
    # the sweep, mcb, the smooth ECE and the kernel estimators (SKCE, MMCE); the canonical
    # binned ECE reads the bins
    assert {"skce-ul", "skce-uq"} <= unbinned, first
    assert set(runs) == first - unbinned - {"brier"}
    if lens == "canonical":
        assert set(runs) == {"canonical-uniform", "canonical-median-variance"}
    # and the table is the one a fresh analysis gives
    analysis._POINTS.clear()
    analysis._UNBINNED.clear()
    fresh = analyze((p, y), AnalysisConfig(lens=lens, n_bins=12, n_resamples=0, **headline))
    pd.testing.assert_frame_equal(changed.metrics, fresh.metrics)


def test_the_point_memo_holds_no_per_row_data():
    import pickle

    from core.analyses import analysis

    rng = np.random.default_rng(11)
    n = 20_000
    p = rng.uniform(size=n)  # 20,000 distinct scores: the mcb result keeps one PAV bin each
    y = (rng.uniform(size=n) < p).astype(int)
    analysis._POINTS.clear()
    a = analyze((p, y), AnalysisConfig(lens="binary", n_resamples=0))
    assert "mcb" in set(a.metrics.metric)
    (entry,) = analysis._POINTS.values()
    # a few kilobytes of values, notes and bin tables: less than one float per row
    assert len(pickle.dumps(entry)) < 8 * n
