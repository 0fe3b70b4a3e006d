"""core.analyses.model_comparison and core.figures.compare: identical bins, paired bootstrap, rankings."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from core.analyses.analysis import AnalysisConfig
from core.analyses.calibration_tests import calibration_test
from core.analyses.model_comparison import (
    DEFAULT_METRICS,
    compare_models,
    metric_choices,
    parse_metric,
)
from core.base.errors import ConfigError, DataError
from core.data import as_predictions
from core.figures import (
    metric_forest_figure,
    paired_difference_figure,
    rank_heatmap_figure,
    reliability_overlay_figure,
)
from core.inference.bootstrap import bootstrap_many
from core.inference.calibration import calibration_error
from core.stats.binning import assign_to_edges, bin_indices, equal_mass_starts, shared_edges
from core.stats.scores import brier_score

ROOT = Path(__file__).resolve().parents[1]
CIFAR = ROOT.parent / "shared" / "data" / "cifar10-14-networks"
BINARY = AnalysisConfig(lens="binary")


def _world(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores s ~ U(0, 1) with P(y = 1 | s) = s²: the model s is over-confident, s² calibrated."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(size=n)
    y = (rng.uniform(size=n) < s**2).astype(np.int64)
    return s, y


def _multiclass(n: int = 300, k: int = 3, seed: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 0.8, size=n)
    y = (rng.uniform(size=n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return p, np.minimum(y, k - 1).astype(np.int64)


# ------------------------------------------------------------------ identical models


def test_identical_models_have_identical_metrics_and_zero_paired_differences():
    s, y = _world(500, 3)
    cmp = compare_models({"a": (s, y), "b": (s.copy(), y.copy())}, config=BINARY, n_resamples=300)
    assert cmp.paired
    for spec in cmp.metrics:
        assert cmp.value("a", spec.key) == cmp.value("b", spec.key)
        assert_array_equal(cmp.distributions["a", spec.key], cmp.distributions["b", spec.key])
    diffs = cmp.differences
    assert len(diffs) == len(DEFAULT_METRICS)
    assert (diffs.difference == 0.0).all()
    assert (diffs.low == 0.0).all() and (diffs.high == 0.0).all()
    assert not diffs.significant.any()
    assert cmp.flips.empty
    # the models' own intervals are not zero-width: the pairing is what cancels the noise
    assert (cmp.table.high - cmp.table.low > 0).all()


# ------------------------------------------------------------------ a known world


def test_model_and_its_recalibrated_twin_on_a_known_world():
    # s vs s²: population binned ECE of s is ∫(s − s²) ds = 1/6 on any bins (the gap never
    # changes sign); the twin s² is calibrated (0). Brier: E[2s² − 2s³] = 1/6 for s and
    # E[s² − s⁴] = 2/15 for s², so the Brier difference is 1/30.
    s, y = _world(20_000, 11)
    cmp = compare_models(
        {"raw": (s, y), "recalibrated": (s**2, y)},
        config=BINARY,
        metrics=("plugin@1", "brier"),
        n_resamples=400,
        seed=5,
    )
    raw = cmp.table.set_index(["model", "metric"])
    low, high = raw.loc[("raw", "plugin@1"), ["low", "high"]]
    assert low < 1 / 6 < high
    assert cmp.value("recalibrated", "plugin@1") < 0.02
    assert cmp.reference == "recalibrated"  # best by the first metric
    d = cmp.differences.set_index("metric")
    assert d.loc["plugin@1", "significant"] and d.loc["plugin@1", "low"] > 0.12
    assert d.loc["brier", "low"] < 1 / 30 < d.loc["brier", "high"]
    # the paired interval of the Brier difference is far narrower than the two models'
    # own intervals side by side
    width = raw.loc[("raw", "brier"), "high"] - raw.loc[("raw", "brier"), "low"]
    width_twin = (
        raw.loc[("recalibrated", "brier"), "high"] - raw.loc[("recalibrated", "brier"), "low"]
    )
    assert d.loc["brier", "high"] - d.loc["brier", "low"] < 0.5 * (width + width_twin)
    assert_allclose(cmp.value("raw", "brier"), brier_score(s, y), rtol=1e-12)


# ------------------------------------------------------------------ identical bins


def test_pooled_equal_mass_edges_are_shared_by_all_models():
    a = np.array([0.1, 0.2])
    b = np.array([0.3, 0.4])
    y = np.array([0, 1])
    cmp = compare_models(
        {"a": (a, y), "b": (b, y)},
        config=AnalysisConfig(lens="binary", binning="equal-mass", n_bins=2),
        metrics=("plugin@1",),
        n_resamples=0,
    )
    # pooled ranks 0, 1 | 2, 3: the edge is the midpoint of 0.2 and 0.3
    assert_allclose(cmp.edges[0], [0.0, 0.25, 1.0])
    assert_array_equal(cmp.bins["a"][0].counts, [2, 0])
    assert_array_equal(cmp.bins["b"][0].counts, [0, 2])
    # one bin each: |0.15 − 0.5| and |0.35 − 0.5|
    assert_allclose(cmp.value("a", "plugin@1"), 0.35, rtol=1e-12)
    assert_allclose(cmp.value("b", "plugin@1"), 0.15, rtol=1e-12)
    assert any("pooled scores" in note for note in cmp.notes)


def test_pooled_equal_mass_bins_hold_equal_pooled_mass():
    rng = np.random.default_rng(4)
    n, b = 600, 8
    y = rng.integers(0, 2, n)
    parts = {f"m{i}": (rng.beta(1 + i, 2, n), y) for i in range(3)}
    cmp = compare_models(
        parts,
        config=AnalysisConfig(lens="binary", binning="equal-mass", n_bins=b),
        metrics=("plugin@1",),
        n_resamples=0,
    )
    for m in parts:
        assert_array_equal(cmp.bins[m][0].edges, cmp.edges[0])
    pooled = sum(cmp.bins[m][0].counts for m in parts)
    assert_array_equal(pooled, np.diff(equal_mass_starts(3 * n, b)))
    # each model's plug-in value is the plug-in formula on those fixed bins
    for m, (p, lab) in parts.items():
        idx = assign_to_edges(p, cmp.edges[0])
        cnt = np.bincount(idx, minlength=b)
        gap = np.abs(np.bincount(idx, p, b) - np.bincount(idx, lab, b))
        assert_allclose(cmp.value(m, "plugin@1"), gap.sum() / n, rtol=1e-12)
        assert cnt.sum() == n


def test_shared_edges_helpers_agree_with_the_registered_binnings():
    rng = np.random.default_rng(0)
    s = np.concatenate([rng.uniform(size=5000), np.arange(11) / 10])
    for b in (1, 3, 10, 15):
        assert_array_equal(
            assign_to_edges(s, shared_edges([s], n_bins=b)), bin_indices(s, n_bins=b)[0]
        )
    assert_allclose(shared_edges([[0.1, 0.2], [0.2, 0.4]], binning="discrete"), [0, 0.15, 0.3, 1])
    # on one set, pooled equal-mass edges are the set's own
    assert_allclose(
        shared_edges([s], binning="equal-mass", n_bins=7),
        bin_indices(s, binning="equal-mass", n_bins=7)[1],
    )


@pytest.mark.parametrize("lens", ["top-label", "classwise"])
def test_equal_width_values_and_resamples_match_the_registry(lens):
    # with equal-width bins the shared edges are every model's own: each estimator equals
    # calibration_error, and each bootstrap distribution equals bootstrap_many's (same
    # seed ⇒ same resamples)
    p1, y = _multiclass(300, 3, 2)
    p2 = 0.6 * p1 + 0.4 / 3
    config = AnalysisConfig(lens=lens, n_bins=6, seed=7)
    keys = ("plugin@1", "plugin@2", "plugin@inf", "label-binned@1", "label-binned@2",
            "label-binned@inf", "debiased@2", "debiased@1")  # fmt: skip
    cmp = compare_models({"a": (p1, y), "b": (p2, y)}, config=config, metrics=keys, n_resamples=60)
    for m, p in (("a", p1), ("b", p2)):
        specs = {}
        for key in keys:
            name, _, norm = key.partition("@")
            opts = {"lens": lens, "n_bins": 6, "norm": norm}
            direct = calibration_error(p, y, estimator=name, seed=7, **opts)
            assert_allclose(cmp.value(m, key), direct.value, rtol=1e-12, atol=1e-15)
            specs[key] = (name, opts)
        boots = bootstrap_many(p, y, specs, n_resamples=60, seed=7)
        for key in keys:
            assert_allclose(
                cmp.distributions[m, key], boots[key].distribution, rtol=1e-10, atol=1e-13
            )


def test_discrete_union_bins_equal_each_models_own_discrete_bins():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 400)
    a = rng.choice([0.1, 0.3, 0.5], 400)
    b = rng.choice([0.2, 0.3, 0.9], 400)
    cmp = compare_models(
        {"a": (a, y), "b": (b, y)},
        config=AnalysisConfig(lens="binary", binning="discrete"),
        metrics=("plugin@1", "debiased@2"),
        n_resamples=0,
    )
    assert cmp.edges[0].shape[0] == 6  # five distinct values in the union
    for m, p in (("a", a), ("b", b)):
        for key in ("plugin@1", "debiased@2"):
            name, _, norm = key.partition("@")
            direct = calibration_error(
                p, y, estimator=name, lens="binary", binning="discrete", norm=norm
            )
            assert_allclose(cmp.value(m, key), direct.value, rtol=1e-12)


# ------------------------------------------------------------------ paired bootstrap


def test_paired_bootstrap_uses_the_same_resamples_for_every_model():
    p_a = np.array([0.1, 0.4, 0.35, 0.8, 0.9, 0.65, 0.2, 0.55])
    p_b = np.array([0.3, 0.3, 0.6, 0.7, 0.6, 0.9, 0.1, 0.45])
    y = np.array([0, 1, 0, 1, 1, 1, 0, 0])
    r, seed = 25, 3
    cmp = compare_models(
        {"a": (p_a, y), "b": (p_b, y)},
        config=AnalysisConfig(lens="binary", n_bins=3),
        metrics=("plugin@1", "brier"),
        n_resamples=r,
        seed=seed,
        reference="a",
    )
    # the bootstrap's draws: one generator, integers(0, n, size=(r, n)) as int32
    rows = np.random.default_rng(seed).integers(0, 8, size=(r, 8), dtype=np.int32)
    direct = {
        key: np.array(
            [
                calibration_error(p_b[i], y[i], lens="binary", n_bins=3).value
                - calibration_error(p_a[i], y[i], lens="binary", n_bins=3).value
                if key == "plugin@1"
                else brier_score(p_b[i], y[i]) - brier_score(p_a[i], y[i])
                for i in rows
            ]
        )
        for key in ("plugin@1", "brier")
    }
    d = cmp.differences.set_index("metric")
    for key, diffs in direct.items():
        got = cmp.distributions["b", key] - cmp.distributions["a", key]
        assert_allclose(got, diffs, rtol=1e-12, atol=1e-15)
        assert_allclose(
            d.loc[key, ["low", "high"]].to_numpy(float),
            np.quantile(diffs, [0.025, 0.975]),
            rtol=1e-12,
            atol=1e-15,
        )


def test_unpaired_models_are_resampled_independently():
    s, y = _world(400, 8)
    perm = np.random.default_rng(1).permutation(400)
    # the same predictions in another row order: identical metrics, but not paired
    cmp = compare_models(
        {"a": (s, y), "b": (s[perm], y[perm])},
        config=BINARY,
        metrics=("plugin@1", "brier"),
        n_resamples=200,
    )
    assert not cmp.paired
    assert any(note.startswith("Not paired") for note in cmp.notes)
    assert_allclose(cmp.value("a", "brier"), cmp.value("b", "brier"), rtol=1e-12)
    d = cmp.differences.set_index("metric")
    # independent resamples: the difference's interval has width, centred near 0
    assert d.loc["brier", "low"] < 0 < d.loc["brier", "high"]
    assert not np.array_equal(cmp.distributions["a", "brier"], cmp.distributions["b", "brier"])

    small = compare_models(
        {"a": (s, y), "b": (s[:250], y[:250])}, config=BINARY, metrics=("brier",), n_resamples=50
    )
    assert not small.paired and small.n == {"a": 400, "b": 250}


# ------------------------------------------------------------------ rankings


def test_ece_and_brier_ranking_flip_is_reported():
    # "base rate": always 0.5 on balanced labels, ECE 0 and Brier 0.25;
    # "sharp": 0.9 on positives, 0.1 on negatives, ECE 0.1 and Brier 0.01
    y = np.tile([0, 1], 200)
    base = np.full(400, 0.5)
    sharp = np.where(y == 1, 0.9, 0.1)
    cmp = compare_models(
        {"base rate": (base, y), "sharp": (sharp, y)},
        config=BINARY,
        metrics=("plugin@1", "brier"),
        n_resamples=300,
    )
    assert_allclose(cmp.value("base rate", "plugin@1"), 0.0, atol=1e-15)
    assert_allclose(cmp.value("sharp", "plugin@1"), 0.1, rtol=1e-12)
    assert_allclose(cmp.value("sharp", "brier"), 0.01, rtol=1e-12)
    assert cmp.ranks.loc["base rate", "plugin@1"] == 1 and cmp.ranks.loc["sharp", "brier"] == 1
    assert cmp.kendall.loc["plugin@1", "brier"] == -1.0
    assert len(cmp.flips) == 1
    flip = cmp.flips.iloc[0]
    assert (flip.better_by_a, flip.better_by_b) == ("base rate", "sharp")
    assert flip.significant and not flip.intervals_overlap


def test_a_flip_within_noise_is_not_significant():
    s, y = _world(300, 21)
    rng = np.random.default_rng(2)
    # two nearly identical models: whatever order two metrics give them is noise
    cmp = compare_models(
        {"a": (s, y), "b": (np.clip(s + rng.normal(0, 0.01, 300), 0, 1), y)},
        config=BINARY,
        metrics=("plugin@1", "label-binned@1", "brier", "log-loss"),
        n_resamples=300,
    )
    assert len(cmp.flips)  # this seed gives at least one flip
    assert not cmp.flips.significant.any()


def test_accuracy_ranks_higher_as_better_and_reference_can_be_chosen():
    s, y = _world(500, 4)
    cmp = compare_models(
        {"raw": (s, y), "twin": (s**2, y)},
        config=BINARY,
        metrics=("accuracy", "plugin@1"),
        n_resamples=0,
        reference="raw",
    )
    acc = {m: cmp.value(m, "accuracy") for m in cmp.models}
    best = max(acc, key=acc.get)
    assert cmp.ranks.loc[best, "accuracy"] == 1
    assert cmp.reference == "raw"
    assert set(cmp.differences.model) == {"twin"}
    assert cmp.differences.low.isna().all()  # no bootstrap, no intervals
    assert cmp.table.low.isna().all()


def test_calibration_test_pvalues_match_direct_calls():
    s, y = _world(400, 6)
    cmp = compare_models(
        {"raw": (s, y), "twin": (s**2, y)},
        config=BINARY,
        metrics=("plugin@1",),
        n_resamples=0,
        test="spiegelhalter",
    )
    for m, p in (("raw", s), ("twin", s**2)):
        direct = calibration_test(p, y, test="spiegelhalter", lens="binary")
        row = cmp.tests.set_index("model").loc[m]
        assert_allclose(row.pvalue, direct.pvalue, rtol=1e-12)
        assert row.lens == "binary"
    wide = cmp.wide()
    assert list(wide.columns[:2]) == ["model", "n"] and "p-value" in wide.columns


def test_sweep_and_scores_come_with_their_own_notes():
    s, y = _world(800, 9)
    cmp = compare_models({"raw": (s, y), "twin": (s**2, y)}, config=BINARY, n_resamples=50)
    assert [spec.key for spec in cmp.metrics] == list(DEFAULT_METRICS)
    assert cmp.table[cmp.table.metric == "sweep@1"].note.str.startswith("b* = ").all()
    assert any("ECE_sweep" in note for note in cmp.notes)
    direct = calibration_error(s, y, estimator="sweep", lens="binary")
    assert_allclose(cmp.value("raw", "sweep@1"), direct.value, rtol=1e-12)


# ------------------------------------------------------------------ errors and parsing


def test_errors_are_typed_and_actionable():
    s, y = _world(100, 1)
    with pytest.raises(DataError, match="at least two"):
        compare_models({"a": (s, y)})
    with pytest.raises(ConfigError, match="Unknown metric"):
        compare_models({"a": (s, y), "b": (s, y)}, metrics=("ece",))
    with pytest.raises(ConfigError, match="no norm inf"):
        parse_metric("debiased@inf")
    with pytest.raises(ConfigError, match="binned views"):
        compare_models({"a": (s, y), "b": (s, y)}, config=AnalysisConfig(lens="canonical",
                       estimator="skce-ul"))  # fmt: skip
    with pytest.raises(ConfigError, match="reference"):
        compare_models({"a": (s, y), "b": (s, y)}, reference="c", n_resamples=0)
    p3, y3 = _multiclass(100, 3)
    with pytest.raises(DataError, match="numbers of classes"):
        compare_models({"a": (s, y), "b": (p3, y3)}, n_resamples=0)

    def named(names):
        return as_predictions((p3, y3), class_names=names)

    with pytest.raises(DataError, match="name their classes differently"):
        compare_models({"a": named(("x", "y", "z")), "b": named(("x", "z", "y"))}, n_resamples=0)


def test_metric_keys():
    assert parse_metric("plugin").key == "plugin@1"
    assert parse_metric("plugin", default_norm=math.inf).key == "plugin@inf"
    assert parse_metric("brier").kind == "score"
    assert parse_metric("accuracy").higher_is_better
    assert parse_metric("sweep@2").kind == "estimator"
    assert parse_metric("label-binned@2").kind == "shared-bins"
    choices = metric_choices("top-label")
    assert set(DEFAULT_METRICS) <= set(choices) and "skce-ul" not in choices
    assert "mmce" in metric_choices("top-label", kernels=True)


# ------------------------------------------------------------------ figures


def test_figures_are_pure_functions_of_the_comparison():
    s, y = _world(600, 12)
    parts = {"raw": (s, y), "twin": (s**2, y), "flat": (np.full(600, y.mean()), y)}
    cmp = compare_models(parts, config=BINARY, n_resamples=50, test="spiegelhalter")
    fig = reliability_overlay_figure(cmp)
    assert len(fig.data) == 1 + 2 * 3
    assert fig.data[0].name == "perfect calibration"
    for i, m in enumerate(cmp.models, start=1):
        bins = cmp.bins[m][0]
        ok = bins.counts > 0
        assert fig.data[i].name == m
        assert_allclose(fig.data[i].x, bins.mean_score[ok])
        assert_allclose(fig.data[i].y, bins.mean_label[ok])
        assert_array_equal(fig.data[i + 3].y, bins.counts)
    forest = metric_forest_figure(cmp)
    assert len(forest.data) == len(cmp.metrics)
    first = cmp.table[cmp.table.metric == cmp.metrics[0].key]
    assert_allclose(forest.data[0].x, first.value.to_numpy())
    diff = paired_difference_figure(cmp)
    assert len(diff.data) == len(cmp.metrics)
    assert list(diff.data[0].y) == [m for m in cmp.models if m != cmp.reference]
    heat = rank_heatmap_figure(cmp)
    assert_array_equal(heat.data[0].z, cmp.ranks.to_numpy())


# ------------------------------------------------------------------ real data


@pytest.mark.data
@pytest.mark.skipif(not CIFAR.exists(), reason=f"CIFAR-10 predictions not found at {CIFAR}")
def test_cifar10_networks_compare_on_the_same_rows():
    from core.data import load_predictions

    labels = CIFAR / "labels.csv"
    parts = {
        net: load_predictions(CIFAR / f"{net}.csv", labels=labels)
        for net in ("densenet121", "resnet18", "vgg11_bn")
    }
    cmp = compare_models(parts, metrics=("plugin@1", "brier"), n_resamples=100)
    assert cmp.paired and cmp.n["resnet18"] == 10_000
    for net, pred in parts.items():
        direct = calibration_error(pred.probs, pred.labels, n_bins=15)
        assert_allclose(cmp.value(net, "plugin@1"), direct.value, rtol=1e-12)
    d = cmp.differences
    # paired intervals on 10,000 shared images are narrow
    assert ((d.high - d.low) < 0.02).all()


# ------------------------------------------------------------------ command line


def test_cli_compare_json_matches_the_library(tmp_path, capsys):
    import json

    import pandas as pd

    from core.cli import main

    s, y = _world(300, 13)
    frame = pd.concat(
        [
            pd.DataFrame({"model": "raw", "label": y, "p": s}),
            pd.DataFrame({"model": "twin", "label": y, "p": s**2}),
            pd.DataFrame({"model": "flat", "label": y, "p": np.full(300, 0.3)}),
        ]
    )
    path = tmp_path / "preds.csv"
    frame.to_csv(path, index=False)
    args = [str(path), "--models", "raw,twin", "--metrics", "plugin@1,brier", "--resamples", "100"]
    assert main(["compare", *args, "--json", "--test", "spiegelhalter"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["models"] == ["raw", "twin"] and record["paired"]
    expected = compare_models(
        {"raw": (s, y), "twin": (s**2, y)},
        config=BINARY,
        metrics=("plugin@1", "brier"),
        n_resamples=100,
        test="spiegelhalter",
    )
    got = pd.DataFrame(record["differences"])
    assert_allclose(got.difference, expected.differences.difference, rtol=1e-12)
    assert_allclose(got.low, expected.differences.low, rtol=1e-12)
    assert_allclose(
        pd.DataFrame(record["tests"]).pvalue, expected.tests.pvalue, rtol=1e-12, atol=1e-300
    )
    # the table form, and one-line errors
    assert main(["compare", *args]) == 0
    text = capsys.readouterr().out
    assert "differences to twin (paired)" in text and "plugin@1" in text
    assert main(["compare", str(path), "--models", "raw,nope"]) == 2
    assert "nope" in capsys.readouterr().err
    single = tmp_path / "one.csv"
    pd.DataFrame({"label": y, "p": s}).to_csv(single, index=False)
    assert main(["compare", str(single)]) == 2
    assert "no model column" in capsys.readouterr().err


@pytest.mark.parametrize("threads", ["1", "2"])
def test_progress_counts_each_model_and_test_and_the_numbers_do_not_move(monkeypatch, threads):
    monkeypatch.setenv("CALIBSCOPE_THREADS", threads)
    p, y = _world(600, 4)
    parts = {"a": (p, y), "b": (p**2, y), "c": (np.sqrt(p), y)}
    kw = dict(config=BINARY, n_resamples=60, test="hosmer-lemeshow")
    ticks = []
    shown = compare_models(parts, progress=lambda f, m: ticks.append((f, m)), **kw)
    plain = compare_models(parts, **kw)
    assert json.dumps(shown.to_record(), default=str) == json.dumps(plain.to_record(), default=str)
    fractions = [f for f, _ in ticks]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(ticks) == 6
    assert ticks[0][1] == "Bootstrap of model 1 of 3"
    assert ticks[-1][1] == "Calibration test of model 3 of 3"

    # a raise from the bar (a Stop) ends the comparison
    def stop(f, m):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        compare_models(parts, progress=stop, **kw)
