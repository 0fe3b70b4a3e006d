"""Binned estimators against least-work numpy floors on the same arrays.

Floors (the least work any implementation of the estimand does in numpy):
- binary equal-width: ``k = minimum((s*B).astype(int), B-1)`` and three ``bincount`` calls;
- top-label: the same after ``max``/``argmax`` of the probability matrix;
- equal-mass: one ``np.argpartition`` at the B−1 boundary ranks (a selection, not a sort),
  the bin counts from the ranks and two ``add.reduceat`` for the score and label sums;
- classwise equal-mass: the same selection per class column (contiguous copy of the
  transpose, then one ``argpartition`` per column).

The stable ``argsort`` floors of earlier runs are kept as reference rows (labelled as
such, ratio to the least-work floor): a sort does more than the estimand needs.

Each estimator is timed twice: end to end through ``calibration_error`` (input validation
included; the target ``binned-end-to-end`` of :data:`benchmarks.common.TARGETS` applies)
and as the registered function on already validated arrays (the estimator work).

The floors run on one core (numpy's reductions and ``bincount`` are single-threaded); the
checks of a matrix and one sample's binned passes use the thread pool
(:mod:`core.base.parallel`). The rows marked "one thread" repeat the targeted rows with
``CALIBSCOPE_THREADS=1``: the same work on one core, as a busy machine gives it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from benchmarks.common import MIN_REPEATS, median_of, peer_module, row
from core.base.validation import check_probs_labels, check_with_top_label
from core.estimators import ESTIMATORS
from core.inference.calibration import calibration_error
from core.stats.binning import BINNINGS

B = 15


def _binary_data(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    s = rng.beta(2.0, 1.0, n)
    # a true curve that crosses the diagonal, so binning choices matter
    t = 1.0 / (1.0 + np.exp(-(1.6 * np.log(s / (1.0 - s + 1e-12) + 1e-12) + 0.35)))
    return s, (rng.random(n) < t).astype(np.int64)


def _multiclass_data(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(n, k)) * 3.0
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    # labels from a tempered version of the model: miscalibrated on purpose
    top = probs.argmax(axis=1)
    y = np.where(rng.random(n) < 0.8, top, rng.integers(0, k, n))
    return probs, y


def _ew_floor(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    k = np.minimum((s * B).astype(int), B - 1)
    return (
        np.bincount(k, minlength=B),
        np.bincount(k, weights=s, minlength=B),
        np.bincount(k, weights=y, minlength=B),
    )


def _ew_deviation_floor(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """Least work of an estimand that reads every score against its bin's mean label.

    The label-binned estimator (``statistics="scores-in-bins"``) cannot sum its rows' distances
    before the bins' mean labels are known: the three ``bincount`` of :func:`_ew_floor`, then,
    a cache-sized chunk at a time into one buffer, a gather of the means and the absolute
    difference, and one more ``bincount``.
    """
    n = s.shape[0]
    k = np.minimum((s * B).astype(int), B - 1)
    counts = np.bincount(k, minlength=B)
    label_sums = np.bincount(k, weights=y, minlength=B)
    means = np.divide(label_sums, counts, out=np.zeros(B), where=counts > 0)
    dev = np.empty(n)
    for lo in range(0, n, 1 << 14):
        d = dev[lo : lo + (1 << 14)]
        np.take(means, k[lo : lo + (1 << 14)], out=d, mode="clip")
        np.subtract(s[lo : lo + (1 << 14)], d, out=d)
        np.abs(d, out=d)
    return (
        counts,
        np.bincount(k, weights=s, minlength=B),
        label_sums,
        np.bincount(k, weights=dev, minlength=B),
    )


def _em_argsort(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """Reference, not a floor: a stable sort, the rank-to-bin map and three bincounts."""
    n = s.shape[0]
    order = np.argsort(s, kind="stable")
    k = np.empty(n, dtype=np.intp)
    k[order] = np.arange(n) * B // n
    return (
        np.bincount(k, minlength=B),
        np.bincount(k, weights=s, minlength=B),
        np.bincount(k, weights=y, minlength=B),
    )


def _starts(n: int) -> np.ndarray:
    """First rank of each equal-mass bin: ``ceil(k·n/B)``, k = 0 … B−1."""
    return -(-np.arange(B) * n // B)


def _em_floor(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """Least work: select the B−1 boundary ranks, then sum scores and labels per segment."""
    n = s.shape[0]
    starts = _starts(n)
    idx = np.argpartition(s, starts[1:])
    return (
        np.diff(np.append(starts, n)),
        np.add.reduceat(s[idx], starts),
        np.add.reduceat(y[idx], starts),
    )


def _classwise_em_argsort(probs: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """Reference, not a floor: one column-wise stable argsort and three offset bincounts."""
    n, k = probs.shape
    order = np.argsort(probs, axis=0, kind="stable")
    bins = np.empty((n, k), dtype=np.intp)
    np.put_along_axis(bins, order, (np.arange(n) * B // n)[:, None], axis=0)
    bins += np.arange(k) * B
    hits = np.zeros((n, k))
    hits[np.arange(n), y] = 1.0
    flat = bins.ravel()
    return (
        np.bincount(flat, minlength=k * B),
        np.bincount(flat, weights=probs.ravel(), minlength=k * B),
        np.bincount(flat, weights=hits.ravel(), minlength=k * B),
    )


def _classwise_em_floor(probs: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """Least work: per class, a selection of the boundary ranks and two segment sums."""
    n, k = probs.shape
    starts = _starts(n)
    # a column of a C-ordered matrix is strided: one transpose copy makes every column a run
    cols = np.ascontiguousarray(probs.T)
    score_sums = np.empty((k, B))
    label_sums = np.empty((k, B))
    for j in range(k):
        idx = np.argpartition(cols[j], starts[1:])
        score_sums[j] = np.add.reduceat(cols[j][idx], starts)
        label_sums[j] = np.add.reduceat(y[idx] == j, starts)
    return np.diff(np.append(starts, n)), score_sums, label_sums


@contextmanager
def _one_thread() -> Iterator[None]:
    """Run the block with ``CALIBSCOPE_THREADS=1`` (read by :mod:`core.base.parallel` per call)."""
    before = os.environ.get("CALIBSCOPE_THREADS")
    os.environ["CALIBSCOPE_THREADS"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["CALIBSCOPE_THREADS"]
        else:
            os.environ["CALIBSCOPE_THREADS"] = before


def _one_thread_row(name: str, func: Callable[[], Any], floor: float, repeat: int) -> dict:
    """The row of ``func`` timed on one thread (no target: the targeted row is the default)."""
    with _one_thread():
        t = median_of(func, repeat=repeat)
    return row(f"{name} (one thread)", t, floor, "CALIBSCOPE_THREADS=1")


def _direct(name: str, p: np.ndarray, y: np.ndarray, **kw: Any) -> Any:
    settings = {
        "lens": "top-label",
        "norm": 1.0,
        "binning": "equal-width",
        "n_bins": B,
        "tie_policy": "split",
        "class_weights": None,
        "class_names": None,
        "rng": np.random.default_rng(0),
    }
    settings.update(kw)
    return ESTIMATORS.get(name).func(p, y, **settings)


def _peer_rows(s: np.ndarray, y: np.ndarray, floor: float, repeat: int) -> list[dict[str, Any]]:
    rows = []
    label = f"peer binary EW ECE n={s.shape[0]:,}"
    sk = peer_module("sklearn")
    if sk is not None:
        from sklearn.calibration import calibration_curve

        t = median_of(lambda: calibration_curve(y, s, n_bins=B, strategy="uniform"), repeat=repeat)
        rows.append(row(f"{label}: sklearn calibration_curve", t, floor, "bin means only, no ECE"))
    else:
        rows.append(row(f"{label}: sklearn", float("nan"), None, "not installed"))
    tm = peer_module("torchmetrics")
    if tm is not None:
        import torch
        from torchmetrics.functional.classification import binary_calibration_error

        ts, ty = torch.from_numpy(s), torch.from_numpy(y)
        t = median_of(lambda: binary_calibration_error(ts, ty, n_bins=B), repeat=repeat)
        rows.append(row(f"{label}: torchmetrics", t, floor))
    else:
        rows.append(row(f"{label}: torchmetrics", float("nan"), None, "not installed"))
    rp = peer_module("relplot")
    if rp is not None:
        t = median_of(lambda: rp.metrics.binnedECE(s, y, nbins=B), repeat=repeat)
        rows.append(row(f"{label}: relplot binnedECE", t, floor))
    else:
        rows.append(row(f"{label}: relplot", float("nan"), None, "not installed"))
    nc = peer_module("netcal")
    if nc is not None:
        from netcal.metrics import ECE

        t = median_of(lambda: ECE(bins=B).measure(s, y), repeat=repeat)
        rows.append(row(f"{label}: netcal ECE", t, floor))
    else:
        rows.append(row(f"{label}: netcal", float("nan"), None, "not installed"))
    uc = peer_module("calibration")
    if uc is not None:
        t = median_of(lambda: uc.get_ece(s, y, num_bins=B), warmup=0)
        rows.append(row(f"{label}: uncertainty-calibration get_ece", t, floor))
    else:
        rows.append(row(f"{label}: uncertainty-calibration", float("nan"), None, "not installed"))
    return rows


def _top_label_peer_rows(
    probs: np.ndarray, labels: np.ndarray, floor: float, repeat: int
) -> list[dict[str, Any]]:
    """Peers' top-label equal-width ECE on the same matrix (those that take a matrix)."""
    n, k = probs.shape
    label = f"peer top-label EW ECE {n:,}×{k:,}"
    rows = []
    tm = peer_module("torchmetrics")
    if tm is not None:
        import torch
        from torchmetrics.functional.classification import multiclass_calibration_error

        tp, ty = torch.from_numpy(probs), torch.from_numpy(labels)
        t = median_of(
            lambda: multiclass_calibration_error(tp, ty, num_classes=k, n_bins=B), repeat=repeat
        )
        rows.append(row(f"{label}: torchmetrics", t, floor, "input checks included"))
    else:
        rows.append(row(f"{label}: torchmetrics", float("nan"), None, "not installed"))
    nc = peer_module("netcal")
    if nc is not None:
        from netcal.metrics import ECE

        t = median_of(lambda: ECE(bins=B).measure(probs, labels), warmup=0)
        rows.append(row(f"{label}: netcal ECE", t, floor))
    else:
        rows.append(row(f"{label}: netcal", float("nan"), None, "not installed"))
    return rows


