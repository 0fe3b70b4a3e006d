"""Dirichlet calibration (Kull et al. 2019, "Beyond temperature scaling").

The map is a multinomial logistic regression on the log-probabilities,

    q = softmax(W · ln p + b),   W ∈ R^{K×K}, b ∈ R^K,

started from the identity map (``W = I``, ``b = 0``, which returns ``p``) and fitted by
L-BFGS on the mean negative log-likelihood plus a penalty. Conventions:

- **Features.** ``ln p`` with ``p`` clipped below at ``ε = 2.22e-16`` (float64 machine
  epsilon, the clip of :mod:`core.recalibration.beta`), *not* shifted per row:
  unlike matrix scaling, ``W · ln p`` changes when a constant is added to a row of
  ``ln p`` unless the rows of ``W`` sum to the same value, so the log-probabilities
  themselves are the features. Logits are turned into log-probabilities
  (``z − logsumexp(z)``, floored at ``ln ε``), so a fit on logits and a fit on their
  softmax give the same map. ``dirichletcal`` clips at the smallest normal float
  (``2.2e-308``); the two differ only on rows with a probability below ``ε``, where
  an exact 0 would otherwise become a feature of −708 and dominate the fit.
- **ODIR** (off-diagonal and intercept regularisation, the paper's default):

      loss = mean NLL + λ/(K(K − 1)) · Σ_{i≠j} w_ij² + μ/K · Σ_j b_j²,

  with ``reg_mu=None`` meaning ``μ = λ``. This is the paper's formula and
  ``dirichletcal``'s ``reg_norm=True`` scaling (its default, ``reg_norm=False``,
  multiplies the raw sums by λ and μ). The diagonal of ``W`` is not penalised, so a
  huge λ and μ leave the map ``q_k ∝ p_k^{w_kk}`` (Dirichlet calibration with a
  diagonal matrix and no intercept).
- **L2** (``penalty="l2"``): ``λ/(K(K + 1)) · (Σ_ij w_ij² + Σ_j b_j²)``, pulling the
  map towards the uniform prediction, as ``dirichletcal`` with ``reg_mu=None`` and
  ``reg_norm=True``.
- **Parameterisation.** ``softmax`` is unchanged when the same vector is added to
  every row of ``[W | b]``. ``dirichletcal`` (``ref_row=True``) subtracts the last row
  before penalising, so its penalty depends on which class is last. Here ``W`` and
  ``b`` are penalised as they are, so among equivalent parameters the fit is the one
  with the smallest penalty (:func:`best_representative`, in closed form): the fit is
  unique for ``λ > 0``, ``μ > 0`` and equivariant under relabelling the classes.
  L-BFGS works with that penalty of the best equivalent parameters, which makes the
  objective exactly flat along the ignored directions (a tiny λ would otherwise leave
  them nearly flat, and slow). Without a penalty (``λ = 0``) the fitted *map* is
  ``dirichletcal``'s (parameters may differ by such a row vector).
- **Two classes.** With ``K = 2`` the map is
  ``q₁ = σ((w₁₁ − w₀₁)·ln p₁ − (w₀₀ − w₁₀)·ln(1 − p₁) + b₁ − b₀)``: beta
  calibration's ``"abm"`` family without the sign constraint.

**Cost.** Every L-BFGS evaluation makes two float64 BLAS products of the ``(n, K)``
features with a ``(K, K)`` matrix (about ``4 n K²`` flops;
:func:`core.recalibration.scaling.affine_nll` does the work), so, as for matrix
scaling, above 100 classes ``max_iter`` must be given explicitly (``max_iter=None``
raises :class:`~core.base.errors.FitError`); an unconverged fit is reported in
``info["notes"]``. Outputs are softmax rows, so they sum to 1 without renormalisation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.base.errors import ConfigError
from core.recalibration.base import (
    FittedParameters,
    Inputs,
    Recalibrator,
    register,
    softmax,
)
from core.recalibration.beta import EPS
from core.recalibration.scaling import affine_nll, capped_iterations, minimize_lbfgs

#: The log-probability features are floored at ``ln EPS``.
LOG_EPS = float(np.log(EPS))

PENALTIES = ("odir", "l2")

#: Rows per block when log-probabilities are made from logits.
_ROW_BLOCK_ENTRIES = 1 << 15


def log_prob_features(inputs: Inputs) -> np.ndarray:
    """Return ``ln p`` floored at ``ln EPS`` as a fresh ``(n, K)`` matrix.

    Probabilities are clipped at ``EPS`` before the logarithm; logits become
    ``z − logsumexp(z)`` (exact even where the softmax underflows), then floored.

    Parameters
    ----------
    inputs : Inputs
        Validated predictions.

    Returns
    -------
    numpy.ndarray
        ``(n, K)`` features.
    """
    if not inputs.from_logits:
        out = np.maximum(inputs.probs, EPS)
        return np.log(out, out=out)
    z = inputs.log_scores
    out = np.empty(z.shape)
    per = max(1, _ROW_BLOCK_ENTRIES // z.shape[1])
    for i in range(0, z.shape[0], per):
        zb = z[i : i + per]
        ob = out[i : i + per]
        np.subtract(zb, zb.max(axis=1, keepdims=True), out=ob)
        lse = np.log(np.exp(ob).sum(axis=1, keepdims=True))
        ob -= lse
        np.maximum(ob, LOG_EPS, out=ob)
    return out


def penalty_terms(
    w: np.ndarray, b: np.ndarray, *, penalty: str, reg_lambda: float, reg_mu: float
) -> tuple[float, np.ndarray, np.ndarray]:
    """Return the penalty of ``(W, b)`` and its gradients (module docstring).

    Parameters
    ----------
    w : numpy.ndarray
        ``(K, K)`` matrix.
    b : numpy.ndarray
        ``(K,)`` intercepts.
    penalty : {"odir", "l2"}
        ODIR ``λ/(K(K−1)) Σ_{i≠j} w_ij² + μ/K Σ b_j²`` or L2
        ``λ/(K(K+1)) (Σ w_ij² + Σ b_j²)``.
    reg_lambda, reg_mu : float
        λ and μ (μ is not used by L2).

    Returns
    -------
    value : float
        The penalty.
    grad_w, grad_b : numpy.ndarray
        Its gradients.
    """
    k = b.size
    if penalty == "l2":
        coef = reg_lambda / (k * (k + 1))
        return coef * float(np.sum(w * w) + b @ b), 2.0 * coef * w, 2.0 * coef * b
    off = w.copy()
    np.fill_diagonal(off, 0.0)
    lam = reg_lambda / (k * (k - 1))
    mu = reg_mu / k
    value = lam * float(np.sum(off * off)) + mu * float(b @ b)
    return value, 2.0 * lam * off, 2.0 * mu * b


def best_representative(
    w: np.ndarray, b: np.ndarray, *, penalty: str, reg_lambda: float, reg_mu: float
) -> tuple[np.ndarray, np.ndarray]:
    """Return the ``(W + 1vᵀ, b + c1)`` with the smallest penalty: the same map (module docstring).

    ``softmax`` ignores a vector added to every row of ``[W | b]``, so among these
    equivalent parameters the fit reports, and penalises, the one the penalty prefers.
    In closed form: ODIR takes ``v_j = −mean_{i≠j} w_ij`` (the off-diagonal mean of
    column ``j``) and ``c = −mean(b)``; L2 takes ``v_j = −mean_i w_ij``; a zero weight
    leaves its part unchanged.

    Parameters
    ----------
    w, b, penalty, reg_lambda, reg_mu
        As for :func:`penalty_terms` (L2 uses λ for both parts).

    Returns
    -------
    w, b : numpy.ndarray
        The representative.
    """
    k = b.size
    w = np.array(w, dtype=np.float64)
    b = np.array(b, dtype=np.float64)
    if reg_lambda > 0:
        if penalty == "l2":
            w -= w.mean(axis=0)
        else:
            w -= (w.sum(axis=0) - np.diag(w)) / (k - 1)
    if (reg_lambda if penalty == "l2" else reg_mu) > 0:
        b -= b.mean()
    return w, b


def _non_negative(value: float) -> bool:
    """Whether ``value`` is a finite non-negative number (not a bool)."""
    return not isinstance(value, bool) and bool(np.isfinite(value) and value >= 0)


@register(
    "dirichlet",
    label="Dirichlet calibration",
    description="Multinomial logistic regression on the log-probabilities, softmax(W·ln p + b), "
    "with off-diagonal and intercept regularisation (ODIR). K² + K parameters.",
    formula="Kull et al. 2019: q = softmax(W·ln p + b), ODIR λ/(K(K−1))·Σ_{i≠j} w_ij² + μ/K·Σ b_j²",
    family="scaling",
)
class DirichletCalibration(Recalibrator):
    """Dirichlet calibration ``softmax(W · ln p + b)`` (module docstring).

    Parameters
    ----------
    penalty : {"odir", "l2"}, default "odir"
        Off-diagonal and intercept regularisation (the paper's), or L2 on all of
        ``W`` and ``b`` (towards the uniform map).
    reg_lambda : float, default 1e-3
        λ of the penalty, added to the mean NLL with the paper's normalisation
        (``λ/(K(K−1))`` per off-diagonal entry for ODIR). The light default keeps the
        fit finite when the calibration rows are separable; the paper chose λ and μ by
        cross-validation, which is advisable with many classes or few rows.
    reg_mu : float or None, default None
        μ of ODIR (``μ/K`` per intercept); None means ``μ = λ``. Only for ODIR.
    max_iter : int or None, default None
        L-BFGS iterations; None means 500 for at most 100 classes and is an error
        above (as for matrix scaling: each iteration costs two ``(n × K)·(K × K)``
        products).
    """

    def __init__(
        self,
        *,
        penalty: str = "odir",
        reg_lambda: float = 1e-3,
        reg_mu: float | None = None,
        max_iter: int | None = None,
    ) -> None:
        if penalty not in PENALTIES:
            raise ConfigError(f"penalty must be 'odir' or 'l2'; got {penalty!r}.")
        if not _non_negative(reg_lambda):
            raise ConfigError(f"reg_lambda must be a non-negative number; got {reg_lambda!r}.")
        if reg_mu is not None:
            if not _non_negative(reg_mu):
                raise ConfigError(
                    f"reg_mu must be a non-negative number or None (μ = λ); got {reg_mu!r}."
                )
            if penalty != "odir":
                raise ConfigError(
                    "reg_mu is the intercept weight of the ODIR penalty; the L2 penalty uses "
                    "reg_lambda for all parameters. Drop reg_mu or use penalty='odir'."
                )
        if max_iter is not None and (
            isinstance(max_iter, bool) or not isinstance(max_iter, int | np.integer) or max_iter < 1
        ):
            raise ConfigError(f"max_iter must be a positive integer or None; got {max_iter!r}.")
        self.penalty = penalty
        self.reg_lambda = float(reg_lambda)
        self.reg_mu = None if reg_mu is None else float(reg_mu)
        self.max_iter = None if max_iter is None else int(max_iter)

    def _fit(self, inputs: Inputs, labels: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
        k = inputs.n_classes
        max_iter = capped_iterations(
            self.max_iter,
            k,
            method="Dirichlet calibration",
            alternatives="beta calibration per class ('beta'), vector scaling ('vector') or "
            "temperature scaling ('temperature')",
        )
        x = log_prob_features(inputs)
        n = x.shape[0]
        mu = self.reg_lambda if self.reg_mu is None else self.reg_mu
        # L-BFGS runs on standardised columns, xs = (x - m) / sd, with W' = W·diag(sd) and
        # b' = b + W m: the same model, far better conditioned (the log-probabilities share
        # a large negative mean and very different spreads); the penalty stays on (W, b).
        m = x.mean(axis=0)
        x -= m
        sd = np.sqrt(np.einsum("ij,ij->j", x, x) / n)
        sd = np.where(sd > 0, sd, 1.0)
        x /= sd
        buf = np.empty((n, k))

        def unpack(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            w_s, b_s = theta[: k * k].reshape(k, k), theta[k * k :]
            w = w_s / sd
            return w, b_s - w @ m

        opts = {"penalty": self.penalty, "reg_lambda": self.reg_lambda, "reg_mu": mu}

        def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
            w_s, b_s = theta[: k * k].reshape(k, k), theta[k * k :]
            nll, gw, gb = affine_nll(x, labels, w_s, b_s, "matrix", buf)
            # The penalty is taken at the best equivalent parameters (a closed-form
            # minimum), so the objective is exactly flat along the directions softmax
            # ignores and L-BFGS never crawls along them; by the envelope theorem the
            # penalty's gradient there is its partial gradient.
            w, b = best_representative(*unpack(theta), **opts)
            pen, pw, pb = penalty_terms(w, b, **opts)
            # chain rule through w = w_s / sd and b = b_s - w m
            gw_s = gw + (pw - np.outer(pb, m)) / sd
            return nll + pen, np.concatenate([gw_s.ravel(), gb + pb])

        w0, b0 = np.eye(k), np.zeros(k)
        theta0 = np.concatenate([(w0 * sd).ravel(), b0 + w0 @ m])
        nll0 = affine_nll(x, labels, w0 * sd, b0 + w0 @ m, "matrix", buf)[0]
        res = minimize_lbfgs(fun, theta0, max_iter)
        w, b = best_representative(*unpack(res.x), **opts)
        pen = penalty_terms(w, b, **opts)[0]
        notes = []
        if not res.success:
            notes.append(
                f"L-BFGS stopped after {int(res.nit)} iterations without converging "
                f"({res.message}); raise max_iter or reg_lambda."
            )
        info = {
            "converged": bool(res.success),
            "n_iter": int(res.nit),
            "nll_before": float(nll0),
            "nll_after": float(res.fun - pen),
            "objective": float(res.fun),
            "notes": notes,
        }
        return {"weights": w, "bias": b}, info

    def _predict(self, params: FittedParameters, inputs: Inputs) -> np.ndarray:
        x = log_prob_features(inputs)
        w = np.asarray(params.values["weights"], dtype=np.float64)
        b = np.asarray(params.values["bias"], dtype=np.float64)
        z = x @ w.T
        z += b
        return softmax(z, out=z)
