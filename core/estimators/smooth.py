"""Smooth ECE (Błasiok & Nakkiran 2023): kernel smoothing of the residuals, reflected at 0 and 1.

The smooth ECE of scores ``s_i`` with outcomes ``o_i`` (residuals ``r_i = s_i − o_i``) at a
bandwidth ``σ`` is, in the discretised form of relplot 1.0.3 (``relplot.smECE_sigma``),

    smECE_σ = Σ_t |R_σ(t)| / Σ_t (D_σ(t) + 10⁻⁴),

where ``R_σ`` and ``D_σ`` are the residuals and the ones (counts) smoothed by a Gaussian
kernel of standard deviation ``σ`` in the score space, reflected once at 0 and at 1, and
evaluated at the ``E = max(round(10/σ), 200)`` points ``t = linspace(0, 1, E)``. The
smoothing itself runs on a grid of ``M = max(2000, round(20/σ)) // 2 + 1`` points
(``M = 1001`` for ``σ ≥ 0.01``): every row is split linearly between its two neighbouring
grid points, the grid is extended by its mirror images about 0 and 1 (``M − 1`` points each
side, the boundary point not repeated), convolved with the kernel sampled on the grid over
``|d| ≤ 1/2`` (``φ_σ(d) = exp(−d²/(2σ²))/(√(2π)σ)``, not normalised to the grid), and read at
``t`` by linear interpolation. This is relplot's ``ReflectedGaussianKernel``, the kernel of
``smECE`` when ``relplot.config.use_logit_scaling`` is False (its default): the kernel acts
on the scores themselves, not on their logits.

The automatic bandwidth (``bandwidth="auto"``, ``relplot.smECE``) is the fixed point
``σ* = smECE_σ*`` found as relplot finds it: ``σ = 1`` if ``1 < smECE_1``; else ten steps of
bisection on ``[0, 1]`` of the predicate ``σ < 0.001 or σ < smECE_σ``, keeping the upper end
(a multiple of ``2⁻¹⁰`` where the predicate fails); the value is ``smECE_σ*``.

Everything is vectorised over a batch of samples: a sample is a component's rows (one
estimate) or a bootstrap resample given by drawn row indices, and the grid of each sample is
one ``bincount`` with row offsets, so ``R`` resamples cost ``O(R·n)`` for the grids plus
``O(R·M log M)`` per bisection step for the convolutions (a type-I DCT: the reflection makes
the convolution that of the grid's even extension). The grid binning is linear in
``n`` and is computed once per distinct grid size ``M`` (one size for every ``σ ≥ 0.01``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import fft as _fft

from core.base.errors import ConfigError, EstimationError
from core.estimators.base import ESTIMATORS, Estimate, combine_lp, lens_view

#: relplot's bandwidth search: the predicate holds below this bandwidth.
SEARCH_EPS = 1e-3
#: Bisection steps of the bandwidth search (the bandwidth is a multiple of 2⁻¹⁰).
SEARCH_STEPS = 10
#: Added to every smoothed count before the ratio (relplot's ``BaseKernelMixin.smooth``).
DENSITY_EPS = 1e-4
#: Fewest evaluation points of the smooth ECE (relplot's ``config.smECE_mesh_pts``).
ECE_MESH_POINTS = 200
#: Points of the reliability curve's mesh (relplot's ``config.plot_mesh_pts``).
PLOT_MESH_POINTS = 200
#: Smallest fixed bandwidth accepted (the grid has ``10/σ`` points).
MIN_BANDWIDTH = 1e-4


def grid_size(sigma: float) -> int:
    """Return the smoothing grid's number of points ``M`` at bandwidth ``sigma``."""
    return max(2000, round(20.0 / sigma)) // 2 + 1


def eval_size(sigma: float) -> int:
    """Return the number of evaluation points ``E`` of the smooth ECE at ``sigma``."""
    return max(round(10.0 / sigma), ECE_MESH_POINTS)