def run(quick: bool) -> list[dict[str, Any]]:
    """Time the binned estimators; return rows of name, seconds, ratio_to_floor, notes."""
    repeat = 1 if quick else MIN_REPEATS
    rows: list[dict[str, Any]] = []
    goal = "binned-end-to-end"

    # binary, n = 1e6, 15 equal-width bins
    n = 200_000 if quick else 1_000_000
    s, y = _binary_data(n)
    floor = median_of(lambda: _ew_floor(s, y), repeat=repeat)
    rows.append(row(f"floor binary EW n={n:,}", floor, floor, "(s*B).astype(int) + 3 bincounts"))
    # each entry against the least work of the statistics it declares
    floors = {"bins": floor}
    t = median_of(lambda: _ew_deviation_floor(s, y), repeat=repeat)
    floors["scores-in-bins"] = t
    rows.append(
        row(
            f"floor binary EW n={n:,}, scores in bins",
            t,
            floor,
            "the floor, then |s − ȳ_bin| per row and one more bincount",
        )
    )
    p2, y2 = check_probs_labels(s, y)
    t = median_of(lambda: check_probs_labels(s, y), repeat=repeat)
    rows.append(row(f"input validation binary n={n:,}", t, floor, "core.base.validation"))
    for name in ESTIMATORS.names(binned=True):
        norm = 2.0 if name == "debiased" else 1.0
        kw = {"lens": "binary", "norm": norm, "estimator": name}
        t = median_of(lambda kw=kw: calibration_error(s, y, **kw), repeat=repeat)
        info = ESTIMATORS.get(name)
        binning = info.binning_for("equal-width")  # mcb: always its own discrete bins
        # the sweep and bins of the distinct scores sort: their least work is a sort, not
        # one pass (see the EM rows)
        sweep = info.statistics == "sorted" or BINNINGS.get(binning).sorts
        own = floors.get(info.statistics, floor)
        note = "" if own == floor else "against the floor of scores in bins"
        if info.statistics == "sorted":
            note = "O(n log n): tries b = 2, 3, … on sorted scores"
        elif sweep:
            note = f"O(n log n): its own {binning} bins (sorted distinct scores)"
        rows.append(
            row(
                f"{name} binary EW n={n:,} (end to end)",
                t,
                own,
                note,
                target=None if sweep else goal,
            )
        )
        if not sweep:
            rows.append(
                _one_thread_row(
                    f"{name} binary EW n={n:,} (end to end)",
                    lambda kw=kw: calibration_error(s, y, **kw),
                    own,
                    repeat,
                )
            )
        t = median_of(
            lambda name=name, norm=norm, binning=binning: _direct(
                name, p2, y2, lens="binary", norm=norm, binning=binning
            ),
            repeat=repeat,
        )
        rows.append(row(f"{name} binary EW n={n:,} (validated input)", t, own))
    rows.extend(_peer_rows(s, y, floor, repeat))

    # equal mass, n = 1e6
    em_floor = median_of(lambda: _em_floor(s, y), repeat=repeat)
    rows.append(
        row(
            f"floor binary EM n={n:,}",
            em_floor,
            em_floor,
            "argpartition at B−1 ranks + 2 segment sums",
        )
    )
    t = median_of(lambda: _em_argsort(s, y), repeat=repeat)
    rows.append(
        row(f"reference (not a floor): stable argsort EM n={n:,}", t, em_floor, "old floor")
    )
    t = median_of(
        lambda: calibration_error(s, y, lens="binary", binning="equal-mass"), repeat=repeat
    )
    rows.append(
        row(
            f"plugin binary EM n={n:,} (end to end)",
            t,
            em_floor,
            f"{t / floor:.1f}× EW floor",
            target=goal,
        )
    )
    t = median_of(
        lambda: calibration_error(s, y, lens="binary", binning="equal-mass", estimator="sweep"),
        repeat=repeat,
    )
    rows.append(row(f"sweep binary EM n={n:,} (end to end)", t, em_floor, "sorts"))

    # multiclass top-label, 50,000 × 1,000
    n, k = (10_000, 200) if quick else (50_000, 1_000)
    probs, labels = _multiclass_data(n, k)

    def top_floor() -> tuple[np.ndarray, ...]:
        pred = probs.argmax(axis=1)
        conf = probs[np.arange(n), pred]
        return _ew_floor(conf, (pred == labels).astype(np.float64))

    floor = median_of(top_floor, repeat=repeat)
    rows.append(row(f"floor top-label EW {n:,}×{k:,}", floor, floor, "argmax + take + EW floor"))
    pv, yv = check_probs_labels(probs, labels)
    t = median_of(lambda: calibration_error(probs, labels), repeat=repeat)
    rows.append(row(f"plugin top-label EW {n:,}×{k:,} (end to end)", t, floor, target=goal))
    rows.append(
        _one_thread_row(
            f"plugin top-label EW {n:,}×{k:,} (end to end)",
            lambda: calibration_error(probs, labels),
            floor,
            repeat,
        )
    )
    t = median_of(lambda: _direct("plugin", pv, yv), repeat=repeat)
    rows.append(row(f"plugin top-label EW {n:,}×{k:,} (validated input)", t, floor))
    t = median_of(lambda: check_probs_labels(probs, labels), repeat=repeat)
    rows.append(row(f"input validation {n:,}×{k:,}", t, floor, "core.base.validation"))
    t = median_of(lambda: check_with_top_label(probs, labels), repeat=repeat)
    rows.append(
        row(
            f"input validation + top label {n:,}×{k:,}",
            t,
            floor,
            "the pass calibration_error makes",
        )
    )
    rows.extend(_top_label_peer_rows(probs, labels, floor, repeat))

    # classwise equal-mass debiased ℓ2, same matrix
    reps = 1 if quick else MIN_REPEATS
    floor = median_of(lambda: _classwise_em_floor(probs, labels), repeat=reps, warmup=0)
    rows.append(
        row(
            f"floor classwise EM {n:,}×{k:,}",
            floor,
            floor,
            "per column: argpartition at B−1 ranks + 2 segment sums",
        )
    )
    t = median_of(lambda: _classwise_em_argsort(probs, labels), warmup=0)
    rows.append(
        row(f"reference (not a floor): column argsort EM {n:,}×{k:,}", t, floor, "old floor")
    )
    kw = {"lens": "classwise", "binning": "equal-mass", "estimator": "debiased", "norm": 2}
    t = median_of(lambda: calibration_error(probs, labels, **kw), repeat=reps)
    rows.append(row(f"debiased ℓ2 classwise EM {n:,}×{k:,} (end to end)", t, floor, target=goal))
    rows.append(
        _one_thread_row(
            f"debiased ℓ2 classwise EM {n:,}×{k:,} (end to end)",
            lambda: calibration_error(probs, labels, **kw),
            floor,
            reps,
        )
    )
    return rows
