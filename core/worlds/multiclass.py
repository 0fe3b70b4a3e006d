"""Multiclass ground-truth worlds: Widmann et al.'s Dirichlet model and a temperature world.

Dirichlet model (Widmann et al. 2019, App. J.2):

Predictions ``G ~ Dir(alpha)``; with probability ``pi`` the label is drawn from a
fixed distribution ``beta``, otherwise from ``G`` itself, so
``P(Y | G) = pi * beta + (1 - pi) * G`` and the model is calibrated iff ``pi = 0``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from core.base.errors import ConfigError
from core.base.validation import check_norm, check_rng


@dataclass(frozen=True)
class DirichletWorld:
    """Widmann et al.'s generative model with a closed-form canonical ECE.

    Parameters
    ----------
    n_classes : int
        Number of classes ``m >= 2``.
    alpha : float or tuple of float
        Dirichlet concentration (a scalar means ``alpha * ones(m)``); 0.1 pushes
        predictions to the vertices like a trained network.
    pi : float
        Probability that the label ignores the prediction (0 = calibrated).
    beta : {"uniform", "first"} or tuple of float
        The label distribution used with probability ``pi``: uniform, the first
        class (``e_1``), or an explicit probability vector.
    name : str
        Short name.

    Examples
    --------
    The paper's models M1, M2, M3 are ``DirichletWorld(10, 0.1, 0.0)``,
    ``DirichletWorld(10, 0.1, 0.5, "first")`` and ``DirichletWorld(10, 0.1, 1.0)``.

    >>> round(DirichletWorld(10, 0.1, 0.5, "first").true_canonical_ece(), 10)
    0.45
    """

    n_classes: int
    alpha: float | tuple[float, ...] = 0.1
    pi: float = 0.0
    beta: str | tuple[float, ...] = "uniform"
    name: str = ""

    def __post_init__(self) -> None:
        if int(self.n_classes) != self.n_classes or self.n_classes < 2:
            raise ConfigError(f"n_classes must be an integer >= 2; got {self.n_classes}.")
        a = self.alpha_vector
        if a.shape != (self.n_classes,) or not (np.isfinite(a).all() and (a > 0).all()):
            raise ConfigError("alpha must be positive (a scalar or one value per class).")
        if not 0.0 <= self.pi <= 1.0:
            raise ConfigError(f"pi must lie in [0, 1]; got {self.pi}.")
        b = self.beta_vector
        if b.shape != (self.n_classes,) or b.min() < 0 or abs(b.sum() - 1) > 1e-9:
            raise ConfigError("beta must be 'uniform', 'first' or a probability vector.")

    @property
    def alpha_vector(self) -> np.ndarray:
        """Concentration per class."""
        return np.broadcast_to(np.asarray(self.alpha, dtype=np.float64), (self.n_classes,)).copy()

    @property
    def beta_vector(self) -> np.ndarray:
        """The label distribution used with probability ``pi``."""
        if isinstance(self.beta, str):
            if self.beta == "uniform":
                return np.full(self.n_classes, 1.0 / self.n_classes)
            if self.beta == "first":
                return np.eye(self.n_classes)[0]
            raise ConfigError(f"beta must be 'uniform' or 'first'; got {self.beta!r}.")
        return np.asarray(self.beta, dtype=np.float64)

    @property
    def label(self) -> str:
        """Short human label."""
        return self.name or (
            f"Dirichlet world (m={self.n_classes}, α={self.alpha}, π={self.pi:g}, β={self.beta})"
        )

    def sample(
        self, n: int, rng: np.random.Generator | int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` prediction vectors and labels.

        Returns
        -------
        probs : numpy.ndarray
            ``(n, m)`` rows on the simplex.
        labels : numpy.ndarray
            ``(n,)`` int64 labels in ``0..m-1``.
        """
        if int(n) != n or n < 1:
            raise ConfigError(f"The sample size must be a positive integer; got {n!r}.")
        gen = check_rng(rng)
        g = gen.gamma(self.alpha_vector, size=(int(n), self.n_classes))
        g /= g.sum(axis=1, keepdims=True)
        switch = gen.random(int(n)) < self.pi
        target = np.where(switch[:, None], self.beta_vector[None, :], g)
        cdf = np.cumsum(target, axis=1)
        u = gen.random(int(n))[:, None] * cdf[:, -1:]
        labels = np.minimum((u >= cdf).sum(axis=1), self.n_classes - 1).astype(np.int64)
        return g, labels

    def true_canonical_ece(self) -> float:
        """Closed-form canonical ECE with the total-variation distance.

        ``ECE = pi * sum_i [beta_i I(beta_i; a_i, a0 - a_i) - (a_i / a0) I(beta_i; a_i + 1, a0 - a_i)]``
        with ``I`` the regularised incomplete Beta function (Widmann et al. 2019,
        App. J.2.1).
        """
        a = self.alpha_vector
        a0 = a.sum()
        b = self.beta_vector
        terms = b * special.betainc(a, a0 - a, b) - (a / a0) * special.betainc(a + 1, a0 - a, b)
        return float(self.pi * terms.sum())


@dataclass(frozen=True)
class MonteCarloTruth:
    """A true calibration error known only up to Monte Carlo error.

    Attributes
    ----------
    value : float
        The estimate of the true calibration error.
    standard_error : float
        Its Monte Carlo standard error (delta method for the 1/p root).
    n : int
        Number of draws.
    """

    value: float
    standard_error: float
    n: int


