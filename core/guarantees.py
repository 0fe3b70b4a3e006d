"""Distribution-free guarantees of histogram binning (Gupta & Ramdas 2021).

These need no data: they turn a sample size ``n``, a number of bins ``B`` and a
failure probability ``α`` into the ε of the conditional-calibration guarantee, and
back into the largest ``B`` that keeps ε under a target.
"""

from __future__ import annotations

import numpy as np

from core.errors import ConfigError

#: Defaults of the bin-count guidance: failure probability and target ε (Gupta & Ramdas 2021, §3).
DEFAULT_ALPHA = 0.1
DEFAULT_EPSILON = 0.1


def _check_alpha(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"The failure probability α must lie in (0, 1); got {alpha!r}.")
    return float(alpha)


def histogram_binning_epsilon(n: int, n_bins: int, alpha: float = DEFAULT_ALPHA) -> float:
    """ε of the conditional-calibration guarantee of UMD histogram binning.

    Gupta & Ramdas (2021), Theorem 3, Eq. (8): with probability at least ``1 − α``
    every bin's mean label is within ``ε = sqrt(log(2B/α) / (2(⌊n/B⌋ − 1)))`` of the true
    conditional probability. Valid for ``n ≥ 2B``.

    Parameters
    ----------
    n : int
        Calibration sample size.
    n_bins : int
        Number of bins ``B``.
    alpha : float, default 0.1
        Failure probability.

    Returns
    -------
    float
        ε, or ``inf`` when ``n < 2B`` (no guarantee).
    """
    alpha = _check_alpha(alpha)
    if n_bins < 1:
        raise ConfigError(f"The number of bins must be at least 1; got {n_bins!r}.")
    m = n // n_bins - 1
    if n < 2 * n_bins or m < 1:
        return float("inf")
    return float(np.sqrt(np.log(2 * n_bins / alpha) / (2 * m)))


def largest_n_bins(
    n: int,
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = DEFAULT_ALPHA,
    max_bins: int = 1000,
) -> int | None:
    """Largest number of bins whose Eq. (8) guarantee is at most ``epsilon``.

    ε is not monotone in ``B`` (⌊n/B⌋ jumps), so every ``B ≤ max_bins`` is checked.

    Parameters
    ----------
    n : int
        Calibration sample size.
    epsilon : float, default 0.1
        Target ε.
    alpha : float, default 0.1
        Failure probability.
    max_bins : int, default 1000
        Largest ``B`` considered.

    Returns
    -------
    int or None
        The largest admissible ``B``, or None when none reaches ``epsilon``.
    """
    alpha = _check_alpha(alpha)
    b = np.arange(1, min(max_bins, n // 2) + 1)
    if b.size == 0:
        return None
    m = n // b - 1
    with np.errstate(divide="ignore"):
        eps = np.where(m >= 1, np.sqrt(np.log(2 * b / alpha) / (2 * np.maximum(m, 1))), np.inf)
    ok = np.flatnonzero(eps <= epsilon)
    return int(b[ok[-1]]) if ok.size else None
