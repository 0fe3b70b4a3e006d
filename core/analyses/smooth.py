"""The smooth reliability diagram (Błasiok & Nakkiran 2023; relplot's ``prepare_rel_diagram``).

The ``"smooth"`` kind of :data:`core.figures.diagrams.DIAGRAMS`. For each lens component
the diagram holds, on the mesh ``t = linspace(0, 1, 200)``:

- the **curve** ``Y_σ(t) / (D_σ(t) + 10⁻⁴)``: the outcomes and the counts smoothed by the
  reflected Gaussian kernel of the smooth ECE (:mod:`core.estimators.smooth`) at the
  component's bandwidth ``σ*`` (relplot's ``KernelSmoother``; relplot draws the mean of its
  bootstrap curves, this is the curve of the sample itself);
- the **density** ``D_σ(t) / n`` of the scores (relplot's ``kde``);
- the **band**: the pointwise percentile interval (``config.confidence_level``) of the curve
  over ``config.n_resamples`` seeded bootstrap resamples of the rows, ``σ`` held at ``σ*``
  (relplot's 95 % band from bagging, unseeded there);
- the **smooth ECE** and its bootstrap interval, from the same resamples as
  :func:`core.inference.bootstrap.bootstrap_interval` with ``statistic="smooth"`` and the same seed
  (so the same numbers as the analysis' metrics table), the bandwidth searched per resample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from core.analyses.analysis import check_config
from core.base.errors import ConfigError
from core.data import as_predictions
from core.estimators.base import ESTIMATORS, lens_view
from core.estimators.smooth import PLOT_MESH_POINTS, SmoothSample
from core.inference.bootstrap import support_of
from core.inference.resampling import check_chunk_size, chunks
from core.stats.combine import combine_lp
from core.stats.intervals import bootstrap_result, interval_bounds

if TYPE_CHECKING:
    import pandas as pd

    from core.stats.intervals import BootstrapResult

__all__ = [
    "MAX_BAND_WORK",
    "MIN_BAND_RESAMPLES",
    "SmoothComponent",
    "SmoothDiagram",
    "smooth_diagram",
]

#: Most row draws (rows × resamples) of the diagram's bootstrap: above it fewer resamples
#: than ``config.n_resamples`` are drawn (the summary and the record say how many).
MAX_BAND_WORK = 20_000_000
#: Fewest resamples of the band when ``MAX_BAND_WORK`` caps them (relplot draws 200).
MIN_BAND_RESAMPLES = 100


@dataclass(frozen=True, eq=False)
class SmoothComponent:
    """The smooth reliability curve of one lens component.

    Attributes
    ----------
    name : str
        Component name.
    weight : float
        Its weight in the lens's mean.
    n : int
        Rows.
    value : float
        Its smooth ECE.
    bandwidth : float
        Its bandwidth ``σ*``.
    mesh, curve, density : numpy.ndarray
        ``(200,)``: mesh points, smoothed observed frequency, density of the scores.
    lower, upper : numpy.ndarray or None
        The bootstrap band of the curve (None without resamples).
    interval : (float, float) or None
        Bootstrap interval of ``value``.
    """

    name: str
    weight: float
    n: int
    value: float
    bandwidth: float
    mesh: np.ndarray
    curve: np.ndarray
    density: np.ndarray
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    interval: tuple[float, float] | None = None


@dataclass(frozen=True, eq=False)
class SmoothDiagram:
    """The smooth reliability diagram of predictions (the ``"smooth"`` diagram).

    Attributes
    ----------
    lens : str
        The lens.
    value : float
        The smooth ECE (weighted mean over components).
    components : tuple of SmoothComponent
        One per lens component.
    bootstrap : BootstrapResult or None
        Bootstrap interval of ``value`` (the config's ``bootstrap_interval``, path
        ``"rows-batch"``); None without resamples.
    confidence_level : float
        Level of the band and the interval.
    n_resamples : int
        Bootstrap resamples drawn (0: none): ``config.n_resamples``, or fewer at large
        ``n`` (:data:`MAX_BAND_WORK`).
    requested_resamples : int
        ``config.n_resamples``.
    seed : int
        The seed of the resamples.
    """

    lens: str
    value: float
    components: tuple[SmoothComponent, ...]
    bootstrap: BootstrapResult | None
    confidence_level: float
    n_resamples: int
    seed: int
    requested_resamples: int = 0

    @property
    def summary(self) -> str:
        """One sentence saying what the diagram shows on these data."""
        bws = ", ".join(f"{c.bandwidth:.4g}" for c in self.components)
        text = f"Smooth ECE {self.value:.4f}"
        if self.bootstrap is not None:
            ci = self.bootstrap.confidence_interval
            text += (
                f" ({self.confidence_level:.0%} bootstrap interval {ci.low:.4f}–{ci.high:.4f}, "
                f"{self.n_resamples:,} resamples, seed {self.seed})"
            )
            if self.n_resamples < self.requested_resamples:
                text += (
                    f" (the {self.requested_resamples:,} resamples asked for are capped at "
                    f"{MAX_BAND_WORK:,} row draws)"
                )
        text += (
            f" on the {self.lens} lens, bandwidth σ = {bws}: the line is the observed frequency "
            "smoothed by a Gaussian kernel of that width (reflected at 0 and 1), the grey area "
            "beneath it the density of the scores"
        )
        if self.bootstrap is not None:
            text += (
                f", the shaded band the pointwise {self.confidence_level:.0%} interval of the "
                "line over the resamples (σ fixed)"
            )
        return text + "."

    def table(self) -> pd.DataFrame:
        """One row per component: weight, rows, smooth ECE, its interval and the bandwidth."""
        import pandas as pd

        return pd.DataFrame(
            {
                "component": [c.name for c in self.components],
                "weight": [c.weight for c in self.components],
                "n": [c.n for c in self.components],
                "smooth_ece": [c.value for c in self.components],
                "low": [c.interval[0] if c.interval else np.nan for c in self.components],
                "high": [c.interval[1] if c.interval else np.nan for c in self.components],
                "bandwidth": [c.bandwidth for c in self.components],
            }
        )

    def to_record(self) -> dict[str, Any]:
        """JSON-ready numbers: the value, its interval and each component's curve."""

        def arr(a: np.ndarray | None) -> list[float] | None:
            return None if a is None else [float(v) for v in a]

        ci = None if self.bootstrap is None else self.bootstrap.confidence_interval
        return {
            "kind": "smooth",
            "lens": self.lens,
            "value": float(self.value),
            "interval": None if ci is None else [float(ci.low), float(ci.high)],
            "confidence_level": self.confidence_level,
            "n_resamples": self.n_resamples,
            "requested_resamples": self.requested_resamples,
            "seed": self.seed,
            "components": [
                {
                    "name": c.name,
                    "weight": c.weight,
                    "n": c.n,
                    "value": c.value,
                    "bandwidth": c.bandwidth,
                    "interval": None if c.interval is None else list(c.interval),
                    "mesh": arr(c.mesh),
                    "curve": arr(c.curve),
                    "density": arr(c.density),
                    "lower": arr(c.lower),
                    "upper": arr(c.upper),
                }
                for c in self.components
            ],
        }


