"""Uncertainty: per-bin binomial intervals and the percentile bootstrap of any scalar statistic.

Per-bin intervals
-----------------
:func:`bin_intervals` gives a two-sided interval for each bin's mean outcome from its
count ``n`` and label sum ``k``: Wilson's score interval or the exact Clopper–Pearson
interval (as :meth:`scipy.stats.binomtest(k, n).proportion_ci` with ``method="wilson"`` or
``"exact"``). Both are exactly ``0`` below at ``k = 0`` and ``1`` above at ``k = n``;
empty bins give NaN.

Bootstrap
---------
:func:`bootstrap_interval` is the exact percentile bootstrap over rows: each resample
draws ``n`` row indices uniformly with replacement and the statistic is recomputed on
the resampled rows, re-binning them where the binning depends on the data.

The order in which a resample's rows reach the statistic matters only to
order-dependent statistics. Registered binned estimators get them in **row order** (the
multiset of drawn rows sorted by row index): equal-mass binning then breaks ties among
equal scores by row index, exactly as on the full sample, and the equal-mass fast path
below reproduces it. Everything else (kernel estimators such as the linear and block
SKCE, which pair consecutive rows, scores and callables) gets them in **draw order**,
an i.i.d. sequence; in row order, copies of one row would sit next to each other and
be paired with themselves. ``resample_order="rows"`` or ``"draws"`` overrides the choice.

Draws come from one :class:`numpy.random.Generator` as ``integers(0, n, size=(r, n))``
in chunks of ``r`` resamples; the stream does not depend on the chunk size, so the
resamples, and hence the result, are the same for every ``chunk_size``, and every
statistic bootstrapped with the same seed sees the same resamples (common random numbers).

Each statistic is evaluated on a chunk of resamples by one of five paths, all of which
give the same numbers as recomputing the statistic on every resample, up to float
rounding of the per-bin sums (relative ~1e-13 at n = 100,000; the tests check 1e-12):

- ``"fixed-bins"``: ``plugin`` (any norm), ``debiased`` (ℓ1 and ℓ2) and ``label-binned``
  (any norm) with ``equal-width`` or ``discrete`` bins. Every row's bin is fixed (a
  resample's distinct scores are a subset of the sample's and empty bins carry no weight).
  For plug-in and debiased a chunk costs two ``bincount`` calls with offsets ``r·B`` (one
  for counts and label sums, one for score sums), then the batch kernels
  :func:`~core.estimators.plugin_from_stats`, ``debiased_sq_from_stats`` or
  ``debiased_l1_from_stats``; label-binned uses the sorted prefix sums below (the bins
  are runs of the score order).
- ``"equal-mass"``: the same estimators with ``equal-mass`` bins and ``tie_policy="split"``.
  The rows are sorted by score once; a resample's multiplicities over that order come
  from one ``bincount``, and their prefix sums give each resample's sums at the fixed
  rank boundaries ``ceil(k·n/B)`` exactly (a row whose copies straddle a boundary is split
  between the two bins), with no sort per resample. Label-binned ℓ1 also splits each bin
  at its mean outcome by one ``searchsorted`` on the sorted scores, ℓ2 uses sums of
  squared scores, ℓ∞ the first and last copy of each bin.
- ``"sweep"``: ``sweep`` with ``equal-width`` bins, or ``equal-mass`` bins with
  ``tie_policy="split"``, on the same sorted prefix sums. The search of
  :func:`~core.estimators.binned.sweep_search` (the one the estimator runs on one
  sample) runs on all resamples of a chunk at once, in blocks of candidates ``b``:
  equal-mass boundaries are the copy ranks ``ceil(k·n/b)``, equal-width ones the sorted
  positions ``searchsorted(scores, k/b)``, the same for every resample, mapped to copies
  through the prefix sums of the multiplicities. A resample leaves the search at its
  first decreasing candidate, or at once when every candidate is provably monotone;
  then the resamples sharing a ``b*`` get their plug-in error together.
- ``"row-mean"``: accuracy, Brier score and log loss are means of per-row values, so a
  resample's value is the mean of a gather.
- ``"generic"``: everything else (kernel estimators, equal-mass with
  ``tie_policy="keep"``, user callables): the statistic is called once per resample on the
  resampled rows. Per-resample work is vectorised; only the loop over resamples is in
  Python.

Random estimators get the same integer seed on every resample (the bootstrap's seed, or
0 for a Generator), as if :func:`~core.calibration.calibration_error` were called on the
resample with that seed. For the ℓ1 debiased estimator this means every resample reads
the same stream of standard normals; ``debiased_l1_from_stats`` draws it once for the
whole chunk and gives each resample its own offset into it (components after the first
start where the previous one stopped, which depends on how many bins it had filled).

Memory is bounded by the chunk: the default chunk holds about 2**20 drawn indices
(``chunk_size = max(1, 2**20 // n)`` resamples), and the fast paths keep a few arrays of
that size alive, about 40 bytes per drawn index (≈ 40 MB) for the bincount path and about
80 bytes per drawn index (≈ 80 MB; 100 for label-binned) for the sorted prefix-sum path,
whatever ``n_resamples`` is. :func:`bootstrap_many` evaluates the statistics one lens
component at a time, and statistics of one lens share that component's bincounts and
prefix sums, which are freed before the next component. The bootstrap distribution itself takes ``8·n_resamples``
bytes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as _stats

from core._validation import check_probs_labels, check_rng
from core.errors import ConfigError
from core.registry import Registry

#: Target number of drawn row indices held in memory per chunk of resamples.
CHUNK_ELEMENTS = 2**20

Statistic = str | Callable[[np.ndarray, np.ndarray], float]


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class ConfidenceInterval:
    """A two-sided confidence interval.

    Attributes
    ----------
    low, high : float
        The bounds; ``low, high = ci`` unpacks them.
    """

    low: float
    high: float

    def __iter__(self) -> Iterator[float]:
        yield self.low
        yield self.high


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """A bootstrap interval for a scalar statistic.

    Attributes
    ----------
    estimate : float
        The statistic on the full sample.
    confidence_interval : ConfidenceInterval
        The percentile interval ``(q_{(1-level)/2}, q_{(1+level)/2})`` of the
        bootstrap distribution (``numpy.quantile``, linear interpolation).
    level : float
        Confidence level, e.g. 0.95.
    n_resamples : int
        Number of resamples.
    seed : int or None
        The seed of the resampling (None when a Generator was passed).
    method : str
        ``"percentile"``.
    distribution : numpy.ndarray
        ``(n_resamples,)`` statistic on each resample, in draw order.
    statistic : str
        Name of the statistic (a callable's ``__name__``).
    path : str
        How resamples were evaluated: ``"fixed-bins"``, ``"equal-mass"``, ``"sweep"``,
        ``"row-mean"`` or ``"generic"`` (see the module docstring).
    """

    estimate: float
    confidence_interval: ConfidenceInterval
    level: float
    n_resamples: int
    seed: int | None
    method: str
    distribution: np.ndarray
    statistic: str
    path: str


# --------------------------------------------------------------------------- validation


def check_level(level: object) -> float:
    """Return a confidence level strictly between 0 and 1.

    Parameters
    ----------
    level : float
        Confidence level, e.g. 0.95.

    Returns
    -------
    float
        The level.

    Raises
    ------
    ConfigError
        If it is not a number in (0, 1).
    """
    if isinstance(level, bool) or not isinstance(level, int | float | np.integer | np.floating):
        raise ConfigError(f"level must be a number between 0 and 1 (e.g. 0.95); got {level!r}.")
    value = float(level)
    if not 0.0 < value < 1.0:
        hint = " Give it as a fraction, e.g. 0.95, not 95." if value >= 1.0 else ""
        raise ConfigError(f"level must lie strictly between 0 and 1; got {level!r}.{hint}")
    return value


def check_n_resamples(n_resamples: object) -> int:
    """Return a number of bootstrap resamples (a whole number ≥ 1).

    Parameters
    ----------
    n_resamples : int
        Number of resamples.

    Returns
    -------
    int
        The number.

    Raises
    ------
    ConfigError
        If it is not a whole number ≥ 1.
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer):
        raise ConfigError(f"n_resamples must be a whole number ≥ 1; got {n_resamples!r}.")
    if n_resamples < 1:
        raise ConfigError(f"n_resamples must be at least 1; got {n_resamples}.")
    return int(n_resamples)


