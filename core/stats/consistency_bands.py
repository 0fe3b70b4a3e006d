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
test of :mod:`core.analyses.calibration_tests` (``Bernoulli(score)`` outcomes on the binary and
top-label lenses, ``Bernoulli(p_k)`` per class for the classwise lens); that test also
bootstraps the rows, which a per-bin band conditional on the bins does not need, since a
bin's mean score is then fixed and the band sits at a known ``x``.

Two exact samplers (identical in law; which one runs depends only on ``n · R``):

- ``"bernoulli"`` (``n · R ≤`` :data:`DIRECT_MAX_DRAWS`): ``R`` rows of uniforms
  ``u < s`` in chunks, counted per bin with one ``bincount`` — draw for draw what a loop
  of ``rng.random(n) < s`` per resample gives with the same generator;
- ``"poisson-binomial"``: the exact law of each bin's count (the coefficients of
  ``Π (1 − s_i + s_i z)``, multiplied in a balanced tree with FFTs; a bin of equal scores
  is ``Binomial(m, s)``), then ``R`` inverse-CDF draws per bin. A bin with more than
  :data:`BAND_EXACT_ROWS` scores strictly between 0 and 1 draws instead from the
  Cornish–Fisher quantiles of its first three cumulants (``Σ s``, ``Σ s(1 − s)``,
  ``Σ s(1 − s)(1 − 2s)``), rounded to a count: the law is then within ``O(1/m)`` of the
  exact one in its quantiles, far below the Monte Carlo error of ``R`` draws, and it needs
  only sums (the method then reads ``"poisson-binomial, moments above 20,000 rows"``).

Everything a band needs is in :class:`BandStats`, per bin sums that merge over chunks of
rows (exact laws merge by convolution), so a stream of batches draws the same band.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import fft as sp_fft
from scipy import special

from core.base.errors import ConfigError, DataError
from core.base.validation import MAX_RESAMPLES, check_at_most, check_rng
from core.stats.binning import bin_indices, check_n_bins, check_tie_policy
from core.stats.intervals import check_confidence_level, check_seed

#: Largest ``rows × resamples`` drawn as individual Bernoulli outcomes; above it each
#: bin's count is drawn from its exact Poisson-binomial law.
DIRECT_MAX_DRAWS = 1_000_000

#: Uniforms per chunk of the Bernoulli sampler (bounds memory at ~64 MB of float64).
_CHUNK_DRAWS = 4_000_000

#: Bins with more scores strictly inside (0, 1) than this draw from moment-matched
#: quantiles rather than their exact law (see the module docstring).
BAND_EXACT_ROWS = 20_000

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
        The binning, as in :func:`core.stats.binning.bin_indices`; ignored when
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
    check_at_most("n_resamples", r, MAX_RESAMPLES)
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
    stats_ = BandStats.of(s, idx, b, keep_rows=True)
    band = stats_.band(r, confidence_level, rng)
    return dataclasses.replace(band, seed=checked_seed if isinstance(checked_seed, int) else None)


