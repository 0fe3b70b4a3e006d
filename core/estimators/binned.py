"""Binned calibration-error estimators: plug-in, label-binned, debiased and the monotone sweep.

Each estimator is one registry entry (:class:`~core.estimators.base.EstimatorInfo`) whose
kernel computes the error of one lens component from bin statistics, for a whole batch of
samples at once; :func:`~core.estimators.base.estimate_binned` runs it on one sample and
aggregates the components (``(Σ_k w_k CE_k^p)^(1/p)``, ``max`` for ``p = ∞``; the debiased
estimator sums signed values and clips once). Binary and top-label views have one component,
so aggregation is the identity there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

import numpy as np

from core.base.errors import ConfigError
from core.base.memo import stable_order
from core.base.validation import check_count
from core.estimators.base import (
    ALL_NORMS,
    BINNED_LENSES,
    ESTIMATORS,
    EstimatorInfo,
    KernelContext,
    combine_signed,
    debiased_l1_from_stats,
    debiased_sq_from_stats,
    estimate_binned,
    lens_view,
    plugin_from_stats,
)
from core.stats.binned_view import BinnedView, bin_view
from core.stats.binning import BinStats

__all__ = [
    "SortedRows",
    "debiased_l1_from_stats",
    "debiased_sq_from_stats",
    "plugin_from_stats",
    "register_binned",
    "sweep_b_star",
    "sweep_bound",
    "sweep_candidate_starts",
    "sweep_row_starts",
    "sweep_search",
    "sweep_trace",
    "tie_runs",
]


# --------------------------------------------------------------------------- registration


def _binned_func(name: str) -> Callable[..., Any]:
    """Return the registered function of a binned estimator: bin the lens view, run the kernel."""

    def func(
        probs: np.ndarray,
        labels: np.ndarray,
        *,
        lens: str,
        norm: float,
        binning: str,
        n_bins: int,
        tie_policy: str,
        class_weights: Any,
        class_names: tuple[str, ...] | None,
        rng: np.random.Generator,
        **options: Any,
    ) -> Any:
        info = ESTIMATORS.get(name)
        opts = info.check(options=options)
        view = lens_view(probs, labels, lens, class_names=class_names, class_weights=class_weights)
        orders = None
        if info.statistics == "sorted":  # it reads the rows in score order: one sort each
            orders = tuple(stable_order(s) for s in view.scores)
        binned = bin_view(view, binning, n_bins, tie_policy, orders)
        return estimate_binned(info, binned, norm, rng, opts)

    func.__name__ = name.replace("-", "_")
    func.__doc__ = f"The {name!r} estimator on validated arrays (see its registry entry)."
    return func


def register_binned(name: str, **fields: Any) -> EstimatorInfo:
    """Register a binned estimator defined by its kernel (see :class:`EstimatorInfo`).

    Parameters
    ----------
    name : str
        Public name.
    **fields
        The entry's fields; ``family``, ``lenses`` and ``norms`` default to binned, the
        binned lenses and every norm.

    Returns
    -------
    EstimatorInfo
        The registered entry.
    """
    defaults = {"family": "binned", "lenses": BINNED_LENSES, "norms": ALL_NORMS}
    return ESTIMATORS.add(
        EstimatorInfo(name=name, func=_binned_func(name), **{**defaults, **fields})
    )


# --------------------------------------------------------------------------- kernels


def _plugin_kernel(batch: Any, norm: float, ctx: KernelContext) -> np.ndarray:
    return plugin_from_stats(batch.counts, batch.score_sums, batch.label_sums, norm)


def _label_binned_kernel(batch: Any, norm: float, ctx: KernelContext) -> np.ndarray:
    counts = batch.counts
    ybar = np.divide(batch.label_sums, counts, out=np.zeros(counts.shape), where=counts > 0)
    dev = batch.score_deviation(ybar, norm)
    if np.isinf(norm):
        return np.where(counts > 0, dev, -np.inf).max(axis=-1)
    mean = dev.sum(axis=-1) / counts.sum(axis=-1)
    return mean if norm == 1.0 else mean ** (1.0 / norm)


def _debiased_kernel(batch: Any, norm: float, ctx: KernelContext) -> np.ndarray:
    counts = batch.counts
    if norm == 2.0:
        return debiased_sq_from_stats(counts, batch.score_sums, batch.label_sums)
    draws = int(ctx.options["n_resamples"])
    values = debiased_l1_from_stats(
        counts, batch.score_sums, batch.label_sums, ctx.stream, draws, offset=ctx.offset
    )
    # the next component of each sample continues the stream where this one stopped
    ctx.offset += draws * np.count_nonzero(counts, axis=-1)
    return values


def _describe_debiased(
    info: EstimatorInfo,
    signed: np.ndarray,
    extras: Mapping[str, np.ndarray],
    view: BinnedView,
    norm: float,
    options: Mapping[str, Any],
) -> tuple[tuple[float, ...], tuple[BinStats, ...], dict[str, Any]]:
    total = float(signed @ np.asarray(view.weights, dtype=np.float64))
    small = tuple(int(np.sum(st.counts == 1)) for st in view.stats)
    if norm == 2.0:
        values = np.sqrt(np.maximum(signed, 0.0))
        details = {
            "signed_square": total,
            "component_signed_squares": tuple(float(v) for v in signed),
        }
    else:
        values = np.maximum(signed, 0.0)
        details = {
            "signed_value": total,
            "component_signed_values": tuple(float(v) for v in signed),
            "n_resamples": int(options["n_resamples"]),
        }
    details["small_bins"] = small
    return tuple(float(v) for v in values), view.stats, details


def _check_debiased(options: dict[str, Any]) -> dict[str, Any]:
    if "n_resamples" in options:
        check_count("n_resamples", options["n_resamples"])
    return options


def _check_sweep(options: dict[str, Any]) -> dict[str, Any]:
    if options.get("max_bins") is not None:
        check_count("max_bins", options["max_bins"])
    return options


register_binned(
    "plugin",
    label="Plug-in binned (ECE)",
    description="Weighted ℓp distance between mean score and mean outcome per bin "
    "(ℓ1 = ECE, ℓ2 = binned CE, ℓ∞ = MCE over non-empty bins).",
    formula="Roelofs et al. 2022 Eq. 4; Kumar et al. 2019 Def. 5.1",
    statistics="bins",
    kernel=_plugin_kernel,
)

register_binned(
    "label-binned",
    label="Label-binned",
    description="Each point keeps its own score against its bin's mean outcome; "
    "never below the plug-in estimate (Jensen).",
    formula="Roelofs et al. 2022 Eq. 3",
    statistics="scores-in-bins",
    kernel=_label_binned_kernel,
)

register_binned(
    "debiased",
    label="Debiased (Bröcker / Ferro–Fricker)",
    description="ℓ2: plug-in squared error minus each bin's label-noise variance "
    "ȳ(1−ȳ)/(n_k−1), clipped at 0 once. ℓ1: bias correction by seeded Gaussian resampling "
    "of the bin means (Kumar et al.).",
    formula="Kumar et al. 2019 Def. 5.2 (ℓ2); library normal_debiased_ce (ℓ1)",
    norms=(1.0, 2.0),
    random_norms=(1.0,),
    options={"n_resamples": 1000},
    check_option_values=_check_debiased,
    statistics="bins",
    kernel=_debiased_kernel,
    combine=combine_signed,
    bootstrap_truth="plugin",
    describe=_describe_debiased,
)


# --------------------------------------------------------------------------- sorted samples


class SortedRows:
    """``R`` datasets of ``n`` rows each, in score order: the sweep's :class:`SortedSample`.

    One sample is ``R = 1``; the bias-vs-n runner passes a block of simulated datasets.
    ``tie_policy="keep"`` (boundaries moved to the end of a run of equal scores) is
    supported for one sample.

    Parameters
    ----------
    scores, outcomes : numpy.ndarray
        ``(R, n)``, each row sorted by score (stable).
    binning : {"equal-mass", "equal-width"}
        Binning of the candidates.
    tie_policy : {"split", "keep"}
        Equal-mass tie policy.
    """

    def __init__(
        self, scores: np.ndarray, outcomes: np.ndarray, binning: str, tie_policy: str = "split"
    ) -> None:
        if binning not in ("equal-mass", "equal-width"):
            raise ConfigError(
                f"The sweep estimator bins with 'equal-mass' or 'equal-width', not {binning!r}."
            )
        self.s = np.atleast_2d(scores)
        self.y = np.atleast_2d(outcomes)
        self.n_rows, self.n = self.s.shape
        self.binning = binning
        self.tie_policy = tie_policy
        self.cy = _prefix_sums(self.y)
        self.block_end = None
        if tie_policy == "keep":
            if self.n_rows != 1:
                raise ConfigError("tie_policy='keep' sorts one sample at a time.")
            self.block_end = np.searchsorted(self.s[0], self.s[0], side="right")

    @cached_property
    def cs(self) -> np.ndarray:
        """``(R, n + 1)`` prefix sums of the scores (what :meth:`bin_sums` reads)."""
        return _prefix_sums(self.s)

    def _starts(self, rows: np.ndarray, k: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.n_rows == 1:
            starts = sweep_candidate_starts(self.s[0], k, b, self.binning, self.block_end)
            return np.broadcast_to(starts, (rows.shape[0], starts.shape[0]))
        return sweep_row_starts(self.s, rows, k, b, self.binning)

    def boundaries(self, rows: np.ndarray, k: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        """Positions of the candidate boundaries and the outcome sums before them."""
        t = self._starts(rows, k, b)
        return t, self.cy[rows[:, None], t]

    def monotone(self, rows: np.ndarray) -> np.ndarray:
        """Whether every candidate of each row is monotone."""
        return np.array(
            [
                every_binning_monotone(
                    self.s[i], self.y[i], self.cy[i], self.binning, self.tie_policy
                )
                for i in rows
            ],
            dtype=bool,
        )

    def bin_sums(self, rows: np.ndarray, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return counts, score sums and outcome sums of the ``b``-bin binning of each row."""
        k = np.arange(b + 1, dtype=np.int64)
        t = self._starts(rows, k, np.full_like(k, b))
        at = rows[:, None]
        return (
            np.diff(t, axis=1).astype(np.float64),
            np.diff(self.cs[at, t], axis=1),
            np.diff(self.cy[at, t], axis=1),
        )


