"""Recalibrators: fit + predict time on 1,000,000 binary rows and 50,000 × 1,000 multiclass rows.

Floor: one stable sort of the binary scores (binary) or one softmax pass over the logit
matrix (multiclass): the least work any recalibrator does. scikit-learn's Platt
(``_sigmoid_calibration``) and ``IsotonicRegression`` are timed alongside on the same
binary rows, and as the one-vs-rest loop over classes that ``CalibratedClassifierCV`` runs
on the multiclass rows. Report ratios to the floor of the same run: the machine may be shared.

Matrix scaling and Dirichlet calibration at K = 1,000 have K² + K ≈ 10⁶ parameters, and every L-BFGS evaluation
makes two float64 BLAS products of the (n × K) scores with a (K × K) matrix (≈ 4nK² =
2·10¹¹ flops at n = 50,000): several seconds each on two cores, and convergence takes
hundreds. So both refuse K > 100 unless ``max_iter`` is passed explicitly (suggesting
vector, temperature or beta calibration); this benchmark passes
``max_iter=MATRIX_MAX_ITER`` and says so in the notes. It does not reach "seconds" at
K = 1,000 and is not meant to: an unconverged 5-iteration fit is reported as such.

Run: ``python -m benchmarks.run --only recal`` (``--quick`` for small sizes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.common import best_of, peer_module, row
from core.base.parallel import thread_count
from core.recalibration import RECALIBRATORS, make_recalibrator
from core.recalibration.base import softmax

MATRIX_MAX_ITER = 5


def _binary(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    z = rng.normal(0, 2, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-0.6 * z - 0.2))).astype(np.int64)
    return z, y


def _multiclass(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    z = rng.normal(0, 1, (n, k)).astype(np.float64)
    y = rng.integers(0, k, n)
    z[np.arange(n), y] += rng.uniform(0, 6, n)
    return 1.5 * z, y


def _options(name: str, k: int) -> dict[str, Any]:
    if name in ("matrix", "dirichlet") and k > 100:
        return {"max_iter": MATRIX_MAX_ITER}
    return {}


def _fit_predict(name: str, x: np.ndarray, y: np.ndarray, opts: dict[str, Any]) -> None:
    r = make_recalibrator(name, **opts).fit(x, y, logits=True)
    r.predict_proba(x, logits=True)


def run(quick: bool) -> list[dict[str, Any]]:
    """Time every recalibrator; return benchmark rows."""
    rows: list[dict[str, Any]] = []
    n_bin = 20_000 if quick else 1_000_000
    z, y = _binary(n_bin)
    p = 1 / (1 + np.exp(-z))
    floor = best_of(lambda: np.argsort(p, kind="stable"), repeat=3)
    rows.append(row(f"recal binary floor: sort n={n_bin:,}", floor, floor))
    for name in RECALIBRATORS.names():
        sec = best_of(lambda name=name: _fit_predict(name, z, y, {}), repeat=1, warmup=0)
        rows.append(row(f"recal binary {name} n={n_bin:,}", sec, floor, "fit + predict_proba"))
    sk = peer_module("sklearn")
    if sk is not None:
        from sklearn.calibration import _sigmoid_calibration
        from sklearn.isotonic import IsotonicRegression

        def sk_platt() -> None:
            a, b = _sigmoid_calibration(z, y)
            1 / (1 + np.exp(a * z + b))

        def sk_iso() -> None:
            IsotonicRegression(out_of_bounds="clip").fit(p, y).predict(p)

        # one warm-up call each, so first-call import and allocation costs do not count
        ours_platt = best_of(lambda: _fit_predict("platt", z, y, {}), repeat=1, warmup=1)
        ours_iso = best_of(
            lambda: make_recalibrator("isotonic").fit(p, y).predict_proba(p), repeat=1, warmup=1
        )
        t_sk_platt = best_of(sk_platt, repeat=1, warmup=1)
        t_sk_iso = best_of(sk_iso, repeat=1, warmup=1)
        rows.append(
            row(
                f"sklearn Platt n={n_bin:,}",
                t_sk_platt,
                floor,
                f"ours / sklearn = {ours_platt / t_sk_platt:.2f}",
            )
        )
        rows.append(
            row(
                f"sklearn isotonic n={n_bin:,}",
                t_sk_iso,
                floor,
                f"ours / sklearn = {ours_iso / t_sk_iso:.2f}",
            )
        )
    n_mc, k = (2_000, 50) if quick else (50_000, 1_000)
    zm, ym = _multiclass(n_mc, k)
    floor_mc = best_of(lambda: softmax(zm), repeat=3)
    rows.append(row(f"recal multiclass floor: softmax {n_mc:,}x{k:,}", floor_mc, floor_mc))
    times: dict[str, float] = {}
    for name in RECALIBRATORS.names():
        opts = _options(name, k)
        sec = best_of(
            lambda name=name, opts=opts: _fit_predict(name, zm, ym, opts), repeat=1, warmup=0
        )
        times[name] = sec
        note = f"fit + predict_proba, {thread_count()} thread(s)" + (
            f", explicit max_iter={MATRIX_MAX_ITER} (L-BFGS capped; required above K = 100)"
            if opts
            else ""
        )
        rows.append(row(f"recal multiclass {name} {n_mc:,}x{k:,}", sec, floor_mc, note))
    if sk is not None:
        rows.extend(_sklearn_one_vs_rest(zm, ym, floor_mc, times))
    return rows


def _sklearn_one_vs_rest(
    z: np.ndarray, y: np.ndarray, floor: float, ours: dict[str, float]
) -> list[dict[str, Any]]:
    """scikit-learn's one-vs-rest Platt and isotonic (a loop over classes, as CalibratedClassifierCV)."""
    from sklearn.calibration import _sigmoid_calibration
    from sklearn.isotonic import IsotonicRegression

    p = softmax(z)
    lo = np.log(np.clip(p, 1e-12, 1 - 1e-12)) - np.log1p(-np.clip(p, 1e-12, 1 - 1e-12))
    k = z.shape[1]

    def platt() -> None:
        q = np.empty_like(p)
        for j in range(k):
            a, b = _sigmoid_calibration(lo[:, j], (y == j).astype(np.float64))
            q[:, j] = 1 / (1 + np.exp(a * lo[:, j] + b))
        q /= q.sum(axis=1, keepdims=True)

    def iso() -> None:
        q = np.empty_like(p)
        for j in range(k):
            q[:, j] = IsotonicRegression(out_of_bounds="clip").fit(p[:, j], y == j).predict(p[:, j])
        q /= q.sum(axis=1, keepdims=True)

    label = f"{z.shape[0]:,}x{k:,}"
    out = []
    for name, fn, mine in (("Platt", platt, "platt"), ("isotonic", iso, "isotonic")):
        sec = best_of(fn, repeat=1, warmup=0)
        out.append(
            row(
                f"sklearn one-vs-rest {name} {label}",
                sec,
                floor,
                f"a loop over classes; ours / sklearn = {ours[mine] / sec:.2f}",
            )
        )
    return out
