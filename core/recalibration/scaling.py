"""Scaling recalibrators: Platt, temperature, vector and matrix scaling.

- **Platt** fits ``q = sigmoid(a x + c)`` by maximum likelihood on one score per
  lens component, with ``x = logit(p)`` (Kumar et al. 2019's "Platt after a log
  transform"; the log-odds themselves when logits are given) or ``x = p``.
  Platt's smoothed targets ``(N+ + 1)/(N+ + 2)`` and ``1/(N- + 2)`` (the default,
  as scikit-learn) keep the optimum finite on separable data; with hard 0/1
  targets separable data raise :class:`~core.base.errors.FitError`.
- **Temperature** ``softmax(z / T)``: the mean negative log-likelihood is convex in
  ``1/T``, so ``T`` is the root of its derivative, found by a bracketed solve
  (safeguarded Newton) inside ``bounds``; a root outside the bracket is reported,
  not hidden.
- **Vector** ``softmax(w * z + b)`` and **matrix** ``softmax(W z + b)`` scaling,
  fitted by L-BFGS from the identity map, with an optional ridge penalty towards
  the identity (``reg``). Scores are centred per row first (by the maximum for
  vector scaling, the mean for matrix scaling), so logits and log-probabilities
  give the same fit. Matrix scaling has ``K² + K`` parameters and each evaluation
  costs two ``(n × K)·(K × K)`` products, so above 100 classes it needs an explicit
  ``max_iter`` (see :class:`MatrixScaling`).

Batched work: the classwise Platt fits are one damped Newton solve over all classes
at once (closed-form 2×2 steps, :func:`fit_logistic_rows`), started from the fit of
every row compressed into bins (:mod:`core.recalibration.logistic_start`); vector
scaling's L-BFGS runs in coordinates preconditioned by each class's 2×2 Hessian
block. Every pass over an ``(n, K)`` matrix is done in cache-sized blocks, shared out
over threads in pieces that do not depend on the thread count (:mod:`core.base.parallel`),
and no full-size copy of the scores is made while fitting.

Multiclass scores ``z`` are the logits when given, else ``log p`` (softmax is
shift-invariant, so this reproduces ``p`` exactly). Outputs are softmax rows, so
they sum to 1 without renormalisation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.random import Generator
from scipy.optimize import OptimizeResult, minimize

from core.base.errors import ConfigError, FitError
from core.base.parallel import even_pieces, map_ordered
from core.recalibration.base import (
    Component,
    ComponentFit,
    FittedParameters,
    Inputs,
    OneDimRecalibrator,
    Recalibrator,
    blocks,
    check_both_outcomes,
    component_arrays,
    logistic_terms,
    register,
    sigmoid,
    softmax,
    transpose,
)
from core.recalibration.logistic_start import (
    START_MIN_COLUMNS,
    binned_rows,
    compressed_logistic,
)

#: Rows per chunk are chosen so a chunk holds about this many matrix entries; a chunk's
#: few buffers then stay in cache across the elementwise passes made over it.
CHUNK_ENTRIES = 1 << 15

#: Entries per piece of row-chunked work handed to a thread (whole chunks per piece).
PIECE_ENTRIES = 1 << 21


def piece_rows(k: int, step: int) -> int:
    """Rows per thread piece: whole chunks of ``step`` rows, about ``PIECE_ENTRIES`` entries."""
    return max(step, (PIECE_ENTRIES // max(k, 1)) // step * step)


#: Entries per block of the batched Newton solve of Platt scaling (in-cache passes).
BLOCK_ENTRIES = 1 << 15

#: Above this many classes matrix scaling needs an explicit ``max_iter`` (see MatrixScaling).
MATRIX_MAX_CLASSES = 100

#: L-BFGS iterations of vector and matrix scaling (and Dirichlet calibration) by default.
DEFAULT_MAX_ITER = 500


# --------------------------------------------------------------------------- Platt


def smoothed_targets(
    n_pos: float | np.ndarray, n: int
) -> tuple[float | np.ndarray, float | np.ndarray]:
    """Return Platt's smoothed targets: ``(N+ + 1)/(N+ + 2)`` for positives, ``1/(N- + 2)`` else.

    Parameters
    ----------
    n_pos : float or numpy.ndarray
        Positives ``N+`` (of one problem, or one per problem).
    n : int
        Rows of each problem, so ``N- = n - N+``.

    Returns
    -------
    tp, tn : float or numpy.ndarray
        Targets of the positive and of the negative rows.
    """
    return (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n - n_pos + 2.0)


#: Targets of the logistic fits: Platt's smoothed targets or hard 0/1 labels.
TARGETS = ("platt", "hard")


def check_targets(targets: str) -> str:
    """Validate a ``targets`` option (one of ``TARGETS``) and return it."""
    if targets not in TARGETS:
        raise ConfigError(f"targets must be 'platt' or 'hard'; got {targets!r}.")
    return targets


def platt_targets(t: np.ndarray, targets: str) -> np.ndarray:
    """Return the regression targets: hard 0/1 labels or Platt's smoothed ones."""
    if targets == "hard":
        return t
    tp, tn = smoothed_targets(float(t.sum()), t.size)
    return np.where(t > 0.5, tp, tn)


