"""Recalibrators: fit + predict time on 1,000,000 binary rows and 50,000 × 1,000 multiclass rows.

Floors are the least work of each family's fit and prediction, in numpy and scipy:

- scaling (Platt, temperature, beta, vector, ...): ``NEWTON_PASSES`` Newton passes of a
  logistic fit over the rows (binary: a slope and an intercept on the logits; multiclass: one
  inverse temperature over the logit matrix, each pass an ``exp`` and three row sums), then one
  prediction pass. Core's binned start leaves three full passes (docs/benchmarks.md); a cold
  Newton start takes more, so no implementation of the estimand does less;
- isotonic: one ``np.sort`` of a packed ``uint64`` key per row, ``(bits(p) << 1) | label``, the
  counts and positives of each distinct score (``np.add.reduceat``), scipy's
  ``isotonic_regression`` on their means weighted by their counts, and one ``searchsorted`` to
  predict;
- the other binning recalibrators: one ``np.sort`` of the scores (uniform-mass edges need at
  least a selection; a sort is what every one of them pays), one softmax on the multiclass rows.

scikit-learn's Platt (``_sigmoid_calibration``) and ``IsotonicRegression`` are timed alongside on
the same binary rows, and as the one-vs-rest loop over classes that ``CalibratedClassifierCV``
runs on the multiclass rows. Every row is the median of calls made in turn with its floor
(``benchmarks.common.round_robin``); a call longer than ``LONG_CALL_SECONDS`` is timed once and
says so. Report ratios to the floor of the same run: the machine may be shared.

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
from scipy.optimize import isotonic_regression

from benchmarks.common import Timing, peer_module, round_robin, row
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


#: Newton passes over the rows in the scaling floors (what core's binned start leaves).
NEWTON_PASSES = 3


def newton_floor(z: np.ndarray, y: np.ndarray, passes: int = NEWTON_PASSES) -> np.ndarray:
    """Fit ``σ(a·z + c)`` by ``passes`` Newton passes over the rows; return the predictions."""
    a, c = 1.0, 0.0
    for _ in range(passes):
        q = 1.0 / (1.0 + np.exp(-(a * z + c)))
        r = q - y
        w = q * (1.0 - q)
        wz = w * z
        hess = np.array([[wz @ z, wz.sum()], [wz.sum(), w.sum()]])
        step = np.linalg.solve(hess, np.array([r @ z, r.sum()]))
        a, c = a - step[0], c - step[1]
    return 1.0 / (1.0 + np.exp(-(a * z + c)))


def temperature_floor(z: np.ndarray, y: np.ndarray, passes: int = NEWTON_PASSES) -> np.ndarray:
    """Fit one inverse temperature by ``passes`` Newton passes; return ``softmax(β·z)``."""
    zc = z - z.max(axis=1, keepdims=True)
    zy = zc[np.arange(len(y)), y]
    beta = 1.0
    for _ in range(passes):
        e = np.exp(beta * zc)
        s0 = e.sum(axis=1)
        ez = e * zc
        mean = ez.sum(axis=1) / s0
        var = (ez * zc).sum(axis=1) / s0 - mean * mean
        beta -= (mean - zy).sum() / var.sum()
    return softmax(beta * z)


def isotonic_floor(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Fit an isotonic regression of ``y`` on ``p`` (scores in [0, 1]) and predict ``p``."""
    key = np.sort((p.view(np.uint64) << np.uint64(1)) | y.astype(np.uint64))
    bits = key >> np.uint64(1)
    starts = np.flatnonzero(np.r_[True, bits[1:] != bits[:-1]])
    counts = np.diff(np.r_[starts, len(key)])
    hits = np.add.reduceat((key & np.uint64(1)).astype(np.int64), starts)
    fit = isotonic_regression(hits / counts, weights=counts).x
    return fit[np.searchsorted(bits[starts].view(np.float64), p, side="right") - 1]


def _binary_floors(z: np.ndarray, y: np.ndarray, p: np.ndarray) -> dict[str, Any]:
    return {
        "scaling": lambda: newton_floor(z, y),
        "isotonic": lambda: isotonic_floor(p, y),
        "binning": lambda: np.sort(p),
    }


def _floor_key(name: str, floors: dict[str, Any]) -> str:
    family = RECALIBRATORS.get(name).family
    if name in floors:
        return name
    return "scaling" if family in ("scaling", "selective") else "binning"


_FLOOR_NOTES = {
    "scaling": f"{NEWTON_PASSES} Newton passes of a logistic fit + one prediction",
    "isotonic": "np.sort of a packed key + scipy isotonic_regression + searchsorted",
    "binning": "one np.sort of the scores",
}


