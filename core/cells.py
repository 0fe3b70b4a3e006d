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
- When the cells are almost as many as the rows (the classwise lens of many classes: the cells
  are the combinations of every class's bin), ``O(R · cells)`` is the exact bootstrap's cost
  again. The bin statistics are linear in the cell counts, so their mean and covariance under
  the multinomial are known from the cells; :func:`normal_batches` draws them from the normal
  law with those moments, at a cost that does not grow with the cells (:func:`cell_law`).

Estimators supported: those whose kernel reads bin statistics (``statistics="bins"``), and those
reading the spread of the scores in a bin at ℓ2 (through the sums of squares); the others (ℓ1 and
ℓ∞ label-binned, the sweep, kernel estimators) need the rows and take the exact bootstrap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core._parallel import one_blas_thread
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


class _Batch:
    """Resampled bin statistics of one component (a :class:`~core.estimators.base.BinBatch`).

    ``squares`` holds the resampled ``Σ s²`` per bin, which gives the ℓ2 spread of the scores.
    """

    def __init__(
        self,
        counts: np.ndarray,
        label_sums: np.ndarray,
        score_sums: np.ndarray,
        squares: np.ndarray,
    ) -> None:
        self.counts = counts
        self.label_sums = label_sums
        self.score_sums = score_sums
        self._squares = squares

    def score_deviation(self, center: np.ndarray, norm: float) -> np.ndarray:
        """``Σ (s − c_b)²`` per bin from the sums of squares (ℓ2 only: ℓ1 and ℓ∞ need rows)."""
        if norm != 2.0:
            raise NotImplementedError("the cell bootstrap has the spread of a bin's scores at ℓ2")
        dev = self._squares - 2.0 * center * self.score_sums + self.counts * center * center
        return np.maximum(dev, 0.0)  # a sum of squares, below 0 only by rounding


def _cell_moments(cells: CellStats, c: int) -> tuple[np.ndarray, ...]:
    """Per cell: the outcome, mean score, variance and mean square of component ``c``."""
    counts = cells.counts.astype(np.float64)
    safe = np.where(counts > 0, counts, 1.0)
    mean = cells.score_sums[:, c] / safe
    square = cells.score_squares[:, c] / safe
    return cells.outcomes[:, c].astype(np.float64), mean, _variance(square, mean), square


def _bin_sums(bins: np.ndarray, n_bins: int, columns: np.ndarray) -> np.ndarray:
    """``(K, B)`` per-bin sums of ``(K, D)`` per-cell columns: one sparse product, O(K·D)."""
    from scipy import sparse

    d = bins.shape[0]
    onehot = sparse.csr_matrix((np.ones(d), (bins, np.arange(d))), shape=(n_bins, d))
    return np.asarray((onehot @ columns.T).T)


def multinomial_batch(
    cells: CellStats, c: int, draws: np.ndarray, rng: np.random.Generator
) -> _Batch:
    """Component ``c``'s bins for multinomial cell counts ``draws`` (``(R, D)``).

    Counts and outcome sums are those of the resampled cells; score sums add a normal term
    per bin (see the module docstring); sums of squares move with it.
    """
    b = cells.edges[c].shape[0] - 1
    outcome, mean, var, square = _cell_moments(cells, c)
    r = draws.shape[0]
    stacked = np.concatenate(
        [draws, draws * outcome, draws * mean, draws * var, draws * square], axis=0
    )
    sums = _bin_sums(cells.bins[:, c], b, stacked).reshape(5, r, b)
    counts, label_sums, center, spread, squares = sums
    noise = np.sqrt(np.maximum(spread, 0.0)) * rng.standard_normal((r, b))
    center_mean = center / np.maximum(counts, 1.0)
    # the sum of squares moves with the score sum (s² − m² ≈ 2m(s − m)): drawn apart, a
    # bin's spread Σ(s − c)² would take the score sum's noise undamped
    return _Batch(counts, label_sums, center + noise, squares + 2.0 * center_mean * noise)


def supports(info: Any, norm: float) -> bool:
    """Whether an estimator's kernel can read resampled cells (see the module docstring)."""
    return info.binned and (
        info.statistics == "bins" or (info.statistics == "scores-in-bins" and norm == 2.0)
    )


#: Above this much work (resamples × cells × (components + 8)) the ``"auto"`` law of
#: :func:`cell_bootstrap` is the normal one, when that costs less: about a second here.
MULTINOMIAL_WORK = 1_000_000_000

#: Most bin statistics (``4 × bins × components + scores``) the normal law draws jointly.
NORMAL_MAX_DIM = 3000

#: The laws of the resampled cell counts (see :func:`cell_bootstrap`).
CELL_LAWS = ("auto", "multinomial", "normal")


def cell_law(cells: CellStats, n_resamples: int, n_scores: int = 0) -> str:
    """Return the law ``"auto"`` picks: ``"multinomial"`` unless it is costly and the normal cheaper.

    Parameters
    ----------
    cells : CellStats
        The cells.
    n_resamples : int
        Resamples.
    n_scores : int, default=0
        Scores bootstrapped beside the estimators.

    Returns
    -------
    str
        ``"multinomial"`` or ``"normal"``.
    """
    d, k = cells.n_cells, len(cells.names)
    dim = _dimension(cells, n_scores)
    multinomial = n_resamples * d * (k + 8.0)
    normal = d * (4.0 * k) ** 2 + dim**3 / 3.0 + n_resamples * dim * dim
    if multinomial > MULTINOMIAL_WORK and dim <= NORMAL_MAX_DIM and normal < multinomial:
        return "normal"
    return "multinomial"


def _dimension(cells: CellStats, n_scores: int) -> int:
    return 4 * sum(e.shape[0] - 1 for e in cells.edges) + n_scores


def cell_bootstrap(
    cells: CellStats,
    statistics: Mapping[str, Any],
    *,
    n_resamples: int,
    seed: int,
    est_seed: int = 0,
    law: str = "auto",
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
    law : {"auto", "multinomial", "normal"}, default="auto"
        ``"multinomial"`` draws the cell counts of every resample exactly (the module
        docstring); ``"normal"`` draws every bin statistic of every component at once from
        the normal law with the multinomial's mean and covariance (:func:`normal_batches`):
        its cost does not grow with the cells, which matters when they are as many as the
        rows (the classwise lens of many classes). ``"auto"``: :func:`cell_law`.

    Returns
    -------
    dict
        Key → ``(n_resamples,)`` values.
    """
    if law not in CELL_LAWS:
        raise ValueError(f"law must be one of {CELL_LAWS}; got {law!r}")
    scores = [s for s in statistics.values() if isinstance(s, str)]
    if law == "auto":
        law = cell_law(cells, n_resamples, len(scores))
    rng = np.random.default_rng(seed)
    out = {key: np.empty(n_resamples) for key in statistics}
    streams = {key: NormalStream(est_seed) for key in statistics}
    for done, r, batches, totals in _resampled(cells, scores, n_resamples, rng, law):
        for key, stat in statistics.items():
            if isinstance(stat, str):
                out[key][done : done + r] = totals[stat]
                continue
            ctx = KernelContext(stat.options, streams[key], np.zeros(r, dtype=np.int64))
            per = np.empty((r, len(batches)))
            for c, batch in enumerate(batches):
                value = stat.info.kernel(batch, stat.norm, ctx)
                per[:, c] = value[0] if isinstance(value, tuple) else value
            out[key][done : done + r] = stat.info.combine(per, cells.weights, stat.norm)
    return out


def _resampled(
    cells: CellStats, scores: list[str], n_resamples: int, rng: np.random.Generator, law: str
) -> Any:
    """Yield ``(start, R, batches, score values)`` for chunks of resamples."""
    if law == "normal":
        batches, totals = normal_batches(cells, scores, n_resamples, rng)
        yield 0, n_resamples, batches, totals
        return
    n = cells.n
    shares = cells.counts / n
    chunk = max(1, CHUNK_CELLS // max(cells.n_cells, 1))
    done = 0
    while done < n_resamples:
        r = min(chunk, n_resamples - done)
        draws = rng.multinomial(n, shares, size=r).astype(np.float64)
        batches = [multinomial_batch(cells, c, draws, rng) for c in range(len(cells.names))]
        totals = {s: _score_draws(cells, s, draws, rng) for s in scores}
        yield done, r, batches, totals
        done += r


def normal_batches(
    cells: CellStats, scores: list[str], n_resamples: int, rng: np.random.Generator
) -> tuple[list[_Batch], dict[str, np.ndarray]]:
    """Resampled bin statistics from the normal law with the cell multinomial's moments.

    Every bin statistic of every component — count, outcome sum, score sum and sum of squares
    per bin — and every score's total is a linear function ``T = Aᵀ N`` of the resampled
    cell counts ``N ~ Multinomial(n, c/n)``, so ``T`` has mean ``Aᵀ c`` (the data's own
    statistics) and covariance ``Aᵀ diag(c) A − (Aᵀ c)(Aᵀ c)ᵀ / n``. Draws of ``T`` from the
    normal law with these moments (the central limit theorem over the rows) replace the
    multinomial draws; the normal terms of the score sums within cells are added as in the
    multinomial law. Counts below 0 and sums outside ``[0, count]`` (possible only in bins
    of a few rows) are clipped to the nearest possible value.

    Parameters
    ----------
    cells : CellStats
        The cells.
    scores : list of str
        Scores (keys of ``cells.row_sums``) whose resampled means are drawn too.
    n_resamples : int
        Resamples.
    rng : numpy.random.Generator
        The generator.

    Returns
    -------
    batches : list
        Per component, the resampled bins (a :class:`~core.estimators.base.BinBatch`).
    totals : dict
        Score → ``(n_resamples,)`` resampled means.
    """
    from scipy import sparse

    counts = cells.counts.astype(np.float64)
    n = float(counts.sum())
    d = cells.n_cells
    rows, cols, vals, within, offsets = [], [], [], [], []
    at = 0
    cell = np.arange(d)
    for c in range(len(cells.names)):
        b = cells.edges[c].shape[0] - 1
        outcome, mean, var, square = _cell_moments(cells, c)
        bins = cells.bins[:, c]
        for j, weight in enumerate((np.ones(d), outcome, mean, square)):
            rows.append(cell)
            cols.append(at + j * b + bins)
            vals.append(weight)
        within.append(np.bincount(bins, weights=counts * var, minlength=b))
        offsets.append((at, b))
        at += 4 * b
    safe = np.where(counts > 0, counts, 1.0)
    for s in scores:
        mean = cells.row_sums[s] / safe
        rows.append(cell)
        cols.append(np.full(d, at))
        vals.append(mean)
        within.append(np.atleast_1d(counts @ _variance(cells.row_squares[s] / safe, mean)))
        at += 1
    a = sparse.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(d, at)
    )
    total = np.asarray(a.T @ counts).ravel()
    cov = (a.T @ a.multiply(counts[:, None]).tocsr()).toarray() - np.outer(total, total) / n
    with one_blas_thread():
        w, u = np.linalg.eigh((cov + cov.T) / 2.0)
        root = u * np.sqrt(np.clip(w, 0.0, None))
        t = total + rng.standard_normal((n_resamples, at)) @ root.T
    batches = []
    for c, (start, b) in enumerate(offsets):
        k = np.maximum(t[:, start : start + b], 0.0)
        label_sums = np.clip(t[:, start + b : start + 2 * b], 0.0, k)
        center = t[:, start + 2 * b : start + 3 * b]
        squares = t[:, start + 3 * b : start + 4 * b]
        noise = np.sqrt(within[c]) * rng.standard_normal((n_resamples, b))
        center_mean = center / np.maximum(k, 1.0)
        score_sums = np.clip(center + noise, 0.0, k)
        squares = np.clip(squares + 2.0 * center_mean * noise, 0.0, k)
        batches.append(_Batch(k, label_sums, score_sums, squares))
    offset = offsets[-1][0] + 4 * offsets[-1][1] if offsets else 0
    totals = {}
    for i, s in enumerate(scores):
        noise = np.sqrt(within[len(offsets) + i][0]) * rng.standard_normal(n_resamples)
        totals[s] = (t[:, offset + i] + noise) / n
    return batches, totals


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
