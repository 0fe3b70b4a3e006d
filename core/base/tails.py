"""The normal and χ² tail functions of the tests and intervals, without importing scipy.stats.

``scipy.stats`` takes about a third of a second to import, a quarter of a short command's
time; the analysis needs three of its functions, which are thin wrappers of
:mod:`scipy.special`. These are the same computations, to the bit (the tests compare them with
``scipy.stats`` on grids that include the edges of each support).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import special


def norm_ppf(q: ArrayLike) -> np.ndarray:
    """Return the standard normal quantile, :meth:`scipy.stats.norm.ppf` (``nan`` off [0, 1]).

    Parameters
    ----------
    q : array_like
        Probabilities.

    Returns
    -------
    numpy.ndarray
        The quantiles (``±inf`` at 0 and 1).
    """
    return special.ndtri(q)


def norm_sf(x: ArrayLike) -> np.ndarray:
    """Return the standard normal upper tail ``P(Z > x)``, :meth:`scipy.stats.norm.sf`.

    Parameters
    ----------
    x : array_like
        Values.

    Returns
    -------
    numpy.ndarray
        The tail probabilities.
    """
    return special.ndtr(np.negative(x))


def chi2_sf(x: ArrayLike, df: ArrayLike) -> np.ndarray:
    """Return the χ² upper tail ``P(X > x)`` on ``df`` degrees of freedom, ``chi2.sf``.

    Below the support the tail is 1, and ``df ≤ 0`` gives ``nan``, as in ``scipy.stats``
    (``scipy.special.chdtrc`` alone gives ``nan`` for ``x < 0``).

    Parameters
    ----------
    x : array_like
        Values.
    df : array_like
        Degrees of freedom.

    Returns
    -------
    numpy.ndarray
        The tail probabilities.
    """
    x = np.asarray(x, dtype=np.float64)
    df = np.asarray(df, dtype=np.float64)
    tail = special.chdtrc(df, np.maximum(x, 0.0))
    return np.where(df > 0, tail, np.nan)
