"""Scaling recalibrators: Platt, temperature, vector and matrix scaling.

- **Platt** fits ``q = sigmoid(a x + c)`` by maximum likelihood on one score per
  lens component, with ``x = logit(p)`` (Kumar et al. 2019's "Platt after a log
  transform"; the log-odds themselves when logits are given) or ``x = p``.
  Platt's smoothed targets ``(N+ + 1)/(N+ + 2)`` and ``1/(N- + 2)`` (the default,
  as scikit-learn) keep the optimum finite on separable data; with hard 0/1
  targets separable data raise :class:`~core.errors.FitError`.
- **Temperature** ``softmax(z / T)``: the mean negative log-likelihood is convex in
  ``1/T``, so ``T`` is the root of its derivative, found by a bracketed solve
  (safeguarded Newton) inside ``bounds``; a root outside the bracket is reported,
  not hidden.
- **Vector** ``softmax(w * z + b)`` and **matrix** ``softmax(W z + b)`` scaling,
  fitted by L-BFGS from the identity map, with an optional ridge penalty towards
  the identity (``reg``). Scores are centred per row first (by the maximum for
  vector scaling, the mean for matrix scaling), so logits and log-probabilities
  give the same fit.

Multiclass scores ``z`` are the logits when given, else ``log p`` (softmax is
shift-invariant, so this reproduces ``p`` exactly). Outputs are softmax rows, so
they sum to 1 without renormalisation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.optimize import minimize

from core.errors import ConfigError, FitError
from core.recalibration.base import (
    FittedParameters,
    Inputs,
    OneDimRecalibrator,
    Recalibrator,
    register,
    sigmoid,
    softmax,
)

#: Rows per chunk are chosen so a chunk holds about this many matrix entries.
CHUNK_ENTRIES = 1 << 22


# --------------------------------------------------------------------------- Platt


def platt_targets(t: np.ndarray, targets: str) -> np.ndarray:
    """Return the regression targets: hard 0/1 labels or Platt's smoothed ones."""
    if targets == "hard":
        return t
    n_pos = float(t.sum())
    n_neg = float(t.size - n_pos)
    return np.where(t > 0.5, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def _fast_sigmoid(u: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * u))  # one ufunc pass; exact in floating point range