class ComponentSample(SortedRows):
    """One binned lens component as the sweep reads it (a batch of one).

    The ``b*`` bins are the component's own binning with ``b*`` bins, taken from the
    sorted rows held here (:meth:`~core.stats.binned_view.ComponentBins.rebinned_sorted`: no
    second binning) and left with the component, so its bin table shares them. The
    sweep's value is the plug-in estimate with ``b*`` bins up to float rounding of the
    score sums (they add the same scores in score order rather than input order).
    """

    def __init__(self, comp: Any) -> None:
        order = comp.order
        super().__init__(
            comp.scores[order][None, :],
            comp.outcomes[order][None, :],
            comp.binning,
            comp.tie_policy,
        )
        self.comp = comp

    def bin_sums(self, rows: np.ndarray, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return the component's statistics with ``b`` bins (one row)."""
        st = self.comp.rebinned_sorted(b, self.s[0], self.cy[0]).stats
        return st.counts[None, :], st.score_sums[None, :], st.label_sums[None, :]


def _prefix_sums(a: np.ndarray) -> np.ndarray:
    """``(R, n + 1)`` sums of each row of ``a`` before every position (0 first)."""
    out = np.empty((a.shape[0], a.shape[1] + 1))
    out[:, 0] = 0.0
    np.cumsum(a, axis=1, out=out[:, 1:])
    return out


def _sweep_kernel(sample: Any, norm: float, ctx: KernelContext) -> tuple[np.ndarray, dict]:
    b_max = sweep_bound(sample.n, ctx.options.get("max_bins"))
    b_star = np.ones(sample.n_rows, dtype=np.int64)
    if b_max >= 2:
        b_star = sweep_search(sample.n_rows, b_max, sample.boundaries, sample.monotone)
    values = np.empty(sample.n_rows)
    for b in np.unique(b_star):
        rows = np.flatnonzero(b_star == b)
        values[rows] = plugin_from_stats(*sample.bin_sums(rows, int(b)), norm)
    return values, {"b_star": b_star}


def _describe_sweep(
    info: EstimatorInfo,
    signed: np.ndarray,
    extras: Mapping[str, np.ndarray],
    view: BinnedView,
    norm: float,
    options: Mapping[str, Any],
) -> tuple[tuple[float, ...], tuple[BinStats, ...], dict[str, Any]]:
    import pandas as pd

    bins, b_stars, traces = [], [], []
    for comp, b in zip(view.components, extras["b_star"], strict=True):
        b = int(b)
        bins.append(comp.rebinned(b).stats)
        b_stars.append(b)
        tb, tm = sweep_trace(b, sweep_bound(comp.scores.shape[0], options.get("max_bins")))
        trace = pd.DataFrame({"b": tb, "monotone": tm})
        if len(view.components) > 1:
            trace.insert(0, "component", comp.name)
        traces.append(trace)
    single = len(view.components) == 1
    details = {
        "b_star": b_stars[0] if single else tuple(b_stars),
        "sweep_trace": traces[0] if single else pd.concat(traces, ignore_index=True),
    }
    return tuple(float(v) for v in signed), tuple(bins), details


register_binned(
    "sweep",
    label="ECE_sweep (monotone)",
    description="Largest number of bins b* for which bin accuracies do not decrease "
    "(first failure stops the sweep), then the plug-in error with b* bins.",
    formula="Roelofs et al. 2022 Eq. 8, Algorithm 1",
    binnings=("equal-mass", "equal-width"),
    options={"max_bins": None},
    check_option_values=_check_sweep,
    statistics="sorted",
    sample=ComponentSample,
    reads_n_bins=False,  # b* is its own choice
    kernel=_sweep_kernel,
    describe=_describe_sweep,
)


def _average_kernel(batch: Any, norm: float, ctx: KernelContext) -> np.ndarray:
    counts = np.asarray(batch.counts, dtype=np.float64)
    filled = counts > 0
    gap = np.abs(batch.score_sums - batch.label_sums) / np.where(filled, counts, 1.0)
    if np.isinf(norm):
        return np.where(filled, gap, -np.inf).max(axis=-1)
    m = filled.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.where(filled, gap**norm, 0.0).sum(axis=-1) / m) ** (1.0 / norm)


