"""Binned calibration error of the whole probability vector (Widmann et al. 2019, App. J.1.1).

The 1-D binned estimators bin one score per lens component. These bin the whole vector
(the canonical lens, strong calibration) and measure, per bin, the total-variation distance
between the mean prediction vector and the label frequencies:

    ÊCE = Σ_b (n_b / n) · ½ Σ_k |p̄_bk − ȳ_bk|,

over the non-empty bins ``b``. Two partitions of the simplex:

- ``canonical-uniform``: every class's probability cut into ``n_bins`` equal-width bins,
  ``idx(q) = ⌈n_bins · q⌉`` with ``idx(0) = 1``; a bin is one hypercube of the ``n_bins^K``
  (only the non-empty ones count). CalibrationErrors.jl's ``UniformBinning``, the
  paper's "10 bins per class".
- ``canonical-median-variance``: data-dependent. A set of at least ``2·min_size`` rows is
  split at the ``(⌊m/2⌋ + 1)``-th smallest value ``v`` of the class with the largest
  sample variance (ddof = 1; the first class on ties) into ``{p_k < v}`` and the rest;
  when either side has fewer than ``min_size`` rows the set is one bin, a side with fewer
  than ``2·min_size`` rows is one bin, and a larger side is split again.
  CalibrationErrors.jl's ``MedianVarianceBinning(min_size)``.

With ten classes and a few hundred rows most hypercubes hold one row, and the estimate is
then close to the mean distance of each prediction from its one-hot label: the paper's
Fig. 1 shows it far from the truth in both directions. The formulas and conventions are
in ``docs/formulas.md`` ("Canonical binned ECE").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.base.errors import ConfigError, EstimationError
from core.estimators.base import ESTIMATORS, Estimate
from core.estimators.kernel import lens_problems

#: Bins per class of ``canonical-uniform`` when a call gives none (the paper's).
UNIFORM_BINS_PER_CLASS = 10
#: ``min_size`` of ``canonical-median-variance`` by default (CalibrationErrors.jl's).
MEDIAN_VARIANCE_MIN_SIZE = 10


def hypercube_codes(probs: np.ndarray, n_bins: int) -> np.ndarray:
    """Bin index ``0..m−1`` of each row's hypercube, numbered in first-seen order.

    Parameters
    ----------
    probs : numpy.ndarray
        ``(n, K)`` probabilities in [0, 1].
    n_bins : int
        Equal-width bins per class.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64 codes of the distinct index tuples ``(idx(p_1), …, idx(p_K))``.
    """
    # ⌈B·q⌉ on the float product, as the reference code computes it; q = 0 goes to bin 1
    idx = np.clip(np.ceil(n_bins * probs), 1, n_bins).astype(np.int64) - 1
    n, k = probs.shape
    if k * np.log2(n_bins) >= 62:  # the hypercubes do not fit one integer: compare rows
        _, codes = np.unique(idx, axis=0, return_inverse=True)
        return codes.reshape(-1).astype(np.int64)
    key = idx @ (np.int64(n_bins) ** np.arange(k, dtype=np.int64))  # one mixed-radix integer
    cubes = int(n_bins) ** k
    if cubes > 4 * n + 1024:  # sparse among the hypercubes: sort the keys
        _, codes = np.unique(key, return_inverse=True)
        return codes.reshape(-1).astype(np.int64)
    # few hypercubes: number the occupied ones in key order without a sort
    rank = np.cumsum(np.bincount(key, minlength=cubes) > 0) - 1
    return rank[key]


def median_variance_codes(probs: np.ndarray, min_size: int) -> np.ndarray:
    """Bin index of each row under the median-variance partition (see the module docstring).

    Parameters
    ----------
    probs : numpy.ndarray
        ``(n, K)`` probabilities.
    min_size : int
        Fewest rows of a bin produced by a split.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64 bin codes.
    """
    n = probs.shape[0]
    codes = np.zeros(n, dtype=np.int64)
    if n < 2 * min_size:
        return codes
    stack = [np.arange(n)]
    bins: list[np.ndarray] = []
    while stack:
        rows = stack.pop()
        part = probs[rows]
        c = int(np.argmax(part.var(axis=0, ddof=1)))  # the first maximum on ties
        col = part[:, c]
        v = np.partition(col, rows.size // 2)[rows.size // 2]  # the (⌊m/2⌋+1)-th smallest
        below = col < v
        n_below = int(below.sum())
        if n_below < min_size or rows.size - n_below < min_size:
            bins.append(rows)
            continue
        for side in (rows[below], rows[~below]):
            (bins if side.size < 2 * min_size else stack).append(side)
    for b, rows in enumerate(bins):
        codes[rows] = b
    return codes


def joint_binned_error(probs: np.ndarray, labels: np.ndarray, codes: np.ndarray) -> tuple:
    """``Σ_b (n_b/n)·½‖p̄_b − ȳ_b‖₁`` over the bins ``codes`` and the per-bin arrays.

    Returns
    -------
    value : float
    counts, mean_probs, frequencies : numpy.ndarray
        ``(m,)``, ``(m, K)``, ``(m, K)`` per non-empty bin.
    """
    n, k = probs.shape
    m = int(codes.max()) + 1
    counts = np.bincount(codes, minlength=m).astype(np.float64)
    sums = np.stack([np.bincount(codes, weights=probs[:, j], minlength=m) for j in range(k)], 1)
    hits = np.bincount(codes * k + labels, minlength=m * k).reshape(m, k).astype(np.float64)
    keep = counts > 0
    counts, sums, hits = counts[keep], sums[keep], hits[keep]
    mean_probs = sums / counts[:, None]
    freqs = hits / counts[:, None]
    tv = 0.5 * np.abs(mean_probs - freqs).sum(axis=1)
    return float(np.dot(counts / n, tv)), counts, mean_probs, freqs


def _check_min_size(options: dict[str, Any]) -> dict[str, Any]:
    size = options.get("min_size", MEDIAN_VARIANCE_MIN_SIZE)
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ConfigError(f"min_size must be a positive whole number of rows; got {size!r}.")
    return options


def _estimate(probs: Any, labels: Any, partition: str, n_bins: Any, min_size: int) -> Estimate:
    prob = lens_problems(probs, labels, "canonical", validated=True)[0]
    p, y = prob.probs, prob.labels.astype(np.int64)
    if p.shape[0] == 0:
        raise EstimationError("The canonical binned ECE needs at least one row.")
    if partition == "uniform":
        b = UNIFORM_BINS_PER_CLASS if n_bins is None else int(n_bins)
        if b < 1:
            raise ConfigError(f"n_bins must be at least 1 bin per class; got {n_bins!r}.")
        codes = hypercube_codes(p, b)
        details: dict[str, Any] = {"bins_per_class": b}
    else:
        codes = median_variance_codes(p, int(min_size))
        details = {"min_size": int(min_size)}
    value, counts, _, _ = joint_binned_error(p, y, codes)
    details.update(
        {"distance": "total variation", "non_empty_bins": int(counts.size), "rows": p.shape[0]}
    )
    return Estimate(
        value=value,
        components=("canonical",),
        component_values=(value,),
        bins=None,
        details=details,
    )


_META: dict[str, Any] = {
    "family": "joint-binned",
    "lenses": ("canonical",),
    "default_lens": "canonical",
    "norms": None,
    "lp_scale": False,
    "formula": "Widmann, Lindsten & Zachariah (2019), App. J.1.1; docs/formulas.md, "
    "Canonical binned ECE",
    "quantity": "total-variation distance between each bin's mean prediction vector and its "
    "label frequencies (bins of the whole vector)",
}


@ESTIMATORS.register(
    "canonical-uniform",
    label="Canonical binned ECE (uniform bins)",
    subsample=False,  # linear in n: every row
    description="The whole probability vector binned into hypercubes of B equal-width bins "
    "per class; per bin, the total-variation distance of the mean prediction from the label "
    "frequencies, weighted by the bin's rows (Widmann et al.'s ÊCE, 10 bins per class).",
    **_META,
)
def canonical_uniform(
    probs, labels, *, lens="canonical", norm=None, binning=None, n_bins=None,
    tie_policy=None, class_weights=None, class_names=None, rng=None, **options,
) -> Estimate:  # fmt: skip
    """Canonical binned ECE on ``n_bins`` (default 10) equal-width bins per class.

    ``norm``, ``binning`` and ``tie_policy`` are ignored: the distance is total variation
    and the bins are the hypercubes ``(⌈B·p_1⌉, …, ⌈B·p_K⌉)``.
    """
    ESTIMATORS.get("canonical-uniform").check(options=options)
    return _estimate(probs, labels, "uniform", n_bins, MEDIAN_VARIANCE_MIN_SIZE)


@ESTIMATORS.register(
    "canonical-median-variance",
    label="Canonical binned ECE (median-variance bins)",
    description="The whole probability vector binned by repeated median splits of the class "
    "with the largest variance, down to bins of min_size rows (default 10); per bin, the "
    "total-variation distance of the mean prediction from the label frequencies.",
    options={"min_size": MEDIAN_VARIANCE_MIN_SIZE},
    check_option_values=_check_min_size,
    # one Python step per split, about n / min_size of them: at large n the seeded kernel
    # subsample, as its note says (the API's calibration_error reads every row)
    subsample=True,
    # a resample's duplicated rows move the medians and so the bins: its percentile
    # interval sits above the estimate (on CIFAR-10 it does not cover it)
    no_interval="no bootstrap interval: the bins are built from the rows, and a resample's "
    "duplicates change them",
    **_META,
)
def canonical_median_variance(
    probs, labels, *, lens="canonical", norm=None, binning=None, n_bins=None,
    tie_policy=None, class_weights=None, class_names=None, rng=None,
    min_size=MEDIAN_VARIANCE_MIN_SIZE, **options,
) -> Estimate:  # fmt: skip
    """Canonical binned ECE on the median-variance partition with bins of ``min_size`` rows.

    ``norm``, ``binning``, ``n_bins`` and ``tie_policy`` are ignored.
    """
    _check_min_size({"min_size": min_size})
    return _estimate(probs, labels, "median-variance", None, min_size)
