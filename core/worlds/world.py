"""A binary ground-truth world: a score distribution plus a true calibration curve.

The true calibration error is ``TCE_p = (E |C - mu(C)|^p)^(1/p)`` (Roelofs et al.
2022, Eq. 1), integrated numerically; closed forms exist for the polynomial
family and serve as tests.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import optimize, special

from core.base.errors import ConfigError
from core.base.validation import check_norm, check_rng
from core.worlds.curves import Curve, IdentityCurve, PolynomialCurve
from core.worlds.scores import BetaScores, ScoreDistribution, UniformScores


@dataclass(frozen=True)
class World:
    """Scores ``C ~ scores`` and labels ``Y | C = c ~ Bernoulli(curve(c))``.

    Parameters
    ----------
    scores : BetaScores, UniformScores or EmpiricalScores
        The distribution of the model's scores (top-label confidence or P(y=1)).
    curve : callable curve
        The true calibration curve ``mu(c) = E[Y | C = c]``.
    name : str
        Short name (the key in :data:`core.PRESET_WORLDS` for presets).
    description : str
        One sentence on where the world comes from.

    Examples
    --------
    >>> import numpy as np
    >>> from core.worlds import World, BetaScores, PolynomialCurve
    >>> w = World(BetaScores(1.0, 1.0), PolynomialCurve(2.0))
    >>> round(w.true_calibration_error(2), 6)
    0.182574
    >>> f, y = w.sample(5, np.random.default_rng(0)); f.shape, y.dtype
    ((5,), dtype('int64'))
    """

    scores: ScoreDistribution
    curve: Curve
    name: str = ""
    description: str = ""

    @property
    def label(self) -> str:
        """Name, or the score distribution and curve."""
        return self.name or f"{self.scores.label}, {self.curve.label}"

    def sample(
        self, n: int, rng: np.random.Generator | int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` (score, label) pairs.

        Parameters
        ----------
        n : int
            Sample size.
        rng : Generator, int or None
            Randomness (``None`` means seed 0).

        Returns
        -------
        scores : numpy.ndarray
            ``(n,)`` float64 scores.
        labels : numpy.ndarray
            ``(n,)`` int64 labels in {0, 1}.
        """
        n = _check_n(n)
        gen = check_rng(rng)
        scores = self.scores.sample(n, gen)
        labels = (gen.random(n) < self.curve(scores)).astype(np.int64)
        return scores, labels

    def gap(self, c: np.ndarray | float) -> np.ndarray | float:
        """``c - mu(c)``: positive where the model is over-confident."""
        return np.asarray(c, dtype=np.float64) - self.curve(c)

    def true_calibration_error(self, norm: float | str = 2) -> float:
        """Return the true ℓp calibration error (see :func:`true_calibration_error`)."""
        return true_calibration_error(self, norm=norm)

    def calibrated(self) -> World:
        """Return the same scores with a perfectly calibrated curve ``mu(c) = c``."""
        name = f"{self.name}-calibrated" if self.name else ""
        desc = f"{self.description} Perfectly calibrated variant (μ(c) = c)."
        return replace(self, curve=IdentityCurve(), name=name, description=desc.strip())


def _check_n(n: int) -> int:
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ConfigError(f"The sample size must be a positive integer; got {n!r}.")
    return int(n)


def true_calibration_error(world: World, norm: float | str = 2) -> float:
    """Return the true calibration error of a world.

    Parameters
    ----------
    world : World
        The ground-truth world.
    norm : {1, 2, inf}
        ``TCE_p = (∫ |c - mu(c)|^p dF(c))^(1/p)``; ``inf`` gives the largest
        gap over the support of the scores.

    Returns
    -------
    float
        The true calibration error as a fraction (not percent).

    Notes
    -----
    Integration is adaptive quadrature with a logarithmic substitution at
    singular ends of a Beta density (see :meth:`BetaScores.expect`); it agrees
    with the closed form of the polynomial family to about 1e-12. Empirical
    score distributions give exact finite averages.
    """
    p = check_norm(norm)
    curve = world.curve
    if isinstance(curve, IdentityCurve):
        return 0.0
    points = tuple(getattr(curve, "breakpoints", ()))
    if np.isinf(p):
        return _sup_gap(world, points)

    def integrand(c: float) -> float:
        return np.abs(c - curve(c)) ** p

    value = world.scores.expect(integrand, points)
    return float(max(value, 0.0) ** (1.0 / p))


def _sup_gap(world: World, points: tuple[float, ...]) -> float:
    lo, hi = world.scores.support
    values = getattr(world.scores, "values", None)
    if values is not None:
        return float(np.max(np.abs(world.gap(values))))
    grid = np.unique(np.concatenate([np.linspace(lo, hi, 200_001), np.asarray(points)]))
    gaps = np.abs(world.gap(grid))
    k = int(np.argmax(gaps))
    best = float(gaps[k])
    a, b = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
    if b > a:
        res = optimize.minimize_scalar(
            lambda c: -abs(float(world.gap(c))), bounds=(a, b), method="bounded"
        )
        best = max(best, -float(res.fun))
    return best


def polynomial_tce(scores: BetaScores | UniformScores, d: float) -> float:
    """Closed-form ℓ2 TCE of ``mu(c) = c**d`` under Beta (or Uniform(0, 1)) scores.

    ``TCE² = [B(a+2, b) - 2 B(a+d+1, b) + B(a+2d, b)] / B(a, b)`` (Roelofs et al.
    2022, §3.4; the reference code's ``TruePolynomial``).

    Parameters
    ----------
    scores : BetaScores or UniformScores
        Uniform must be on (0, 1).
    d : float
        Positive exponent.

    Returns
    -------
    float
        ℓ2 TCE as a fraction.
    """
    a, b = _beta_params(scores)
    log_b = special.betaln(a, b)
    sq = (
        np.exp(special.betaln(a + 2, b) - log_b)
        - 2 * np.exp(special.betaln(a + d + 1, b) - log_b)
        + np.exp(special.betaln(a + 2 * d, b) - log_b)
    )
    return float(np.sqrt(max(sq, 0.0)))


def polynomial_for_tce(target: float, scores: BetaScores | UniformScores) -> float:
    """Return the exponent ``d >= 1`` whose curve ``c**d`` has ℓ2 TCE ``target``.

    Parameters
    ----------
    target : float
        Target TCE as a fraction (e.g. 0.02).
    scores : BetaScores or UniformScores
        Score distribution (Uniform on (0, 1)).

    Returns
    -------
    float
        The exponent (1 for a target of 0).
    """
    if target < 0:
        raise ConfigError(f"A target calibration error must be >= 0; got {target}.")
    if target == 0:
        return 1.0
    hi = 2.0
    while polynomial_tce(scores, hi) < target:
        hi *= 2.0
        if hi > 1e6:
            raise ConfigError(f"No polynomial curve reaches a TCE of {target} for these scores.")
    return float(optimize.brentq(lambda d: polynomial_tce(scores, d) - target, 1.0, hi, xtol=1e-12))


def polynomial_world(scores: BetaScores | UniformScores, d: float, name: str = "") -> World:
    """Return a world with ``mu(c) = c**d``."""
    return World(scores, PolynomialCurve(float(d)), name=name)


def _beta_params(scores: BetaScores | UniformScores) -> tuple[float, float]:
    if isinstance(scores, BetaScores):
        return scores.alpha, scores.beta
    if isinstance(scores, UniformScores) and scores.support == (0.0, 1.0):
        return 1.0, 1.0
    raise ConfigError("The closed form needs Beta or Uniform(0, 1) scores.")
