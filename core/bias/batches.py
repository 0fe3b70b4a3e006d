"""Blocks of simulated datasets and the registry's batch kernels run on them.

Binned estimators are vectorised across datasets: the bin statistics (or the sorted
samples of the sweep) of a whole block are built once and read by the estimators' own
batch kernels (:attr:`core.estimators.base.EstimatorInfo.kernel`); estimators without a
batch kernel, and random ones, are called once per dataset through the registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from core.base.validation import check_norm
from core.bias.sources import stream
from core.bias.specs import EstimatorSpec
from core.estimators import ESTIMATORS
from core.estimators.base import KernelContext, NormalStream
from core.estimators.binned import SortedRows
from core.stats.binning import BINNINGS, RowBatch, equal_mass_starts


class SizeBlock:
    """Datasets of one size (rows) with sorted order, prefix sums and bin statistics.

    Each is computed once and shared by every estimator.
    """

    def __init__(self, scores: np.ndarray, labels: np.ndarray) -> None:
        self.s, self.y = scores, labels
        self._sorted: tuple[np.ndarray, np.ndarray] | None = None
        self._batches: dict[tuple[str, int, str], RowBatch | None] = {}

    def sorted(self) -> tuple[np.ndarray, np.ndarray]:
        """Stably sorted scores and labels of every dataset."""
        if self._sorted is None:
            order = np.argsort(self.s, axis=1, kind="stable")
            self._sorted = (
                np.take_along_axis(self.s, order, 1),
                np.take_along_axis(self.y, order, 1),
            )
        return self._sorted

    def sorted_rows(self, binning: str) -> SortedRows:
        """Return the datasets in score order, as the sweep reads them."""
        return SortedRows(*self.sorted(), binning, "split")

    def batch(self, binning: str, n_bins: int, tie_policy: str) -> RowBatch | None:
        """Return the datasets' bins as one batch, or None when each needs its own binning call."""
        key = (binning, n_bins, tie_policy)
        if key not in self._batches:
            self._batches[key] = _block_batch(self, binning, n_bins, tie_policy)
        return self._batches[key]

    def stats(self, binning: str, n_bins: int, tie_policy: str) -> tuple[np.ndarray, ...]:
        """Bin statistics ``(counts, score_sums, label_sums)``, each ``(R, B)``."""
        batch = self.batch(binning, n_bins, tie_policy)
        if batch is not None:
            return batch.counts.astype(np.float64), batch.score_sums, batch.label_sums
        # data-dependent schemes with a per-row number of bins: one registry call per dataset
        func = BINNINGS.get(binning).func
        rows = []
        for i in range(self.s.shape[0]):
            idx, edges = func(self.s[i], n_bins, tie_policy)
            one = RowBatch(idx, self.s[i], self.y[i], edges.shape[0] - 1)
            rows.append((one.counts[0].astype(np.float64), one.score_sums[0], one.label_sums[0]))
        width = max(c.shape[0] for c, _, _ in rows)
        out = [np.zeros((self.s.shape[0], width)) for _ in range(3)]
        for i, parts in enumerate(rows):
            for arr, part in zip(out, parts, strict=True):
                arr[i, : part.shape[0]] = part
        return out[0], out[1], out[2]


def _block_batch(block: SizeBlock, binning: str, n_bins: int, tie_policy: str) -> RowBatch | None:
    r, n = block.s.shape
    info = BINNINGS.get(binning)
    if not info.data_dependent:
        # elementwise schemes bin the whole block in one call
        idx, edges = info.func(block.s.ravel(), n_bins, tie_policy)
        return RowBatch(idx.reshape(r, n), block.s, block.y, edges.shape[0] - 1)
    if binning == "equal-mass" and tie_policy == "split":
        # rank bins: the same bin for the same sorted position of every dataset
        s, y = block.sorted()
        sizes = np.diff(equal_mass_starts(n, n_bins))
        ranks = np.repeat(np.arange(n_bins, dtype=np.intp), sizes)
        return RowBatch(np.broadcast_to(ranks, (r, n)), s, y, n_bins)
    return None


def batch_bin_stats(
    scores: np.ndarray, labels: np.ndarray, binning: str, n_bins: int, tie_policy: str = "split"
) -> tuple[np.ndarray, ...]:
    """Bin statistics of many datasets at once.

    Parameters
    ----------
    scores, labels : numpy.ndarray
        ``(R, n)``: one dataset per row.
    binning : str
        A registered binning.
    n_bins : int
        Number of bins ``B``.
    tie_policy : str
        Equal-mass tie policy.

    Returns
    -------
    counts, score_sums, label_sums : numpy.ndarray
        ``(R, B')`` each, identical to :func:`core.stats.binning.bin_stats` row by row.
    """
    return SizeBlock(np.atleast_2d(scores), np.atleast_2d(labels)).stats(
        binning, n_bins, tie_policy
    )


