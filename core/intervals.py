"""Uncertainty: per-bin binomial intervals and the bootstrap of any scalar statistic.

Per-bin intervals
-----------------
:func:`bin_intervals` gives a two-sided interval for each bin's mean outcome from its
count ``n`` and label sum ``k``: Wilson's score interval or the exact Clopper–Pearson
interval (as :meth:`scipy.stats.binomtest(k, n).proportion_ci` with ``method="wilson"`` or
``"exact"``). Both are exactly ``0`` below at ``k = 0`` and ``1`` above at ``k = n``;
empty bins give NaN.

Bootstrap
---------
:func:`bootstrap_interval` is the exact bootstrap over rows: each resample draws ``n``
row indices uniformly with replacement and the statistic is recomputed on the resampled
rows, re-binning them where the binning depends on the data.

Two intervals are read off the resampled values θ*_r (:data:`BOOTSTRAP_INTERVALS`), with
``q_lo, q_hi`` their ``(1 ∓ level)/2`` quantiles (``numpy.quantile``, linear):

- ``"percentile"``: ``(q_lo, q_hi)``, where resampled estimates fall;
- ``"basic"`` (pivotal): ``(θ̂ + θ_F − q_hi, θ̂ + θ_F − q_lo)``. The spread of θ̂ around
  the true value is taken to be that of θ*_r around θ_F, the value of the estimand in the
  bootstrap world, whose population is the rows themselves: the plug-in error of the rows
  for the plug-in and the debiased binned estimators, the biased V-statistic for the
  unbiased SKCE estimators (each registry entry's ``bootstrap_truth``), the estimate
  itself (θ_F = θ̂, Efron's ``2θ̂ − q``) for the others. It removes the estimator's bias
  at this ``n`` as the resamples show it: Kumar et al.'s ``bootstrap_uncertainty`` with
  the plug-in as the functional. The reflection can leave the estimand's range (a
  calibration error below 0, an accuracy above 1), so the interval is cut to that range,
  each statistic's ``support`` (:func:`support_of`): a calibration error's lower end is
  then 0 where the reflection reaches below it. A difference of two statistics has no
  range to cut to. The percentile interval is where resampled estimates fall and is not
  cut (an unbiased SKCE's resamples can be negative, and so can its interval).

The order in which a resample's rows reach the statistic matters only to
order-dependent statistics. Registered binned estimators get them in **row order** (the
multiset of drawn rows sorted by row index): equal-mass binning then breaks ties among
equal scores by row index, exactly as on the full sample, and the equal-mass fast path
below reproduces it. Everything else (kernel estimators such as the linear and block
SKCE, which pair consecutive rows, scores and callables) gets them in **draw order**,
an i.i.d. sequence; in row order, copies of one row would sit next to each other and
be paired with themselves. ``resample_order="rows"`` or ``"draws"`` overrides the choice.

Draws come from one :class:`numpy.random.Generator` as ``integers(0, n, size=(r, n))``
in chunks of ``r`` resamples; the stream does not depend on the chunk size, so the
resamples, and hence the result, are the same for every ``chunk_size``, and every
statistic bootstrapped with the same seed sees the same resamples (common random numbers).

Each statistic is evaluated on a chunk of resamples by one of five paths (the engines of
:mod:`core.resampling`, chosen from the estimator's registry entry), all of which give
the same numbers as recomputing the statistic on every resample, up to float rounding of
the per-bin sums (relative ~1e-13 at n = 100,000; the tests check 1e-12):

- ``"fixed-bins"``: ``plugin`` (any norm), ``debiased`` (ℓ1 and ℓ2) and ``label-binned``
  (any norm) with ``equal-width`` or ``discrete`` bins. Every row's bin is fixed (a
  resample's distinct scores are a subset of the sample's and empty bins carry no weight).
  For plug-in and debiased a chunk costs two ``bincount`` calls with offsets ``r·B`` (one
  for counts and label sums, one for score sums), then the batch kernels
  :func:`~core.estimators.plugin_from_stats`, ``debiased_sq_from_stats`` or
  ``debiased_l1_from_stats``; label-binned uses the sorted prefix sums below (the bins
  are runs of the score order).
- ``"equal-mass"``: the same estimators with ``equal-mass`` bins and ``tie_policy="split"``.
  The rows are sorted by score once; a resample's multiplicities over that order come
  from one ``bincount``, and their prefix sums give each resample's sums at the fixed
  rank boundaries ``ceil(k·n/B)`` exactly (a row whose copies straddle a boundary is split
  between the two bins), with no sort per resample. Label-binned ℓ1 also splits each bin
  at its mean outcome by one ``searchsorted`` on the sorted scores, ℓ2 uses sums of
  squared scores, ℓ∞ the first and last copy of each bin.
- ``"sweep"``: ``sweep`` with ``equal-width`` bins, or ``equal-mass`` bins with
  ``tie_policy="split"``, on the same sorted prefix sums. The search of
  :func:`~core.estimators.binned.sweep_search` (the one the estimator runs on one
  sample) runs on all resamples of a chunk at once, in blocks of candidates ``b``:
  equal-mass boundaries are the copy ranks ``ceil(k·n/b)``, equal-width ones the sorted
  positions ``searchsorted(scores, k/b)``, the same for every resample, mapped to copies
  through the prefix sums of the multiplicities. A resample leaves the search at its
  first decreasing candidate, or at once when every candidate is provably monotone;
  then the resamples sharing a ``b*`` get their plug-in error together.
- ``"row-mean"``: accuracy, Brier score and log loss are means of per-row values, so a
  resample's value is the mean of a gather.
- ``"generic"``: everything else (kernel estimators, equal-mass with
  ``tie_policy="keep"``, user callables): the statistic is called once per resample on the
  resampled rows. Per-resample work is vectorised; only the loop over resamples is in
  Python.

Random estimators get the same integer seed on every resample (the bootstrap's seed, or
0 for a Generator), as if :func:`~core.calibration.calibration_error` were called on the
resample with that seed. For the ℓ1 debiased estimator this means every resample reads
the same stream of standard normals; ``debiased_l1_from_stats`` draws it once for the
whole chunk and gives each resample its own offset into it (components after the first
start where the previous one stopped, which depends on how many bins it had filled).

Memory is bounded by the chunk: the default chunk holds about 2**20 drawn indices
(``chunk_size = max(1, 2**20 // n)`` resamples), and the fast paths keep a few arrays of
that size alive, about 40 bytes per drawn index (≈ 40 MB) for the bincount path and about
80 bytes per drawn index (≈ 80 MB; 100 for label-binned) for the sorted prefix-sum path,
whatever ``n_resamples`` is. :func:`bootstrap_many` evaluates the statistics one lens
component at a time, and statistics of one lens share that component's bincounts and
prefix sums, which are freed before the next component. The bootstrap distribution itself takes ``8·n_resamples``
bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from core._tails import norm_ppf
from core._validation import MAX_RESAMPLES, check_count, check_predictions, check_rng
from core.errors import CalibscopeError, ConfigError
from core.memo import Memo, array_digest
from core.registry import Entry, Registry

Statistic = str | Callable[[np.ndarray, np.ndarray], float]


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
        bootstrap of :mod:`core.cells`).
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


def support_of(statistic: Any) -> tuple[float, float] | None:
    """Return the range of a statistic's estimand, which a basic interval is cut to.

    Parameters
    ----------
    statistic : str, EstimatorCall or callable
        An estimator's or a score's registry name (their entries' ``support``: at least 0
        for every calibration error, ``[0, 1]`` for accuracy), a call of an estimator, or
        a callable (no range known).

    Returns
    -------
    tuple of float or None
        ``(low, high)``, or None where nothing is known (a callable).

    Examples
    --------
    >>> support_of("plugin"), support_of("accuracy"), support_of(len)
    ((0.0, inf), (0.0, 1.0), None)
    """
    from core.estimators import ESTIMATORS
    from core.scores import SCORES

    info = getattr(statistic, "info", None)
    if info is not None:
        return info.support
    if isinstance(statistic, str):
        for registry in (ESTIMATORS, SCORES):
            if statistic in registry:
                return registry.get(statistic).support
    return None


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
    from core.errors import DataError

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


def bootstrap_many(
    probs: ArrayLike,
    labels: ArrayLike,
    statistics: Mapping[str, tuple[Statistic, Mapping[str, Any]]],
    *,
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    chunk_size: int | None = None,
    views: Any = None,
    binary: bool = False,
    values: Mapping[str, float] | None = None,
    progress: Callable[[float, str], Any] | None = None,
    method: str = "percentile",
    truths: Mapping[str, float] | None = None,
) -> dict[str, BootstrapResult]:
    """Bootstrap several statistics on the same resamples (common random numbers).

    Each chunk of row indices is drawn once and every statistic is evaluated on it, so
    the intervals of the statistics are computed from identical resamples, which is what
    makes their differences comparable. ``bootstrap_many(P, y, {"x": (stat, opts)})["x"]``
    equals ``bootstrap_interval(P, y, statistic=stat, **opts)`` for the same seed.

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like
        Class indices ``0..K-1``.
    statistics : mapping
        ``key -> (statistic, options)``; see :func:`bootstrap_interval` (``options`` may
        include ``resample_order``).
    n_resamples : int, default=1000
        Number of resamples.
    confidence_level : float, default=0.95
        Confidence level.
    seed : int, Generator or None, default=0
        Seed of the resampling (``None`` means 0). Random estimators receive the same
        integer seed (0 when a Generator is given) on every resample.
    chunk_size : int, optional
        Resamples per chunk; bounds the memory (see the module docstring). It does not
        change the result.
    views : core.binned_view.BinnedViews, optional
        The data's shared views (then ``probs`` and ``labels`` are not read): the plans
        reuse its bins and sort orders instead of binning again.
    binary : bool, default=False
        With ``views``: whether the predictions are binary (one P(y=1) column).
    values : mapping, optional
        ``key -> value`` of statistics already computed on the full sample.
    progress : callable, optional
        ``progress(fraction, message)`` after each chunk of resamples.
    method : {"percentile", "basic"}, default="percentile"
        The interval (:data:`BOOTSTRAP_INTERVALS`).
    truths : mapping, optional
        ``key -> `` the estimand's value in the bootstrap world, for the basic interval;
        a named estimator's missing truth is computed (:func:`truth_values`), a score's
        or a callable's is its value.

    Returns
    -------
    dict
        ``key -> BootstrapResult``.
    """
    from core.binned_view import BinnedViews
    from core.resampling import check_chunk_size, chunks, plan_for

    n_resamples = check_n_resamples(n_resamples)
    confidence_level = check_confidence_level(confidence_level)
    method = check_bootstrap_interval(method)
    seed = check_seed(seed)
    if views is None:
        p, y, binary = check_predictions(probs, labels)
        views = BinnedViews(p, y)
    else:
        p, y = views.probs, views.labels
        binary = bool(binary)
    p_in = np.ascontiguousarray(p[:, 1]) if binary else p
    n = p.shape[0]
    chunk = check_chunk_size(chunk_size, n)
    est_seed = seed if isinstance(seed, int) else 0
    known = values or {}
    # distributions of named statistics already drawn on these rows with this seed
    digest = array_digest(views.probs, views.labels) if isinstance(seed, int) else None
    memo_keys = {
        key: _distribution_key(digest, stat, opts, binary, n_resamples, seed, chunk)
        for key, (stat, opts) in statistics.items()
    }
    found = {key: DISTRIBUTIONS.get(k) for key, k in memo_keys.items() if k is not None}
    found = {key: hit for key, hit in found.items() if hit is not None}
    plans = {
        key: plan_for(stat, views, p_in, binary, dict(opts), est_seed, known.get(key))
        for key, (stat, opts) in statistics.items()
        if key not in found
    }
    rng = check_rng(seed)
    dist = {key: np.empty(n_resamples) for key in plans}
    steps = max((plan.n_components for plan in plans.values()), default=0)
    done = 0
    for idx in chunks(rng, n, n_resamples if plans else 0, chunk):
        r = idx.shape[0]
        per = {key: np.empty((r, plan.n_components)) for key, plan in plans.items()}
        states: dict[str, dict[str, Any]] = {key: {} for key in plans}
        for c in range(steps):  # component-major: see core.resampling.Plan
            shared: dict[Any, Any] = {}
            for key, plan in plans.items():
                if c < plan.n_components:
                    per[key][:, c] = plan.component(idx, c, shared, states[key])
            del shared
        for key, plan in plans.items():
            dist[key][done : done + r] = plan.combine(per[key])
        done += r
        if progress is not None:
            progress(done / n_resamples, f"{done:,} of {n_resamples:,} resamples")
    drawn = {}
    for key, plan in plans.items():
        dist[key].setflags(write=False)  # shared by the memo and every result holding it
        drawn[key] = (plan.name, plan.path, plan.value, dist[key])
        if memo_keys[key] is not None:
            DISTRIBUTIONS.put(memo_keys[key], drawn[key])
    drawn.update(found)
    estimates = {
        key: known.get(key, value) if key in found else value
        for key in statistics
        for _, _, value, _ in [drawn[key]]
    }
    if pivots(method):
        given = truths or {}
        missing = {k: statistics[k] for k in statistics if k not in given}
        truths = {**given, **_named_truths(missing, views, binary, est_seed, estimates)}
    return {
        key: bootstrap_result(
            estimates[key],
            distribution,
            confidence_level,
            seed if isinstance(seed, int) else None,
            statistic=name,
            path=path,
            method=method,
            truth=None if truths is None else truths.get(key),
            support=support_of(statistics[key][0]),
        )
        for key in statistics
        for name, path, _, distribution in [drawn[key]]
    }


def truth_values(
    calls: Mapping[str, Any],
    values: Mapping[str, float],
    evaluate: Callable[[Any], float],
) -> dict[str, float]:
    """Return the estimand of each call in the bootstrap world (the basic interval's pivot).

    Parameters
    ----------
    calls : mapping
        ``key -> EstimatorCall`` (:class:`core.calibration.EstimatorCall`).
    values : mapping
        ``key -> value`` of those calls on the rows.
    evaluate : callable
        ``evaluate(call) -> value`` of another call on the same rows.

    Returns
    -------
    dict
        ``key -> value`` of each call's :meth:`~core.calibration.EstimatorCall.truth_call`
        on the rows: its own value when it is its own truth, the value of an equal call
        among ``calls`` when there is one, else ``evaluate``'s (once per distinct call).
    """
    by_signature = {call.signature(): values[k] for k, call in calls.items() if k in values}
    out: dict[str, float] = {}
    for key, call in calls.items():
        truth = call.truth_call()
        if truth is None:
            out[key] = values[key]
            continue
        sig = truth.signature()
        if sig not in by_signature:
            by_signature[sig] = float(evaluate(truth))
        out[key] = by_signature[sig]
    return out


def _named_truths(
    statistics: Mapping[str, tuple[Statistic, Mapping[str, Any]]],
    views: Any,
    binary: bool,
    seed: int,
    values: Mapping[str, float],
) -> dict[str, float]:
    """Truths of named estimators among ``statistics`` (the rest: their values)."""
    from core.calibration import EstimatorCall
    from core.estimators import ESTIMATORS

    calls = {}
    for key, (stat, opts) in statistics.items():
        if isinstance(stat, str) and stat in ESTIMATORS:
            options = {k: v for k, v in opts.items() if k != "resample_order"}
            calls[key] = EstimatorCall.make(stat, **options)

    def evaluate(call: Any) -> float:
        try:
            return float(call.run_on(views, seed).value)
        except CalibscopeError as exc:
            raise type(exc)(
                f"the basic interval pivots on {call.info.label} of these rows, which could "
                f"not be computed: {exc}"
            ) from exc

    found = truth_values(calls, values, evaluate)
    return {key: found.get(key, values[key]) for key in statistics}


#: Bootstrap distributions of named statistics (``(name, path, value, distribution)``) by
#: data digest, statistic, options, resamples, seed and chunk size: the report's comparison
#: of models reads the sweep's and the scores' resamples its analyses drew (64 MiB).
DISTRIBUTIONS = Memo(64 * 2**20, cost=lambda entry: entry[3].nbytes + 256)


def _distribution_key(
    digest: str | None,
    statistic: Any,
    options: Mapping[str, Any],
    binary: bool,
    n_resamples: int,
    seed: Any,
    chunk: int,
) -> tuple | None:
    """Return the memo key of a named statistic's distribution, or None (not memoised).

    An estimator's options are those of its validated call (defaults filled in), so the
    same estimator asked for in other words shares the entry.
    """
    if digest is None or not isinstance(statistic, str):
        return None
    from core.estimators import ESTIMATORS

    opts = dict(options)
    order = opts.pop("resample_order", None)
    try:
        if statistic in ESTIMATORS:
            from core.calibration import EstimatorCall

            call = EstimatorCall.make(statistic, **opts)
            what: tuple = (
                call.lens,
                call.norm,
                call.binning,
                call.n_bins,
                call.tie_policy,
                call.class_weights,
                call.class_names,
                call.convention,
                tuple(sorted(call.options.items())),
            )
        else:
            what = tuple(sorted(opts.items()))
        key = (digest, statistic, what, order, bool(binary), n_resamples, seed, chunk)
        hash(key)
    except (TypeError, CalibscopeError):  # unhashable options, or invalid ones: plan_for says
        return None
    return key


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


def bootstrap_interval(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    statistic: Statistic = "plugin",
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    chunk_size: int | None = None,
    resample_order: str | None = None,
    method: str = "percentile",
    **calibration_error_options: Any,
) -> BootstrapResult:
    """Bootstrap interval of a calibration error, score or any scalar statistic.

    Rows are resampled with replacement and the statistic is recomputed on every
    resample, re-binning where the binning is data dependent (equal-mass). Binned
    estimators, accuracy, Brier score and log loss are evaluated on whole chunks of
    resamples at once (see the module docstring for the paths and the memory bound).

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like
        Class indices ``0..K-1``.
    statistic : str or callable, default="plugin"
        A name in :data:`core.estimators.ESTIMATORS` (computed with
        :func:`core.calibration.calibration_error`), a name in
        :data:`core.scores.SCORES` (``"accuracy"``, ``"brier"``, ``"log-loss"``), or a
        callable ``f(probs, labels) -> float`` receiving the resampled rows (1-D
        probabilities when the input was 1-D, else the ``(n, K)`` matrix).
    n_resamples : int, default=1000
        Number of bootstrap resamples.
    confidence_level : float, default=0.95
        Two-sided confidence level, as a fraction.
    seed : int, Generator or None, default=0
        Seed of the resampling (``None`` means 0).
    chunk_size : int, optional
        Resamples evaluated together; default ``max(1, 2**20 // n)``. Only memory and
        speed depend on it, not the result.
    resample_order : {"rows", "draws"}, optional
        Order of a resample's rows as passed to the statistic; default ``"rows"`` for
        registered binned estimators and ``"draws"`` otherwise (see the module docstring).
    method : {"percentile", "basic"}, default="percentile"
        The interval (module docstring). ``"basic"`` pivots on the estimand's value in the
        bootstrap world, which the estimator's registry entry names (``bootstrap_truth``):
        the debiased estimator's is the plug-in error of the rows.
    **calibration_error_options
        Options of :func:`core.calibration.calibration_error` (``binning``, ``n_bins``,
        ``norm``, ``lens``, ``tie_policy``, ``class_weights``, ...) for an estimator name,
        or of the score (``eps`` for log loss).

    Returns
    -------
    BootstrapResult
        Estimate, interval, settings and the bootstrap distribution.

    Raises
    ------
    ConfigError
        For an unknown statistic or interval, a level outside (0, 1), a bad seed or bad
        options.
    DataError
        For invalid probabilities or labels.

    Notes
    -----
    Kumar et al.'s ``bootstrap_uncertainty(data, functional, estimator)`` reports the
    basic interval ``(2·functional − q_hi, 2·functional − q_lo)`` of the estimator's
    resamples and takes ``alpha`` in percent; here ``level`` is a fraction (0.9 for their
    default ``alpha=10``) and values ≥ 1 are refused. With the plug-in as both functional
    and estimator (their ``get_calibration_error_uncertainties``) theirs is
    ``method="basic"`` here; for the debiased estimator, ``method="basic"`` pivots on the
    plug-in error as theirs does, around the debiased estimate. The bootstrap resamples
    evaluation rows only: bins fixed in advance stay fixed, and data-dependent bins are
    rebuilt on every resample.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000); y = (rng.uniform(size=2000) < p).astype(int)
    >>> res = bootstrap_interval(p, y, lens="binary", n_resamples=200, seed=1)
    >>> res.confidence_interval.low < res.value < res.confidence_interval.high
    True
    """
    return bootstrap_many(
        probs,
        labels,
        {"statistic": (statistic, {**calibration_error_options, "resample_order": resample_order})},
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        seed=seed,
        chunk_size=chunk_size,
        method=method,
    )["statistic"]
