"""Binning schemes for 1-D scores and the per-bin statistics every binned estimator uses.

Conventions
-----------
- **Equal-width** (``"equal-width"``): bin ``k`` is ``[k/B, (k+1)/B)`` and the last bin is
  closed at 1.  The edges are ``np.arange(B + 1) / B`` (each the correctly rounded ``k/B``),
  and a score equal to an edge lies in the upper bin, so 0.3 with ``B = 10`` is in bin 3.
  The index is ``floor(s·B)`` followed by a ±1 correction against those float edges, so
  float rounding of ``s·B`` can never move a point across an edge.
- **Equal-mass** (``"equal-mass"``): by rank after one stable sort (ties in input order).
  With ``tie_policy="split"`` (default) bin ``k`` holds the ranks
  ``ceil(k·n/B) … ceil((k+1)·n/B) − 1``: sizes differ by at most one, a block of equal scores
  may be split across neighbouring bins, and bins are empty only when ``B > n``.
  With ``tie_policy="keep"`` every rank boundary that falls inside a block of equal scores
  is moved up to the end of that block (the whole block joins the lower bin, as in the
  midpoint edges of Kumar et al.'s ``get_equal_bins``), then boundaries that coincide are
  merged; the result has ``B' ≤ B`` bins, none empty, and no value spread over two bins.
  The edges are midpoints between the last score of one bin and the first of the next
  (0 and 1 at the ends), so with ``"keep"`` the edges reproduce the assignment.
  Without a precomputed sort order, and with enough rows per bin, the same bins and edges
  come without sorting: the boundary scores are selected with ``np.partition`` and only
  rows equal to a boundary score are ranked (:func:`equal_mass_by_selection`).
- **Discrete** (``"discrete"``): one bin per distinct score; ``n_bins`` is ignored and the
  edges are midpoints between consecutive distinct values.

A registered binning function has the signature
``func(scores, n_bins, tie_policy, order=None) -> (idx, edges)`` with ``idx`` int64 of shape
``(n,)`` and ``edges`` float64 of shape ``(B + 1,)``; it assumes validated input. ``order``
is the stable ascending argsort of the scores when the caller already has it (schemes that
sort use it instead of sorting again).

Batches
-------
:func:`batch_bin_sums` is the one kernel that turns rows with a fixed bin each into bin
statistics, for ``R`` samples at once (one ``bincount`` with row offsets ``r·B``): one
sample, chunks of bootstrap resamples, simulated datasets, redrawn labels of a test.
:class:`RowBatch` wraps it as the :class:`core.estimators.base.BinBatch` that binned
estimators' kernels read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from core.base.errors import ConfigError, DataError
from core.base.numeric import count_edges
from core.base.parallel import even_pieces, map_helped
from core.base.registry import Entry, Registry
from core.base.validation import MAX_BINS, check_count

if TYPE_CHECKING:
    import pandas as pd

R = TypeVar("R")


@dataclass(frozen=True, kw_only=True)
class BinningInfo(Entry):
    """A binning scheme.

    Attributes
    ----------
    data_dependent : bool
        Whether the bins depend on the other scores (equal-mass, discrete) rather than on
        each score alone (equal-width): only the latter bin chunks of data independently.
    sorts : bool
        Whether the scheme sorts the scores (and so uses a precomputed ``order``).
    """

    data_dependent: bool
    sorts: bool = False


BINNINGS: Registry[BinningInfo] = Registry("binning", BinningInfo)

#: Accepted values of ``tie_policy`` (only equal-mass binning depends on it).
TIE_POLICIES = ("split", "keep")


@dataclass(frozen=True, eq=False)
class BinStats:
    """Sufficient statistics of one binned 1-D calibration problem.

    Attributes
    ----------
    edges : numpy.ndarray
        ``(B + 1,)`` bin edges (for display and for merging; equal-mass edges are data
        dependent).
    counts : numpy.ndarray
        ``(B,)`` int64 number of points per bin.
    score_sums : numpy.ndarray
        ``(B,)`` sum of the scores per bin.
    label_sums : numpy.ndarray
        ``(B,)`` sum of the outcomes per bin.
    scheme : str
        Name of the binning that produced the bins.
    """

    edges: np.ndarray
    counts: np.ndarray
    score_sums: np.ndarray
    label_sums: np.ndarray
    scheme: str

    @property
    def n(self) -> int:
        """Total number of points."""
        return int(self.counts.sum())

    @property
    def n_bins(self) -> int:
        """Number of bins ``B`` (empty bins included)."""
        return int(self.counts.shape[0])

    @property
    def mean_score(self) -> np.ndarray:
        """Mean score per bin (NaN for empty bins)."""
        return _safe_mean(self.score_sums, self.counts)

    @property
    def mean_label(self) -> np.ndarray:
        """Mean outcome per bin (NaN for empty bins)."""
        return _safe_mean(self.label_sums, self.counts)

    @property
    def weights(self) -> np.ndarray:
        """Fraction of the points in each bin, ``counts / n``."""
        n = self.counts.sum()
        return self.counts / n if n else np.zeros(self.n_bins)

    def __add__(self, other: object) -> BinStats:
        """Merge the statistics of two disjoint samples binned on identical edges."""
        if not isinstance(other, BinStats):
            return NotImplemented
        if self.scheme != other.scheme or not np.array_equal(self.edges, other.edges):
            raise ConfigError(
                "Only bin statistics with identical edges and scheme can be added; "
                "bin every chunk with the same fixed edges (equal-width or discrete on a "
                "shared set of values), not with data-dependent equal-mass edges."
            )
        return BinStats(
            self.edges,
            self.counts + other.counts,
            self.score_sums + other.score_sums,
            self.label_sums + other.label_sums,
            self.scheme,
        )

    def __radd__(self, other: object) -> BinStats:
        # lets ``sum(list_of_binstats)`` start from 0
        if isinstance(other, int) and other == 0:
            return self
        return NotImplemented

    def isclose(self, other: BinStats, *, rtol: float = 1e-12, atol: float = 1e-9) -> bool:
        """Return whether two bin statistics agree up to float rounding of the sums.

        Parameters
        ----------
        other : BinStats
            The statistics to compare with.
        rtol, atol : float
            Tolerances for the score and label sums (counts and edges must be equal).

        Returns
        -------
        bool
            True when scheme, edges and counts are equal and the sums are close.
        """
        return (
            self.scheme == other.scheme
            and np.array_equal(self.edges, other.edges)
            and np.array_equal(self.counts, other.counts)
            and np.allclose(self.score_sums, other.score_sums, rtol=rtol, atol=atol)
            and np.allclose(self.label_sums, other.label_sums, rtol=rtol, atol=atol)
        )

    def to_frame(self) -> pd.DataFrame:
        """Return the bin table.

        Returns
        -------
        pandas.DataFrame
            Columns ``bin, lower, upper, count, mean_score, mean_label, gap`` where
            ``gap = mean_score − mean_label`` (positive means over-confident; NaN for
            empty bins).
        """
        import pandas as pd

        mean_score = self.mean_score
        mean_label = self.mean_label
        return pd.DataFrame(
            {
                "bin": np.arange(self.n_bins, dtype=np.int64),
                "lower": self.edges[:-1],
                "upper": self.edges[1:],
                "count": self.counts,
                "mean_score": mean_score,
                "mean_label": mean_label,
                "gap": mean_score - mean_label,
            }
        )


def _safe_mean(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    out = np.full(sums.shape, np.nan)
    np.divide(sums, counts, out=out, where=counts > 0)
    return out


# --------------------------------------------------------------------------- schemes


#: Distance of s·B from an integer below which the float edges decide (rounding is ~1e-15·B).
_EDGE_TOL = 1e-7
#: Rows per chunk of the elementwise passes that would otherwise make n-long temporaries.
_CHUNK = 1 << 16
#: Above this many bins one sample's sums are counted a statistic at a time (the discrete
#: bins of millions of distinct scores: at 10⁷ bins 0.23 s against 1.2 s for the codes).
_CODED_MAX_BINS = 1 << 21
#: Rows per piece of one sample's passes on the thread pool (a few chunks each).
_PIECE_ROWS = 1 << 18


def _over_pieces(fn: Callable[[tuple[int, int]], R], n: int) -> list[R]:
    """``fn`` of every piece ``(lo, hi)`` of ``range(n)``, on the thread pool when ``n`` is large.

    The pieces depend only on ``n`` (:data:`_PIECE_ROWS` rows each), so results gathered in
    order are the same on any number of threads; the calling thread works beside the pool
    (:func:`core.base.parallel.map_helped`), so a busy machine costs about a plain loop.
    """
    return map_helped(fn, even_pieces(n, _PIECE_ROWS))


def equal_width_edges(n_bins: int) -> np.ndarray:
    """Return the equal-width edges ``np.arange(B + 1) / B``.

    Parameters
    ----------
    n_bins : int
        Number of bins ``B``.

    Returns
    -------
    numpy.ndarray
        ``(B + 1,)`` float64 edges from 0 to 1.
    """
    return np.arange(n_bins + 1, dtype=np.float64) / n_bins


@BINNINGS.register(
    "equal-width",
    label="Equal width",
    description="B bins [k/B, (k+1)/B), the last closed at 1; a score on an edge goes up.",
    formula="Guo et al. 2017; Roelofs et al. 2022 §2.1 (left-closed, exact float edges)",
    data_dependent=False,
)
def _equal_width(
    scores: np.ndarray, n_bins: int, tie_policy: str, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    edges = equal_width_edges(n_bins)
    upper = np.append(edges[1:-1], np.inf)  # the last bin never moves up: 1.0 stays in it
    idx = np.empty(scores.shape[0], dtype=np.intp)

    def piece(bounds: tuple[int, int]) -> None:
        # a chunk at a time, in one buffer: the temporaries stay in cache whatever n
        buffer = np.empty(min(_CHUNK, bounds[1] - bounds[0]))
        for lo in range(bounds[0], bounds[1], _CHUNK):
            hi = min(lo + _CHUNK, bounds[1])
            s = scores[lo:hi]
            chunk = idx[lo:hi]
            t = buffer[: hi - lo]
            np.multiply(s, n_bins, out=t)
            np.copyto(chunk, t, casting="unsafe")  # truncation, as astype(intp)
            np.minimum(chunk, n_bins - 1, out=chunk)
            # floor(s·B) can differ from the bin of s only when s·B rounds to within a few
            # ulps of an integer; only those points (|frac − ½| > ½ − tol) are checked
            # against the float edges
            t -= chunk
            t -= 0.5
            np.abs(t, out=t)
            near = np.flatnonzero(t > 0.5 - _EDGE_TOL)
            if near.size:
                k = chunk[near]
                s = s[near]
                k -= s < edges[k]
                k += s >= upper[k]
                chunk[near] = k

    _over_pieces(piece, scores.shape[0])  # every row's bin is its own: pieces change nothing
    return idx, edges


def equal_mass_starts(n: int, n_bins: int) -> np.ndarray:
    """Return the first rank of each equal-mass bin, ``ceil(k·n/B)`` for ``k = 0..B``.

    Parameters
    ----------
    n : int
        Number of points.
    n_bins : int
        Number of bins ``B``.

    Returns
    -------
    numpy.ndarray
        ``(B + 1,)`` int64; bin ``k`` holds the ranks ``starts[k] … starts[k+1] − 1``.
    """
    k = np.arange(n_bins + 1, dtype=np.int64)
    return (k * n + n_bins - 1) // n_bins


def rank_starts(
    sorted_scores: np.ndarray, binning: str, n_bins: int, tie_policy: str
) -> np.ndarray:
    """Return the first sorted position of each bin, followed by ``n``, from the sorted scores.

    Equal-width and equal-mass bins are runs of the score order, so one sort gives the bins
    of every number of bins: equal-mass starts at the ranks ``ceil(k·n/B)`` (moved to the end
    of a run of equal scores with ``tie_policy="keep"``, where bins may merge), equal-width at
    the first score ``≥ k/B`` (the float edges of ``np.arange(B + 1) / B``).

    Parameters
    ----------
    sorted_scores : numpy.ndarray
        Scores in ascending (stable) order.
    binning : {"equal-width", "equal-mass"}
        The binning.
    n_bins : int
        Number of bins ``B``.
    tie_policy : {"split", "keep"}
        Equal-mass tie policy.

    Returns
    -------
    numpy.ndarray
        int64 positions, ``(B + 1,)`` (fewer with ``"keep"``), from 0 to ``n``.
    """
    n = sorted_scores.shape[0]
    if binning == "equal-mass":
        starts = equal_mass_starts(n, n_bins)
        return _keep_ties(sorted_scores, starts) if tie_policy == "keep" else starts
    if binning != "equal-width":
        raise ConfigError(f"Bins of {binning!r} are not fixed runs of the score order.")
    starts = np.searchsorted(sorted_scores, equal_width_edges(n_bins), side="left")
    starts[0], starts[-1] = 0, n
    return starts.astype(np.int64)


#: Below this many rows equal-mass bins come from a sort (selection gains nothing there).
_SELECT_MIN_ROWS = 8192
#: Selecting the boundaries beats a sort while there are this many rows per bin or more.
_SELECT_ROWS_PER_BIN = 512


def index_of_runs(order: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Return the bin of every row from bins that are runs of the score order.

    Parameters
    ----------
    order : numpy.ndarray
        Stable ascending argsort of the scores.
    starts : numpy.ndarray
        First sorted position of each bin, followed by ``n`` (:func:`rank_starts`).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` intp bin of every row, in input order.
    """
    sizes = np.diff(starts)
    idx = np.empty(order.shape[0], dtype=np.intp)
    idx[order] = np.repeat(np.arange(sizes.shape[0], dtype=np.intp), sizes)
    return idx


