"""Cell statistics: an analysis's sufficient statistics, and the bootstrap that runs on them.

Rows with the same bin in every lens component and the same outcome(s) form a **cell**. A cell
keeps its row count, and per component the sum and the sum of squares of its scores, and per
score (accuracy, Brier, log loss) the sum and the sum of squares of the per-row values. These
are sums, so the cells of two chunks of data merge by adding (:meth:`CellStats.__add__`): the
streamed and distributed engines build the same cells batch by batch, and every number computed
from cells is the same whatever the batching.

From the cells come the bin statistics of every component (:meth:`CellStats.component_bins`),
the value of every estimator whose kernel reads bin statistics, the scores, and **the cell
bootstrap** (:func:`cell_bootstrap`), the fast scheme for large ``n``:

- An exact bootstrap resample draws ``n`` rows with replacement, so the number of draws from
  each cell is exactly ``Multinomial(n, cell shares)``; the cell bootstrap draws exactly these
  counts, so every resample's bin counts and outcome sums (of every component at once) have the
  exact bootstrap's law.
- Given a cell's resampled count ``c``, its resampled score sum is a sum of ``c`` draws from the
  cell's scores; it is drawn as ``Normal(c·m, c·v)`` with the cell's mean ``m`` and variance ``v``
  (central limit theorem: exact mean and variance, a normal shape). Scores of one bin lie within
  the bin, so this term's share of the estimator's variance is small; per-row score values
  (Brier, log loss) are drawn the same way. A bin's sum of squares (the ℓ2 spread of its
  scores) moves with its score sum to first order: ``Q = c·E[s²] + 2·m_b·ε`` for the score
  sum's normal term ``ε``.
- The cost is ``O(R · cells)`` instead of ``O(R · n)``. The equal-mass bins of the full sample are
  held fixed (the exact bootstrap re-bins each resample by rank), which the result's path says.

Estimators supported: those whose kernel reads bin statistics (``statistics="bins"``), and those
reading the spread of the scores in a bin at ℓ2 (through the sums of squares); the others (ℓ1 and
ℓ∞ label-binned, the sweep, kernel estimators) need the rows and take the exact bootstrap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.binning import BinStats
from core.estimators.base import KernelContext, NormalStream

#: Cell codes counted densely (a ``bincount``) rather than by sorting, up to this many.
DENSE_CODES = 1 << 22

#: Multinomial counts (resamples × cells) drawn at once.
CHUNK_CELLS = 2**22


@dataclass(frozen=True, eq=False)
class CellStats:
    """Rows grouped into cells of equal bins and outcomes, with their sums (see the module).

    Attributes
    ----------
    lens, binning : str
        How the rows were binned.
    n_bins : int
        The number of bins asked for.
    edges : tuple of numpy.ndarray
        Each component's bin edges.
    names : tuple of str
        Component names.
    weights : numpy.ndarray
        Component weights.
    bins : numpy.ndarray
        ``(D, C)`` bin of each cell in each component.
    outcomes : numpy.ndarray
        ``(D, C)`` outcome (0 or 1) of each cell in each component.
    counts : numpy.ndarray
        ``(D,)`` int64 rows per cell.
    score_sums, score_squares : numpy.ndarray
        ``(D, C)`` sums of the scores and of their squares.
    row_sums, row_squares : dict of str to numpy.ndarray
        Per score name, ``(D,)`` sums of its per-row values and of their squares.
    """

    lens: str
    binning: str
    n_bins: int
    edges: tuple[np.ndarray, ...]
    names: tuple[str, ...]
    weights: np.ndarray
    bins: np.ndarray
    outcomes: np.ndarray
    counts: np.ndarray
    score_sums: np.ndarray
    score_squares: np.ndarray
    row_sums: dict[str, np.ndarray] = field(default_factory=dict)
    row_squares: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.counts.sum())

    @property
    def n_cells(self) -> int:
        """Number of cells ``D``."""
        return int(self.counts.shape[0])

    def component_bins(self, c: int) -> BinStats:
        """Return component ``c``'s bin statistics (those of the rows it was built from)."""
        b = self.edges[c].shape[0] - 1
        idx = self.bins[:, c]
        return BinStats(
            self.edges[c],
            np.bincount(idx, weights=self.counts, minlength=b).astype(np.int64),
            np.bincount(idx, weights=self.score_sums[:, c], minlength=b),
            np.bincount(idx, weights=self.counts * self.outcomes[:, c], minlength=b),
            self.binning,
        )

    def score_value(self, name: str) -> float:
        """Return a score (mean of its per-row values) over all rows."""
        return float(self.row_sums[name].sum() / self.n)

    def __add__(self, other: object) -> CellStats:
        """Merge the cells of two disjoint chunks of rows binned on the same edges."""
        if not isinstance(other, CellStats):
            return NotImplemented
        same = (
            self.lens == other.lens
            and self.binning == other.binning
            and len(self.edges) == len(other.edges)
            and all(np.array_equal(a, b) for a, b in zip(self.edges, other.edges, strict=True))
            and set(self.row_sums) == set(other.row_sums)
        )
        if not same:
            from core.errors import ConfigError

            raise ConfigError(
                "Only cells of the same lens, binning and edges can be merged; bin every chunk "
                "with the same edges."
            )
        keys = np.concatenate([_keys(self), _keys(other)])
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        d = uniq.shape[0]
        c = self.bins.shape[1]

        def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            both = np.concatenate([a, b])
            if both.ndim == 1:
                return np.bincount(inverse, weights=both, minlength=d)
            return np.stack(
                [
                    np.bincount(inverse, weights=both[:, j], minlength=d)
                    for j in range(both.shape[1])
                ],
                axis=1,
            )

        return CellStats(
            self.lens,
            self.binning,
            self.n_bins,
            self.edges,
            self.names,
            self.weights,
            uniq[:, :c].astype(np.intp),
            uniq[:, c:].astype(np.int8),
            add(self.counts, other.counts).round().astype(np.int64),
            add(self.score_sums, other.score_sums),
            add(self.score_squares, other.score_squares),
            {k: add(self.row_sums[k], other.row_sums[k]) for k in self.row_sums},
            {k: add(self.row_squares[k], other.row_squares[k]) for k in self.row_squares},
        )

    def __radd__(self, other: object) -> CellStats:
        # lets ``sum(list_of_cells)`` start from 0
        if isinstance(other, int) and other == 0:
            return self
        return NotImplemented


