"""Fit a world to data: Beta MLE of the scores and the twelve GLM curves ranked by AIC.

This is the "a world like my data" step of the bias-by-construction framework
(Roelofs et al. 2022, §6 and App. A): simulate from the fit, where the true
calibration error is known.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import optimize, special

from core.base.errors import DataError, FitError
from core.worlds.curves import (
    CURVE_CLIP,
    GLM_NAMES,
    GLMCurve,
    inverse_link,
    transform_scores,
)
from core.worlds.scores import BetaScores
from core.worlds.world import World

#: Probabilities are kept this far from 0 and 1 inside the binomial log-likelihood.
_P_CLIP = 1e-15
#: Grid of starting values per free GLM parameter (the reference searches [-5, 5]).
_GRID = np.linspace(-5.0, 5.0, 41)
#: Rows used by the starting-value grid search.
_GRID_ROWS = 5000


def _scores_labels(scores: ArrayLike, labels: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(labels).ravel()
    if s.size != y.size:
        raise DataError(f"There are {s.size} scores but {y.size} labels; they must match.")
    if s.size < 2:
        raise DataError("Fitting a world needs at least two (score, label) pairs.")
    if not np.isfinite(s).all() or s.min() < 0 or s.max() > 1:
        raise DataError("Scores must be finite probabilities in [0, 1].")
    if not np.isin(y, (0, 1)).all():
        raise DataError("Labels must be 0/1 outcomes (apply a lens to multiclass labels first).")
    return s, y.astype(np.float64)


@dataclass(frozen=True)
class BetaFit:
    """Maximum-likelihood Beta fit of scores.

    Attributes
    ----------
    alpha, beta : float
        The MLE.
    nll : float
        Negative log-likelihood at the MLE (of the clipped scores).
    n : int
        Number of scores.
    n_exact_one, n_exact_zero : int
        Scores equal to 1.0 or 0.0 before clipping; the MLE depends on ``clip``
        when these are many.
    clip : float
        Scores were clipped to ``[clip, 1 - clip]``.
    """

    alpha: float
    beta: float
    nll: float
    n: int
    n_exact_one: int
    n_exact_zero: int
    clip: float

    @property
    def distribution(self) -> BetaScores:
        """The fitted score distribution."""
        return BetaScores(self.alpha, self.beta)

    @property
    def aic(self) -> float:
        """``2 * 2 + 2 * nll``."""
        return 4.0 + 2.0 * self.nll


def fit_beta(scores: ArrayLike, *, clip: float = CURVE_CLIP) -> BetaFit:
    """Fit ``Beta(alpha, beta)`` to scores by maximum likelihood.

    Parameters
    ----------
    scores : array_like
        Scores in [0, 1].
    clip : float, default 1e-16
        Scores are clipped to ``[clip, 1 - clip]`` so that ``log(1 - x)`` is
        finite for scores of exactly 1.0 (the reference code shifts by 1e-16; for
        float32 softmax outputs ``2**-24`` is a sensible alternative).

    Returns
    -------
    BetaFit
        The MLE with its negative log-likelihood (Roelofs et al. 2022, Eq. 9).

    Notes
    -----
    The log-likelihood depends on the data only through ``mean(log x)`` and
    ``mean(log(1 - x))``; it is maximised in log-parameters with the analytic
    gradient (digamma functions), starting from the method of moments.
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    if s.size < 2 or not np.isfinite(s).all() or s.min() < 0 or s.max() > 1:
        raise DataError("Beta fitting needs at least two finite scores in [0, 1].")
    if not 0 < clip < 0.5:
        raise DataError(f"The clip must lie in (0, 0.5); got {clip}.")
    x = np.clip(s, clip, 1.0 - clip)
    if np.ptp(x) == 0:
        raise FitError("All scores are equal; a Beta distribution cannot be fitted.")
    s1, s2 = float(np.mean(np.log(x))), float(np.mean(np.log1p(-x)))

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        a, b = np.exp(theta)
        f = special.betaln(a, b) - (a - 1) * s1 - (b - 1) * s2
        dab = special.digamma(a + b)
        grad = np.array([a * (special.digamma(a) - dab - s1), b * (special.digamma(b) - dab - s2)])
        return float(f), grad

    m, v = float(x.mean()), float(x.var())
    common = m * (1 - m) / v - 1 if v > 0 else 1.0
    start = np.log(np.clip([m * common, (1 - m) * common], 1e-3, 1e3))
    best = None
    for x0 in (start, np.zeros(2)):
        res = optimize.minimize(
            objective, x0, jac=True, method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-12}
        )
        if best is None or res.fun < best.fun:
            best = res
    assert best is not None
    a, b = np.exp(best.x)
    return BetaFit(
        alpha=float(a),
        beta=float(b),
        nll=float(s.size * (special.betaln(a, b) - (a - 1) * s1 - (b - 1) * s2)),
        n=int(s.size),
        n_exact_one=int(np.sum(s == 1.0)),
        n_exact_zero=int(np.sum(s == 0.0)),
        clip=float(clip),
    )