def batch_sweep(
    scores: np.ndarray,
    labels: np.ndarray,
    binning: str,
    norm: float,
    max_bins: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """ECE_sweep of many datasets at once (``tie_policy="split"``).

    The rule is that of :func:`core.estimators.binned.sweep_b_star`: for
    ``b = 2, 3, …, n − 1`` the mean outcomes of non-empty bins must not strictly
    decrease; the first failing ``b`` gives ``b* = b − 1``. The search is the
    estimator's own, :func:`core.estimators.binned.sweep_search`, run on all
    datasets at once (blocks of candidates, each dataset leaving at its first
    failure, and ``b* = n − 1`` at once for datasets whose every candidate is
    provably monotone); boundaries come from
    :func:`core.estimators.binned.sweep_row_starts`.

    Parameters
    ----------
    scores, labels : numpy.ndarray
        ``(R, n)``.
    binning : {"equal-mass", "equal-width"}
        Binning of the candidates.
    norm : float
        Norm of the final plug-in error.
    max_bins : int, optional
        Largest candidate (default ``n − 1``).

    Returns
    -------
    values : numpy.ndarray
        ``(R,)`` plug-in error with ``b*`` bins.
    b_star : numpy.ndarray
        ``(R,)`` int64 chosen numbers of bins.
    """
    info = ESTIMATORS.get("sweep")
    sample = SizeBlock(np.atleast_2d(scores), np.atleast_2d(labels)).sorted_rows(binning)
    options = info.check(options={"max_bins": max_bins})
    values, extras = info.kernel(sample, check_norm(norm), _context(options, sample.n_rows))
    return values, extras["b_star"]


@dataclass(frozen=True)
class _Sums:
    """Bin sums of datasets binned one by one (enough for estimators of the bins' sums)."""

    counts: np.ndarray
    score_sums: np.ndarray
    label_sums: np.ndarray


def _context(options: Any, r: int) -> KernelContext:
    return KernelContext(options, NormalStream(0), np.zeros(r, dtype=np.int64))


def estimate_block(
    spec: EstimatorSpec, block: SizeBlock, norm: float, seed: int, start: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every dataset's estimate (and the sweep's ``b*``), batched when the registry allows."""
    info = spec.info
    r = block.s.shape[0]
    nan = np.full(r, np.nan)
    if info.binned and not info.random(norm):
        ctx = _context(info.check(options={}), r)
        if info.statistics == "sorted" and spec.tie_policy == "split":
            values, extras = info.kernel(block.sorted_rows(spec.binning), norm, ctx)  # type: ignore[misc]
            return values, extras["b_star"].astype(np.float64)
        batch = block.batch(spec.binning, spec.n_bins, spec.tie_policy) if info.from_bins else None
        if batch is None and info.statistics == "bins":
            batch = _Sums(*block.stats(spec.binning, spec.n_bins, spec.tie_policy))
        if batch is not None:
            out = info.kernel(batch, norm, ctx)  # type: ignore[misc]
            values = out[0] if isinstance(out, tuple) else out
            return info.combine(values[:, None], np.ones(1), norm), nan
    return _per_replicate(spec, block.s, block.y, norm, seed, start)


def _per_replicate(
    spec: EstimatorSpec, s: np.ndarray, y: np.ndarray, norm: float, seed: int, start: int
) -> tuple[np.ndarray, np.ndarray]:
    """Registry call per dataset (estimators without a batch kernel, random estimators)."""
    func = spec.info.func
    out = np.empty(s.shape[0])
    b_star = np.full(s.shape[0], np.nan)
    for i in range(s.shape[0]):
        probs = np.column_stack([1.0 - s[i], s[i]])
        rng = stream(seed, start + i, 2)
        est = func(
            probs,
            y[i].astype(np.int64),
            lens="binary",
            norm=norm,
            binning=spec.binning,
            n_bins=spec.n_bins,
            tie_policy=spec.tie_policy,
            class_weights=None,
            class_names=None,
            rng=rng,
        )
        out[i] = est.value
        if "b_star" in est.details:
            b_star[i] = est.details["b_star"]
    return out, b_star
