"""Cells of compared models: the cell bootstrap of :func:`core.analyses.model_comparison.compare_models`.

A comparison bins every model on shared edges (:func:`core.analyses.model_comparison.on_edges`), so the
cells of :mod:`core.inference.cells` carry over:

- **Not paired** (the models were evaluated on different rows): each model's rows form its
  own cells — equal bins in every lens component and equal outcomes — and each model is
  bootstrapped from them with its own seed (:func:`core.inference.cells.cell_bootstrap`), as
  :func:`core.analyze` does for one data set.
- **Paired** (the same ``n`` and the same labels in the same order): an exact paired resample
  draws the same row indices for every model, so what must be resampled together is the
  *tuple* of every model's bins at a row. A **joint cell** is a combination of every model's
  bin in every lens component and of the outcomes: the cells of a view whose components are
  all models' components (model ``i``'s component ``c`` is joint component ``i·C + c``). One
  multinomial draw over the joint cells gives every model's bin counts and outcome sums on
  the same resample, exactly as the paired row bootstrap does (or, when that is costly, the
  joint normal law of all models' bin statistics, :func:`core.inference.cells.normal_batches`). Each
  model's bin score sums take the normal term of :func:`core.inference.cells.multinomial_batch`, drawn
  jointly across models for the same lens component (:class:`PairedNoise`: per cell, the
  models' within-cell covariance of their scores, from the cross sums ``Σ s_a s_b`` of the
  joint cells); the per-row scores (Brier, log loss, accuracy) take their within-cell term
  jointly across models the same way (:func:`cross_key`). So nearly equal scores of two models
  do not widen their difference, and a model compared with itself differs by 0 in every
  resample, as in the exact paired bootstrap. Each model's metric combines its own components
  with the lens weights, and differences between models are paired: the per-resample
  differences of common draws.

The joint cells are at most the rows; they are few when the models' bins move together
(``B^models × 2`` for the binary lens at most), many on the classwise lens of many classes.
Everything is a sum over rows, so the cells of chunks of rows merge by ``+`` and the
streamed comparison (:mod:`core.stream.compare`) builds the same cells batch by batch.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from core.base.parallel import one_blas_thread
from core.estimators.base import KernelContext, NormalStream
from core.inference.cells import (
    CellStats,
    cell_law,
    cells_of,
    clipped_variance,
    psd_root,
    resampled_chunks,
    supports,
)
from core.stats.binned_view import BinnedView

__all__ = [
    "PairedNoise",
    "component_key",
    "cross_key",
    "joint_cell_bootstrap",
    "joint_cells",
    "joint_key",
    "model_cells",
    "resampled_by_cells",
    "within_covariance",
]


def joint_key(model: int, score: str) -> str:
    """Return the key of model ``model``'s per-row score ``score`` in joint cells' row sums."""
    return f"{model}:{score}"


def cross_key(a: int, b: int, score: str) -> str:
    """Return the key of the products of models ``a`` and ``b``'s per-row ``score``."""
    return f"{a}*{b}:{score}"


def component_key(component: int) -> str:
    """Return the name of a lens component's scores in :func:`cross_key` (its cross sums)."""
    return f"component {component}"


def model_cells(
    components: Sequence[Any],
    weights: Any,
    *,
    lens: str,
    binning: str,
    n_bins: int,
    tie_policy: str,
    row_values: Mapping[str, np.ndarray] | None = None,
) -> CellStats:
    """Return the cells of one model's components on the shared edges.

    Parameters
    ----------
    components : sequence of ComponentBins
        The model's lens components binned on the shared edges.
    weights : array_like
        The lens weights of the components.
    lens, binning, n_bins, tie_policy
        How the components were binned.
    row_values : mapping of str to numpy.ndarray, optional
        Score name → per-row values.

    Returns
    -------
    CellStats
        The cells (:func:`core.inference.cells.cells_of`).
    """
    view = BinnedView(
        lens,
        binning,
        n_bins,
        tie_policy,
        tuple(components),
        tuple(c.name for c in components),
        np.asarray(weights, dtype=np.float64),
    )
    return cells_of(view, row_values)


