"""Consistency bands of the reliability diagram (Bröcker & Smith 2007).

Under the hypothesis that the forecasts are calibrated, the outcome of a row with score
``s_i`` is ``Bernoulli(s_i)``. Holding the scores (hence the bins) fixed and redrawing
only the outcomes, the observed frequency of bin ``b`` is ``S_b / m_b`` with
``S_b = Σ_{i ∈ b} Bernoulli(s_i)`` (a Poisson-binomial count) and ``m_b`` the rows of the
bin. The band of bin ``b`` is the ``[(1 − level)/2, (1 + level)/2]`` percentile interval
of ``R`` such redraws; it is centred near the bin's mean score, on the diagonal. An
observed frequency outside it is evidence, at that level, that the bin is miscalibrated;
the band is pointwise (one bin at a time), not simultaneous over the bins.

Convention: *labels only, given the scores* — the "consistency bars" reading, exact
conditional on the scores. It is the label-redrawing step of the consistency resampling
test of :mod:`core.calibration_tests` (``Bernoulli(score)`` outcomes on the binary and
top-label lenses, ``Bernoulli(p_k)`` per class for the classwise lens); that test also
bootstraps the rows, which a per-bin band conditional on the bins does not need, since a
bin's mean score is then fixed and the band sits at a known ``x``.

Two exact samplers (identical in law; which one runs depends only on ``n · R``):

- ``"bernoulli"`` (``n · R ≤`` :data:`DIRECT_MAX_DRAWS`): ``R`` rows of uniforms
  ``u < s`` in chunks, counted per bin with one ``bincount`` — draw for draw what a loop
  of ``rng.random(n) < s`` per resample gives with the same generator;
- ``"poisson-binomial"``: the exact law of each bin's count (the coefficients of
  ``Π (1 − s_i + s_i z)``, multiplied in a balanced tree with FFTs; a bin of equal scores
  is ``Binomial(m, s)``), then ``R`` inverse-CDF draws per bin. No normal approximation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import fft as sp_fft
from scipy import stats

from core._validation import check_rng
from core.binning import bin_indices, check_n_bins, check_tie_policy
from core.errors import ConfigError, DataError
from core.intervals import check_confidence_level, check_seed

#: Largest ``rows × resamples`` drawn as individual Bernoulli outcomes; above it each
#: bin's count is drawn from its exact Poisson-binomial law.
DIRECT_MAX_DRAWS = 1_000_000

#: Uniforms per chunk of the Bernoulli sampler (bounds memory at ~64 MB of float64).
_CHUNK_DRAWS = 4_000_000

#: Polynomials up to this length are multiplied directly; longer ones by FFT.
_DIRECT_CONVOLUTION = 8

CONVENTION = (
    "labels only, given the scores: y* ~ Bernoulli(s) per row, bins fixed; band = "
    "percentile interval of the resampled observed frequency per bin (pointwise)"
)


@dataclass(frozen=True, eq=False)
class ConsistencyBand:
    """Per-bin consistency band of the observed frequency under calibration.

    Attributes
    ----------
    low, high : numpy.ndarray
        ``(B,)`` band of the observed frequency of each bin (NaN for empty bins).
    center : numpy.ndarray
        ``(B,)`` mean score of each bin: the expected observed frequency under
        calibration, where the band is drawn (NaN for empty bins).
    counts : numpy.ndarray
        ``(B,)`` rows per bin.
    confidence_level : float
        Coverage of the band in each bin (pointwise).
    n_resamples : int
        Redraws of the outcomes.
    seed : int or None
        The integer seed (None when a generator was passed).
    method : str
        ``"bernoulli"`` or ``"poisson-binomial"`` (see the module docstring).
    convention : str
        The resampling convention in words.
    """

    low: np.ndarray
    high: np.ndarray
    center: np.ndarray
    counts: np.ndarray
    confidence_level: float
    n_resamples: int
    seed: int | None
    method: str
    convention: str = CONVENTION

    def outside(self, observed: ArrayLike) -> np.ndarray:
        """Flag the bins whose observed frequency lies outside the band.

        Parameters
        ----------
        observed : array_like
            ``(B,)`` observed frequency per bin (``BinStats.mean_label``).

        Returns
        -------
        numpy.ndarray
            ``(B,)`` bool; False for empty bins.
        """
        obs = np.asarray(observed, dtype=np.float64)
        if obs.shape != self.low.shape:
            raise DataError(f"observed has shape {obs.shape}; the band has {self.low.size} bins.")
        with np.errstate(invalid="ignore"):
            return (obs < self.low) | (obs > self.high)


def consistency_band(
    scores: ArrayLike,
    *,
    binning: str = "equal-width",
    n_bins: int = 15,
    tie_policy: str = "split",
    bin_index: ArrayLike | None = None,
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> ConsistencyBand:
    """Consistency band of each bin's observed frequency under calibration.

    Parameters
    ----------
    scores : array_like
        ``(n,)`` scores in [0, 1] of one component (a lens view's scores).
    binning, n_bins, tie_policy
        The binning, as in :func:`core.binning.bin_indices`; ignored when
        ``bin_index`` is given.
    bin_index : array_like of int, optional
        ``(n,)`` precomputed bin of each row in ``0..n_bins-1`` (then ``n_bins`` is the
        number of bins).
    n_resamples : int, default=1000
        Redraws of the outcomes (≥ 2).
    confidence_level : float, default=0.95
        Pointwise coverage of the band.
    seed : int, Generator or None, default=0
        Randomness; None means seed 0.

    Returns
    -------
    ConsistencyBand
        ``low``/``high`` per bin, where ``low, high = numpy.quantile(freq*, [(1 − level)/2,
        (1 + level)/2])`` over the redrawn frequencies ``freq*`` of the bin.

    Raises
    ------
    DataError
        For scores outside [0, 1], non-finite scores or bad bin indices.
    ConfigError
        For an invalid binning, level or number of resamples.

    Examples
    --------
    >>> band = consistency_band([0.5] * 100, n_bins=1, n_resamples=2000, seed=1)
    >>> bool(band.low[0] < 0.5 < band.high[0])
    True
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise DataError(f"scores must be one-dimensional; got shape {s.shape}.")
    if not np.isfinite(s).all() or (s < 0).any() or (s > 1).any():
        raise DataError("scores must be finite probabilities in [0, 1].")
    confidence_level = check_confidence_level(confidence_level)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer):
        raise ConfigError(f"n_resamples must be a whole number ≥ 2; got {n_resamples!r}.")
    r = int(n_resamples)
    if r < 2:
        raise ConfigError(f"n_resamples must be ≥ 2 for a band; got {r}.")
    checked_seed = check_seed(seed)
    rng = check_rng(checked_seed)
    if bin_index is None:
        idx, edges = bin_indices(
            s, binning=binning, n_bins=check_n_bins(n_bins), tie_policy=check_tie_policy(tie_policy)
        )
        b = edges.size - 1
    else:
        idx = np.asarray(bin_index)
        b = check_n_bins(n_bins)
        if (
            idx.shape != s.shape
            or not np.issubdtype(idx.dtype, np.integer)
            or (idx.size and (idx.min() < 0 or idx.max() >= b))
        ):
            raise DataError(f"bin_index must be {s.size} integers in 0..{b - 1}, one per score.")
        idx = idx.astype(np.intp, copy=False)
    counts = np.bincount(idx, minlength=b)
    score_sums = np.bincount(idx, weights=s, minlength=b)
    with np.errstate(invalid="ignore", divide="ignore"):
        center = np.where(counts > 0, score_sums / counts, np.nan)

    tail = 0.5 * (1.0 - confidence_level)
    if s.size * r <= DIRECT_MAX_DRAWS:
        low, high = _band_from_counts(_bernoulli_counts(s, idx, b, r, rng), counts, tail)
        method = "bernoulli"
    else:
        low, high = _poisson_binomial_band(s, idx, counts, r, tail, rng)
        method = "poisson-binomial"
    return ConsistencyBand(
        low=low,
        high=high,
        center=center,
        counts=counts.astype(np.int64),
        confidence_level=confidence_level,
        n_resamples=r,
        seed=checked_seed if isinstance(checked_seed, int) else None,
        method=method,
    )


