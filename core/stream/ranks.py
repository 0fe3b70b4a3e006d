"""Exact order statistics of scores read in passes over a stream (equal-mass edges).

Equal-mass bins are runs of ranks, so their edges and the bin of every row follow from the
scores at a few ranks (``ceil(k·n/B)`` and the rank below each). A stream finds those scores
exactly, in memory bounded by a histogram, by narrowing in passes:

1. **Histogram** every score by ``floor(s·2²⁰)`` (multiplying by a power of two is exact, so
   the buckets are ordered like the scores) and find the bucket of each wanted rank.
2. **Refine** a bucket still holding more than :data:`GATHER_MAX` rows: split its range of
   float64 bit patterns (ordered like the non-negative scores they encode) into 2¹⁶ parts
   and histogram again; every pass divides the range by 2¹⁶, so four passes reach single
   values whatever the data.
3. **Gather** the scores of the buckets left, count the distinct values, and read each
   wanted rank's score and the number of scores below and equal to it.

The result is the score at each rank of a stable sort of all rows, with the counts that
place ties: exactly what the in-memory equal-mass binning reads from its sort.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

import numpy as np

#: Buckets of the first histogram (``floor(s · LEVEL1)``).
LEVEL1 = 1 << 20
#: Sub-buckets of a refinement.
REFINE = 1 << 16
#: A bucket with at most this many rows is gathered instead of refined.
GATHER_MAX = 1 << 21


def keys_of(scores: np.ndarray) -> np.ndarray:
    """Return the float64 bit patterns of non-negative scores, ordered like the scores.

    ``-0.0`` becomes ``0.0`` first (equal scores, equal keys).
    """
    s = np.asarray(scores, dtype=np.float64) + 0.0
    return s.view(np.uint64)


@dataclass(frozen=True)
class Found:
    """The score at a rank, with the counts of scores below it and equal to it.

    Attributes
    ----------
    value : float
        The score at the rank.
    less, equal : int
        Rows with a smaller score; rows with this score.
    """

    value: float
    less: int
    equal: int


@dataclass
class _Target:
    rank: int
    lo: int  # key range [lo, hi) that holds the rank
    hi: int
    below: int  # rows with a key < lo
    stage: str  # "level1", "refine" or "gather"
    found: Found | None = None


@dataclass
class PassCounts:
    """What one pass over the scores of one column collects (merges by adding)."""

    level1: np.ndarray | None = None
    refine: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    gather: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def __add__(self, other: PassCounts) -> PassCounts:
        level1 = (
            other.level1
            if self.level1 is None
            else self.level1
            if other.level1 is None
            else self.level1 + other.level1
        )
        refine = dict(self.refine)
        for key, counts in other.refine.items():
            refine[key] = refine[key] + counts if key in refine else counts
        gather = dict(self.gather)
        for key, (values, counts) in other.gather.items():
            if key in gather:
                v0, c0 = gather[key]
                gather[key] = _merge_counts(v0, c0, values, counts)
            else:
                gather[key] = (values, counts)
        return PassCounts(level1, refine, gather)


def _merge_counts(
    v0: np.ndarray, c0: np.ndarray, v1: np.ndarray, c1: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    values, inverse = np.unique(np.concatenate([v0, v1]), return_inverse=True)
    counts = np.bincount(inverse.reshape(-1), weights=np.concatenate([c0, c1]))
    return values, counts.astype(np.int64)


class RankSearch:
    """Exact scores at given ranks of several columns, found over passes (module docstring).

    Parameters
    ----------
    ranks : mapping
        Column key → ranks wanted (``0 ≤ rank < n``).
    """

    def __init__(self, ranks: Mapping[Hashable, np.ndarray], level1: int = LEVEL1) -> None:
        self.level1 = int(level1)
        self.targets: dict[Hashable, list[_Target]] = {
            col: [_Target(int(r), 0, 1 << 64, 0, "level1") for r in np.unique(rs)]
            for col, rs in ranks.items()
        }

    @property
    def done(self) -> bool:
        """Whether every wanted rank is found."""
        return all(t.found is not None for ts in self.targets.values() for t in ts)

    def counts(self, col: Hashable, scores: np.ndarray) -> PassCounts:
        """Return what this pass collects from one chunk of a column's scores."""
        out = PassCounts()
        pending = [t for t in self.targets.get(col, ()) if t.found is None]
        if not pending:
            return out
        if any(t.stage == "level1" for t in pending):
            out.level1 = level1_counts(scores, self.level1)
            return out
        keys = keys_of(scores)
        ranges = sorted({(t.lo, t.hi, t.stage) for t in pending})
        los = np.array([r[0] for r in ranges], dtype=np.uint64)
        which = np.searchsorted(los, keys, side="right") - 1
        for j, (lo, hi, stage) in enumerate(ranges):
            sel = keys[(which == j) & (keys < np.uint64(hi))] if hi < 1 << 64 else keys[which == j]
            if stage == "refine":
                shift = _shift(lo, hi)
                sub = ((sel - np.uint64(lo)) >> np.uint64(shift)).astype(np.int64)
                out.refine[(lo, hi)] = np.bincount(sub, minlength=REFINE)
            else:
                values, counts = np.unique(sel, return_counts=True)
                out.gather[(lo, hi)] = (values, counts.astype(np.int64))
        return out

    def update(self, col: Hashable, counts: PassCounts) -> None:
        """Narrow the column's targets with what a whole pass collected."""
        for t in self.targets.get(col, ()):
            if t.found is not None:
                continue
            if t.stage == "level1":
                assert counts.level1 is not None
                cum = np.cumsum(counts.level1)
                j = int(np.searchsorted(cum, t.rank, side="right"))
                t.below = int(cum[j - 1]) if j > 0 else 0
                size1 = counts.level1.shape[0]
                t.lo = int(keys_of(np.array([j / size1]))[0])
                t.hi = int(keys_of(np.array([(j + 1) / size1]))[0]) if j + 1 < size1 else 1 << 64
                size = int(counts.level1[j])
            elif t.stage == "refine":
                sub = counts.refine[(t.lo, t.hi)]
                cum = np.cumsum(sub)
                j = int(np.searchsorted(cum, t.rank - t.below, side="right"))
                shift = _shift(t.lo, t.hi)
                t.below += int(cum[j - 1]) if j > 0 else 0
                t.lo, t.hi = t.lo + (j << shift), min(t.hi, t.lo + ((j + 1) << shift))
                size = int(sub[j])
            else:
                values, cnt = counts.gather[(t.lo, t.hi)]
                cum = np.cumsum(cnt)
                j = int(np.searchsorted(cum, t.rank - t.below, side="right"))
                less = t.below + (int(cum[j - 1]) if j > 0 else 0)
                value = float(values[j : j + 1].view(np.float64)[0])
                t.found = Found(value, less, int(cnt[j]))
                continue
            t.stage = "gather" if size <= GATHER_MAX or t.hi - t.lo <= 1 else "refine"

    def found(self, col: Hashable) -> dict[int, Found]:
        """Return rank → :class:`Found` for a column (after :attr:`done`)."""
        return {t.rank: t.found for t in self.targets[col] if t.found is not None}


def level1_counts(scores: np.ndarray, size: int = LEVEL1) -> np.ndarray:
    """Return the first histogram of a chunk of scores: ``floor(s · size)`` (``size = 2^j``)."""
    idx = np.minimum((np.asarray(scores, dtype=np.float64) * size).astype(np.int64), size - 1)
    return np.bincount(idx, minlength=size)


def level1_size(columns: int) -> int:
    """First-histogram buckets per column when ``columns`` columns are searched at once."""
    return max(1 << 10, LEVEL1 >> max(0, (int(columns) - 1).bit_length()))


def _shift(lo: int, hi: int) -> int:
    """Bits to drop so that ``[lo, hi)`` maps onto at most ``REFINE`` sub-buckets."""
    width = hi - lo
    return max(0, (width - 1).bit_length() - REFINE.bit_length() + 1)
