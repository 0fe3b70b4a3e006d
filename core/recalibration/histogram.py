"""Histogram-binning recalibrators: UMD, UMS, the original Zadrozny–Elkan, fixed-width.

All four map a score to the mean calibration label of its bin (Gupta & Ramdas 2021).

- **UMD** (uniform-mass, double dipping; Algorithm 1): sort the ``n`` scores; bin
  boundaries are the order statistics at ranks ``A_b = ⌈b(n+1)/B⌉`` (integer
  arithmetic ``(b(n+1) + B - 1) // B``); bin ``b`` is ``[S_(A_{b-1}), S_(A_b))`` with
  the last bin closed at 1; its value is the mean of the labels strictly between
  the two boundary order statistics (the ``B - 1`` boundary labels are not used).
  Needs ``n >= 2B``; every bin then averages at least ``⌊n/B⌋ - 1`` labels.
- **Zadrozny–Elkan**: as UMD, but bin ``b < B`` also averages the label of its upper
  boundary point (Corollary 1's variant).
- **UMS** (uniform-mass with sample splitting): a seeded random ``split_fraction`` of
  the rows fixes the boundaries by the same ranks; the other rows give the bin means
  (all of them; an empty bin falls back to the pooled mean and is reported).
- **fixed-width**: bins ``[k/B, (k+1)/B)``, the last closed at 1; an empty bin falls
  back to its midpoint and is reported.

Ties: with ``tie_break="random"`` (default) scores are ordered by ``(score, U)``
with ``U`` uniform, the exact δ → 0 limit of the randomized UMD (Algorithm 2); a
new score equal to a boundary score draws a fresh ``U`` and is compared
lexicographically, so tied mass is split between adjacent bins as at fit time.
``unique_values=True`` adds Algorithm 2's jitter ``(Π̂ + δV)/(1 + δ)``, δ = 1e-10,
so bin values are distinct. Multiclass rows are renormalised as described in
:mod:`core.recalibration.base`.

Cost: uniform-mass fits locate only the ``B - 1`` boundary order statistics of each
component (``numpy.argpartition``, linear time) and bin only the rows with a non-zero
label (one per row in the classwise one-vs-rest case); the full ``(score, key)`` sort
is made only for a component whose boundary score is tied. Fixed-width bins of all
components are counted with one ``searchsorted`` and ``bincount`` per block of components.
Classwise components are fitted and applied by a small thread pool, with every random
number drawn in component order in the calling thread (so results do not depend on the
number of threads); at prediction a component's new keys are drawn only when one of its
scores ties with a boundary (:class:`DeferredUniforms`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.random import Generator

from core.base.errors import ConfigError, FitError
from core.base.numeric import FEW_EDGES, count_edges
from core.recalibration.base import (
    Component,
    ComponentFit,
    OneDimRecalibrator,
    register,
)
from core.stats.binning import check_n_bins

#: Algorithm 2's δ for the optional bin-value jitter.
JITTER_DELTA = 1e-10


def umd_ranks(n: int, n_bins: int) -> np.ndarray:
    """Return the boundary ranks ``A_0 = 0, A_b = ⌈b(n+1)/B⌉, A_B = n + 1`` exactly.

    Parameters
    ----------
    n : int
        Number of calibration scores.
    n_bins : int
        Number of bins ``B``.

    Returns
    -------
    numpy.ndarray
        ``(B + 1,)`` int64 ranks (1-based order-statistic indices).

    Examples
    --------
    >>> umd_ranks(10, 3).tolist()
    [0, 4, 8, 11]
    """
    b = np.arange(1, n_bins, dtype=np.int64)
    inner = (b * (n + 1) + n_bins - 1) // n_bins  # integer ceiling: float ceil is wrong (E10)
    return np.concatenate([[0], inner, [n + 1]]).astype(np.int64)


def lexicographic_bins(
    edge_s: np.ndarray,
    edge_u: np.ndarray | None,
    s: np.ndarray,
    u: np.ndarray | DeferredUniforms | None,
) -> np.ndarray:
    """Bin index = number of boundaries ``e`` with ``e <= (s, u)`` (left-closed bins).

    Boundaries are ``(score, key)`` pairs sorted lexicographically; without keys
    the comparison is on the score alone. The keys ``u`` of the scores are read only
    where a score equals a boundary score (they may be :class:`DeferredUniforms`).
    """
    hi = count_edges(edge_s, s, "right")
    if edge_u is None or u is None:
        return hi
    # rows whose score equals one or more boundary scores (the last edge <= s equals s)
    tied = np.flatnonzero(edge_s[np.maximum(hi - 1, 0)] == s)
    tied = tied[hi[tied] > 0]
    out = hi.copy()
    if tied.size:
        # count tied boundaries with key <= u instead of all of them
        lo = np.searchsorted(edge_s, s[tied], side="left")
        starts, stops = lo, hi[tied]
        span = stops - starts
        rep = np.repeat(np.arange(tied.size), span)
        offs = np.arange(span.sum()) - np.repeat(np.cumsum(span) - span, span)
        idx = np.repeat(starts, span) + offs
        hit = edge_u[idx] <= np.repeat(u[tied], span)
        out[tied] = lo + np.bincount(rep, weights=hit, minlength=tied.size).astype(np.int64)
    return out


def bin_means(sums: np.ndarray, counts: np.ndarray, empty: Any) -> tuple[np.ndarray, int]:
    """Return the mean of every bin (``empty`` where a bin has no rows) and how many are empty.

    Parameters
    ----------
    sums, counts : numpy.ndarray
        Sum of the values and number of rows of every bin.
    empty : float or numpy.ndarray
        Value of an empty bin (or of every bin, where it is empty).

    Returns
    -------
    means : numpy.ndarray
        Bin values.
    n_empty : int
        Number of bins without rows.
    """
    return np.where(counts > 0, sums / np.maximum(counts, 1), empty), int((counts == 0).sum())


class DeferredUniforms:
    """The next ``n`` uniforms of a generator, drawn only if some of them are read.

    :func:`deferred_uniforms` records the generator's state and advances it past ``n``
    draws, exactly as ``rng.random(n)`` would; indexing draws the ``n`` values from the
    recorded state, so they are the very values ``rng.random(n)`` would have returned.
    New scores need their key only when they tie with a bin boundary, so most
    components never draw (``rng.random`` would cost a pass and a fresh buffer each).
    """

    __slots__ = ("_kind", "_state", "_values", "n")

    def __init__(self, kind: type, state: dict[str, Any], n: int) -> None:
        self._kind = kind
        self._state = state
        self._values: np.ndarray | None = None
        self.n = n

    def __getitem__(self, index: Any) -> np.ndarray:
        if self._values is None:
            bit_generator = self._kind()
            bit_generator.state = self._state
            self._values = np.random.Generator(bit_generator).random(self.n)
        return self._values[index]


def deferred_uniforms(rng: Generator, n: int) -> DeferredUniforms | np.ndarray:
    """``rng.random(n)``, deferred when the generator can skip ahead exactly.

    A float64 uniform consumes exactly one 64-bit output, so advancing a PCG64-family
    generator by ``n`` leaves it where ``rng.random(n)`` would; ``advance`` also drops
    a buffered 32-bit half, so the draw is made at once when one is pending.
    """
    bit_generator = rng.bit_generator
    state = bit_generator.state
    if not hasattr(bit_generator, "advance") or state.get("has_uint32", 0):
        return rng.random(n)
    bit_generator.advance(n)
    return DeferredUniforms(type(bit_generator), state, n)


class _HistogramBinning(OneDimRecalibrator):
    uses_log_odds = False

    def __init__(
        self,
        *,
        n_bins: int = 10,
        lens: str = "auto",
        tie_break: str = "random",
        unique_values: bool = False,
        seed: int | None = 0,
    ) -> None:
        if tie_break not in ("random", "none"):
            raise ConfigError(f"tie_break must be 'random' or 'none'; got {tie_break!r}.")
        self.n_bins = check_n_bins(n_bins)
        self.lens = self._check_lens(lens)
        self.tie_break = tie_break
        self.unique_values = bool(unique_values)
        self.seed = seed

    def _keys(self, n: int, rng: Generator) -> np.ndarray | None:
        """Tie-break keys ``U`` of ``n`` scores (None without random tie-breaking)."""
        return rng.random(n) if self.tie_break == "random" else None

    @staticmethod
    def _full_order(s: np.ndarray, u: np.ndarray | None) -> np.ndarray:
        """Order of the scores by ``(score, U)`` (random tie-break) or ``(score, row)``."""
        order = np.argsort(s, kind="stable")
        if u is not None:
            ss = s[order]
            if (ss[1:] == ss[:-1]).any():  # keys matter only among tied scores
                order = np.lexsort((u, s))
        return order

    @classmethod
    def _select(
        cls, s: np.ndarray, u: np.ndarray | None, kpos: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Rows at the 0-based positions ``kpos`` (ascending) of the tie-broken order.

        One ``partition`` (linear time) finds the order statistics. When each of
        their values occurs once among the scores, those rows are exactly the rows of
        the full ``(score, key)`` order, and the second value returned is None: a row's
        position relative to a boundary is then decided by its score alone. Otherwise
        (ties at a boundary) the full order is computed as before, and the second
        value is the position of every row in it. With at most ``FEW_EDGES``
        boundaries the rows are found by comparing the scores with each boundary value
        (a value partition is cheaper than an index partition); with more, by
        ``argpartition``.
        """
        if kpos.size == 0:  # one bin: no boundary
            return kpos.astype(np.int64), None
        if kpos.size <= FEW_EDGES:
            edges = np.partition(s, kpos)[kpos]
            if not (edges[1:] == edges[:-1]).any():
                hit = np.empty(s.shape, dtype=bool)
                found = []
                for e in edges:
                    np.equal(s, e, out=hit)
                    found.append(np.flatnonzero(hit))
                if all(f.size == 1 for f in found):
                    return np.concatenate(found), None
        else:
            rows = np.argpartition(s, kpos)[kpos]
            edges = s[rows]
            if not (edges[1:] == edges[:-1]).any():
                at = np.searchsorted(edges, s, side="left")
                hit = edges[np.minimum(at, edges.size - 1)] == s
                if np.count_nonzero(hit) == edges.size:
                    return rows, None
        order = cls._full_order(s, u)
        position = np.empty(s.size, dtype=np.int64)
        position[order] = np.arange(s.size)
        return order[kpos], position

    def _uniform_mass(
        self,
        s: np.ndarray,
        t: np.ndarray,
        u: np.ndarray | None,
        *,
        boundary_labels: bool,
    ) -> dict[str, Any]:
        """Algorithm 1 (``boundary_labels=False``) or the Z&E variant (``True``).

        ``u`` holds the tie-break keys of the scores (None without random tie-breaking).

        Only the ``B - 1`` boundary order statistics are located (linear-time selection,
        :meth:`_select`); the label sum of each bin is then taken over the rows with a
        non-zero label, binned by comparison with the boundaries. This equals the
        cumulative sums over the fully sorted labels.
        """
        n, nb = s.size, self.n_bins
        if n < 2 * nb:
            raise FitError(
                f"Uniform-mass histogram binning needs at least 2 rows per bin (n >= 2B): "
                f"{n} rows for {nb} bins. Use at most {max(n // 2, 1)} bins or more rows."
            )
        a = umd_ranks(n, nb)
        lo = a[:-1]
        hi = a[1:] - 1  # ranks lo+1 .. hi (1-based) = 0-based slice [lo, hi)
        if boundary_labels:
            hi = np.minimum(a[1:], n)
        counts = hi - lo
        inner = a[1:-1] - 1  # 0-based positions of the boundary points
        rows, position = self._select(s, u, inner)
        nz = np.flatnonzero(t)
        if inner.size == 0:
            b = np.zeros(nz.size, dtype=np.int64)
            boundary = np.zeros(nz.size, dtype=bool)
        elif position is None:  # boundary values are unique: compare scores
            b = np.searchsorted(s[rows], s[nz], side="left")
            boundary = rows[np.minimum(b, rows.size - 1)] == nz
        else:
            p = position[nz]
            b = np.searchsorted(inner, p, side="left")
            boundary = inner[np.minimum(b, inner.size - 1)] == p
        if inner.size:
            boundary &= b < inner.size
        keep = slice(None) if boundary_labels else ~boundary
        sums = np.bincount(b[keep], weights=t[nz][keep], minlength=nb)
        return {
            "edges": s[rows],
            "edge_keys": u[rows] if u is not None else None,
            "values": sums / counts,
            "counts": counts,
        }

    def _jitter(self, rng: Generator) -> np.ndarray | None:
        """Algorithm 2's jitter ``V`` of the bin values (None without ``unique_values``)."""
        return rng.random(self.n_bins) if self.unique_values else None

    def _finish(self, vals: dict[str, Any], v: np.ndarray | None) -> dict[str, Any]:
        if v is not None:
            vals["values"] = (vals["values"] + JITTER_DELTA * v) / (1.0 + JITTER_DELTA)
        if vals.get("edge_keys") is None:
            vals.pop("edge_keys", None)
        return vals

    def _fit_draws(self, n: int, rng: Generator) -> tuple[Any, ...]:
        return (self._keys(n, rng), self._jitter(rng))

    def _apply_draws(self, c: Component, n: int, rng: Generator) -> Any:
        # a new score needs its key only when it ties with a boundary (DeferredUniforms)
        return deferred_uniforms(rng, n) if c.get("edge_keys") is not None else None

    def _apply_component(
        self, c: Component, s: np.ndarray, lo: np.ndarray, draws: Any
    ) -> np.ndarray:
        edges = np.atleast_1d(np.asarray(c["edges"], dtype=np.float64))
        keys = c.get("edge_keys")
        if keys is not None:
            keys = np.atleast_1d(np.asarray(keys, dtype=np.float64))
        idx = lexicographic_bins(edges, keys, s, draws)
        return np.atleast_1d(c["values"])[idx]


