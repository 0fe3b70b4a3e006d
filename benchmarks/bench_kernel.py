"""Kernel calibration error (SKCE) and its tests against a least-work tiled numpy floor.

Floor for SKCE_uq (:func:`tiled_skce_uq`): the upper triangle of the ``n × n`` pair matrix
in tiles of 128 × 4096 pairs (one BLAS thread), the TV distance accumulated one class at a time in a reused
buffer (no ``(chunk, n, K)`` array), ``exp`` in place, the residual products by one matrix
product per tile and the tile's sum (off-diagonal tiles counted twice), all float64. The
straightforward chunked broadcast of earlier runs (:func:`naive_skce_uq`: both triangles,
a ``(256, n, K)`` difference array per chunk) is kept as a reference row, not a floor. The
library runs the same symmetric tiling and can do the distance and kernel arithmetic in
float32 (sums stay float64).

Run alone with ``python -m benchmarks.bench_kernel [--quick]``.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.common import median_of, row
from core.analyses.calibration_tests import calibration_test
from core.estimators import ESTIMATORS
from core.estimators import kernel as kern


def _data(n: int, k: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.1), n)
    y = np.minimum((rng.random(n)[:, None] >= p.cumsum(1)).sum(1), k - 1)
    return p, y


def naive_skce_uq(p: np.ndarray, y: np.ndarray, nu: float, chunk: int = 256) -> float:
    """Straightforward chunked SKCE_uq with the exp(−TV/ν)·I kernel (a reference, not a floor)."""
    n = p.shape[0]
    e = -p.copy()
    e[np.arange(n), y] += 1.0
    total = 0.0
    for a in range(0, n, chunk):
        rows = slice(a, min(a + chunk, n))
        d = 0.5 * np.abs(p[rows, None, :] - p[None, :, :]).sum(axis=2)
        total += float((np.exp(-d / nu) * (e[rows] @ e.T)).sum())
    return (total - float((e * e).sum())) / (n * (n - 1))


def tiled_skce_uq(
    p: np.ndarray, y: np.ndarray, nu: float, rows: int = 128, cols: int = 4096
) -> float:
    """SKCE_uq with the exp(−TV/ν)·I kernel over upper-triangle tiles (the benchmark floor)."""
    n, k = p.shape
    e = -p.copy()
    e[np.arange(n), y] += 1.0
    # one class per pass over a tile: class columns as contiguous rows
    pt = np.ascontiguousarray(p.T)
    buf = np.empty(rows * max(cols, rows))
    tmp = np.empty_like(buf)
    # thousands of small products: BLAS threads cost more than they save (as in the library)
    with threadpool_limits(1, user_api="blas"):
        total = _tiles(pt, e, nu, rows, cols, buf, tmp)
    return (total - float((e * e).sum())) / (n * (n - 1))


def _tiles(
    pt: np.ndarray,
    e: np.ndarray,
    nu: float,
    rows: int,
    cols: int,
    buf: np.ndarray,
    tmp: np.ndarray,
) -> float:
    k, n = pt.shape
    total = 0.0
    for a in range(0, n, rows):
        ra = slice(a, min(a + rows, n))
        for b in [a, *range(ra.stop, n, cols)]:
            rb = slice(b, min(b + (rows if b == a else cols), n))
            shape = (ra.stop - ra.start, rb.stop - rb.start)
            d = buf[: shape[0] * shape[1]].reshape(shape)
            t = tmp[: shape[0] * shape[1]].reshape(shape)
            np.abs(np.subtract(pt[0, ra, None], pt[0, None, rb], out=d), out=d)
            for c in range(1, k):
                np.abs(np.subtract(pt[c, ra, None], pt[c, None, rb], out=t), out=t)
                d += t
            d *= -0.5 / nu
            np.exp(d, out=d)
            np.matmul(e[ra], e[rb].T, out=t)
            d *= t
            part = float(d.sum())
            total += part if b == a else 2.0 * part
    return total


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
    t_med = median_of(lambda: (kern._MEDIAN_CACHE.clear(), kern.median_bandwidth(p)), warmup=0)
    nu = kern.median_bandwidth(p)
    spec = kern.KernelSpec("laplacian", "tv", nu)
    floor = median_of(lambda: tiled_skce_uq(p, y, nu), warmup=0)
    t_naive = median_of(lambda: naive_skce_uq(p, y, nu), warmup=0)
    want = naive_skce_uq(p, y, nu)
    err_floor = abs(tiled_skce_uq(p, y, nu) / want - 1)
    t64 = median_of(lambda: _fresh_sums(p, y, spec, np.float64), warmup=0)
    t32 = median_of(lambda: _fresh_sums(p, y, spec, np.float32), warmup=0)
    err64 = abs(_fresh_sums(p, y, spec, np.float64) / want - 1)
    err32 = abs(_fresh_sums(p, y, spec, np.float32) / want - 1)
    rows.append(
        row(
            f"SKCE_uq floor (tiled numpy, upper triangle), n={n:,}, K=10",
            floor,
            floor,
            f"rel. diff {err_floor:.1e}",
        )
    )
    rows.append(
        row(
            f"reference (not a floor): SKCE_uq chunked n² broadcast, n={n:,}",
            t_naive,
            floor,
            "old floor",
        )
    )
    rows.append(row(f"SKCE_uq tiled float64, n={n:,}", t64, floor, f"rel. diff {err64:.1e}"))
    rows.append(row(f"SKCE_uq tiled float32, n={n:,}", t32, floor, f"rel. diff {err32:.1e}"))
    rows.append(row(f"median heuristic (exact, full matrix), n={n:,}", t_med, None))

    nb = 1_000 if quick else 5_000
    pb, yb = _data(nb, seed=1)
    kern.median_bandwidth(pb)
    t_boot = median_of(
        lambda: calibration_test(pb, yb, test="skce-uq-bootstrap", n_resamples=1000),
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
    t_ul = median_of(lambda: func(pl, yl, bandwidth=0.8, **kw))
    rows.append(row(f"SKCE_ul, n={nl:,}, K=10, fixed ν", t_ul, None))
    t_ul_med = median_of(lambda: func(pl, yl, **kw))
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
