"""The bias-vs-n runner: replicates, chunks, references and the summary table."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core.base.errors import ConfigError, DataError
from core.base.progress import Progress
from core.base.validation import check_norm
from core.bias.batches import SizeBlock, estimate_block
from core.bias.sources import DataSource, as_source, draw_replicate
from core.bias.specs import EstimatorSpec, default_estimators
from core.worlds.world import World, true_calibration_error

#: The paper's grid of sample sizes (Roelofs et al. 2022, §3.5).
DEFAULT_NS: tuple[int, ...] = (200, 400, 800, 1600, 3200, 6400, 12800)
#: Elements (replicates × max n) simulated at once; bounds memory at ~100 MB per chunk.
CHUNK_ELEMENTS = 2_000_000

MapFunction = Callable[[Callable[[tuple[int, int]], "ChunkResult"], Iterable[tuple[int, int]]], Iterable["ChunkResult"]]  # fmt: skip


class SimulationCancelled(RuntimeError):
    """Raised when a progress callback asks a running simulation to stop."""


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
        block = SizeBlock(big_s[:, :n], big_y[:, :n])
        for e, spec in enumerate(plan.specs):
            v, b = estimate_block(spec, block, plan.norm, plan.seed, start)
            values[e, j] = v
            b_star[e, j] = b
    return ChunkResult(start, stop, values, b_star)


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
    def n_resamples(self) -> int:
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

        Columns ``estimator`` (the shorthand key), ``label`` (:attr:`EstimatorSpec.display`), ``name, binning, n_bins, n, n_resamples, mean, reference,
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
                        "label": spec.display,
                        "name": spec.estimator,
                        "binning": spec.binning if spec.binned else "",
                        "n_bins": spec.n_bins if spec.fixed_bins else 0,
                        "n": n,
                        "n_resamples": r,
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
    n_resamples: int = 1000,
    seed: int = 0,
    norm: float | str = 2,
    progress: Progress | None = None,
    map_chunks: MapFunction | None = None,
    chunk_size: int | None = None,
) -> SimulationResult:
    """Simulate every estimator on ``n_resamples`` datasets of each size in ``ns``.

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
    n_resamples : int
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
    specs, p, ns_t, n_resamples = _check_run(estimators, norm, ns, n_resamples, seed)
    src, kind = as_source(source)
    if isinstance(src, DataSource) and ns_t[-1] > src.n:
        raise DataError(
            f"Subsampling draws without replacement, so n cannot exceed the {src.n} rows of the "
            f"data; the largest requested n is {ns_t[-1]}. Drop the larger sizes or simulate a "
            "fitted world instead."
        )
    plan = SimulationPlan(src, specs, ns_t, p, int(seed))
    size = chunk_size or max(1, CHUNK_ELEMENTS // ns_t[-1])
    ranges = [(a, min(a + size, n_resamples)) for a in range(0, n_resamples, size)]
    parts = _run_chunks(plan, ranges, n_resamples, progress, map_chunks)
    parts.sort(key=lambda c: c.start)
    values = np.concatenate([c.values for c in parts], axis=2)
    b_star = np.concatenate([c.b_star for c in parts], axis=2)
    reference = _reference(src, specs, p)
    label = src.label if isinstance(src, World) else f"subsamples of {src.name} (n={src.n})"
    return SimulationResult(specs, ns_t, values, b_star, reference, kind, p, int(seed), label)


def _check_run(
    estimators: Sequence[EstimatorSpec | str | tuple[Any, ...]] | None,
    norm: float | str,
    ns: Sequence[int],
    n_resamples: int,
    seed: int,
) -> tuple[tuple[EstimatorSpec, ...], float, tuple[int, ...], int]:
    """Return the estimators, norm, sizes and replicates of a run, checked."""
    specs = tuple(EstimatorSpec.parse(s) for s in (estimators or default_estimators()))
    if not specs:
        raise ConfigError("Choose at least one estimator.")
    p = check_norm(norm)
    for spec in specs:
        spec.info.check(norm=p)
    ns_t = _check_ns(ns)
    if isinstance(n_resamples, bool) or int(n_resamples) != n_resamples or n_resamples < 2:
        raise ConfigError(f"n_resamples must be a whole number ≥ 2; got {n_resamples!r}.")
    if not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(f"The seed must be a non-negative integer; got {seed!r}.")
    return specs, p, ns_t, int(n_resamples)


def _run_chunks(
    plan: SimulationPlan,
    ranges: list[tuple[int, int]],
    n_resamples: int,
    progress: Progress | None,
    map_chunks: MapFunction | None,
) -> list[ChunkResult]:
    """Run the replicate ranges, reporting progress after each; a ``False`` reply cancels."""
    mapper = map_chunks or (lambda f, xs: map(f, xs))
    parts: list[ChunkResult] = []
    for part in mapper(lambda ab: run_chunk(plan, ab[0], ab[1]), ranges):
        parts.append(part)
        done = sum(c.stop - c.start for c in parts)
        if (
            progress is not None
            and progress(done / n_resamples, f"{done}/{n_resamples} replicates") is False
        ):
            raise SimulationCancelled(f"Stopped after {done} of {n_resamples} replicates.")
    return parts


def _reference(src: World | DataSource, specs: tuple[EstimatorSpec, ...], p: float) -> np.ndarray:
    if isinstance(src, World):
        truth = true_calibration_error(src, norm=p)
        # ℓp estimators (binned or smooth, with a norm: not mcb) against the true ℓp error
        return np.array(
            [truth if s.info.lp_scale and s.info.norms is not None else np.nan for s in specs]
        )
    full = np.empty(len(specs))
    block = SizeBlock(src.scores[None, :], src.outcomes[None, :])
    for e, spec in enumerate(specs):
        v, _ = estimate_block(spec, block, p, 0, 0)
        full[e] = v[0]
    return full


def bias_vs_n(
    estimators: Sequence[EstimatorSpec | str | tuple[Any, ...]] | None,
    source: Any,
    *,
    ns: Sequence[int] = DEFAULT_NS,
    n_resamples: int = 1000,
    seed: int = 0,
    norm: float | str = 2,
    progress: Progress | None = None,
    map_chunks: MapFunction | None = None,
) -> pd.DataFrame:
    """Bias, spread and RMSE of calibration-error estimators against sample size.

    Parameters
    ----------
    estimators, source, ns, n_resamples, seed, norm, progress, map_chunks
        See :func:`simulate_estimates`.

    Returns
    -------
    pandas.DataFrame
        One row per (estimator, n): ``estimator, name, binning, n_bins, n,
        n_resamples, mean, reference, reference_kind, bias, sd, se, rmse, bias_low,
        bias_high, b_star, b_star_median, frac_zero`` (fractions, not percent).

    Examples
    --------
    >>> from core.worlds import PRESET_WORLDS
    >>> t = bias_vs_n(["plugin:equal-width:15"], PRESET_WORLDS["roelofs-fig1"],
    ...               ns=[200], n_resamples=50, seed=1)
    >>> float(t["reference"].iloc[0]), bool(t["bias"].iloc[0] > 0.03)
    (0.0, True)
    """
    return simulate_estimates(
        estimators,
        source,
        ns=ns,
        n_resamples=n_resamples,
        seed=seed,
        norm=norm,
        progress=progress,
        map_chunks=map_chunks,
    ).summary()