class _UniformMassNoSplit(_HistogramBinning):
    """Uniform-mass bins and bin means from the same rows (UMD and Zadrozny–Elkan)."""

    #: Whether each bin's upper boundary point is averaged too (Zadrozny–Elkan).
    boundary_labels: ClassVar[bool] = False

    def _fit_component(
        self, s: np.ndarray, lo: np.ndarray, t: np.ndarray, draws: tuple[Any, ...]
    ) -> ComponentFit:
        u, v = draws
        fit = self._uniform_mass(s, t, u, boundary_labels=self.boundary_labels)
        return self._finish(fit, v), []


@register(
    "histogram-umd",
    label="Histogram binning (UMD)",
    description="Uniform-mass bins from the calibration rows themselves (no sample splitting); "
    "bin value = mean label strictly inside the bin. Distribution-free guarantee.",
    formula="Gupta & Ramdas 2021, Algorithm 1 / Theorem 3",
    family="binning",
    discrete_output=True,
    min_rows_per_bin=2,
)
class HistogramUMD(_UniformMassNoSplit):
    """Uniform-mass histogram binning without sample splitting (UMD).

    Parameters
    ----------
    n_bins : int, default 10
        Number of bins ``B``.
    lens : {"auto", "binary", "top-label", "classwise"}
        ``auto`` is ``binary`` for two classes, else ``classwise``.
    tie_break : {"random", "none"}
        Order tied scores by a seeded uniform key (default) or keep ties together.
    unique_values : bool, default False
        Jitter bin values by 1e-10 so they are distinct (Algorithm 2, lines 14-15).
    seed : int or None
        Seed of the tie-break keys and the jitter; None means 0.
    """


