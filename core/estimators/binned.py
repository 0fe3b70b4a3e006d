"""Binned calibration-error estimators: plug-in, label-binned, debiased and the monotone sweep.

Each estimator bins every component of the lens view (see :mod:`core.binning`), computes a
per-component error and aggregates the components with :func:`~core.estimators.base.aggregate`
(``(Σ_k w_k CE_k^p)^(1/p)``, ``max`` for ``p = ∞``).  Binary and top-label views have one
component, so aggregation is the identity there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core.binning import BINNINGS, BinStats, stats_from_indices
from core.errors import ConfigError
from core.estimators.base import (
    ALL_NORMS,
    BINNED_LENSES,
    ESTIMATORS,
    Estimate,
    aggregate,
    check_options,
    debiased_sq_from_stats,
    lens_view,
    plugin_from_stats,
)
from core.lenses import LensView

__all__ = [
    "debiased",
    "debiased_sq_from_stats",
    "label_binned",
    "plugin",
    "plugin_from_stats",
    "sweep",
    "sweep_b_star",
]


def _binned_components(
    view: LensView, binning: str, n_bins: int, tie_policy: str
) -> list[tuple[np.ndarray, BinStats]]:
    func = BINNINGS.get(binning).func
    out = []
    for scores, outcomes in zip(view.scores, view.outcomes, strict=True):
        idx, edges = func(scores, n_bins, tie_policy)
        out.append((idx, stats_from_indices(idx, edges, scores, outcomes, binning)))
    return out


@ESTIMATORS.register(
    "plugin",
    label="Plug-in binned (ECE)",
    description="Weighted ℓp distance between mean score and mean outcome per bin "
    "(ℓ1 = ECE, ℓ2 = binned CE, ℓ∞ = MCE over non-empty bins).",
    formula="Roelofs et al. 2022 Eq. 4; Kumar et al. 2019 Def. 5.1",
    binned=True,
    norms=ALL_NORMS,
    lenses=BINNED_LENSES,
    random=False,
    group="binned",
)
def plugin(
    probs: np.ndarray,
    labels: np.ndarray,
    *,
    lens: str,
    norm: float,
    binning: str,
    n_bins: int,
    tie_policy: str,
    class_weights: ArrayLike | None,
    class_names: tuple[str, ...] | None,
    rng: np.random.Generator,
    **options: Any,
) -> Estimate:
    """Plug-in binned calibration error ``(Σ_k (n_k/n)|f̄_k − ȳ_k|^p)^(1/p)``.

    Parameters
    ----------
    probs, labels : numpy.ndarray
        Validated predictions ``(n, K)`` and labels.
    lens, norm, binning, n_bins, tie_policy, class_weights, class_names, rng
        See :func:`core.calibration.calibration_error`.
    **options
        None accepted.

    Returns
    -------
    Estimate
        Value, per-component values and bin statistics.
    """
    check_options("plugin", options, ())
    view = lens_view(probs, labels, lens, class_names=class_names, class_weights=class_weights)
    parts = _binned_components(view, binning, n_bins, tie_policy)
    bins = tuple(st for _, st in parts)
    values = tuple(
        float(plugin_from_stats(st.counts, st.score_sums, st.label_sums, norm)) for st in bins
    )
    return Estimate(aggregate(values, view.weights, norm), view.names, values, bins, {})


@ESTIMATORS.register(
    "label-binned",
    label="Label-binned",
    description="Each point keeps its own score against its bin's mean outcome; "
    "never below the plug-in estimate (Jensen).",
    formula="Roelofs et al. 2022 Eq. 3",
    binned=True,
    norms=ALL_NORMS,
    lenses=BINNED_LENSES,
    random=False,
    group="binned",
)
def label_binned(
    probs: np.ndarray,
    labels: np.ndarray,
    *,
    lens: str,
    norm: float,
    binning: str,
    n_bins: int,
    tie_policy: str,
    class_weights: ArrayLike | None,
    class_names: tuple[str, ...] | None,
    rng: np.random.Generator,
    **options: Any,
) -> Estimate:
    """Label-binned calibration error ``((1/n) Σ_i |f_i − ȳ_bin(i)|^p)^(1/p)``.

    For ``p = ∞`` the value is ``max_i |f_i − ȳ_bin(i)|``.

    Parameters
    ----------
    probs, labels : numpy.ndarray
        Validated predictions ``(n, K)`` and labels.
    lens, norm, binning, n_bins, tie_policy, class_weights, class_names, rng
        See :func:`core.calibration.calibration_error`.
    **options
        None accepted.

    Returns
    -------
    Estimate
        Value, per-component values and bin statistics.
    """
    check_options("label-binned", options, ())
    view = lens_view(probs, labels, lens, class_names=class_names, class_weights=class_weights)
    parts = _binned_components(view, binning, n_bins, tie_policy)
    values = []
    for (idx, st), scores in zip(parts, view.scores, strict=True):
        ybar = np.divide(st.label_sums, st.counts, out=np.zeros(st.n_bins), where=st.counts > 0)
        dev = np.abs(scores - ybar[idx])
        if np.isinf(norm):
            values.append(float(dev.max()))
        elif norm == 1.0:
            values.append(float(dev.mean()))
        else:
            values.append(float(np.mean(dev**norm) ** (1.0 / norm)))
    bins = tuple(st for _, st in parts)
    return Estimate(aggregate(values, view.weights, norm), view.names, tuple(values), bins, {})


@ESTIMATORS.register(
    "debiased",
    label="Debiased (Bröcker / Ferro–Fricker)",
    description="ℓ2: plug-in squared error minus each bin's label-noise variance "
    "ȳ(1−ȳ)/(n_k−1), clipped at 0 once. ℓ1: bias correction by seeded Gaussian resampling "
    "of the bin means (Kumar et al.).",
    formula="Kumar et al. 2019 Def. 5.2 (ℓ2); library normal_debiased_ce (ℓ1)",
    binned=True,
    norms=(1.0, 2.0),
    lenses=BINNED_LENSES,
    random=True,
    random_norms=(1.0,),
    group="binned",
)
def debiased(
    probs: np.ndarray,
    labels: np.ndarray,
    *,
    lens: str,
    norm: float,
    binning: str,
    n_bins: int,
    tie_policy: str,
    class_weights: ArrayLike | None,
    class_names: tuple[str, ...] | None,
    rng: np.random.Generator,
    **options: Any,
) -> Estimate:
    """Debiased binned calibration error.

    ℓ2 (deterministic): per component the signed square
    ``Σ_k (n_k/n)[(f̄_k − ȳ_k)² − ȳ_k(1−ȳ_k)/(n_k−1)]`` (bins with ``n_k < 2`` contribute
    0), aggregated as ``Σ_k w_k`` of the signed squares and clipped once:
    ``value = sqrt(max(·, 0))``.

    ℓ1 (random, uses ``rng``): per component ``2·θ̂ − mean_r θ_r`` where ``θ̂`` is the
    plug-in ECE and ``θ_r`` the ECE with each bin's mean outcome redrawn from
    ``Normal(ȳ_k, sqrt(ȳ_k(1−ȳ_k)/n_k))``; the signed values are aggregated with the class
    weights and clipped at 0 once.  Unlike the reference library this does not refuse bins
    with fewer than two points: empty bins carry no weight and a one-point bin has zero
    variance, so it contributes its plug-in term.

    Parameters
    ----------
    probs, labels : numpy.ndarray
        Validated predictions ``(n, K)`` and labels.
    lens, norm, binning, n_bins, tie_policy, class_weights, class_names, rng
        See :func:`core.calibration.calibration_error`.
    **options
        ``n_resamples`` (int, default 1000): resamples of the ℓ1 correction (accepted and
        unused for ℓ2, so one option set serves both norms).

    Returns
    -------
    Estimate
        ``details`` holds ``signed_square`` and ``component_signed_squares`` (ℓ2) or
        ``signed_value``, ``component_signed_values`` and ``n_resamples`` (ℓ1), and
        ``small_bins``: per component, the number of non-empty bins with one point.
    """
    check_options("debiased", options, ("n_resamples",))
    if norm not in (1.0, 2.0):
        raise ConfigError(
            "The debiased estimator is defined for ℓ2 (Bröcker / Ferro–Fricker) and ℓ1 "
            "(Gaussian resampling); choose norm=2 or norm=1."
        )
    n_resamples = options.get("n_resamples", 1000)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer):
        raise ConfigError(f"n_resamples must be a whole number ≥ 1; got {n_resamples!r}.")
    if n_resamples < 1:
        raise ConfigError(f"n_resamples must be at least 1; got {n_resamples}.")
    view = lens_view(probs, labels, lens, class_names=class_names, class_weights=class_weights)
    bins = tuple(st for _, st in _binned_components(view, binning, n_bins, tie_policy))
    small = tuple(int(np.sum(st.counts == 1)) for st in bins)
    w = view.weights
    if norm == 2.0:
        signed = np.array(
            [float(debiased_sq_from_stats(st.counts, st.score_sums, st.label_sums)) for st in bins]
        )
        total = float(np.dot(w, signed))
        return Estimate(
            value=float(np.sqrt(max(total, 0.0))),
            components=view.names,
            component_values=tuple(float(v) for v in np.sqrt(np.maximum(signed, 0.0))),
            bins=bins,
            details={
                "signed_square": total,
                "component_signed_squares": tuple(float(v) for v in signed),
                "small_bins": small,
            },
        )
    signed = np.array([_normal_debiased_l1(st, int(n_resamples), rng) for st in bins])
    total = float(np.dot(w, signed))
    return Estimate(
        value=max(total, 0.0),
        components=view.names,
        component_values=tuple(float(v) for v in np.maximum(signed, 0.0)),
        bins=bins,
        details={
            "signed_value": total,
            "component_signed_values": tuple(float(v) for v in signed),
            "n_resamples": int(n_resamples),
            "small_bins": small,
        },
    )


def _normal_debiased_l1(st: BinStats, n_resamples: int, rng: np.random.Generator) -> float:
    keep = st.counts > 0
    c = st.counts[keep].astype(np.float64)
    w = c / c.sum()
    fbar = st.score_sums[keep] / c
    ybar = st.label_sums[keep] / c
    sd = np.sqrt(np.clip(ybar * (1.0 - ybar), 0.0, None) / c)
    draws = rng.normal(ybar, sd, size=(n_resamples, c.shape[0]))
    resampled = np.abs(draws - fbar) @ w
    plug = float(np.dot(w, np.abs(fbar - ybar)))
    return 2.0 * plug - float(resampled.mean())


# --------------------------------------------------------------------------- sweep

#: Candidate counts of bins checked per vectorised block (the block doubles each round).
_FIRST_BLOCK = 16
#: Bound on the bins checked at once (sum of b over a block), to bound memory.
_MAX_BLOCK_BINS = 2_000_000


def sweep_b_star(
    scores: np.ndarray,
    outcomes: np.ndarray,
    *,
    binning: str = "equal-mass",
    tie_policy: str = "split",
    max_bins: int | None = None,
) -> tuple[int, np.ndarray, np.ndarray]:
    """Return the number of bins chosen by the monotone sweep and the per-b trace.

    For ``b = 2, 3, …`` the bin means ``ȳ_k`` over non-empty bins are checked for a strict
    decrease; the first such ``b`` stops the sweep and ``b* = b − 1``.  Candidates go up
    to ``n − 1`` bins (the reference implementation's bound) or ``max_bins``.  One stable
    sort and prefix sums make each candidate ``O(b)``, so the cost is
    ``O(n log n + b*²)``; candidates are checked in vectorised blocks.  When every candidate is provably monotone (outcomes, or for bins
    that never split equal scores the mean outcome per distinct score, non-decreasing in
    score order) ``b*`` is the bound at once.

    Parameters
    ----------
    scores, outcomes : numpy.ndarray
        float64 scores in [0, 1] and outcomes.
    binning : {"equal-mass", "equal-width"}
        Binning of each candidate.
    tie_policy : {"split", "keep"}
        Equal-mass tie policy.
    max_bins : int, optional
        Largest candidate; default ``n − 1``.

    Returns
    -------
    b_star : int
        The chosen number of bins (1 when the 2-bin split is already non-monotone or
        ``n ≤ 2``).
    trace_b, trace_monotone : numpy.ndarray
        The candidates checked (from 2 up to the first non-monotone one) and whether
        each was monotone.
    """
    n = scores.shape[0]
    b_max = n - 1 if max_bins is None else min(int(max_bins), n - 1)
    if b_max < 2:
        return 1, np.zeros(0, np.int64), np.zeros(0, bool)
    order = np.argsort(scores, kind="stable")
    s = scores[order]
    y = outcomes[order]
    cy = np.concatenate(([0.0], np.cumsum(y)))
    if _every_binning_monotone(s, y, cy, binning, tie_policy):
        return b_max, np.arange(2, b_max + 1, dtype=np.int64), np.ones(b_max - 1, bool)
    block_end = np.searchsorted(s, s, side="right") if tie_policy == "keep" else None
    b0, size = 2, _FIRST_BLOCK
    while b0 <= b_max:
        bs = np.arange(b0, min(b0 + size, b_max + 1), dtype=np.int64)
        starts, seg = _candidate_starts(s, bs, binning, block_end)
        lo, hi = starts[:-1], starts[1:]
        same = seg[:-1] == seg[1:]  # consecutive boundaries of one candidate = one bin
        lo, hi, bseg = lo[same], hi[same], seg[:-1][same]
        cnt = hi - lo
        full = cnt > 0
        mean = (cy[hi[full]] - cy[lo[full]]) / cnt[full]
        bseg = bseg[full]
        drop = (bseg[1:] == bseg[:-1]) & (mean[1:] < mean[:-1])
        bad = np.zeros(bs.shape[0], bool)
        bad[bseg[1:][drop] - b0] = True
        if bad.any():
            first = int(np.argmax(bad))
            trace_b = np.arange(2, bs[first] + 1, dtype=np.int64)
            mono = np.ones(trace_b.shape[0], bool)
            mono[-1] = False
            return int(bs[first]) - 1, trace_b, mono
        b0 += size
        size = max(1, min(2 * size, _MAX_BLOCK_BINS // (b0 + 2 * size)))
    return b_max, np.arange(2, b_max + 1, dtype=np.int64), np.ones(b_max - 1, bool)


def _every_binning_monotone(
    s: np.ndarray, y: np.ndarray, cy: np.ndarray, binning: str, tie_policy: str
) -> bool:
    """Whether every candidate binning is monotone, so the sweep would run to its bound.

    Bins are contiguous runs in score order, and the means of consecutive runs of a
    non-decreasing sequence do not decrease.  Equal-width and tie-keeping equal-mass bins
    never split equal scores, so non-decreasing mean outcomes per distinct score suffice;
    rank bins may split ties, so there the outcomes themselves must not decrease.  This
    keeps the sweep fast on discrete scores (a binned model's outputs), where it would
    otherwise check every b up to n − 1.
    """
    if np.all(y[1:] >= y[:-1]):
        return True
    if binning == "equal-mass" and tie_policy == "split":
        return False
    starts = np.concatenate(([0], np.flatnonzero(s[1:] != s[:-1]) + 1, [s.shape[0]]))
    means = (cy[starts[1:]] - cy[starts[:-1]]) / np.diff(starts)
    return bool(np.all(means[1:] >= means[:-1]))


def _candidate_starts(
    s: np.ndarray, bs: np.ndarray, binning: str, block_end: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Bin boundaries (in sorted order) of every candidate b, flattened, with candidate ids."""
    n = s.shape[0]
    seg = np.repeat(bs, bs + 1)
    first = np.concatenate(([0], np.cumsum(bs + 1)[:-1]))
    k = np.arange(seg.shape[0], dtype=np.int64) - np.repeat(first, bs + 1)
    if binning == "equal-mass":
        starts = (k * n + seg - 1) // seg
        if block_end is not None:
            inner = (starts > 0) & (starts < n)
            j = starts[inner]
            tie = s[j - 1] == s[j]
            starts[np.flatnonzero(inner)[tie]] = block_end[j[tie]]
    else:
        # edges k/b as np.arange(b + 1)/b computes them; a score on an edge starts the upper bin
        starts = np.searchsorted(s, k / seg, side="left")
        starts[k == 0] = 0
        starts[k == seg] = n
    return starts, seg


@ESTIMATORS.register(
    "sweep",
    label="ECE sweep (monotone)",
    description="Largest number of bins b* for which bin accuracies do not decrease "
    "(first failure stops the sweep), then the plug-in error with b* bins.",
    formula="Roelofs et al. 2022 Eq. 8, Algorithm 1",
    binned=True,
    norms=ALL_NORMS,
    lenses=BINNED_LENSES,
    binnings=("equal-mass", "equal-width"),
    random=False,
    group="binned",
)
def sweep(
    probs: np.ndarray,
    labels: np.ndarray,
    *,
    lens: str,
    norm: float,
    binning: str,
    n_bins: int,
    tie_policy: str,
    class_weights: ArrayLike | None,
    class_names: tuple[str, ...] | None,
    rng: np.random.Generator,
    **options: Any,
) -> Estimate:
    """Monotone-sweep calibration error ECE_sweep.

    ``n_bins`` is not used: the sweep chooses ``b*`` per component (see
    :func:`sweep_b_star`), and the value is the plug-in error with ``b*`` bins of the
    chosen binning.

    Parameters
    ----------
    probs, labels : numpy.ndarray
        Validated predictions ``(n, K)`` and labels.
    lens, norm, binning, n_bins, tie_policy, class_weights, class_names, rng
        See :func:`core.calibration.calibration_error`; ``binning`` must be
        ``"equal-mass"`` (the paper's ECE^em_sweep) or ``"equal-width"``.
    **options
        ``max_bins`` (int): largest candidate number of bins (default ``n − 1``).

    Returns
    -------
    Estimate
        ``details["b_star"]`` is the chosen number of bins (an int for one component, a
        tuple per component for classwise) and ``details["sweep_trace"]`` a DataFrame with
        columns ``b, monotone`` (and ``component`` for classwise).
    """
    check_options("sweep", options, ("max_bins",))
    if binning not in ("equal-mass", "equal-width"):
        raise ConfigError(
            f"The sweep estimator bins with 'equal-mass' or 'equal-width', not {binning!r}."
        )
    max_bins = options.get("max_bins")
    if max_bins is not None and (
        isinstance(max_bins, bool) or not isinstance(max_bins, int | np.integer) or max_bins < 1
    ):
        raise ConfigError(f"max_bins must be a whole number ≥ 1; got {max_bins!r}.")
    view = lens_view(probs, labels, lens, class_names=class_names, class_weights=class_weights)
    func = BINNINGS.get(binning).func
    bins, values, b_stars, traces = [], [], [], []
    for name, scores, outcomes in zip(view.names, view.scores, view.outcomes, strict=True):
        b_star, tb, tm = sweep_b_star(
            scores, outcomes, binning=binning, tie_policy=tie_policy, max_bins=max_bins
        )
        idx, edges = func(scores, b_star, tie_policy)
        st = stats_from_indices(idx, edges, scores, outcomes, binning)
        bins.append(st)
        values.append(float(plugin_from_stats(st.counts, st.score_sums, st.label_sums, norm)))
        b_stars.append(b_star)
        trace = pd.DataFrame({"b": tb, "monotone": tm})
        if len(view.names) > 1:
            trace.insert(0, "component", name)
        traces.append(trace)
    single = len(view.names) == 1
    return Estimate(
        value=aggregate(values, view.weights, norm),
        components=view.names,
        component_values=tuple(values),
        bins=tuple(bins),
        details={
            "b_star": b_stars[0] if single else tuple(b_stars),
            "sweep_trace": traces[0] if single else pd.concat(traces, ignore_index=True),
        },
    )