def check_seed(seed: object) -> int | np.random.Generator:
    """Return a valid seed: a non-negative int or a Generator (``None`` means 0).

    Parameters
    ----------
    seed : int, Generator or None
        The seed.

    Returns
    -------
    int or numpy.random.Generator
        The seed.

    Raises
    ------
    ConfigError
        For negative, fractional or non-numeric seeds.
    """
    if seed is None:
        return 0
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(
            f"seed must be a non-negative whole number or a numpy.random.Generator; got {seed!r}."
        )
    return int(seed)


# --------------------------------------------------------------------------- per-bin intervals

INTERVAL_METHODS: Registry = Registry("per-bin interval method")


@INTERVAL_METHODS.register(
    "wilson",
    label="Wilson score",
    description="Wilson's score interval for a binomial proportion; close to nominal coverage.",
    formula="Wilson (1927); Newcombe (1998) method 3",
)
def _wilson(k: np.ndarray, n: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    z = _stats.norm.ppf(0.5 + 0.5 * level)
    p = k / n
    denom = 2.0 * (n + z**2)
    center = (2.0 * n * p + z**2) / denom
    delta = z / denom * np.sqrt(4.0 * n * p * (1.0 - p) + z**2)
    return np.where(k > 0, center - delta, 0.0), np.where(k < n, center + delta, 1.0)


@INTERVAL_METHODS.register(
    "clopper-pearson",
    label="Clopper–Pearson (exact)",
    description="Exact binomial interval from beta quantiles; conservative (coverage ≥ level).",
    formula="Clopper & Pearson (1934)",
)
def _clopper_pearson(k: np.ndarray, n: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    alpha = 1.0 - level
    low = _stats.beta.ppf(alpha / 2.0, np.where(k > 0, k, 1.0), n - k + 1.0)
    high = _stats.beta.ppf(1.0 - alpha / 2.0, k + 1.0, np.where(k < n, n - k, 1.0))
    return np.where(k > 0, low, 0.0), np.where(k < n, high, 1.0)


def bin_intervals(
    counts: ArrayLike,
    label_sums: ArrayLike,
    *,
    method: str = "wilson",
    level: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:
    """Return a confidence interval for each bin's mean outcome.

    Parameters
    ----------
    counts : array_like
        Number of points per bin (non-negative).
    label_sums : array_like
        Number of positive outcomes per bin, ``0 ≤ label_sums ≤ counts``.
    method : {"wilson", "clopper-pearson"}, default="wilson"
        A name in :data:`INTERVAL_METHODS`.
    level : float, default=0.95
        Two-sided confidence level.

    Returns
    -------
    low, high : numpy.ndarray
        float64 bounds of the same shape as ``counts``; NaN for empty bins, exactly 0
        (low) when ``label_sums = 0`` and 1 (high) when ``label_sums = counts``.

    Raises
    ------
    ConfigError
        For an unknown method or a level outside (0, 1).
    DataError
        For negative counts or label sums outside ``[0, counts]``.

    Examples
    --------
    >>> low, high = bin_intervals([10, 0], [0, 0], method="clopper-pearson")
    >>> round(float(high[0]), 4), float(low[0]), bool(np.isnan(low[1]))
    (0.3085, 0.0, True)
    """
    from core.errors import DataError

    entry = INTERVAL_METHODS.get(method)
    level = check_level(level)
    n = np.asarray(counts, dtype=np.float64)
    k = np.asarray(label_sums, dtype=np.float64)
    if n.shape != k.shape:
        raise DataError(f"counts {n.shape} and label_sums {k.shape} must have the same shape.")
    if not (np.isfinite(n).all() and np.isfinite(k).all()):
        raise DataError("counts and label_sums must be finite.")
    if (n < 0).any() or (k < 0).any() or (k > n).any():
        raise DataError("Each bin needs 0 ≤ label_sums ≤ counts (label sums count positives).")
    filled = n > 0
    safe_n = np.where(filled, n, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        low, high = entry.func(k, safe_n, level)
    low = np.where(filled, low, np.nan)
    high = np.where(filled, high, np.nan)
    return low, high


# --------------------------------------------------------------------------- bootstrap plans


@dataclass(frozen=True)
class _Plan:
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
    estimate: float
    path: str
    component: Callable[[np.ndarray, int, dict[Any, Any], dict[str, Any]], np.ndarray]
    n_components: int = 1
    combine: Callable[[np.ndarray], np.ndarray] = operator.itemgetter((slice(None), 0))


def _whole(values: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """Wrap a statistic evaluated in one piece as the single component of a plan."""

    def component(idx: np.ndarray, c: int, shared: dict, state: dict) -> np.ndarray:
        return values(idx)

    return component


def _resampled_rows(idx: np.ndarray, order: str) -> Iterator[np.ndarray]:
    """Yield each resample's rows in draw order or in row order (see the module docstring)."""
    if order == "draws":
        yield from idx
        return
    r, n = idx.shape
    offsets = (np.arange(r, dtype=np.intp) * n)[:, None]
    mult = np.bincount((idx + offsets).ravel(), minlength=r * n).reshape(r, n)
    rows = np.arange(n, dtype=np.intp)
    for i in range(r):
        yield np.repeat(rows, mult[i])


def _generic_plan(
    name: str,
    func: Callable[[np.ndarray, np.ndarray], float],
    p_in: np.ndarray,
    y: np.ndarray,
    estimate: float | None = None,
    order: str = "draws",
) -> _Plan:
    def values(idx: np.ndarray) -> np.ndarray:
        return np.fromiter(
            (float(func(p_in[rows], y[rows])) for rows in _resampled_rows(idx, order)),
            dtype=np.float64,
            count=idx.shape[0],
        )

    if estimate is None:
        estimate = float(func(p_in, y))
    return _Plan(name, estimate, "generic", _whole(values))


def _score_plan(name: str, p_in: np.ndarray, y: np.ndarray, options: dict[str, Any]) -> _Plan:
    from core.scores import SCORES, score_rows

    rows = score_rows(name, p_in, y, **options)
    estimate = float(SCORES.get(name).func(p_in, y, **options))

    def values(idx: np.ndarray) -> np.ndarray:
        return np.take(rows, idx).mean(axis=1)

    return _Plan(name, estimate, "row-mean", _whole(values))


def _fixed_bin_stats(
    idx: np.ndarray, code2: np.ndarray, scores: np.ndarray, n_bins: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r = idx.shape[0]
    # key = 2·(bin + r·B) + outcome: one integer bincount yields counts and label sums
    key = np.take(code2, idx)
    key += (np.arange(r, dtype=np.intp) * (2 * n_bins))[:, None]
    by_label = np.bincount(key.ravel(), minlength=r * 2 * n_bins).reshape(r, n_bins, 2)
    key >>= 1
    score_sums = np.bincount(
        key.ravel(), weights=np.take(scores, idx).ravel(), minlength=r * n_bins
    ).reshape(r, n_bins)
    return by_label.sum(axis=-1), score_sums, by_label[..., 1].astype(np.float64)


class _SortedChunk:
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


def _sorted_bounds(
    chunk: _SortedChunk, starts: np.ndarray | None, positions: np.ndarray | None
) -> np.ndarray:
    """Copy-rank bounds ``(r, B + 1)`` of every resample's bins."""
    if starts is not None:  # equal-mass: fixed ranks
        return np.broadcast_to(starts, (chunk.base.shape[0], starts.shape[0]))
    return chunk.copies_before(positions[None, :])  # fixed bins: contiguous in score order


def _label_binned_sorted(chunk: _SortedChunk, bounds: np.ndarray, norm: float) -> np.ndarray:
    """Label-binned ℓp error ``(mean_i |f_i − ȳ_bin(i)|^p)^(1/p)`` of each resample."""
    n = chunk.n
    sums, outcome, squares, _ = chunk.at(bounds)
    lo = bounds[:, :-1]
    cnt = np.diff(bounds, axis=1)
    s_bin = np.diff(sums, axis=1)
    ybar = np.divide(np.diff(outcome, axis=1), cnt, out=np.zeros(cnt.shape), where=cnt > 0)
    if norm == 2.0:
        dev2 = np.diff(squares, axis=1) - 2.0 * ybar * s_bin + cnt * ybar * ybar
        return np.sqrt(np.maximum(dev2.sum(axis=1), 0.0) / n)
    if np.isinf(norm):
        first = chunk.at(lo)[3]
        last = chunk.at(np.maximum(bounds[:, 1:] - 1, lo))[3]
        s = chunk.s_sorted
        dev = np.maximum(ybar - s[np.minimum(first, n - 1)], s[np.minimum(last, n - 1)] - ybar)
        return np.where(cnt > 0, dev, -np.inf).max(axis=1)
    # ℓ1: copies with scores below ȳ contribute ȳ − f, the others f − ȳ
    split = np.searchsorted(chunk.s_sorted, ybar, side="left")
    c = np.clip(chunk.copies_before(split), lo, bounds[:, 1:])
    below_s = chunk.at(c)[0] - sums[:, :-1]
    below_n = c - lo
    total = ybar * below_n - below_s + (s_bin - below_s) - ybar * (cnt - below_n)
    return total.sum(axis=1) / n


_STANDARD_OPTIONS = frozenset(
    {"binning", "n_bins", "norm", "lens", "tie_policy", "class_weights", "class_names"}
)

#: Extra estimator options the fast paths understand.
_FAST_OPTIONS = {"sweep": frozenset({"max_bins"}), "debiased": frozenset({"n_resamples"})}


def _sweep_sorted(
    chunk: _SortedChunk,
    binning: str,
    b_max: int,
    norm: float,
    runs: np.ndarray,
    positions_of: Callable[[int], np.ndarray],
) -> np.ndarray:
    """ECE_sweep of each resample of a chunk (see :func:`~core.estimators.binned.sweep_b_star`).

    The search runs on every resample at once over its sorted sequence of copies:
    equal-mass boundaries are copy ranks, equal-width ones sorted positions mapped to
    copies. Then each group of resamples with the same ``b*`` gets its plug-in error.
    """
    from core.binning import equal_mass_starts
    from core.estimators.base import plugin_from_stats
    from core.estimators.binned import sweep_candidate_starts, sweep_search

    r, n = chunk.base.shape[0], chunk.n
    b_star = np.ones(r, dtype=np.int64)
    if b_max >= 2:

        def boundaries(
            rows: np.ndarray, k: np.ndarray, b: np.ndarray
        ) -> tuple[np.ndarray, np.ndarray]:
            starts = sweep_candidate_starts(chunk.s_sorted, k, b, binning)
            if binning == "equal-mass":  # a resample has n copies: the ranks are common
                t = np.broadcast_to(starts, (rows.shape[0], starts.shape[0]))
                return t, chunk.outcomes_at(t, rows)
            pos = starts[None, :]  # equal width: sorted positions, mapped to copies
            return chunk.copies_before(pos, rows), chunk.outcomes_before(pos, rows)

        def monotone(rows: np.ndarray) -> np.ndarray:
            if binning == "equal-mass":
                # rank bins split ties: monotone when the outcomes do not decrease, i.e.
                # the first n − (number of positives) copies are all negative
                ends = np.full((rows.shape[0], 1), n, dtype=np.int64)
                negatives = ends - chunk.outcomes_at(ends, rows).astype(np.int64)
                return chunk.outcomes_at(negatives, rows)[:, 0] == 0
            # bins never split ties: the mean outcome per distinct score must not decrease
            pos = runs[None, :]
            cnt = np.diff(chunk.copies_before(pos, rows), axis=1)
            sums = np.diff(chunk.outcomes_before(pos, rows), axis=1)
            mean = np.full(cnt.shape, -np.inf)
            np.divide(sums, cnt, out=mean, where=cnt > 0)
            # a non-empty run below the largest mean before it is a decrease
            below = mean[:, 1:] < np.maximum.accumulate(mean, axis=1)[:, :-1]
            return ~np.any(below & (cnt[:, 1:] > 0), axis=1)

        b_star = sweep_search(r, b_max, boundaries, monotone)
    values = np.empty(r)
    for b in np.unique(b_star):
        rows = np.flatnonzero(b_star == b)
        if binning == "equal-mass":
            starts = equal_mass_starts(n, int(b))
            bounds_b = np.broadcast_to(starts, (rows.shape[0], starts.shape[0]))
        else:
            bounds_b = chunk.copies_before(positions_of(int(b))[None, :], rows)
        sums, outcome, _, _ = chunk.at(bounds_b, rows)
        values[rows] = plugin_from_stats(
            np.diff(bounds_b, axis=1), np.diff(sums, axis=1), np.diff(outcome, axis=1), norm
        )
    return values


def _run_positions(sorted_bins: np.ndarray, n_bins: int) -> np.ndarray | None:
    """Start of each bin in score order (bins that are runs of it), else None."""
    if np.any(sorted_bins[1:] < sorted_bins[:-1]):  # pragma: no cover - defensive
        return None
    return np.searchsorted(sorted_bins, np.arange(n_bins + 1), side="left")


def _estimator_plan(
    name: str,
    p_in: np.ndarray,
    p: np.ndarray,
    y: np.ndarray,
    options: dict[str, Any],
    est_seed: int,
    order: str | None,
) -> _Plan:
    from core.binning import BINNINGS, equal_mass_starts
    from core.calibration import calibration_error
    from core.estimators import ESTIMATORS, aggregate, lens_view
    from core.estimators.base import (
        debiased_l1_from_stats,
        debiased_sq_from_stats,
        plugin_from_stats,
    )
    from core.estimators.binned import sweep_bound, tie_runs

    # validates every option once; resamples of valid data need no validation
    full = calibration_error(p_in, y, estimator=name, seed=est_seed, **options)
    entry = ESTIMATORS.get(name)
    binned = bool(entry.meta.get("binned"))
    order = order or ("rows" if binned else "draws")
    norm = full.norm
    binning = full.binning
    tie_policy = options.get("tie_policy", "split")
    settings = {
        "lens": full.lens,
        "norm": norm,
        "binning": binning,
        "n_bins": full.n_bins,
        "tie_policy": tie_policy,
        "class_weights": options.get("class_weights"),
        "class_names": options.get("class_names"),
    }
    extra = {k: v for k, v in options.items() if k not in _STANDARD_OPTIONS}

    def func(pp: np.ndarray, yy: np.ndarray) -> float:
        # what calibration_error does after validating its input
        return float(entry.func(pp, yy, rng=check_rng(est_seed), **settings, **extra).value)

    kernel: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None
    if name == "plugin":

        def kernel(c: np.ndarray, s: np.ndarray, o: np.ndarray) -> np.ndarray:
            return plugin_from_stats(c, s, o, norm)

    elif name == "debiased" and norm == 2.0:
        kernel = debiased_sq_from_stats
    debiased_l1 = name == "debiased" and norm == 1.0
    n_draws = int(extra.get("n_resamples", 1000)) if debiased_l1 else 0
    label_binned = name == "label-binned"
    swept = name == "sweep"
    fixed = binning == "discrete" or not BINNINGS.get(binning).meta.get("data_dependent", True)
    ranked = binning == "equal-mass" and tie_policy == "split" and order == "rows"
    supported = kernel is not None or label_binned or debiased_l1 or swept
    understood = set(extra) <= _FAST_OPTIONS.get(name, frozenset())
    if not supported or not understood or not (fixed or ranked):
        return _generic_plan(name, func, p, y, full.value, order)

    view = lens_view(
        p,
        y,
        full.lens,
        class_names=options.get("class_names"),
        class_weights=options.get("class_weights"),
    )
    weights = np.asarray(view.weights, dtype=np.float64)
    n = p.shape[0]
    binfunc = BINNINGS.get(binning).func
    n_bins = full.n_bins
    sorted_engine = label_binned or swept or not fixed
    b_max = sweep_bound(n, extra.get("max_bins")) if swept else 0
    parts = []
    for scores, outcomes in zip(view.scores, view.outcomes, strict=True):
        o_int = outcomes.astype(np.intp)
        if not sorted_engine:
            bin_idx, edges = binfunc(scores, n_bins, tie_policy)
            parts.append((2 * bin_idx.astype(np.intp) + o_int, scores, edges.shape[0] - 1))
            continue
        by_score = np.argsort(scores, kind="stable")
        rank = np.empty(n, dtype=np.intp)
        rank[by_score] = np.arange(n, dtype=np.intp)
        s_sorted = scores[by_score]
        extras: Any = None
        if swept:
            # the b* equal-width bins are runs of the score order, as the candidates are
            cache: dict[int, np.ndarray] = {}

            def positions_of(b: int, scores=scores, by_score=by_score, cache=cache) -> np.ndarray:
                if b not in cache:
                    sorted_bins = binfunc(scores, b, tie_policy)[0][by_score]
                    cache[b] = np.searchsorted(sorted_bins, np.arange(b + 1), side="left")
                return cache[b]

            extras = (tie_runs(s_sorted), positions_of)
        elif fixed:
            # equal-width and discrete bins are runs of the score order
            bin_idx, edges = binfunc(scores, n_bins, tie_policy)
            extras = _run_positions(bin_idx[by_score], edges.shape[0] - 1)
            if extras is None:  # pragma: no cover - defensive
                return _generic_plan(name, func, p, y, full.value, order)
        parts.append((rank, s_sorted, o_int[by_score], extras))
    starts = equal_mass_starts(n, n_bins) if not fixed else None

    lens_key = full.lens

    def sorted_chunk(idx: np.ndarray, c: int, shared: dict, squares: bool = False) -> _SortedChunk:
        # a component's sorted prefix sums depend only on the lens: shared by its statistics
        key = ("sorted", lens_key, c)
        chunk = shared.get(key)
        if chunk is None or (squares and chunk.cum_s2 is None):
            part = parts[c]
            chunk = shared[key] = _SortedChunk(idx, part[0], part[1], part[2], squares=squares)
        return chunk

    def bin_sums(
        idx: np.ndarray, c: int, shared: dict
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not sorted_engine:
            key = ("bincount", lens_key, c, binning, n_bins, tie_policy)
            if key not in shared:
                shared[key] = _fixed_bin_stats(idx, *parts[c])
            return shared[key]
        chunk = sorted_chunk(idx, c, shared)
        bounds = _sorted_bounds(chunk, starts, parts[c][3])
        sums, outcome, _, _ = chunk.at(bounds)
        return np.diff(bounds, axis=1), np.diff(sums, axis=1), np.diff(outcome, axis=1)

    def component(idx: np.ndarray, c: int, shared: dict, state: dict) -> np.ndarray:
        if swept:
            chunk = sorted_chunk(idx, c, shared)
            return _sweep_sorted(chunk, binning, b_max, norm, *parts[c][3])
        if label_binned:
            chunk = sorted_chunk(idx, c, shared, squares=norm == 2.0)
            return _label_binned_sorted(chunk, _sorted_bounds(chunk, starts, parts[c][3]), norm)
        stats = bin_sums(idx, c, shared)
        if not debiased_l1:
            return kernel(*stats)
        # the estimator reseeds on every resample: each resample reads the same stream,
        # from where the resample's previous component stopped
        offset = state.setdefault("offset", np.zeros(idx.shape[0], dtype=np.int64))
        value = debiased_l1_from_stats(*stats, check_rng(est_seed), n_draws, offset=offset)
        offset += n_draws * np.count_nonzero(stats[0], axis=1)
        return value

    def combine(per_component: np.ndarray) -> np.ndarray:
        if name == "debiased":
            total = np.maximum(per_component @ weights, 0.0)
            return np.sqrt(total) if norm == 2.0 else total
        return aggregate(per_component, weights, norm)

    path = "sweep" if swept else "fixed-bins" if fixed else "equal-mass"
    return _Plan(name, full.value, path, component, len(parts), combine)


def _make_plan(
    statistic: Statistic,
    p_in: np.ndarray,
    p: np.ndarray,
    y: np.ndarray,
    options: dict[str, Any],
    est_seed: int,
) -> _Plan:
    from core.scores import SCORES

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
        return _generic_plan(name, statistic, p_in, y, order=order or "draws")
    if not isinstance(statistic, str):
        raise ConfigError(
            f"statistic must be an estimator or score name, or a callable; got {statistic!r}."
        )
    if statistic in SCORES:
        return _score_plan(statistic, p_in, y, options)
    from core.estimators import ESTIMATORS

    if statistic in ESTIMATORS:
        return _estimator_plan(statistic, p_in, p, y, options, est_seed, order)
    names = ", ".join(repr(s) for s in [*ESTIMATORS.names(), *SCORES.names()])
    raise ConfigError(f"Unknown statistic {statistic!r}. Choose one of: {names}, or a callable.")


# --------------------------------------------------------------------------- bootstrap


def _chunks(
    rng: np.random.Generator, n: int, n_resamples: int, chunk_size: int
) -> Iterator[np.ndarray]:
    done = 0
    while done < n_resamples:
        r = min(chunk_size, n_resamples - done)
        # int32 draws are the same numbers as int64 ones (same stream) at half the cost
        dtype = np.int32 if n <= np.iinfo(np.int32).max else np.int64
        yield rng.integers(0, n, size=(r, n), dtype=dtype).astype(np.intp, copy=False)
        done += r


def _check_chunk_size(chunk_size: object, n: int) -> int:
    if chunk_size is None:
        return max(1, CHUNK_ELEMENTS // n)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int | np.integer):
        raise ConfigError(f"chunk_size must be a whole number ≥ 1 or None; got {chunk_size!r}.")
    if chunk_size < 1:
        raise ConfigError(f"chunk_size must be at least 1; got {chunk_size}.")
    return int(chunk_size)


def bootstrap_many(
    probs: ArrayLike,
    labels: ArrayLike,
    statistics: Mapping[str, tuple[Statistic, Mapping[str, Any]]],
    *,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    chunk_size: int | None = None,
) -> dict[str, BootstrapResult]:
    """Bootstrap several statistics on the same resamples (common random numbers).

    Each chunk of row indices is drawn once and every statistic is evaluated on it, so
    the intervals of the statistics are computed from identical resamples, which is what
    makes their differences comparable. ``bootstrap_many(P, y, {"x": (stat, opts)})["x"]``
    equals ``bootstrap_interval(P, y, statistic=stat, **opts)`` for the same seed.

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like
        Class indices ``0..K-1``.
    statistics : mapping
        ``key -> (statistic, options)``; see :func:`bootstrap_interval` (``options`` may
        include ``resample_order``).
    n_resamples : int, default=1000
        Number of resamples.
    level : float, default=0.95
        Confidence level.
    seed : int, Generator or None, default=0
        Seed of the resampling (``None`` means 0). Random estimators receive the same
        integer seed (0 when a Generator is given) on every resample.
    chunk_size : int, optional
        Resamples per chunk; bounds the memory (see the module docstring). It does not
        change the result.

    Returns
    -------
    dict
        ``key -> BootstrapResult``.
    """
    n_resamples = check_n_resamples(n_resamples)
    level = check_level(level)
    seed = check_seed(seed)
    is_binary = np.ndim(probs) == 1 or (np.ndim(probs) == 2 and np.shape(probs)[1] == 1)
    p, y = check_probs_labels(probs, labels)
    p_in = np.ascontiguousarray(p[:, 1]) if is_binary else p
    n = p.shape[0]
    chunk = _check_chunk_size(chunk_size, n)
    est_seed = seed if isinstance(seed, int) else 0
    plans = {
        key: _make_plan(stat, p_in, p, y, dict(opts), est_seed)
        for key, (stat, opts) in statistics.items()
    }
    rng = check_rng(seed)
    dist = {key: np.empty(n_resamples) for key in plans}
    steps = max((plan.n_components for plan in plans.values()), default=0)
    done = 0
    for idx in _chunks(rng, n, n_resamples, chunk):
        r = idx.shape[0]
        per = {key: np.empty((r, plan.n_components)) for key, plan in plans.items()}
        states: dict[str, dict[str, Any]] = {key: {} for key in plans}
        for c in range(steps):  # component-major: see _Plan
            shared: dict[Any, Any] = {}
            for key, plan in plans.items():
                if c < plan.n_components:
                    per[key][:, c] = plan.component(idx, c, shared, states[key])
            del shared
        for key, plan in plans.items():
            dist[key][done : done + r] = plan.combine(per[key])
        done += r
    tail = (1.0 - level) / 2.0
    out = {}
    for key, plan in plans.items():
        low, high = np.quantile(dist[key], [tail, 1.0 - tail])
        out[key] = BootstrapResult(
            estimate=plan.estimate,
            confidence_interval=ConfidenceInterval(float(low), float(high)),
            level=level,
            n_resamples=n_resamples,
            seed=seed if isinstance(seed, int) else None,
            method="percentile",
            distribution=dist[key],
            statistic=plan.name,
            path=plan.path,
        )
    return out


def bootstrap_interval(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    statistic: Statistic = "plugin",
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    chunk_size: int | None = None,
    resample_order: str | None = None,
    **calibration_error_options: Any,
) -> BootstrapResult:
    """Percentile bootstrap interval of a calibration error, score or any scalar statistic.

    Rows are resampled with replacement and the statistic is recomputed on every
    resample, re-binning where the binning is data dependent (equal-mass). Binned
    estimators, accuracy, Brier score and log loss are evaluated on whole chunks of
    resamples at once (see the module docstring for the paths and the memory bound).

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like
        Class indices ``0..K-1``.
    statistic : str or callable, default="plugin"
        A name in :data:`core.estimators.ESTIMATORS` (computed with
        :func:`core.calibration.calibration_error`), a name in
        :data:`core.scores.SCORES` (``"accuracy"``, ``"brier"``, ``"log-loss"``), or a
        callable ``f(probs, labels) -> float`` receiving the resampled rows (1-D
        probabilities when the input was 1-D, else the ``(n, K)`` matrix).
    n_resamples : int, default=1000
        Number of bootstrap resamples.
    level : float, default=0.95
        Two-sided confidence level, as a fraction.
    seed : int, Generator or None, default=0
        Seed of the resampling (``None`` means 0).
    chunk_size : int, optional
        Resamples evaluated together; default ``max(1, 2**20 // n)``. Only memory and
        speed depend on it, not the result.
    resample_order : {"rows", "draws"}, optional
        Order of a resample's rows as passed to the statistic; default ``"rows"`` for
        registered binned estimators and ``"draws"`` otherwise (see the module docstring).
    **calibration_error_options
        Options of :func:`core.calibration.calibration_error` (``binning``, ``n_bins``,
        ``norm``, ``lens``, ``tie_policy``, ``class_weights``, ...) for an estimator name,
        or of the score (``eps`` for log loss).

    Returns
    -------
    BootstrapResult
        Estimate, percentile interval, settings and the bootstrap distribution.

    Raises
    ------
    ConfigError
        For an unknown statistic, a level outside (0, 1), a bad seed or bad options.
    DataError
        For invalid probabilities or labels.

    Notes
    -----
    The interval is the plain percentile interval of the bootstrap distribution. Kumar
    et al.'s ``bootstrap_uncertainty`` reports the basic (pivotal) interval
    ``(2θ̂ − q_hi, 2θ̂ − q_lo)`` and takes ``alpha`` in percent; here ``level`` is a
    fraction (0.9 for their default ``alpha=10``) and values ≥ 1 are refused. Both
    intervals can be recovered from :attr:`BootstrapResult.distribution`. The
    bootstrap resamples evaluation rows only: bins fixed in advance stay fixed, and
    data-dependent bins are rebuilt on every resample.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000); y = (rng.uniform(size=2000) < p).astype(int)
    >>> res = bootstrap_interval(p, y, lens="binary", n_resamples=200, seed=1)
    >>> res.confidence_interval.low < res.estimate < res.confidence_interval.high
    True
    """
    return bootstrap_many(
        probs,
        labels,
        {"statistic": (statistic, {**calibration_error_options, "resample_order": resample_order})},
        n_resamples=n_resamples,
        level=level,
        seed=seed,
        chunk_size=chunk_size,
    )["statistic"]
