"""Library conventions and the KDE calibration error, each beside the library it reproduces.

Conventions: on 10⁶ binary scores rounded to two decimals (every score on or next to a bin
edge), ``calibration_error(..., convention=NAME)`` against the library's own function on the
same data (scikit-learn's ``calibration_curve`` plus the ECE sum, netcal's ``ECE``,
torchmetrics' ``binary_calibration_error``, uncertainty-calibration's ``get_ece``). Floor:
one ``numpy.bincount`` pass of counts, score and label sums on fixed bins. Each row's notes
say whether the two values agree to 1e-12 (the tests pin them; here they are re-checked
on the benchmark's data).

KDE: ``estimator="kde"`` (Popordanoska et al. 2022, beta kernel, top-label lens, a fixed
bandwidth) against the authors' reference code (``tests/peers/ece_kde.py``, torch) when
torch is installed. Floor: one ``n × n`` matrix of ``|s_i − s_j|`` (the least work of any
O(n²) kernel estimator).

Run: ``python -m benchmarks.run --only conventions`` (``--quick`` for small sizes).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import median_of, peer_module, row

B = 15


def _binary(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    p = np.round(rng.beta(2.0, 2.5, size=n), 2)
    y = (rng.uniform(size=n) < np.clip(p * 1.1 - 0.03, 0, 1)).astype(np.int64)
    return p, y


def _floor(p: np.ndarray, y: np.ndarray) -> float:
    idx = np.minimum((p * B).astype(np.int64), B - 1)
    counts = np.bincount(idx, minlength=B)
    sp = np.bincount(idx, weights=p, minlength=B)
    sy = np.bincount(idx, weights=y, minlength=B)
    ok = counts > 0
    return float(np.abs(sp[ok] - sy[ok]).sum() / p.size)


def _peers(p: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """name -> a zero-argument call of the library's value on (p, y)."""
    out: dict[str, Any] = {}
    if peer_module("sklearn") is not None:
        from sklearn.calibration import calibration_curve

        def sk() -> float:
            # the ECE from the library's bins: its bin means weighted by its bin counts
            bins = np.linspace(0.0, 1.0, B + 1)
            idx = np.searchsorted(bins[1:-1], p)  # as calibration_curve bins them
            counts = np.bincount(idx, minlength=B)
            true, pred = calibration_curve(y, p, n_bins=B, strategy="uniform")
            return float(np.sum(counts[counts > 0] * np.abs(true - pred)) / p.size)

        out["sklearn"] = sk
    if peer_module("netcal") is not None:
        from netcal.metrics import ECE

        out["netcal"] = lambda: float(ECE(bins=B).measure(p, y))
    if peer_module("torchmetrics") is not None:
        import torch
        from torchmetrics.functional.classification import binary_calibration_error

        tp, ty = torch.from_numpy(p), torch.from_numpy(y)
        out["torchmetrics"] = lambda: float(binary_calibration_error(tp, ty, n_bins=B))
    if peer_module("calibration") is not None:
        import calibration

        probs = np.column_stack([1.0 - p, p])
        out["uncertainty-calibration"] = lambda: float(
            calibration.get_ece(probs, y.tolist(), num_bins=B)
        )
    return out


def _conventions(n: int) -> list[dict[str, Any]]:
    from core import calibration_error

    p, y = _binary(n)
    floor = median_of(lambda: _floor(p, y))
    rows = [row(f"conventions floor: bincount ECE n={n:,}, {B} bins", floor, floor)]
    peers = _peers(p, y)
    # uncertainty-calibration's get_ece is the top-label ECE: on binary data, of max(p, 1 − p)
    lens = {"uncertainty-calibration": "top-label"}
    for name in ("calibscope", "sklearn", "netcal", "torchmetrics", "uncertainty-calibration"):
        kw = {"lens": lens.get(name, "binary"), "n_bins": B, "convention": name}
        ours = median_of(lambda kw=kw: calibration_error(p, y, **kw).value)
        value = calibration_error(p, y, **kw).value
        rows.append(row(f"calibration_error(convention={name!r}) n={n:,}", ours, floor))
        call = peers.get(name)
        if name == "calibscope":
            continue
        if call is None:
            rows.append(row(f"{name} itself n={n:,}", float("nan"), None, "not installed"))
            continue
        theirs = median_of(call, warmup=1)
        same = abs(call() - value) <= 1e-12 * max(1.0, abs(value))
        note = "same value to 1e-12" if same else f"values differ: {call():.15g} vs {value:.15g}"
        if name == "torchmetrics" and not same:
            note += " (torchmetrics sums in float32)"
        rows.append(row(f"{name} itself n={n:,}", theirs, floor, note))
    return rows


def _kde(n: int) -> list[dict[str, Any]]:
    from core import calibration_error

    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(4) * 0.8, size=n)
    y = np.array([rng.choice(4, p=r) for r in probs])
    conf = probs.max(axis=1)
    floor = median_of(lambda: np.abs(conf[:, None] - conf[None, :]))
    rows = [row(f"kde floor: n×n |s_i − s_j| n={n:,}", floor, floor)]
    bw = 0.05
    kw = {"estimator": "kde", "lens": "top-label", "norm": 1, "bandwidth": bw}
    ours = median_of(lambda: calibration_error(probs, y, **kw).value)
    rows.append(row(f"kde (top-label, ℓ1, bandwidth {bw}) n={n:,}", ours, floor))
    torch = peer_module("torch")
    peers = Path(__file__).resolve().parents[1] / "tests" / "peers"
    if torch is None or not (peers / "ece_kde.py").exists():
        rows.append(row(f"ece-kde reference n={n:,}", float("nan"), None, "torch not installed"))
        return rows
    sys.path.insert(0, str(peers))
    try:
        import ece_kde
    finally:
        sys.path.remove(str(peers))
    f, t = torch.from_numpy(probs), torch.from_numpy(y)

    def ref() -> float:
        return float(
            ece_kde.get_ece_kde(f, t, bandwidth=bw, p=1, mc_type="top_label", device="cpu")
        )

    theirs = median_of(ref, warmup=1)
    value = calibration_error(probs, y, **kw).value
    same = abs(ref() - value) <= 1e-9 * max(1.0, abs(value))
    note = "same value to 1e-9" if same else f"values differ: {ref():.12g} vs {value:.12g}"
    rows.append(row(f"ece-kde reference (torch) n={n:,}", theirs, floor, note))
    return rows


def run(quick: bool) -> list[dict[str, Any]]:
    """Time the library conventions and the KDE estimator beside their libraries."""
    return _conventions(20_000 if quick else 1_000_000) + _kde(500 if quick else 5_000)
