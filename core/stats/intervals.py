"""Uncertainty: per-bin binomial intervals and the intervals read off bootstrap resamples.

Per-bin intervals
-----------------
:func:`bin_intervals` gives a two-sided interval for each bin's mean outcome from its
count ``n`` and label sum ``k``: Wilson's score interval or the exact Clopper–Pearson
interval (as :meth:`scipy.stats.binomtest(k, n).proportion_ci` with ``method="wilson"`` or
``"exact"``). Both are exactly ``0`` below at ``k = 0`` and ``1`` above at ``k = n``;
empty bins give NaN.

Bootstrap intervals
-------------------
Two intervals are read off resampled values θ*_r (:data:`BOOTSTRAP_INTERVALS`,
:func:`interval_bounds`): the percentile interval, where resampled estimates fall, and the
basic (pivotal) one around the estimate, cut to the estimand's range. The resamples
themselves are drawn by :mod:`core.inference.bootstrap`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from core.base.errors import ConfigError, DataError
from core.base.registry import Entry, Registry
from core.base.tails import norm_ppf
from core.base.validation import MAX_RESAMPLES, check_count

# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class ConfidenceInterval:
    """A two-sided confidence interval.

    Attributes
    ----------
    low, high : float
        The bounds; ``low, high = ci`` unpacks them.
    """

    low: float
    high: float

    def __iter__(self) -> Iterator[float]:
        yield self.low
        yield self.high


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """A bootstrap interval for a scalar statistic.

    Attributes
    ----------
    value : float
        The statistic on the full sample.
    confidence_interval : ConfidenceInterval
        The interval of :attr:`method` (module docstring): the percentile interval
        ``(q_{(1-level)/2}, q_{(1+level)/2})`` of the bootstrap distribution
        (``numpy.quantile``, linear interpolation), or the basic one.
    confidence_level : float
        Confidence level, e.g. 0.95.
    n_resamples : int
        Number of resamples.
    seed : int or None
        The seed of the resampling (None when a Generator was passed).
    method : str
        ``"percentile"`` or ``"basic"`` (:data:`BOOTSTRAP_INTERVALS`).
    distribution : numpy.ndarray
        ``(n_resamples,)`` statistic on each resample, in draw order.
    statistic : str
        Name of the statistic (a callable's ``__name__``).
    path : str
        How resamples were evaluated: ``"fixed-bins"``, ``"equal-mass"``, ``"sweep"``,
        ``"row-mean"`` or ``"generic"`` (see the module docstring), or ``"cells"`` (the cell
        bootstrap of :mod:`core.inference.cells`).
    truth : float
        The estimand's value in the bootstrap world, on which the basic interval pivots
        (NaN for the percentile interval, which does not read it).
    """

    value: float
    confidence_interval: ConfidenceInterval
    confidence_level: float
    n_resamples: int
    seed: int | None
    method: str
    distribution: np.ndarray
    statistic: str
    path: str
    truth: float = math.nan


@dataclass(frozen=True, kw_only=True)
class BootstrapIntervalInfo(Entry):
    """How a bootstrap interval is read off the resampled values (module docstring).

    ``func(q_lo, q_hi, value, truth) -> (low, high)`` maps the resamples' quantiles to the
    interval.

    Attributes
    ----------
    pivots : bool
        Whether it reads ``truth``, the estimand's value in the bootstrap world (the
        registry entries' ``bootstrap_truth``): only then is it computed.
    word : str
        What the text says before "interval" ("": nothing, the default interval).
    caption : str
        How captions name it ("percentile-bootstrap").
    cut : bool
        Whether the interval is cut to the estimand's range (:func:`support_of`): a
        reflected interval can leave it, resampled estimates cannot.
    """

    pivots: bool = False
    word: str = ""
    caption: str = ""
    cut: bool = False


#: The bootstrap intervals (``AnalysisConfig.bootstrap_interval``).
BOOTSTRAP_INTERVALS: Registry[BootstrapIntervalInfo] = Registry(
    "bootstrap interval", BootstrapIntervalInfo
)


@BOOTSTRAP_INTERVALS.register(
    "percentile",
    label="Percentile",
    description="percentile intervals: where resampled estimates fall",
    formula="Efron & Tibshirani (1993) §13.3",
    caption="percentile-bootstrap",
)
def _percentile(low: float, high: float, value: float, truth: float) -> tuple[float, float]:
    return low, high


@BOOTSTRAP_INTERVALS.register(
    "basic",
    label="Basic (pivotal)",
    description="basic (pivotal) intervals: the resampled estimates' spread around their "
    "own world's true value, reflected around the estimate (the estimator's bias at this n "
    "removed) and cut to the estimand's range (a calibration error is at least 0)",
    formula="Davison & Hinkley (1997) §5.2; Kumar et al.'s bootstrap_uncertainty",
    pivots=True,
    cut=True,
    word="basic",
    caption="basic (pivotal) bootstrap",
)
def _basic(low: float, high: float, value: float, truth: float) -> tuple[float, float]:
    return value + truth - high, value + truth - low


def pivots(method: str) -> bool:
    """Whether the bootstrap interval ``method`` reads the estimand's bootstrap-world value."""
    return BOOTSTRAP_INTERVALS.get(method).pivots


def level_words(confidence_level: float, method: str) -> str:
    """Return how text names an interval's level and kind.

    Examples
    --------
    >>> level_words(0.95, "percentile"), level_words(0.9, "basic")
    ('95%', '90% basic')
    """
    word = BOOTSTRAP_INTERVALS.get(method).word
    return f"{confidence_level:.0%}" + (f" {word}" if word else "")


# --------------------------------------------------------------------------- validation


def check_confidence_level(confidence_level: object) -> float:
    """Return a confidence level strictly between 0 and 1.

    Parameters
    ----------
    confidence_level : float
        Confidence level, e.g. 0.95.

    Returns
    -------
    float
        The level.

    Raises
    ------
    ConfigError
        If it is not a number in (0, 1).
    """
    if isinstance(confidence_level, bool) or not isinstance(
        confidence_level, int | float | np.integer | np.floating
    ):
        raise ConfigError(
            f"confidence_level must be a number between 0 and 1 (e.g. 0.95); got {confidence_level!r}."
        )
    value = float(confidence_level)
    if not 0.0 < value < 1.0:
        hint = " Give it as a fraction, e.g. 0.95, not 95." if value >= 1.0 else ""
        raise ConfigError(
            f"confidence_level must lie strictly between 0 and 1; got {confidence_level!r}.{hint}"
        )
    return value


def check_bootstrap_interval(method: object) -> str:
    """Return a bootstrap interval's name (a key of :data:`BOOTSTRAP_INTERVALS`).

    Raises
    ------
    ConfigError
        For any other value.
    """
    if isinstance(method, str) and method in BOOTSTRAP_INTERVALS:
        return method
    choices = ", ".join(repr(m) for m in BOOTSTRAP_INTERVALS.names())
    raise ConfigError(f"bootstrap_interval must be one of {choices}; got {method!r}.")


def check_n_resamples(n_resamples: object) -> int:
    """Return a number of bootstrap resamples (a whole number ≥ 1).

    Parameters
    ----------
    n_resamples : int
        Number of resamples.

    Returns
    -------
    int
        The number.

    Raises
    ------
    ConfigError
        If it is not a whole number in ``1..MAX_RESAMPLES`` (100,000).
    """
    return check_count("n_resamples", n_resamples, MAX_RESAMPLES)


def check_seed(seed: object) -> int | np.random.Generator:
    """Return a valid seed: a non-negative int or a Generator (``None`` means 0).

    Parameters
    ----------
    seed : int, Generator or None
        The seed.

    Returns
    -------
    int or numpy.random.Generator
        The seed.

    Raises
    ------
    ConfigError
        For negative, fractional or non-numeric seeds.
    """
    if seed is None:
        return 0
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(
            f"seed must be a non-negative whole number or a numpy.random.Generator; got {seed!r}."
        )
    return int(seed)


def check_resampling(
    n_resamples: object, confidence_level: object, seed: object, *, why: str = ""
) -> tuple[int, float, int]:
    """Check the resampling options of a call that derives further seeds from one integer.

    Parameters
    ----------
    n_resamples : int
        Resamples; ``0`` turns the bootstrap off, as in ``AnalysisConfig``.
    confidence_level : float
        Confidence level in (0, 1).
    seed : int
        A non-negative whole number (a Generator is refused: seeds are derived from it).
    why : str, optional
        Why an integer is needed, said in the message.

    Returns
    -------
    tuple
        ``(n_resamples, confidence_level, seed)``.

    Raises
    ------
    ConfigError
        As :func:`check_n_resamples`, :func:`check_confidence_level` and :func:`check_seed`.
    """
    if n_resamples != 0:
        n_resamples = check_n_resamples(n_resamples)
    level = check_confidence_level(confidence_level)
    seed_value = check_seed(seed)
    if not isinstance(seed_value, int):
        raise ConfigError(f"seed must be an integer here{f' ({why})' if why else ''}.")
    return int(n_resamples), level, seed_value  # type: ignore[call-overload]


# --------------------------------------------------------------------------- per-bin intervals

INTERVAL_METHODS: Registry = Registry("per-bin interval method")  # plain Entry items


@INTERVAL_METHODS.register(
    "wilson",
    label="Wilson score",
    description="Wilson's score interval for a binomial proportion; close to nominal coverage.",
    formula="Wilson (1927); Newcombe (1998) method 3",
)
def _wilson(k: np.ndarray, n: np.ndarray, confidence_level: float) -> tuple[np.ndarray, np.ndarray]:
    z = norm_ppf(0.5 + 0.5 * confidence_level)
    p = k / n
    denom = 2.0 * (n + z**2)
    center = (2.0 * n * p + z**2) / denom
    delta = z / denom * np.sqrt(4.0 * n * p * (1.0 - p) + z**2)
    return np.where(k > 0, center - delta, 0.0), np.where(k < n, center + delta, 1.0)


@INTERVAL_METHODS.register(
    "clopper-pearson",
    label="Clopper–Pearson (exact)",
    description="Exact binomial interval from beta quantiles; conservative (coverage ≥ level).",
    formula="Clopper & Pearson (1934)",
)
def _clopper_pearson(
    k: np.ndarray, n: np.ndarray, confidence_level: float
) -> tuple[np.ndarray, np.ndarray]:
    from scipy import stats as _stats  # a third of a second to import: only when chosen

    alpha = 1.0 - confidence_level
    low = _stats.beta.ppf(alpha / 2.0, np.where(k > 0, k, 1.0), n - k + 1.0)
    high = _stats.beta.ppf(1.0 - alpha / 2.0, k + 1.0, np.where(k < n, n - k, 1.0))
    return np.where(k > 0, low, 0.0), np.where(k < n, high, 1.0)


def bin_intervals(
    counts: ArrayLike,
    label_sums: ArrayLike,
    *,
    method: str = "wilson",
    confidence_level: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:
    """Return a confidence interval for each bin's mean outcome.

    Parameters
    ----------
    counts : array_like
        Number of points per bin (non-negative).
    label_sums : array_like
        Number of positive outcomes per bin, ``0 ≤ label_sums ≤ counts``.
    method : {"wilson", "clopper-pearson"}, default="wilson"
        A name in :data:`INTERVAL_METHODS`.
    confidence_level : float, default=0.95
        Two-sided confidence level.

    Returns
    -------
    low, high : numpy.ndarray
        float64 bounds of the same shape as ``counts``; NaN for empty bins, exactly 0
        (low) when ``label_sums = 0`` and 1 (high) when ``label_sums = counts``.

    Raises
    ------
    ConfigError
        For an unknown method or a level outside (0, 1).
    DataError
        For negative counts or label sums outside ``[0, counts]``.

    Examples
    --------
    >>> low, high = bin_intervals([10, 0], [0, 0], method="clopper-pearson")
    >>> round(float(high[0]), 4), float(low[0]), bool(np.isnan(low[1]))
    (0.3085, 0.0, True)
    """
    entry = INTERVAL_METHODS.get(method)
    confidence_level = check_confidence_level(confidence_level)
    n = np.asarray(counts, dtype=np.float64)
    k = np.asarray(label_sums, dtype=np.float64)
    if n.shape != k.shape:
        raise DataError(f"counts {n.shape} and label_sums {k.shape} must have the same shape.")
    if not (np.isfinite(n).all() and np.isfinite(k).all()):
        raise DataError("counts and label_sums must be finite.")
    if (n < 0).any() or (k < 0).any() or (k > n).any():
        raise DataError("Each bin needs 0 ≤ label_sums ≤ counts (label sums count positives).")
    filled = n > 0
    safe_n = np.where(filled, n, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        low, high = entry.func(k, safe_n, confidence_level)
    low = np.where(filled, low, np.nan)
    high = np.where(filled, high, np.nan)
    return low, high


def outside_note(value: float, low: float, high: float, method: str = "percentile") -> str:
    """Return why a bootstrap interval does not hold its estimate ("" when it does).

    A resample of the rows has its own true error, the plug-in error of these rows' bins;
    a biased estimator's resampled values centre on that plus its bias at this ``n``, not
    on the estimate (the plug-in ECE of a nearly calibrated model sits below its resamples;
    a debiased one far below them). The percentile interval then says where resampled
    estimates fall; the basic interval, which removes that bias, lies on the other side of
    a biased estimate. The tables say so rather than hide it.

    Examples
    --------
    >>> outside_note(0.5, 0.4, 0.6)
    ''
    >>> outside_note(0.005, 0.0057, 0.0076)[:44]
    'estimate outside its percentile interval: th'
    >>> outside_note(0.01, 0.002, 0.008, "basic")[:39]
    'estimate outside its basic interval: th'
    >>> outside_note(-0.001, 0.0, 0.008, "basic")[:48]
    'estimate below 0, its basic interval cut at 0: a'
    """
    if not (math.isfinite(low) and math.isfinite(high)) or low <= value <= high:
        return ""
    side = "above" if low > value else "below"
    if BOOTSTRAP_INTERVALS.get(method).cut and value < low == 0.0:
        why = (
            "an unbiased estimate can fall below 0, where the calibration error it estimates "
            "cannot be"
        )
        if high == 0.0:  # the whole reflection was below 0
            return (
                f"estimate below 0, and its whole {method} interval before the cut at 0, which "
                f"leaves only 0: the estimate falls further below 0 than its resamples spread; "
                f"{why}"
            )
        return f"estimate below 0, its {method} interval cut at 0: {why}"
    if pivots(method):
        return (
            f"estimate outside its {method} interval: the interval lies {side} it, the "
            "estimator's bias at this n removed (resampled estimates sit that far from "
            "their own world's true value, the estimand on these rows)"
        )
    return (
        f"estimate outside its percentile interval: the resampled values sit {side} it, "
        "shifted by the estimator's bias at this n (a resample's own error is the plug-in "
        "error of these rows), so the interval shows where resampled estimates fall, not a "
        "range around this one"
    )


def undefined_note(distribution: np.ndarray | None) -> str:
    """Return the note of a distribution with undefined resamples ("" when there are none).

    A statistic can be undefined on a resample (a median bandwidth of a resample whose scores
    in one class are all equal); its interval is then not computed, and the tables say why.

    Examples
    --------
    >>> undefined_note(np.array([0.1, np.nan, 0.2, np.nan]))
    'undefined on 2 of 4 resamples: no interval'
    """
    if distribution is None:
        return ""
    missing = int(np.isnan(distribution).sum())
    if not missing:
        return ""
    return f"undefined on {missing:,} of {distribution.shape[0]:,} resamples: no interval"


def with_outside_note(
    note: str, value: float, low: float, high: float, method: str = "percentile"
) -> str:
    """Return ``note`` followed by :func:`outside_note` of the interval, when there is one.

    Examples
    --------
    >>> with_outside_note("b* = 5", 0.5, 0.4, 0.6)
    'b* = 5'
    """
    return "; ".join(filter(None, [note, outside_note(value, low, high, method)]))


def interval_bounds(
    distribution: np.ndarray | None,
    confidence_level: float,
    method: str = "percentile",
    value: float = math.nan,
    truth: float = math.nan,
    *,
    skip_nan: bool = False,
    support: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """Return the interval of a bootstrap distribution (module docstring).

    Parameters
    ----------
    distribution : numpy.ndarray or None
        The resampled values (None gives ``(nan, nan)``).
    confidence_level : float
        Two-sided level.
    method : {"percentile", "basic"}
        The interval.
    value, truth : float
        The estimate and the estimand's value in the bootstrap world (``"basic"``).
    skip_nan : bool, default=False
        Leave NaN values out (a group absent from a resample); all NaN gives
        ``(nan, nan)``. Otherwise a NaN value makes the bounds NaN.
    support : tuple of float, optional
        The estimand's range (:func:`support_of`; None for a difference): an interval
        whose entry says ``cut`` (the basic one) is cut to it.

    Returns
    -------
    tuple of float
        ``(low, high)``.

    Examples
    --------
    >>> d = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    >>> interval_bounds(d, 0.5)
    (2.0, 4.0)
    >>> interval_bounds(d, 0.5, "basic", value=2.5, truth=3.0)
    (1.5, 3.5)
    >>> interval_bounds(d, 0.5, "basic", value=1.0, truth=2.0, support=(0.0, math.inf))
    (0.0, 1.0)
    """
    if distribution is None or (skip_nan and np.isnan(distribution).all()):
        return math.nan, math.nan
    tail = (1.0 - confidence_level) / 2.0
    quantile = np.nanquantile if skip_nan else np.quantile
    low, high = (float(q) for q in quantile(distribution, [tail, 1.0 - tail]))
    info = BOOTSTRAP_INTERVALS.get(method)
    low, high = info.func(low, high, value, truth)
    if info.cut and support is not None:
        # an undefined bound (NaN) stays undefined
        low, high = (float(np.clip(b, *support)) for b in (low, high))
    return low, high


def bootstrap_result(
    value: float,
    distribution: np.ndarray,
    confidence_level: float,
    seed: int | None,
    *,
    statistic: str,
    path: str,
    method: str = "percentile",
    truth: float | None = None,
    support: tuple[float, float] | None = None,
) -> BootstrapResult:
    """Return the interval of a bootstrap distribution as a :class:`BootstrapResult`.

    Parameters
    ----------
    value : float
        The statistic on the full sample.
    distribution : numpy.ndarray
        Its value on each resample.
    confidence_level : float
        Two-sided level.
    seed : int or None
        The seed of the resampling.
    statistic, path : str
        What was bootstrapped, and how.
    method : {"percentile", "basic"}, default="percentile"
        The interval (:data:`BOOTSTRAP_INTERVALS`).
    truth : float, optional
        The estimand's value in the bootstrap world (``"basic"``; default ``value``).
    support : tuple of float, optional
        The estimand's range, which a basic interval is cut to (:func:`interval_bounds`).

    Returns
    -------
    BootstrapResult
        The result (``numpy.quantile``, linear interpolation).
    """
    truth = (value if truth is None else float(truth)) if pivots(method) else math.nan
    low, high = interval_bounds(
        distribution, confidence_level, method, value, truth, support=support
    )
    return BootstrapResult(
        value=value,
        confidence_interval=ConfidenceInterval(low, high),
        confidence_level=confidence_level,
        n_resamples=int(distribution.shape[0]),
        seed=seed,
        method=method,
        distribution=distribution,
        statistic=statistic,
        path=path,
        truth=truth,
    )
