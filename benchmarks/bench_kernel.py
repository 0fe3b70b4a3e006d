"""Kernel calibration error (SKCE) and its tests against a straightforward chunked numpy version.

Floor for SKCE_uq: row chunks of 256 rows, the full ``(chunk, n, K)`` broadcast for the TV
distance, ``exp``, the residual products by one matrix product and the sum of every entry
(both triangles, float64) — what a careful first implementation looks like. The library
visits only the upper triangle in cache-sized tiles with reusable buffers, and can do the
distance and kernel arithmetic in float32 (sums stay float64).

Run alone with ``python -m benchmarks.bench_kernel [--quick]``.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from benchmarks.common import best_of, row
from core.calibration_tests import calibration_test
from core.estimators import ESTIMATORS
from core.estimators import kernel as kern


def _data(n: int, k: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.1), n)
    y = np.minimum((rng.random(n)[:, None] >= p.cumsum(1)).sum(1), k - 1)
    return p, y


def naive_skce_uq(p: np.ndarray, y: np.ndarray, nu: float, chunk: int = 256) -> float:
    """Straightforward chunked SKCE_uq with the exp(−TV/ν)·I kernel (the benchmark floor)."""
    n = p.shape[0]
    e = -p.copy()
    e[np.arange(n), y] += 1.0
    total = 0.0
    for a in range(0, n, chunk):
        rows = slice(a, min(a + chunk, n))
        d = 0.5 * np.abs(p[rows, None, :] - p[None, :, :]).sum(axis=2)
        total += float((np.exp(-d / nu) * (e[rows] @ e.T)).sum())
    return (total - float((e * e).sum())) / (n * (n - 1))


def _fresh_sums(p: np.ndarray, y: np.ndarray, spec: kern.KernelSpec, dtype: type) -> float:
    kern._SUM_CACHE.clear()  # time the pass, not the memo
    total, trace = kern.h_sums(p, y, spec, dtype=dtype)
    n = p.shape[0]
    return (total - trace) / (n * (n - 1))


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Return benchmark rows (see :func:`benchmarks.common.row`)."""
    rows = []
    n = 2_000 if quick else 10_000
    p, y = _data(n)
    kern._MEDIAN_CACHE.clear()
    t_med = best_of(
        lambda: (kern._MEDIAN_CACHE.clear(), kern.median_bandwidth(p)), repeat=1, warmup=0
    )
    nu = kern.median_bandwidth(p)
    spec = kern.KernelSpec("laplacian", "tv", nu)
    floor = best_of(lambda: naive_skce_uq(p, y, nu), repeat=1, warmup=0)
    want = naive_skce_uq(p, y, nu)
    t64 = best_of(lambda: _fresh_sums(p, y, spec, np.float64), repeat=2, warmup=0)
    t32 = best_of(lambda: _fresh_sums(p, y, spec, np.float32), repeat=2, warmup=0)
    err64 = abs(_fresh_sums(p, y, spec, np.float64) / want - 1)
    err32 = abs(_fresh_sums(p, y, spec, np.float32) / want - 1)
    rows.append(row(f"SKCE_uq floor (chunked numpy), n={n:,}, K=10", floor, floor))
    rows.append(row(f"SKCE_uq tiled float64, n={n:,}", t64, floor, f"rel. diff {err64:.1e}"))
    rows.append(row(f"SKCE_uq tiled float32, n={n:,}", t32, floor, f"rel. diff {err32:.1e}"))
    rows.append(row(f"median heuristic (exact, full matrix), n={n:,}", t_med, None))

    nb = 1_000 if quick else 5_000
    pb, yb = _data(nb, seed=1)
    kern.median_bandwidth(pb)
    t_boot = best_of(
        lambda: calibration_test(pb, yb, test="skce-uq-bootstrap", n_resamples=1000),
        repeat=1,
        warmup=0,
    )
    rows.append(row(f"bootstrap test R=1000, n={nb:,} (median cached)", t_boot, None))

    nl = 100_000 if quick else 1_000_000
    pl, yl = _data(nl, seed=2)
    func = ESTIMATORS.get("skce-ul").func
    kw = {
        "lens": "canonical", "norm": 1.0, "binning": None, "n_bins": None, "tie_policy": None,
        "class_weights": None, "class_names": None, "rng": np.random.default_rng(0),
    }  # fmt: skip
    t_ul = best_of(lambda: func(pl, yl, bandwidth=0.8, **kw), repeat=3)
    rows.append(row(f"SKCE_ul, n={nl:,}, K=10, fixed ν", t_ul, None))
    t_ul_med = best_of(lambda: func(pl, yl, **kw), repeat=1)
    rows.append(
        row(
            f"SKCE_ul, n={nl:,}, median ν on {kern.MEDIAN_SUBSAMPLE:,}-row subsample",
            t_ul_med,
            None,
        )
    )
    return rows


if __name__ == "__main__":
    for r in run("--quick" in sys.argv):
        ratio = "" if np.isnan(r["ratio_to_floor"]) else f"{r['ratio_to_floor']:.2f}×"
        print(f"{r['name']:<62} {r['seconds']:>9.3f} s {ratio:>7}  {r['notes']}")