def joint_cells(
    models: Sequence[Sequence[Any]],
    weights: Any,
    *,
    lens: str,
    binning: str,
    n_bins: int,
    tie_policy: str,
    row_values: Sequence[Mapping[str, np.ndarray]] = (),
) -> CellStats:
    """Return the joint cells of paired models (see the module docstring).

    Parameters
    ----------
    models : sequence of sequences of ComponentBins
        Per model, its lens components binned on the shared edges; row ``j`` of every
        model is the same example (paired models).
    weights : array_like
        The lens weights of one model's components.
    lens, binning, n_bins, tie_policy
        How the components were binned.
    row_values : sequence of mappings, optional
        Per model, score name → per-row values (stored under :func:`joint_key`).

    Returns
    -------
    CellStats
        Cells whose components are every model's components in turn; ``weights`` repeats
        the lens weights once per model.

    Raises
    ------
    ValueError
        When the models hold different numbers of rows.
    """
    comps = [c for model in models for c in model]
    sizes = {np.shape(c.scores)[0] for c in comps}
    if len(sizes) > 1:
        raise ValueError("joint cells pair rows by position: every model needs the same rows")
    w = np.asarray(weights, dtype=np.float64)
    values = {joint_key(i, name): v for i, per in enumerate(row_values) for name, v in per.items()}
    # the products of two models' per-row scores: their covariance within a cell
    for i, j in itertools.combinations(range(len(row_values)), 2):
        for name in row_values[i]:
            values[cross_key(i, j, name)] = row_values[i][name] * row_values[j][name]
    # and of their scores in the same lens component (the bins' score sums, PairedNoise)
    for i, j in itertools.combinations(range(len(models)), 2):
        for c, (a, b) in enumerate(zip(models[i], models[j], strict=True)):
            values[cross_key(i, j, component_key(c))] = a.scores * b.scores
    view = BinnedView(
        lens,
        binning,
        n_bins,
        tie_policy,
        tuple(comps),
        tuple(f"{i}:{c.name}" for i, model in enumerate(models) for c in model),
        np.tile(w, len(models)),
    )
    return cells_of(view, values)


def resampled_by_cells(calls: Mapping[str, Any]) -> dict[str, Any]:
    """Return the calls of ``calls`` the cell bootstrap can resample (:func:`core.inference.cells.supports`)."""
    return {key: call for key, call in calls.items() if supports(call.info, call.norm)}


