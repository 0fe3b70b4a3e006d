"""Cells of compared models: the cell bootstrap of :func:`core.model_comparison.compare_models`.

A comparison bins every model on shared edges (:func:`core.model_comparison.on_edges`), so the
cells of :mod:`core.cells` carry over:

- **Not paired** (the models were evaluated on different rows): each model's rows form its
  own cells — equal bins in every lens component and equal outcomes — and each model is
  bootstrapped from them with its own seed (:func:`core.cells.cell_bootstrap`), as
  :func:`core.analyze` does for one data set.
- **Paired** (the same ``n`` and the same labels in the same order): an exact paired resample
  draws the same row indices for every model, so what must be resampled together is the
  *tuple* of every model's bins at a row. A **joint cell** is a combination of every model's
  bin in every lens component and of the outcomes: the cells of a view whose components are
  all models' components (model ``i``'s component ``c`` is joint component ``i·C + c``). One
  multinomial draw over the joint cells gives every model's bin counts and outcome sums on
  the same resample, exactly as the paired row bootstrap does (or, when that is costly, the
  joint normal law of all models' bin statistics, :func:`core.cells.normal_batches`). Each
  model's bin score sums take the normal term of :func:`core.cells.multinomial_batch`, drawn
  per model; the per-row scores (Brier, log loss, accuracy) take their within-cell term
  jointly across models, with the covariance the cross sums ``Σ v_a v_b`` of the joint cells
  give (:func:`cross_key`), so nearly equal per-row scores of two models do not widen their
  difference. Each model's metric combines its own components with the lens weights, and
  differences between models are paired: the per-resample differences of common draws.

The joint cells are at most the rows; they are few when the models' bins move together
(``B^models × 2`` for the binary lens at most), many on the classwise lens of many classes.
Everything is a sum over rows, so the cells of chunks of rows merge by ``+`` and the
streamed comparison (:mod:`core.stream.compare`) builds the same cells batch by batch.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from core.binned_view import BinnedView
from core.cells import CellStats, _resampled, _variance, cell_law, cells_of, supports
from core.estimators.base import KernelContext, NormalStream

__all__ = [
    "cross_key",
    "joint_cell_bootstrap",
    "joint_cells",
    "joint_key",
    "model_cells",
    "resampled_by_cells",
]


def joint_key(model: int, score: str) -> str:
    """Return the key of model ``model``'s per-row score ``score`` in joint cells' row sums."""
    return f"{model}:{score}"


def cross_key(a: int, b: int, score: str) -> str:
    """Return the key of the products of models ``a`` and ``b``'s per-row ``score``."""
    return f"{a}*{b}:{score}"


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
        The cells (:func:`core.cells.cells_of`).
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
    """Return the calls of ``calls`` the cell bootstrap can resample (:func:`core.cells.supports`)."""
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
        Key → :class:`core.calibration.EstimatorCall` of an estimator
        :func:`core.cells.supports` reads, evaluated on every model.
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
        As in :func:`core.cells.cell_bootstrap`; ``"auto"`` is :func:`core.cells.cell_law`
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
    for done, r, batches, totals in _resampled(cells, keys, n_resamples, rng, law):
        for s in scores:
            noise = rng.standard_normal((r, n_models)) @ within[s].T / cells.n
            for i in range(n_models):
                out[i, s][done : done + r] = totals[joint_key(i, s)] + noise[:, i]
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
    counts = cells.counts.astype(np.float64)
    safe = np.where(counts > 0, counts, 1.0)
    means = [cells.row_sums[joint_key(i, score)] / safe for i in range(n_models)]
    cov = np.empty((n_models, n_models))
    for i in range(n_models):
        square = cells.row_squares[joint_key(i, score)] / safe
        cov[i, i] = counts @ _variance(square, means[i])
        for j in range(i + 1, n_models):
            cross = cells.row_sums[cross_key(i, j, score)] / safe
            cov[i, j] = cov[j, i] = counts @ (cross - means[i] * means[j])
    w, u = np.linalg.eigh(cov)
    return u * np.sqrt(np.clip(w, 0.0, None))