@dataclass(frozen=True)
class TemperatureWorld:
    """A mis-tempered softmax model with known conditional probabilities.

    Logits ``z ~ N(0, scale² I_m)``; the label is drawn from ``q = softmax(z)`` and the
    model reports ``p = softmax(z / temperature)`` (``temperature < 1``: over-confident,
    ``> 1``: under-confident, 1: calibrated). Since ``q = softmax(temperature · log p)``,
    ``E[Y | p]`` is a known function of the prediction, so every lens has an exact
    per-prediction gap and the true calibration error is an expectation over ``z``.

    Parameters
    ----------
    n_classes : int
        Number of classes ``m >= 2``.
    temperature : float
        Positive temperature of the reported probabilities.
    scale : float
        Standard deviation of the logits.
    name : str
        Short name.
    """

    n_classes: int = 10
    temperature: float = 0.5
    scale: float = 3.0
    name: str = ""

    def __post_init__(self) -> None:
        if int(self.n_classes) != self.n_classes or self.n_classes < 2:
            raise ConfigError(f"n_classes must be an integer >= 2; got {self.n_classes}.")
        if not (self.temperature > 0 and np.isfinite(self.temperature)):
            raise ConfigError(f"The temperature must be positive; got {self.temperature}.")
        if not (self.scale > 0 and np.isfinite(self.scale)):
            raise ConfigError(f"The logit scale must be positive; got {self.scale}.")

    @property
    def label(self) -> str:
        """Short human label."""
        return self.name or (
            f"Temperature world (m={self.n_classes}, T={self.temperature:g}, σ={self.scale:g})"
        )

    def _draw(self, n: int, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        z = gen.normal(0.0, self.scale, size=(n, self.n_classes))
        return special.softmax(z / self.temperature, axis=1), special.softmax(z, axis=1)

    def true_probs(self, probs: np.ndarray) -> np.ndarray:
        """``E[Y | p] = softmax(temperature · log p)`` for predictions ``p`` (rows)."""
        logp = np.log(np.clip(np.asarray(probs, dtype=np.float64), 1e-300, None))
        return special.softmax(self.temperature * logp, axis=1)

    def sample(
        self, n: int, rng: np.random.Generator | int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` prediction vectors and labels (int64 in ``0..m-1``)."""
        if int(n) != n or n < 1:
            raise ConfigError(f"The sample size must be a positive integer; got {n!r}.")
        gen = check_rng(rng)
        p, q = self._draw(int(n), gen)
        cdf = np.cumsum(q, axis=1)
        u = gen.random(int(n))[:, None] * cdf[:, -1:]
        labels = np.minimum((u >= cdf).sum(axis=1), self.n_classes - 1).astype(np.int64)
        return p, labels

    def true_calibration_error(
        self,
        *,
        lens: str = "top-label",
        norm: float | str = 2,
        n_draws: int = 1_000_000,
        seed: int = 0,
    ) -> MonteCarloTruth:
        """Return the true calibration error under a lens, by Monte Carlo over the logits.

        Parameters
        ----------
        lens : {"top-label", "classwise", "canonical"}
            Top-label: gap ``max p − q[argmax p]``; classwise: gaps ``p_k − q_k``
            aggregated as ``(mean_k E|p_k − q_k|^p)^(1/p)``; canonical: the ECE with
            the total-variation distance ``E[½ Σ_k |p_k − q_k|]`` (``norm`` ignored).
        norm : {1, 2}
            ℓp norm of the top-label and classwise errors.
        n_draws : int
            Monte Carlo draws (in chunks of 100,000).
        seed : int
            Seed of the draws.

        Returns
        -------
        MonteCarloTruth
            Value and Monte Carlo standard error.
        """
        p_norm = 1.0 if lens == "canonical" else check_norm(norm)
        if np.isinf(p_norm):
            raise ConfigError("Use norm 1 or 2 for a Monte Carlo true calibration error.")
        if lens not in ("top-label", "classwise", "canonical"):
            raise ConfigError(f"lens must be top-label, classwise or canonical; got {lens!r}.")
        gen = check_rng(seed)
        parts = []
        for start in range(0, int(n_draws), 100_000):
            p, q = self._draw(min(100_000, int(n_draws) - start), gen)
            if lens == "top-label":
                k = p.argmax(axis=1)
                rows = np.arange(p.shape[0])
                parts.append(np.abs(p[rows, k] - q[rows, k]) ** p_norm)
            elif lens == "classwise":
                parts.append(np.mean(np.abs(p - q) ** p_norm, axis=1))
            else:
                parts.append(0.5 * np.abs(p - q).sum(axis=1))
        terms = np.concatenate(parts)
        mean = float(terms.mean())
        se_mean = float(terms.std(ddof=1) / np.sqrt(terms.size))
        value = mean ** (1.0 / p_norm)
        # delta method: d(m^(1/p))/dm = m^(1/p - 1) / p
        se = se_mean * (mean ** (1.0 / p_norm - 1.0) / p_norm if mean > 0 else 0.0)
        return MonteCarloTruth(value=value, standard_error=float(se), n=int(terms.size))
