"""The bootstrap's engines: how a statistic is evaluated on a chunk of resamples.

:func:`core.inference.bootstrap.bootstrap_many` draws resamples in chunks and asks this module for a
:class:`Plan` per statistic. A plan is built from the registry entry alone (no estimator is
named here):

- ``"fixed-bins"``: estimators whose kernel reads the bins' sums
  (:attr:`~core.estimators.base.EstimatorInfo.statistics` ``"bins"``) on bins that do not
  depend on the other rows (equal-width, or discrete: a resample's distinct scores are a
  subset of the sample's and empty bins carry no weight). Every row keeps its bin, so a
  chunk is one :func:`core.stats.binning.batch_bin_sums` call with offsets ``r·B``.
- ``"equal-mass"`` and ``"fixed-bins"`` for ``"scores-in-bins"`` estimators: the rows are
  sorted by score once; a resample's multiplicities over that order come from one
  ``bincount``, and their prefix sums give each resample's sums at any copy rank, so
  equal-mass bins (rank boundaries ``ceil(k·n/B)``; a row whose copies straddle a
  boundary is split between the two bins) and fixed bins (runs of the score order) need
  no sort per resample (:class:`SortedBins`).
- ``"sweep"``: estimators that read sorted samples (``statistics="sorted"``) on the same
  prefix sums (:class:`ChunkSample`): the search runs on all resamples of a chunk at once.
- ``"row-mean"``: scores (means of per-row values): the mean of a gather.
- ``"rows-batch"``: estimators that read rows and declare a vectorised bootstrap
  (:attr:`~core.estimators.base.EstimatorInfo.resample`, the smooth ECE): every resample
  of a chunk at once from the drawn indices.
- ``"generic"``: everything else (kernel estimators, equal-mass with ``tie_policy="keep"``,
  user callables): the statistic once per resample on the resampled rows.

Every path gives the numbers of recomputing the statistic on each resample, up to float
rounding of the per-bin sums.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.base.errors import ConfigError
from core.estimators import ESTIMATORS
from core.estimators.base import KernelContext, NormalStream
from core.estimators.binned import sweep_candidate_starts, tie_runs
from core.inference.calibration import EstimatorCall
from core.stats.binned_view import BinnedViews
from core.stats.binning import BINNINGS, coded_bin_sums, equal_mass_starts
from core.stats.scores import SCORES

#: Target number of drawn row indices held in memory per chunk of resamples.
CHUNK_ELEMENTS = 2**20


@dataclass(frozen=True)
class Plan:
    """How to evaluate one statistic on a chunk of resamples, one component at a time.

    ``component(idx, c, shared, state)`` returns component ``c`` of every resample of the
    chunk of drawn indices ``idx`` (``(r, n)``) and ``combine`` turns the ``(r, C)``
    components into the statistic. ``bootstrap_many`` evaluates component ``c`` of every
    statistic before component ``c + 1``, with a ``shared`` dict that lives for that step,
    so statistics of one lens reuse its bin statistics and sorted prefix sums, which are
    then freed (a classwise lens never holds all its components' arrays at once).
    ``state`` lives for the chunk and belongs to the statistic.
    """

    name: str
    value: float
    path: str
    component: Callable[[np.ndarray, int, dict[Any, Any], dict[str, Any]], np.ndarray]
    n_components: int = 1
    combine: Callable[[np.ndarray], np.ndarray] = operator.itemgetter((slice(None), 0))


def _whole(values: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """Wrap a statistic evaluated in one piece as the single component of a plan."""

    def component(idx: np.ndarray, c: int, shared: dict, state: dict) -> np.ndarray:
        return values(idx)

    return component


def resampled_rows(idx: np.ndarray, order: str) -> Iterator[np.ndarray]:
    """Yield each resample's rows in draw order or in row order (see :mod:`core.stats.intervals`)."""
    if order == "draws":
        yield from idx
        return
    r, n = idx.shape
    offsets = (np.arange(r, dtype=np.intp) * n)[:, None]
    mult = np.bincount((idx + offsets).ravel(), minlength=r * n).reshape(r, n)
    rows = np.arange(n, dtype=np.intp)
    for i in range(r):
        yield np.repeat(rows, mult[i])


def generic_plan(
    name: str,
    func: Callable[[np.ndarray, np.ndarray], float],
    p: np.ndarray,
    y: np.ndarray,
    value: float | None = None,
    order: str = "draws",
) -> Plan:
    """Return the statistic called once per resample on the resampled rows."""

    def values(idx: np.ndarray) -> np.ndarray:
        return np.fromiter(
            (float(func(p[rows], y[rows])) for rows in resampled_rows(idx, order)),
            dtype=np.float64,
            count=idx.shape[0],
        )

    if value is None:
        value = float(func(p, y))
    return Plan(name, value, "generic", _whole(values))


def score_plan(
    name: str, p: np.ndarray, y: np.ndarray, binary: bool, options: dict[str, Any]
) -> Plan:
    """Return a score: the mean of its per-row values over each resample."""
    rows = SCORES.get(name).rows(p, y, binary=binary, **options)

    def values(idx: np.ndarray) -> np.ndarray:
        return np.take(rows, idx).mean(axis=1)

    return Plan(name, float(rows.mean()), "row-mean", _whole(values))


class SortedChunk:
    """Prefix sums of a chunk of resamples over the rows sorted by score.

    ``mult[i, j]`` is how often resample ``i`` drew the ``j``-th row in score order;
    the resample's sorted sequence repeats row ``j`` ``mult[i, j]`` times. :meth:`at`
    gives sums over the first ``t`` copies of that sequence for any ``t`` (a row whose
    copies straddle ``t`` is split), so bins bounded by copy ranks need no sort.
    """

    def __init__(
        self,
        idx: np.ndarray,
        rank: np.ndarray,
        s_sorted: np.ndarray,
        o_sorted: np.ndarray,
        squares: bool = False,
    ) -> None:
        r, n = idx.shape
        pos = np.take(rank, idx)
        pos += (np.arange(r, dtype=np.intp) * n)[:, None]
        mult = np.bincount(pos.ravel(), minlength=r * n).reshape(r, n)
        del pos
        # integer prefix sums over the chunk flattened row after row: every row holds n
        # copies, so row i's copy t is the chunk's copy i·n + t and one searchsorted
        # serves all rows. Score sums accumulate per row, so their rounding does not
        # depend on the chunk.
        self.cum_n = np.zeros(r * n + 1, dtype=np.int64)
        np.cumsum(mult, out=self.cum_n[1:])
        # outcome counts from the rarer outcome's columns only (a tenth of them for a
        # classwise component): prefix counts over those columns, looked up through
        # the number of such columns before each position
        self.rare = int(2 * int(o_sorted.sum()) <= n)
        is_rare = o_sorted == self.rare
        self.rare_before = np.concatenate(([0], np.cumsum(is_rare)))
        self.cum_rare = np.zeros((r, int(self.rare_before[-1]) + 1), dtype=np.int64)
        np.cumsum(mult[:, is_rare], axis=1, out=self.cum_rare[:, 1:])
        self.cum_s = np.zeros((r, n + 1))
        np.cumsum(mult * s_sorted, axis=1, out=self.cum_s[:, 1:])
        self.cum_s2 = None
        if squares:
            self.cum_s2 = np.zeros((r, n + 1))
            np.cumsum(mult * (s_sorted * s_sorted), axis=1, out=self.cum_s2[:, 1:])
        self.base = (np.arange(r, dtype=np.int64) * n)[:, None]
        self.rows = np.arange(r)[:, None]
        self.n = n
        self.s_sorted = s_sorted
        self.o_sorted = o_sorted

    def copies_before(self, positions: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Return the copies of rows at sorted positions ``< positions``.

        ``positions`` has shape ``(r, m)`` (or broadcasts to it), or ``(len(rows), m)``
        when ``rows`` picks resamples of the chunk.
        """
        base = self.base if rows is None else self.base[rows]
        return self.cum_n[base + positions] - base

    def _locate(
        self, t: np.ndarray, rows: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        base, at_row = (self.base, self.rows) if rows is None else (self.base[rows], rows[:, None])
        flat = t + base
        # copy t sits at flat position q (cum_n[q] <= t < cum_n[q + 1]); the copies of q
        # before t are in the prefix
        q = np.searchsorted(self.cum_n, flat.ravel(), side="right").reshape(flat.shape) - 1
        before = flat - self.cum_n[q]
        # q may run into the next row's leading unused positions, where before == 0
        local = np.minimum(q - base, self.n)
        return base, at_row, before, local

    def _outcomes(
        self, base: np.ndarray, at_row: np.ndarray, before: np.ndarray, local: np.ndarray
    ) -> np.ndarray:
        rare = self.cum_rare[at_row, self.rare_before[local]]
        if self.rare == 0:  # positives before ``local`` = copies before it − rare ones
            rare = self.cum_n[base + local] - base - rare
        outcome = rare + before * self.o_sorted[np.minimum(local, self.n - 1)]
        return outcome.astype(np.float64)

    def outcomes_before(self, positions: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Return the outcome sums of the copies of rows at sorted positions ``< positions``."""
        base, at_row = (self.base, self.rows) if rows is None else (self.base[rows], rows[:, None])
        local = np.broadcast_to(positions, (at_row.shape[0], np.shape(positions)[-1]))
        return self._outcomes(base, at_row, np.zeros((), dtype=np.int64), local)

    def outcomes_at(self, t: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Return the outcome sums over each resample's first ``t`` copies (see :meth:`at`)."""
        return self._outcomes(*self._locate(t, rows))

    def at(self, t: np.ndarray, rows: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """Return sums over each resample's first ``t`` copies.

        ``t`` has shape ``(r, m)``, or ``(len(rows), m)`` when ``rows`` picks resamples
        of the chunk. The sums are of scores, outcomes and squared scores (None unless
        requested), followed by the sorted position holding copy ``t`` (``n`` at the end).
        """
        base, at_row, before, local = self._locate(t, rows)
        s_at = self.s_sorted[np.minimum(local, self.n - 1)]
        sums = self.cum_s[at_row, local] + before * s_at
        squares = None
        if self.cum_s2 is not None:
            squares = self.cum_s2[at_row, local] + before * (s_at * s_at)
        return sums, self._outcomes(base, at_row, before, local), squares, local


class SortedBins:
    """The :class:`~core.estimators.base.BinBatch` of a chunk's resamples on sorted prefix sums.

    Parameters
    ----------
    chunk : SortedChunk
        The chunk's prefix sums.
    bounds : numpy.ndarray
        ``(r, B + 1)`` copy ranks bounding each resample's bins.
    """

    def __init__(self, chunk: SortedChunk, bounds: np.ndarray) -> None:
        self.chunk = chunk
        self.bounds = bounds
        sums, outcome, squares, _ = chunk.at(bounds)
        self._sums, self._squares = sums, squares
        self.counts = np.diff(bounds, axis=1)
        self.score_sums = np.diff(sums, axis=1)
        self.label_sums = np.diff(outcome, axis=1)

    def score_deviation(self, center: np.ndarray, norm: float) -> np.ndarray:
        """``Σ |s − c_b|^p`` per bin (``max`` for ``p = ∞``), from prefix sums."""
        chunk, bounds, c = self.chunk, self.bounds, center
        cnt, s_bin = self.counts, self.score_sums
        lo, n = bounds[:, :-1], chunk.n
        if norm == 2.0:
            return np.diff(self._squares, axis=1) - 2.0 * c * s_bin + cnt * c * c
        if np.isinf(norm):
            s = chunk.s_sorted
            first = chunk.at(lo)[3]
            last = chunk.at(np.maximum(bounds[:, 1:] - 1, lo))[3]
            return np.maximum(c - s[np.minimum(first, n - 1)], s[np.minimum(last, n - 1)] - c)
        # ℓ1: copies with scores below c contribute c − s, the others s − c
        split = np.searchsorted(chunk.s_sorted, c, side="left")
        at = np.clip(chunk.copies_before(split), lo, bounds[:, 1:])
        below_s = chunk.at(at)[0] - self._sums[:, :-1]
        below_n = at - lo
        return c * below_n - below_s + (s_bin - below_s) - c * (cnt - below_n)


class ChunkSample:
    """A chunk's resamples in score order: the sweep's :class:`~core.estimators.base.SortedSample`.

    Equal-mass boundaries are copy ranks (a resample has ``n`` copies, so the ranks are
    common to every resample); equal-width ones are sorted positions mapped to copies.
    """

    def __init__(
        self, chunk: SortedChunk, binning: str, runs: np.ndarray, positions_of: Callable
    ) -> None:
        self.chunk = chunk
        self.binning = binning
        self.tie_policy = "split"
        self.n_rows, self.n = chunk.base.shape[0], chunk.n
        self._runs = runs
        self._positions_of = positions_of

    def boundaries(self, rows: np.ndarray, k: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        """Copy positions of the candidate boundaries and the outcome sums before them."""
        chunk = self.chunk
        starts = sweep_candidate_starts(chunk.s_sorted, k, b, self.binning)
        if self.binning == "equal-mass":
            t = np.broadcast_to(starts, (rows.shape[0], starts.shape[0]))
            return t, chunk.outcomes_at(t, rows)
        pos = starts[None, :]
        return chunk.copies_before(pos, rows), chunk.outcomes_before(pos, rows)

    def monotone(self, rows: np.ndarray) -> np.ndarray:
        """Whether every candidate binning of each resample is monotone."""
        chunk, n = self.chunk, self.n
        if self.binning == "equal-mass":
            # rank bins split ties: monotone when the outcomes do not decrease, i.e. the
            # first n − (number of positives) copies are all negative
            ends = np.full((rows.shape[0], 1), n, dtype=np.int64)
            negatives = ends - chunk.outcomes_at(ends, rows).astype(np.int64)
            return chunk.outcomes_at(negatives, rows)[:, 0] == 0
        # bins never split ties: the mean outcome per distinct score must not decrease
        pos = self._runs[None, :]
        cnt = np.diff(chunk.copies_before(pos, rows), axis=1)
        sums = np.diff(chunk.outcomes_before(pos, rows), axis=1)
        mean = np.full(cnt.shape, -np.inf)
        np.divide(sums, cnt, out=mean, where=cnt > 0)
        # a non-empty run below the largest mean before it is a decrease
        below = mean[:, 1:] < np.maximum.accumulate(mean, axis=1)[:, :-1]
        return ~np.any(below & (cnt[:, 1:] > 0), axis=1)

    def bin_sums(self, rows: np.ndarray, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return counts, score sums and outcome sums of each resample's ``b``-bin binning."""
        chunk = self.chunk
        if self.binning == "equal-mass":
            starts = equal_mass_starts(self.n, b)
            bounds = np.broadcast_to(starts, (rows.shape[0], starts.shape[0]))
        else:
            bounds = chunk.copies_before(self._positions_of(b)[None, :], rows)
        sums, outcome, _, _ = chunk.at(bounds, rows)
        return np.diff(bounds, axis=1), np.diff(sums, axis=1), np.diff(outcome, axis=1)


def _run_positions(sorted_bins: np.ndarray, n_bins: int) -> np.ndarray:
    """Start of each bin in score order (bins that are runs of the score order)."""
    return np.searchsorted(sorted_bins, np.arange(n_bins + 1), side="left")


def rows_batch_plan(call: EstimatorCall, views: BinnedViews, value: float) -> Plan:
    """Return the plan of an estimator with a vectorised bootstrap of its rows (``resample``).

    Its value does not depend on the order of a resample's rows, so ``resample_order`` does
    not apply.
    """
    info = call.info
    view = views.lens(call.lens, call.view_weights)
    weights = np.asarray(view.weights, dtype=np.float64)

    def component(idx: np.ndarray, c: int, shared: dict, state: dict) -> np.ndarray:
        return info.resample(view.scores[c], view.outcomes[c], idx, call.options)  # type: ignore[misc]

    def combine(per_component: np.ndarray) -> np.ndarray:
        return info.combine(per_component, weights, call.norm)

    return Plan(info.name, value, "rows-batch", component, weights.shape[0], combine)


def estimator_plan(
    call: EstimatorCall,
    views: BinnedViews,
    est_seed: int,
    order: str | None,
    value: float | None = None,
) -> Plan:
    """Return the plan of a registered estimator (see the module docstring for the paths).

    Parameters
    ----------
    call : EstimatorCall
        The validated estimator.
    views : BinnedViews
        The data set's shared views (its bins and sort orders are reused).
    est_seed : int
        The seed a random estimator gets on every resample.
    order : {"rows", "draws"} or None
        Order of a resample's rows for the generic path (default: rows for binned
        estimators).
    value : float, optional
        The statistic on the full sample, when already computed.

    Returns
    -------
    Plan
        The plan.
    """
    info = call.info
    if value is None:
        value = float(call.run_on(views, est_seed).value)
    order = order or ("rows" if info.binned else "draws")
    binning = call.binning
    fixed = binning == "discrete" or not BINNINGS.get(binning).data_dependent
    ranked = binning == "equal-mass" and call.tie_policy == "split"
    if info.resample is not None and not info.random(call.norm):
        return rows_batch_plan(call, views, value)
    if not call.native:  # a library's bins: its fixed bins by bincount, else recomputed
        fixed, ranked = fixed and info.statistics == "bins", False
    if not info.binned or order != "rows" or not (fixed or ranked):
        return generic_plan(
            info.name,
            lambda pp, yy: call.run(pp, yy, est_seed).value,
            views.probs,
            views.labels,
            value,
            order,
        )
    view = views.binned(
        call.lens,
        binning,
        call.n_bins,
        call.tie_policy,
        call.view_weights,
        convention=call.convention,
    )
    lens = view.lens
    weights = np.asarray(view.weights, dtype=np.float64)
    bincount_engine = info.statistics == "bins" and fixed
    swept = info.statistics == "sorted"
    starts = equal_mass_starts(views.labels.shape[0], call.n_bins) if not fixed else None
    stream = NormalStream(est_seed)
    runs: dict[int, np.ndarray] = {}
    squares = info.statistics == "scores-in-bins" and call.norm == 2.0

    def sorted_chunk(idx: np.ndarray, c: int, shared: dict) -> SortedChunk:
        # a component's prefix sums depend only on the lens: shared by its statistics
        key = ("sorted", lens, c)
        chunk = shared.get(key)
        if chunk is None or (squares and chunk.cum_s2 is None):
            s = views.sorted_component(lens, c)
            chunk = shared[key] = SortedChunk(idx, s.rank, s.scores, s.outcomes, squares=squares)
        return chunk

    def batch(idx: np.ndarray, c: int, shared: dict) -> Any:
        comp = view.components[c]
        if bincount_engine:
            key = ("bincount", lens, c, binning, call.n_bins, call.tie_policy)
            if key not in shared:
                coded = views.coded_bins(view, c)
                shared[key] = CodedBatch(idx, coded, comp.scores, comp.n_bins)
            return shared[key]
        chunk = sorted_chunk(idx, c, shared)
        if starts is not None:
            bounds = np.broadcast_to(starts, (idx.shape[0], starts.shape[0]))
        else:  # fixed bins are runs of the score order
            if c not in runs:
                runs[c] = _run_positions(comp.index[views.order(lens, c)], comp.n_bins)
            bounds = chunk.copies_before(runs[c][None, :])
        return SortedBins(chunk, bounds)

    def sample(idx: np.ndarray, c: int, shared: dict) -> ChunkSample:
        chunk = sorted_chunk(idx, c, shared)
        s = views.sorted_component(lens, c)

        def positions_of(b: int) -> np.ndarray:
            # the b* equal-width bins start at the first score ≥ k/b, as the candidates do
            k = np.arange(b + 1, dtype=np.int64)
            return sweep_candidate_starts(s.scores, k, np.full_like(k, b), binning)

        return ChunkSample(chunk, binning, tie_runs(s.scores), positions_of)

    def component(idx: np.ndarray, c: int, shared: dict, state: dict) -> np.ndarray:
        ctx = state.get("ctx")
        if ctx is None:
            offset = np.zeros(idx.shape[0], dtype=np.int64)
            ctx = state["ctx"] = KernelContext(call.options, stream, offset)
        data = sample(idx, c, shared) if swept else batch(idx, c, shared)
        out = info.kernel(data, call.norm, ctx)  # type: ignore[misc]
        return out[0] if isinstance(out, tuple) else out

    combine_rule = call.combine()

    def combine(per_component: np.ndarray) -> np.ndarray:
        return combine_rule(per_component, weights, call.norm)

    path = "sweep" if swept else "fixed-bins" if fixed else "equal-mass"
    return Plan(info.name, value, path, component, len(view.components), combine)


class CodedBatch:
    """The :class:`~core.estimators.base.BinBatch` of resamples on fixed bins.

    ``coded`` holds ``2·bin + outcome`` of every row, so a chunk of drawn indices costs
    one gather and the bincounts of :func:`core.stats.binning.batch_bin_sums`.
    """

    def __init__(self, idx: np.ndarray, coded: np.ndarray, scores: np.ndarray, n_bins: int):
        self.counts, self.score_sums, self.label_sums = coded_bin_sums(
            np.take(coded, idx), np.take(scores, idx), n_bins
        )

    def score_deviation(self, center: np.ndarray, norm: float) -> np.ndarray:  # pragma: no cover
        """Not available: estimators that read the rows of each bin use :class:`SortedBins`."""
        raise NotImplementedError("estimators that need the rows of each bin use SortedBins")


def chunks(
    rng: np.random.Generator, n: int, n_resamples: int, chunk_size: int
) -> Iterator[np.ndarray]:
    """Drawn row indices ``(r, n)`` of successive chunks of resamples (one stream)."""
    done = 0
    while done < n_resamples:
        r = min(chunk_size, n_resamples - done)
        # int32 draws are the same numbers as int64 ones (same stream) at half the cost
        dtype = np.int32 if n <= np.iinfo(np.int32).max else np.int64
        yield rng.integers(0, n, size=(r, n), dtype=dtype).astype(np.intp, copy=False)
        done += r


def plan_for(
    statistic: Any,
    views: BinnedViews,
    p_in: np.ndarray,
    binary: bool,
    options: dict[str, Any],
    est_seed: int,
    value: float | None = None,
) -> Plan:
    """Return the plan of an estimator name, a score name or a callable."""
    order = options.pop("resample_order", None)
    if order not in (None, "rows", "draws"):
        raise ConfigError(f"resample_order must be 'rows', 'draws' or None; got {order!r}.")
    if callable(statistic):
        if options:
            raise ConfigError(
                "Options such as " + ", ".join(sorted(options)) + " apply to named "
                "statistics only; bind them into the callable (e.g. with functools.partial)."
            )
        name = getattr(statistic, "__name__", "statistic")
        return generic_plan(name, statistic, p_in, views.labels, value, order or "draws")
    if not isinstance(statistic, str):
        raise ConfigError(
            f"statistic must be an estimator or score name, or a callable; got {statistic!r}."
        )
    if statistic in SCORES:
        return score_plan(statistic, views.probs, views.labels, binary, options)
    if statistic in ESTIMATORS:
        call = EstimatorCall.make(statistic, **options)
        return estimator_plan(call, views, est_seed, order, value)
    names = ", ".join(repr(s) for s in [*ESTIMATORS.names(), *SCORES.names()])
    raise ConfigError(f"Unknown statistic {statistic!r}. Choose one of: {names}, or a callable.")


def check_chunk_size(chunk_size: object, n: int) -> int:
    """Resamples per chunk: ``max(1, 2**20 // n)`` by default."""
    if chunk_size is None:
        return max(1, CHUNK_ELEMENTS // n)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int | np.integer):
        raise ConfigError(f"chunk_size must be a whole number ≥ 1 or None; got {chunk_size!r}.")
    if chunk_size < 1:
        raise ConfigError(f"chunk_size must be at least 1; got {chunk_size}.")
    return int(chunk_size)