def sorted_bin_stats(
    sorted_scores: np.ndarray,
    outcome_prefix: np.ndarray,
    binning: str,
    n_bins: int,
    tie_policy: str,
) -> tuple[np.ndarray, BinStats]:
    """Return equal-width or equal-mass bins of sorted scores as runs, with their statistics.

    The edges are those the binning function gives; counts and outcome sums are
    differences of the prefix sums, and each bin's score sum adds its run of sorted
    scores (``np.add.reduceat``), which keeps the sums as accurate as a ``bincount``'s
    (differences of score prefix sums lose digits to the size of the prefix).

    Parameters
    ----------
    sorted_scores, binning, n_bins, tie_policy
        As in :func:`rank_starts`.
    outcome_prefix : numpy.ndarray
        ``(n + 1,)`` sums of the outcomes before each sorted position (0/1 outcomes:
        exact).

    Returns
    -------
    starts : numpy.ndarray
        First sorted position of each bin, followed by ``n`` (:func:`rank_starts`).
    stats : BinStats
        The bins' statistics.
    """
    starts = rank_starts(sorted_scores, binning, n_bins, tie_policy)
    counts = np.diff(starts)
    if binning == "equal-mass":
        edges = _midpoint_edges(sorted_scores, starts)
    else:
        edges = equal_width_edges(n_bins)
    # reduceat adds up to the next start given: the non-empty runs alone end where they should
    full = counts > 0
    score_sums = np.zeros(counts.shape[0])
    score_sums[full] = np.add.reduceat(sorted_scores, starts[:-1][full])
    label_sums = np.diff(outcome_prefix[starts])
    return starts, BinStats(edges, counts, score_sums, label_sums, binning)


