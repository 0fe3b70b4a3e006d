"""Starting points for the batched logistic fits: every row compressed into bins.

Platt scaling, scaling-binning and beta calibration fit one small logistic regression
(two or three parameters) per lens component, by damped Newton passes over all rows
at once (:func:`core.recalibration.scaling.fit_logistic_rows`,
:func:`core.recalibration.beta.fit_beta_rows`). From a cold start those need eight to
ten full passes; each is a few dozen elementwise operations on every entry of the
``(C, n)`` feature matrix, so on 50,000 × 1,000 classes the passes are the whole cost.

Here each row is binned on a fixed grid of its first (standardised) feature, over
``±START_RANGE``, outliers going to the end bins; a bin keeps its count, the exact means
of the features of its entries and its target mass. The weighted problem on
``START_BINS`` points per row is solved by damped Newton, vectorised over rows, for a
small fraction of one full pass. Its optimum differs from the full one only through
the spread of the features within a bin, so the full solve starts within a step or two
of convergence. The start changes the path of Newton's method, never its optimum (the
losses are convex).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.base.numeric import blocks, sigmoid

#: Bins per row of the compressed problem, spread over ``±START_RANGE`` standard deviations.
START_BINS = 256
START_RANGE = 8.0

#: Rows with fewer columns than this start cold (the compression would not pay off).
START_MIN_COLUMNS = 8192

#: Entries per block of the binning pass.
_BIN_BLOCK = 1 << 18


def binned_rows(
    features: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
    t: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compress every row into ``START_BINS`` bins of its first standardised feature.

    Parameters
    ----------
    features : sequence of (x, mu, scale)
        ``(C, n)`` features with per-row ``(C,)`` shift and scale; the standardised
        feature is ``(x - mu) / scale``, formed block by block (``x`` is only read).
        The first one is the binning key.
    t : numpy.ndarray
        ``(C, n)`` outcomes: boolean (positives are counted) or targets in [0, 1]
        (summed).

    Returns
    -------
    counts : numpy.ndarray
        ``(C, G)`` entries per bin.
    means : numpy.ndarray
        ``(C, G, d)`` mean standardised features per bin (0 in empty bins).
    positives : numpy.ndarray
        ``(C, G)`` positives (boolean ``t``) or target sums per bin.
    """
    x0 = features[0][0]
    n_rows, _ = x0.shape
    g = START_BINS
    d = len(features)
    counts = np.zeros(n_rows * g)
    sums = np.zeros((d, n_rows * g))
    pos = np.zeros(n_rows * g)
    inv_width = g / (2.0 * START_RANGE)
    boolean = t.dtype == bool
    for rows, cols in blocks(x0.shape, _BIN_BLOCK):
        r0, r1 = rows.start, min(rows.stop, n_rows)
        std = []
        for x, mu, scale in features:
            xb = x[rows, cols] - mu[rows, None]
            xb /= scale[rows, None]
            std.append(xb)
        idx = std[0] + START_RANGE
        idx *= inv_width
        np.clip(idx, 0, g - 1, out=idx)
        idx = idx.astype(np.intp)  # truncation is the floor: the values are non-negative
        idx += (np.arange(r1 - r0) * g)[:, None]  # block-local bins keep bincount small
        idx = idx.ravel()
        size = (r1 - r0) * g
        out = slice(r0 * g, r1 * g)
        counts[out] += np.bincount(idx, minlength=size)
        for j, xb in enumerate(std):
            sums[j, out] += np.bincount(idx, weights=xb.ravel(), minlength=size)
        tb = t[rows, cols].ravel()
        if boolean:  # count the positives' bins only
            pos[out] += np.bincount(idx[tb], minlength=size)
        else:
            pos[out] += np.bincount(idx, weights=tb, minlength=size)
    counts = counts.reshape(n_rows, g)
    means = np.zeros((n_rows, g, d))
    for j in range(d):
        np.divide(sums[j].reshape(n_rows, g), counts, out=means[:, :, j], where=counts > 0)
    return counts, means, pos.reshape(n_rows, g)


def compressed_logistic(
    counts: np.ndarray,
    means: np.ndarray,
    target_mass: np.ndarray,
    theta0: np.ndarray,
    free: np.ndarray,
    *,
    max_iter: int = 100,
) -> np.ndarray:
    """Minimise ``Σ_g w_g softplus(θ·φ_g) − T_g θ·φ_g`` per row, ``φ_g = (means_g, 1)``.

    Damped Newton with step halving, vectorised over rows; parameters with ``free``
    False keep their value in ``theta0``.

    Parameters
    ----------
    counts : numpy.ndarray
        ``(C, G)`` bin weights ``w``.
    means : numpy.ndarray
        ``(C, G, d)`` bin features.
    target_mass : numpy.ndarray
        ``(C, G)`` target mass ``T`` per bin.
    theta0 : numpy.ndarray
        ``(C, d + 1)`` start (slopes, then the intercept).
    free : numpy.ndarray
        ``(C, d + 1)`` which parameters are fitted.
    max_iter : int
        Newton iterations.

    Returns
    -------
    numpy.ndarray
        ``(C, d + 1)`` fitted parameters; a row whose fit is not finite (or beyond
        ``|θ| = 1000``, nearly separable bins) is NaN, so callers fall back to their own
        start there.
    """
    n_rows, g, d = means.shape
    p = d + 1
    phi = np.concatenate([means, np.ones((n_rows, g, 1))], axis=2)
    tsum = (target_mass[:, None, :] @ phi)[:, 0, :]  # Σ T φ (batched BLAS products)
    theta = theta0.astype(np.float64, copy=True)
    base = theta.copy()
    step = np.zeros_like(theta)
    lam = np.ones(n_rows)
    best = np.full(n_rows, np.inf)
    eye = np.eye(p)
    act = np.arange(n_rows)
    for _ in range(max_iter):
        ph, w = phi[act], counts[act]
        eta = (ph @ theta[act][:, :, None])[:, :, 0]
        loss = (w * np.logaddexp(0.0, eta)).sum(axis=1) - (theta[act] * tsum[act]).sum(axis=1)
        # a row whose loss rose retries half its last step from its last accepted point
        worse = loss > best[act] + 1e-12 * np.abs(best[act])
        up, down = act[worse], act[~worse]
        lam[up] *= 0.5
        ok = ~worse
        q = sigmoid(eta[ok])
        wq = w[ok] * q
        pk = ph[ok]
        grad = (wq[:, None, :] @ pk)[:, 0, :] - tsum[down]
        hess = np.transpose(pk * (wq * (1.0 - q))[:, :, None], (0, 2, 1)) @ pk
        fr = free[down]
        grad = np.where(fr, grad, 0.0)
        hess = hess * (fr[:, :, None] & fr[:, None, :]) + eye * (~fr)[:, None, :]
        diag = np.einsum("rjj->rj", hess)
        diag += 1e-12 * (1.0 + diag.max(axis=1, keepdims=True))
        best[down] = loss[ok]
        base[down] = theta[down]
        lam[down] = 1.0
        step[down] = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        theta[act] = base[act] - lam[act, None] * step[act]
        moved = lam[act] * np.abs(step[act]).max(axis=1)
        act = act[(moved > 1e-9) & (lam[act] > 1e-10)]
        if not act.size:
            break
    bad = ~(np.isfinite(theta).all(axis=1) & (np.abs(theta) < 1e3).all(axis=1))
    theta[bad] = np.nan
    return theta
