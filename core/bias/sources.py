"""What a bias-vs-n run draws datasets from: worlds, fitted worlds, or the data itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from core.base.errors import ConfigError
from core.base.validation import check_probs_labels
from core.stats.binning import BinStats, bin_stats
from core.stats.lenses import apply_lens
from core.worlds import beta_fit_histogram, fit_world
from core.worlds.fitting import WorldFit
from core.worlds.world import World


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


def as_source(source: Any) -> tuple[World | DataSource, str]:
    """Return what to draw from and the kind of reference it gives (see :mod:`core.bias`)."""
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


def stream(seed: int, r: int, k: int) -> np.random.Generator:
    """Return stream ``k`` of replicate ``r``: ``SeedSequence(seed, spawn_key=(r, k))``."""
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
        scores = source.scores.sample(n, stream(seed, replicate, 0))
        u = stream(seed, replicate, 1).random(n)
        return scores, (u < source.curve(scores)).astype(np.float64)
    rows = stream(seed, replicate, 0).permutation(source.n)[:n]
    return source.scores[rows], source.outcomes[rows]


def simulation_lens(predictions: Any, lens: str) -> str:
    """Return the lens a bias run reads data through: one score and one outcome per row.

    The binary lens for two classes when it is the analysis lens, else the top-label lens
    (the classwise and canonical lenses have no single score to simulate).
    """
    return "binary" if predictions.n_classes == 2 and lens == "binary" else "top-label"


@dataclass(frozen=True, eq=False)
class FittedData:
    """A world fitted to data, with what its diagnostics show.

    Attributes
    ----------
    fit : core.worlds.fitting.WorldFit
        The fitted world (Beta scores, AIC-best GLM curve) and every fit.
    lens : str
        The lens the data was read through.
    scores : numpy.ndarray
        The data's scores (for the Beta fit's histogram).
    bins : core.stats.binning.BinStats
        The data's equal-mass bins (the observed curve the GLMs are drawn against).
    curves : dict
        The three AIC-best GLM curves by label.
    beta_histogram : Any
        The scores against the fitted Beta density
        (:func:`core.worlds.beta_fit_histogram`).
    true_calibration_error : float
        The fitted world's true ℓ2 calibration error.
    """

    fit: WorldFit
    lens: str
    scores: np.ndarray
    bins: BinStats
    curves: dict[str, Any]
    beta_histogram: Any
    true_calibration_error: float


def fit_data(predictions: Any, lens: str, *, name: str = "fitted", n_bins: int = 15) -> FittedData:
    """Fit "a world like my data" through a lens (:func:`core.worlds.fit_world`).

    Parameters
    ----------
    predictions : core.data.Predictions
        The data.
    lens : str
        The analysis lens (see :func:`simulation_lens`).
    name : str
        Name of the fitted world.
    n_bins : int, default=15
        Equal-mass bins of the observed curve in the diagnostics.

    Returns
    -------
    FittedData
        The fit and its diagnostics.
    """
    used = simulation_lens(predictions, lens)
    view = apply_lens(predictions.probs, predictions.labels, used)
    scores, outcomes = view.scores[0], view.outcomes[0]
    fit = fit_world(scores, outcomes, name=name)
    top = fit.glms.table["glm"].head(3)
    curves = {f"{g} (rank {i + 1})": fit.glms.curves[g] for i, g in enumerate(top)}
    bins = bin_stats(scores, outcomes, binning="equal-mass", n_bins=n_bins)
    return FittedData(
        fit,
        used,
        scores,
        bins,
        curves,
        beta_fit_histogram(scores, fit.beta),
        float(fit.world.true_calibration_error(2)),
    )
