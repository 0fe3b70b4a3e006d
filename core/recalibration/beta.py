"""Beta calibration (Kull, Silva Filho & Flach 2017, "Beyond sigmoids").

The map of one score ``p`` is

    q = σ(a·ln p − b·ln(1 − p) + c),   a, b ≥ 0,

a logistic regression of the label on the two features ``ln p`` and ``−ln(1 − p)``.
It contains the identity (``a = b = 1``, ``c = 0``) and Platt scaling on the
log-odds (``a = b``), and, unlike a sigmoid of the log-odds, can bend differently
near 0 and near 1. Conventions follow the reference package ``betacal`` 1.1.0:

- ``p`` is clipped to ``[ε, 1 − ε]`` with ``ε = 2.22e-16`` (float64 machine epsilon)
  before the logarithms are taken, at fit and at prediction time.
- Parameterisations (``parameters``):

  - ``"abm"`` (default): ``a``, ``b`` and ``c`` free. If the fitted ``a`` is
    negative the fit is redone without ``ln p`` (``a = 0``); else, if ``b`` is
    negative, without ``−ln(1 − p)`` (``b = 0``), so the map stays non-decreasing.
  - ``"am"``: ``a = b``, i.e. a logistic regression on ``logit(p)`` with an intercept.
  - ``"ab"``: no free intercept; the features are ``ln 2p`` and ``−ln 2(1 − p)``,
    i.e. ``c = (a − b)·ln 2``, which fixes the midpoint ``m`` (where ``q = 1/2``) at 1/2.

  ``betacal`` applies the negative-coefficient rule only in ``"abm"`` and only once.
  Here it is applied in every parameterisation, and a coefficient that is still
  negative after the refit is set to 0 as well (leaving the intercept-only fit,
  ``q`` = the mean target, or ``q = 1/2`` for ``"ab"``), so every fitted map is
  non-decreasing. Each such step is reported in ``info["notes"]``.
- The stored map of every component is ``(a, b, c)`` of the formula above plus the
  midpoint ``m`` (``betacal``'s ``map_ = [a, b, m]``; NaN for a constant map).
- Targets (``targets``): Platt's smoothed targets ``(N+ + 1)/(N+ + 2)`` and
  ``1/(N- + 2)`` by default, as Platt scaling here, so that ``"am"`` is exactly
  :class:`~core.recalibration.scaling.PlattScaling` on the log-odds and the fit stays
  finite when the scores separate the outcomes (frequent per class with a strong
  model). ``targets="hard"`` fits the 0/1 labels by maximum likelihood, as
  ``betacal`` (whose ``C = 1e11`` ridge is negligible and is not reproduced); a
  component whose scores separate the outcomes then raises
  :class:`~core.base.errors.FitError`.

Lenses are those of every one-dimensional recalibrator (:mod:`core.recalibration.base`):
``binary`` (the output row is ``[1 − q, q]``), ``classwise`` (one-vs-rest per class,
then every row is divided by its sum) and ``top-label`` (the confidence is
recalibrated and the other entries rescaled so the row sums to 1).

Fitting is one damped Newton solve over all lens components at once: every component
is its own problem with at most three parameters on standardised features, whose
3×3 systems are solved together, started at the identity map (or at the
intercept-only fit when that is better); each iteration is one blocked pass over the
components still moving. The features are computed once (the first written over the
component scores, the second in one more ``(C, n)`` matrix). Components whose
coefficient went negative are refitted together in a second solve, warm-started from
the full fit without that feature.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.random import Generator

from core.base.errors import ConfigError, FitError
from core.recalibration.base import (
    Component,
    ComponentFit,
    OneDimRecalibrator,
    blocks,
    check_both_outcomes,
    component_arrays,
    logistic_terms,
    register,
)
from core.recalibration.logistic_start import (
    START_MIN_COLUMNS,
    binned_rows,
    compressed_logistic,
)
from core.recalibration.scaling import (
    TARGETS,  # noqa: F401  (re-exported: the targets option's values)
    check_targets,
    smoothed_targets,
)

#: Scores are clipped to ``[EPS, 1 - EPS]`` before logarithms (``betacal``'s clipping).
EPS = float(np.finfo(np.float64).eps)

#: Entries per block of the batched Newton passes (a block's buffers stay in cache).
BLOCK_ENTRIES = 1 << 13

PARAMETERS = ("abm", "am", "ab")

_LN2 = float(np.log(2.0))


# --------------------------------------------------------------------------- features


def _features(s: np.ndarray, parameters: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Return the two regression features of a block of scores (the second is None for ``am``).

    ``abm``: ``ln p`` and ``−ln(1 − p)``; ``ab``: ``ln 2p`` and ``−ln 2(1 − p)``;
    ``am``: ``ln p − ln(1 − p)`` only; ``p`` clipped to ``[EPS, 1 − EPS]``.
    """
    q = np.clip(s, EPS, 1.0 - EPS)
    f2 = np.log1p(np.negative(q))  # ln(1 - p), accurate for small p
    f1 = np.log(q, out=q)
    if parameters == "am":
        f1 -= f2
        return f1, None
    np.negative(f2, out=f2)
    if parameters == "ab":
        f1 += _LN2
        f2 -= _LN2
    return f1, f2