def check_bandwidth(bandwidth: Any) -> str | float:
    """Validate the ``bandwidth`` option: ``"auto"`` or a number ``σ ≥ 10⁻⁴``.

    Raises
    ------
    ConfigError
        For anything else.
    """
    if isinstance(bandwidth, str):
        if bandwidth == "auto":
            return "auto"
        try:
            bandwidth = float(bandwidth)
        except ValueError:
            raise ConfigError(
                f"bandwidth must be 'auto' or a positive number such as 0.05; got {bandwidth!r}."
            ) from None
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, int | float | np.floating):
        raise ConfigError(
            f"bandwidth must be 'auto' or a positive number such as 0.05; got {bandwidth!r}."
        )
    sigma = float(bandwidth)
    if not np.isfinite(sigma) or sigma < MIN_BANDWIDTH:
        raise ConfigError(
            f"bandwidth must be 'auto' or a number ≥ {MIN_BANDWIDTH:g} (the smoothing grid has "
            f"about 10/σ points); got {bandwidth!r}."
        )
    return sigma


def kernel_values(sigma: float, m: int) -> np.ndarray:
    """Return the Gaussian kernel on ``m`` grid points centred at 1/2, as relplot samples it."""
    t = np.linspace(0.0, 1.0, m)
    var = sigma**2
    res = np.exp(-(t - 0.5) * (t - 0.5) / (2 * var))
    res /= np.sqrt(2 * np.pi) * sigma
    return res


def reflected_smooth(values: np.ndarray, sigma: float) -> np.ndarray:
    """Convolve grid values ``(..., M)`` with the kernel, reflected once at both ends.

    relplot extends the grid by ``values[M−1 … 1]`` before and ``values[M−2 … 0]`` after it
    (mirror images about 0 and 1), convolves it with :func:`kernel_values` (support
    ``|d| ≤ 1/2``, i.e. ``(M − 1)/2`` grid steps) and cuts it back to the ``M`` grid points.
    As the kernel reaches no further than half the grid, that equals the circular
    convolution of the grid's even extension (period ``2(M − 1)``) with the even kernel,
    which the type-I discrete cosine transform diagonalises: ``idct₁(dct₁(values) ·
    dct₁(h))`` with ``h[d]`` the kernel at ``d`` grid steps (0 beyond ``(M − 1)/2``). One
    transform of length ``M`` per row instead of a convolution of ``3M − 2`` points.

    For an even ``M`` (some ``σ < 0.01``) relplot's kernel has no point at 1/2 and its
    window puts the value ``d`` steps away at ``φ((d − ½)/(M − 1))``, half a step off
    centre; that convolution is not symmetric, so it is computed as relplot does, on the
    extended grid (by FFT).
    """
    m = values.shape[-1]
    if m % 2 == 0:
        ext = np.concatenate([values[..., :0:-1], values, values[..., -2::-1]], axis=-1)
        length = _fft.next_fast_len(4 * m - 3, real=True)
        spectrum = _fft.rfft(ext, length, axis=-1) * _fft.rfft(kernel_values(sigma, m), length)
        start = m - 1 + m // 2
        return _fft.irfft(spectrum, length, axis=-1)[..., start : start + m]
    spectrum = _fft.dct(values, type=1, axis=-1)
    spectrum *= _kernel_spectrum(sigma, m)
    return _fft.idct(spectrum, type=1, axis=-1)


def interpolate(points: np.ndarray, grid_values: np.ndarray) -> np.ndarray:
    """Read grid values ``(..., M)`` on ``[0, 1]`` at ``points`` by linear interpolation."""
    m = grid_values.shape[-1]
    h = 1.0 / (m - 1)
    inds = (points * (m - 1)).astype(int).clip(0, m - 2)
    frac = (points - inds * h) / h
    return grid_values[..., inds] * (1.0 - frac) + grid_values[..., inds + 1] * frac


def _mesh(points: int) -> np.ndarray:
    return np.linspace(0.0, 1.0, points)


