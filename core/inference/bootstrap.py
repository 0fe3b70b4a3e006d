"""The bootstrap of any scalar statistic: resamples drawn, evaluated and read as intervals.

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
:mod:`core.inference.resampling`, chosen from the estimator's registry entry), all of which give
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
0 for a Generator), as if :func:`~core.inference.calibration.calibration_error` were called on the
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

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from core.base.errors import CalibscopeError
from core.base.memo import Memo, array_digest
from core.base.validation import check_predictions, check_rng
from core.estimators import ESTIMATORS
from core.inference.calibration import EstimatorCall, is_float32
from core.inference.resampling import check_chunk_size, chunks, plan_for
from core.stats.binned_view import BinnedViews
from core.stats.intervals import (
    BootstrapResult,
    bootstrap_result,
    check_bootstrap_interval,
    check_confidence_level,
    check_n_resamples,
    check_seed,
    pivots,
)
from core.stats.scores import SCORES

__all__ = [
    "DISTRIBUTIONS",
    "Statistic",
    "bootstrap_interval",
    "bootstrap_many",
    "support_of",
    "truth_values",
]

Statistic = str | Callable[[np.ndarray, np.ndarray], float]


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
    info = getattr(statistic, "info", None)
    if info is not None:
        return info.support
    if isinstance(statistic, str):
        for registry in (ESTIMATORS, SCORES):
            if statistic in registry:
                return registry.get(statistic).support
    return None


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
    views : core.stats.binned_view.BinnedViews, optional
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
    n_resamples = check_n_resamples(n_resamples)
    confidence_level = check_confidence_level(confidence_level)
    method = check_bootstrap_interval(method)
    seed = check_seed(seed)
    if views is None:
        p, y, binary = check_predictions(probs, labels)
        views = BinnedViews(p, y, float32_input=is_float32(probs))
    else:
        p, y = views.probs, views.labels
        binary = bool(binary)
    p_in = np.ascontiguousarray(p[:, 1]) if binary else p
    n = p.shape[0]
    chunk = check_chunk_size(chunk_size, n)
    est_seed = seed if isinstance(seed, int) else 0
    known = values or {}
    # a named estimator asked for without a lens reads these rows on the data's default lens
    # (binary for two classes), as calibration_error does; then every step sees that lens
    statistics = {
        key: (stat, _with_lens(stat, opts, p.shape[1])) for key, (stat, opts) in statistics.items()
    }
    memo_keys, found = _drawn_before(views, statistics, binary, n_resamples, seed, chunk)
    plans = {
        key: plan_for(stat, views, p_in, binary, dict(opts), est_seed, known.get(key))
        for key, (stat, opts) in statistics.items()
        if key not in found
    }
    dist = _draw(plans, check_rng(seed), n, n_resamples, chunk, progress)
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


def _with_lens(stat: Any, opts: Mapping[str, Any], k: int) -> Mapping[str, Any]:
    if isinstance(stat, str) and stat in ESTIMATORS and opts.get("lens") is None:
        return {**opts, "lens": ESTIMATORS.get(stat).lens_for(k)}
    return opts


def _drawn_before(
    views: Any,
    statistics: Mapping[str, tuple[Statistic, Mapping[str, Any]]],
    binary: bool,
    n_resamples: int,
    seed: Any,
    chunk: int,
) -> tuple[dict[str, tuple | None], dict[str, tuple]]:
    """Return each statistic's memo key and the distributions already drawn on these rows."""
    digest = array_digest(views.probs, views.labels) if isinstance(seed, int) else None
    memo_keys = {
        key: _distribution_key(digest, stat, opts, binary, n_resamples, seed, chunk)
        for key, (stat, opts) in statistics.items()
    }
    found = {key: DISTRIBUTIONS.get(k) for key, k in memo_keys.items() if k is not None}
    return memo_keys, {key: hit for key, hit in found.items() if hit is not None}


def _draw(
    plans: Mapping[str, Any],
    rng: np.random.Generator,
    n: int,
    n_resamples: int,
    chunk: int,
    progress: Any,
) -> dict[str, np.ndarray]:
    """Evaluate every plan on the same resamples, a chunk at a time: key → distribution."""
    dist = {key: np.empty(n_resamples) for key in plans}
    steps = max((plan.n_components for plan in plans.values()), default=0)
    done = 0
    for idx in chunks(rng, n, n_resamples if plans else 0, chunk):
        r = idx.shape[0]
        per = {key: np.empty((r, plan.n_components)) for key, plan in plans.items()}
        states: dict[str, dict[str, Any]] = {key: {} for key in plans}
        for c in range(steps):  # component-major: see core.inference.resampling.Plan
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
    return dist


def truth_values(
    calls: Mapping[str, Any],
    values: Mapping[str, float],
    evaluate: Callable[[Any], float],
) -> dict[str, float]:
    """Return the estimand of each call in the bootstrap world (the basic interval's pivot).

    Parameters
    ----------
    calls : mapping
        ``key -> EstimatorCall`` (:class:`core.inference.calibration.EstimatorCall`).
    values : mapping
        ``key -> value`` of those calls on the rows.
    evaluate : callable
        ``evaluate(call) -> value`` of another call on the same rows.

    Returns
    -------
    dict
        ``key -> value`` of each call's :meth:`~core.inference.calibration.EstimatorCall.truth_call`
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

    opts = dict(options)
    order = opts.pop("resample_order", None)
    try:
        if statistic in ESTIMATORS:
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
        :func:`core.inference.calibration.calibration_error`), a name in
        :data:`core.stats.scores.SCORES` (``"accuracy"``, ``"brier"``, ``"log-loss"``), or a
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
        Options of :func:`core.inference.calibration.calibration_error` (``binning``, ``n_bins``,
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