def _row_groups(x: np.ndarray, rows: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """Split the problems ``rows`` of ``x`` into groups whose blocks hold about ``BLOCK_ENTRIES``."""
    n = x.shape[1]
    if n >= BLOCK_ENTRIES:
        return [(np.array([j]), x[r : r + 1], BLOCK_ENTRIES) for j, r in enumerate(rows)]
    per = max(1, BLOCK_ENTRIES // n)
    return [
        (np.arange(g, min(g + per, rows.size)), x[rows[g : g + per]], n)
        for g in range(0, rows.size, per)
    ]


def _feature_moments(
    s: np.ndarray, t: np.ndarray, parameters: str, overwrite: bool
) -> tuple[Any, ...]:
    """Compute the features of every row, their moments and the extreme scores, in one pass.

    Returns ``(x1, x2, shift, sums, pos_sums, low_pos, high_neg)``: the raw features
    ``x1`` (written over ``s`` when ``overwrite``) and ``x2`` (None for ``am``);
    ``shift`` ``(2, C)``, each feature's first value (shifted sums keep the variance
    accurate when a feature hardly varies); ``sums`` ``(2, 2, C)``, the first and
    second shifted moments; ``pos_sums`` ``(2, C)``, the unshifted sums over the
    positive rows; ``low_pos``, ``high_neg`` ``(C,)``, the smallest positive and
    largest negative clipped score.
    """
    c_rows, n = s.shape
    first = _features(s[:, :1].copy(), parameters)
    shift = np.zeros((2, c_rows))
    shift[0] = first[0][:, 0]
    if first[1] is not None:
        shift[1] = first[1][:, 0]
    x1 = s if overwrite else np.empty_like(s)
    x2 = None if parameters == "am" else np.empty_like(s)
    sums = np.zeros((2, 2, c_rows))
    pos_sums = np.zeros((2, c_rows))
    low_pos = np.full(c_rows, np.inf)
    high_neg = np.full(c_rows, -np.inf)
    for idx, _, width in _row_groups(s, np.arange(c_rows)):
        r0, r1 = int(idx[0]), int(idx[-1]) + 1
        for i in range(0, n, width):
            cols = slice(i, i + width)
            sb = s[r0:r1, cols]
            tb = t[r0:r1, cols]
            np.minimum(
                low_pos[r0:r1],
                np.minimum.reduce(sb, axis=1, where=tb, initial=np.inf),
                out=low_pos[r0:r1],
            )
            np.maximum(
                high_neg[r0:r1],
                np.maximum.reduce(sb, axis=1, where=~tb, initial=-np.inf),
                out=high_neg[r0:r1],
            )
            for j, (f, out) in enumerate(zip(_features(sb, parameters), (x1, x2), strict=True)):
                if f is None or out is None:
                    continue
                out[r0:r1, cols] = f
                pos_sums[j, r0:r1] += np.add.reduce(f, axis=1, where=tb)
                f -= shift[j, r0:r1, None]
                sums[j, 0, r0:r1] += f.sum(axis=1)
                sums[j, 1, r0:r1] += np.einsum("ij,ij->i", f, f)
    clip = (EPS, 1.0 - EPS)
    return x1, x2, shift, sums, pos_sums, np.clip(low_pos, *clip), np.clip(high_neg, *clip)


def _standardise(
    x1: np.ndarray, x2: np.ndarray | None, mu: np.ndarray, scale: np.ndarray
) -> np.ndarray:
    """Standardise the features in place, ``(f - mu) / scale``, and return ``Σ φ``.

    ``Σ φ`` is ``(C, 3)``: the sums of the two stored features and ``n`` (the
    constant feature).
    """
    col_sums = np.zeros((x1.shape[0], 3))
    col_sums[:, 2] = x1.shape[1]
    for j, x in enumerate((x1, x2)):
        if x is None:
            continue
        for rows, cols in blocks(x.shape, BLOCK_ENTRIES):
            xb = x[rows, cols]
            xb -= mu[j, rows, None]
            xb /= scale[j, rows, None]
            col_sums[rows, j] += xb.sum(axis=1)
    return col_sums


def _logistic_q(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return ``Σ |η|``, ``Σ log(1 + e)``, ``q = σ(η)`` and ``q(1 − q)`` (last axis summed).

    The terms of :func:`~core.recalibration.base.logistic_terms`, with
    ``q = 1/2 + sign(η)·(1/2 − σ(-|η|))``.
    """
    abs_sum, log_sum, g, h = logistic_terms(eta)
    np.subtract(0.5, g, out=g)
    np.copysign(g, eta, out=g)
    g += 0.5
    return abs_sum, log_sum, g, h


def _row_sums(
    x1: np.ndarray,
    x2: np.ndarray | None,
    theta: np.ndarray,
    width: int,
    grad: np.ndarray,
    hess: np.ndarray,
) -> tuple[float, float]:
    """Add one long row's sums of :func:`_newton_sums` into ``grad`` and ``hess``, block by block.

    Returns ``Σ |η|`` and ``Σ log(1 + e)``; the feature products are BLAS dot products.
    """
    a, b, c = (float(v) for v in theta)
    sabs = slog = 0.0
    for i in range(0, x1.size, width):
        xa = x1[i : i + width]
        eta = xa * a
        if x2 is not None:
            xb = x2[i : i + width]
            eta += xb * b
        eta += c
        s_abs, s_log, g, h = _logistic_q(eta)
        sabs += float(s_abs)
        slog += float(s_log)
        grad[0] += np.dot(g, xa)
        grad[2] += g.sum()
        hess[2, 2] += h.sum()
        hx = np.multiply(h, xa, out=eta)
        hess[0, 0] += np.dot(hx, xa)
        hess[0, 2] += hx.sum()
        if x2 is not None:
            grad[1] += np.dot(g, xb)
            hess[0, 1] += np.dot(hx, xb)
            h *= xb
            hess[1, 1] += np.dot(h, xb)
            hess[1, 2] += h.sum()
    hess[1, 0] = hess[0, 1]
    return sabs, slog


def _newton_sums(
    x1: np.ndarray,
    x2: np.ndarray | None,
    rows: np.ndarray,
    theta: np.ndarray,
    col_sums: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``Σ softplus(η)``, ``Σ q φ`` and ``Σ q(1 − q) φ φᵀ`` of the problems ``rows``.

    ``φ = (x1, x2, 1)`` are the standardised features, ``η = θ·φ`` and ``q = σ(η)``.
    Only ``exp`` and ``log`` are transcendental: with ``e = exp(-|η|)``,
    ``softplus(η) = max(η, 0) + log(1 + e)`` where ``Σ max(η, 0) = (θ·Σφ + Σ|η|) / 2``,
    and ``q = 1/2 + sign(η)·(1/2 − σ(-|η|))`` with ``σ(-|η|) = e / (1 + e)``. The
    feature products (``η``, ``Σ q x`` and ``Σ h x xᵀ``) are small BLAS products of
    each block's ``(features × columns)`` matrix.
    """
    m = rows.size
    n = x1.shape[1]
    nf = 1 if x2 is None else 2
    sabs = np.zeros(m)
    sp = np.zeros(m)
    grad = np.zeros((m, 3))
    hess = np.zeros((m, 3, 3))
    groups1 = _row_groups(x1, rows)
    groups2 = _row_groups(x2, rows) if x2 is not None else [None] * len(groups1)
    for (idx, block1, width), g2 in zip(groups1, groups2, strict=True):
        r = rows[idx]
        if idx.size == 1:  # a long row: 1-D blocks and BLAS dot products
            j = int(idx[0])
            xb2 = None if g2 is None else g2[1][0]
            sabs[j], sp[j] = _row_sums(block1[0], xb2, theta[r[0]], width, grad[j], hess[j])
            continue
        slopes = theta[r, None, :nf]  # (rows, 1, features)
        c = theta[r, 2][:, None]
        for i in range(0, n, width):
            if g2 is None:
                f = block1[:, None, i : i + width]
            else:
                f = np.stack((block1[:, i : i + width], g2[1][:, i : i + width]), axis=1)
            eta = np.matmul(slopes, f)[:, 0, :]
            eta += c
            s_abs, s_log, g, h = _logistic_q(eta)
            sabs[idx] += s_abs
            sp[idx] += s_log
            grad[idx, :nf] += np.matmul(f, g[:, :, None])[:, :, 0]
            grad[idx, 2] += g.sum(axis=1)
            hess[idx, 2, 2] += h.sum(axis=1)
            hf = f * h[:, None, :]
            hess[idx, :nf, :nf] += np.matmul(hf, f.transpose(0, 2, 1))
            hess[idx, :nf, 2] += hf.sum(axis=2)
    sp += 0.5 * (np.einsum("ij,ij->i", theta[rows], col_sums[rows]) + sabs)
    hess[:, 2, :2] = hess[:, :2, 2]
    return sp, grad, hess


def _newton(
    x1: np.ndarray,
    x2: np.ndarray | None,
    rows: np.ndarray,
    theta: np.ndarray,
    free: np.ndarray,
    targets_sum: np.ndarray,
    fallback: np.ndarray,
    fallback_loss: np.ndarray,
    col_sums: np.ndarray,
    max_iter: int,
) -> tuple[np.ndarray, int]:
    """Damped Newton on the problems ``rows`` (in place on ``theta``); return (converged, iterations).

    The loss of a row is ``Σ softplus(η) − θ·T`` with ``T = Σ t φ`` (``targets_sum``),
    so the targets enter only through constants. Fixed parameters (``free`` False)
    keep their value: their rows and columns of the Hessian are replaced by the
    identity and their gradient by 0. A row whose starting point is worse than its
    ``fallback`` (whose loss is known in closed form) restarts there. A row whose
    loss went up halves its step and is evaluated again; a row stops when its step
    or its gain is negligible.
    """
    n_rows = theta.shape[0]
    converged = np.zeros(n_rows, dtype=bool)
    best = np.full(n_rows, np.inf)
    base = theta.copy()
    step = np.zeros((n_rows, 3))
    lam = np.ones(n_rows)
    active = rows.copy()
    eye = np.eye(3)
    n_iter = 0
    while active.size and n_iter < max_iter:
        n_iter += 1
        sp, grad, hess = _newton_sums(x1, x2, active, theta, col_sums)
        th = theta[active]
        cur = sp - np.einsum("ij,ij->i", th, targets_sum[active])
        if n_iter == 1:  # a start worse than the fallback: restart from the fallback
            restart = cur > fallback_loss[active]
            theta[active[restart]] = fallback[active[restart]]
            cur[restart] = np.inf
            fresh = ~restart
        else:
            fresh = np.ones(active.size, dtype=bool)
        worse = (cur > best[active] + 1e-12 * np.abs(best[active])) & fresh
        back = active[worse]
        if back.size:
            lam[back] *= 0.5
            theta[back] = base[back] - lam[back, None] * step[back]
        ok = ~worse & fresh
        ok_rows = active[ok]
        gain = best[ok_rows] - cur[ok]
        fr = free[ok_rows]
        g = np.where(fr, grad[ok] - targets_sum[ok_rows], 0.0)
        h = hess[ok] * (fr[:, :, None] & fr[:, None, :])
        h += eye * (~fr)[:, None, :]
        # a relative ridge keeps collinear features (scores with two distinct values) solvable
        diag = np.einsum("ijj->ij", h)
        diag += 1e-12 * (1.0 + diag.max(axis=1, keepdims=True))
        st = np.linalg.solve(h, g[:, :, None])[:, :, 0]
        best[ok_rows] = cur[ok]
        base[ok_rows] = theta[ok_rows]
        step[ok_rows] = st
        lam[ok_rows] = 1.0
        theta[ok_rows] -= st
        tiny = np.abs(st).max(axis=1) < 1e-10
        scale_loss = np.maximum(1.0, np.abs(cur[ok]))
        flat = gain <= 1e-14 * scale_loss
        # the Newton decrement g·H⁻¹g / 2 predicts the remaining gain: once it is at
        # rounding level the step just taken is final and need not be evaluated again
        final = 0.5 * np.einsum("ij,ij->i", g, st) <= 1e-13 * scale_loss
        stalled = lam[back] < 1e-12  # no descent left along this direction: keep the best point
        theta[back[stalled]] = base[back[stalled]]
        done = np.zeros(active.size, dtype=bool)
        done[np.flatnonzero(ok)[tiny | flat | final]] = True
        done[np.flatnonzero(worse)[stalled]] = True
        converged[active[done]] = True
        active = active[~done]
    return converged, n_iter


def _midpoints(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Return ``m`` with ``a·ln m − b·ln(1 − m) + c = 0`` (bisection on the log-odds of ``m``).

    The left side is non-decreasing in ``m`` for ``a, b ≥ 0``; a map that stays on one
    side of 1/2 gets the end of ``[EPS, 1 − EPS]`` nearest its crossing, and a constant
    map (``a = b = 0``) gets NaN.
    """
    lo = np.full(a.shape, np.log(EPS))
    hi = -lo
    for _ in range(80):
        u = 0.5 * (lo + hi)
        # ln σ(u) = -softplus(-u), ln σ(-u) = -softplus(u)
        val = -a * np.logaddexp(0.0, -u) + b * np.logaddexp(0.0, u) + c
        up = val > 0
        hi = np.where(up, u, hi)
        lo = np.where(up, lo, u)
    m = 1.0 / (1.0 + np.exp(-0.5 * (lo + hi)))
    return np.where((a == 0) & (b == 0), np.nan, m)


def _identity_start(
    usable: np.ndarray, scale: np.ndarray, mu: np.ndarray, n_feat: int, parameters: str
) -> tuple[np.ndarray, np.ndarray]:
    """Return which parameters are free and the identity map q = p on standardised features."""
    c_rows = usable.shape[1]
    free = np.zeros((c_rows, 3), dtype=bool)
    free[:, 0] = usable[0]
    free[:, 1] = usable[1] if n_feat == 2 else False
    free[:, 2] = parameters != "ab"
    # a = b = 1, c = 0 on the features before standardising
    theta = np.zeros((c_rows, 3))
    theta[:, 0] = np.where(usable[0], scale[0], 0.0)
    theta[:, 1] = np.where(usable[1], scale[1], 0.0) if n_feat == 2 else 0.0
    theta[:, 2] = 0.0 if parameters == "ab" else mu[0] + mu[1]
    return free, theta


def _refuse_separated(j: int) -> None:
    raise FitError(
        f"Beta calibration with hard targets cannot be fitted on component {j}: its "
        "scores separate the outcomes, so the likelihood has no finite maximum. Use "
        "targets='platt' (smoothed targets) or more calibration rows."
    )


def _compressed_start(
    theta: np.ndarray,
    free: np.ndarray,
    x1: np.ndarray,
    x2: np.ndarray | None,
    t: np.ndarray,
    tp: np.ndarray,
    tn: np.ndarray,
    n_feat: int,
) -> None:
    """Start ``theta`` at the fit of the rows compressed into bins, where that fit is finite."""
    c_rows = theta.shape[0]
    flat = (np.zeros(c_rows), np.ones(c_rows))
    feats = [(x1, *flat)] + ([] if x2 is None else [(x2, *flat)])
    cols = [0, 1, 2] if n_feat == 2 else [0, 2]
    counts, means, pos = binned_rows(feats, t)
    mass = tp[:, None] * pos + tn[:, None] * (counts - pos)
    start = compressed_logistic(counts, means, mass, theta[:, cols], free[:, cols])
    good = np.isfinite(start).all(axis=1)
    theta[np.ix_(good, cols)] = start[good]


def _feature_scales(
    sums: Any, shift: Any, n: int, n_feat: int, parameters: str, c_rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return each feature's centre, scale, unshifted sum and whether it varies at all."""
    mu = np.zeros((2, c_rows))
    scale = np.ones((2, c_rows))
    raw_sum = np.zeros((2, c_rows))  # Σ f (unshifted)
    usable = np.zeros((2, c_rows), dtype=bool)
    for j in range(n_feat):
        s1, s2 = sums[j]
        raw_sum[j] = s1 + n * shift[j]
        if parameters == "ab":  # no intercept: scale only, so the origin keeps its meaning
            ms = (s2 + 2.0 * shift[j] * s1 + n * shift[j] ** 2) / n
            sd = np.sqrt(np.maximum(ms, 0.0))
        else:
            mean_dev = s1 / n
            mu[j] = shift[j] + mean_dev
            sd = np.sqrt(np.maximum(s2 / n - mean_dev**2, 0.0))
        # a feature that hardly varies carries no information beyond the intercept
        usable[j] = sd > 1e-12 * np.maximum(1.0, np.abs(mu[j]))
        scale[j] = np.where(usable[j], sd, 1.0)
    return mu, scale, raw_sum, usable


def fit_beta_rows(
    s: np.ndarray,
    t: np.ndarray,
    *,
    parameters: str = "abm",
    targets: str = "platt",
    max_iter: int = 100,
    overwrite: bool = False,
) -> tuple[dict[str, np.ndarray], list[list[str]]]:
    """Fit a beta calibration map to every row of ``s`` at once.

    Parameters
    ----------
    s : numpy.ndarray
        ``(C, n)`` scores in [0, 1], one problem per row (only read unless ``overwrite``).
    t : numpy.ndarray
        ``(C, n)`` boolean outcomes.
    parameters : {"abm", "am", "ab"}
        Parameterisation (module docstring).
    targets : {"platt", "hard"}
        Platt's smoothed targets or 0/1 targets (maximum likelihood).
    max_iter : int
        Newton iterations per solve.
    overwrite : bool, default False
        Whether ``s`` may be overwritten (by a standardised feature), saving a copy.

    Returns
    -------
    values : dict
        ``(C,)`` arrays ``a``, ``b``, ``c`` of ``q = σ(a ln p − b ln(1 − p) + c)``,
        the midpoint ``m`` and the iterations ``n_iter``.
    notes : list of list of str
        Per row: sign-rule refits and convergence problems.

    Raises
    ------
    FitError
        If a row has only one outcome, or, with hard targets, its scores separate
        the outcomes (the likelihood has no finite maximum).
    """
    s = np.asarray(s, dtype=np.float64)
    t = np.asarray(t, dtype=bool)
    c_rows, n = s.shape
    n_pos = t.sum(axis=1)
    check_both_outcomes(n_pos, n, "Beta calibration")
    x1, x2, shift, sums, pos_sums, low_pos, high_neg = _feature_moments(s, t, parameters, overwrite)
    sep = high_neg <= low_pos
    if targets == "hard" and sep.any():
        _refuse_separated(int(np.flatnonzero(sep)[0]))
    n_feat = 1 if parameters == "am" else 2
    mu, scale, raw_sum, usable = _feature_scales(sums, shift, n, n_feat, parameters, c_rows)

    if targets == "platt":
        tp, tn = smoothed_targets(n_pos, n)
    else:
        tp, tn = np.ones(c_rows), np.zeros(c_rows)
    sum_t = tp * n_pos + tn * (n - n_pos)
    # T = Σ t φ on the standardised features: Σ t f = tn Σ f + (tp − tn) Σ_{t=1} f
    targets_sum = np.zeros((c_rows, 3))
    for j in range(n_feat):
        stf = tn * raw_sum[j] + (tp - tn) * pos_sums[j]
        targets_sum[:, j] = (stf - mu[j] * sum_t) / scale[j]
    targets_sum[:, 2] = sum_t
    tbar = sum_t / n  # strictly inside (0, 1): both outcomes occur
    log_t, log_1t = np.log(tbar), np.log1p(-tbar)
    base_c = log_t - log_1t
    # the intercept-only fit (a = b = 0) and its loss, in closed form: the fallback start
    fallback = np.zeros((c_rows, 3))
    if parameters == "ab":
        fallback_loss = np.full(c_rows, n * _LN2)
    else:
        fallback[:, 2] = base_c
        fallback_loss = -(sum_t * log_t + (n - sum_t) * log_1t)

    free, theta = _identity_start(usable, scale, mu, n_feat, parameters)
    col_sums = _standardise(x1, x2, mu, scale)
    if n >= START_MIN_COLUMNS:  # start from the fit of the rows compressed into bins
        _compressed_start(theta, free, x1, x2, t, tp, tn, n_feat)
    notes: list[list[str]] = [[] for _ in range(c_rows)]
    converged, n_iter = _newton(
        x1,
        x2,
        np.arange(c_rows),
        theta,
        free,
        targets_sum,
        fallback,
        fallback_loss,
        col_sums,
        max_iter,
    )
    iters = np.full(c_rows, n_iter)

    # the sign rule: drop a negative coefficient's feature and refit (a first, as betacal)
    name = ("a", "b") if n_feat == 2 else ("a",)
    feature = ("ln p", "−ln(1 − p)") if parameters == "abm" else ("ln 2p", "−ln 2(1 − p)")
    drop = np.full(c_rows, -1)
    for j in reversed(range(n_feat)):
        drop = np.where(theta[:, j] < 0, j, drop)
    refit = np.flatnonzero(drop >= 0)
    if refit.size and n_feat == 2:
        free[refit, drop[refit]] = False
        theta[refit, drop[refit]] = 0.0  # warm start: the full fit without that feature
        for r in refit:
            notes[r].append(
                f"{name[drop[r]]} < 0 in the full fit; refitted without {feature[drop[r]]} "
                f"({name[drop[r]]} = 0) so the map stays non-decreasing."
            )
        conv2, it2 = _newton(
            x1, x2, refit, theta, free, targets_sum, fallback, fallback_loss, col_sums, max_iter
        )
        converged[refit] = conv2[refit]
        iters[refit] += it2
        theta[refit, drop[refit]] = 0.0
    # a coefficient still negative: no increasing map beats the constant one
    still = (theta[:, :n_feat] < 0).any(axis=1)
    for r in np.flatnonzero(still):
        theta[r, :n_feat] = 0.0
        theta[r, 2] = base_c[r] if parameters != "ab" else 0.0
        converged[r] = True
        notes[r].append(
            "The scores decrease with the outcome; the map is constant "
            + ("(the mean target)." if parameters != "ab" else "(q = 1/2).")
        )
    if (np.abs(theta) > 1e6).any() or not np.isfinite(theta).all():
        raise FitError(
            "Beta calibration has no finite maximum-likelihood fit on these rows (the scores "
            "nearly separate the outcomes). Use targets='platt' (smoothed targets) or more rows."
        )
    for r in np.flatnonzero(~converged):
        notes[r].append(f"Newton's method stopped after {int(iters[r])} iterations.")

    # back to the original features
    a = theta[:, 0] / scale[0]
    if n_feat == 2:
        b = theta[:, 1] / scale[1]
    else:
        b = a.copy()
    if parameters == "abm":
        c = theta[:, 2] - a * mu[0] - b * mu[1]
    elif parameters == "am":  # η = a (ln p − ln(1 − p)) + c
        c = theta[:, 2] - a * mu[0]
    else:  # η = a (ln p + ln 2) − b (ln(1 − p) + ln 2)
        c = (a - b) * _LN2
    values = {"a": a, "b": b, "c": c, "m": _midpoints(a, b, c), "n_iter": iters}
    return values, notes


def apply_beta_rows(
    s: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray, *, out: np.ndarray | None = None
) -> np.ndarray:
    """Return ``σ(a ln p − b ln(1 − p) + c)`` for ``(C, n)`` scores, in cache-sized blocks.

    Parameters
    ----------
    s : numpy.ndarray
        ``(C, n)`` scores (clipped to ``[EPS, 1 − EPS]`` first).
    a, b, c : numpy.ndarray
        ``(C,)`` parameters.
    out : numpy.ndarray, optional
        ``(C, n)`` buffer for the result (may be ``s`` itself).

    Returns
    -------
    numpy.ndarray
        ``(C, n)`` recalibrated scores.
    """
    if out is None:
        out = np.empty_like(s, dtype=np.float64)
    rows_all = np.arange(s.shape[0])
    n = s.shape[1]
    for idx, _, width in _row_groups(s, rows_all):
        r0, r1 = int(idx[0]), int(idx[-1]) + 1
        for i in range(0, n, width):
            f1, f2 = _features(s[r0:r1, i : i + width], "abm")
            f1 *= a[r0:r1, None]
            f2 *= b[r0:r1, None]
            f1 += f2
            f1 += c[r0:r1, None]
            # σ(η) without overflow: e = exp(-|η|), σ = 1/(1+e) or e/(1+e)
            e = np.abs(f1, out=f2)
            np.negative(e, out=e)
            np.exp(e, out=e)
            num = np.where(f1 >= 0, 1.0, e)
            e += 1.0
            np.divide(num, e, out=out[r0:r1, i : i + width])
    return out


@register(
    "beta",
    label="Beta calibration",
    description="Logistic regression of the label on ln p and −ln(1 − p) with non-negative "
    "slopes: bends differently near 0 and 1; per class one-vs-rest, top-label or binary.",
    formula="Kull, Silva Filho & Flach 2017: q = σ(a·ln p − b·ln(1 − p) + c), a, b ≥ 0",
    family="scaling",
)
class BetaCalibration(OneDimRecalibrator):
    """Beta calibration through a lens (module docstring).

    Parameters
    ----------
    lens : {"auto", "binary", "top-label", "classwise"}
        ``auto`` is ``binary`` for two classes, else ``classwise``.
    parameters : {"abm", "am", "ab"}
        ``betacal``'s parameterisations: all three free, ``a = b``, or ``m = 1/2``.
    targets : {"platt", "hard"}
        Platt's smoothed targets (the default; finite on separable data) or 0/1 targets
        (maximum likelihood, as ``betacal``).
    """

    uses_log_odds = False

    def __init__(
        self, *, lens: str = "auto", parameters: str = "abm", targets: str = "platt"
    ) -> None:
        self.lens = self._check_lens(lens)
        if parameters not in PARAMETERS:
            raise ConfigError(
                f"parameters must be one of {', '.join(map(repr, PARAMETERS))}; got {parameters!r}."
            )
        self.parameters = parameters
        self.targets = check_targets(targets)

    def _fit_components(
        self, scores: np.ndarray, log_odds: np.ndarray, outcomes: np.ndarray, rng: Generator
    ) -> list[ComponentFit]:
        vals, notes = fit_beta_rows(
            scores, outcomes, parameters=self.parameters, targets=self.targets, overwrite=True
        )
        keys = ("a", "b", "c", "m")
        return [
            (
                {**{k: float(vals[k][j]) for k in keys}, "n_iter": int(vals["n_iter"][j])},
                notes[j],
            )
            for j in range(scores.shape[0])
        ]

    def _apply_components(
        self, comps: list[Component], scores: np.ndarray, log_odds: np.ndarray, rng: Generator
    ) -> np.ndarray:
        a, b, c = component_arrays(comps, "a", "b", "c")
        return apply_beta_rows(scores, a, b, c, out=scores)  # the scores are a fresh matrix