def _kernel_spectrum(sigma: float, m: int) -> np.ndarray:
    """``dct₁(h)`` of the kernel at ``d`` grid steps (odd ``m``; see :func:`reflected_smooth`)."""
    half = (m - 1) // 2
    h = np.zeros(m)
    h[: half + 1] = kernel_values(sigma, m)[half:]
    return _fft.dct(h, type=1)


_DENSITY_WEIGHTS: dict[tuple[int, int], np.ndarray] = {}


def _density_weights(m: int, e: int) -> np.ndarray:
    """``w`` with ``Σ_t D(t) = w · dct₁(counts)·H``: the sum over ``e`` points, read back.

    ``D = idct₁(Ĉ·H)`` is interpolated at ``e`` points and summed: a linear map of ``Ĉ·H``
    whose coefficients are the adjoint of the interpolation (``u``) through the adjoint of
    ``idct₁`` (``dct₁`` is ``A = C·diag(c)`` with ``C`` symmetric, ``c = (1, 2, …, 2, 1)``,
    so ``A^T u = c·dct₁(u/c)``, and ``idct₁ = A/(2(m − 1))``).
    """
    key = (m, e)
    if key not in _DENSITY_WEIGHTS:
        t = _mesh(e)
        h = 1.0 / (m - 1)
        inds = (t * (m - 1)).astype(int).clip(0, m - 2)
        frac = (t - inds * h) / h
        u = np.bincount(inds, 1.0 - frac, m) + np.bincount(inds + 1, frac, m)
        c = np.full(m, 2.0)
        c[0] = c[-1] = 1.0
        _DENSITY_WEIGHTS[key] = c * _fft.dct(u / c, type=1) / (2 * (m - 1))
    return _DENSITY_WEIGHTS[key]


