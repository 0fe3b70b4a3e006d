"""Views derived from bias-vs-n runs: heat maps, ECE against true CE, detection power."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core.base.errors import ConfigError
from core.bias.runner import (
    Progress,
    SimulationCancelled,
    bias_vs_n,
    simulate_estimates,
)
from core.bias.sources import simulation_lens
from core.bias.specs import EstimatorSpec
from core.inference.calibration import calibration_error
from core.worlds.scores import BetaScores, UniformScores
from core.worlds.world import World, polynomial_for_tce, polynomial_world


def bias_heatmap(
    source: Any,
    *,
    binning: str = "equal-width",
    bins: Sequence[int] = (2, 4, 8, 16, 32, 64),
    ns: Sequence[int] = (200, 400, 800, 1600, 3200, 6400),
    n_resamples: int = 1000,
    seed: int = 0,
    norm: float | str = 2,
    include_sweep: bool = True,
    progress: Progress | None = None,
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
        specs, source, ns=ns, n_resamples=n_resamples, seed=seed, norm=norm, progress=progress
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
    n_resamples: int = 500,
    seed: int = 0,
    progress: Progress | None = None,
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
        res = simulate_estimates([spec], world, ns=[n], n_resamples=n_resamples, seed=seed, norm=2)
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
    n_resamples: int = 500,
    alpha: float = 0.05,
    seed: int = 0,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """How often an estimator detects a given true CE at each n (Roelofs et al. §7.2, Fig. 5).

    The critical value at each ``n`` is the ``1 − alpha`` quantile of the
    estimator under the perfectly calibrated world with the same scores; a
    world ``c**d`` with ℓ2 TCE equal to each target is detected when its
    estimate exceeds it.

    Returns
    -------
    pandas.DataFrame
        ``target, d, n, critical, power, miss_rate``.
    """
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must lie in (0, 1); got {alpha}.")
    spec = EstimatorSpec.parse(estimator)
    null = World(scores, polynomial_world(scores, 1.0).curve, name="calibrated")
    worlds = [null] + [polynomial_world(scores, polynomial_for_tce(t, scores)) for t in targets]
    results = []
    for i, w in enumerate(worlds):
        results.append(
            simulate_estimates([spec], w, ns=ns, n_resamples=n_resamples, seed=seed + i, norm=2)
        )
        if progress is not None and progress((i + 1) / len(worlds), f"world {i + 1}") is False:
            raise SimulationCancelled("Stopped.")
    crit = np.quantile(results[0].values[0], 1.0 - alpha, axis=1)
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


def least_biased_bins(heatmap: pd.DataFrame) -> pd.DataFrame:
    """Return the bin count with the smallest |bias| at each ``n`` of a heat map.

    Parameters
    ----------
    heatmap : pandas.DataFrame
        Output of :func:`bias_heatmap` (the sweep's row, with no fixed bin count, is left out).

    Returns
    -------
    pandas.DataFrame
        ``n, n_bins, bias`` sorted by ``n``.
    """
    fixed = heatmap[heatmap["n_bins"] > 0].assign(abs_bias=lambda t: t["bias"].abs())
    best = fixed.loc[fixed.groupby("n")["abs_bias"].idxmin()]
    return best[["n", "n_bins", "bias"]].sort_values("n").reset_index(drop=True)


def n_for_power(power: pd.DataFrame, *, target: float, rate: float = 0.8) -> int | None:
    """Return the smallest ``n`` at which a true CE of ``target`` is detected often enough.

    Parameters
    ----------
    power : pandas.DataFrame
        Output of :func:`detection_power`.
    target : float
        A true calibration error of the run (e.g. 0.02).
    rate : float, default=0.8
        The detection rate asked for.

    Returns
    -------
    int or None
        The smallest simulated ``n`` with power ≥ ``rate``, or None when none reaches it.
    """
    hits = power[np.isclose(power["target"], target) & (power["power"] >= rate)]
    return int(hits["n"].min()) if len(hits) else None


def observed_estimate(
    predictions: Any, spec: EstimatorSpec | str, lens: str, *, norm: float | str = 2
) -> float:
    """Return an estimator's value on the data, read through the simulation lens.

    Parameters
    ----------
    predictions : core.data.Predictions
        The data.
    spec : EstimatorSpec or str
        The estimator (see :meth:`EstimatorSpec.parse`).
    lens : str
        The analysis lens (see :func:`core.bias.sources.simulation_lens`).
    norm : {1, 2, inf}, default=2
        The ℓp norm (the paper's ECE-against-true-CE view uses ℓ2).

    Returns
    -------
    float
        The estimate.
    """
    spec = EstimatorSpec.parse(spec)
    return calibration_error(
        predictions.probs,
        predictions.labels,
        estimator=spec.estimator,
        binning=spec.binning,
        n_bins=spec.n_bins,
        tie_policy=spec.tie_policy,
        norm=norm,
        lens=simulation_lens(predictions, lens),
    ).value


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
