"""The benchmarks run (a quick smoke run of one module), their floors compute the estimand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks import bench_binned, bench_kernel
from benchmarks.common import TARGETS, Target, row
from benchmarks.run import main


def test_pages_quick_run_prints_every_row(capsys):
    assert main(["--quick", "--only", "pages"]) == 0
    out = capsys.readouterr().out
    for name in (
        "Reliability page first view",
        "Reliability page, bins 15 → 20",
        "Estimators page default view",
    ):
        assert out.count(name) == 3  # binary, top-label and classwise
    assert "≤150×" in out and "not judged" in out


def test_least_work_floors_give_the_sorted_floors_numbers():
    rng = np.random.default_rng(3)
    s = rng.random(10_001)
    y = (rng.random(10_001) < s).astype(np.int64)
    for got, want in zip(bench_binned._em_floor(s, y), bench_binned._em_argsort(s, y), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    p = rng.dirichlet(np.ones(4), 2_003)
    labels = rng.integers(0, 4, 2_003)
    counts, scores, hits = bench_binned._classwise_em_floor(p, labels)
    ref = bench_binned._classwise_em_argsort(p, labels)
    np.testing.assert_array_equal(np.tile(counts, 4), ref[0])
    np.testing.assert_allclose(scores.ravel(), ref[1], rtol=1e-12)
    np.testing.assert_allclose(hits.ravel(), ref[2], rtol=1e-12)


def test_tiled_skce_floor_equals_the_broadcast():
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.full(3, 0.5), 700)
    y = rng.integers(0, 3, 700)
    want = bench_kernel.naive_skce_uq(p, y, 0.3)
    assert bench_kernel.tiled_skce_uq(p, y, 0.3, rows=64, cols=256) == pytest.approx(
        want, rel=1e-12
    )


def test_targets_are_judged_on_every_limit():
    goal = Target("≤3×, RSS <1 GB", max_ratio=3.0, max_rss_mb=1000.0)
    assert goal.met({"ratio_to_floor": 2.9, "peak_rss_mb": 900.0})
    assert not goal.met({"ratio_to_floor": 3.1, "peak_rss_mb": 900.0})
    assert not goal.met({"ratio_to_floor": 2.0, "peak_rss_mb": math.nan})
    r = row("x", 4.0, 2.0, target="stream", peak_rss_mb=10.0)
    assert r["target"] == TARGETS["stream"].text and r["met"] is True
    assert row("y", 1.0, None)["met"] is None


def test_conventions_quick_run_agrees_with_every_installed_library(capsys):
    assert main(["--quick", "--only", "conventions"]) == 0
    out = capsys.readouterr().out
    for name in ("sklearn", "netcal", "torchmetrics", "uncertainty-calibration"):
        assert f"calibration_error(convention='{name}')" in out
    assert "values differ" not in out


def test_smooth_quick_run_sets_relplot_beside_ours():
    from benchmarks import bench_smooth

    rows = bench_smooth.run(quick=True)
    names = [r["name"] for r in rows]
    assert any(n.startswith("smooth ECE (auto σ)") for n in names)
    assert any("relplot smECE" in n for n in names)
    for peer in rows:
        if peer["name"].startswith("relplot") and "rel. diff" in peer["notes"]:
            assert float(peer["notes"].split("rel. diff ")[1].split(";")[0]) < 1e-6


def test_scores_in_bins_floor_computes_the_label_binned_estimate():
    from core.inference.calibration import calibration_error

    s, y = bench_binned._binary_data(20_003)
    counts, score_sums, label_sums, deviations = bench_binned._ew_deviation_floor(s, y)
    for got, want in zip(
        (counts, score_sums, label_sums), bench_binned._ew_floor(s, y), strict=True
    ):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    want = calibration_error(s, y, lens="binary", estimator="label-binned", n_bins=bench_binned.B)
    assert deviations.sum() / s.shape[0] == pytest.approx(want.value, rel=1e-12)
    assert want.value > calibration_error(s, y, lens="binary", n_bins=bench_binned.B).value


def _stream_parts(tmp_path, n):
    """Two Parquet parts of ``n`` seeded binary rows: the scores, labels and part paths."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(8)
    s = rng.beta(2.0, 1.0, n)
    y = (rng.random(n) < s).astype(np.int8)
    parts = []
    for j, part in enumerate((slice(0, 2 * n // 5), slice(2 * n // 5, None))):
        parts.append(str(tmp_path / f"part-{j}.parquet"))
        pq.write_table(pa.table({"score": s[part], "label": y[part]}), parts[-1])
    return s, y, parts


def _check_stream_statistics(s, y, label_binned, ece, brier):
    """The label-binned ECE, plug-in ECE and Brier score of the in-memory path."""
    from core.inference.calibration import calibration_error
    from core.stats.scores import SCORES

    labels = y.astype(np.int64)
    want = calibration_error(s, labels, lens="binary", estimator="label-binned").value
    assert label_binned == pytest.approx(want, rel=1e-12)
    assert ece == pytest.approx(calibration_error(s, labels, lens="binary").value, rel=1e-12)
    pair = np.column_stack([1.0 - s, s])
    assert brier == pytest.approx(SCORES.get("brier").value(pair, labels, binary=True), rel=1e-9)


def test_stream_reference_computes_the_streams_statistics(tmp_path):
    import subprocess
    import sys

    from benchmarks import bench_scale

    s, y, parts = _stream_parts(tmp_path, 30_001)
    out = subprocess.run(
        [sys.executable, "-c", bench_scale._STREAM_FLOOR, *parts],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    _check_stream_statistics(s, y, *map(float, out.split()))


def test_compiled_stream_reference_computes_the_streams_statistics(tmp_path):
    # without numba the kernels run as plain Python: the same statistics, slowly
    from benchmarks import stream_compiled

    s, y, parts = _stream_parts(tmp_path, 3_001)
    _check_stream_statistics(s, y, *stream_compiled.run(parts))
    # both references sum the same cells; the pairs are each pass's own
    rng = np.random.default_rng(3)
    t = rng.random(1_001)
    t[:4] = [0.0, 1.0, 0.5, 14 / 15]  # the ends, the hit threshold, an edge
    z = (rng.random(1_001) < t).astype(np.int8)
    sums = np.zeros((8, 30))
    pairs = stream_compiled.cells_pass(t, z, sums, 15)
    k = np.minimum((t * 15).astype(np.intp), 14)
    cell = 2 * k + z
    q = np.maximum(np.where(z == 1, t, 1.0 - t), 1e-15)
    want = [np.bincount(cell, w, minlength=30) for w in (None, t, t**2, t**3, t**4)]
    want += [np.bincount(cell, np.log(q) * p, minlength=30) for p in (1, np.log(q))]
    want.append(np.bincount(cell, (t >= 0.5) == (z == 1), minlength=30))
    np.testing.assert_allclose(sums, np.array(want), rtol=1e-12, atol=1e-12)
    r = z[:1000] - t[:1000]
    near = np.exp(-np.abs(t[0:1000:2] - t[1:1000:2]) / 0.1)
    assert pairs == pytest.approx(float(np.sum(r[0::2] * r[1::2] * near)), rel=1e-12)


def test_stream_load_path_reads_every_row_as_the_engine_does(tmp_path):
    # the load-path reference does the engine's real load work: its digest is the in-memory one
    import subprocess
    import sys

    import pyarrow as pa
    import pyarrow.parquet as pq

    from benchmarks import bench_scale
    from core import load_predictions

    s, y, parts = _stream_parts(tmp_path, 30_001)
    whole = tmp_path / "whole.parquet"
    pq.write_table(pa.table({"score": s, "label": y}), whole)
    want = load_predictions(str(whole)).digest
    for source in ([str(tmp_path / "part-*.parquet")], parts):
        out = subprocess.run(
            [sys.executable, "-c", bench_scale._LOAD_PATH, *source],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert out == [want, str(s.shape[0])]


def test_recalibration_floors_compute_the_fits_they_time():
    from benchmarks import bench_recal
    from core.recalibration import make_recalibrator

    z, y = bench_recal._binary(20_001)
    p = 1 / (1 + np.exp(-z))
    # the packed-key sort and scipy's PAV give core's isotonic fit, to the bit
    iso = make_recalibrator("isotonic").fit(p, y).predict_proba(p)
    np.testing.assert_array_equal(bench_recal.isotonic_floor(p, y), iso[:, 1])
    # Newton passes run to convergence give the maximum-likelihood logistic fit (hard targets)
    platt = make_recalibrator("platt", targets="hard").fit(z, y, logits=True)
    got = bench_recal.newton_floor(z, y, passes=10)
    np.testing.assert_allclose(got, platt.predict_proba(z, logits=True)[:, 1], rtol=1e-9)
    zm, ym = bench_recal._multiclass(2_000, 20)
    temp = make_recalibrator("temperature").fit(zm, ym, logits=True)
    got = bench_recal.temperature_floor(zm, ym, passes=10)
    np.testing.assert_allclose(got, temp.predict_proba(zm, logits=True), rtol=1e-9, atol=1e-15)


def test_round_robin_reports_medians_and_spread():
    from benchmarks.common import median_of, round_robin

    calls: list[str] = []
    a, b = round_robin([lambda: calls.append("a"), lambda: calls.append("b")], repeat=5)
    assert calls == ["a", "b"] * 6  # one warm-up round, then five timed rounds in turn
    assert a.repeats == b.repeats == 5 and a.low <= a.median <= a.high
    r = row("x", a, b)
    assert r["seconds"] == a.median and r["low"] == a.low and r["repeats"] == 5
    assert r["ratio_to_floor"] == pytest.approx(a.median / b.median)
    assert median_of(lambda: None, repeat=7, warmup=0).repeats == 7
