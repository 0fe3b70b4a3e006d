"""Score distributions of ground-truth worlds: Beta, uniform and empirical.

Each distribution draws scores with an explicit generator and computes
expectations ``E[g(C)]`` robustly, which is how true calibration errors are
integrated (see :func:`core.worlds.true_calibration_error`).
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate, special

from core.base.errors import ConfigError, DataError

#: Upper end of the log-substitution variable: ``exp(-745)`` underflows to 0 in float64.
_S_MAX = 740.0
#: Segment ends in the substituted variable, so ``quad`` sees every scale of a singular density.
#: 36.84 = -ln(1e-16) is where curves clip their argument (a kink).
_S_KNOTS = (np.log(2.0), 2.0, 5.0, 10.0, 20.0, 36.841361487904734, 80.0, 160.0, 320.0, _S_MAX)

ScalarFunc = Callable[[float], float]
#: Above this many pieces, uniform expectations switch to vectorised Gauss–Legendre.
MANY_POINTS = 200


def _quad(func: ScalarFunc, a: float, b: float) -> float:
    # float64 round-off in c - mu(c) near c = 1 can stop quad short of epsrel=1e-11; the
    # result is still accurate to ~1e-12 (tests compare with closed forms), so the
    # warning is not passed on.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        value, _ = integrate.quad(func, a, b, epsabs=1e-15, epsrel=1e-11, limit=200)
    return float(value)


def _split(a: float, b: float, points: Sequence[float]) -> list[float]:
    inner = sorted(p for p in points if a < p < b)
    return [a, *inner, b]


@dataclass(frozen=True)
class BetaScores:
    """Scores ``C ~ Beta(alpha, beta)`` on [0, 1].

    Parameters
    ----------
    alpha, beta : float
        Positive shape parameters. Values below 1 make the density singular at
        0 (``alpha``) or 1 (``beta``); integration handles both.

    Notes
    -----
    numpy's Beta sampler returns exactly 1.0 for a sizeable share of draws when
    ``beta`` is small (about 18 % for Beta(2.7752, 0.0478)); these are kept, as in
    the reference simulations of Roelofs et al. (2022).
    """

    alpha: float
    beta: float

    def __post_init__(self) -> None:
        if not (np.isfinite(self.alpha) and np.isfinite(self.beta)):
            raise ConfigError("Beta parameters must be finite numbers.")
        if self.alpha <= 0 or self.beta <= 0:
            raise ConfigError(
                f"Beta parameters must be positive; got alpha={self.alpha}, beta={self.beta}."
            )

    @property
    def label(self) -> str:
        """Short human label."""
        return f"Beta({self.alpha:g}, {self.beta:g})"

    @property
    def support(self) -> tuple[float, float]:
        """The interval holding all the mass."""
        return (0.0, 1.0)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` scores."""
        return rng.beta(self.alpha, self.beta, size=n)

    def pdf(self, c: ArrayLike) -> np.ndarray:
        """Density at ``c`` (0 outside [0, 1])."""
        c = np.asarray(c, dtype=np.float64)
        inside = (c > 0) & (c < 1)
        cc = np.where(inside, c, 0.5)
        logp = (
            special.xlogy(self.alpha - 1, cc)
            + special.xlog1py(self.beta - 1, -cc)
            - special.betaln(self.alpha, self.beta)
        )
        return np.where(inside, np.exp(logp), 0.0)

    @property
    def mean(self) -> float:
        """``alpha / (alpha + beta)``."""
        return self.alpha / (self.alpha + self.beta)

    def expect(self, func: ScalarFunc, points: Sequence[float] = ()) -> float:
        """Return ``E[func(C)]`` by adaptive quadrature.

        Parameters
        ----------
        func : callable
            Function of a score in [0, 1] (scalar calls); finite at 0 and 1.
        points : sequence of float
            Discontinuities of ``func`` inside (0, 1).

        Notes
        -----
        The interval is split at 0.5. On (0.5, 1) the substitution
        ``1 - c = exp(-s)`` turns the singular factor ``(1 - c)^(beta - 1)`` into
        ``exp(-beta * s)``, computed from ``s`` itself (no cancellation in
        ``1 - c``); (0, 0.5) is treated symmetrically with ``c = exp(-s)``. The
        mass beyond ``s = 740`` (closer to an end than float64 can resolve) is
        added in closed form with ``func`` taken at the end point.
        """
        a, b = self.alpha, self.beta
        log_norm = special.betaln(a, b)

        def upper(s: float) -> float:
            u = np.exp(-s)
            return func(1.0 - u) * np.exp(special.xlog1py(a - 1, -u) - b * s - log_norm)

        def lower(s: float) -> float:
            c = np.exp(-s)
            return func(c) * np.exp(special.xlog1py(b - 1, -c) - a * s - log_norm)

        up_pts = [-np.log1p(-p) for p in points if 0.5 < p < 1]
        lo_pts = [-np.log(p) for p in points if 0 < p < 0.5]
        total = 0.0
        for integrand, pts in ((upper, up_pts), (lower, lo_pts)):
            knots = sorted({*_S_KNOTS, *(p for p in pts if p < _S_MAX)})
            for s0, s1 in zip(knots[:-1], knots[1:], strict=True):
                total += _quad(integrand, s0, s1)
        # closed-form tails: ∫_{S}^{∞} e^{-b s} ds / B(a, b), func at the end point
        total += func(1.0) * np.exp(-b * _S_MAX - log_norm) / b
        total += func(0.0) * np.exp(-a * _S_MAX - log_norm) / a
        return float(total)