@dataclass(frozen=True, eq=False)
class BandStats:
    """What the band of one component's bins is drawn from, mergeable over chunks of rows.

    Attributes
    ----------
    counts : numpy.ndarray
        ``(B,)`` rows per bin.
    score_sums : numpy.ndarray
        ``(B,)`` sums of the scores.
    certain : numpy.ndarray
        ``(B,)`` rows with a score of exactly 1.
    inner : numpy.ndarray
        ``(B,)`` rows with a score strictly between 0 and 1.
    variance, third : numpy.ndarray
        ``(B,)`` ``Σ s(1 − s)`` and ``Σ s(1 − s)(1 − 2s)``: the second and third cumulants of
        the count of positives.
    low_score, high_score : numpy.ndarray
        ``(B,)`` smallest and largest score (``inf``/``-inf`` for an empty bin).
    laws : tuple
        Per bin, the exact law of the positives among its inner rows while it has at most
        :data:`BAND_EXACT_ROWS` of them, else None.
    rows : tuple of numpy.ndarray or None
        ``(scores, bins)`` of every row, kept while ``rows × resamples`` is small enough for
        the Bernoulli sampler (``keep_rows``), else None.
    """

    counts: np.ndarray
    score_sums: np.ndarray
    certain: np.ndarray
    inner: np.ndarray
    variance: np.ndarray
    third: np.ndarray
    low_score: np.ndarray
    high_score: np.ndarray
    laws: tuple[np.ndarray | None, ...]
    rows: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def of(
        cls,
        scores: np.ndarray,
        index: np.ndarray,
        n_bins: int,
        *,
        keep_rows: bool = False,
        before: BandStats | None = None,
    ) -> BandStats:
        """Return the band facts of one chunk of a component's rows.

        Parameters
        ----------
        scores : numpy.ndarray
            ``(n,)`` scores in [0, 1].
        index : numpy.ndarray
            ``(n,)`` bin of every row, in ``0..n_bins-1``.
        n_bins : int
            Number of bins ``B``.
        keep_rows : bool, default=False
            Keep the rows themselves, for the Bernoulli sampler of a small sample (merging
            drops them above ``DIRECT_MAX_DRAWS / 2`` rows: at least two resamples).
        before : BandStats, optional
            The merged facts of the rows before these, when known (a stream in order). A
            bin whose inner rows with these pass :data:`BAND_EXACT_ROWS` gets no law, and
            rows past ``DIRECT_MAX_DRAWS / 2`` in all are not kept: merging would drop
            both, so the merged facts are the same.
        """
        b = int(n_bins)
        s = scores
        q = 1.0 - s
        q *= s  # s(1 − s)
        counts = np.bincount(index, minlength=b).astype(np.int64)
        # scores of exactly 0 or 1 are few: count them on their own rows
        ends = np.flatnonzero((s <= 0.0) | (s >= 1.0))
        at = index[ends]
        inner = counts - np.bincount(at, minlength=b)
        certain = np.bincount(at, weights=s[ends] >= 1.0, minlength=b).astype(np.int64)
        low = np.full(b, np.inf)
        high = np.full(b, -np.inf)
        np.minimum.at(low, index, s)
        np.maximum.at(high, index, s)
        laws: list[np.ndarray | None] = [None] * b
        prior = 0 if before is None else before.inner
        small = np.flatnonzero((inner > 0) & (inner + prior <= BAND_EXACT_ROWS))
        if small.size:
            # only the rows of small bins are sorted (a large chunk may have a few)
            wanted = np.zeros(b, dtype=bool)
            wanted[small] = True
            rows = np.flatnonzero(wanted[index])
            order = rows[np.argsort(index[rows], kind="stable")]
            bounds = np.searchsorted(index[order], np.arange(b + 1))
            parts = [s[order[bounds[j] : bounds[j + 1]]] for j in small]
            inner_parts = [part[(part > 0.0) & (part < 1.0)] for part in parts]
            for j, law in zip(small, poisson_binomial_pmfs(inner_parts), strict=True):
                laws[j] = law
        variance = np.bincount(index, weights=q, minlength=b)
        skew = s * -2.0
        skew += 1.0
        skew *= q  # s(1 − s)(1 − 2s)
        return cls(
            counts=counts,
            score_sums=np.bincount(index, weights=s, minlength=b),
            certain=certain,
            inner=inner,
            variance=variance,
            third=np.bincount(index, weights=skew, minlength=b),
            low_score=low,
            high_score=high,
            laws=tuple(laws),
            rows=(s, index) if keep_rows and _may_keep(before, s.shape[0]) else None,
        )

    @property
    def n_bins(self) -> int:
        """Number of bins ``B``."""
        return int(self.counts.shape[0])

    def __add__(self, other: BandStats) -> BandStats:
        """Merge the facts of two disjoint chunks of rows (``other``'s after these)."""
        inner = self.inner + other.inner
        laws = []
        for j, (a, c) in enumerate(zip(self.laws, other.laws, strict=True)):
            laws.append(_merge_laws(a, c, int(inner[j])))
        rows = None
        kept = self.rows is not None and other.rows is not None
        if kept and self.counts.sum() + other.counts.sum() <= DIRECT_MAX_DRAWS // 2:
            rows = (
                np.concatenate([self.rows[0], other.rows[0]]),
                np.concatenate([self.rows[1], other.rows[1]]),
            )
        return BandStats(
            counts=self.counts + other.counts,
            score_sums=self.score_sums + other.score_sums,
            certain=self.certain + other.certain,
            inner=inner,
            variance=self.variance + other.variance,
            third=self.third + other.third,
            low_score=np.minimum(self.low_score, other.low_score),
            high_score=np.maximum(self.high_score, other.high_score),
            laws=tuple(laws),
            rows=rows,
        )

    def band(
        self, n_resamples: int, confidence_level: float, rng: np.random.Generator
    ) -> ConsistencyBand:
        """Draw the band: ``n_resamples`` redraws per bin at ``confidence_level``.

        Uses the Bernoulli sampler when the rows are kept and ``rows × resamples`` is at
        most :data:`DIRECT_MAX_DRAWS`, else each bin's law (see the module docstring).
        """
        counts = self.counts
        b, r = self.n_bins, int(n_resamples)
        with np.errstate(invalid="ignore", divide="ignore"):
            center = np.where(counts > 0, self.score_sums / counts, np.nan)
        tail = 0.5 * (1.0 - confidence_level)
        n = int(counts.sum())
        if self.rows is not None and n * r <= DIRECT_MAX_DRAWS:
            s, idx = self.rows
            low, high = _band_from_counts(_bernoulli_counts(s, idx, b, r, rng), counts, tail)
            method = "bernoulli"
        else:
            low, high = self._law_band(r, tail, rng)
            method = "poisson-binomial"
            moments = (self.inner > 0) & (self.low_score < self.high_score)
            if any(law is None for law, m in zip(self.laws, moments, strict=True) if m):
                method += f", moments above {BAND_EXACT_ROWS:,} rows"
        return ConsistencyBand(
            low=low,
            high=high,
            center=center,
            counts=counts.astype(np.int64),
            confidence_level=confidence_level,
            n_resamples=r,
            seed=None,
            method=method,
        )

    def _law_band(
        self, r: int, tail: float, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Band from inverse-CDF draws of each bin's law, in blocks of bins.

        Blocks bound the ``(R, bins)`` arrays (the discrete binning may have a bin per row).
        """
        counts = self.counts
        b = counts.size
        filled = counts > 0
        equal = filled & (self.low_score == self.high_score)
        low = np.full(b, np.nan)
        high = np.full(b, np.nan)
        width = max(1, _CHUNK_DRAWS // r)
        for start in range(0, b, width):  # blocks of bins
            cols = np.arange(start, min(b, start + width))
            u = rng.random((r, cols.size))
            positives = np.zeros((r, cols.size))
            eq = equal[cols]
            if eq.any():
                from scipy import stats  # a third of a second to import: only when needed

                # equal scores (always so for the discrete binning): Binomial(m, s)
                positives[:, eq] = stats.binom.ppf(
                    u[:, eq], counts[cols[eq]], self.low_score[cols[eq]]
                )
            for j in np.flatnonzero(~eq & filled[cols]):  # one law per bin
                k = cols[j]
                certain, inner = int(self.certain[k]), int(self.inner[k])
                law = self.laws[k]
                if inner == 0:
                    draws = np.zeros(r)
                elif law is not None:
                    cdf = np.cumsum(law)
                    draws = np.minimum(np.searchsorted(cdf, u[:, j] * cdf[-1], side="right"), inner)
                else:
                    draws = self._moment_draws(k, u[:, j])
                positives[:, j] = certain + draws
            low[cols], high[cols] = _band_from_counts(positives, counts[cols], tail)
        return low, high

    def _moment_draws(self, k: int, u: np.ndarray) -> np.ndarray:
        """Return the counts at the Cornish–Fisher quantiles ``u`` of bin ``k``'s inner rows."""
        mean = self.score_sums[k] - self.certain[k]
        sd = np.sqrt(max(self.variance[k], 0.0))
        z = np.clip(special.ndtri(u), -40.0, 40.0)
        skew = self.third[k] / sd**3 if sd > 0 else 0.0
        x = mean + sd * (z + skew * (z * z - 1.0) / 6.0)
        return np.clip(np.floor(x + 0.5), 0.0, float(self.inner[k]))


def _may_keep(before: BandStats | None, m: int) -> bool:
    """Whether ``m`` more rows after ``before`` may keep their rows (see :meth:`BandStats.__add__`)."""
    if before is None:
        return True
    return before.rows is not None and int(before.counts.sum()) + m <= DIRECT_MAX_DRAWS // 2


def _merge_laws(a: np.ndarray | None, c: np.ndarray | None, inner: int) -> np.ndarray | None:
    """Return the exact law of bin ``j``'s inner positives over both chunks, while kept."""
    if inner > BAND_EXACT_ROWS:
        return None
    a = a if a is not None else np.ones(1)  # a chunk without inner rows in the bin
    c = c if c is not None else np.ones(1)
    law = _convolve(a, c)
    np.clip(law, 0.0, None, out=law)
    return law / law.sum()


def _convolve(a: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Full convolution of two laws: directly when one is short, else by real FFTs."""
    if min(a.shape[0], c.shape[0]) <= _DIRECT_CONVOLUTION:
        return np.convolve(a, c)
    out_len = a.shape[0] + c.shape[0] - 1
    nfft = sp_fft.next_fast_len(out_len, real=True)
    return sp_fft.irfft(sp_fft.rfft(a, nfft) * sp_fft.rfft(c, nfft), nfft)[:out_len]


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
    return poisson_binomial_pmfs([probabilities])[0]


def poisson_binomial_pmfs(groups: Sequence[ArrayLike]) -> list[np.ndarray]:
    """:func:`poisson_binomial_pmf` of several groups of trials at once (the same values).

    Every group's tree has its own padding, and the levels of all groups are multiplied
    together: one batch of products per level instead of one per level and group, which
    is what a component's many small bins cost.

    Parameters
    ----------
    groups : sequence of array_like
        Each ``(m_g,)`` success probabilities in [0, 1].

    Returns
    -------
    list of numpy.ndarray
        Each ``(m_g + 1,)`` law.
    """
    out: list[np.ndarray] = [np.ones(1)] * len(groups)  # no trials: 0 successes for sure
    sizes = [np.size(q) for q in groups]
    active: list[tuple[int, np.ndarray]] = []
    for g, probabilities in enumerate(groups):
        if sizes[g] == 0:
            continue
        q = np.asarray(probabilities, dtype=np.float64).ravel()
        polys = np.zeros((1 << (sizes[g] - 1).bit_length(), 2))
        polys[:, 0] = 1.0  # padding rows are the polynomial 1 (probability 0)
        polys[: sizes[g], 0] = 1.0 - q
        polys[: sizes[g], 1] = q
        active.append((g, polys))
    while active:
        for g, polys in active:
            if polys.shape[0] == 1:
                pmf = polys[0, : sizes[g] + 1]
                out[g] = pmf / pmf.sum()
        active = [(g, polys) for g, polys in active if polys.shape[0] > 1]
        if not active:
            break
        stacked = np.concatenate([polys for _, polys in active])
        a, c = stacked[0::2], stacked[1::2]  # every group's count is even: pairs stay inside
        length = stacked.shape[1]  # degree + 1 of every polynomial of this level
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
        halves = np.cumsum([polys.shape[0] // 2 for _, polys in active])[:-1]
        active = [(g, part) for (g, _), part in zip(active, np.split(prod, halves), strict=True)]
    return out
