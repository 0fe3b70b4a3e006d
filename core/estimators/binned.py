"""Binned calibration-error estimators: plug-in, label-binned, debiased and the monotone sweep.

Each estimator bins every component of the lens view (see :mod:`core.binning`), computes a
per-component error and aggregates the components with :func:`~core.estimators.base.aggregate`
(``(Σ_k w_k CE_k^p)^(1/p)``, ``max`` for ``p = ∞``).  Binary and top-label views have one
component, so aggregation is the identity there.
"""

from __future__ import annotations

from collections.abc import Callable
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
    debiased_l1_from_stats,
    debiased_sq_from_stats,
    lens_view,
    plugin_from_stats,
)
from core.lenses import LensView

__all__ = [
    "debiased",
    "debiased_l1_from_stats",
    "debiased_sq_from_stats",
    "label_binned",
    "plugin",
    "plugin_from_stats",
    "sweep",
    "sweep_b_star",
    "sweep_bound",
    "sweep_candidate_starts",
    "sweep_row_starts",
    "sweep_search",
    "tie_runs",
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
    variance, so it contributes its plug-in term.  The draws are
    ``rng.normal(ȳ, σ, size=(n_resamples, m))`` over the ``m`` non-empty bins of each
    component in turn (see :func:`~core.estimators.base.debiased_l1_from_stats`, which
    the bootstrap runs on many resamples at once).

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
    signed = np.array(
        [
            float(
                debiased_l1_from_stats(
                    st.counts, st.score_sums, st.label_sums, rng, int(n_resamples)
                )
            )
            for st in bins
        ]
    )
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


# --------------------------------------------------------------------------- sweep

#: Candidate counts of bins checked per vectorised block (the block doubles each round).
_FIRST_BLOCK = 16
#: Bound on the bins checked at once (rows × sum of b over a block), to bound memory.
_MAX_BLOCK_BINS = 2_000_000

#: ``boundaries(rows, k, b) -> (t, prefix)``: see :func:`sweep_search`.
SweepBoundaries = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


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
    ``O(n log n + b*²)``; candidates are checked in vectorised blocks by
    :func:`sweep_search`, the kernel the bootstrap runs on many resamples at once.  When
    every candidate is provably monotone (outcomes, or for bins that never split equal
    scores the mean outcome per distinct score, non-decreasing in score order) ``b*`` is
    the bound at once.

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
    b_max = sweep_bound(n, max_bins)
    if b_max < 2:
        return 1, np.zeros(0, np.int64), np.zeros(0, bool)
    order = np.argsort(scores, kind="stable")
    s = scores[order]
    y = outcomes[order]
    cy = np.concatenate(([0.0], np.cumsum(y)))
    block_end = np.searchsorted(s, s, side="right") if tie_policy == "keep" else None

    def boundaries(rows: np.ndarray, k: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        starts = sweep_candidate_starts(s, k, b, binning, block_end)
        return starts[None, :], cy[starts][None, :]

    def monotone(rows: np.ndarray) -> np.ndarray:
        return np.array([every_binning_monotone(s, y, cy, binning, tie_policy)])

    b_star = int(sweep_search(1, b_max, boundaries, monotone)[0])
    if b_star == b_max:
        return b_max, np.arange(2, b_max + 1, dtype=np.int64), np.ones(b_max - 1, bool)
    trace_b = np.arange(2, b_star + 2, dtype=np.int64)
    mono = np.ones(trace_b.shape[0], bool)
    mono[-1] = False
    return b_star, trace_b, mono


def sweep_bound(n: int, max_bins: int | None) -> int:
    """Return the largest candidate number of bins: ``n − 1``, or ``max_bins`` if smaller."""
    return n - 1 if max_bins is None else min(int(max_bins), n - 1)


def sweep_search(
    n_rows: int,
    b_max: int,
    boundaries: SweepBoundaries,
    monotone: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    """Run the monotone sweep on several sorted sequences at once.

    Candidates ``b = 2 … b_max`` are checked in blocks (16, then doubling, bounded by
    ``_MAX_BLOCK_BINS`` boundaries over the rows still running); a row stops at the first
    ``b`` whose non-empty bin means strictly decrease, with ``b* = b − 1``, and leaves the
    search. Once the rows still running have checked about ``b_max`` boundaries each
    (``b² ≥ 2·b_max``, the cost of the check on ``n = b_max + 1`` points), they are
    asked whether every candidate is provably monotone; those get ``b_max`` at once
    (the answer the search would reach, without its ``O(b_max²)`` cost). One sample is
    a batch of one; the bootstrap passes a chunk of resamples, and the bias-vs-n runner
    (:func:`core.bias.batch_sweep`) a chunk of simulated datasets.

    Parameters
    ----------
    n_rows : int
        Number of sequences (rows).
    b_max : int
        Largest candidate (≥ 2).
    boundaries : callable
        ``boundaries(rows, k, b) -> (t, prefix)`` for the rows ``rows`` (indices into
        ``0 … n_rows − 1``) and flattened candidate boundaries ``(k, b)`` of length ``L``
        (each candidate's ``k = 0 … b`` consecutive): ``t`` the ``(len(rows), L)`` int
        positions of boundary ``k`` of the ``b``-bin candidate in each row's sorted
        sequence, ``prefix`` the sums of the outcomes before them. Bin means
        ``(prefix(hi) − prefix(lo)) / (hi − lo)`` are compared exactly as computed, so
        integer-valued prefixes give the same decisions whatever their source.
    monotone : callable
        ``monotone(rows) -> bool (len(rows),)``: whether every candidate of each row is
        monotone (see :func:`sweep_b_star`).

    Returns
    -------
    numpy.ndarray
        ``(n_rows,)`` int64 ``b*`` of each row (``b_max`` for rows that never stop).
    """
    b_star = np.full(n_rows, b_max, dtype=np.int64)
    active = np.arange(n_rows)
    b0, size, asked = 2, _FIRST_BLOCK, False
    while b0 <= b_max and active.size:
        bs = np.arange(b0, min(b0 + size, b_max + 1), dtype=np.int64)
        seg = np.repeat(bs, bs + 1)
        first = np.concatenate(([0], np.cumsum(bs + 1)[:-1]))
        k = np.arange(seg.shape[0], dtype=np.int64) - np.repeat(first, bs + 1)
        t, prefix = boundaries(active, k, seg)
        bad = _strictly_decreasing(t, prefix, seg - b0, bs.shape[0])
        stop = bad.any(axis=1)
        b_star[active[stop]] = bs[np.argmax(bad[stop], axis=1)] - 1
        active = active[~stop]
        b0 += bs.shape[0]
        # rows still running after about b_max boundaries each (the cost of the check)
        if not asked and active.size and b0 * b0 >= 2 * b_max:
            active = active[~monotone(active)]
            asked = True
        per_row = _MAX_BLOCK_BINS // max(1, active.size)
        size = max(1, min(2 * size, per_row // (b0 + 2 * size)))
    return b_star


def _strictly_decreasing(
    t: np.ndarray, prefix: np.ndarray, seg: np.ndarray, n_seg: int
) -> np.ndarray:
    """Whether the non-empty bin means of each candidate strictly decrease somewhere.

    Parameters
    ----------
    t : numpy.ndarray
        ``(rows, L)`` bin boundaries (positions in each row's sorted sequence).
    prefix : numpy.ndarray
        ``(rows, L)`` outcome sums before each boundary.
    seg : numpy.ndarray
        ``(L,)`` candidate ``0 … n_seg − 1`` of each boundary; a candidate's boundaries
        are consecutive, so consecutive boundaries of one candidate bound one bin.
    n_seg : int
        Number of candidates.

    Returns
    -------
    numpy.ndarray
        ``(rows, n_seg)`` bool.
    """
    rows = t.shape[0]
    same = seg[:-1] == seg[1:]
    cnt = (t[:, 1:] - t[:, :-1])[:, same].ravel()
    sums = (prefix[:, 1:] - prefix[:, :-1])[:, same].ravel()
    # one key per (row, candidate): after dropping empty bins, neighbours with the same key
    # are consecutive non-empty bins of one candidate of one row
    key = (np.arange(rows)[:, None] * n_seg + seg[:-1][same]).ravel()
    full = cnt > 0
    mean = sums[full] / cnt[full]
    key = key[full]
    drop = (key[1:] == key[:-1]) & (mean[1:] < mean[:-1])
    bad = np.zeros(rows * n_seg, bool)
    bad[key[1:][drop]] = True
    return bad.reshape(rows, n_seg)


def every_binning_monotone(
    s: np.ndarray, y: np.ndarray, cy: np.ndarray, binning: str, tie_policy: str
) -> bool:
    """Whether every candidate binning is monotone, so the sweep would run to its bound.

    Bins are contiguous runs in score order, and the means of consecutive runs of a
    non-decreasing sequence do not decrease.  Equal-width and tie-keeping equal-mass bins
    never split equal scores, so non-decreasing mean outcomes per distinct score suffice;
    rank bins may split ties, so there the outcomes themselves must not decrease.  This
    keeps the sweep fast on discrete scores (a binned model's outputs), where it would
    otherwise check every b up to n − 1.

    Parameters
    ----------
    s, y : numpy.ndarray
        Scores sorted ascending and their outcomes in the same order.
    cy : numpy.ndarray
        ``(n + 1,)`` prefix sums of ``y`` (starting at 0).
    binning : {"equal-mass", "equal-width"}
        Binning of the candidates.
    tie_policy : {"split", "keep"}
        Equal-mass tie policy.

    Returns
    -------
    bool
        True when no candidate ``b`` can stop the sweep.
    """
    if np.all(y[1:] >= y[:-1]):
        return True
    if binning == "equal-mass" and tie_policy == "split":
        return False
    starts = tie_runs(s)
    means = (cy[starts[1:]] - cy[starts[:-1]]) / np.diff(starts)
    return bool(np.all(means[1:] >= means[:-1]))


def tie_runs(s: np.ndarray) -> np.ndarray:
    """Return the starts of the runs of equal values of sorted ``s``, followed by ``n``."""
    return np.concatenate(([0], np.flatnonzero(s[1:] != s[:-1]) + 1, [s.shape[0]]))


def sweep_candidate_starts(
    s: np.ndarray,
    k: np.ndarray,
    b: np.ndarray,
    binning: str,
    block_end: np.ndarray | None = None,
) -> np.ndarray:
    """Boundary ``k`` of the ``b``-bin candidate as a position in sorted scores ``s``.

    Equal-mass: rank ``ceil(k·n/b)``, moved to the end of a run of equal scores it would
    cut when ``block_end`` (``searchsorted(s, s, "right")``) is given (``tie_policy="keep"``).
    Equal-width: the first score ``≥ k/b`` (edges as ``np.arange(b + 1)/b`` computes them;
    a score on an edge starts the upper bin), ``0`` and ``n`` at the ends.
    """
    n = s.shape[0]
    if binning == "equal-mass":
        starts = (k * n + b - 1) // b
        if block_end is not None:
            inner = (starts > 0) & (starts < n)
            j = starts[inner]
            tie = s[j - 1] == s[j]
            starts[np.flatnonzero(inner)[tie]] = block_end[j[tie]]
        return starts
    starts = np.searchsorted(s, k / b, side="left")
    starts[k == 0] = 0
    starts[k == b] = n
    return starts


def sweep_row_starts(
    s: np.ndarray, rows: np.ndarray, k: np.ndarray, b: np.ndarray, binning: str
) -> np.ndarray:
    """Candidate boundaries in several datasets at once (``tie_policy="split"``).

    Each row of ``s`` is one dataset's sorted scores, and the boundaries are those of
    :func:`sweep_candidate_starts` on each row. Equal-mass ranks depend only on ``n``
    and are shared; equal-width boundaries (the first score ``≥ k/b``) are found by one
    binary search run on all rows and boundaries at once, ``O(len(rows)·L·log n)``,
    without building anything of size ``(R, n)``.

    Parameters
    ----------
    s : numpy.ndarray
        ``(R, n)`` scores, each row sorted.
    rows : numpy.ndarray
        Indices of the rows wanted.
    k, b : numpy.ndarray
        Flattened boundaries ``(L,)``: boundary ``k`` of the ``b``-bin candidate.
    binning : {"equal-mass", "equal-width"}
        Binning of the candidates.

    Returns
    -------
    numpy.ndarray
        ``(len(rows), L)`` int positions in each row's sorted scores (a read-only
        broadcast view for equal-mass).
    """
    n = s.shape[1]
    if binning == "equal-mass":
        starts = sweep_candidate_starts(s[0], k, b, binning)
        return np.broadcast_to(starts, (rows.shape[0], starts.shape[0]))
    # searchsorted(s[row], edge, side="left") for every row and distinct edge at once: a
    # branchless binary search keeping the answer in [pos, pos + size] (flat positions)
    edge, inverse = np.unique(k / b, return_inverse=True)
    flat = s.reshape(-1)
    pos = np.broadcast_to((rows * n)[:, None], (rows.shape[0], edge.shape[0])).copy()
    size = n
    while size > 1:
        half = size // 2
        pos += half * (flat[pos + (half - 1)] < edge)
        size -= half
    pos += flat[pos] < edge
    pos -= (rows * n)[:, None]
    lo = np.ascontiguousarray(pos[:, inverse])  # row-major, as the sums downstream expect
    lo[:, k == 0] = 0
    lo[:, k == b] = n
    return lo


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