@dataclass(frozen=True)
class UniformScores:
    """Scores ``C ~ Uniform(low, high)`` with ``0 <= low < high <= 1``."""

    low: float = 0.0
    high: float = 1.0

    def __post_init__(self) -> None:
        if not (0.0 <= self.low < self.high <= 1.0):
            raise ConfigError(
                f"Uniform scores need 0 <= low < high <= 1; got low={self.low}, high={self.high}."
            )

    @property
    def label(self) -> str:
        """Short human label."""
        return f"Uniform({self.low:g}, {self.high:g})"

    @property
    def support(self) -> tuple[float, float]:
        """The interval holding all the mass."""
        return (self.low, self.high)

    @property
    def mean(self) -> float:
        """Midpoint of the interval."""
        return 0.5 * (self.low + self.high)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` scores."""
        return rng.uniform(self.low, self.high, size=n)

    def pdf(self, c: ArrayLike) -> np.ndarray:
        """Density at ``c``."""
        c = np.asarray(c, dtype=np.float64)
        return np.where((c >= self.low) & (c <= self.high), 1.0 / (self.high - self.low), 0.0)

    def expect(self, func: ScalarFunc, points: Sequence[float] = ()) -> float:
        """Return ``E[func(C)]`` by quadrature split at ``points``.

        Up to :data:`MANY_POINTS` pieces use adaptive quadrature; beyond that (curves
        with thousands of jumps) each piece gets a 20-node Gauss–Legendre rule evaluated
        in one vectorised call, so ``func`` must then accept arrays.
        """
        knots = np.asarray(_split(self.low, self.high, points), dtype=np.float64)
        if knots.size - 1 <= MANY_POINTS:
            total = sum(_quad(func, a, b) for a, b in zip(knots[:-1], knots[1:], strict=True))
            return float(total / (self.high - self.low))
        nodes, weights = np.polynomial.legendre.leggauss(20)
        half = 0.5 * np.diff(knots)
        mid = 0.5 * (knots[:-1] + knots[1:])
        total = 0.0
        for i in range(0, mid.size, 50_000):  # bounded memory: 50,000 pieces × 20 nodes
            c = mid[i : i + 50_000, None] + half[i : i + 50_000, None] * nodes[None, :]
            values = np.asarray(func(c), dtype=np.float64)
            total += float(np.sum(half[i : i + 50_000] * (values @ weights)))
        return float(total / (self.high - self.low))


@dataclass(frozen=True, eq=False)
class EmpiricalScores:
    """Scores drawn with replacement from observed values.

    Expectations are exact finite averages over the stored values.

    Parameters
    ----------
    values : array_like
        Observed scores in [0, 1].
    name : str
        Label for the source (e.g. the model name).
    """

    values: np.ndarray
    name: str = "empirical"
    digest: str = field(init=False)

    def __post_init__(self) -> None:
        v = np.ascontiguousarray(np.asarray(self.values, dtype=np.float64).ravel())
        if v.size == 0:
            raise DataError("Empirical scores need at least one value.")
        if not np.isfinite(v).all() or v.min() < 0 or v.max() > 1:
            raise DataError("Empirical scores must be finite probabilities in [0, 1].")
        v.setflags(write=False)
        object.__setattr__(self, "values", v)
        object.__setattr__(
            self, "digest", hashlib.blake2b(v.view(np.uint8), digest_size=16).hexdigest()
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EmpiricalScores) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    @property
    def label(self) -> str:
        """Short human label."""
        return f"empirical ({self.name}, n={self.values.size})"

    @property
    def support(self) -> tuple[float, float]:
        """Smallest and largest stored value."""
        return (float(self.values.min()), float(self.values.max()))

    @property
    def mean(self) -> float:
        """Mean of the stored values."""
        return float(self.values.mean())

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` scores with replacement."""
        return self.values[rng.integers(0, self.values.size, size=n)]

    def expect(self, func: ScalarFunc, points: Sequence[float] = ()) -> float:
        """Return the average of ``func`` over the stored values."""
        return float(np.mean(np.broadcast_to(func(self.values), self.values.shape)))


ScoreDistribution = BetaScores | UniformScores | EmpiricalScores