def joint_cell_bootstrap(
    cells: CellStats,
    n_models: int,
    calls: Mapping[str, Any],
    scores: Sequence[str] = (),
    *,
    n_resamples: int,
    seed: int,
    est_seed: int = 0,
    law: str = "auto",
) -> dict[tuple[int, str], np.ndarray]:
    """Bootstrap every model's metrics on common draws of the joint cells (paired).

    Parameters
    ----------
    cells : CellStats
        Joint cells (:func:`joint_cells`) of ``n_models`` models.
    n_models : int
        Models; model ``i`` owns components ``i·C … (i+1)·C − 1``.
    calls : mapping
        Key → :class:`core.inference.calibration.EstimatorCall` of an estimator
        :func:`core.inference.cells.supports` reads, evaluated on every model.
    scores : sequence of str
        Score names bootstrapped for every model (their row sums under :func:`joint_key`).
    n_resamples : int
        Resamples.
    seed : int
        Seed of the draws (the cell counts and the normal terms).
    est_seed : int, default=0
        The seed a random estimator reads on every resample, for every model (as the
        exact paired bootstrap gives every model the same seed).
    law : {"auto", "multinomial", "normal"}, default="auto"
        As in :func:`core.inference.cells.cell_bootstrap`; ``"auto"`` is :func:`core.inference.cells.cell_law`
        of the joint cells.

    Returns
    -------
    dict
        ``(model index, key) → (n_resamples,)`` values; scores under their names.
    """
    n_comp = len(cells.names) // n_models
    keys = [joint_key(i, s) for i in range(n_models) for s in scores]
    if law == "auto":
        law = cell_law(cells, n_resamples, len(keys))
    rng = np.random.default_rng(seed)
    # the scores' within-cell terms are drawn jointly below; the draws of the cells leave
    # them out (a cell's per-row scores taken as equal to their mean)
    within = {s: _within_root(cells, n_models, s) for s in scores}
    counts = np.where(cells.counts > 0, cells.counts, 1).astype(np.float64)
    cells = replace(
        cells,
        row_squares={
            k: (cells.row_sums[k] ** 2 / counts if k in keys else v)
            for k, v in cells.row_squares.items()
        },
    )
    out = {(i, key): np.empty(n_resamples) for i in range(n_models) for key in (*calls, *scores)}
    streams = {(i, key): NormalStream(est_seed) for i in range(n_models) for key in calls}
    weights = cells.weights[:n_comp]
    paired = PairedNoise(cells, n_models) if n_models > 1 else None
    for done, r, batches, totals in resampled_chunks(cells, keys, n_resamples, rng, law, paired):
        for s in scores:
            spread = rng.standard_normal((r, n_models)) @ within[s].T / cells.n
            for i in range(n_models):
                out[i, s][done : done + r] = totals[joint_key(i, s)] + spread[:, i]
        for i in range(n_models):
            own = batches[i * n_comp : (i + 1) * n_comp]
            for key, call in calls.items():
                ctx = KernelContext(call.options, streams[i, key], np.zeros(r, dtype=np.int64))
                per = np.empty((r, n_comp))
                for c, batch in enumerate(own):
                    value = call.info.kernel(batch, call.norm, ctx)
                    per[:, c] = value[0] if isinstance(value, tuple) else value
                out[i, key][done : done + r] = call.info.combine(per, weights, call.norm)
    return out


def _within_root(cells: CellStats, n_models: int, score: str) -> np.ndarray:
    """Return a root ``L`` of the models' within-cell covariance of a score's row sums.

    ``L Lᵀ = Σ_cells c · Cov_cell`` (``m × m``), the covariance of the models' score sums
    that the rows of each cell add around the cell means, at the data's cell counts (the
    resampled counts' variation changes it by ``O(1/√n)``).
    """
    per_cell = within_covariance(
        cells,
        [cells.row_sums[joint_key(i, score)] for i in range(n_models)],
        [cells.row_squares[joint_key(i, score)] for i in range(n_models)],
        lambda a, b: cells.row_sums[cross_key(a, b, score)],
    )
    cov = np.einsum("d,dij->ij", cells.counts.astype(np.float64), per_cell)
    w, u = np.linalg.eigh(cov)
    return u * np.sqrt(np.clip(w, 0.0, None))


def within_covariance(
    cells: CellStats,
    sums: Sequence[np.ndarray],
    squares: Sequence[np.ndarray],
    cross: Callable[[int, int], np.ndarray],
) -> np.ndarray:
    """Return ``(D, M, M)``: per cell, the covariance of ``M`` models' per-row values.

    Parameters
    ----------
    cells : CellStats
        Joint cells.
    sums, squares : sequence of numpy.ndarray
        Per model, each cell's sum and sum of squares of the values.
    cross : callable
        ``cross(a, b)`` → each cell's sum of the products of models ``a`` and ``b``'s values.
    """
    counts = cells.counts.astype(np.float64)
    safe = np.where(counts > 0, counts, 1.0)
    m = len(sums)
    means = [x / safe for x in sums]
    cov = np.empty((cells.n_cells, m, m))
    for a in range(m):
        cov[:, a, a] = clipped_variance(squares[a] / safe, means[a])
    for a, b in itertools.combinations(range(m), 2):
        cov[:, a, b] = cov[:, b, a] = cross(a, b) / safe - means[a] * means[b]
    return cov