@register(
    "histogram-ze",
    label="Histogram binning (Zadrozny–Elkan)",
    description="The original uniform-mass histogram binning: as UMD, but each bin's upper "
    "boundary point is averaged too.",
    formula="Zadrozny & Elkan 2001; Gupta & Ramdas 2021, Corollary 1",
    family="binning",
    discrete_output=True,
    min_rows_per_bin=2,
)
class HistogramZE(_UniformMassNoSplit):
    """Original Zadrozny–Elkan histogram binning (boundary labels averaged).

    Parameters
    ----------
    n_bins, lens, tie_break, unique_values, seed
        As for :class:`HistogramUMD`.
    """

    boundary_labels = True


@register(
    "histogram-ums",
    label="Histogram binning (UMS, split)",
    description="Uniform-mass bins from one part of the calibration rows, bin means from the other.",
    formula="Gupta et al. 2020; Gupta & Ramdas 2021 §2.5",
    family="binning",
    discrete_output=True,
    min_rows_per_bin=2,
)
class HistogramUMS(_HistogramBinning):
    """Uniform-mass histogram binning with sample splitting (UMS).

    Parameters
    ----------
    n_bins, lens, tie_break, unique_values
        As for :class:`HistogramUMD`.
    seed : int or None
        Seed of the split, the tie-break keys and the jitter; None means 0.
    split_fraction : float, default 0.5
        Share of the calibration rows that fixes the bin boundaries.
    """

    def __init__(
        self,
        *,
        n_bins: int = 10,
        lens: str = "auto",
        tie_break: str = "random",
        unique_values: bool = False,
        seed: int | None = 0,
        split_fraction: float = 0.5,
    ) -> None:
        super().__init__(
            n_bins=n_bins, lens=lens, tie_break=tie_break, unique_values=unique_values, seed=seed
        )
        if not 0 < float(split_fraction) < 1:
            raise ConfigError(f"split_fraction must lie in (0, 1); got {split_fraction!r}.")
        self.split_fraction = float(split_fraction)

    def _split_sizes(self, n: int) -> tuple[int, int]:
        n1 = int(round(self.split_fraction * n))
        nb = self.n_bins
        if n1 < nb or n - n1 < nb:
            raise FitError(
                f"UMS needs at least B = {nb} rows in each part of the split; got {n1} and {n - n1}."
            )
        return n1, n - n1

    def _fit_draws(self, n: int, rng: Generator) -> tuple[Any, ...]:
        n1, n2 = self._split_sizes(n)
        perm = rng.permutation(n)
        u1 = self._keys(n1, rng)
        u2 = rng.random(n2) if u1 is not None else None
        return perm, u1, u2, self._jitter(rng)

    def _fit_component(
        self, s: np.ndarray, lo: np.ndarray, t: np.ndarray, draws: tuple[Any, ...]
    ) -> ComponentFit:
        nb = self.n_bins
        perm, u1, u2, v = draws
        n1, _ = self._split_sizes(s.size)
        first, second = perm[:n1], perm[n1:]
        s1 = s[first]
        a = umd_ranks(n1, nb)
        rows, _ = self._select(s1, u1, a[1:-1] - 1)
        edges = s1[rows]
        keys = u1[rows] if u1 is not None else None
        s2, t2 = s[second], t[second]
        idx = lexicographic_bins(edges, keys, s2, u2)
        counts = np.bincount(idx, minlength=nb)
        sums = np.bincount(idx, weights=t2, minlength=nb)
        pooled = float(t2.mean())
        values, n_empty = bin_means(sums, counts, pooled)
        notes = []
        if n_empty:
            notes.append(
                f"{n_empty} bin(s) received no rows of the second part; "
                f"their value is the pooled mean {pooled:.4g}."
            )
        vals = {"edges": edges, "edge_keys": keys, "values": values, "counts": counts}
        return self._finish(vals, v), notes


