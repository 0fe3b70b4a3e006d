"""Multiclass ground-truth world: the Dirichlet model of Widmann et al. (2019), App. J.2.

Predictions ``G ~ Dir(alpha)``; with probability ``pi`` the label is drawn from a
fixed distribution ``beta``, otherwise from ``G`` itself, so
``P(Y | G) = pi * beta + (1 - pi) * G`` and the model is calibrated iff ``pi = 0``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from core._validation import check_rng
from core.errors import ConfigError


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