def _binary_rows(n_bin: int) -> tuple[list[dict[str, Any]], dict[str, Timing]]:
    z, y = _binary(n_bin)
    p = 1 / (1 + np.exp(-z))
    floors = _binary_floors(z, y, p)
    names = RECALIBRATORS.names()
    calls = [*floors.values()] + [lambda n=n: _fit_predict(n, z, y, {}) for n in names]
    times = dict(zip([*floors, *names], round_robin(calls), strict=True))
    rows = [
        row(f"recal binary floor: {key} n={n_bin:,}", times[key], times[key], _FLOOR_NOTES[key])
        for key in floors
    ]
    for name in names:
        key = _floor_key(name, floors)
        rows.append(
            row(
                f"recal binary {name} n={n_bin:,}",
                times[name],
                times[key],
                f"fit + predict_proba; floor: {key}",
            )
        )
    return rows, {"floor": times["binning"]}


def _sklearn_binary_rows(n_bin: int) -> list[dict[str, Any]]:
    from sklearn.calibration import _sigmoid_calibration
    from sklearn.isotonic import IsotonicRegression

    z, y = _binary(n_bin)
    p = 1 / (1 + np.exp(-z))

    def sk_platt() -> None:
        a, b = _sigmoid_calibration(z, y)
        1 / (1 + np.exp(a * z + b))

    def sk_iso() -> None:
        IsotonicRegression(out_of_bounds="clip").fit(p, y).predict(p)

    floor_platt, ours_platt, t_sk_platt, floor_iso, ours_iso, t_sk_iso = round_robin(
        [
            lambda: newton_floor(z, y),
            lambda: _fit_predict("platt", z, y, {}),
            sk_platt,
            lambda: isotonic_floor(p, y),
            lambda: make_recalibrator("isotonic").fit(p, y).predict_proba(p),
            sk_iso,
        ]
    )
    return [
        row(
            f"sklearn Platt n={n_bin:,}",
            t_sk_platt,
            floor_platt,
            f"floor: scaling; ours / sklearn = {ours_platt.median / t_sk_platt.median:.2f}",
        ),
        row(
            f"sklearn isotonic n={n_bin:,}",
            t_sk_iso,
            floor_iso,
            f"floor: isotonic; ours / sklearn = {ours_iso.median / t_sk_iso.median:.2f}",
        ),
    ]


def run(quick: bool) -> list[dict[str, Any]]:
    """Time every recalibrator; return benchmark rows."""
    n_bin = 20_000 if quick else 1_000_000
    rows, _ = _binary_rows(n_bin)
    sk = peer_module("sklearn")
    if sk is not None:
        rows.extend(_sklearn_binary_rows(n_bin))
    n_mc, k = (2_000, 50) if quick else (50_000, 1_000)
    zm, ym = _multiclass(n_mc, k)
    names = RECALIBRATORS.names()
    floors_mc = {"softmax": lambda: softmax(zm), "temperature": lambda: temperature_floor(zm, ym)}
    calls = [*floors_mc.values()] + [
        lambda n=n: _fit_predict(n, zm, ym, _options(n, k)) for n in names
    ]
    # the binary rows warmed every recalibrator up: one round less of the long fits
    timed = dict(zip([*floors_mc, *names], round_robin(calls, warmup=0), strict=True))
    floor_mc = timed["softmax"]
    rows.append(row(f"recal multiclass floor: softmax {n_mc:,}x{k:,}", floor_mc, floor_mc))
    rows.append(
        row(
            f"recal multiclass floor: temperature {n_mc:,}x{k:,}",
            timed["temperature"],
            floor_mc,
            f"{NEWTON_PASSES} Newton passes of one inverse temperature + one softmax",
        )
    )
    times: dict[str, Timing] = {}
    for name in names:
        opts = _options(name, k)
        times[name] = timed[name]
        base = "temperature" if name == "temperature" else "softmax"
        note = f"fit + predict_proba, {thread_count()} thread(s); floor: {base}" + (
            f", explicit max_iter={MATRIX_MAX_ITER} (L-BFGS capped; required above K = 100)"
            if opts
            else ""
        )
        rows.append(row(f"recal multiclass {name} {n_mc:,}x{k:,}", timed[name], timed[base], note))
    if sk is not None:
        rows.extend(_sklearn_one_vs_rest(zm, ym, floor_mc, times))
    return rows


def _sklearn_one_vs_rest(
    z: np.ndarray, y: np.ndarray, floor: Timing, ours: dict[str, Timing]
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
    timed = round_robin([platt, iso], warmup=0)
    for (name, mine), sec in zip(
        (("Platt", "platt"), ("isotonic", "isotonic")), timed, strict=True
    ):
        out.append(
            row(
                f"sklearn one-vs-rest {name} {label}",
                sec,
                floor,
                f"a loop over classes; ours / sklearn = {ours[mine].median / sec.median:.2f}",
            )
        )
    return out