@register(
    "histogram-fixed-width",
    label="Histogram binning (fixed width)",
    description="Equal-width bins [k/B, (k+1)/B); bin value = mean calibration label.",
    formula="Gupta & Ramdas 2021 §2.6",
    family="binning",
    discrete_output=True,
)
class HistogramFixedWidth(_HistogramBinning):
    """Fixed-width histogram binning (``tie_break`` has no effect: edges are fixed).

    Parameters
    ----------
    n_bins, lens, tie_break, unique_values, seed
        As for :class:`HistogramUMD`.
    """

    def _fit_components(
        self, scores: np.ndarray, log_odds: np.ndarray, outcomes: np.ndarray, rng: Generator
    ) -> list[ComponentFit]:
        # the edges are the same for every component: one searchsorted and two bincounts
        nb = self.n_bins
        n_comp = scores.shape[0]
        edges = (np.arange(nb + 1) / nb)[1:-1]
        counts_all = np.zeros((n_comp, nb), dtype=np.int64)
        sums_all = np.zeros((n_comp, nb))
        n = scores.shape[1]
        per = max(1, (1 << 20) // n)
        for r in range(0, n_comp, per):
            rows = slice(r, min(r + per, n_comp))
            m = rows.stop - rows.start
            idx = np.searchsorted(edges, scores[rows].ravel(), side="right")
            idx += np.repeat(np.arange(m) * nb, n)
            counts_all[rows] = np.bincount(idx, minlength=m * nb).reshape(m, nb)
            sums = np.bincount(idx, weights=outcomes[rows].ravel(), minlength=m * nb)
            sums_all[rows] = sums.reshape(m, nb)
        mid = (np.arange(nb) + 0.5) / nb
        out = []
        for counts, sums in zip(counts_all, sums_all, strict=True):
            values, n_empty = bin_means(sums, counts, mid)
            notes = []
            if n_empty:
                notes.append(f"{n_empty} of {nb} bins are empty; they output their midpoint.")
            vals = {"edges": edges, "edge_keys": None, "values": values, "counts": counts}
            out.append((self._finish(vals, self._jitter(rng)), notes))
        return out