def _keys(cells: CellStats) -> np.ndarray:
    return np.concatenate([cells.bins, cells.outcomes.astype(np.intp)], axis=1)


def cells_of(view: Any, row_values: Mapping[str, np.ndarray] | None = None) -> CellStats:
    """Group the rows of a binned view into cells.

    Parameters
    ----------
    view : core.binned_view.BinnedView
        The binned lens components (each row's bin and outcome in every component).
    row_values : mapping of str to numpy.ndarray, optional
        Per score name, the per-row values whose mean is the score.

    Returns
    -------
    CellStats
        The cells, in ascending order of their keys (the same for any batching).
    """
    comps = view.components
    columns = [comp.index for comp in comps] + [comp.outcomes for comp in comps]
    radices = [comp.n_bins for comp in comps] + [2] * len(comps)
    code = _pack(columns, radices)
    space = int(np.prod(np.asarray(radices, dtype=np.float64))) if code is not None else 0
    if code is not None and space <= max(DENSE_CODES, 4 * code.shape[0]):
        # few possible cells: count them densely, no sort
        present = np.bincount(code, minlength=space) > 0
        uniq = np.flatnonzero(present)
        lookup = np.cumsum(present) - 1
        inverse = lookup[code]
        keys = _unpack(uniq, radices)
    elif code is not None:
        uniq, inverse = np.unique(code, return_inverse=True)
        keys = _unpack(uniq, radices)
    else:  # too many components to pack into one integer
        stacked = np.stack([np.asarray(col, dtype=np.intp) for col in columns], axis=1)
        keys, inverse = np.unique(stacked, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    d = keys.shape[0]
    counts = np.bincount(inverse, minlength=d).astype(np.int64)
    score_sums = np.empty((d, len(comps)))
    score_squares = np.empty((d, len(comps)))
    for c, comp in enumerate(comps):
        score_sums[:, c] = np.bincount(inverse, weights=comp.scores, minlength=d)
        score_squares[:, c] = np.bincount(inverse, weights=comp.scores * comp.scores, minlength=d)
    sums, squares = {}, {}
    for name, values in (row_values or {}).items():
        sums[name] = np.bincount(inverse, weights=values, minlength=d)
        squares[name] = np.bincount(inverse, weights=values * values, minlength=d)
    c = len(comps)
    return CellStats(
        view.lens,
        view.binning,
        view.n_bins,
        tuple(comp.edges for comp in comps),
        tuple(view.names),
        np.asarray(view.weights, dtype=np.float64),
        keys[:, :c].astype(np.intp),
        keys[:, c:].astype(np.int8),
        counts,
        score_sums,
        score_squares,
        sums,
        squares,
    )


def _pack(columns: list[Any], radices: list[int]) -> np.ndarray | None:
    total = 1.0
    for r in radices:
        total *= max(int(r), 1)
    if total >= 2.0**62:
        return None
    code = np.zeros(np.shape(columns[0])[0], dtype=np.int64)
    for col, r in zip(columns, radices, strict=True):
        code *= int(r)
        code += np.asarray(col, dtype=np.int64)
    return code


def _unpack(code: np.ndarray, radices: list[int]) -> np.ndarray:
    out = np.empty((code.shape[0], len(radices)), dtype=np.int64)
    rest = code.copy()
    for j in range(len(radices) - 1, -1, -1):
        out[:, j] = rest % radices[j]
        rest //= radices[j]
    return out


# --------------------------------------------------------------------------- the bootstrap


class CellBatch:
    """The :class:`~core.estimators.base.BinBatch` of one component for resampled cells.

    Counts and outcome sums are those of the resampled cells; score sums add a normal term
    per bin (see the module docstring); sums of squares (ℓ2 spread) take their mean.
    """

    def __init__(
        self,
        cells: CellStats,
        c: int,
        draws: np.ndarray,
        rng: np.random.Generator,
    ) -> None:
        b = cells.edges[c].shape[0] - 1
        onehot = np.zeros((cells.n_cells, b))
        onehot[np.arange(cells.n_cells), cells.bins[:, c]] = 1.0
        counts = cells.counts.astype(np.float64)
        safe = np.where(counts > 0, counts, 1.0)
        mean = cells.score_sums[:, c] / safe
        var = _variance(cells.score_squares[:, c] / safe, mean)
        self.counts = draws @ onehot
        self.label_sums = (draws * cells.outcomes[:, c]) @ onehot
        spread = np.sqrt((draws * var) @ onehot)
        noise = spread * rng.standard_normal(spread.shape)
        center = (draws * mean) @ onehot
        self.score_sums = center + noise
        center /= np.maximum(self.counts, 1.0)
        # the sum of squares moves with the score sum (s² − m² ≈ 2m(s − m)): drawn apart, a
        # bin's spread Σ(s − c)² would take the score sum's noise undamped
        self._squares = (draws * (cells.score_squares[:, c] / safe)) @ onehot + 2.0 * center * noise

    def score_deviation(self, center: np.ndarray, norm: float) -> np.ndarray:
        """``Σ (s − c_b)²`` per bin from the sums of squares (ℓ2 only: ℓ1 and ℓ∞ need rows)."""
        if norm != 2.0:
            raise NotImplementedError("the cell bootstrap has the spread of a bin's scores at ℓ2")
        dev = self._squares - 2.0 * center * self.score_sums + self.counts * center * center
        return np.maximum(dev, 0.0)  # a sum of squares, below 0 only by rounding


def supports(info: Any, norm: float) -> bool:
    """Whether an estimator's kernel can read resampled cells (see the module docstring)."""
    return info.binned and (
        info.statistics == "bins" or (info.statistics == "scores-in-bins" and norm == 2.0)
    )


def cell_bootstrap(
    cells: CellStats,
    statistics: Mapping[str, Any],
    *,
    n_resamples: int,
    seed: int,
    est_seed: int = 0,
) -> dict[str, np.ndarray]:
    """Bootstrap distributions of statistics of the cells, on common resampled cells.

    Parameters
    ----------
    cells : CellStats
        The data's cells.
    statistics : mapping
        Key → an :class:`core.calibration.EstimatorCall` (an estimator :func:`supports`
        reads) or a score name (a key of ``cells.row_sums``).
    n_resamples : int
        Number of resamples.
    seed : int
        Seed of the resampled cell counts (and of the normal terms).
    est_seed : int, default=0
        The seed a random estimator gets on every resample (as in the exact bootstrap).

    Returns
    -------
    dict
        Key → ``(n_resamples,)`` values.
    """
    rng = np.random.default_rng(seed)
    n = cells.n
    shares = cells.counts / n
    chunk = max(1, CHUNK_CELLS // max(cells.n_cells, 1))
    out = {key: np.empty(n_resamples) for key in statistics}
    streams = {key: NormalStream(est_seed) for key in statistics}
    done = 0
    while done < n_resamples:
        r = min(chunk, n_resamples - done)
        draws = rng.multinomial(n, shares, size=r).astype(np.float64)
        batches = [CellBatch(cells, c, draws, rng) for c in range(len(cells.names))]
        for key, stat in statistics.items():
            if isinstance(stat, str):
                out[key][done : done + r] = _score_draws(cells, stat, draws, rng)
                continue
            ctx = KernelContext(stat.options, streams[key], np.zeros(r, dtype=np.int64))
            per = np.empty((r, len(batches)))
            for c, batch in enumerate(batches):
                value = stat.info.kernel(batch, stat.norm, ctx)
                per[:, c] = value[0] if isinstance(value, tuple) else value
            out[key][done : done + r] = stat.info.combine(per, cells.weights, stat.norm)
        done += r
    return out


def _score_draws(
    cells: CellStats, name: str, draws: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    counts = cells.counts.astype(np.float64)
    safe = np.where(counts > 0, counts, 1.0)
    mean = cells.row_sums[name] / safe
    var = _variance(cells.row_squares[name] / safe, mean)
    total = draws @ mean + np.sqrt(draws @ var) * rng.standard_normal(draws.shape[0])
    return total / cells.n


def _variance(mean_square: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Return ``E[s²] − E[s]²``, with differences within rounding of ``E[s²]`` set to 0.

    A cell of equal values (always so with the discrete binning) has variance 0; computed
    from sums its variance is rounding noise whose size depends on the order of the sums
    (the batching), so it is cut off at a few ulps of ``E[s²]``.
    """
    var = mean_square - mean * mean
    return np.where(var > 64 * np.finfo(np.float64).eps * mean_square, var, 0.0)


#: ``progress(fraction, message)``; see :func:`cell_bootstrap`.
Progress = Callable[[float, str], Any]