register_binned(
    "average",
    label="Average CE (unweighted bins)",
    description="The ℓp mean of |mean score − mean outcome| over the non-empty bins, each "
    "bin counting once whatever its size (netcal's ACE); with equal-mass bins on the "
    "classwise lens it is the adaptive calibration error of Nixon et al.",
    formula="Nixon et al. 2019 (ACE); netcal.metrics.ACE",
    statistics="bins",
    kernel=_average_kernel,
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
    order = stable_order(scores)
    sample = SortedRows(scores[order][None, :], outcomes[order][None, :], binning, tie_policy)
    b_star = int(sweep_search(1, b_max, sample.boundaries, sample.monotone)[0])
    return (b_star, *sweep_trace(b_star, b_max))


def sweep_trace(b_star: int, b_max: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the candidates a sweep checked and whether each was monotone, from its ``b*``.

    The sweep checks ``b = 2, 3, …`` and stops at the first non-monotone ``b`` (so
    ``b* = b − 1``), or runs to its bound ``b_max`` with every candidate monotone.
    """
    if b_max < 2:
        return np.zeros(0, np.int64), np.zeros(0, bool)
    if b_star == b_max:
        return np.arange(2, b_max + 1, dtype=np.int64), np.ones(b_max - 1, bool)
    trace_b = np.arange(2, b_star + 2, dtype=np.int64)
    mono = np.ones(trace_b.shape[0], bool)
    mono[-1] = False
    return trace_b, mono


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
