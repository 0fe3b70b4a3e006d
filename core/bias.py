"""Bias of calibration-error estimators against sample size (bias by construction).

Draw ``replicates`` datasets of each size ``n`` from a source, compute every
requested estimator on each, and summarise mean, bias, spread and RMSE against
a reference (Roelofs et al. 2022, §4 and Eq. 7). Three sources:

- a :class:`~core.worlds.World` with known truth (``reference_kind="true CE"``);
- a world fitted to data (:class:`~core.worlds.fitting.WorldFit`,
  ``"true CE of the fitted world"``);
- the uploaded data itself, subsampled without replacement (``"full-data
  estimate"``: the estimator on all rows, a labelled reference, not the truth).

Randomness: replicate ``r`` draws from ``SeedSequence(seed, spawn_key=(r, k))``
(see :func:`draw_replicate`) and uses nested prefixes of one draw of size
``max(ns)``, so all estimators and all ``n`` share common random numbers,
and any split of the replicates into chunks (one process, joblib, Dask, Ray)
gives identical results for a given seed.

Binned estimators are vectorised across replicates: bin statistics are built
for a whole chunk of replicates at once and passed to the estimators' batch
kernels (:func:`~core.estimators.plugin_from_stats`,
:func:`~core.estimators.debiased_sq_from_stats`); the monotone sweep runs on all
replicates of a chunk at once through the estimator's own search,
:func:`~core.estimators.binned.sweep_search`. Other estimators are called once
per replicate through the registry.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core._validation import check_norm, check_probs_labels
from core.binning import BINNINGS, RowBatch, check_n_bins, check_tie_policy, equal_mass_starts
from core.errors import ConfigError, DataError
from core.estimators import ESTIMATORS
from core.estimators.base import EstimatorInfo, KernelContext, NormalStream
from core.estimators.binned import SortedRows
from core.lenses import apply_lens
from core.worlds.fitting import WorldFit
from core.worlds.scores import BetaScores, UniformScores
from core.worlds.world import World, polynomial_for_tce, polynomial_world, true_calibration_error

#: The paper's grid of sample sizes (Roelofs et al. 2022, §3.5).
DEFAULT_NS: tuple[int, ...] = (200, 400, 800, 1600, 3200, 6400, 12800)
#: Elements (replicates × max n) simulated at once; bounds memory at ~100 MB per chunk.
CHUNK_ELEMENTS = 2_000_000

ProgressCallback = Callable[[float, str], "bool | None"]
MapFunction = Callable[[Callable[[tuple[int, int]], "ChunkResult"], Iterable[tuple[int, int]]], Iterable["ChunkResult"]]  # fmt: skip


class SimulationCancelled(RuntimeError):
    """Raised when a progress callback asks a running simulation to stop."""


# --------------------------------------------------------------------------- estimator specs


_SHORT = {"equal-width": "EW", "equal-mass": "EM", "discrete": "discrete"}


@dataclass(frozen=True)
class EstimatorSpec:
    """One estimator configuration of a bias-vs-n run.

    Parameters
    ----------
    estimator : str
        A name in :data:`core.estimators.ESTIMATORS`.
    binning : str
        Binning scheme (binned estimators).
    n_bins : int
        Number of bins (ignored by the sweep, which chooses ``b*``).
    tie_policy : {"split", "keep"}
        Equal-mass tie policy.
    """

    estimator: str
    binning: str = "equal-mass"
    n_bins: int = 15
    tie_policy: str = "split"

    def __post_init__(self) -> None:
        check_n_bins(self.n_bins)
        check_tie_policy(self.tie_policy)
        ESTIMATORS.check(self.estimator, binning=self.binning)

    @classmethod
    def parse(cls, spec: EstimatorSpec | str | tuple[Any, ...]) -> EstimatorSpec:
        """Build a spec from ``"name"``, ``"name:binning"``, ``"name:binning:bins"`` or a tuple."""
        if isinstance(spec, EstimatorSpec):
            return spec
        if isinstance(spec, str):
            parts = spec.split(":")
        elif isinstance(spec, tuple):
            parts = list(spec)
        else:
            raise ConfigError(f"Cannot read an estimator from {spec!r}; use 'name:binning:bins'.")
        if not 1 <= len(parts) <= 4:
            raise ConfigError(f"Cannot read an estimator from {spec!r}; use 'name:binning:bins'.")
        kwargs: dict[str, Any] = {"estimator": parts[0]}
        if len(parts) > 1:
            kwargs["binning"] = parts[1]
        if len(parts) > 2:
            kwargs["n_bins"] = int(parts[2])
        if len(parts) > 3:
            kwargs["tie_policy"] = parts[3]
        return cls(**kwargs)

    @property
    def info(self) -> EstimatorInfo:
        """The estimator's registry entry."""
        return ESTIMATORS.get(self.estimator)

    @property
    def binned(self) -> bool:
        """Whether the estimator bins (and so estimates the true ℓp calibration error)."""
        return self.info.binned

    @property
    def fixed_bins(self) -> bool:
        """Whether it bins with ``n_bins`` bins (the sweep chooses its own number)."""
        return self.binned and self.info.statistics != "sorted"

    @property
    def label(self) -> str:
        """Short label, e.g. ``"plugin EM-15"`` or ``"sweep EW"``."""
        if not self.binned:
            return self.estimator
        short = _SHORT.get(self.binning, self.binning)
        if not self.fixed_bins:
            return f"{self.estimator} {short}"
        return f"{self.estimator} {short}-{self.n_bins}"


