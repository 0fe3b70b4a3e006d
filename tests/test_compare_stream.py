"""The comparison of models on a stream (and Dask) equals the in-memory comparison.

``compare --engine stream`` reads the models of a model column in batches and returns the
``ModelComparison`` of :func:`core.compare_models` with ``bootstrap="cells"``: the same point
values to 1e-12, the same intervals for the same seed (the cell bootstrap reads merged cells
only). In memory, the cell bootstrap of paired models draws their joint cells; its paired
differences agree with the exact paired row bootstrap within Monte Carlo error.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from cli_checks import one_line_error
from numpy.testing import assert_allclose
from scipy import stats

import core
from core.analyses.analysis import AnalysisConfig
from core.analyses.model_comparison import compare_models, on_edges, shared_lens_edges
from core.base.errors import ConfigError, DataError
from core.cli import main
from core.inference.comparison_cells import joint_cell_bootstrap, joint_cells, model_cells
from core.stats.binned_view import BinnedViews
from core.stream.compare import compare_stream

EXACT = 1e-12
METRICS = ("plugin@1", "debiased@2", "label-binned@1", "sweep@1", "brier", "log-loss")


def _binary_frame(n: int, *, paired: bool, seed: int = 3) -> pd.DataFrame:
    """Three models of one binary task; unpaired: the last one on fewer, other rows."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 1.5, n)
    y = (rng.random(n) < p**1.3).astype(int)
    models = {
        "sharp": np.clip(p**0.7, 0, 1),
        "noisy": np.clip(p + rng.normal(0, 0.08, n), 0, 1),
        "plain": p,
    }
    frames = []
    for name, s in models.items():
        rows = slice(None) if paired or name != "plain" else slice(n // 3, None)
        frames.append(pd.DataFrame({"model": name, "p": s[rows], "label": y[rows]}))
    # equal scores at many rows: ties at the equal-mass boundaries
    out = pd.concat(frames, ignore_index=True)
    out.loc[::7, "p"] = 0.5
    return out


def _multiclass_frame(n: int, *, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    k = 3
    logits = rng.normal(0, 1.5, (n, k))
    y = np.array([rng.choice(k, p=np.exp(r) / np.exp(r).sum()) for r in logits])
    frames = []
    for name, t in (("cold", 0.6), ("warm", 1.7)):
        z = np.exp(logits / t)
        probs = z / z.sum(1, keepdims=True)
        frame = pd.DataFrame(probs, columns=["a", "b", "c"])
        frame.insert(0, "label", np.array(["a", "b", "c"])[y])
        frame.insert(0, "model", name)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _write(folder, frame: pd.DataFrame, cuts, fmt: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    bounds = [0, *cuts, len(frame)]
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        part = frame.iloc[a:b]
        path = folder / f"part-{i:03d}.{fmt}"
        if fmt == "parquet":
            part.to_parquet(path, index=False)
        else:
            part.to_csv(path, index=False)
    return str(folder / f"*.{fmt}")


def _memory(frame: pd.DataFrame, tmp_path, fmt: str = "parquet") -> core.Predictions:
    path = tmp_path / f"whole.{fmt}"
    if fmt == "parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    return core.load_predictions(path)


def _assert_same(a, b) -> None:
    """Two comparisons with the same numbers (values to 1e-12, intervals of the same draws)."""
    assert a.models == b.models and a.paired == b.paired and a.n == b.n
    assert a.reference == b.reference
    for ea, eb in zip(a.edges, b.edges, strict=True):
        assert_allclose(ea, eb, rtol=0, atol=0)
    for m in a.models:
        for sa, sb in zip(a.bins[m], b.bins[m], strict=True):
            np.testing.assert_array_equal(sa.counts, sb.counts)
            assert_allclose(sa.score_sums, sb.score_sums, rtol=EXACT)
    cols = ["value", "low", "high"]
    assert list(a.table.metric) == list(b.table.metric)
    assert_allclose(
        a.table[cols].to_numpy(float), b.table[cols].to_numpy(float), rtol=EXACT, atol=1e-15
    )
    assert list(a.table["rank"]) == list(b.table["rank"])
    cols = ["difference", "low", "high"]
    assert_allclose(
        a.differences[cols].to_numpy(float),
        b.differences[cols].to_numpy(float),
        rtol=EXACT,
        atol=1e-15,
    )
    assert list(a.differences.significant) == list(b.differences.significant)
    assert a.flips[["model_a", "model_b", "metric_a", "metric_b"]].equals(
        b.flips[["model_a", "model_b", "metric_a", "metric_b"]]
    )


@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize(
    ("binning", "tie_policy"),
    [("equal-width", "split"), ("equal-mass", "split"), ("equal-mass", "keep")],
)
def test_binary_stream_comparison_equals_memory(tmp_path, paired, fmt, binning, tie_policy):
    frame = _binary_frame(1_500, paired=paired)
    pattern = _write(tmp_path / "parts", frame, [700, 2_000, 3_333], fmt)
    config = AnalysisConfig(
        lens="binary",
        binning=binning,
        tie_policy=tie_policy,
        n_bins=12,
        n_resamples=300,
        bootstrap="cells",
        seed=4,
    )
    memory = compare_models(_memory(frame, tmp_path, fmt).by_model(), config=config)
    stream = compare_stream(pattern, config, batch_rows=512)
    assert memory.paired is paired
    _assert_same(memory, stream)
    # the intervals are there (not NaN) for what the cells resample
    rows = stream.table.set_index(["model", "metric"])
    assert np.isfinite(rows.loc[("sharp", "plugin@1"), "low"])
    assert np.isfinite(rows.loc[("sharp", "brier"), "low"])
    assert np.isnan(rows.loc[("sharp", "sweep@1"), "low"])
    assert "stream" in rows.loc[("sharp", "sweep@1"), "note"]


def test_a_stream_comparisons_basic_intervals_equal_memory(tmp_path):
    frame = _binary_frame(1_500, paired=True)
    pattern = _write(tmp_path / "parts", frame, [700, 2_000, 3_333], "parquet")
    config = AnalysisConfig(
        lens="binary", n_bins=12, n_resamples=300, bootstrap="cells", seed=4,
        bootstrap_interval="basic",
    )  # fmt: skip
    metrics = ("plugin@2", "debiased@2", "brier")
    memory = compare_models(_memory(frame, tmp_path).by_model(), config=config, metrics=metrics)
    stream = compare_stream(pattern, config, metrics=metrics, batch_rows=512)
    _assert_same(memory, stream)
    percentile = compare_models(
        _memory(frame, tmp_path).by_model(),
        config=AnalysisConfig(lens="binary", n_bins=12, n_resamples=300, bootstrap="cells", seed=4),
        metrics=metrics,
    )
    rows = stream.table.set_index(["model", "metric"])
    other = percentile.table.set_index(["model", "metric"])
    assert not np.allclose(rows["low"], other["low"])  # the kind of interval reached the table


@pytest.mark.parametrize("lens", ["top-label", "classwise"])
def test_multiclass_stream_comparison_equals_memory(tmp_path, lens):
    frame = _multiclass_frame(1_200)
    pattern = _write(tmp_path / "parts", frame, [500, 1_900], "parquet")
    config = AnalysisConfig(lens=lens, n_bins=8, n_resamples=200, bootstrap="cells", seed=9)
    memory = compare_models(_memory(frame, tmp_path).by_model(), config=config)
    stream = compare_stream(pattern, config, batch_rows=300)
    assert memory.paired
    _assert_same(memory, stream)


def test_a_selection_of_models_in_its_order(tmp_path):
    frame = _binary_frame(900, paired=True)
    pattern = _write(tmp_path / "parts", frame, [1_000], "parquet")
    config = AnalysisConfig(lens="binary", binning="equal-mass", n_resamples=100, bootstrap="cells")
    parts = _memory(frame, tmp_path).by_model()
    memory = compare_models({m: parts[m] for m in ("plain", "sharp")}, config=config)
    stream = compare_stream(pattern, config, models=["plain", "sharp"], batch_rows=250)
    # the equal-mass edges are those of the two compared models' pooled scores
    _assert_same(memory, stream)


def test_batching_changes_no_number(tmp_path):
    for paired in (True, False):
        frame = _binary_frame(1_000, paired=paired, seed=8)
        pattern = _write(tmp_path / f"p{paired}", frame, [999, 1_001], "parquet")
        config = AnalysisConfig(
            lens="binary", binning="equal-mass", n_resamples=200, bootstrap="cells"
        )
        small = compare_stream(pattern, config, batch_rows=97)
        large = compare_stream(pattern, config, batch_rows=100_000)
        _assert_same(small, large)


def test_a_model_missing_in_a_part_is_compared_unpaired_as_in_memory(tmp_path):
    frame = _binary_frame(600, paired=True)
    # the first part holds "sharp" only, and 50 rows of "plain" are missing from the last
    # one: different n, so not paired (in memory as on the stream)
    frame = frame.drop(frame.index[(frame.model == "plain")][:50])
    pattern = _write(tmp_path / "parts", frame, [600, 1_000], "parquet")
    config = AnalysisConfig(lens="binary", n_resamples=100, bootstrap="cells")
    memory = compare_models(_memory(frame, tmp_path).by_model(), config=config)
    stream = compare_stream(pattern, config, batch_rows=128)
    assert not stream.paired and stream.n["plain"] == 550
    _assert_same(memory, stream)
    assert any("Not paired" in note for note in stream.notes)


def test_same_n_with_other_labels_is_not_paired(tmp_path):
    frame = _binary_frame(500, paired=True)
    flip = frame.index[frame.model == "noisy"][10]
    frame.loc[flip, "label"] = 1 - frame.loc[flip, "label"]
    pattern = _write(tmp_path / "parts", frame, [700], "parquet")
    config = AnalysisConfig(lens="binary", n_resamples=100, bootstrap="cells")
    memory = compare_models(_memory(frame, tmp_path).by_model(), config=config)
    stream = compare_stream(pattern, config, batch_rows=200)
    assert not memory.paired and not stream.paired
    _assert_same(memory, stream)


# --------------------------------------------------------------------------- the CLI


def _record(capsys, *argv: str) -> dict:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    record = json.loads(out)
    record.pop("versions")
    record["config"].pop("bootstrap")
    record["input"].pop("file")
    return record


def _close(a, b) -> None:
    """Equal records, numbers to 1e-12."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _close(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _close(x, y)
    elif isinstance(a, float) and isinstance(b, float):
        assert b == pytest.approx(a, rel=EXACT, abs=1e-15, nan_ok=True)
    else:
        assert a == b


@pytest.mark.parametrize(
    ("paired", "models"), [(True, []), (False, []), (True, ["--models", "plain,sharp"])]
)
def test_cli_stream_json_equals_memory(tmp_path, capsys, paired, models):
    frame = _binary_frame(800, paired=paired)
    frame.to_csv(tmp_path / "whole.csv", index=False)
    options = ["--resamples", "200", "--binning", "equal-mass", "--seed", "3", *models]
    memory = _record(
        capsys, "compare", str(tmp_path / "whole.csv"), *options, "--bootstrap", "cells"
    )
    stream = _record(
        capsys,
        "compare",
        str(tmp_path / "whole.csv"),
        *options,
        "--engine",
        "stream",
        "--batch-rows",
        "333",
    )
    assert memory["paired"] is paired
    # the same schema, the same numbers; only the note of what reads rows says "stream"
    for rec in (memory, stream):
        for row in rec["table"]:
            row.pop("note")
    _close(memory, stream)


def test_cli_stream_text_names_the_pairing(tmp_path, capsys):
    _binary_frame(400, paired=True).to_parquet(tmp_path / "x.parquet", index=False)
    code = main(["compare", str(tmp_path / "x.parquet"), "--engine", "stream", "--resamples", "50"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "differences to" in out and "(paired)" in out and "joint cells" in out


def test_bad_input_is_one_line(tmp_path, capsys):
    frame = _binary_frame(300, paired=True)
    frame.to_parquet(tmp_path / "x.parquet", index=False)
    path = str(tmp_path / "x.parquet")
    stream = ("--engine", "stream")
    assert "'nope'" in one_line_error(capsys, "compare", path, *stream, "--models", "sharp,nope")
    assert "at least two" in one_line_error(capsys, "compare", path, *stream, "--models", "sharp")
    assert "reference" in one_line_error(capsys, "compare", path, *stream, "--reference", "zz")
    assert "--models" in one_line_error(capsys, "compare", path, *stream, "--model", "sharp")
    assert "exact bootstrap" in one_line_error(
        capsys, "compare", path, *stream, "--bootstrap", "exact"
    )
    frame.drop(columns="model").to_parquet(tmp_path / "one.parquet", index=False)
    assert "no model column" in one_line_error(
        capsys, "compare", str(tmp_path / "one.parquet"), *stream
    )


def test_python_entry_errors(tmp_path):
    frame = _binary_frame(300, paired=True)
    frame.to_parquet(tmp_path / "x.parquet", index=False)
    with pytest.raises(DataError, match="'nope'"):
        compare_stream(tmp_path / "x.parquet", models=["sharp", "nope"])
    with pytest.raises(ConfigError, match="exact bootstrap"):
        compare_stream(tmp_path / "x.parquet", AnalysisConfig(bootstrap="exact"))
    with pytest.raises(ConfigError, match="metric"):
        compare_stream(tmp_path / "x.parquet", metrics=["nonsense@1"])
    assert core.compare_stream is compare_stream


# --------------------------------------------------------------------------- in memory


def test_compare_takes_the_cell_bootstrap_under_the_rule_of_analyze():
    rng = np.random.default_rng(1)
    n = 12_000  # n × 1000 resamples > EXACT_BOOTSTRAP_WORK: cells
    p = rng.beta(2, 1, n)
    y = (rng.random(n) < p).astype(int)
    parts = {"a": (p, y), "b": (p**1.4, y)}
    metrics = ("plugin@1", "sweep@1", "brier")
    auto = compare_models(parts, config=AnalysisConfig(lens="binary"), metrics=metrics)
    exact = compare_models(
        parts, config=AnalysisConfig(lens="binary", bootstrap="exact"), metrics=metrics
    )
    small = compare_models(
        parts, config=AnalysisConfig(lens="binary", n_resamples=100), metrics=metrics
    )
    assert any("joint cells" in note for note in auto.notes)
    assert not any("joint cells" in note for note in exact.notes + small.notes)
    # the point values do not depend on the bootstrap; the sweep gets analyze's note
    assert_allclose(auto.table.value, exact.table.value, rtol=0, atol=0)
    rows = auto.table.set_index(["model", "metric"])
    assert np.isnan(rows.loc[("a", "sweep@1"), "low"])
    assert "exact bootstrap" in rows.loc[("a", "sweep@1"), "note"]
    assert np.isfinite(exact.table.set_index(["model", "metric"]).loc[("a", "sweep@1"), "low"])
    # exact and cells intervals of a shared-bin metric agree to Monte Carlo error
    for m in ("a", "b"):
        lo_c, hi_c = rows.loc[(m, "plugin@1"), ["low", "high"]]
        lo_e, hi_e = exact.table.set_index(["model", "metric"]).loc[
            (m, "plugin@1"), ["low", "high"]
        ]
        assert lo_c == pytest.approx(lo_e, rel=0.1) and hi_c == pytest.approx(hi_e, rel=0.1)


@pytest.mark.parametrize("interval", ["percentile", "basic"])
@pytest.mark.parametrize("lens", ["binary", "classwise"])
def test_a_paired_model_on_cells_has_its_reliability_interval(tmp_path, interval, lens):
    """One model, one interval: Compare's own draw of a model's cells is analyze's.

    The differences pair the models through the joint cells; each model's interval comes from
    its own cells drawn as :func:`core.analyze` draws them, in memory and on a stream.
    """
    if lens == "binary":
        frame = _binary_frame(6_000, paired=True)
        metrics = ("plugin@1", "debiased@2", "brier", "log-loss", "accuracy")
    else:
        frame = _multiclass_frame(3_000)
        metrics = ("plugin@1", "brier", "accuracy")
    config = AnalysisConfig(
        lens=lens, bootstrap="cells", n_resamples=300, seed=6, bootstrap_interval=interval
    )
    pred = _memory(frame, tmp_path)
    cmp = compare_models(pred.by_model(), config=config, metrics=metrics)
    assert cmp.paired and any("joint cells" in note for note in cmp.notes)
    source = _write(tmp_path / "parts", frame, [len(frame) // 3, 2 * len(frame) // 3], "parquet")
    streamed = compare_stream(source, config=config, metrics=metrics, batch_rows=1_000)
    for out in (cmp, streamed):
        table = out.table.set_index(["model", "metric"])
        for m, part in pred.by_model().items():
            norm = {"plugin@1": 1.0, "debiased@2": 2.0}
            for key in metrics:
                name = key.split("@")[0]
                own = replace(config, norm=norm.get(key, config.norm))
                want = core.analyze(part, own).metrics.set_index("metric").loc[name]
                got = table.loc[(m, key)]
                assert_allclose(
                    [got.low, got.high], [want.low, want.high], rtol=EXACT, err_msg=(m, key)
                )
    # the differences still pair the models: read off the joint draw
    a, b = cmp.models[:2]
    assert not np.array_equal(cmp.distributions[a, "brier"], cmp.model_distributions[a, "brier"])
    diff = cmp.differences.set_index(["model", "metric"])
    other = b if cmp.reference == a else a
    key = "brier"
    paired = cmp.distributions[other, key] - cmp.distributions[cmp.reference, key]
    if interval == "percentile":
        lo, hi = np.quantile(paired, [0.025, 0.975])
        assert_allclose(diff.loc[(other, key), ["low", "high"]].to_numpy(float), [lo, hi])


def test_joint_cells_hold_every_models_cells():
    rng = np.random.default_rng(2)
    n = 5_000
    p = rng.beta(2, 2, n)
    y = (rng.random(n) < p).astype(int)
    config = AnalysisConfig(lens="binary", n_bins=10)
    lenses = [BinnedViews(s, y).lens("binary") for s in (p, p**2, np.sqrt(p))]
    edges = shared_lens_edges(lenses, config)
    comps = [on_edges(lv, edges, config) for lv in lenses]
    kw = {"lens": "binary", "binning": "equal-width", "n_bins": 10, "tie_policy": "split"}
    joint = joint_cells(comps, lenses[0].weights, **kw)
    assert joint.n == n and joint.n_cells <= 10**3 * 2
    assert len(joint.names) == 3
    for i, model in enumerate(comps):
        own = model_cells(model, lenses[0].weights, **kw)
        got, want = joint.component_bins(i), own.component_bins(0)
        np.testing.assert_array_equal(got.counts, want.counts)
        assert_allclose(got.score_sums, want.score_sums, rtol=EXACT)
        np.testing.assert_array_equal(got.label_sums, want.label_sums)


def test_joint_bootstrap_of_one_model_is_its_cell_bootstrap():
    from core.inference.calibration import EstimatorCall
    from core.inference.cells import cell_bootstrap
    from core.stats.scores import SCORES

    rng = np.random.default_rng(3)
    n = 4_000
    p = rng.beta(2, 2, n)
    y = (rng.random(n) < p).astype(int)
    config = AnalysisConfig(lens="binary", n_bins=10)
    lv = BinnedViews(p, y).lens("binary")
    comps = on_edges(lv, shared_lens_edges([lv], config), config)
    kw = {"lens": "binary", "binning": "equal-width", "n_bins": 10, "tie_policy": "split"}
    rows = {"brier": SCORES.get("brier").rows(np.stack([1 - p, p], 1), y, binary=True)}
    call = EstimatorCall.make("plugin", lens="binary", n_bins=10)
    one = cell_bootstrap(
        model_cells(comps, lv.weights, row_values=rows, **kw),
        {"x": call, "brier": "brier"},
        n_resamples=200,
        seed=5,
        est_seed=5,
    )
    joint = joint_cell_bootstrap(
        joint_cells([comps], lv.weights, row_values=[rows], **kw),
        1,
        {"x": call},
        ["brier"],
        n_resamples=200,
        seed=5,
        est_seed=5,
    )
    assert_allclose(joint[0, "x"], one["x"], rtol=EXACT)
    # a score's within-cell term is drawn apart (jointly across models): the same law
    a, b = joint[0, "brier"], one["brier"]
    assert abs(a.mean() - b.mean()) < 4 * b.std() * np.sqrt(2 / 200)
    assert a.std() == pytest.approx(b.std(), rel=0.25)


@pytest.mark.slow
def test_paired_cell_differences_agree_with_the_exact_paired_bootstrap_at_n_1e5():
    # quantiles of the paired differences' two bootstrap laws agree within Monte Carlo error
    n, r = 100_000, 1_000
    rng = np.random.default_rng(7)
    p = rng.beta(2.0, 1.0, n)
    y = (rng.random(n) < p**1.3).astype(int)
    parts = {"a": (p, y), "b": (np.clip(p + rng.normal(0, 0.03, n), 0, 1), y)}
    metrics = ("plugin@1", "debiased@2", "brier")
    kw = {"metrics": metrics, "n_resamples": r}
    cells = compare_models(parts, config=AnalysisConfig(lens="binary", bootstrap="cells"), **kw)
    exact = compare_models(
        parts, config=AnalysisConfig(lens="binary", bootstrap="exact", seed=1), **kw
    )
    assert cells.paired and exact.paired
    for key in metrics:
        a = cells.distributions["b", key] - cells.distributions["a", key]
        b = exact.distributions["b", key] - exact.distributions["a", key]
        sd = b.std()
        # paired: far narrower than independent bootstraps of the two models would give
        spread = np.hypot(exact.distributions["a", key].std(), exact.distributions["b", key].std())
        assert sd < 0.8 * spread, key
        assert stats.ks_2samp(a, b).pvalue > 1e-3, key
        assert abs(a.mean() - b.mean()) < 4 * sd * np.sqrt(2 / r), key
        assert a.std() == pytest.approx(sd, rel=0.12), key
        for q in (0.025, 0.5, 0.975):
            se = np.sqrt(q * (1 - q) / r) / stats.norm.pdf(stats.norm.ppf(q)) * sd
            assert abs(np.quantile(a, q) - np.quantile(b, q)) < 4 * np.sqrt(2) * se, (key, q)


# --------------------------------------------------------------------------- Dask


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_dask_unpaired_equals_stream_and_memory(tmp_path, client, binning):
    from core.stream.compare import compare_dask

    frame = _binary_frame(1_200, paired=False)
    pattern = _write(tmp_path / "parts", frame, [500, 1_700, 2_900], "parquet")
    config = AnalysisConfig(lens="binary", binning=binning, n_resamples=200, bootstrap="cells")
    on_dask = compare_dask(pattern, config, client=client)
    stream = compare_stream(pattern, config, batch_rows=400)
    memory = compare_models(_memory(frame, tmp_path).by_model(), config=config)
    _assert_same(stream, on_dask)
    _assert_same(memory, on_dask)


@pytest.mark.parametrize(("interleaved", "binning"), [(False, "equal-width"), (True, "equal-mass")])
def test_dask_paired_equals_stream_and_memory(
    tmp_path, client, capsys, monkeypatch, interleaved, binning
):
    """Paired models on Dask: blocks of row positions gathered across partitions."""
    import core.stream.dask as stream_dask
    from core.stream.compare import compare_dask

    monkeypatch.setattr(stream_dask, "SIDE_BY_SIDE_ROWS", 130)  # blocks cut partitions
    frame = _binary_frame(600, paired=True)
    if interleaved:  # every partition holds every model's rows
        frame = frame.iloc[np.argsort(np.tile(np.arange(600), 3), kind="stable")]
    pattern = _write(tmp_path / "parts", frame, [700, 1_300], "parquet")
    config = AnalysisConfig(lens="binary", binning=binning, n_resamples=200, bootstrap="cells")
    on_dask = compare_dask(pattern, config, client=client)
    stream = compare_stream(pattern, config, batch_rows=400)
    memory = compare_models(_memory(frame, tmp_path).by_model(), config=config)
    assert on_dask.paired and stream.paired and memory.paired
    _assert_same(stream, on_dask)
    _assert_same(memory, on_dask)
    # the command line too: paired, with the intervals of the stream engine
    address = client.scheduler.address
    outs = []
    for engine in (["--engine", "dask", "--scheduler", address], ["--engine", "stream"]):
        argv = ["compare", pattern, "--binning", binning, "--resamples", "200", "--json"]
        assert main([*argv, *engine]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0]["paired"] is True
    _close(outs[1]["table"], outs[0]["table"])


def test_stream_report_holds_the_comparison_of_memory(tmp_path, capsys):
    _binary_frame(500, paired=True).to_parquet(tmp_path / "x.parquet", index=False)
    argv = ["report", str(tmp_path / "x.parquet"), "--resamples", "100", "--test", "none"]
    records = []
    for extra in (["--bootstrap", "cells"], ["--engine", "stream", "--batch-rows", "400"]):
        assert main([*argv, *extra, "--json"]) == 0
        records.append(json.loads(capsys.readouterr().out)["comparison"])
    memory, stream = records
    assert memory is not None and stream["paired"] is True
    for rec in (memory, stream):
        for row in rec["table"]:
            row.pop("note")
    _close(memory, stream)