class SmoothSample:
    """One lens component as a batch of ``R`` samples for the smooth ECE.

    Parameters
    ----------
    scores : numpy.ndarray
        ``(n,)`` scores in ``[0, 1]``.
    outcomes : numpy.ndarray
        ``(n,)`` 0/1 outcomes (integers, booleans or floats).
    idx : numpy.ndarray, optional
        ``(R, n)`` drawn row indices (bootstrap resamples); None: the rows themselves
        (``R = 1``).
    """

    def __init__(self, scores: np.ndarray, outcomes: np.ndarray, idx: np.ndarray | None = None):
        self.scores = np.asarray(scores, dtype=np.float64)
        self.outcomes = np.asarray(outcomes, dtype=np.float64)
        self.residuals = self.scores - self.outcomes
        self.n_samples = 1 if idx is None else idx.shape[0]
        # a resample is its rows' multiplicities: (R, n), one bincount of the drawn indices
        self.mult: np.ndarray | None = None
        if idx is not None:
            r, n = idx.shape
            flat = (idx + (np.arange(r, dtype=np.intp) * n)[:, None]).ravel()
            self.mult = np.bincount(flat, minlength=r * n).reshape(r, n).astype(np.float64)
        self._grids: dict[tuple[int, str], np.ndarray] = {}
        self._weighted: dict[str, np.ndarray] = {}
        self._positions: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def _weights(self, weights: str) -> np.ndarray | None:
        return {"counts": None, "residuals": self.residuals, "outcomes": self.outcomes}[weights]

    def grid(self, m: int, weights: str = "counts") -> np.ndarray:
        """Return the rows' ``weights`` split linearly onto ``m`` grid points, ``(R, m)``.

        Row ``i`` at ``s_i`` puts ``(1 − φ)·w_i`` on grid point ``k = ⌊s_i (m − 1)⌋`` (at
        most ``m − 2``) and ``φ·w_i`` on ``k + 1``, with ``φ = s_i (m − 1) − k`` and
        ``w_i`` its weight: 1 (``"counts"``), ``s_i − o_i`` (``"residuals"``) or ``o_i``
        (``"outcomes"``). One sample: two ``bincount`` calls (``Σ w`` and ``Σ φ·w`` per
        grid point; the lower share is their difference). Resamples: their multiplicities
        times the sparse ``(n, m)`` matrix of the shares.
        """
        key = (m, weights)
        if key in self._grids:
            return self._grids[key]
        if m not in self._positions:  # the grid cells of the last grid size
            pos = self.scores * (m - 1)
            cell = pos.astype(np.intp)
            np.minimum(cell, m - 2, out=cell)
            self._positions = {m: (cell, pos - cell)}
        left, frac = self._positions[m]
        w = self._weights(weights)
        if self.mult is None:
            total = np.bincount(left, w, m)
            upper = np.bincount(left, frac if w is None else frac * w, m)
            grid = (total - upper)[None, :]
            grid[:, 1:] += upper[None, :-1]
        else:
            import scipy.sparse as sparse

            n = self.scores.shape[0]
            shares = sparse.csr_matrix(
                (
                    np.column_stack([1.0 - frac, frac]).ravel(),
                    np.column_stack([left, left + 1]).ravel(),
                    np.arange(0, 2 * n + 1, 2),
                ),
                shape=(n, m),
            )
            if w is None:
                counts = self.mult
            else:
                if weights not in self._weighted:
                    self._weighted[weights] = self.mult * w
                counts = self._weighted[weights]
            grid = np.asarray(counts @ shares)
        self._grids[key] = grid
        return grid

    def spectrum(self, m: int, weights: str = "counts") -> np.ndarray:
        """Return the type-I DCT of :meth:`grid` (odd ``m``), cached: it does not depend on σ."""
        key = (m, "dct-" + weights)
        if key not in self._grids:
            self._grids[key] = _fft.dct(self.grid(m, weights), type=1, axis=-1)
        return self._grids[key]

    def ece(self, sigma: np.ndarray) -> np.ndarray:
        """Return ``smECE_σ`` of every sample at its own bandwidth ``sigma`` ``(R,)``.

        Samples are grouped by grid size. On an odd grid the residuals' smoothing is one
        inverse DCT of the cached spectrum times each sample's kernel spectrum, and the sum
        of the smoothed counts over the evaluation points, a linear function of them, is a
        dot product with the adjoint of the interpolation and of that transform.
        """
        sigma = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (self.n_samples,))
        out = np.empty(self.n_samples)
        sizes = np.array([grid_size(v) for v in sigma.tolist()])
        for m in np.unique(sizes).tolist():
            in_m = np.flatnonzero(sizes == m)
            if m % 2 == 0:
                for value in np.unique(sigma[in_m]):
                    rows = in_m[sigma[in_m] == value]
                    both = np.concatenate([self.grid(m)[rows], self.grid(m, "residuals")[rows]])
                    smoothed = interpolate(_mesh(eval_size(value)), reflected_smooth(both, value))
                    dens = (smoothed[: rows.size] + DENSITY_EPS).sum(axis=-1)
                    out[rows] = np.abs(smoothed[rows.size :]).sum(axis=-1) / dens
                continue
            every = in_m.size == self.n_samples
            counts, resid = self.spectrum(m), self.spectrum(m, "residuals")
            for value in np.unique(sigma[in_m]).tolist():
                rows = in_m if every and in_m.size == 1 else np.flatnonzero(sigma == value)
                whole = rows.size == self.n_samples
                kernel = _kernel_spectrum(value, m)
                e = eval_size(value)
                smoothed = _fft.idct((resid if whole else resid[rows]) * kernel, type=1)
                total = np.abs(interpolate(_mesh(e), smoothed)).sum(axis=-1)
                weights = kernel * _density_weights(m, e)
                dens = (counts if whole else counts[rows]) @ weights + e * DENSITY_EPS
                out[rows] = total / dens
        return out

    def auto(self) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(smECE, σ*)`` of every sample with relplot's bandwidth search."""
        r = self.n_samples
        at_one = self.ece(np.ones(r))
        found = 1.0 < at_one
        start, end = np.ones(r), np.zeros(r)
        value = at_one.copy()  # the smooth ECE at ``start``
        for _ in range(SEARCH_STEPS):
            mid = (start + end) / 2
            small = mid < SEARCH_EPS
            ece_mid = np.full(r, np.nan)
            need = ~small
            if need.any():
                ece_mid[need] = self.ece_rows(mid, need)
            holds = small | (mid < ece_mid)
            end = np.where(holds, mid, end)
            start = np.where(holds, start, mid)
            value = np.where(holds, value, ece_mid)
        sigma = np.where(found, 1.0, start)
        return np.where(found, at_one, value), sigma

    def ece_rows(self, sigma: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Return :meth:`ece` of the samples selected by the mask ``rows``."""
        if rows.all():
            return self.ece(sigma)
        sub = SmoothSample.__new__(SmoothSample)
        sub.scores, sub.outcomes, sub.residuals = self.scores, self.outcomes, self.residuals
        sub.n_samples = int(rows.sum())
        sub.mult = None if self.mult is None else self.mult[rows]
        sub._grids = {key: grid[rows] for key, grid in self._grids.items()}
        sub._weighted = {key: w[rows] for key, w in self._weighted.items()}
        sub._positions = self._positions
        return sub.ece(sigma[rows])

    def values(self, bandwidth: str | float) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(smECE, σ)`` of every sample: automatic or fixed bandwidth."""
        if bandwidth == "auto":
            return self.auto()
        sigma = np.full(self.n_samples, float(bandwidth))
        return self.ece(sigma), sigma

    def curve(self, sigma: float, mesh: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(mean outcome, density, smoothed counts)`` on ``mesh`` at bandwidth ``sigma``.

        Each ``(R, len(mesh))``. The curve is the Nadaraya–Watson ratio of the smoothed
        outcomes and counts, ``Y_σ(t) / (D_σ(t) + 10⁻⁴)`` (relplot's ``KernelSmoother``);
        the density is ``D_σ(t)/n`` (relplot's ``kde``). The FFT's rounding noise where
        there are no scores is clipped: sums below 0 become 0 (the curve stays in [0, 1]).
        """
        m = grid_size(sigma)
        counts, outcomes = self.grid(m), self.grid(m, "outcomes")
        both = interpolate(mesh, reflected_smooth(np.concatenate([counts, outcomes]), sigma))
        d, yv = both[: self.n_samples], both[self.n_samples :]
        # the FFT leaves rounding noise (~1e-16 of the peak) where there are no scores: the
        # smoothed sums are clipped at 0, as the direct convolution's sums of products are
        np.maximum(d, 0.0, out=d)
        np.maximum(yv, 0.0, out=yv)
        return np.minimum(yv / (d + DENSITY_EPS), 1.0), d / self.scores.shape[0], d


# ----------------------------------------------------------------- one estimate


@dataclass(frozen=True)
class SmoothECEResult:
    """The smooth ECE of one 1-D problem (:func:`smooth_ece`).

    Attributes
    ----------
    value : float
        ``smECE_σ``.
    bandwidth : float
        The bandwidth ``σ`` it was computed at.
    automatic : bool
        Whether ``σ`` is relplot's fixed point (``bandwidth="auto"``) or was given.
    n : int
        Rows.
    """

    value: float
    bandwidth: float
    automatic: bool
    n: int

    def __repr__(self) -> str:
        how = "fixed point" if self.automatic else "given"
        return (
            f"SmoothECEResult(value={self.value:.6g}, bandwidth={self.bandwidth:.6g} "
            f"({how}), n={self.n:,})"
        )


def smooth_ece(
    scores: ArrayLike, outcomes: ArrayLike, *, bandwidth: str | float = "auto"
) -> SmoothECEResult:
    """Smooth ECE of one 1-D problem (scores and 0/1 outcomes).

    Parameters
    ----------
    scores : array_like
        Scores in ``[0, 1]``.
    outcomes : array_like
        0/1 outcomes.
    bandwidth : "auto" or float, default "auto"
        relplot's fixed-point bandwidth (``relplot.smECE``) or a fixed ``σ``
        (``relplot.smECE_sigma``).

    Returns
    -------
    SmoothECEResult
        ``value`` (smECE) and ``bandwidth`` (σ), as every estimator returns a result.

    Examples
    --------
    >>> r = smooth_ece([0.2, 0.8], [0, 1], bandwidth=0.1)
    >>> round(r.value, 6), r.bandwidth
    (0.199452, 0.1)
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    if s.size == 0:
        raise EstimationError("The smooth ECE needs at least one row.")
    sample = SmoothSample(s, np.asarray(outcomes, dtype=np.float64).ravel())
    bw = check_bandwidth(bandwidth)
    value, sigma = sample.values(bw)
    return SmoothECEResult(float(value[0]), float(sigma[0]), bw == "auto", int(s.size))


def _check_options(options: dict[str, Any]) -> dict[str, Any]:
    if "bandwidth" in options:
        options = {**options, "bandwidth": check_bandwidth(options["bandwidth"])}
    return options


def smooth_resamples(
    scores: np.ndarray, outcomes: np.ndarray, idx: np.ndarray, options: Mapping[str, Any]
) -> np.ndarray:
    """Smooth ECE of one lens component on ``R`` resamples drawn as row indices ``idx``.

    The estimator's ``resample`` (the bootstrap's ``"rows-batch"`` path): the same numbers
    as :func:`smooth` on each resample's rows, with the bandwidth searched per resample.

    Returns
    -------
    numpy.ndarray
        ``(R,)``.
    """
    bw = check_bandwidth(options.get("bandwidth", "auto"))
    return SmoothSample(scores, outcomes, idx).values(bw)[0]


@ESTIMATORS.register(
    "smooth",
    label="Smooth ECE",
    description="Gaussian kernel smoothing of the residuals s − y, reflected at 0 and 1, with "
    "the fixed-point bandwidth σ = smECE_σ (Błasiok & Nakkiran 2023; relplot's smECE). An ℓ1 "
    "calibration error without bins.",
    formula="Błasiok & Nakkiran (2023); docs/formulas.md, Smooth ECE",
    family="smooth",
    lenses=("binary", "top-label", "classwise"),
    norms=(1.0,),
    lp_scale=True,
    options={"bandwidth": "auto"},
    check_option_values=_check_options,
    resample=smooth_resamples,
)
def smooth(
    probs, labels, *, lens="top-label", norm=1.0, binning=None, n_bins=None,
    tie_policy=None, class_weights=None, class_names=None, rng=None, bandwidth="auto",
) -> Estimate:  # fmt: skip
    """Smooth ECE of each lens component, combined as a weighted mean (``combine_lp``, ℓ1).

    ``norm``, ``binning``, ``n_bins`` and ``tie_policy`` are ignored (no bins).
    """
    bw = check_bandwidth(bandwidth)
    view = lens_view(
        np.asarray(probs), np.asarray(labels), lens,
        class_names=class_names, class_weights=class_weights,
    )  # fmt: skip
    if view.scores[0].shape[0] == 0:
        raise EstimationError("The smooth ECE needs at least one row.")
    values, sigmas = [], []
    for s, o in zip(view.scores, view.outcomes, strict=True):
        v, sig = SmoothSample(s, o).values(bw)
        values.append(float(v[0]))
        sigmas.append(float(sig[0]))
    weights = np.asarray(view.weights, dtype=np.float64)
    value = float(combine_lp(np.array(values)[None, :], weights, 1.0)[0])
    return Estimate(
        value=value,
        components=view.names,
        component_values=tuple(values),
        bins=None,
        details={
            "bandwidth": sigmas[0] if len(sigmas) == 1 else tuple(sigmas),
            "bandwidth_rule": "auto (σ = smECE_σ)" if bw == "auto" else "fixed",
        },
    )