@dataclass(frozen=True, eq=False)
class BetaFitHistogram:
    """Observed score density per bin next to the fitted Beta distribution's bin average.

    Attributes
    ----------
    fit : BetaFit
        The fitted distribution.
    edges : numpy.ndarray
        ``(B + 1,)`` equal-width edges on [0, 1].
    density : numpy.ndarray
        ``(B,)`` share of the scores in each bin divided by its width.
    fitted : numpy.ndarray
        ``(B,)`` Beta probability of each bin divided by its width (the bin average of the
        density, finite where the density diverges).
    """

    fit: BetaFit
    edges: np.ndarray
    density: np.ndarray
    fitted: np.ndarray


def beta_fit_histogram(scores: ArrayLike, fit: BetaFit, *, n_bins: int = 50) -> BetaFitHistogram:
    """Compare a histogram of the scores with the Beta fit, bin by bin.

    Parameters
    ----------
    scores : array_like
        The scores the Beta distribution was fitted to.
    fit : BetaFit
        The fit (:func:`fit_beta`).
    n_bins : int, default 50
        Equal-width bins on [0, 1].

    Returns
    -------
    BetaFitHistogram
        Observed and fitted densities per bin.
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    counts, _ = np.histogram(s, bins=edges)
    widths = np.diff(edges)
    fitted = np.diff(special.betainc(fit.alpha, fit.beta, edges)) / widths
    return BetaFitHistogram(fit, edges, counts / (s.size * widths), fitted)


def _binomial_nll(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    p = np.clip(p, _P_CLIP, 1.0 - _P_CLIP)
    return -(y * np.log(p) + (1.0 - y) * np.log1p(-p)).sum(axis=-1)


def _fit_one(name: str, t: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    link, _transform, params = name.split("_", 2)
    if params == "b0":
        # the MLE of a constant probability is the mean label, mapped through the link
        ybar = float(np.clip(y.mean(), _P_CLIP, 1 - _P_CLIP))
        b0 = {"log": np.log(ybar), "logflip": np.log1p(-ybar), "logit": special.logit(ybar)}[link]
        nll = float(_binomial_nll(inverse_link(np.full(1, b0), link)[0] * np.ones_like(y), y))
        return float(b0), 0.0, nll

    def nll_of(theta: np.ndarray) -> float:
        b0, b1 = (theta[0], theta[1]) if params == "b0_b1" else (0.0, theta[0])
        return float(_binomial_nll(inverse_link(b0 + b1 * t, link), y))

    # coarse grid over [-5, 5]^dof as in the reference (on an evenly spaced subsample of
    # at most _GRID_ROWS rows), then a local polish on all rows
    step = max(1, t.size // _GRID_ROWS)
    tg, yg = t[::step], y[::step]
    if params == "b0_b1":
        g0, g1 = np.meshgrid(_GRID, _GRID, indexing="ij")
        cand = np.column_stack([g0.ravel(), g1.ravel()])
    else:
        cand = _GRID[:, None]
    chunk = max(1, 4_000_000 // max(tg.size, 1))
    values = np.empty(cand.shape[0])
    for i in range(0, cand.shape[0], chunk):
        c = cand[i : i + chunk]
        b0 = c[:, 0:1] if params == "b0_b1" else 0.0
        b1 = c[:, -1:]
        values[i : i + chunk] = _binomial_nll(inverse_link(b0 + b1 * tg[None, :], link), yg)
    x0 = cand[int(np.argmin(values))]
    res = optimize.minimize(
        nll_of, x0, method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-10, "maxiter": 4000}
    )
    theta = res.x
    b0, b1 = (theta[0], theta[1]) if params == "b0_b1" else (0.0, theta[0])
    return float(b0), float(b1), float(res.fun)


@dataclass(frozen=True, eq=False)
class GLMFits:
    """The twelve GLM calibration curves fitted by maximum likelihood, ranked by AIC.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per GLM, sorted by AIC: ``rank, glm, link, transform, params, b0,
        b1, nll, aic, delta_aic, akaike_weight`` (``b0``/``b1`` NaN where absent).
    curves : dict
        GLM name → fitted :class:`GLMCurve`.
    n : int
        Number of pairs used in the fit.
    n_dropped : int
        Pairs with a score of exactly 1.0 left out (``drop_ones=True``).
    """

    table: pd.DataFrame
    curves: dict[str, GLMCurve]
    n: int
    n_dropped: int

    @property
    def best(self) -> GLMCurve:
        """The AIC-best curve."""
        return self.curves[str(self.table["glm"].iloc[0])]


def fit_glms(scores: ArrayLike, labels: ArrayLike, *, drop_ones: bool = True) -> GLMFits:
    """Fit the twelve GLM calibration curves and rank them by AIC.

    Parameters
    ----------
    scores : array_like
        Scores in [0, 1] (top-label confidence or P(y=1)).
    labels : array_like
        0/1 outcomes (hit of the top label, or y).
    drop_ones : bool, default True
        Leave out scores of exactly 1.0, as the reference code does before GLM
        fitting (their transforms are infinite).

    Returns
    -------
    GLMFits
        Fitted curves and the AIC table (``AIC = 2 dof + 2 NLL``; Roelofs et al.
        2022, Eq. 10 and Table 3).
    """
    s, y = _scores_labels(scores, labels)
    keep = s < 1.0 if drop_ones else np.ones(s.size, dtype=bool)
    if keep.sum() < 2:
        raise FitError("Too few scores below 1.0 to fit calibration curves.")
    s, y = s[keep], y[keep]
    rows, curves = [], {}
    for name in GLM_NAMES:
        link, transform, params = name.split("_", 2)
        t = transform_scores(s, transform)
        b0, b1, nll = _fit_one(name, t, y)
        curve = GLMCurve(link, transform, b0=b0 if params != "b1" else 0.0, b1=b1, params=params)
        curves[name] = curve
        dof = curve.dof
        rows.append(
            {
                "glm": name,
                "link": link,
                "transform": transform,
                "params": params,
                "b0": b0 if params != "b1" else np.nan,
                "b1": b1 if params != "b0" else np.nan,
                "nll": nll,
                "aic": 2 * dof + 2 * nll,
            }
        )
    table = pd.DataFrame(rows).sort_values("aic", kind="stable").reset_index(drop=True)
    table["delta_aic"] = table["aic"] - table["aic"].iloc[0]
    weights = np.exp(-0.5 * table["delta_aic"].to_numpy())
    table["akaike_weight"] = weights / weights.sum()
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    return GLMFits(table=table, curves=curves, n=int(s.size), n_dropped=int((~keep).sum()))


@dataclass(frozen=True, eq=False)
class WorldFit:
    """A world fitted to data, with its fit diagnostics.

    Attributes
    ----------
    world : World
        Beta MLE scores and the AIC-best GLM curve.
    beta : BetaFit
        The score-distribution fit.
    glms : GLMFits
        All twelve curve fits.
    """

    world: World
    beta: BetaFit
    glms: GLMFits


def fit_world(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    clip: float = CURVE_CLIP,
    drop_ones: bool = True,
    name: str = "fitted",
) -> WorldFit:
    """Fit "a world like my data": Beta MLE scores plus the AIC-best GLM curve.

    Parameters
    ----------
    scores : array_like
        Scores in [0, 1].
    labels : array_like
        0/1 outcomes.
    clip : float
        See :func:`fit_beta`.
    drop_ones : bool
        See :func:`fit_glms`.
    name : str
        Name of the fitted world.

    Returns
    -------
    WorldFit
        The world and both fits.
    """
    s, y = _scores_labels(scores, labels)
    beta = fit_beta(s, clip=clip)
    glms = fit_glms(s, y, drop_ones=drop_ones)
    world = World(
        beta.distribution,
        glms.best,
        name=name,
        description=(
            f"Fitted to {s.size} predictions: Beta({beta.alpha:.4g}, {beta.beta:.4g}) scores and "
            f"the AIC-best GLM {glms.best.name}."
        ),
    )
    return WorldFit(world=world, beta=beta, glms=glms)
