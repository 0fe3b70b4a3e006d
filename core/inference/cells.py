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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from core.base.errors import ConfigError
from core.base.parallel import map_ordered, one_blas_thread
from core.estimators.base import KernelContext, NormalStream
from core.stats.binning import BinStats
from core.stats.scores import SCORES


class JointNoise(Protocol):
    """Score-sum terms of several components drawn jointly (paired models' same component).

    :func:`core.inference.cells.cell_bootstrap` draws each component's term alone; the paired
    comparison (:mod:`core.inference.comparison_cells`) draws the terms of every model's same component
    together, with the within-cell covariance of their scores.
    """

    def of_bins(self, n_resamples: int, rng: np.random.Generator) -> list[np.ndarray | None]:
        """Per component, ``(R, B)`` terms at the data's cell counts (None: drawn alone).

        The normal law adds them as they are; the multinomial law scales each bin's to its
        resampled count (:func:`multinomial_batch`).
        """
        ...


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
            raise ConfigError(
                "Only cells of the same lens, binning and edges can be merged; bin every chunk "
                "with the same edges."
            )
        keys = np.concatenate([_keys(self), _keys(other)])
        # the distinct rows ascending, as numpy's unique(axis=0), packed (wide joint cells)
        radices = [int(r) + 1 for r in keys.max(axis=0, initial=0)]
        uniq, inverse = _cell_keys(list(keys.T), radices)
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
    view : core.stats.binned_view.BinnedView
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
    keys, inverse = _cell_keys(columns, radices)
    return _gather(view, keys, inverse, row_values)


def cells_by_group(
    view: Any, codes: np.ndarray, row_values: Mapping[str, np.ndarray] | None = None
) -> dict[int, CellStats]:
    """Group the rows of a binned view into cells, separately for each group of rows.

    Parameters
    ----------
    view : core.stats.binned_view.BinnedView
        The binned lens components.
    codes : numpy.ndarray
        ``(n,)`` non-negative integer group of every row.
    row_values : mapping of str to numpy.ndarray, optional
        Per score name, the per-row values whose sums the cells keep.

    Returns
    -------
    dict of int to CellStats
        Group → the cells of its rows (:func:`cells_of` of those rows), groups ascending.
    """
    codes = np.asarray(codes, dtype=np.int64)
    if codes.size == 0:
        return {}
    groups, local = np.unique(codes, return_inverse=True)
    local = local.reshape(-1)
    comps = view.components
    columns = [local] + [comp.index for comp in comps] + [comp.outcomes for comp in comps]
    radices = [groups.size] + [comp.n_bins for comp in comps] + [2] * len(comps)
    keys, inverse = _cell_keys(columns, radices)
    whole = _gather(view, keys[:, 1:], inverse, row_values)
    # keys ascend with the group first: each group's cells are one run, in their own order
    bounds = np.searchsorted(keys[:, 0], np.arange(groups.size + 1))
    out = {}
    for j, g in enumerate(groups):
        lo, hi = int(bounds[j]), int(bounds[j + 1])
        out[int(g)] = CellStats(
            whole.lens,
            whole.binning,
            whole.n_bins,
            whole.edges,
            whole.names,
            whole.weights,
            whole.bins[lo:hi],
            whole.outcomes[lo:hi],
            whole.counts[lo:hi],
            whole.score_sums[lo:hi],
            whole.score_squares[lo:hi],
            {k: v[lo:hi] for k, v in whole.row_sums.items()},
            {k: v[lo:hi] for k, v in whole.row_squares.items()},
        )
    return out


