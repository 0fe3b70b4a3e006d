"""The bins of a stream's rows: fixed from facts of all rows, then applied batch by batch.

- **Equal-width** bins depend on each score alone: every batch is binned on its own by the
  registered binning function.
- **Equal-mass** bins are runs of ranks of a stable sort of all rows. With the scores at the
  bins' first ranks (:mod:`core.stream.ranks`), a row with a score different from every
  boundary score falls in the bin after the boundaries below it; a row whose score equals a
  boundary score has the rank ``less + j``, where ``j`` counts the earlier rows with that score
  in stream order (a stable sort puts equal scores in input order), and falls in the bin
  holding that rank. With ``tie_policy="keep"`` no boundary splits equal scores, and the
  bins are read off the first score of each bin.
- **Discrete** bins are the distinct scores of all rows, collected in one pass.

Each gives the bins and edges the in-memory binning gives on the same rows (a test checks).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from core.base.errors import DataError
from core.base.numeric import count_edges
from core.stats.binning import BINNINGS, equal_mass_starts
from core.stream.ranks import Found

#: Most distinct scores the discrete binning of a stream keeps.
DISCRETE_MAX = 1_000_000


@dataclass(eq=False)
class StreamBins:
    """How the rows of one lens component are binned.

    Attributes
    ----------
    binning, tie_policy : str
        The binning.
    n_bins : int
        Bins asked for.
    edges : numpy.ndarray
        The bins' edges.
    cuts : numpy.ndarray or None
        Equal-mass: the score at each inner bin start (``inf`` past the last row); discrete:
        the distinct scores.
    starts : numpy.ndarray or None
        Equal-mass with ``"split"``: the first rank of every bin, and ``n``.
    less : dict
        Equal-mass with ``"split"``: rows below each boundary score.
    """

    binning: str
    tie_policy: str
    n_bins: int
    edges: np.ndarray
    cuts: np.ndarray | None = None
    starts: np.ndarray | None = None
    less: dict[float, int] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """Number of bins ``B``."""
        return int(self.edges.shape[0] - 1)

    def assign(
        self, scores: np.ndarray, seen: Mapping[float, int] | None = None
    ) -> tuple[np.ndarray, dict[float, int]]:
        """Return the bin of every score of the next rows, and the boundary scores they hold.

        Parameters
        ----------
        scores : numpy.ndarray
            The scores of consecutive rows of the stream.
        seen : mapping, optional
            For each boundary score, the rows holding it before these (the stream order of
            equal scores; equal-mass bins with ``tie_policy="split"`` only).

        Returns
        -------
        idx : numpy.ndarray
            The bin of every row.
        held : dict
            Boundary score → rows holding it among these (add to ``seen`` for the next rows).
        """
        if self.binning == "equal-width":
            return BINNINGS.get("equal-width").func(scores, self.n_bins, self.tie_policy)[0], {}
        assert self.cuts is not None
        if self.binning == "discrete":
            idx = np.searchsorted(self.cuts, scores)
            if idx.size and (
                idx.max() >= self.cuts.size or not np.array_equal(self.cuts[idx], scores)
            ):
                raise DataError("A score was not seen when the discrete bins were collected.")
            return idx.astype(np.intp), {}
        if self.tie_policy == "keep":
            return count_edges(self.cuts, scores, "right"), {}
        idx = count_edges(self.cuts, scores, "left")
        if not self.cuts.size:
            return idx, {}
        at = np.minimum(idx, self.cuts.size - 1)
        tied = np.flatnonzero((idx < self.cuts.size) & (self.cuts[at] == scores))
        if not tied.size:
            return idx, {}
        return idx, self._place_ties(scores, tied, idx, seen or {})

    def _place_ties(
        self, scores: np.ndarray, tied: np.ndarray, idx: np.ndarray, seen: Mapping[float, int]
    ) -> dict[float, int]:
        """Bins of rows equal to a boundary score, from their rank ``less + j``."""
        assert self.starts is not None
        values = scores[tied]
        uniq, codes = np.unique(values, return_inverse=True)
        codes = codes.reshape(-1)
        order = np.argsort(codes, kind="stable")  # rows of each value, in stream order
        first = np.searchsorted(codes[order], np.arange(uniq.size))
        occurrence = np.empty(tied.size, dtype=np.int64)
        occurrence[order] = np.arange(tied.size) - np.repeat(
            first, np.diff(np.r_[first, tied.size])
        )
        base = np.array([self.less[float(u)] + seen.get(float(u), 0) for u in uniq])
        ranks = base[codes] + occurrence
        idx[tied] = np.searchsorted(self.starts[1:-1], ranks, side="right")
        counts = np.bincount(codes, minlength=uniq.size)
        return {float(u): int(c) for u, c in zip(uniq, counts, strict=True)}


def add_seen(seen: dict[float, int], held: Mapping[float, int]) -> None:
    """Count boundary scores of rows just binned into ``seen`` (in place)."""
    for value, count in held.items():
        seen[value] = seen.get(value, 0) + count


def equal_mass_ranks(n: int, n_bins: int) -> np.ndarray:
    """Return the ranks whose scores fix the equal-mass bins: each inner start and the one below."""
    starts = equal_mass_starts(n, n_bins)[1:-1]
    return np.unique(np.clip(np.concatenate([starts - 1, starts]), 0, n - 1))


def equal_mass_bins(
    n: int, n_bins: int, tie_policy: str, found: Mapping[int, Found]
) -> tuple[StreamBins, np.ndarray]:
    """Return the equal-mass bins of ``n`` rows from the scores at :func:`equal_mass_ranks`.

    With ``tie_policy="keep"`` the second value is the ranks still to look up (the first rank
    after each tie block a boundary was moved past); call :func:`keep_bins` with them.
    """
    starts = equal_mass_starts(n, n_bins)
    inner = starts[1:-1]
    if tie_policy == "split":
        cuts = np.array([found[r].value if r < n else np.inf for r in inner])
        edges = _midpoints(n, inner, found)
        less = {found[r].value: found[r].less for r in inner if r < n}
        return StreamBins("equal-mass", tie_policy, n_bins, edges, cuts, starts, less), np.empty(
            0, dtype=np.int64
        )
    moved = []
    for r in inner:
        if 0 < r < n and found[r - 1].value == found[r].value:
            r = found[r].less + found[r].equal  # the end of the tie block
        moved.append(r)
    kept = np.unique(np.array([0, *[r for r in moved if r < n], n], dtype=np.int64))
    wanted = {int(x) for r in kept[1:-1] for x in (r - 1, r)}
    todo = np.array(sorted(r for r in wanted if r not in found), dtype=np.int64)
    bins = StreamBins("equal-mass", tie_policy, n_bins, np.empty(0), None, kept)
    return (keep_bins(bins, n, found) if todo.size == 0 else bins), todo


def keep_bins(bins: StreamBins, n: int, found: Mapping[int, Found]) -> StreamBins:
    """Finish equal-mass bins with ``tie_policy="keep"`` once the moved starts are found."""
    assert bins.starts is not None
    inner = bins.starts[1:-1]
    bins.cuts = np.array([found[r].value for r in inner])
    bins.edges = _midpoints(n, inner, found)
    bins.starts = None
    return bins


def _midpoints(n: int, inner: np.ndarray, found: Mapping[int, Found]) -> np.ndarray:
    """Edges midway between the last score of a bin and the first of the next."""
    below = np.array([found[int(min(max(r - 1, 0), n - 1))].value for r in inner])
    above = np.array([found[int(min(max(r, 0), n - 1))].value for r in inner])
    return np.concatenate(([0.0], 0.5 * (below + above), [1.0]))


def discrete_bins(values: np.ndarray) -> StreamBins:
    """Return one bin per distinct score (the distinct scores of all rows, ascending)."""
    edges = np.concatenate(([0.0], 0.5 * (values[1:] + values[:-1]), [1.0]))
    return StreamBins("discrete", "split", int(values.size), edges, values)


def fixed_bins(binning: str, n_bins: int, tie_policy: str) -> StreamBins:
    """Return bins that depend on each score alone (equal-width)."""
    info = BINNINGS.get(binning)
    if info.data_dependent:
        raise ValueError(f"{binning} bins depend on all rows")
    edges = info.func(np.zeros(1), n_bins, tie_policy)[1]
    return StreamBins(binning, tie_policy, n_bins, edges)


@dataclass(eq=False)
class Distinct:
    """The distinct scores of chunks of rows (merge by adding), up to :data:`DISCRETE_MAX`."""

    values: np.ndarray = field(default_factory=lambda: np.empty(0))

    @classmethod
    def of(cls, scores: np.ndarray) -> Distinct:
        """Return the distinct scores of one chunk."""
        return cls(np.unique(scores))

    def __add__(self, other: Distinct) -> Distinct:
        values = np.union1d(self.values, other.values)
        if values.size > DISCRETE_MAX:
            raise DataError(
                f"The discrete binning of a stream keeps at most {DISCRETE_MAX:,} distinct "
                "scores, and these scores have more: choose equal-width or equal-mass bins."
            )
        return Distinct(values)