def _keep_ties(sorted_scores: np.ndarray, starts: np.ndarray) -> np.ndarray:
    n = sorted_scores.shape[0]
    inner = starts[1:-1]
    inner = inner[(inner > 0) & (inner < n)]
    cuts_tie = sorted_scores[inner - 1] == sorted_scores[inner]
    moved = np.where(
        cuts_tie, np.searchsorted(sorted_scores, sorted_scores[inner], side="right"), inner
    )
    moved = moved[moved < n]
    return np.unique(np.concatenate(([0], moved, [n])))


def _midpoint_edges(sorted_scores: np.ndarray, starts: np.ndarray) -> np.ndarray:
    n = sorted_scores.shape[0]
    inner = starts[1:-1]
    below = sorted_scores[np.clip(inner - 1, 0, n - 1)]
    above = sorted_scores[np.clip(inner, 0, n - 1)]
    return np.concatenate(([0.0], 0.5 * (below + above), [1.0]))


@BINNINGS.register(
    "equal-mass",
    label="Equal mass",
    description="B bins of equal counts by rank (stable sort); tie policy 'split' or 'keep'.",
    formula="Roelofs et al. 2022 §2.1.2 (rank-based); Kumar et al. 2019 get_equal_bins (keep ties)",
    data_dependent=True,
    sorts=True,
)
def _equal_mass(
    scores: np.ndarray, n_bins: int, tie_policy: str, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    n = scores.shape[0]
    if order is None and n >= _SELECT_MIN_ROWS and n >= _SELECT_ROWS_PER_BIN * n_bins:
        return equal_mass_by_selection(scores, n_bins, tie_policy)
    return equal_mass_by_sorting(scores, n_bins, tie_policy, order)


def equal_mass_by_sorting(
    scores: np.ndarray, n_bins: int, tie_policy: str, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Equal-mass bins from the stable sort of the scores (see the module docstring).

    Parameters
    ----------
    scores : numpy.ndarray
        Validated float64 scores.
    n_bins : int
        Number of bins ``B``.
    tie_policy : {"split", "keep"}
        Treatment of equal scores.
    order : numpy.ndarray, optional
        The stable ascending argsort of the scores, when the caller has it.

    Returns
    -------
    idx : numpy.ndarray
        Bin of every row.
    edges : numpy.ndarray
        Midpoint edges, 0 and 1 at the ends.
    """
    n = scores.shape[0]
    if order is None:
        order = np.argsort(scores, kind="stable")
    sorted_scores = scores[order]
    starts = equal_mass_starts(n, n_bins)
    if tie_policy == "keep":
        starts = _keep_ties(sorted_scores, starts)
    return index_of_runs(order, starts), _midpoint_edges(sorted_scores, starts)


def equal_mass_by_selection(
    scores: np.ndarray, n_bins: int, tie_policy: str
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`equal_mass_by_sorting` without a sort: the same bins and edges, to the bit.

    The scores of the boundary ranks ``ceil(k·n/B)`` (and of the ranks just below, for
    the edges) are selected with one ``np.partition``. A row lies past boundary ``k``
    when its score exceeds the boundary's score; only rows whose score equals a boundary
    score need their rank, which is the count of smaller scores plus the count of equal
    scores earlier in the input (the stable order). With ``tie_policy="keep"`` a boundary
    that cuts a run of equal scores moves to the count of scores at most that score, and
    a row passes it only with a larger score.

    Parameters and returns are those of :func:`equal_mass_by_sorting` (without ``order``).
    """
    # a column of a row-major matrix (the classwise lens) is read several times below: one
    # gather into a contiguous copy is cheaper than a cache miss per row on every pass
    scores = np.ascontiguousarray(scores)
    n = scores.shape[0]
    inner = equal_mass_starts(n, n_bins)[1:-1]  # ≥ 1; n for the empty bins of B > n
    below, at = inner - 1, np.minimum(inner, n - 1)
    kth = np.unique(np.concatenate((below, at)))
    part = np.partition(scores, kth)
    low, high = part[below], part[at]
    if tie_policy == "split":
        del part  # only a moved "keep" boundary reads it again
    # a boundary at rank n (more bins than rows) is passed by no row
    value = np.where(inner < n, high, np.inf)
    passed = count_edges(value, scores, "left")  # boundaries of smaller score
    ends = np.append(value, np.inf)
    on = np.concatenate(
        [
            np.flatnonzero(ends[passed[lo : lo + _CHUNK]] == scores[lo : lo + _CHUNK]) + lo
            for lo in range(0, n, _CHUNK)
        ]
    )
    first = passed[on]  # the first boundary whose score is the row's
    if tie_policy == "keep":
        return _keep_by_selection(part, kth, inner, low, high, passed, on, first)
    # rank = scores below the row's value + equal scores earlier in the input
    grouped = np.argsort(first, kind="stable")
    earlier = np.empty(on.shape[0], dtype=np.intp)
    earlier[grouped] = np.arange(on.shape[0]) - np.searchsorted(
        first[grouped], first[grouped], side="left"
    )
    smaller = inner[first]
    tied = low[first] == high[first]  # the row's value also fills the rank below the boundary
    if tied.any():
        at_most = _count_at_most(passed, inner.shape[0])
        equal = np.bincount(first, minlength=inner.shape[0])
        smaller[tied] = (at_most - equal)[first[tied]]
    passed[on] = np.searchsorted(inner, smaller + earlier, side="right")
    return passed, np.concatenate(([0.0], 0.5 * (low + high), [1.0]))


def _keep_by_selection(
    part: np.ndarray,
    kth: np.ndarray,
    inner: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    passed: np.ndarray,
    on: np.ndarray,
    first: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Return the ``tie_policy="keep"`` bins of :func:`equal_mass_by_selection` (see there)."""
    n = part.shape[0]
    cuts = (inner < n) & (low == high)
    moved = np.where(cuts, _count_at_most(passed, inner.shape[0]), inner)
    # of the boundaries with a row's score only the first can stay, and the row passes it
    passed[on] += ~cuts[first]
    # boundaries that moved onto each other merge: a row's bin is the distinct ones it passed
    distinct = np.concatenate(([True], moved[1:] != moved[:-1]))
    bins = np.concatenate(([0], np.cumsum(distinct)))
    kept = distinct & (moved < n)
    lower = np.where(cuts, high, low)[kept]  # a moved boundary ends its run of equal scores
    upper = high[kept]
    moved_kept = cuts[kept]
    upper[moved_kept] = _order_statistics(part, kth, moved[kept][moved_kept])
    for lo in range(0, n, _CHUNK):  # in place: no second array of n bins
        passed[lo : lo + _CHUNK] = bins[passed[lo : lo + _CHUNK]]
    return passed, np.concatenate(([0.0], 0.5 * (lower + upper), [1.0]))


def _count_at_most(passed: np.ndarray, n_boundaries: int) -> np.ndarray:
    """Return how many rows score at most each boundary's score (``(m,)``).

    ``passed`` is each row's count of boundaries with a smaller score.
    """
    return np.cumsum(np.bincount(passed, minlength=n_boundaries + 1)[:n_boundaries])


def _order_statistics(part: np.ndarray, kth: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Scores of the given ranks, from scores partitioned at the sorted ranks ``kth``.

    Between two ranks of ``kth`` a partitioned array holds exactly the scores of the ranks
    between them, so a rank outside ``kth`` is selected within that stretch alone.
    """
    out = np.empty(ranks.shape[0])
    ends = np.append(kth, part.shape[0])
    for i, r in enumerate(ranks):
        j = int(np.searchsorted(kth, r))
        if ends[j] == r:
            out[i] = part[r]
            continue
        lo = kth[j - 1] + 1 if j else 0
        out[i] = np.partition(part[lo : ends[j]], r - lo)[r - lo]
    return out


@BINNINGS.register(
    "discrete",
    label="Discrete (one bin per value)",
    description="One bin per distinct score; for models with finitely many outputs.",
    formula="Kumar et al. 2019 Def. 5.1 (get_discrete_bins)",
    data_dependent=True,
    sorts=True,
)
def _discrete(
    scores: np.ndarray, n_bins: int, tie_policy: str, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    if order is None:
        values, idx = np.unique(scores, return_inverse=True)
        idx = idx.astype(np.intp, copy=False).reshape(-1)
    else:
        ordered = scores[order]
        new = np.empty(ordered.shape[0], dtype=bool)
        new[:1] = True
        np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
        values = ordered[new]
        idx = np.empty(ordered.shape[0], dtype=np.intp)
        idx[order] = np.cumsum(new) - 1
    edges = np.concatenate(([0.0], 0.5 * (values[1:] + values[:-1]), [1.0]))
    return idx, edges


# --------------------------------------------------------------------------- public API


def check_n_bins(n_bins: object) -> int:
    """Return ``n_bins`` as an int ≥ 1.

    Parameters
    ----------
    n_bins : int
        Number of bins.

    Returns
    -------
    int
        The validated number of bins.

    Raises
    ------
    ConfigError
        If it is not a whole number in ``1..MAX_BINS`` (10,000).
    """
    return check_count("n_bins", n_bins, MAX_BINS)


def check_tie_policy(tie_policy: object) -> str:
    """Return a valid equal-mass tie policy.

    Raises
    ------
    ConfigError
        Unless it is ``"split"`` or ``"keep"``.
    """
    if tie_policy not in TIE_POLICIES:
        raise ConfigError(
            f"Unknown tie_policy {tie_policy!r}; use 'split' (rank order, equal counts) or "
            "'keep' (equal scores share a bin; fewer bins may result)."
        )
    return str(tie_policy)


def _as_unit_vector(values: ArrayLike, what: str) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1:
        raise DataError(f"{what} must be a 1-D vector; got shape {v.shape}.")
    if v.shape[0] == 0:
        raise DataError(f"There are no {what.lower()} (0 values).")
    # NaN fails both comparisons, so this also rejects missing values
    if not (v.min() >= 0.0 and v.max() <= 1.0):
        raise DataError(f"{what} must be finite numbers in [0, 1].")
    return v


def bin_indices(
    scores: ArrayLike,
    *,
    binning: str = "equal-width",
    n_bins: int = 15,
    tie_policy: str = "split",
) -> tuple[np.ndarray, np.ndarray]:
    """Assign each score to a bin.

    Parameters
    ----------
    scores : array_like
        1-D scores in [0, 1].
    binning : {"equal-width", "equal-mass", "discrete"}
        A name in :data:`BINNINGS`.
    n_bins : int, default 15
        Number of bins ``B`` (ignored by ``"discrete"``).
    tie_policy : {"split", "keep"}, default "split"
        Equal-mass treatment of equal scores (see the module docstring).

    Returns
    -------
    idx : numpy.ndarray
        int64 bin index of every score.
    edges : numpy.ndarray
        ``(B + 1,)`` float64 edges.

    Examples
    --------
    >>> idx, edges = bin_indices([0.0, 0.3, 0.35, 1.0], n_bins=10)
    >>> idx.tolist()
    [0, 3, 3, 9]
    """
    s = _as_unit_vector(scores, "Scores")
    entry = BINNINGS.get(binning)
    return entry.func(s, check_n_bins(n_bins), check_tie_policy(tie_policy))


def stats_from_indices(
    idx: np.ndarray, edges: np.ndarray, scores: np.ndarray, labels: np.ndarray, scheme: str
) -> BinStats:
    """Return :class:`BinStats` of one sample from its bin indices (:func:`batch_bin_sums`).

    Parameters
    ----------
    idx : numpy.ndarray
        Bin index of each point, in ``0..len(edges) − 2``.
    edges : numpy.ndarray
        Bin edges.
    scores, labels : numpy.ndarray
        float64 scores and outcomes.
    scheme : str
        Name of the binning.

    Returns
    -------
    BinStats
        The per-bin statistics.
    """
    counts, score_sums, label_sums = batch_bin_sums(
        idx[None, :], scores[None, :], labels[None, :], edges.shape[0] - 1
    )
    return BinStats(edges, counts[0], score_sums[0], label_sums[0], scheme)


def batch_bin_sums(
    index: np.ndarray, scores: np.ndarray, outcomes: np.ndarray, n_bins: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return counts, score sums and outcome sums per bin of ``R`` samples at once.

    Row ``j`` of sample ``r`` adds to bin ``index[r, j]``; the samples' bins are laid end
    to end (offsets ``r·B``) so one ``bincount`` per statistic serves the whole batch.
    Integer or boolean 0/1 outcomes take one integer ``bincount`` of ``2·bin + outcome``
    for counts and outcome sums; float outcomes a weighted one. Sums accumulate in row
    order, so one sample's statistics do not depend on the batch it is part of.

    Parameters
    ----------
    index : numpy.ndarray
        ``(R, n)`` int bin of every row.
    scores : numpy.ndarray
        ``(R, n)`` float64 scores.
    outcomes : numpy.ndarray
        ``(R, n)`` outcomes: 0/1 integers or booleans, or floats in [0, 1].
    n_bins : int
        Number of bins ``B``.

    Returns
    -------
    counts : numpy.ndarray
        ``(R, B)`` int64.
    score_sums, label_sums : numpy.ndarray
        ``(R, B)`` float64.

    Examples
    --------
    >>> c, s, o = batch_bin_sums(np.array([[0, 1, 1]]), np.array([[0.2, 0.6, 0.8]]),
    ...                          np.array([[0, 1, 1]]), 2)
    >>> c.tolist(), o.tolist()
    ([[1, 2]], [[0.0, 2.0]])
    """
    r = index.shape[0]
    # one sample of very many bins takes the count per statistic below: the codes' 2·B
    # counters would miss the cache on every row (the same sums, no code array)
    coded = not (r == 1 and n_bins > _CODED_MAX_BINS)
    if coded and (outcomes.dtype == bool or outcomes.dtype.kind in "iu"):
        if r == 1 and 2 * n_bins <= _CHUNK // 8:
            return _one_sample_coded_sums(index[0], scores[0], outcomes[0], n_bins)
        return coded_bin_sums(2 * index + outcomes, scores, n_bins)
    size = r * n_bins
    key = index if r == 1 else index + (np.arange(r, dtype=np.intp) * n_bins)[:, None]
    key = key.ravel()
    counts = np.bincount(key, minlength=size).reshape(r, n_bins)
    label_sums = np.bincount(key, weights=outcomes.ravel(), minlength=size).reshape(r, n_bins)
    score_sums = np.bincount(key, weights=scores.ravel(), minlength=size).reshape(r, n_bins)
    return counts.astype(np.int64, copy=False), score_sums, label_sums


def coded_bin_sums(
    coded: np.ndarray, scores: np.ndarray, n_bins: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`batch_bin_sums` of rows coded ``2·bin + outcome`` (0/1 outcomes).

    One integer ``bincount`` gives counts and outcome sums, a weighted one the score
    sums. ``coded`` is overwritten (it is the caller's fresh gather of the codes).

    Parameters
    ----------
    coded : numpy.ndarray
        ``(R, n)`` int ``2·bin + outcome`` of every row (modified in place).
    scores : numpy.ndarray
        ``(R, n)`` float64 scores.
    n_bins : int
        Number of bins ``B``.

    Returns
    -------
    counts, score_sums, label_sums : numpy.ndarray
        ``(R, B)`` each (int64, float64, float64).
    """
    r = coded.shape[0]
    size = r * n_bins
    if r > 1:
        coded += (np.arange(r, dtype=coded.dtype) * (2 * n_bins))[:, None]
    both = np.bincount(coded.ravel(), minlength=2 * size).reshape(r, n_bins, 2)
    coded >>= 1
    score_sums = np.bincount(coded.ravel(), weights=scores.ravel(), minlength=size)
    # the same integers as both.sum(axis=-1), which is slow over an axis of length 2
    counts = np.add(both[..., 0], both[..., 1], dtype=np.int64)
    return counts, score_sums.reshape(r, n_bins), both[..., 1].astype(np.float64)


def _one_sample_coded_sums(
    index: np.ndarray, scores: np.ndarray, outcomes: np.ndarray, n_bins: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`coded_bin_sums` of one sample, coding ``2·bin + outcome`` a chunk at a time.

    For a few bins only (every chunk and piece adds a ``2·B`` array of counts: with one bin
    per distinct score, as ``mcb``'s discrete bins have, that would cost ``O(n·B / chunk)``).
    Counts are exact whatever the order they are added in, so no code array of ``n`` rows
    is made and pieces of rows are counted on the thread pool; the score sums are one
    ``bincount`` over all rows in row order, as in the batch (one more task of the pool,
    run beside the counts).
    """
    n = index.shape[0]

    def counted(bounds: tuple[int, int]) -> np.ndarray:
        both = np.zeros(2 * n_bins, dtype=np.int64)
        buffer = np.empty(min(_CHUNK, bounds[1] - bounds[0]), dtype=np.intp)
        for lo in range(bounds[0], bounds[1], _CHUNK):
            hi = min(lo + _CHUNK, bounds[1])
            coded = buffer[: hi - lo]
            np.multiply(index[lo:hi], 2, out=coded)
            np.add(coded, outcomes[lo:hi], out=coded)
            both += np.bincount(coded, minlength=2 * n_bins)
        return both

    def task(item: tuple[int, int] | None) -> np.ndarray:
        if item is None:
            return np.bincount(index, weights=scores, minlength=n_bins)
        return counted(item)

    pieces = even_pieces(n, _PIECE_ROWS)
    if len(pieces) == 1:
        score_sums, both = task(None), counted(pieces[0])
    else:
        score_sums, *parts = map_helped(task, [None, *pieces])
        both = np.sum(parts, axis=0)
    both = both.reshape(1, n_bins, 2)
    return both.sum(axis=-1), score_sums[None, :], both[..., 1].astype(np.float64)


def one_sample_deviation(
    index: np.ndarray, scores: np.ndarray, center: np.ndarray, norm: float, n_bins: int
) -> np.ndarray:
    """``Σ |s_i − c_b|^p`` over the rows of each bin of one sample (``max`` for ``p = ∞``).

    The distances ``|s_i − c_{b(i)}|`` (``(s_i − c_b)²`` for ``p = 2``) are computed a
    chunk at a time into one buffer, each chunk's gather, difference and absolute value
    while it is in cache, instead of three ``n``-long temporaries; the sums are then one
    ``bincount`` over all rows in row order, so every bin's sum is the one a single
    ``bincount`` of the distances gives, bit for bit.

    Parameters
    ----------
    index : numpy.ndarray
        ``(n,)`` int bin of every row.
    scores : numpy.ndarray
        ``(n,)`` float64 scores.
    center : numpy.ndarray
        ``(B,)`` centre of each bin.
    norm : float
        ``1.0``, ``2.0`` or ``inf``.
    n_bins : int
        Number of bins ``B``.

    Returns
    -------
    numpy.ndarray
        ``(B,)``; empty bins give 0 (``-inf`` for ``p = ∞``).
    """
    n = index.shape[0]
    dev = np.empty(n)

    def piece(bounds: tuple[int, int]) -> None:
        for lo in range(bounds[0], bounds[1], _CHUNK):
            hi = min(lo + _CHUNK, bounds[1])
            d = dev[lo:hi]
            # bins are in 0..B−1 already: "clip" changes nothing and skips numpy's buffered
            # bounds check of take(..., out=)
            np.take(center, index[lo:hi], out=d, mode="clip")
            np.subtract(scores[lo:hi], d, out=d)
            # |d|·|d| is d·d to the bit: the square needs no absolute value
            if norm == 2.0:
                np.multiply(d, d, out=d)
            else:
                np.abs(d, out=d)

    _over_pieces(piece, n)  # each row's distance is its own: pieces change nothing
    if np.isinf(norm):
        out = np.full(n_bins, -np.inf)
        np.maximum.at(out, index, dev)
        return out
    return np.bincount(index, weights=dev, minlength=n_bins)


class RowBatch:
    """Bin statistics of ``R`` samples whose rows each sit in a fixed bin.

    The :class:`core.estimators.base.BinBatch` of one sample (``R = 1``), of bootstrap
    resamples on fixed bins (the rows gathered by the drawn indices), of simulated
    datasets binned elementwise or by rank, and of a test's redrawn labels.

    Parameters
    ----------
    index : numpy.ndarray
        ``(R, n)`` or ``(n,)`` bin of every row.
    scores : numpy.ndarray
        Scores, same shape.
    outcomes : numpy.ndarray
        Outcomes, same shape (see :func:`batch_bin_sums`).
    n_bins : int
        Number of bins ``B``.
    sums : tuple of numpy.ndarray, optional
        ``(R, B)`` counts, score sums and outcome sums, when already computed.
    """

    def __init__(
        self,
        index: np.ndarray,
        scores: np.ndarray,
        outcomes: np.ndarray,
        n_bins: int,
        sums: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> None:
        self.index = np.atleast_2d(index)
        self.scores = np.atleast_2d(scores)
        self.outcomes = np.atleast_2d(outcomes)
        self.n_bins = int(n_bins)
        if sums is not None:  # already known (the bin statistics of one sample)
            self.__dict__["_sums"] = sums

    @cached_property
    def _sums(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return batch_bin_sums(self.index, self.scores, self.outcomes, self.n_bins)

    @property
    def counts(self) -> np.ndarray:
        """``(R, B)`` points per bin."""
        return self._sums[0]

    @property
    def score_sums(self) -> np.ndarray:
        """``(R, B)`` score sums per bin."""
        return self._sums[1]

    @property
    def label_sums(self) -> np.ndarray:
        """``(R, B)`` outcome sums per bin."""
        return self._sums[2]

    def score_deviation(self, center: np.ndarray, norm: float) -> np.ndarray:
        """``(R, B)``: ``Σ |s_i − c_b|^p`` over each bin's rows (``max`` for ``p = ∞``).

        Parameters
        ----------
        center : numpy.ndarray
            ``(R, B)`` centre of each bin.
        norm : float
            ``1.0``, ``2.0`` or ``inf`` (empty bins give 0, or ``-inf`` for ``inf``).
        """
        r, b = self.index.shape[0], self.n_bins
        if r == 1:
            center = np.asarray(center, dtype=np.float64).ravel()
            return one_sample_deviation(self.index[0], self.scores[0], center, norm, b)[None, :]
        key = self.index + (np.arange(r, dtype=np.intp) * b)[:, None]
        key = key.ravel()
        dev = np.abs(self.scores.ravel() - np.asarray(center, dtype=np.float64).ravel()[key])
        if np.isinf(norm):
            out = np.full(r * b, -np.inf)
            np.maximum.at(out, key, dev)
            return out.reshape(r, b)
        weights = dev if norm == 1.0 else dev * dev
        return np.bincount(key, weights=weights, minlength=r * b).reshape(r, b)


def bin_stats(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    binning: str = "equal-width",
    n_bins: int = 15,
    tie_policy: str = "split",
) -> BinStats:
    """Bin scores and return the per-bin counts, score sums and label sums.

    Parameters
    ----------
    scores : array_like
        1-D scores in [0, 1].
    labels : array_like
        1-D outcomes in [0, 1] (usually 0/1), same length.
    binning, n_bins, tie_policy
        See :func:`bin_indices`.

    Returns
    -------
    BinStats
        The statistics.

    Examples
    --------
    >>> st = bin_stats([0.2, 0.8, 0.9, 0.4], [0, 1, 1, 1], n_bins=2)
    >>> st.counts.tolist(), st.mean_label.tolist()
    ([2, 2], [0.5, 1.0])
    """
    s = _as_unit_vector(scores, "Scores")
    y = _as_unit_vector(labels, "Labels")
    if y.shape != s.shape:
        raise DataError(f"There are {s.shape[0]} scores but {y.shape[0]} labels.")
    entry = BINNINGS.get(binning)
    idx, edges = entry.func(s, check_n_bins(n_bins), check_tie_policy(tie_policy))
    return stats_from_indices(idx, edges, s, y, binning)


def shared_edges(
    score_sets: Sequence[ArrayLike],
    *,
    binning: str = "equal-width",
    n_bins: int = 15,
    tie_policy: str = "split",
) -> np.ndarray:
    """Return one set of bin edges for several score vectors (models compared on equal bins).

    Equal-width edges do not depend on the data. Equal-mass edges are those of the
    pooled scores of every set (so each set's bins hold about ``1/B`` of the pooled
    mass, not of its own). Discrete edges are the midpoints of the union of the values.

    Parameters
    ----------
    score_sets : sequence of array_like
        1-D scores in [0, 1], one vector per model (lengths may differ).
    binning, n_bins, tie_policy
        See :func:`bin_indices`.

    Returns
    -------
    numpy.ndarray
        ``(B + 1,)`` float64 edges from 0 to 1; assign scores with
        :func:`assign_to_edges`.

    Examples
    --------
    >>> shared_edges([[0.1, 0.2], [0.3, 0.4]], binning="equal-mass", n_bins=2).tolist()
    [0.0, 0.25, 1.0]
    """
    if len(score_sets) == 0:
        raise DataError("There are no score vectors to bin.")
    pooled = np.concatenate([_as_unit_vector(s, "Scores") for s in score_sets])
    if binning == "discrete":
        pooled = np.unique(pooled)
    entry = BINNINGS.get(binning)
    return entry.func(pooled, check_n_bins(n_bins), check_tie_policy(tie_policy))[1]


def assign_to_edges(scores: ArrayLike, edges: ArrayLike) -> np.ndarray:
    """Return the bin of each score for fixed edges: left-closed bins, the last closed at 1.

    A score equal to an inner edge lies in the upper bin, as in equal-width binning, so
    ``assign_to_edges(s, equal_width_edges(B))`` equals the equal-width assignment.

    Parameters
    ----------
    scores : array_like
        1-D scores in [0, 1].
    edges : array_like
        ``(B + 1,)`` increasing edges.

    Returns
    -------
    numpy.ndarray
        int64 bin index in ``0..B−1`` of every score.

    Examples
    --------
    >>> assign_to_edges([0.0, 0.25, 0.3, 1.0], [0.0, 0.25, 1.0]).tolist()
    [0, 1, 1, 1]
    """
    s = _as_unit_vector(scores, "Scores")
    e = np.asarray(edges, dtype=np.float64)
    return count_edges(e[1:-1], s, "right").astype(np.int64)