def _cell_keys(columns: list[Any], radices: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Return the distinct rows of ``columns`` ascending, and each row's position among them."""
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
        keys, inverse = _wide_keys(columns, radices)
    return keys, inverse.reshape(-1)


def _wide_keys(columns: list[Any], radices: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Return :func:`_cell_keys` of columns too many to pack into one integer.

    The same result as ``np.unique(np.stack(columns, 1), axis=0, return_inverse=True)``,
    several times faster. The columns are packed into words of under 62 bits, each in column
    order; a row's rank among the distinct rows is then built one word at a time (the rank so
    far times the word's distinct values, plus the word's own rank), which keeps the rows'
    lexicographic order.
    """
    words, group, total = [], [], 1.0
    for j, r in enumerate(radices):
        r = max(int(r), 1)
        if group and total * r >= 2.0**62:
            words.append(_pack([columns[i] for i in group], [radices[i] for i in group]))
            group, total = [], 1.0
        group.append(j)
        total *= r
    words.append(_pack([columns[i] for i in group], [radices[i] for i in group]))
    rank, size = np.zeros(np.shape(columns[0])[0], dtype=np.int64), 1
    for word in words:
        values, own = np.unique(word, return_inverse=True)
        distinct, rank = np.unique(rank * values.shape[0] + own, return_inverse=True)
        size = distinct.shape[0]
    rank = rank.reshape(-1)
    first = np.empty(size, dtype=np.intp)
    first[rank[::-1]] = np.arange(rank.shape[0] - 1, -1, -1)  # each cell's first row
    keys = np.stack([np.asarray(col, dtype=np.intp)[first] for col in columns], axis=1)
    return keys, rank


def _gather(
    view: Any,
    keys: np.ndarray,
    inverse: np.ndarray,
    row_values: Mapping[str, np.ndarray] | None,
) -> CellStats:
    """Return the cells of ``keys`` (bins, then outcomes) with the sums of their rows."""
    comps = view.components
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


class SumsBatch:
    """A :class:`~core.estimators.base.BinBatch` from bin sums, squared scores included.

    The sums of squared scores give the ℓ2 spread of a bin's scores; ℓ1 and ℓ∞ need rows.

    Parameters
    ----------
    counts, score_sums, label_sums, squares : numpy.ndarray
        ``(R, B)`` per sample and bin.
    """

    def __init__(
        self,
        counts: np.ndarray,
        score_sums: np.ndarray,
        label_sums: np.ndarray,
        squares: np.ndarray,
    ) -> None:
        self.counts = counts
        self.score_sums = score_sums
        self.label_sums = label_sums
        self._squares = squares

    def score_deviation(self, center: np.ndarray, norm: float) -> np.ndarray:
        """``Σ (s − c_b)²`` per bin from the sums of squares (ℓ2 only)."""
        if norm != 2.0:
            raise NotImplementedError("bin sums have the spread of a bin's scores at ℓ2 only")
        dev = self._squares - 2.0 * center * self.score_sums + self.counts * center * center
        return np.maximum(dev, 0.0)  # a sum of squares, below 0 only by rounding


def _cell_moments(cells: CellStats, c: int) -> tuple[np.ndarray, ...]:
    """Per cell: the outcome, mean score, variance and mean square of component ``c``."""
    counts = cells.counts.astype(np.float64)
    safe = np.where(counts > 0, counts, 1.0)
    mean = cells.score_sums[:, c] / safe
    square = cells.score_squares[:, c] / safe
    return cells.outcomes[:, c].astype(np.float64), mean, clipped_variance(square, mean), square


def _bin_sums(bins: np.ndarray, n_bins: int, columns: np.ndarray) -> np.ndarray:
    """``(K, B)`` per-bin sums of ``(K, D)`` per-cell columns: one sparse product, O(K·D)."""
    from scipy import sparse

    d = bins.shape[0]
    onehot = sparse.csr_matrix((np.ones(d), (bins, np.arange(d))), shape=(n_bins, d))
    return np.asarray((onehot @ columns.T).T)


def multinomial_batch(
    cells: CellStats,
    c: int,
    draws: np.ndarray,
    rng: np.random.Generator,
    noise: np.ndarray | None = None,
) -> SumsBatch:
    """Component ``c``'s bins for multinomial cell counts ``draws`` (``(R, D)``).

    Counts and outcome sums are those of the resampled cells; score sums add a normal term
    per bin (see the module docstring), or the given ``(R, B)`` ``noise`` (drawn jointly
    with other components'); sums of squares move with it.
    """
    b = cells.edges[c].shape[0] - 1
    outcome, mean, var, square = _cell_moments(cells, c)
    r = draws.shape[0]
    if noise is None:
        stacked = np.concatenate(
            [draws, draws * outcome, draws * mean, draws * var, draws * square], axis=0
        )
        sums = _bin_sums(cells.bins[:, c], b, stacked).reshape(5, r, b)
        counts, label_sums, center, spread, squares = sums
        noise = np.sqrt(np.maximum(spread, 0.0)) * rng.standard_normal((r, b))
    else:
        stacked = np.concatenate([draws, draws * outcome, draws * mean, draws * square], axis=0)
        counts, label_sums, center, squares = _bin_sums(cells.bins[:, c], b, stacked).reshape(
            4, r, b
        )
        # terms drawn at the data's counts follow each bin's resampled count (an empty bin
        # takes none), and its sums stay possible ones
        data = np.bincount(cells.bins[:, c], weights=cells.counts, minlength=b)
        noise = noise * np.sqrt(counts / np.where(data > 0, data, 1.0))
        center_mean = center / np.maximum(counts, 1.0)
        return SumsBatch(
            counts,
            np.clip(center + noise, 0.0, counts),
            label_sums,
            np.clip(squares + 2.0 * center_mean * noise, 0.0, counts),
        )
    center_mean = center / np.maximum(counts, 1.0)
    # the sum of squares moves with the score sum (s² − m² ≈ 2m(s − m)): drawn apart, a
    # bin's spread Σ(s − c)² would take the score sum's noise undamped
    return SumsBatch(counts, center + noise, label_sums, squares + 2.0 * center_mean * noise)


def supports(info: Any, norm: float) -> bool:
    """Whether an estimator's kernel can read resampled cells (see the module docstring)."""
    return info.binned and (
        info.statistics == "bins" or (info.statistics == "scores-in-bins" and norm == 2.0)
    )


#: Seconds a step costs on this machine: of the multinomial law, one cell of one component
#: of one resample with its sums (``resamples × cells × (components + 8)`` steps); of the
#: normal law, one of its moments', root's and draws' (``cells × (4·components)² + dim³/3 +
#: resamples × dim²``). Measured on comparisons of 2 to 4 models (binary, top-label and
#: classwise, 20,000–100,000 rows): 16–40 ns and 0.2–0.5 ns.
MULTINOMIAL_STEP = 2e-8
NORMAL_STEP = 5e-10

#: Multinomial draws that would take longer than this (seconds) give way to the normal law
#: when it is faster (``"auto"``).
MULTINOMIAL_SECONDS = 1.0

#: Most bin statistics (``4 × bins × components + scores``) the normal law draws jointly.
NORMAL_MAX_DIM = 3000

#: The laws of the resampled cell counts (see :func:`cell_bootstrap`).
CELL_LAWS = ("auto", "multinomial", "normal")


def cell_law(cells: CellStats, n_resamples: int, n_scores: int = 0) -> str:
    """Return the law ``"auto"`` picks: ``"multinomial"`` unless it is slow and the normal faster.

    The multinomial law draws the cell counts exactly; it gives way when it would take more
    than :data:`MULTINOMIAL_SECONDS` and the normal law less (:data:`MULTINOMIAL_STEP`,
    :data:`NORMAL_STEP`).

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
    multinomial = MULTINOMIAL_STEP * n_resamples * d * (k + 8.0)
    normal = NORMAL_STEP * (d * (4.0 * k) ** 2 + dim**3 / 3.0 + n_resamples * dim * dim)
    if multinomial > MULTINOMIAL_SECONDS and dim <= NORMAL_MAX_DIM and normal < multinomial:
        return "normal"
    return "multinomial"


def _dimension(cells: CellStats, n_scores: int) -> int:
    return 4 * sum(e.shape[0] - 1 for e in cells.edges) + n_scores


def analysis_draws(
    cells: CellStats, calls: Mapping[str, Any], *, n_resamples: int, seed: int
) -> dict[str, np.ndarray]:
    """Resamples of ``calls`` from ``cells`` drawn exactly as :func:`core.analyses.analysis.analyze` draws.

    The draws depend on the cells and on the scores drawn beside the statistics (their terms
    come from the same generator), so every score of :data:`core.stats.scores.SCORES` is drawn, in
    order, as the analysis does: a statistic of these rows then has the Reliability page's
    resamples, and its interval, wherever else it is shown (a model on Compare, all rows on
    Subgroups). A statistic's own random draws come from ``seed`` whatever its key.

    Parameters
    ----------
    cells : CellStats
        The rows' cells, with the row sums of every score.
    calls : mapping
        Key → estimator call the cells resample (:func:`supports`); keys other than the
        scores' names.
    n_resamples, seed
        Resamples and seed (the analysis's ``config.seed``).

    Returns
    -------
    dict
        Key → ``(n_resamples,)`` resampled values, for the calls and every score.
    """
    stats: dict[str, Any] = {**{s: s for s in SCORES.names()}, **calls}
    return cell_bootstrap(cells, stats, n_resamples=n_resamples, seed=seed, est_seed=seed)


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
        Key → an :class:`core.inference.calibration.EstimatorCall` (an estimator :func:`supports`
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
    for done, r, batches, totals in resampled_chunks(cells, scores, n_resamples, rng, law):
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


def resampled_chunks(
    cells: CellStats,
    scores: list[str],
    n_resamples: int,
    rng: np.random.Generator,
    law: str,
    noise: JointNoise | None = None,
) -> Any:
    """Yield ``(start, R, batches, score values)`` for chunks of resamples.

    ``noise``, when given, draws the components' score-sum terms jointly (paired models,
    :mod:`core.inference.comparison_cells`) instead of one component at a time.
    """
    if law == "normal":
        batches, totals = normal_batches(cells, scores, n_resamples, rng, noise)
        yield 0, n_resamples, batches, totals
        return
    n = cells.n
    shares = cells.counts / n
    chunk = max(1, CHUNK_CELLS // max(cells.n_cells, 1))
    done = 0
    while done < n_resamples:
        r = min(chunk, n_resamples - done)
        draws = rng.multinomial(n, shares, size=r).astype(np.float64)
        terms = [None] * len(cells.names) if noise is None else noise.of_bins(r, rng)
        batches = [
            multinomial_batch(cells, c, draws, rng, terms[c]) for c in range(len(cells.names))
        ]
        totals = {s: _score_draws(cells, s, draws, rng) for s in scores}
        yield done, r, batches, totals
        done += r


def _fill_pair_block(
    cov: np.ndarray,
    sums: dict[tuple[int, int], np.ndarray],
    lo: int,
    hi: int,
    sizes: list[int],
    starts: np.ndarray,
    c1: int,
    c2: int,
    feature: tuple[int, ...],
) -> None:
    """Write the covariance block of components ``c1`` and ``c2`` (and its transpose).

    ``sums[f1, f2][lo:hi]`` are the pair sums of features ``f1`` and ``f2`` over the two
    components' codes ``2b + o``; statistic ``j`` reads feature ``feature[j]``, and the
    outcome sum (``j = 1``) only the cells of outcome 1.
    """
    b1, b2 = sizes[c1], sizes[c2]
    for f1 in range(3):
        for f2 in range(3):
            x = sums[f1, f2][lo:hi].reshape(b1, 2, b2, 2)
            for j1 in (j for j in range(4) if feature[j] == f1):
                x1 = x[:, 1] if j1 == 1 else x.sum(axis=1)
                for j2 in (j for j in range(4) if feature[j] == f2):
                    x2 = x1[:, :, 1] if j2 == 1 else x1.sum(axis=2)
                    r = int(starts[c1]) + j1 * b1
                    s = int(starts[c2]) + j2 * b2
                    cov[r : r + b1, s : s + b2] = x2
                    cov[s : s + b2, r : r + b1] = x2.T


def _law_moments(cells: CellStats, scores: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``Aᵀc`` and covariance ``Aᵀ diag(c) A − (Aᵀc)(Aᵀc)ᵀ/n`` of :func:`normal_batches`.

    Column ``j·B + b`` of component ``k``'s block of ``A`` (at ``4·Σ_{k'<k} B_k'``) is, per
    cell in bin ``b``, its ``j``-th statistic ``(1, o, m, q)``: one, outcome, mean score and
    mean square score; every score adds one column (its per-row mean). The outcome is 0 or 1,
    so a cell's statistics are its bin, its outcome and ``u = (1, m, q)``: the block of two
    components is nine ``bincount`` s of ``c·u_f·u'_g`` over the pairs of the cells' codes
    ``2b + o``, summed over the outcomes the statistics keep — ``O(cells · components²)``
    with no sparse product.
    """
    counts = cells.counts.astype(np.float64)
    n = float(counts.sum())
    safe = np.where(counts > 0, counts, 1.0)
    sizes = [e.shape[0] - 1 for e in cells.edges]
    k = len(sizes)
    starts = np.concatenate([[0], np.cumsum([4 * b for b in sizes])]).astype(np.int64)
    dim = int(starts[-1]) + len(scores)
    # components along the first axis: a component and those after it are one contiguous block;
    # cells in a fixed shuffled order, as neighbours in sorted order share their bins and a
    # bincount adding to the same bin twice in a row waits for its previous sum (1.5× slower)
    order = np.random.default_rng(0).permutation(counts.shape[0])
    counts, safe = counts[order], safe[order]
    codes = (2 * cells.bins[order].astype(np.int64) + cells.outcomes[order]).T.copy()
    feats = [
        np.ones((k, counts.shape[0])),
        (cells.score_sums[order] / safe[:, None]).T.copy(),
        (cells.score_squares[order] / safe[:, None]).T.copy(),
    ]
    weighted = [f * counts for f in feats]
    # statistic j of (1, o, m, q) reads feature f(j) over the outcomes keep(j) (o = 1 only
    # for the outcome sum)
    feature = (0, 0, 1, 2)
    cov = np.zeros((dim, dim))

    def pair_sums(c1: int) -> tuple[np.ndarray, dict[tuple[int, int], np.ndarray]]:
        # component c1 against itself and every later component, by the cells' two codes
        width = 2 * np.asarray(sizes[c1:], dtype=np.int64)
        base = np.concatenate([[0], np.cumsum(2 * sizes[c1] * width)])
        keys = (base[:-1, None] + codes[c1] * width[:, None] + codes[c1:]).ravel()
        sums = {}
        buffer = np.empty((k - c1, counts.shape[0]))  # one product buffer: fewer page faults
        for f1 in range(3):
            for f2 in range(3):
                if f1 == 0:  # the count itself: c·u'_g is already weighted
                    w = weighted[f2][c1:]
                else:
                    w = np.multiply(weighted[f1][c1], feats[f2][c1:], out=buffer)
                sums[f1, f2] = np.bincount(keys, weights=w.ravel(), minlength=int(base[-1]))
        return base, sums

    blocks = map_ordered(pair_sums, range(k), entries=9 * k * (k + 1) // 2 * counts.shape[0])
    for c1, (base, sums) in enumerate(blocks):
        for i, c2 in enumerate(range(c1, k)):
            _fill_pair_block(cov, sums, base[i], base[i + 1], sizes, starts, c1, c2, feature)
    means = [cells.row_sums[s][order] / safe for s in scores]
    # a score's column against every component's bins: one bincount per feature over all
    flat = (codes + np.cumsum([0] + [2 * b for b in sizes[:-1]])[:, None]).ravel()
    for i, mean in enumerate(means):
        col = int(starts[-1]) + i
        sums = [
            np.bincount(flat, weights=(weighted[f] * mean).ravel(), minlength=2 * sum(sizes))
            for f in range(3)
        ]
        at = 0
        for c in range(k):
            b = sizes[c]
            for j in range(4):
                x = sums[feature[j]][at : at + 2 * b].reshape(b, 2)
                r = int(starts[c]) + j * b
                cov[r : r + b, col] = cov[col, r : r + b] = x[:, 1] if j == 1 else x.sum(axis=1)
            at += 2 * b
        for i2, other in enumerate(means[: i + 1]):
            cov[col, int(starts[-1]) + i2] = cov[int(starts[-1]) + i2, col] = counts @ (
                mean * other
            )
    total = np.empty(dim)
    for c in range(k):
        b = sizes[c]
        for j in range(4):
            r = int(starts[c]) + j * b
            total[r : r + b] = cov[r : r + b, int(starts[c]) : int(starts[c]) + b].sum(axis=1)
    for i, mean in enumerate(means):
        total[int(starts[-1]) + i] = counts @ mean
    cov -= np.outer(total, total) / n
    return total, cov


def psd_root(cov: np.ndarray) -> np.ndarray:
    """``R`` with ``R Rᵀ = cov`` for a covariance (positive semi-definite, often singular).

    Pivoted Cholesky (LAPACK ``dpstrf``): it stops at the numerical rank (remaining
    diagonal below ``dim·eps·max(diag)``), so the constant totals of a multinomial (every
    component's counts sum to ``n``) and empty bins cost nothing, and it is an order of
    magnitude faster than an eigendecomposition of the same matrix. ``R`` is
    ``(dim, rank)``: draws need ``rank`` standard normals each.
    """
    from scipy.linalg import lapack

    dim = cov.shape[0]
    if dim == 0 or not np.any(np.diag(cov) > 0):
        return np.zeros((dim, 0))
    factor, pivots, rank, info = lapack.dpstrf((cov + cov.T) / 2.0, lower=1, tol=-1.0)
    if info < 0:  # an argument LAPACK refused: a bug, not the data
        raise RuntimeError(f"dpstrf failed (info={info})")
    root = np.zeros((dim, rank))
    root[pivots - 1] = np.tril(factor)[:, :rank]
    return root


def normal_batches(
    cells: CellStats,
    scores: list[str],
    n_resamples: int,
    rng: np.random.Generator,
    noise: JointNoise | None = None,
) -> tuple[list[SumsBatch], dict[str, np.ndarray]]:
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
    noise : JointNoise, optional
        Draws the components' score-sum terms jointly (default: one component at a time).

    Returns
    -------
    batches : list
        Per component, the resampled bins (a :class:`~core.estimators.base.BinBatch`).
    totals : dict
        Score → ``(n_resamples,)`` resampled means.
    """
    counts = cells.counts.astype(np.float64)
    n = float(counts.sum())
    within, offsets = [], []
    at = 0
    for c in range(len(cells.names)):
        b = cells.edges[c].shape[0] - 1
        _, _, var, _ = _cell_moments(cells, c)
        within.append(np.bincount(cells.bins[:, c], weights=counts * var, minlength=b))
        offsets.append((at, b))
        at += 4 * b
    safe = np.where(counts > 0, counts, 1.0)
    for s in scores:
        mean = cells.row_sums[s] / safe
        within.append(np.atleast_1d(counts @ clipped_variance(cells.row_squares[s] / safe, mean)))
    # one BLAS thread for the moments' dot products too: a threaded BLAS splits a long dot
    # product by its thread count, and the intervals would then depend on it
    with one_blas_thread():
        total, cov = _law_moments(cells, scores)
        root = psd_root(cov)
        t = total + rng.standard_normal((n_resamples, root.shape[1])) @ root.T
    batches = []
    terms = [None] * len(offsets) if noise is None else noise.of_bins(n_resamples, rng)
    for c, (start, b) in enumerate(offsets):
        k = np.maximum(t[:, start : start + b], 0.0)
        label_sums = np.clip(t[:, start + b : start + 2 * b], 0.0, k)
        center = t[:, start + 2 * b : start + 3 * b]
        squares = t[:, start + 3 * b : start + 4 * b]
        term = terms[c]
        if term is None:
            term = np.sqrt(within[c]) * rng.standard_normal((n_resamples, b))
        center_mean = center / np.maximum(k, 1.0)
        score_sums = np.clip(center + term, 0.0, k)
        squares = np.clip(squares + 2.0 * center_mean * term, 0.0, k)
        batches.append(SumsBatch(k, score_sums, label_sums, squares))
    offset = offsets[-1][0] + 4 * offsets[-1][1] if offsets else 0
    totals = {}
    for i, s in enumerate(scores):
        spread = np.sqrt(within[len(offsets) + i][0]) * rng.standard_normal(n_resamples)
        totals[s] = (t[:, offset + i] + spread) / n
    return batches, totals


def group_bin_sums(groups: Sequence[CellStats], c: int) -> SumsBatch:
    """Component ``c``'s bin sums of every group as one batch of ``G`` samples."""
    b = groups[0].edges[c].shape[0] - 1
    out = np.zeros((4, len(groups), b))
    for g, cells in enumerate(groups):
        idx = cells.bins[:, c]
        counts = cells.counts.astype(np.float64)
        out[0, g] = np.bincount(idx, weights=counts, minlength=b)
        out[1, g] = np.bincount(idx, weights=cells.score_sums[:, c], minlength=b)
        out[2, g] = np.bincount(idx, weights=counts * cells.outcomes[:, c], minlength=b)
        out[3, g] = np.bincount(idx, weights=cells.score_squares[:, c], minlength=b)
    return SumsBatch(*out)


def grouped_values(groups: Sequence[CellStats], call: Any, seed: int) -> tuple[np.ndarray, float]:
    """Every group's value and the pooled value of an estimator :func:`supports`, from cells.

    Parameters
    ----------
    groups : sequence of CellStats
        Each group's cells, on the same edges.
    call : core.inference.calibration.EstimatorCall
        The estimator.
    seed : int
        The seed a random estimator reads its draws from (every group and the pooled value
        from its start, as :func:`core.analyses.subgroups.subgroup_analysis` does).

    Returns
    -------
    values : numpy.ndarray
        ``(G,)`` group values.
    pooled : float
        The value of all rows.
    """
    n_groups = len(groups)
    per_g = np.empty((n_groups, len(groups[0].names)))
    per_p = np.empty((1, len(groups[0].names)))
    ctx_g = KernelContext(call.options, NormalStream(seed), np.zeros(n_groups, dtype=np.int64))
    ctx_p = KernelContext(call.options, NormalStream(seed), np.zeros(1, dtype=np.int64))
    for c in range(per_g.shape[1]):
        batch = group_bin_sums(groups, c)
        pooled = SumsBatch(*(x.sum(axis=0, keepdims=True) for x in _sums_of(batch)))
        with np.errstate(invalid="ignore", divide="ignore"):
            out_g = call.info.kernel(batch, call.norm, ctx_g)
            out_p = call.info.kernel(pooled, call.norm, ctx_p)
        per_g[:, c] = out_g[0] if isinstance(out_g, tuple) else out_g
        per_p[:, c] = out_p[0] if isinstance(out_p, tuple) else out_p
    weights = groups[0].weights
    with np.errstate(invalid="ignore", divide="ignore"):
        values = call.info.combine(per_g, weights, call.norm)
        pooled_value = call.info.combine(per_p, weights, call.norm)
    return np.asarray(values, dtype=np.float64), float(pooled_value[0])


def _sums_of(batch: SumsBatch) -> tuple[np.ndarray, ...]:
    return batch.counts, batch.score_sums, batch.label_sums, batch._squares


def grouped_cell_bootstrap(
    groups: Sequence[CellStats],
    call: Any,
    *,
    n_resamples: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap every group's value and the pooled value on the same cell draws (paired).

    One resample draws the counts of every (group, cell) pair from
    ``Multinomial(n, pair shares)`` — exactly the law of those counts when ``n`` rows of all
    groups are drawn with replacement — so a group's resampled size varies as in the exact
    paired bootstrap, and the pooled value is computed on the same draws (the sum over the
    groups), which pairs the gaps. Score sums take the normal term of :func:`multinomial_batch`,
    per (group, bin); the pooled score sums are their sums.

    Parameters
    ----------
    groups : sequence of CellStats
        Each group's cells, on the same edges (the group order is the draws' order).
    call : core.inference.calibration.EstimatorCall
        An estimator :func:`supports` reads.
    n_resamples : int
        Number of resamples.
    seed : int
        Seed of the draws; a random estimator reads its own draws from it too.

    Returns
    -------
    groups : numpy.ndarray
        ``(n_resamples, G)`` values (NaN where a resample holds none of a group's rows).
    pooled : numpy.ndarray
        ``(n_resamples,)`` values of all rows on the same resamples.
    """
    n_groups = len(groups)
    n_comp = len(groups[0].names)
    counts = np.concatenate([g.counts for g in groups]).astype(np.float64)
    owner = np.repeat(np.arange(n_groups), [g.n_cells for g in groups])
    n = int(counts.sum())
    shares = counts / n
    safe = np.where(counts > 0, counts, 1.0)
    per_comp = []
    for c in range(n_comp):
        b = groups[0].edges[c].shape[0] - 1
        score_sums = np.concatenate([g.score_sums[:, c] for g in groups])
        mean = score_sums / safe
        squares = np.concatenate([g.score_squares[:, c] for g in groups]) / safe
        per_comp.append(
            (
                b,
                owner * b + np.concatenate([g.bins[:, c] for g in groups]),
                np.concatenate([g.outcomes[:, c] for g in groups]).astype(np.float64),
                mean,
                clipped_variance(squares, mean),
                squares,
            )
        )
    d = counts.shape[0]
    b_max = max(p[0] for p in per_comp)
    chunk = max(1, CHUNK_CELLS // max(d, n_groups * b_max))
    rng = np.random.default_rng(seed)
    streams = (NormalStream(seed), NormalStream(seed))
    dist_g = np.empty((n_resamples, n_groups))
    dist_p = np.empty(n_resamples)
    weights = groups[0].weights
    done = 0
    while done < n_resamples:
        r = min(chunk, n_resamples - done)
        draws = rng.multinomial(n, shares, size=r).astype(np.float64)
        per_g = np.empty((r * n_groups, n_comp))
        per_p = np.empty((r, n_comp))
        ctx_g = KernelContext(call.options, streams[0], np.zeros(r * n_groups, dtype=np.int64))
        ctx_p = KernelContext(call.options, streams[1], np.zeros(r, dtype=np.int64))
        present = None
        for c, (b, cell_bin, outcome, mean, var, squares) in enumerate(per_comp):
            size = n_groups * b
            flat = (np.arange(r)[:, None] * size + cell_bin[None, :]).ravel()

            shape = (r, n_groups, b)

            def total(
                w: np.ndarray, flat: np.ndarray = flat, shape: tuple[int, ...] = shape
            ) -> np.ndarray:
                size = shape[0] * shape[1] * shape[2]
                return np.bincount(flat, weights=w.ravel(), minlength=size).reshape(shape)

            cnt = total(draws)
            labels = total(draws * outcome)
            noise = np.sqrt(total(draws * var)) * rng.standard_normal((r, n_groups, b))
            center = total(draws * mean)
            ssum = center + noise
            sq = total(draws * squares) + 2.0 * (center / np.maximum(cnt, 1.0)) * noise
            if present is None:
                present = cnt.sum(axis=2) > 0
            grouped = SumsBatch(
                cnt.reshape(-1, b), ssum.reshape(-1, b), labels.reshape(-1, b), sq.reshape(-1, b)
            )
            pooled = SumsBatch(cnt.sum(1), ssum.sum(1), labels.sum(1), sq.sum(1))
            with np.errstate(invalid="ignore", divide="ignore"):
                out_g = call.info.kernel(grouped, call.norm, ctx_g)
                out_p = call.info.kernel(pooled, call.norm, ctx_p)
            per_g[:, c] = out_g[0] if isinstance(out_g, tuple) else out_g
            per_p[:, c] = out_p[0] if isinstance(out_p, tuple) else out_p
        with np.errstate(invalid="ignore", divide="ignore"):
            values = call.info.combine(per_g, weights, call.norm).reshape(r, n_groups)
            pooled_values = call.info.combine(per_p, weights, call.norm)
        dist_g[done : done + r] = np.where(present, values, np.nan)
        dist_p[done : done + r] = pooled_values
        done += r
    return dist_g, dist_p


def _score_draws(
    cells: CellStats, name: str, draws: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    counts = cells.counts.astype(np.float64)
    safe = np.where(counts > 0, counts, 1.0)
    mean = cells.row_sums[name] / safe
    var = clipped_variance(cells.row_squares[name] / safe, mean)
    total = draws @ mean + np.sqrt(draws @ var) * rng.standard_normal(draws.shape[0])
    return total / cells.n


def clipped_variance(mean_square: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Return ``E[s²] − E[s]²``, with differences within rounding of ``E[s²]`` set to 0.

    A cell of equal values (always so with the discrete binning) has variance 0; computed
    from sums its variance is rounding noise whose size depends on the order of the sums
    (the batching), so it is cut off at a few ulps of ``E[s²]``.
    """
    var = mean_square - mean * mean
    return np.where(var > 64 * np.finfo(np.float64).eps * mean_square, var, 0.0)