#: Rows per piece of work handed to a thread by :func:`_logistic_sums`.
ROWS_PER_TASK = 16


def _logistic_sums(
    x: np.ndarray,
    mu: np.ndarray,
    scale: np.ndarray,
    a: np.ndarray,
    c: np.ndarray,
    rows: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """Return the softplus and derivative sums of the standardised problems ``rows`` of ``x``.

    With ``xs = (x - mu) / scale`` (standardised block by block, so ``x`` is never
    copied or modified), ``η = a xs + c``, ``q = σ(η)`` and ``h = q(1 - q)``, returns
    ``Σ softplus(η)``, ``Σ |η|``, ``Σ q xs``, ``Σ q``, ``Σ h xs²``, ``Σ h xs`` and
    ``Σ h``; the targets enter the loss and gradient only through constant sums (see
    :func:`fit_logistic_rows`). The work is done in blocks of about ``BLOCK_ENTRIES``
    entries, so the twenty or so elementwise passes of a block run in cache (see
    :func:`~core.recalibration.base.logistic_terms`). The rows are shared out over
    threads in pieces of ``ROWS_PER_TASK``; each row's sums are computed by one thread
    from that row alone, so the result does not depend on the number of threads.
    """
    n = x.shape[1]

    def piece(rows: np.ndarray) -> tuple[np.ndarray, ...]:
        k = rows.size
        sp, sabs, sqx, sq, shxx, shx, sh = (np.zeros(k) for _ in range(7))
        if n >= BLOCK_ENTRIES:
            groups = [(np.array([j]), x[r : r + 1]) for j, r in enumerate(rows)]
            width = BLOCK_ENTRIES
        else:
            per = max(1, BLOCK_ENTRIES // n)
            groups = [
                (np.arange(g, min(g + per, k)), x[rows[g : g + per]]) for g in range(0, k, per)
            ]
            width = n
        for idx, block in groups:
            r = rows[idx]
            mu_b, sc_b = mu[r][:, None], scale[r][:, None]
            a_b, c_b = a[r][:, None], c[r][:, None]
            for i in range(0, n, width):
                xb = block[:, i : i + width] - mu_b
                xb /= sc_b
                eta = xb * a_b
                eta += c_b
                s_abs, s_log, g, h = logistic_terms(eta)
                sabs[idx] += s_abs
                sp[idx] += s_log
                np.subtract(1.0, g, out=g, where=eta >= 0)  # now q = σ(η)
                sq[idx] += g.sum(axis=1)
                sqx[idx] += np.einsum("ij,ij->i", g, xb)
                sh[idx] += h.sum(axis=1)
                h *= xb
                shx[idx] += h.sum(axis=1)
                shxx[idx] += np.einsum("ij,ij->i", h, xb)
        return sp, sabs, sqx, sq, shxx, shx, sh

    pieces = [rows[i : i + ROWS_PER_TASK] for i in range(0, rows.size, ROWS_PER_TASK)]
    parts = map_ordered(piece, pieces, entries=rows.size * n)
    if len(parts) == 1:
        return parts[0]
    return tuple(np.concatenate(col) for col in zip(*parts, strict=True))


def affine_sigmoid(
    x: np.ndarray, a: np.ndarray, c: np.ndarray, *, out: np.ndarray | None = None
) -> np.ndarray:
    """Return ``sigmoid(a[:, None] * x + c[:, None])`` for ``(C, n)`` rows, in cache-sized blocks.

    Parameters
    ----------
    x : numpy.ndarray
        ``(C, n)`` features.
    a, c : numpy.ndarray
        ``(C,)`` slopes and intercepts.
    out : numpy.ndarray, optional
        ``(C, n)`` float64 buffer for the result (may be ``x`` itself).

    Returns
    -------
    numpy.ndarray
        ``(C, n)`` probabilities.
    """
    if out is None:
        out = np.empty_like(x, dtype=np.float64)

    def piece(span: tuple[int, int]) -> None:  # rows [start, stop), written by one thread
        xs, os_, a_s, c_s = (v[span[0] : span[1]] for v in (x, out, a, c))
        for rows, cols in blocks(xs.shape):
            u = xs[rows, cols] * a_s[rows, None]
            u += c_s[rows, None]
            sigmoid(u, out=os_[rows, cols])

    map_ordered(piece, even_pieces(x.shape[0], ROWS_PER_TASK), entries=x.size)
    return out


def _standardise_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return each row's mean, its standard deviation (1 where it is 0 or not finite), and ok."""
    n = x.shape[1]
    mu = x.mean(axis=1)
    sq = np.zeros(x.shape[0])
    for rows, cols in blocks(x.shape):
        xb = x[rows, cols] - mu[rows, None]
        sq[rows] += np.einsum("ij,ij->i", xb, xb)
    sd = np.sqrt(sq / n)
    ok = (sd > 0) & np.isfinite(sd)
    return mu, np.where(ok, sd, 1.0), ok


def _target_sums(
    x: np.ndarray, t: np.ndarray, mu: np.ndarray, scale: np.ndarray, smooth: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``Σ xs``, ``Σ t`` and ``Σ t xs`` per row (``xs`` standardised; see fit_logistic_rows)."""
    n_rows, n = x.shape
    sum_x = np.zeros(n_rows)
    sum_t = np.zeros(n_rows)
    sum_tx = np.zeros(n_rows)  # Σ t xs, or Σ_{t > 1/2} xs when smoothing
    for rows, cols in blocks(x.shape):
        xb = x[rows, cols] - mu[rows, None]
        xb /= scale[rows, None]
        tb = t[rows, cols]
        if smooth:
            tb = tb > 0.5
            sum_tx[rows] += np.where(tb, xb, 0.0).sum(axis=1)
        else:
            tb = tb.astype(np.float64)
            sum_tx[rows] += np.einsum("ij,ij->i", tb, xb)
        sum_x[rows] += xb.sum(axis=1)
        sum_t[rows] += tb.sum(axis=1)
    if smooth:  # targets tp on positives, tn on negatives: Σ t = tp N+ + tn N-
        n_pos = sum_t
        tp, tn = smoothed_targets(n_pos, n)
        sum_t = tp * n_pos + tn * (n - n_pos)
        sum_tx = tn * sum_x + (tp - tn) * sum_tx
    return sum_x, sum_t, sum_tx


#: Newton stops once a full step moves every parameter by less than this (standardised
#: scale): convergence is quadratic there, so the point after the step is within about the
#: square of it of the optimum and a further pass would not change the result.
NEWTON_STEP_TOL = 1e-7


def _binned_start(
    x: np.ndarray,
    t: np.ndarray,
    mu: np.ndarray,
    scale: np.ndarray,
    a: np.ndarray,
    c: np.ndarray,
    smooth: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Return standardised ``(a, c)`` fitted to each row compressed into bins.

    See :mod:`core.recalibration.logistic_start`; rows whose compressed fit is not
    finite get NaN (the caller keeps its own start there).
    """
    n = x.shape[1]
    counts, means, pos = binned_rows([(x, mu, scale)], t)
    if smooth:
        tp, tn = smoothed_targets(pos.sum(axis=1, keepdims=True), n)
        pos = tp * pos + tn * (counts - pos)
    theta = compressed_logistic(
        counts, means, pos, np.column_stack([a, c]), np.ones((a.size, 2), dtype=bool)
    )
    return theta[:, 0], theta[:, 1]


def _newton_rows(
    x: np.ndarray,
    mu: np.ndarray,
    scale: np.ndarray,
    sums: tuple[np.ndarray, np.ndarray, np.ndarray],
    a: np.ndarray,
    c: np.ndarray,
    active: np.ndarray,
    max_iter: int,
) -> int:
    """Run the damped Newton iterations of fit_logistic_rows in place on ``a`` and ``c``.

    ``a`` and ``c`` are the standardised slopes and intercepts; ``active`` the rows to
    solve. Returns the number of passes made.
    """
    sum_x, sum_t, sum_tx = sums
    n_rows, n = x.shape
    # Each pass evaluates loss, gradient and Hessian at the current point of every active
    # row. A row whose loss went up since its last accepted point halves its step and
    # is evaluated again; the others take a Newton step. One pass per iteration.
    best = np.full(n_rows, np.inf)
    base_a, base_c = a.copy(), c.copy()
    s1 = np.zeros(n_rows)
    s2 = np.zeros(n_rows)
    lam = np.ones(n_rows)
    n_iter = 0
    while active.size and n_iter < max_iter + 40:
        n_iter += 1
        sp, sabs, sqx, sq, h11, h12, h22 = _logistic_sums(x, mu, scale, a, c, active)
        a_act, c_act = a[active], c[active]
        # Σ softplus(η) - t η, with Σ max(η, 0) = (Σ η + Σ |η|) / 2 and Σ η = a Σ x + c n
        sum_eta = a_act * sum_x[active] + c_act * n
        cur = sp + 0.5 * (sum_eta + sabs) - a_act * sum_tx[active] - c_act * sum_t[active]
        g1 = sqx - sum_tx[active]
        g2 = sq - sum_t[active]
        worse = cur > best[active] + 1e-12 * np.abs(best[active])
        back = active[worse]
        if back.size:  # step halving for the rows whose loss went up
            lam[back] *= 0.5
            a[back] = base_a[back] - lam[back] * s1[back]
            c[back] = base_c[back] - lam[back] * s2[back]
        ok_rows = active[~worse]
        gain = best[ok_rows] - cur[~worse]
        h11, h12, h22 = h11[~worse] + 1e-12, h12[~worse], h22[~worse] + 1e-12
        g1, g2 = g1[~worse], g2[~worse]
        det = h11 * h22 - h12 * h12
        step1 = (h22 * g1 - h12 * g2) / det
        step2 = (h11 * g2 - h12 * g1) / det
        best[ok_rows] = cur[~worse]
        base_a[ok_rows], base_c[ok_rows] = a[ok_rows], c[ok_rows]
        s1[ok_rows], s2[ok_rows], lam[ok_rows] = step1, step2, 1.0
        a[ok_rows] -= step1
        c[ok_rows] -= step2
        tiny = np.maximum(np.abs(step1), np.abs(step2)) < NEWTON_STEP_TOL
        flat = gain <= 1e-14 * np.maximum(1.0, np.abs(cur[~worse]))
        stalled = lam[back] < 1e-12  # no descent left along this direction: keep the best point
        a[back[stalled]], c[back[stalled]] = base_a[back[stalled]], base_c[back[stalled]]
        done = np.zeros(active.size, dtype=bool)
        done[np.flatnonzero(~worse)[tiny | flat]] = True
        done[np.flatnonzero(worse)[stalled]] = True
        active = active[~done]
    return n_iter


def fit_logistic_rows(
    x: np.ndarray,
    t: np.ndarray,
    *,
    max_iter: int = 100,
    smooth: bool = False,
    warm_start: bool = True,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Maximum-likelihood ``(a, c)`` of ``P(t=1) = sigmoid(a x + c)`` for every row at once.

    Damped Newton steps on standardised features, vectorised over the rows (each row
    is its own 2-parameter problem, whose 2×2 Hessian is solved in closed form). The
    targets enter the log-loss ``Σ softplus(η) - t η`` and its gradient only through
    ``Σ t`` and ``Σ t x``, which are computed once; each iteration is then one blocked
    pass over the active rows (see :func:`_logistic_sums`). ``x`` and ``t`` are only
    read, block by block, so no copy of either is made.

    A row stops once a full Newton step is below ``NEWTON_STEP_TOL`` (convergence is
    quadratic there, so the step is applied and no verification pass is made), once
    the loss no longer decreases, or when halving finds no descent. With many columns
    the solve starts from the fit of each row compressed into bins
    (:func:`_binned_start`): the full-size passes, the expensive ones, then number two
    or three instead of eight to ten. The start changes the path, not the optimum (the
    loss is convex).

    Parameters
    ----------
    x : numpy.ndarray
        ``(C, n)`` feature values, one problem per row.
    t : numpy.ndarray
        ``(C, n)`` targets in [0, 1] (hard or smoothed); with ``smooth=True``, 0/1
        outcomes.
    max_iter : int
        Maximum Newton iterations.
    smooth : bool, default False
        Use Platt's smoothed targets ``(N+ + 1)/(N+ + 2)`` for ``t > 1/2`` and
        ``1/(N- + 2)`` otherwise (:func:`platt_targets`, per row), without forming them.
    warm_start : bool, default True
        Start from the binned fit when there are at least ``START_MIN_COLUMNS`` columns.

    Returns
    -------
    a, c : numpy.ndarray
        ``(C,)`` slopes and intercepts on the original scale of ``x``.
    n_iter : int
        Full-size Newton passes used.

    Raises
    ------
    FitError
        If a row's likelihood has no finite maximum (separable hard targets).
    """
    x = np.asarray(x, dtype=np.float64)
    t = np.asarray(t)
    n_rows, n = x.shape
    # standardise each row: Newton is scale-free, but the loss landscape is better conditioned
    mu, scale, ok = _standardise_rows(x)
    sums = _target_sums(x, t, mu, scale, smooth)
    tbar = np.clip(sums[1] / n, 1e-12, 1 - 1e-12)
    a = np.zeros(n_rows)
    c = np.log(tbar / (1 - tbar))
    if warm_start and n >= START_MIN_COLUMNS:
        a0, c0 = _binned_start(x, t > 0.5 if smooth else t, mu, scale, a, c, smooth)
        good = ok & np.isfinite(a0)
        a[good], c[good] = a0[good], c0[good]
    n_iter = _newton_rows(x, mu, scale, sums, a, c, np.flatnonzero(ok), max_iter)
    slope = np.where(ok, a / scale, 0.0)
    intercept = np.where(ok, c - slope * mu, c)
    if not (np.isfinite(slope).all() and np.isfinite(intercept).all()) or (np.abs(a) > 1e6).any():
        raise FitError(
            "Platt scaling has no finite maximum-likelihood fit on these rows (the scores "
            "separate the classes). Use targets='platt' (smoothed targets) or more rows."
        )
    return slope, intercept, n_iter


def fit_logistic_batch(
    x: np.ndarray, t: np.ndarray, *, max_iter: int = 100
) -> tuple[np.ndarray, np.ndarray, int]:
    """Maximum-likelihood ``(a, c)`` of ``P(t=1) = sigmoid(a x + c)`` for every column at once.

    The column layout of :func:`fit_logistic_rows` (which does the work).

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
    """
    x = np.asarray(x, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    return fit_logistic_rows(transpose(x), transpose(t), max_iter=max_iter)


def fit_logistic_1d(
    x: np.ndarray, t: np.ndarray, *, max_iter: int = 100
) -> tuple[float, float, int]:
    """Maximum-likelihood ``(a, c)`` of ``P(t=1) = sigmoid(a x + c)`` for one feature.

    See :func:`fit_logistic_rows`.
    """
    a, c, n_iter = fit_logistic_rows(
        np.asarray(x, dtype=np.float64)[None, :], np.asarray(t)[None, :], max_iter=max_iter
    )
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
        self.input = input
        self.targets = check_targets(targets)

    @property
    def _uses_scores(self) -> bool:
        return self.input == "probability"

    def _feature(self, s: np.ndarray, lo: np.ndarray) -> np.ndarray:
        return lo if self.input == "logit" else s

    def _fit_components(
        self, scores: np.ndarray, log_odds: np.ndarray, outcomes: np.ndarray, rng: Generator
    ) -> list[ComponentFit]:
        x = self._feature(scores, log_odds)
        t = outcomes
        pos = t > 0.5
        check_both_outcomes(pos.sum(axis=1), t.shape[1], "Platt scaling")
        if self.targets == "hard":
            top_neg = np.where(pos, -np.inf, x).max(axis=1)
            low_pos = np.where(pos, x, np.inf).min(axis=1)
            top_pos = np.where(pos, x, -np.inf).max(axis=1)
            low_neg = np.where(pos, np.inf, x).min(axis=1)
            if ((top_neg <= low_pos) | (top_pos <= low_neg)).any():
                raise FitError(
                    "Platt scaling with hard targets cannot be fitted: the scores separate the "
                    "classes, so the slope would be infinite. Use targets='platt'."
                )
        del pos
        # Platt's smoothed targets are formed inside the solver from the 0/1 outcomes
        a, c, n_iter = fit_logistic_rows(x, t, smooth=self.targets == "platt")
        return [
            ({"a": float(ai), "c": float(ci), "n_iter": n_iter}, [])
            for ai, ci in zip(a, c, strict=True)
        ]

    def _apply_components(
        self, comps: list[Component], scores: np.ndarray, log_odds: np.ndarray, rng: Generator
    ) -> np.ndarray:
        a, c = component_arrays(comps, "a", "c")
        x = self._feature(scores, log_odds)
        return affine_sigmoid(x, a, c, out=x)  # the features are a fresh matrix


# --------------------------------------------------------------------------- temperature


def _nll_derivatives(
    z: np.ndarray, y: np.ndarray, beta: float, rows: np.ndarray | None = None
) -> tuple[float, float, float]:
    """Mean NLL of softmax(beta z) and its first two derivatives in beta, chunked over rows.

    The second derivative is the mean variance of ``z`` under softmax(beta z), so the NLL
    is convex in beta. ``rows`` restricts the sums to those rows (gathered chunk by
    chunk, so no copy of the selected rows is made).
    """
    n = z.shape[0] if rows is None else rows.size
    k = z.shape[1]
    step = max(1, CHUNK_ENTRIES // k)

    def piece(span: tuple[int, int]) -> tuple[float, float, float]:
        nll = d1 = d2 = 0.0
        for i in range(span[0], span[1], step):
            j = min(i + step, span[1])
            if rows is None:
                zc = z[i:j]
                yc = y[i:j]
            else:
                zc = z[rows[i:j]]
                yc = y[rows[i:j]]
            u = zc * beta
            m = u.max(axis=1)
            u -= m[:, None]
            np.exp(u, out=u)
            tot = u.sum(axis=1)
            if not np.isfinite(zc).all():  # exact zeros (log p = −∞): weight 0, moment 0
                zc = np.where(np.isfinite(zc), zc, 0.0)
            s1 = np.einsum("ij,ij->i", u, zc) / tot
            u *= zc
            s2 = np.einsum("ij,ij->i", u, zc) / tot
            zy = zc[np.arange(zc.shape[0]), yc]
            nll += float(np.sum(np.log(tot) + m - beta * zy))
            d1 += float(np.sum(s1 - zy))
            d2 += float(np.sum(np.maximum(s2 - s1 * s1, 0.0)))
        return nll, d1, d2

    parts = map_ordered(piece, even_pieces(n, piece_rows(k, step)), entries=n * k)
    nll = d1 = d2 = 0.0
    for a, b, c in parts:  # in order: the same sums on any number of threads
        nll, d1, d2 = nll + a, d1 + b, d2 + c
    return nll / n, d1 / n, d2 / n


def temperature_fit(
    z: np.ndarray,
    y: np.ndarray,
    bounds: tuple[float, float] = (1e-2, 1e2),
    *,
    rows: np.ndarray | None = None,
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
    rows : numpy.ndarray, optional
        Fit on these rows only (same result as ``z[rows], y[rows]``, without the copy).

    Returns
    -------
    T : float
        The temperature.
    info : dict
        ``at_bound`` (str or None), ``n_iter`` and the NLL before and after.
    """
    # a row whose label has probability exactly 0 (log p = −∞) has an infinite NLL at
    # every temperature: it carries no information about T and is left out of the fit
    if not np.isfinite(z).all():
        idx = np.arange(z.shape[0]) if rows is None else rows
        keep = np.isfinite(z[idx, y[idx]])
        if not keep.any():
            raise FitError(
                "Every calibration row gives its label probability exactly 0: no "
                "temperature can fit them. Check the labels, or pass logits."
            )
        if not keep.all():
            rows = idx[keep]
    cache: dict[float, tuple[float, float, float]] = {}

    def ev(b: float) -> tuple[float, float, float]:
        if b not in cache:
            cache[b] = _nll_derivatives(z, y, b, rows)
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
        temp, info = temperature_fit(inputs.exact_log_scores, labels, self.bounds)
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
        return softmax(inputs.exact_log_scores, divide_by=params.values["temperature"])


# --------------------------------------------------------------------------- vector / matrix


def _centred(z: np.ndarray, kind: str) -> np.ndarray:
    """Rows of ``z`` shifted by their maximum (vector) or mean (matrix)."""
    shift = z.max(axis=1, keepdims=True) if kind == "vector" else z.mean(axis=1, keepdims=True)
    return z - shift


def affine_nll(
    zc: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    b: np.ndarray,
    kind: str,
    buf: np.ndarray | None = None,
) -> tuple[float, np.ndarray, np.ndarray]:
    """Mean NLL of ``softmax(w * zc + b)`` (or ``zc @ w.T + b``) and its gradients.

    ``zc`` holds the row-centred scores (:func:`_centred`). One softmax per
    evaluation, in row chunks whose buffers stay in cache. The label terms (the true
    class's score, and the one-hot part of the gradient) are sums over rows of
    ``zc[i, y_i]``, gathered once per call, so a chunk needs no scatter: the
    gradients are ``Σ_i q_i (· zc_i) - Σ_{y_i = j} (· zc_ij)``, and the first sum is a
    matrix-vector product of the unnormalised exponentials with ``1 / Σ_j e_ij``.
    Matrix scaling makes its two float64 BLAS products over all rows at once
    (``zc @ w.T`` into ``buf``, an ``(n, K)`` buffer reused across evaluations, and
    ``r.T @ zc``), so BLAS runs on one large product each time and no ``(n, K)``
    matrix is allocated per evaluation. For vector scaling with ``w >= 0`` every entry
    is at most ``max(b)`` (the scores are max-centred) and each row's top entry is at
    least ``min(b)``, so the constant ``max(b)`` is a safe log-sum-exp shift and the
    per-row maximum pass is skipped.
    """
    n, k = zc.shape
    step = max(1, CHUNK_ENTRIES // k)
    matrix = kind == "matrix"
    if matrix:
        return _matrix_nll(zc, y, w, b, buf, step)
    const = bool((w >= 0).all()) and float(b.max() - b.min()) < 600.0
    shift = float(b.max()) if const else 0.0
    b_shift = b - shift
    zy = zc[np.arange(n), y]
    gw = -np.bincount(y, weights=zy, minlength=k)
    gb = -np.bincount(y, minlength=k).astype(np.float64)
    # Σ_i [log Σ_j e_ij + m_i] - Σ_i (w_y zy + b_y - shift): the second sum needs no chunks
    nll = -float(np.dot(w[y], zy) + b_shift[y].sum())

    def piece(span: tuple[int, int]) -> tuple[float, np.ndarray, np.ndarray]:
        acc, pw, pb = 0.0, np.zeros(k), np.zeros(k)
        for i in range(span[0], span[1], step):
            zb = zc[i : min(i + step, span[1])]
            u = zb * w
            u += b_shift
            if const:  # u holds the scores minus max(b)
                np.exp(u, out=u)
                tot = u.sum(axis=1)
                acc += float(np.log(tot).sum())
            else:
                m = u.max(axis=1)
                u -= m[:, None]
                np.exp(u, out=u)
                tot = u.sum(axis=1)
                acc += float((np.log(tot) + m).sum())
            inv = 1.0 / tot
            pb += inv @ u
            u *= zb
            pw += inv @ u
        return acc, pw, pb

    for acc, pw, pb in map_ordered(piece, even_pieces(n, piece_rows(k, step)), entries=n * k):
        nll += acc
        gw += pw
        gb += pb
    return nll / n, gw / n, gb / n


def _matrix_nll(
    zc: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    b: np.ndarray,
    buf: np.ndarray | None,
    step: int,
) -> tuple[float, np.ndarray, np.ndarray]:
    """Matrix-scaling branch of :func:`affine_nll`."""
    n, k = zc.shape
    nll = 0.0
    gb = np.zeros(k)
    if buf is None:
        buf = np.empty((n, k))
    np.matmul(zc, w.T, out=buf)  # one BLAS product for all rows
    for i in range(0, n, step):
        yb = y[i : i + step]
        rows = np.arange(yb.size)
        u = buf[i : i + step]
        u += b
        u_y = u[rows, yb]
        m = u.max(axis=1)
        u -= m[:, None]
        np.exp(u, out=u)
        tot = u.sum(axis=1)
        nll += float(np.sum(np.log(tot) + m - u_y))
        u /= tot[:, None]
        u[rows, yb] -= 1.0  # u is now softmax - onehot: the gradient in the scores
        gb += u.sum(axis=0)
    gw = buf.T @ zc  # the second BLAS product: (K × n)·(n × K)
    return nll / n, gw / n, gb / n


def _class_curvature(zc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``Σ h z²``, ``Σ h z`` and ``Σ h`` per class (means), ``h = q(1 - q)``, ``q = softmax(zc)``.

    These are the 2×2 diagonal blocks of the vector-scaling Hessian at the identity map.
    """
    n, k = zc.shape
    step = max(1, CHUNK_ENTRIES // k)
    s0, s1, s2 = np.zeros(k), np.zeros(k), np.zeros(k)
    for i in range(0, n, step):
        zb = zc[i : i + step]
        q = np.exp(zb - zb.max(axis=1, keepdims=True))
        q /= q.sum(axis=1, keepdims=True)
        q *= 1.0 - q
        s0 += q.sum(axis=0)
        q *= zb
        s1 += q.sum(axis=0)
        s2 += np.einsum("ij,ij->j", q, zb)
    return s2 / n, s1 / n, s0 / n


def minimize_lbfgs(
    fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray, max_iter: int
) -> OptimizeResult:
    """Minimise ``fun`` (value and gradient) by L-BFGS-B, with the tolerances of the softmax fits.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)``.
    x0 : numpy.ndarray
        Starting point.
    max_iter : int
        L-BFGS iterations.

    Returns
    -------
    scipy.optimize.OptimizeResult
        The result of :func:`scipy.optimize.minimize`.
    """
    return minimize(
        fun,
        x0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": 1e-9, "ftol": 1e-13},
    )


def capped_iterations(max_iter: int | None, k: int, *, method: str, alternatives: str) -> int:
    """Return the L-BFGS iterations of a fit with ``K² + K`` parameters.

    Parameters
    ----------
    max_iter : int or None
        The option; None means 500 up to ``MATRIX_MAX_CLASSES`` classes.
    k : int
        Number of classes ``K``.
    method : str
        Name of the recalibrator, for the message.
    alternatives : str
        Cheaper recalibrators to suggest, for the message.

    Returns
    -------
    int
        Iterations.

    Raises
    ------
    FitError
        Above ``MATRIX_MAX_CLASSES`` classes without an explicit ``max_iter``.
    """
    if max_iter is not None:
        return max_iter
    if k > MATRIX_MAX_CLASSES:
        raise FitError(
            f"{method} with K = {k:,} classes fits K² + K = {k * k + k:,} parameters; "
            "each L-BFGS iteration costs two (n × K)·(K × K) products and convergence "
            f"takes hundreds of them. Use {alternatives}, or pass max_iter explicitly "
            "(e.g. max_iter=5) to accept a capped fit. The limit without max_iter is "
            f"{MATRIX_MAX_CLASSES} classes."
        )
    return DEFAULT_MAX_ITER


def _fit_affine_softmax(
    z: np.ndarray, y: np.ndarray, *, kind: str, reg: float, max_iter: int
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    n, k = z.shape
    # Row-centring makes the fit identical for logits and for log-probabilities; the
    # centred scores are made once (one (n, K) copy) and read by every evaluation.
    zc = _centred(z, kind)
    if kind == "vector":
        w0 = np.concatenate([np.ones(k), np.zeros(k)])
    else:
        w0 = np.concatenate([np.eye(k).ravel(), np.zeros(k)])
    # Vector scaling runs L-BFGS in preconditioned coordinates φ, with
    # (w_j, b_j) = (1, 0) + L_j⁻ᵀ φ_j and L_j Lⱼᵀ the 2×2 block of class j's slope and
    # intercept in the Hessian at the start (one extra pass). Those blocks are badly
    # conditioned (a class's scores are far from 0 where its curvature lives) and differ
    # between classes; in φ each is the identity, and L-BFGS needs a fraction of the
    # evaluations. The map is linear, so the optimum is the same.
    if kind == "vector":
        hzz, hz, h = _class_curvature(zc)
        hzz = hzz + reg + 1e-12
        h = h + 1e-12
        l11 = np.sqrt(hzz)
        l21 = hz / l11
        l22 = np.sqrt(np.maximum(h - l21 * l21, 1e-12 * h))
        p11, p12, p22 = 1.0 / l11, -l21 / (l11 * l22), 1.0 / l22

        def to_theta(phi: np.ndarray) -> np.ndarray:
            f1, f2 = phi[:k], phi[k:]
            return w0 + np.concatenate([p11 * f1 + p12 * f2, p22 * f2])

        def to_phi_grad(g: np.ndarray) -> np.ndarray:
            g1, g2 = g[:k], g[k:]
            return np.concatenate([p11 * g1, p12 * g1 + p22 * g2])

    else:

        def to_theta(phi: np.ndarray) -> np.ndarray:
            return w0 + phi

        def to_phi_grad(g: np.ndarray) -> np.ndarray:
            return g

    def unpack(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if kind == "vector":
            return theta[:k], theta[k:]
        return theta[: k * k].reshape(k, k), theta[k * k :]

    buf = np.empty((n, k)) if kind == "matrix" else None

    def fun(phi: np.ndarray) -> tuple[float, np.ndarray]:
        theta = to_theta(phi)
        w, b = unpack(theta)
        nll, gw, gb = affine_nll(zc, y, w, b, kind, buf)
        dev = theta - w0
        dev[-k:] = 0.0  # intercepts are not penalised
        val = nll + 0.5 * reg * float(dev @ dev)
        grad = np.concatenate([gw.ravel(), gb])
        grad += reg * dev
        return val, to_phi_grad(grad)

    res = minimize_lbfgs(fun, np.zeros(w0.size), max_iter)
    w, b = unpack(to_theta(res.x))
    info = {"converged": bool(res.success), "n_iter": int(res.nit), "nll_after": float(res.fun)}
    return np.asarray(w), np.asarray(b), info


class _AffineScaling(Recalibrator):
    kind = "vector"

    def __init__(self, *, reg: float = 0.0, max_iter: int | None = 500) -> None:
        if not (np.isfinite(reg) and reg >= 0):
            raise ConfigError(f"reg must be a non-negative number; got {reg!r}.")
        if max_iter is not None and (isinstance(max_iter, bool) or int(max_iter) < 1):
            raise ConfigError(f"max_iter must be at least 1; got {max_iter!r}.")
        self.reg = float(reg)
        self.max_iter = None if max_iter is None else int(max_iter)

    def _centre(self, z: np.ndarray) -> np.ndarray:
        return _centred(z, self.kind)

    def _iterations(self, k: int) -> int:
        return DEFAULT_MAX_ITER if self.max_iter is None else self.max_iter

    def _fit(self, inputs: Inputs, labels: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
        w, b, info = _fit_affine_softmax(
            inputs.log_scores,
            labels,
            kind=self.kind,
            reg=self.reg,
            max_iter=self._iterations(inputs.n_classes),
        )
        notes = [] if info["converged"] else [f"L-BFGS stopped after {info['n_iter']} iterations."]
        return {"weights": w, "bias": b}, {**info, "notes": notes}

    def _predict(self, params: FittedParameters, inputs: Inputs) -> np.ndarray:
        zc = self._centre(inputs.log_scores)
        w, b = params.values["weights"], params.values["bias"]
        if self.kind == "vector":
            zc *= w
        else:
            zc = zc @ np.asarray(w).T
        zc += b
        return softmax(zc, out=zc)


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
    Fitted by L-BFGS-B on the analytic gradient: one softmax pass per evaluation, in
    row chunks that stay in cache.

    Parameters
    ----------
    reg : float, default 0
        Ridge penalty on ``w - 1`` added to the mean NLL.
    max_iter : int, default 500
        L-BFGS iterations.
    """

    kind = "vector"

    def __init__(self, *, reg: float = 0.0, max_iter: int = 500) -> None:
        super().__init__(reg=reg, max_iter=max_iter)


@register(
    "matrix",
    label="Matrix scaling",
    description="A full linear map of the logits: softmax(W z + b). K² + K parameters; ridge towards the identity.",
    formula="Guo et al. 2017: q = softmax(W z + b)",
    family="scaling",
)
class MatrixScaling(_AffineScaling):
    """Matrix scaling ``softmax(W z + b)`` on row-centred logits (or log-probabilities).

    **Cost.** ``W`` has ``K² + K`` parameters and every L-BFGS evaluation makes two
    float64 BLAS products of an ``(n, K)`` by a ``(K, K)`` matrix (scores and
    gradient), about ``4 n K²`` flops: 2·10¹¹ at ``n = 50,000``, ``K = 1,000``, several
    seconds on two cores, and L-BFGS needs hundreds of evaluations to converge at that
    size. So above ``MATRIX_MAX_CLASSES`` (100) classes, fitting with the default
    ``max_iter=None`` raises :class:`~core.base.errors.FitError` suggesting vector or
    temperature scaling; pass ``max_iter`` explicitly to accept a capped (usually
    unconverged, reported in ``info["notes"]``) fit. Up to 100 classes the default is
    500 iterations.

    Parameters
    ----------
    reg : float, default 1e-4
        Ridge penalty on ``W - I`` added to the mean NLL (matrix scaling overfits
        easily with many classes).
    max_iter : int or None, default None
        L-BFGS iterations; None means 500 for at most 100 classes and is an error
        above (see Cost).
    """

    kind = "matrix"

    def __init__(self, *, reg: float = 1e-4, max_iter: int | None = None) -> None:
        super().__init__(reg=reg, max_iter=max_iter)

    def _iterations(self, k: int) -> int:
        return capped_iterations(
            self.max_iter,
            k,
            method="Matrix scaling",
            alternatives="vector scaling ('vector') or temperature scaling ('temperature')",
        )