def default_estimators(n_bins: int = 15) -> tuple[EstimatorSpec, ...]:
    """Return the paper's six binned estimators: plug-in, debiased and sweep, each EW and EM."""
    return tuple(
        EstimatorSpec(name, binning, n_bins)
        for name in ("plugin", "debiased", "sweep")
        for binning in ("equal-width", "equal-mass")
    )


# --------------------------------------------------------------------------- sources


@dataclass(frozen=True, eq=False)
class DataSource:
    """Observed 1-D scores and 0/1 outcomes, subsampled without replacement.

    Build it with :func:`data_source` from predictions and a lens.
    """

    scores: np.ndarray
    outcomes: np.ndarray
    name: str = "data"

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.scores.shape[0])


def data_source(
    probs: ArrayLike, labels: ArrayLike, *, lens: str = "top-label", name: str = "data"
) -> DataSource:
    """Return the 1-D view of predictions (binary or top-label lens) for subsampling.

    Parameters
    ----------
    probs, labels : array_like
        Predictions ``(n,)`` or ``(n, K)`` and class labels.
    lens : {"top-label", "binary"}
        The lens giving one score and one outcome per row.
    name : str
        Label of the source.

    Returns
    -------
    DataSource
        Scores and outcomes.
    """
    if lens not in ("top-label", "binary"):
        raise ConfigError(
            f"Subsampling needs one score per row: use the 'top-label' or 'binary' lens, not {lens!r}."
        )
    p, y = check_probs_labels(probs, labels)
    view = apply_lens(p, y, lens)
    return DataSource(view.scores[0], view.outcomes[0], name)


Source = World | WorldFit | DataSource


def _as_source(source: Any) -> tuple[World | DataSource, str]:
    if isinstance(source, WorldFit):
        return source.world, "true CE of the fitted world"
    if isinstance(source, World):
        return source, "true CE"
    if isinstance(source, DataSource):
        return source, "full-data estimate"
    if hasattr(source, "probs") and hasattr(source, "labels"):
        return data_source(source.probs, source.labels), "full-data estimate"
    if isinstance(source, tuple) and len(source) == 2:
        return data_source(*source), "full-data estimate"
    raise ConfigError(
        "The source must be a World, a fitted world (core.worlds.fit_world), Predictions, "
        "a (probs, labels) pair or a DataSource."
    )


def _stream(seed: int, r: int, k: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(r, k)))


