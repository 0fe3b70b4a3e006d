"""Smooth ECE (Błasiok & Nakkiran 2023) against relplot 1.0.3, side by side.

Floor: the binary equal-width plug-in ECE's least work (:func:`benchmarks.bench_binned._ew_floor`,
one binning pass of the rows), the same floor as the binned rows. The smooth ECE needs one
linear binning pass per grid size its bandwidth search visits (one for every σ ≥ 0.01, a few
more below) and a dozen FFTs of a few thousand points; relplot runs the same search with
``np.add.at`` binning and direct convolutions. The notes give the relative difference of the
two values (the estimand is the same: relplot's reflected-Gaussian ``smECE``).

Run alone with ``python -m benchmarks.bench_smooth [--quick]``.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from benchmarks.bench_binned import _binary_data, _ew_floor
from benchmarks.common import MIN_REPEATS, median_of, peer_module, row
from core import calibration_error
from core.inference.bootstrap import DISTRIBUTIONS, bootstrap_interval


def _ours(s: np.ndarray, y: np.ndarray, bandwidth: Any = "auto") -> float:
    return calibration_error(s, y, estimator="smooth", lens="binary", bandwidth=bandwidth).value


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Time the smooth ECE (automatic and fixed bandwidth), relplot's, and the bootstrap."""
    n = 100_000 if quick else 1_000_000
    repeat = 1 if quick else MIN_REPEATS
    s, y = _binary_data(n)
    yf = y.astype(np.float64)
    floor = median_of(lambda: _ew_floor(s, y), repeat=repeat)
    rows = [row(f"floor, binary equal-width plug-in, n={n:,}", floor, floor)]
    ours = _ours(s, y)
    t = median_of(lambda: _ours(s, y), repeat=repeat)
    rows.append(row(f"smooth ECE (auto σ), n={n:,}", t, floor, target="smooth-ece"))
    t_fixed = median_of(lambda: _ours(s, y, 0.05), repeat=repeat)
    rows.append(row(f"smooth ECE (σ = 0.05), n={n:,}", t_fixed, floor))
    rp = peer_module("relplot")
    if rp is not None:
        want = float(rp.smECE(s, yf))
        t_rp = median_of(lambda: rp.smECE(s, yf), repeat=repeat)
        rows.append(
            row(
                f"relplot smECE (auto σ), n={n:,}",
                t_rp,
                floor,
                f"rel. diff {abs(ours - want) / want:.1e}; ours {t_rp / t:.1f}× faster",
            )
        )
        want_fixed = float(rp.smECE_sigma(s, yf, 0.05))
        t_rp_fixed = median_of(lambda: rp.smECE_sigma(s, yf, 0.05), repeat=repeat)
        diff = abs(_ours(s, y, 0.05) - want_fixed) / want_fixed
        rows.append(
            row(
                f"relplot smECE_sigma (σ = 0.05), n={n:,}",
                t_rp_fixed,
                floor,
                f"rel. diff {diff:.1e}",
            )
        )
    else:
        rows.append(row("relplot smECE", float("nan"), None, "not installed"))
    # a calibrated model: σ* < 0.01, so the search visits several grid sizes (a pass each)
    rng = np.random.default_rng(1)
    sc = rng.random(n)
    yc = (rng.random(n) < sc).astype(np.int64)
    t_cal = median_of(lambda: _ours(sc, yc), repeat=repeat)
    sigma = calibration_error(sc, yc, estimator="smooth", lens="binary").details["bandwidth"]
    rows.append(row(f"smooth ECE (auto σ), calibrated, n={n:,}", t_cal, floor, f"σ* = {sigma:.4f}"))
    if rp is not None:
        ycf = yc.astype(np.float64)
        t_rp_cal = median_of(lambda: rp.smECE(sc, ycf), repeat=repeat)
        diff = abs(_ours(sc, yc) - float(rp.smECE(sc, ycf))) / float(rp.smECE(sc, ycf))
        rows.append(
            row(
                f"relplot smECE (auto σ), calibrated, n={n:,}",
                t_rp_cal,
                floor,
                f"rel. diff {diff:.1e}; ours {t_rp_cal / t_cal:.1f}× faster",
            )
        )
    m, r = (2_000, 100) if quick else (10_000, 1_000)
    sb, yb = s[:m], y[:m]

    def boot() -> None:
        DISTRIBUTIONS.clear()  # a memo hit would time a lookup, not the bootstrap
        bootstrap_interval(sb, yb, statistic="smooth", lens="binary", n_resamples=r)

    t_boot = median_of(boot)
    rows.append(
        row(f"smooth ECE bootstrap, n={m:,} × {r:,} resamples", t_boot, None, "rows-batch path")
    )
    return rows


if __name__ == "__main__":
    from benchmarks.run import print_table

    print_table(run(quick="--quick" in sys.argv))