class PairedNoise:
    """The bins' score-sum terms of paired models, every model's same component together.

    A joint cell holds the same rows for every model, so when it is resampled the models'
    score sums in it move together: within the cell their terms have the covariance
    ``c·Σ_cell``, with ``Σ_cell`` the models' within-cell covariance of the component's
    scores (from the cells' sums, squares and cross sums ``Σ s_a s_b``, :func:`component_key`)
    and ``c`` the cell's count. Summed over the cells of each pair of bins, these give the
    covariance of all models' bin terms of the component, from which the terms are drawn
    jointly at the data's cell counts, as :func:`core.inference.cells.normal_batches` draws them; under
    the multinomial law :func:`core.inference.cells.multinomial_batch` scales each bin's term by the
    square root of its resampled count over its data count. Each model's terms alone have the
    variance they had when drawn one model at a time (:class:`core.inference.cells.JointNoise`).

    Parameters
    ----------
    cells : CellStats
        Joint cells (:func:`joint_cells`) of ``n_models`` models.
    n_models : int
        Models; model ``i`` owns components ``i·C … (i+1)·C − 1``.
    """

    def __init__(self, cells: CellStats, n_models: int) -> None:
        self.cells = cells
        self.n_models = n_models
        self.n_comp = len(cells.names) // n_models
        self._roots: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def _owners(self, c: int) -> list[int]:
        return [m * self.n_comp + c for m in range(self.n_models)]

    def cell_covariance(self, c: int) -> np.ndarray:
        """``(D, M, M)``: per cell, the models' within-cell covariance of component ``c``."""
        cells, owners = self.cells, self._owners(c)
        return within_covariance(
            cells,
            [cells.score_sums[:, j] for j in owners],
            [cells.score_squares[:, j] for j in owners],
            lambda a, b: cells.row_sums[cross_key(a, b, component_key(c))],
        )

    def covariance(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        """Return the covariance of every model's bin terms of component ``c``.

        With it, where each model's bins start in it (``M + 1`` offsets).
        """
        cells, m = self.cells, self.n_models
        owners = self._owners(c)
        sizes = [cells.edges[j].shape[0] - 1 for j in owners]
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        per_cell = self.cell_covariance(c) * cells.counts.astype(np.float64)[:, None, None]
        cov = np.zeros((starts[-1], starts[-1]))
        # one model's bins hold disjoint cells: its block is diagonal
        for a, j in enumerate(owners):
            own = np.bincount(cells.bins[:, j], weights=per_cell[:, a, a], minlength=sizes[a])
            at = np.arange(starts[a], starts[a + 1])
            cov[at, at] = own
        for a, b in itertools.combinations(range(m), 2):
            key = cells.bins[:, owners[a]] * sizes[b] + cells.bins[:, owners[b]]
            block = np.bincount(
                key, weights=per_cell[:, a, b], minlength=sizes[a] * sizes[b]
            ).reshape(sizes[a], sizes[b])
            cov[starts[a] : starts[a + 1], starts[b] : starts[b + 1]] = block
            cov[starts[b] : starts[b + 1], starts[a] : starts[a + 1]] = block.T
        return cov, starts

    def _root(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        if c not in self._roots:
            cov, starts = self.covariance(c)
            with one_blas_thread():
                self._roots[c] = (psd_root(cov), starts)
        return self._roots[c]

    def of_bins(self, n_resamples: int, rng: np.random.Generator) -> list[np.ndarray | None]:
        """Per joint component, ``(R, B)`` terms at the data's cell counts."""
        out: list[np.ndarray | None] = [None] * len(self.cells.names)
        for c in range(self.n_comp):
            root, starts = self._root(c)
            with one_blas_thread():
                terms = rng.standard_normal((n_resamples, root.shape[1])) @ root.T
            for a, j in enumerate(self._owners(c)):
                out[j] = terms[:, starts[a] : starts[a + 1]]
        return out