def smooth_diagram(data: Any, config: Any = None) -> SmoothDiagram:
    """Compute the smooth reliability diagram (the ``"smooth"`` entry of ``DIAGRAMS``).

    Parameters
    ----------
    data : Predictions or (probs, labels)
        The predictions (see :func:`core.data.as_predictions`).
    config : AnalysisConfig, optional
        Its ``lens`` (binary, top-label or classwise), ``class_weights``, ``seed``,
        ``n_resamples`` (0: no band, no interval; at most ``MAX_BAND_WORK / n``, but at
        least ``MIN_BAND_RESAMPLES``, are drawn) and ``confidence_level`` are used.

    Returns
    -------
    SmoothDiagram
        The curves, densities, bands and smooth ECE.

    Raises
    ------
    ConfigError
        For a lens without a one-dimensional view.
    """
    config = check_config(config)
    if config.lens not in ESTIMATORS.get("smooth").lenses:
        raise ConfigError(
            f"The smooth diagram is drawn on the binary, top-label or classwise lens, not "
            f"{config.lens!r}; choose one of those in the sidebar."
        )
    pred = as_predictions(data)
    names = tuple(pred.class_names)
    view = lens_view(
        pred.probs, pred.labels, config.lens, class_names=names, class_weights=config.class_weights
    )
    n = pred.labels.shape[0]
    mesh = np.linspace(0.0, 1.0, PLOT_MESH_POINTS)
    weights = np.asarray(view.weights, dtype=np.float64)
    fits = []
    for s, o in zip(view.scores, view.outcomes, strict=True):
        sample = SmoothSample(s, o)
        value, sigma = sample.auto()
        curve, density, _ = sample.curve(float(sigma[0]), mesh)
        fits.append((float(value[0]), float(sigma[0]), curve[0], density[0]))
    total = float(combine_lp(np.array([f[0] for f in fits])[None, :], weights, 1.0)[0])
    r = config.n_resamples
    if r > 0:
        r = min(r, max(MIN_BAND_RESAMPLES, MAX_BAND_WORK // n))
    bands: list[tuple[Any, Any, Any]] = [(None, None, None)] * len(fits)
    boot = None
    if r > 0:
        rng = np.random.default_rng(config.seed)
        values = np.empty((r, len(fits)))
        curves = [np.empty((r, mesh.size)) for _ in fits]
        done = 0
        for idx in chunks(rng, n, r, check_chunk_size(None, n)):
            k = idx.shape[0]
            for c, (s, o) in enumerate(zip(view.scores, view.outcomes, strict=True)):
                sample = SmoothSample(s, o, idx)
                values[done : done + k, c] = sample.auto()[0]
                curves[c][done : done + k] = sample.curve(fits[c][1], mesh)[0]
            done += k
        tail = (1.0 - config.confidence_level) / 2.0
        quantiles = [tail, 1.0 - tail]
        dist = combine_lp(values, weights, 1.0)
        method = config.bootstrap_interval
        support = support_of("smooth")
        boot = bootstrap_result(
            total,
            dist,
            config.confidence_level,
            config.seed,
            statistic="smooth",
            path="rows-batch",
            method=method,
            support=support,
        )
        # the curve's band is where resampled curves fall; each value's interval is the
        # config's (the smooth ECE is its own estimand in the bootstrap world)
        bands = [
            (
                *np.quantile(curves[c], quantiles, axis=0),
                interval_bounds(
                    values[:, c],
                    config.confidence_level,
                    method,
                    fits[c][0],
                    fits[c][0],
                    support=support,
                ),
            )
            for c in range(len(fits))
        ]
    components = tuple(
        SmoothComponent(
            name=name,
            weight=float(w),
            n=n,
            value=value,
            bandwidth=sigma,
            mesh=mesh,
            curve=curve,
            density=density,
            lower=low,
            upper=high,
            interval=interval,
        )
        for name, w, (value, sigma, curve, density), (low, high, interval) in zip(
            view.names, weights, fits, bands, strict=True
        )
    )
    return SmoothDiagram(
        lens=config.lens,
        value=total,
        components=components,
        bootstrap=boot,
        confidence_level=config.confidence_level,
        n_resamples=r,
        seed=config.seed,
        requested_resamples=config.n_resamples,
    )