def _logistic_sums(
    x: np.ndarray,
    t: np.ndarray,
    mu: np.ndarray,
    scale: np.ndarray,
    a: np.ndarray,
    c: np.ndarray,
    cols: np.ndarray,
    *,
    derivatives: bool,
) -> tuple[np.ndarray, ...]:
    """Loss (and gradient/Hessian sums) of the standardised problems ``cols``, by row chunks."""
    k = cols.size
    out = [np.zeros(k) for _ in range(6 if derivatives else 1)]
    mu_c, sc_c, a_c, c_c = mu[cols], scale[cols], a[cols], c[cols]
    every = k == x.shape[1]  # plain slices avoid a gather of every column
    step = max(1, CHUNK_ENTRIES // (4 * max(k, 1)))
    for i in range(0, x.shape[0], step):
        xc = x[i : i + step] if every else x[i : i + step, cols]
        tc = t[i : i + step] if every else t[i : i + step, cols]
        xs = (xc - mu_c) / sc_c
        eta = xs * a_c + c_c
        out[0] += np.sum(np.logaddexp(0.0, eta) - tc * eta, axis=0)
        if derivatives:
            q = _fast_sigmoid(eta)
            r = q - tc
            h = q * (1.0 - q)
            hx = h * xs
            out[1] += (r * xs).sum(axis=0)
            out[2] += r.sum(axis=0)
            out[3] += (hx * xs).sum(axis=0)
            out[4] += hx.sum(axis=0)
            out[5] += h.sum(axis=0)
    return tuple(out)


def fit_logistic_batch(
    x: np.ndarray, t: np.ndarray, *, max_iter: int = 100
) -> tuple[np.ndarray, np.ndarray, int]:
    """Maximum-likelihood ``(a, c)`` of ``P(t=1) = sigmoid(a x + c)`` for every column at once.

    Damped Newton steps on standardised features, vectorised over the columns (each
    column is its own 2-parameter problem; a column stops once its step is
    negligible). Sums are accumulated over row chunks, so memory stays bounded.

    Parameters
    ----------
    x : numpy.ndarray
        ``(n, C)`` feature values.
    t : numpy.ndarray
        ``(n, C)`` targets in [0, 1] (hard or smoothed).
    max_iter : int
        Maximum Newton iterations.

    Returns
    -------
    a, c : numpy.ndarray
        ``(C,)`` slopes and intercepts on the original scale of ``x``.
    n_iter : int
        Newton iterations used.

    Raises
    ------
    FitError
        If a column's likelihood has no finite maximum (separable hard targets).
    """
    mu = x.mean(axis=0)
    sd = x.std(axis=0)
    ok = (sd > 0) & np.isfinite(sd)
    # standardised: Newton is scale-free, but the loss landscape is better conditioned
    scale = np.where(ok, sd, 1.0)
    tbar = np.clip(t.mean(axis=0), 1e-12, 1 - 1e-12)
    a = np.zeros(x.shape[1])
    c = np.log(tbar / (1 - tbar))
    active = np.flatnonzero(ok)
    # Each pass evaluates loss, gradient and Hessian at the current point of every active
    # column. A column whose loss went up since its last accepted point halves its step and
    # is evaluated again; the others take a Newton step. One pass per iteration.
    best = np.full(x.shape[1], np.inf)
    base_a, base_c = a.copy(), c.copy()
    s1 = np.zeros(x.shape[1])
    s2 = np.zeros(x.shape[1])
    lam = np.ones(x.shape[1])
    n_iter = 0
    while active.size and n_iter < max_iter + 40:
        n_iter += 1
        cur, g1, g2, h11, h12, h22 = _logistic_sums(x, t, mu, scale, a, c, active, derivatives=True)
        worse = cur > best[active] + 1e-12 * np.abs(best[active])
        back = active[worse]
        if back.size:  # step halving for the columns whose loss went up
            lam[back] *= 0.5
            a[back] = base_a[back] - lam[back] * s1[back]
            c[back] = base_c[back] - lam[back] * s2[back]
        ok_cols = active[~worse]
        gain = best[ok_cols] - cur[~worse]
        h11, h12, h22 = h11[~worse] + 1e-12, h12[~worse], h22[~worse] + 1e-12
        g1, g2 = g1[~worse], g2[~worse]
        det = h11 * h22 - h12 * h12
        step1 = (h22 * g1 - h12 * g2) / det
        step2 = (h11 * g2 - h12 * g1) / det
        best[ok_cols] = cur[~worse]
        base_a[ok_cols], base_c[ok_cols] = a[ok_cols], c[ok_cols]
        s1[ok_cols], s2[ok_cols], lam[ok_cols] = step1, step2, 1.0
        a[ok_cols] -= step1
        c[ok_cols] -= step2
        tiny = np.maximum(np.abs(step1), np.abs(step2)) < 1e-10
        flat = gain <= 1e-14 * np.maximum(1.0, np.abs(cur[~worse]))
        stalled = lam[back] < 1e-12  # no descent left along this direction: keep the best point
        a[back[stalled]], c[back[stalled]] = base_a[back[stalled]], base_c[back[stalled]]
        done = np.zeros(active.size, dtype=bool)
        done[np.flatnonzero(~worse)[tiny | flat]] = True
        done[np.flatnonzero(worse)[stalled]] = True
        active = active[~done]
    slope = np.where(ok, a / scale, 0.0)
    intercept = np.where(ok, c - slope * mu, c)
    if not (np.isfinite(slope).all() and np.isfinite(intercept).all()) or (np.abs(a) > 1e6).any():
        raise FitError(
            "Platt scaling has no finite maximum-likelihood fit on these rows (the scores "
            "separate the classes). Use targets='platt' (smoothed targets) or more rows."
        )
    return slope, intercept, n_iter


def fit_logistic_1d(
    x: np.ndarray, t: np.ndarray, *, max_iter: int = 100
) -> tuple[float, float, int]:
    """Maximum-likelihood ``(a, c)`` of ``P(t=1) = sigmoid(a x + c)`` for one feature.

    See :func:`fit_logistic_batch`.
    """
    a, c, n_iter = fit_logistic_batch(x[:, None], t[:, None], max_iter=max_iter)
    return float(a[0]), float(c[0]), n_iter


@register(
    "platt",
    label="Platt scaling",
    description="Logistic regression of the label on the log-odds (or probability) of each "
    "score; per class one-vs-rest, top-label or binary.",
    formula="Platt 1999; Kumar et al. 2019 §2.3: q = σ(a·logit(p) + c)",
    family="scaling",
)
class PlattScaling(OneDimRecalibrator):
    """Platt scaling through a lens.

    Parameters
    ----------
    lens : {"auto", "binary", "top-label", "classwise"}
        ``auto`` is ``binary`` for two classes, else ``classwise``.
    input : {"logit", "probability"}
        Feature of the logistic fit: ``logit(p)`` (or the given log-odds) or ``p``.
    targets : {"platt", "hard"}
        Platt's smoothed targets (finite on separable data) or hard 0/1 labels.
    """

    def __init__(self, *, lens: str = "auto", input: str = "logit", targets: str = "platt") -> None:
        self.lens = self._check_lens(lens)
        if input not in ("logit", "probability"):
            raise ConfigError(f"input must be 'logit' or 'probability'; got {input!r}.")
        if targets not in ("platt", "hard"):
            raise ConfigError(f"targets must be 'platt' or 'hard'; got {targets!r}.")
        self.input = input
        self.targets = targets

    def _feature(self, s: np.ndarray, lo: np.ndarray) -> np.ndarray:
        return lo if self.input == "logit" else s

    def _fit_components(
        self,
        scores: list[np.ndarray],
        log_odds: list[np.ndarray],
        outcomes: list[np.ndarray],
        rng: np.random.Generator,
    ) -> list[tuple[dict[str, Any], list[str]]]:
        x = np.column_stack([self._feature(s, lo) for s, lo in zip(scores, log_odds, strict=True)])
        t = np.column_stack(outcomes)
        pos = t > 0.5
        n_pos = pos.sum(axis=0)
        if ((n_pos == 0) | (n_pos == t.shape[0])).any():
            j = int(np.flatnonzero((n_pos == 0) | (n_pos == t.shape[0]))[0])
            raise FitError(
                f"Platt scaling needs both outcomes in every component; component {j} has only "
                f"{'positives' if n_pos[j] else 'negatives'}."
            )
        if self.targets == "hard":
            top_neg = np.where(pos, -np.inf, x).max(axis=0)
            low_pos = np.where(pos, x, np.inf).min(axis=0)
            top_pos = np.where(pos, x, -np.inf).max(axis=0)
            low_neg = np.where(pos, np.inf, x).min(axis=0)
            if ((top_neg <= low_pos) | (top_pos <= low_neg)).any():
                raise FitError(
                    "Platt scaling with hard targets cannot be fitted: the scores separate the "
                    "classes, so the slope would be infinite. Use targets='platt'."
                )
            targets = t
        else:
            n = t.shape[0]
            targets = np.where(pos, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n - n_pos + 2.0))
        a, c, n_iter = fit_logistic_batch(x, targets)
        return [
            ({"a": float(ai), "c": float(ci), "n_iter": n_iter}, [])
            for ai, ci in zip(a, c, strict=True)
        ]

    def _apply_component(
        self, c: Mapping[str, Any], s: np.ndarray, lo: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        return sigmoid(c["a"] * self._feature(s, lo) + c["c"])


# --------------------------------------------------------------------------- temperature


def _nll_derivatives(z: np.ndarray, y: np.ndarray, beta: float) -> tuple[float, float, float]:
    """Mean NLL of softmax(beta z) and its first two derivatives in beta, chunked over rows.

    The second derivative is the mean variance of ``z`` under softmax(beta z), so the NLL
    is convex in beta.
    """
    n, k = z.shape
    step = max(1, CHUNK_ENTRIES // k)
    nll = d1 = d2 = 0.0
    for i in range(0, n, step):
        zc = z[i : i + step]
        yc = y[i : i + step]
        u = zc * beta
        m = u.max(axis=1)
        u -= m[:, None]
        np.exp(u, out=u)
        tot = u.sum(axis=1)
        s1 = np.einsum("ij,ij->i", u, zc) / tot
        u *= zc
        s2 = np.einsum("ij,ij->i", u, zc) / tot
        zy = zc[np.arange(zc.shape[0]), yc]
        nll += float(np.sum(np.log(tot) + m - beta * zy))
        d1 += float(np.sum(s1 - zy))
        d2 += float(np.sum(np.maximum(s2 - s1 * s1, 0.0)))
    return nll / n, d1 / n, d2 / n


def temperature_fit(
    z: np.ndarray, y: np.ndarray, bounds: tuple[float, float] = (1e-2, 1e2)
) -> tuple[float, dict[str, Any]]:
    """Fit the temperature: root of the NLL's derivative in ``1/T`` inside a bracket.

    The derivative is increasing in ``beta = 1/T`` (convex NLL). Newton steps start at
    ``beta = 1``; a step that would leave the current bracket is replaced by bisection
    (a safeguarded Newton solve), and a bound of ``bounds`` is evaluated only when the
    root may lie beyond it. If the derivative has no sign change inside the bounds, the
    fit stops at the bound and says so.

    Parameters
    ----------
    z : numpy.ndarray
        ``(n, K)`` logits or log-probabilities.
    y : numpy.ndarray
        Labels.
    bounds : tuple of float
        Smallest and largest temperature allowed.

    Returns
    -------
    T : float
        The temperature.
    info : dict
        ``at_bound`` (str or None), ``n_iter`` and the NLL before and after.
    """
    cache: dict[float, tuple[float, float, float]] = {}

    def ev(b: float) -> tuple[float, float, float]:
        if b not in cache:
            cache[b] = _nll_derivatives(z, y, b)
        return cache[b]

    b_min, b_max = 1.0 / bounds[1], 1.0 / bounds[0]
    lo, hi = b_min, b_max
    lo_checked = hi_checked = False
    beta = min(max(1.0, b_min), b_max)
    at_bound = None
    n_iter = 0
    for n_iter in range(1, 200):  # noqa: B007 - reported
        _, d1, d2 = ev(beta)
        if d1 < 0:
            lo, lo_checked = beta, True
        else:
            hi, hi_checked = beta, True
        cand = beta - d1 / d2 if d2 > 0 else (np.inf if d1 < 0 else -np.inf)
        if cand >= hi and not hi_checked:
            if ev(b_max)[1] <= 0:  # still falling at the coldest: near separation
                beta, at_bound = b_max, "lower"
                break
            hi_checked = True
        if cand <= lo and not lo_checked:
            if ev(b_min)[1] >= 0:  # rising already at the hottest temperature
                beta, at_bound = b_min, "upper"
                break
            lo_checked = True
        if d1 == 0 or abs(cand - beta) <= 1e-10 * beta:  # converged (before any bisection)
            break
        if not lo < cand < hi:
            cand = 0.5 * (lo + hi)
        beta = cand
        if hi - lo <= 1e-12 * hi:
            break
    info = {
        "at_bound": at_bound,
        "n_iter": n_iter,
        "nll_before": ev(1.0)[0],
        "nll_after": ev(beta)[0],
    }
    return 1.0 / beta, info


@register(
    "temperature",
    label="Temperature scaling",
    description="One temperature T for all classes: softmax(z / T). Keeps the predicted class.",
    formula="Guo et al. 2017: q = softmax(z / T), T by minimum NLL",
    family="scaling",
    accuracy_preserving=True,
)
class TemperatureScaling(Recalibrator):
    """Temperature scaling with a bracketed 1-D solve.

    Parameters
    ----------
    bounds : tuple of float, default (0.01, 100)
        Allowed temperatures; a fit that hits a bound says so in ``info["at_bound"]``.
    """

    def __init__(self, *, bounds: tuple[float, float] = (1e-2, 1e2)) -> None:
        lo, hi = (float(b) for b in bounds)
        if not (0 < lo < hi < np.inf):
            raise ConfigError(f"bounds must satisfy 0 < low < high < inf; got {bounds!r}.")
        self.bounds = (lo, hi)

    def _fit(self, inputs: Inputs, labels: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
        temp, info = temperature_fit(inputs.log_scores, labels, self.bounds)
        notes = []
        if info["at_bound"] == "lower":
            notes.append(
                f"The NLL keeps falling as T decreases; T was stopped at the lower bound {temp:g} "
                "(the scores nearly separate the classes)."
            )
        elif info["at_bound"] == "upper":
            notes.append(f"T was stopped at the upper bound {temp:g}.")
        return {"temperature": temp}, {**info, "notes": notes}

    def _predict(self, params: FittedParameters, inputs: Inputs) -> np.ndarray:
        return softmax(inputs.log_scores / params.values["temperature"])


# --------------------------------------------------------------------------- vector / matrix


def _fit_affine_softmax(
    z: np.ndarray, y: np.ndarray, *, kind: str, reg: float, max_iter: int
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    n, k = z.shape
    onehot_rows = np.arange(n)
    # Row-centring makes the fit identical for logits and for log-probabilities.
    zc = z - (z.max(axis=1, keepdims=True) if kind == "vector" else z.mean(axis=1, keepdims=True))
    if kind == "vector":
        w0 = np.concatenate([np.ones(k), np.zeros(k)])
    else:
        w0 = np.concatenate([np.eye(k).ravel(), np.zeros(k)])

    def unpack(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if kind == "vector":
            return theta[:k], theta[k:]
        return theta[: k * k].reshape(k, k), theta[k * k :]

    def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = unpack(theta)
        # in place: one (n, K) buffer per evaluation
        u = zc * w if kind == "vector" else zc @ w.T
        u += b
        u_y = u[onehot_rows, y].copy()
        m = u.max(axis=1)
        u -= m[:, None]
        np.exp(u, out=u)
        tot = u.sum(axis=1)
        nll = float(np.sum(np.log(tot) + m - u_y)) / n
        u /= tot[:, None]
        u[onehot_rows, y] -= 1.0
        u /= n
        gb = u.sum(axis=0)
        gw = np.einsum("ij,ij->j", u, zc) if kind == "vector" else u.T @ zc
        dev = theta - w0
        dev[-k:] = 0.0  # intercepts are not penalised
        val = nll + 0.5 * reg * float(dev @ dev)
        grad = np.concatenate([gw.ravel(), gb]) + reg * dev
        return val, grad

    res = minimize(
        fun,
        w0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": 1e-9, "ftol": 1e-13},
    )
    w, b = unpack(res.x)
    info = {"converged": bool(res.success), "n_iter": int(res.nit), "nll_after": float(res.fun)}
    return np.asarray(w), np.asarray(b), info


class _AffineScaling(Recalibrator):
    kind = "vector"

    def __init__(self, *, reg: float = 0.0, max_iter: int = 500) -> None:
        if not (np.isfinite(reg) and reg >= 0):
            raise ConfigError(f"reg must be a non-negative number; got {reg!r}.")
        if int(max_iter) < 1:
            raise ConfigError(f"max_iter must be at least 1; got {max_iter!r}.")
        self.reg = float(reg)
        self.max_iter = int(max_iter)

    def _centre(self, z: np.ndarray) -> np.ndarray:
        if self.kind == "vector":
            return z - z.max(axis=1, keepdims=True)
        return z - z.mean(axis=1, keepdims=True)

    def _fit(self, inputs: Inputs, labels: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
        w, b, info = _fit_affine_softmax(
            inputs.log_scores, labels, kind=self.kind, reg=self.reg, max_iter=self.max_iter
        )
        notes = [] if info["converged"] else [f"L-BFGS stopped after {info['n_iter']} iterations."]
        return {"weights": w, "bias": b}, {**info, "notes": notes}

    def _predict(self, params: FittedParameters, inputs: Inputs) -> np.ndarray:
        zc = self._centre(inputs.log_scores)
        w, b = params.values["weights"], params.values["bias"]
        u = zc * w + b if self.kind == "vector" else zc @ np.asarray(w).T + b
        return softmax(u)


@register(
    "vector",
    label="Vector scaling",
    description="A scale and an offset per class: softmax(w ⊙ z + b). Can change the predicted class.",
    formula="Guo et al. 2017: q = softmax(w ⊙ z + b)",
    family="scaling",
)
class VectorScaling(_AffineScaling):
    """Vector scaling ``softmax(w * z + b)`` on logits (or log-probabilities).

    Scores are shifted per row by their maximum first (softmax is shift-invariant).

    Parameters
    ----------
    reg : float, default 0
        Ridge penalty on ``w - 1`` added to the mean NLL.
    max_iter : int, default 500
        L-BFGS iterations.
    """

    kind = "vector"


@register(
    "matrix",
    label="Matrix scaling",
    description="A full linear map of the logits: softmax(W z + b). K² + K parameters; ridge towards the identity.",
    formula="Guo et al. 2017: q = softmax(W z + b)",
    family="scaling",
)
class MatrixScaling(_AffineScaling):
    """Matrix scaling ``softmax(W z + b)`` on row-centred logits (or log-probabilities).

    Parameters
    ----------
    reg : float, default 1e-4
        Ridge penalty on ``W - I`` added to the mean NLL (matrix scaling overfits
        easily with many classes).
    max_iter : int, default 500
        L-BFGS iterations.
    """

    kind = "matrix"

    def __init__(self, *, reg: float = 1e-4, max_iter: int = 500) -> None:
        super().__init__(reg=reg, max_iter=max_iter)