def _bernoulli_counts(
    s: np.ndarray, idx: np.ndarray, b: int, r: int, rng: np.random.Generator
) -> np.ndarray:
    """``(R, B)`` positive counts from ``R`` rows of Bernoulli draws, chunked over resamples."""
    n = s.size
    out = np.zeros((r, b))
    if n == 0:
        return out
    step = max(1, _CHUNK_DRAWS // n)
    for start in range(0, r, step):  # chunks of resamples, never a loop over rows
        m = min(step, r - start)
        hits = rng.random((m, n)) < s
        key = (idx + (np.arange(m) * b)[:, None])[hits]
        out[start : start + m] = np.bincount(key, minlength=m * b).reshape(m, b)
    return out


def _band_from_counts(
    positives: np.ndarray, counts: np.ndarray, tail: float
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile band of ``positives / counts`` per column (NaN for empty bins)."""
    low = np.full(counts.size, np.nan)
    high = np.full(counts.size, np.nan)
    filled = counts > 0
    if filled.any():
        freq = positives[:, filled] / counts[filled]
        low[filled], high[filled] = np.quantile(freq, [tail, 1.0 - tail], axis=0)
    return low, high


def _poisson_binomial_band(
    s: np.ndarray,
    idx: np.ndarray,
    counts: np.ndarray,
    r: int,
    tail: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Band from inverse-CDF draws of each bin's exact law, in blocks of bins.

    Blocks bound the ``(R, bins)`` arrays (the discrete binning may have a bin per row).
    """
    b = counts.size
    order = np.argsort(idx, kind="stable")
    bounds = np.searchsorted(idx[order], np.arange(b + 1))
    s_sorted = s[order]
    filled = counts > 0
    lo_s = np.zeros(b)
    hi_s = np.ones(b)
    if filled.any():  # segments start at the non-empty bins' first rows, in order
        lo_s[filled] = np.minimum.reduceat(s_sorted, bounds[:-1][filled])
        hi_s[filled] = np.maximum.reduceat(s_sorted, bounds[:-1][filled])
    equal = filled & (lo_s == hi_s)
    low = np.full(b, np.nan)
    high = np.full(b, np.nan)
    width = max(1, _CHUNK_DRAWS // r)
    for start in range(0, b, width):  # blocks of bins
        cols = np.arange(start, min(b, start + width))
        u = rng.random((r, cols.size))
        positives = np.zeros((r, cols.size))
        eq = equal[cols]
        if eq.any():
            # equal scores (always so for the discrete binning): Binomial(m, s)
            positives[:, eq] = stats.binom.ppf(u[:, eq], counts[cols[eq]], lo_s[cols[eq]])
        for j in np.flatnonzero(~eq & (counts[cols] > 0)):  # one exact law per bin
            q = s_sorted[bounds[cols[j]] : bounds[cols[j] + 1]]
            certain = int(np.count_nonzero(q == 1.0))
            random_part = q[(q > 0.0) & (q < 1.0)]
            cdf = np.cumsum(poisson_binomial_pmf(random_part))
            draws = np.searchsorted(cdf, u[:, j] * cdf[-1], side="right")
            positives[:, j] = certain + np.minimum(draws, random_part.size)
        low[cols], high[cols] = _band_from_counts(positives, counts[cols], tail)
    return low, high


def poisson_binomial_pmf(probabilities: ArrayLike) -> np.ndarray:
    """Exact law of the number of successes of independent Bernoulli trials.

    Parameters
    ----------
    probabilities : array_like
        ``(m,)`` success probabilities in [0, 1].

    Returns
    -------
    numpy.ndarray
        ``(m + 1,)`` probabilities of ``0..m`` successes: the coefficients of
        ``Π_i (1 − p_i + p_i z)``, multiplied pairwise in a balanced tree (directly while
        short, by FFT once long); rounding below ~1e-15 is clipped to zero.

    Examples
    --------
    >>> poisson_binomial_pmf([0.5, 0.5]).round(3).tolist()
    [0.25, 0.5, 0.25]
    """
    q = np.asarray(probabilities, dtype=np.float64).ravel()
    m = q.size
    if m == 0:
        return np.ones(1)
    size = 1 << max(0, (m - 1).bit_length())
    polys = np.zeros((size, 2))
    polys[:, 0] = 1.0  # padding rows are the polynomial 1 (probability 0)
    polys[:m, 0] = 1.0 - q
    polys[:m, 1] = q
    while polys.shape[0] > 1:
        a, c = polys[0::2], polys[1::2]
        length = polys.shape[1]  # degree + 1 of every polynomial of this level
        out_len = 2 * length - 1
        if length <= _DIRECT_CONVOLUTION:
            prod = np.zeros((a.shape[0], out_len))
            for j in range(length):  # over coefficients of a short polynomial
                prod[:, j : j + length] += a[:, j : j + 1] * c
        else:
            nfft = sp_fft.next_fast_len(out_len, real=True)
            prod = sp_fft.irfft(
                sp_fft.rfft(a, nfft, axis=1) * sp_fft.rfft(c, nfft, axis=1), nfft, axis=1
            )[:, :out_len]
            np.clip(prod, 0.0, None, out=prod)
        polys = prod
    pmf = polys[0, : m + 1]
    return pmf / pmf.sum()
