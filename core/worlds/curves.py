"""True calibration curves ``mu(c) = E[Y | f(X) = c]`` of ground-truth worlds.

Every curve is a frozen dataclass, callable on scalars and arrays, returning
values in [0, 1]. ``breakpoints`` lists jump locations so integration can split
there.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from core.base.errors import ConfigError

#: Scores are kept this far from 0 and 1 before a log or logit (the reference code's
#: ``1 - 1e-16`` clip, so a sampled score of exactly 1.0 has a finite curve value).
CURVE_CLIP = 1e-16

#: (link, transform) pairs of the GLM family of Roelofs et al. (2022), App. A.2.
GLM_FAMILIES: tuple[tuple[str, str], ...] = (
    ("log", "log"),
    ("logflip", "logflip"),
    ("logit", "logit"),
    ("logit", "logflip"),
)
#: Parameter signatures: intercept only, slope only (b0 = 0), both.
GLM_PARAMS: tuple[str, ...] = ("b0", "b1", "b0_b1")
#: The twelve GLM names ``<link>_<transform>_<params>``.
GLM_NAMES: tuple[str, ...] = tuple(
    f"{link}_{transform}_{params}" for link, transform in GLM_FAMILIES for params in GLM_PARAMS
)


def _clip01(c: ArrayLike) -> np.ndarray:
    return np.clip(np.asarray(c, dtype=np.float64), CURVE_CLIP, 1.0 - CURVE_CLIP)


def _out(values: np.ndarray) -> np.ndarray | float:
    values = np.clip(values, 0.0, 1.0)
    return float(values) if values.ndim == 0 else values


@dataclass(frozen=True)
class IdentityCurve:
    """A perfectly calibrated model: ``mu(c) = c``."""

    breakpoints = ()

    @property
    def label(self) -> str:
        """Short human label."""
        return "μ(c) = c (calibrated)"

    def __call__(self, c: ArrayLike) -> np.ndarray | float:
        """Return ``mu(c)`` in [0, 1] (a float for a scalar ``c``)."""
        return _out(np.asarray(c, dtype=np.float64))


@dataclass(frozen=True)
class PolynomialCurve:
    """``mu(c) = c**d``: over-confident for ``d > 1``, under-confident for ``d < 1``."""

    d: float
    breakpoints = ()

    def __post_init__(self) -> None:
        if not (np.isfinite(self.d) and self.d > 0):
            raise ConfigError(f"The polynomial degree must be positive; got d={self.d}.")

    @property
    def label(self) -> str:
        """Short human label."""
        return f"μ(c) = c^{self.d:g}"

    def __call__(self, c: ArrayLike) -> np.ndarray | float:
        """Return ``mu(c)`` in [0, 1] (a float for a scalar ``c``)."""
        return _out(np.power(np.asarray(c, dtype=np.float64), self.d))


@dataclass(frozen=True)
class LogisticCurve:
    """``mu(c) = sigmoid(slope * c + intercept)``, e.g. logistic(10c - 5)."""

    slope: float
    intercept: float
    breakpoints = ()

    @property
    def label(self) -> str:
        """Short human label."""
        return f"μ(c) = σ({self.slope:g}c {self.intercept:+g})"

    def __call__(self, c: ArrayLike) -> np.ndarray | float:
        """Return ``mu(c)`` in [0, 1] (a float for a scalar ``c``)."""
        return _out(special.expit(self.slope * np.asarray(c, dtype=np.float64) + self.intercept))


@dataclass(frozen=True)
class SineCurve:
    """``mu(c) = intercept + slope * c + amplitude * sin(2 pi frequency c)`` clipped to [0, 1].

    With (0.1, 0.8, 0.05, 8) this is the world of Kumar et al. (2019), Prop. 3.3,
    where binning with few bins hides most of the calibration error.
    """

    intercept: float
    slope: float
    amplitude: float
    frequency: float
    breakpoints = ()

    @property
    def label(self) -> str:
        """Short human label."""
        return (
            f"μ(c) = {self.intercept:g} + {self.slope:g}c + "
            f"{self.amplitude:g}·sin(2π·{self.frequency:g}c)"
        )

    def __call__(self, c: ArrayLike) -> np.ndarray | float:
        """Return ``mu(c)`` in [0, 1] (a float for a scalar ``c``)."""
        c = np.asarray(c, dtype=np.float64)
        return _out(
            self.intercept
            + self.slope * c
            + self.amplitude * np.sin(2.0 * np.pi * self.frequency * c)
        )


@dataclass(frozen=True)
class StepCurve:
    """A piecewise-constant curve: ``values[k]`` on ``[thresholds[k-1], thresholds[k])``.

    Parameters
    ----------
    thresholds : tuple of float
        Increasing jump locations.
    values : tuple of float
        ``len(thresholds) + 1`` curve values in [0, 1].
    """

    thresholds: tuple[float, ...]
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        t = np.asarray(self.thresholds, dtype=np.float64)
        v = np.asarray(self.values, dtype=np.float64)
        if v.size != t.size + 1:
            raise ConfigError("A step curve needs one more value than thresholds.")
        if t.size and (np.diff(t) <= 0).any():
            raise ConfigError("Step-curve thresholds must be strictly increasing.")
        if v.size and (v.min() < 0 or v.max() > 1):
            raise ConfigError("Step-curve values must lie in [0, 1].")

    @property
    def breakpoints(self) -> tuple[float, ...]:
        """The jump locations."""
        return tuple(float(t) for t in self.thresholds)

    @property
    def label(self) -> str:
        """Short human label."""
        return f"step curve ({len(self.thresholds)} jumps)"

    def __call__(self, c: ArrayLike) -> np.ndarray | float:
        """Return ``mu(c)`` in [0, 1] (a float for a scalar ``c``)."""
        idx = np.searchsorted(np.asarray(self.thresholds), np.asarray(c, np.float64), "right")
        return _out(np.asarray(self.values, dtype=np.float64)[idx])


@dataclass(frozen=True)
class GLMCurve:
    """One of the twelve GLM calibration curves ``mu(c) = g^{-1}(b0 + b1 t(c))``.

    Parameters
    ----------
    link, transform : {"log", "logflip", "logit"}
        The link ``g`` and the score transform ``t``; the pair must be one of
        :data:`GLM_FAMILIES`. ``log(x) = ln x``, ``logflip(x) = ln(1 - x)``,
        ``logit(x) = ln(x / (1 - x))``.
    b0, b1 : float
        Intercept and slope. For ``params="b1"`` the intercept is 0; for
        ``params="b0"`` the curve is the constant ``g^{-1}(b0)``.
    params : {"b0", "b1", "b0_b1"}
        Which parameters are free (sets the degrees of freedom for AIC).

    Notes
    -----
    Roelofs et al. (2022), App. A.2, Eq. 10 and Table 3. Scores are clipped to
    ``[1e-16, 1 - 1e-16]`` before a transform, and the curve to [0, 1]
    (``e^{b0} c^{b1}`` can exceed 1 when ``b0 > 0``).
    """

    link: str
    transform: str
    b0: float = 0.0
    b1: float = 1.0
    params: str = "b0_b1"
    breakpoints = ()

    def __post_init__(self) -> None:
        if (self.link, self.transform) not in GLM_FAMILIES:
            raise ConfigError(
                f"Unknown GLM (link={self.link!r}, transform={self.transform!r}); choose one of "
                + ", ".join(f"{a}_{b}" for a, b in GLM_FAMILIES)
                + "."
            )
        if self.params not in GLM_PARAMS:
            raise ConfigError(f"GLM params must be one of {GLM_PARAMS}; got {self.params!r}.")
        if self.params == "b1" and self.b0 != 0.0:
            raise ConfigError("A '_b1' GLM has no intercept: set b0=0.")

    @classmethod
    def from_name(cls, name: str, b0: float | None = None, b1: float | None = None) -> GLMCurve:
        """Build a curve from a name such as ``"logflip_logflip_b0_b1"``.

        Parameters
        ----------
        name : str
            One of :data:`GLM_NAMES`.
        b0, b1 : float or None
            Parameters; ``None`` for a parameter the model does not have.

        Returns
        -------
        GLMCurve
            The curve.
        """
        if name not in GLM_NAMES:
            raise ConfigError(f"Unknown GLM name {name!r}. Choose one of: {', '.join(GLM_NAMES)}.")
        link, transform, params = name.split("_", 2)
        return cls(
            link=link,
            transform=transform,
            b0=0.0 if b0 is None else float(b0),
            b1=0.0 if b1 is None else float(b1),
            params=params,
        )

    @property
    def name(self) -> str:
        """``<link>_<transform>_<params>``."""
        return f"{self.link}_{self.transform}_{self.params}"

    @property
    def dof(self) -> int:
        """Number of free parameters."""
        return 2 if self.params == "b0_b1" else 1

    @property
    def label(self) -> str:
        """Short human label."""
        parts = []
        if self.params in ("b0", "b0_b1"):
            parts.append(f"b0={self.b0:g}")
        if self.params in ("b1", "b0_b1"):
            parts.append(f"b1={self.b1:g}")
        return f"GLM {self.name} ({', '.join(parts)})"

    def linear_predictor(self, c: ArrayLike) -> np.ndarray:
        """``b0 + b1 t(c)`` (the slope term is dropped for ``params="b0"``)."""
        if self.params == "b0":
            return np.full(np.shape(c), self.b0, dtype=np.float64)
        return self.b0 + self.b1 * transform_scores(c, self.transform)

    def __call__(self, c: ArrayLike) -> np.ndarray | float:
        """Return ``mu(c)`` in [0, 1] (a float for a scalar ``c``)."""
        return _out(inverse_link(self.linear_predictor(c), self.link))


def transform_scores(c: ArrayLike, transform: str) -> np.ndarray:
    """Apply a GLM score transform (``log``, ``logflip`` or ``logit``) after clipping."""
    cc = _clip01(c)
    if transform == "log":
        return np.log(cc)
    if transform == "logflip":
        return np.log1p(-cc)
    if transform == "logit":
        return special.logit(cc)
    raise ConfigError(f"Unknown transform {transform!r}; use log, logflip or logit.")


def inverse_link(eta: ArrayLike, link: str) -> np.ndarray:
    """Apply a GLM inverse link (``log``, ``logflip`` or ``logit``), clipped to [0, 1]."""
    eta = np.asarray(eta, dtype=np.float64)
    with np.errstate(over="ignore"):
        if link == "log":
            return np.clip(np.exp(eta), 0.0, 1.0)
        if link == "logflip":
            return np.clip(-np.expm1(eta), 0.0, 1.0)
        if link == "logit":
            return special.expit(eta)
    raise ConfigError(f"Unknown link {link!r}; use log, logflip or logit.")


@dataclass(frozen=True)
class NoisyCurve:
    """A base curve plus a fixed random ±``amplitude`` offset on each of ``n_cells`` cells.

    ``mu(z) = clip(base(z) + s_k amplitude, 0, 1)`` with ``k = floor((z - low) / (high -
    low) · n_cells)`` (clamped to the cells) and fair signs ``s_k`` drawn once from
    ``seed``. With the Platt curve σ(2 logit z + 1) on [0.25, 0.75], 100,000 cells and
    amplitude 0.02 this is the noisy-Platt world of Kumar et al. (2019), App. E(B).

    Parameters
    ----------
    base : GLMCurve
        The smooth curve.
    low, high : float
        The range divided into cells.
    n_cells : int
        Number of cells.
    amplitude : float
        Size of the offsets.
    seed : int
        Seed of the signs.
    """

    base: GLMCurve
    low: float = 0.25
    high: float = 0.75
    n_cells: int = 100_000
    amplitude: float = 0.02
    seed: int = 0

    def __post_init__(self) -> None:
        if not (0.0 <= self.low < self.high <= 1.0) or self.n_cells < 1:
            raise ConfigError("A noisy curve needs 0 <= low < high <= 1 and n_cells >= 1.")

    @cached_property
    def signs(self) -> np.ndarray:
        """The fixed offsets' signs, one per cell."""
        return np.random.default_rng(self.seed).choice(np.array([-1.0, 1.0]), self.n_cells)

    @property
    def breakpoints(self) -> tuple[float, ...]:
        """Cell boundaries inside (low, high)."""
        k = np.arange(1, self.n_cells)
        return tuple((self.low + (self.high - self.low) * k / self.n_cells).tolist())

    @property
    def label(self) -> str:
        """Short human label."""
        return f"{self.base.label} ± {self.amplitude:g} noise on {self.n_cells:,} cells"

    def __call__(self, c: ArrayLike) -> np.ndarray | float:
        """Return ``mu(c)`` in [0, 1] (a float for a scalar ``c``)."""
        c = np.asarray(c, dtype=np.float64)
        k = np.floor((c - self.low) / (self.high - self.low) * self.n_cells).astype(np.int64)
        noise = self.amplitude * self.signs[np.clip(k, 0, self.n_cells - 1)]
        return _out(np.asarray(self.base(c)) + noise)


Curve = (
    IdentityCurve | PolynomialCurve | LogisticCurve | SineCurve | StepCurve | GLMCurve | NoisyCurve
)