def draw_replicate(
    source: World | DataSource, n: int, seed: int, replicate: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return dataset number ``replicate`` of a run, of size ``n``.

    Scores, labels and random estimators use separate streams
    ``SeedSequence(seed, spawn_key=(replicate, 0 | 1 | 2))``, and draws are
    sequential, so the dataset of size ``n`` is the prefix of any larger one:
    datasets nest across ``n`` and do not depend on the other sizes of a run.

    Parameters
    ----------
    source : World or DataSource
        A world, or data to subsample without replacement.
    n : int
        Dataset size.
    seed : int
        Seed of the run.
    replicate : int
        Replicate index.

    Returns
    -------
    scores, labels : numpy.ndarray
        ``(n,)`` float64 each (labels are 0.0/1.0).
    """
    if isinstance(source, World):
        scores = source.scores.sample(n, _stream(seed, replicate, 0))
        u = _stream(seed, replicate, 1).random(n)
        return scores, (u < source.curve(scores)).astype(np.float64)
    rows = _stream(seed, replicate, 0).permutation(source.n)[:n]
    return source.scores[rows], source.outcomes[rows]


# --------------------------------------------------------------------------- batched kernels


class _Block:
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


def _block_batch(block: _Block, binning: str, n_bins: int, tie_policy: str) -> RowBatch | None:
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
        ``(R, B')`` each, identical to :func:`core.binning.bin_stats` row by row.
    """
    return _Block(np.atleast_2d(scores), np.atleast_2d(labels)).stats(binning, n_bins, tie_policy)


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
    sample = _Block(np.atleast_2d(scores), np.atleast_2d(labels)).sorted_rows(binning)
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


# --------------------------------------------------------------------------- the runner


@dataclass(frozen=True, eq=False)
class SimulationPlan:
    """Everything a worker needs to compute a range of replicates (picklable)."""

    source: World | DataSource
    specs: tuple[EstimatorSpec, ...]
    ns: tuple[int, ...]
    norm: float
    seed: int


@dataclass(frozen=True, eq=False)
class ChunkResult:
    """Estimates of replicates ``start … stop − 1``: ``values``/``b_star`` are ``(E, N, stop − start)``."""

    start: int
    stop: int
    values: np.ndarray
    b_star: np.ndarray


def run_chunk(plan: SimulationPlan, start: int, stop: int) -> ChunkResult:
    """Compute every estimator at every ``n`` for replicates ``start … stop − 1``.

    The result depends only on ``plan`` and the replicate indices, so chunks can
    be computed anywhere (threads, processes, cluster workers) and concatenated.

    Parameters
    ----------
    plan : SimulationPlan
        Source, estimators, sizes, norm and seed.
    start, stop : int
        Replicate range.

    Returns
    -------
    ChunkResult
        The estimates.
    """
    n_max = max(plan.ns)
    draws = [draw_replicate(plan.source, n_max, plan.seed, r) for r in range(start, stop)]
    big_s = np.stack([d[0] for d in draws])
    big_y = np.stack([d[1] for d in draws])
    m = stop - start
    values = np.full((len(plan.specs), len(plan.ns), m), np.nan)
    b_star = np.full_like(values, np.nan)
    for j, n in enumerate(plan.ns):
        block = _Block(big_s[:, :n], big_y[:, :n])
        for e, spec in enumerate(plan.specs):
            v, b = _estimate_block(spec, block, plan.norm, plan.seed, start)
            values[e, j] = v
            b_star[e, j] = b
    return ChunkResult(start, stop, values, b_star)


def _estimate_block(
    spec: EstimatorSpec, block: _Block, norm: float, seed: int, start: int
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
        rng = _stream(seed, start + i, 2)
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


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """Raw estimates of a bias-vs-n run and their reference values.

    Attributes
    ----------
    specs : tuple of EstimatorSpec
        Estimators, in the order of the first axis.
    ns : tuple of int
        Sample sizes, in the order of the second axis.
    values : numpy.ndarray
        ``(E, N, R)`` estimates (fractions, not percent).
    b_star : numpy.ndarray
        ``(E, N, R)`` bins chosen by the sweep (NaN for other estimators).
    reference : numpy.ndarray
        ``(E,)`` reference per estimator (the true CE, or the full-data estimate;
        NaN where the estimator does not estimate the true ℓp error).
    reference_kind : str
        ``"true CE"``, ``"true CE of the fitted world"`` or ``"full-data estimate"``.
    norm : float
        The ℓp norm.
    seed : int
        The seed.
    source_label : str
        What was simulated.
    """

    specs: tuple[EstimatorSpec, ...]
    ns: tuple[int, ...]
    values: np.ndarray
    b_star: np.ndarray
    reference: np.ndarray
    reference_kind: str
    norm: float
    seed: int
    source_label: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def replicates(self) -> int:
        """Number of replicates per ``n``."""
        return int(self.values.shape[2])

    def estimates(self, spec: EstimatorSpec | str, n: int) -> np.ndarray:
        """Return the ``R`` estimates of one estimator (spec or label) at one ``n``."""
        labels = [s.label for s in self.specs]
        key = spec.label if isinstance(spec, EstimatorSpec) else spec
        if key not in labels:
            raise ConfigError(f"No estimator {key!r} in this run; it has {', '.join(labels)}.")
        if n not in self.ns:
            raise ConfigError(f"No sample size {n} in this run; it has {self.ns}.")
        return self.values[labels.index(key), self.ns.index(n)]

    def summary(self) -> pd.DataFrame:
        """Tidy table: one row per (estimator, n).

        Columns ``estimator, name, binning, n_bins, n, replicates, mean, reference,
        reference_kind, bias, sd, se, rmse, bias_low, bias_high, b_star, b_star_median,
        frac_zero``; ``bias_low``/``bias_high`` are ``bias ∓ 1.96·se``.
        """
        v = self.values
        r = v.shape[2]
        mean = v.mean(axis=2)
        sd = v.std(axis=2, ddof=1) if r > 1 else np.full(mean.shape, np.nan)
        ref = self.reference[:, None]
        bias = mean - ref
        rmse = np.sqrt(np.mean((v - ref[..., None]) ** 2, axis=2))
        se = sd / np.sqrt(r)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows of non-sweep estimators
            bstar = np.nanmean(self.b_star, axis=2) if np.isfinite(self.b_star).any() else None
            bmed = np.nanmedian(self.b_star, axis=2) if bstar is not None else None
        rows = []
        for e, spec in enumerate(self.specs):
            for j, n in enumerate(self.ns):
                is_sweep = np.isfinite(self.b_star[e, j]).any()
                rows.append(
                    {
                        "estimator": spec.label,
                        "name": spec.estimator,
                        "binning": spec.binning if spec.binned else "",
                        "n_bins": spec.n_bins if spec.fixed_bins else 0,
                        "n": n,
                        "replicates": r,
                        "mean": mean[e, j],
                        "reference": self.reference[e],
                        "reference_kind": self.reference_kind,
                        "bias": bias[e, j],
                        "sd": sd[e, j],
                        "se": se[e, j],
                        "rmse": rmse[e, j],
                        "bias_low": bias[e, j] - 1.96 * se[e, j],
                        "bias_high": bias[e, j] + 1.96 * se[e, j],
                        "b_star": bstar[e, j] if is_sweep and bstar is not None else np.nan,
                        "b_star_median": bmed[e, j] if is_sweep and bmed is not None else np.nan,
                        "frac_zero": float(np.mean(v[e, j] == 0.0)),
                    }
                )
        return pd.DataFrame(rows)


@dataclass(frozen=True, eq=False)
class EstimateHistogram:
    """Sampling distributions of estimators on shared bins, exact zeros counted apart.

    Attributes
    ----------
    labels : tuple of str
        The estimators.
    edges : numpy.ndarray
        ``(B + 2,)`` equal-width edges from 0 (fractions): ``B`` bins up to the largest
        estimate and one more that holds it.
    shares : numpy.ndarray
        ``(E, B + 1)`` share of all datasets whose estimate is non-zero and in the bin.
    zero_shares : numpy.ndarray
        ``(E,)`` share of datasets whose estimate is exactly 0 (the debiased estimator is
        clipped there); each row of ``shares`` and its zero share sum to 1.
    means : numpy.ndarray
        ``(E,)`` mean estimate (fractions).
    """

    labels: tuple[str, ...]
    edges: np.ndarray
    shares: np.ndarray
    zero_shares: np.ndarray
    means: np.ndarray


def estimate_histogram(
    estimates: Mapping[str, ArrayLike], *, n_bins: int = 40
) -> EstimateHistogram:
    """Bin simulated estimates of several estimators on shared edges.

    Parameters
    ----------
    estimates : mapping
        Estimator label → simulated estimates (fractions), e.g.
        :meth:`SimulationResult.estimates` of one ``n``.
    n_bins : int, default 40
        Bins between 0 and the largest estimate of all estimators.

    Returns
    -------
    EstimateHistogram
        Shares per bin and of exact zeros, and the mean of each estimator.
    """
    values = [np.asarray(v, dtype=np.float64) for v in estimates.values()]
    pooled = np.concatenate(values) if values else np.empty(0)
    top = float(np.nanmax(pooled)) if pooled.size else 0.01
    edges = np.arange(n_bins + 2) * (max(top, 1e-11) / n_bins)
    shares, zeros = [], []
    for v in values:
        zero = v == 0.0
        counts, _ = np.histogram(v[~zero], bins=edges)
        shares.append(counts / v.size)
        zeros.append(float(zero.mean()))
    return EstimateHistogram(
        labels=tuple(estimates),
        edges=edges,
        shares=np.array(shares).reshape(len(values), n_bins + 1),
        zero_shares=np.array(zeros),
        means=np.array([v.mean() for v in values]),
    )


def _check_ns(ns: Sequence[int]) -> tuple[int, ...]:
    out = tuple(sorted({int(n) for n in ns}))
    if not out or any(n < 2 for n in out):
        raise ConfigError(f"Sample sizes must be whole numbers ≥ 2; got {list(ns)}.")
    return out


def simulate_estimates(
    estimators: Sequence[EstimatorSpec | str | tuple[Any, ...]] | None,
    source: Any,
    *,
    ns: Sequence[int] = DEFAULT_NS,
    replicates: int = 1000,
    seed: int = 0,
    norm: float | str = 2,
    progress: ProgressCallback | None = None,
    map_chunks: MapFunction | None = None,
    chunk_size: int | None = None,
) -> SimulationResult:
    """Simulate every estimator on ``replicates`` datasets of each size in ``ns``.

    Parameters
    ----------
    estimators : sequence of EstimatorSpec, str or tuple, or None
        Estimators (``"plugin:equal-mass:15"``, ``("sweep", "equal-width")``, …);
        ``None`` means :func:`default_estimators`.
    source : World, WorldFit, Predictions, (probs, labels) or DataSource
        What to draw datasets from (see the module docstring).
    ns : sequence of int
        Sample sizes (sorted, duplicates dropped). When subsampling data, each
        must be at most the number of rows.
    replicates : int
        Datasets per sample size (the paper uses 1000).
    seed : int
        Seed of the run; results for a seed do not depend on chunking.
    norm : {1, 2, inf}
        ℓp norm of the estimators and of the true calibration error.
    progress : callable, optional
        ``progress(fraction_done, message)`` after each chunk; returning ``False``
        cancels the run with :class:`SimulationCancelled`.
    map_chunks : callable, optional
        ``map_chunks(func, ranges)`` applying ``func`` to each ``(start, stop)``
        replicate range, e.g. a joblib, Dask or Ray map; default the built-in
        ``map`` (in order, with progress after each chunk).
    chunk_size : int, optional
        Replicates per chunk (default: about 2 million simulated points per chunk).

    Returns
    -------
    SimulationResult
        Raw estimates and references; ``.summary()`` gives the tidy table.
    """
    specs = tuple(EstimatorSpec.parse(s) for s in (estimators or default_estimators()))
    if not specs:
        raise ConfigError("Choose at least one estimator.")
    p = check_norm(norm)
    for spec in specs:
        spec.info.check(norm=p)
    ns_t = _check_ns(ns)
    if isinstance(replicates, bool) or int(replicates) != replicates or replicates < 2:
        raise ConfigError(f"replicates must be a whole number ≥ 2; got {replicates!r}.")
    replicates = int(replicates)
    if not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(f"The seed must be a non-negative integer; got {seed!r}.")
    src, kind = _as_source(source)
    if isinstance(src, DataSource) and ns_t[-1] > src.n:
        raise DataError(
            f"Subsampling draws without replacement, so n cannot exceed the {src.n} rows of the "
            f"data; the largest requested n is {ns_t[-1]}. Drop the larger sizes or simulate a "
            "fitted world instead."
        )
    plan = SimulationPlan(src, specs, ns_t, p, int(seed))
    size = chunk_size or max(1, CHUNK_ELEMENTS // ns_t[-1])
    ranges = [(a, min(a + size, replicates)) for a in range(0, replicates, size)]
    mapper = map_chunks or (lambda f, xs: map(f, xs))
    parts: list[ChunkResult] = []
    for part in mapper(lambda ab: run_chunk(plan, ab[0], ab[1]), ranges):
        parts.append(part)
        done = sum(c.stop - c.start for c in parts)
        if (
            progress is not None
            and progress(done / replicates, f"{done}/{replicates} replicates") is False
        ):
            raise SimulationCancelled(f"Stopped after {done} of {replicates} replicates.")
    parts.sort(key=lambda c: c.start)
    values = np.concatenate([c.values for c in parts], axis=2)
    b_star = np.concatenate([c.b_star for c in parts], axis=2)
    reference = _reference(src, specs, p)
    label = src.label if isinstance(src, World) else f"subsamples of {src.name} (n={src.n})"
    return SimulationResult(specs, ns_t, values, b_star, reference, kind, p, int(seed), label)


def _reference(src: World | DataSource, specs: tuple[EstimatorSpec, ...], p: float) -> np.ndarray:
    if isinstance(src, World):
        truth = true_calibration_error(src, norm=p)
        return np.array([truth if s.binned else np.nan for s in specs])
    full = np.empty(len(specs))
    block = _Block(src.scores[None, :], src.outcomes[None, :])
    for e, spec in enumerate(specs):
        v, _ = _estimate_block(spec, block, p, 0, 0)
        full[e] = v[0]
    return full


def bias_vs_n(
    estimators: Sequence[EstimatorSpec | str | tuple[Any, ...]] | None,
    source: Any,
    *,
    ns: Sequence[int] = DEFAULT_NS,
    replicates: int = 1000,
    seed: int = 0,
    norm: float | str = 2,
    progress: ProgressCallback | None = None,
    map_chunks: MapFunction | None = None,
) -> pd.DataFrame:
    """Bias, spread and RMSE of calibration-error estimators against sample size.

    Parameters
    ----------
    estimators, source, ns, replicates, seed, norm, progress, map_chunks
        See :func:`simulate_estimates`.

    Returns
    -------
    pandas.DataFrame
        One row per (estimator, n): ``estimator, name, binning, n_bins, n,
        replicates, mean, reference, reference_kind, bias, sd, se, rmse, bias_low,
        bias_high, b_star, b_star_median, frac_zero`` (fractions, not percent).

    Examples
    --------
    >>> from core.worlds import PRESET_WORLDS
    >>> t = bias_vs_n(["plugin:equal-width:15"], PRESET_WORLDS["roelofs-fig1"],
    ...               ns=[200], replicates=50, seed=1)
    >>> float(t["reference"].iloc[0]), bool(t["bias"].iloc[0] > 0.03)
    (0.0, True)
    """
    return simulate_estimates(
        estimators,
        source,
        ns=ns,
        replicates=replicates,
        seed=seed,
        norm=norm,
        progress=progress,
        map_chunks=map_chunks,
    ).summary()


# --------------------------------------------------------------------------- derived views


def bias_heatmap(
    source: Any,
    *,
    binning: str = "equal-width",
    bins: Sequence[int] = (2, 4, 8, 16, 32, 64),
    ns: Sequence[int] = (200, 400, 800, 1600, 3200, 6400),
    replicates: int = 1000,
    seed: int = 0,
    norm: float | str = 2,
    include_sweep: bool = True,
    progress: ProgressCallback | None = None,
) -> pd.DataFrame:
    """Bias of ECE_bin over (n, number of bins), plus the sweep row (Roelofs et al. Fig. 2b).

    Returns
    -------
    pandas.DataFrame
        The :func:`bias_vs_n` table for ``plugin`` at each bin count (and
        ``sweep``), with a ``row`` column: the bin count, or ``"sweep"``.
    """
    specs: list[EstimatorSpec] = [EstimatorSpec("plugin", binning, int(b)) for b in bins]
    if include_sweep:
        specs.append(EstimatorSpec("sweep", binning))
    table = bias_vs_n(
        specs, source, ns=ns, replicates=replicates, seed=seed, norm=norm, progress=progress
    )
    table["row"] = [
        str(b) if b else name for name, b in zip(table["name"], table["n_bins"], strict=True)
    ]
    return table


def ece_vs_tce(
    scores: BetaScores | UniformScores,
    *,
    estimator: EstimatorSpec | str = "plugin:equal-width:15",
    n: int = 200,
    exponents: Sequence[float] | None = None,
    replicates: int = 500,
    seed: int = 0,
    progress: ProgressCallback | None = None,
) -> pd.DataFrame:
    """Mean and 5–95 % band of an estimator against the true ℓ2 CE (Roelofs et al. Fig. 13).

    Worlds are ``mu(c) = c**d`` for ``d`` in ``exponents`` (default 25 values from
    1 to 10) with the given score distribution.

    Returns
    -------
    pandas.DataFrame
        ``d, tce, mean, q05, q50, q95, sd`` (fractions), sorted by ``tce``.
    """
    ds = np.asarray(
        exponents if exponents is not None else np.geomspace(1.0, 10.0, 25), dtype=np.float64
    )
    spec = EstimatorSpec.parse(estimator)
    rows = []
    for i, d in enumerate(ds):
        world = polynomial_world(scores, float(d))
        res = simulate_estimates([spec], world, ns=[n], replicates=replicates, seed=seed, norm=2)
        v = res.values[0, 0]
        rows.append(
            {
                "d": float(d),
                "tce": float(res.reference[0]),
                "mean": float(v.mean()),
                "q05": float(np.quantile(v, 0.05)),
                "q50": float(np.quantile(v, 0.5)),
                "q95": float(np.quantile(v, 0.95)),
                "sd": float(v.std(ddof=1)),
            }
        )
        if (
            progress is not None
            and progress((i + 1) / ds.size, f"world {i + 1}/{ds.size}") is False
        ):
            raise SimulationCancelled(f"Stopped after {i + 1} of {ds.size} worlds.")
    return pd.DataFrame(rows).sort_values("tce", kind="stable").reset_index(drop=True)


def consistent_tce_range(table: pd.DataFrame, observed: float) -> tuple[float, float, bool]:
    """Return the true CEs whose 5–95 % band contains an observed estimate.

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`ece_vs_tce`.
    observed : float
        The observed estimate (fraction).

    Returns
    -------
    low, high : float
        The range of TCE (interpolated) with ``q05 <= observed <= q95``.
    open_above : bool
        True when the range reaches the largest simulated TCE (widen the family).
    """
    t = table.sort_values("tce")
    tce = t["tce"].to_numpy()
    grid = np.linspace(tce[0], tce[-1], 2001)
    q05 = np.interp(grid, tce, t["q05"].to_numpy())
    q95 = np.interp(grid, tce, t["q95"].to_numpy())
    ok = (q05 <= observed) & (observed <= q95)
    if not ok.any():
        return float("nan"), float("nan"), False
    inside = grid[ok]
    return float(inside.min()), float(inside.max()), bool(ok[-1])


def detection_power(
    scores: BetaScores | UniformScores,
    *,
    targets: Sequence[float] = (0.02, 0.05, 0.10),
    ns: Sequence[int] = (200, 500, 1000, 2000, 5000, 10000, 20000),
    estimator: EstimatorSpec | str = "sweep:equal-mass",
    replicates: int = 500,
    level: float = 0.05,
    seed: int = 0,
    progress: ProgressCallback | None = None,
) -> pd.DataFrame:
    """How often an estimator detects a given true CE at each n (Roelofs et al. §7.2, Fig. 5).

    The critical value at each ``n`` is the ``1 − level`` quantile of the
    estimator under the perfectly calibrated world with the same scores; a
    world ``c**d`` with ℓ2 TCE equal to each target is detected when its
    estimate exceeds it.

    Returns
    -------
    pandas.DataFrame
        ``target, d, n, critical, power, miss_rate``.
    """
    if not 0 < level < 1:
        raise ConfigError(f"level must lie in (0, 1); got {level}.")
    spec = EstimatorSpec.parse(estimator)
    null = World(scores, polynomial_world(scores, 1.0).curve, name="calibrated")
    worlds = [null] + [polynomial_world(scores, polynomial_for_tce(t, scores)) for t in targets]
    results = []
    for i, w in enumerate(worlds):
        results.append(
            simulate_estimates([spec], w, ns=ns, replicates=replicates, seed=seed + i, norm=2)
        )
        if progress is not None and progress((i + 1) / len(worlds), f"world {i + 1}") is False:
            raise SimulationCancelled("Stopped.")
    crit = np.quantile(results[0].values[0], 1.0 - level, axis=1)
    rows = []
    for t, w, res in zip(targets, worlds[1:], results[1:], strict=True):
        power = (res.values[0] > crit[:, None]).mean(axis=1)
        for j, n in enumerate(res.ns):
            rows.append(
                {
                    "target": float(t),
                    "d": float(w.curve.d),  # type: ignore[union-attr]
                    "n": n,
                    "critical": float(crit[j]),
                    "power": float(power[j]),
                    "miss_rate": float(1.0 - power[j]),
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- teaching presets


@dataclass(frozen=True)
class TeachingPreset:
    """A one-click lesson of the Bias page.

    Attributes
    ----------
    key : str
        Identifier.
    title : str
        Button text.
    lesson : str
        What the user should see, with the published number it reproduces.
    view : {"distribution", "bias", "heatmap", "power"}
        Which view the preset opens.
    world : str
        A key of :data:`core.PRESET_WORLDS` (unused by the power view).
    estimators : tuple of str
        Estimator specs.
    ns : tuple of int
        Sample sizes.
    replicates : int
        Replicates per n.
    """

    key: str
    title: str
    lesson: str
    view: str
    world: str
    estimators: tuple[str, ...]
    ns: tuple[int, ...]
    replicates: int = 1000


TEACHING_PRESETS: dict[str, TeachingPreset] = {
    p.key: p
    for p in (
        TeachingPreset(
            "fig1",
            "Perfectly calibrated but ECE says 6.7 %",
            "A perfectly calibrated model with CIFAR-10-like confidences, Beta(2.8, 0.05), "
            "n = 200 and 15 equal-width bins: ECE_bin (ℓ2) averages about 6.7 %, not 0 "
            "(Roelofs et al. 2022, Fig. 1).",
            "distribution",
            "roelofs-fig1",
            ("plugin:equal-width:15", "plugin:equal-mass:15", "debiased:equal-mass:15"),
            (200,),
        ),
        TeachingPreset(
            "em-vs-ew",
            "EM beats EW on skewed scores",
            "On the CIFAR-10 ResNet-110 fit, equal-mass binning has a smaller |bias| than "
            "equal-width for every binned estimator, and ECE_sweep (EM) is best "
            "(Roelofs et al. 2022, Fig. 4).",
            "bias",
            "resnet110_c10",
            tuple(
                f"{e}:{b}:15"
                for e in ("plugin", "debiased", "sweep")
                for b in ("equal-width", "equal-mass")
            ),
            DEFAULT_NS,
        ),
        TeachingPreset(
            "bins-grow",
            "Optimal number of bins grows with n",
            "Beta(1.1, 0.1) scores with μ(c) = c²: the bin count with the smallest |bias| "
            "grows with n, and ECE_bin both over- and underestimates (Roelofs et al. 2022, Fig. 2b).",
            "heatmap",
            "roelofs-fig2b",
            ("plugin:equal-width",),
            (200, 400, 800, 1600, 3200, 6400),
            500,
        ),
        TeachingPreset(
            "detect-2pct",
            "How many samples to detect 2 %?",
            "Uniform scores with μ(c) = c^d: a 2 % true CE needs about 10,000 samples to be "
            "detected reliably, and below 500 samples only ≳10 % is (Roelofs et al. 2022, §7.2, Fig. 5).",
            "power",
            "",
            ("sweep:equal-mass", "plugin:equal-width:15"),
            (200, 500, 1000, 2000, 5000, 10000, 20000),
            400,
        ),
    )
}
