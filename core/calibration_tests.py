"""Statistical tests of "the model is calibrated": p-values instead of unitless errors.

A raw calibration error has no unit: 0.0003 may or may not be evidence of miscalibration
for a given data set. A p-value under the null hypothesis "the predictions are calibrated"
is interpretable on its own (Widmann, Lindsten & Zachariah 2019). Tests, all in
:data:`TESTS` and run through :func:`calibration_test`:

- ``skce-bound-b``, ``skce-bound-uq``, ``skce-bound-ul``: distribution-free upper bounds of
  the p-value of SKCE_b, SKCE_uq and SKCE_ul (McDiarmid / Hoeffding; valid for any ``n``,
  very conservative);
- ``skce-ul-asymptotic``: normal approximation of the linear estimator;
- ``skce-uq-bootstrap``: bootstrap of the degenerate U-statistic SKCE_uq (Arcones & Giné);
- ``skce-block``: z-test of the block estimator;
- ``consistency``: consistency resampling (Bröcker & Smith 2007) of any binned estimator;
- ``hosmer-lemeshow`` and ``spiegelhalter``: the classical binary tests, on the binary or
  top-label lens.

Resampling p-values are counted conservatively, ``(1 + #{T* ≥ T}) / (1 + R)``, and
reported with their Monte-Carlo standard error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

from core._validation import check_norm, check_probs_labels, check_rng
from core.binning import bin_indices, check_n_bins, check_tie_policy
from core.errors import ConfigError, EstimationError
from core.estimators import ESTIMATORS
from core.estimators import kernel as kern
from core.lenses import LENSES
from core.registry import Registry

#: Tests of calibration; each entry's func is ``func(probs, labels, *, lens, rng, **options)``.
TESTS: Registry = Registry("calibration test")

#: Lenses the kernel tests accept (one component each).
KERNEL_TEST_LENSES: tuple[str, ...] = ("canonical", "binary", "top-label")
#: Lenses of the classical binary tests.
BINARY_TEST_LENSES: tuple[str, ...] = ("binary", "top-label")


@dataclass(frozen=True, eq=False)
class CalibrationTestResult:
    """The outcome of one calibration test (scipy-style).

    Attributes
    ----------
    test : str
        Registered test name.
    statistic : float
        The observed statistic (an SKCE estimate, an ECE, χ² or Z).
    pvalue : float
        The p-value, or an upper bound of it when ``pvalue_is_bound``.
    pvalue_is_bound : bool
        True for the distribution-free tests: ``pvalue`` bounds the p-value from above.
    method : str
        How the p-value was obtained, in one line.
    assumptions : str
        What the p-value relies on, in one line.
    lens : str
        The lens the test ran on.
    n : int
        Number of rows.
    null_distribution : numpy.ndarray or None
        Simulated statistics under the null (resampling tests), on the statistic's scale.
    n_resamples : int or None
        Number of resamples ``R``.
    mc_error : float or None
        Monte-Carlo standard error of a resampled p-value, ``√(p(1 − p)/R)``.
    confidence_interval : tuple of float or None
        One-sided interval of the estimated quantity, where the test gives one.
    details : dict
        Test-specific numbers (bandwidth, degrees of freedom, exceedances, ...).
    """

    test: str
    statistic: float
    pvalue: float
    pvalue_is_bound: bool
    method: str
    assumptions: str
    lens: str
    n: int
    null_distribution: np.ndarray | None = None
    n_resamples: int | None = None
    mc_error: float | None = None
    confidence_interval: tuple[float, float] | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def reject(self, alpha: float = 0.05) -> bool:
        """Return whether "calibrated" is rejected at level ``alpha`` (``p ≤ alpha``)."""
        return bool(self.pvalue <= alpha)

    @property
    def label(self) -> str:
        """The test's human label."""
        return TESTS.get(self.test).label


def calibration_test(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    test: str = "skce-ul-asymptotic",
    lens: str | None = None,
    seed: int | np.random.Generator | None = None,
    **options: Any,
) -> CalibrationTestResult:
    """Test the null hypothesis that the predictions are calibrated.

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like
        Class indices ``0..K−1``.
    test : str
        A name in :data:`TESTS` (see the module docstring).
    lens : str, optional
        Kernel tests: ``"canonical"`` (default; the full vector, strong calibration),
        ``"binary"`` or ``"top-label"``. Other tests: ``"binary"`` for two classes,
        otherwise ``"top-label"`` by default; ``consistency`` also takes ``"classwise"``.
    seed : int, Generator or None
        Randomness of resampling tests (``None`` means seed 0).
    **options
        Test options. Kernel tests: ``kernel``, ``metric``, ``bandwidth`` (``"median"``),
        ``max_exact_n``; ``clip_negative`` (bounds, default True: a bound of 1 for a
        negative unbiased estimate); ``ddof`` (linear test, default 0 as in the paper);
        ``n_resamples`` (bootstrap, consistency; default 1000); ``block_size`` (block
        test). Consistency: ``estimator``, ``binning``, ``n_bins``, ``norm``,
        ``tie_policy``. Hosmer–Lemeshow: ``n_groups`` (10), ``fitted`` (False).

    Returns
    -------
    CalibrationTestResult
        Statistic, p-value (or bound), method and, for resampling tests, the null
        distribution.

    Raises
    ------
    ConfigError
        For unknown tests, lenses or options.
    EstimationError
        When the data cannot support the test (too few rows, degenerate predictions).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet(np.ones(3), 400)
    >>> y = (rng.random(400)[:, None] > p.cumsum(1)).sum(1)
    >>> r = calibration_test(p, y, test="skce-ul-asymptotic")
    >>> bool(0 <= r.pvalue <= 1)
    True
    """
    entry = TESTS.get(test)
    p, y = check_probs_labels(probs, labels)
    allowed = entry.meta["lenses"]
    if lens is None:
        lens = entry.meta.get("default_lens") or ("binary" if p.shape[1] == 2 else "top-label")
    LENSES.get(lens)
    if lens not in allowed:
        raise ConfigError(
            f"The {test!r} test runs on the {', '.join(allowed)} lens(es), not {lens!r}."
        )
    unknown = sorted(set(options) - set(entry.meta["options"]))
    if unknown:
        raise ConfigError(
            f"Test {test!r} has no option(s) {', '.join(unknown)}; it accepts "
            f"{', '.join(entry.meta['options']) or 'none'}."
        )
    return entry.func(p, y, lens=lens, rng=check_rng(seed), **options)


def conservative_pvalue(null: np.ndarray, observed: float) -> tuple[float, float, int]:
    """Return ``((1 + #{T* ≥ T}) / (1 + R), Monte-Carlo SE, #exceedances)``.

    Parameters
    ----------
    null : numpy.ndarray
        ``R`` resampled statistics.
    observed : float
        The observed statistic ``T``.

    Returns
    -------
    tuple
        p-value, its standard error ``√(p(1 − p)/R)`` and the count of ``T* ≥ T``.
    """
    r = null.size
    hits = int(np.count_nonzero(null >= observed))
    pv = (1.0 + hits) / (1.0 + r)
    return pv, float(np.sqrt(pv * (1.0 - pv) / r)), hits


# ----------------------------------------------------------------- kernel tests

_KERNEL_OPTS = ("kernel", "metric", "bandwidth", "max_exact_n")


def _kernel_setup(
    p: np.ndarray, y: np.ndarray, lens: str, rng: np.random.Generator, options: dict
) -> tuple[kern.KernelProblem, kern.KernelSpec, str]:
    prob = kern.lens_problems(p, y, lens, validated=True)[0]
    if prob.probs.shape[0] < 4:
        raise EstimationError("Kernel calibration tests need at least 4 rows.")
    spec, how = kern.make_spec(
        prob.probs,
        kernel=options.get("kernel", "laplacian"),
        metric=options.get("metric", "tv"),
        bandwidth=options.get("bandwidth", "median"),
        max_exact_n=int(options.get("max_exact_n", kern.MAX_EXACT_N)),
        rng=rng,
    )
    return prob, spec, how


def _kernel_details(spec: kern.KernelSpec, how: str, **extra: Any) -> dict[str, Any]:
    return {
        "kernel": spec.kernel,
        "metric": spec.metric,
        "bandwidth": spec.bandwidth,
        "bandwidth_rule": how,
        "bound_B": spec.bound,
        **extra,
    }


def bound_biased(t: float, n: int, bound: float) -> float:
    """Distribution-free bound of ``P[SKCE_b ≥ t]``: ``exp(−½ max(0, √(n t/B) − 1)²)``.

    Parameters
    ----------
    t : float
        Observed SKCE_b.
    n : int
        Rows.
    bound : float
        ``B = 2·sup|κ|``.

    Returns
    -------
    float
        The bound (Widmann et al. 2019, Lemma 2).
    """
    s = max(0.0, float(np.sqrt(max(n * t / bound, 0.0))) - 1.0)
    return float(np.exp(-0.5 * s * s))


def bound_unbiased(t: float, n: int, bound: float, *, clip_negative: bool = True) -> float:
    """Distribution-free bound of ``P[T ≥ t]`` for SKCE_uq and SKCE_ul.

    ``exp(−⌊n/2⌋ t² / (2B²))``, derived for ``t > 0``.

    Parameters
    ----------
    t : float
        Observed unbiased estimate.
    n : int
        Rows.
    bound : float
        ``B = 2·sup|κ|``.
    clip_negative : bool
        Return 1 for ``t ≤ 0`` (default). False applies the formula to negative ``t``
        too, as the paper's code did (to reproduce its numbers).

    Returns
    -------
    float
        The bound.
    """
    if t <= 0 and clip_negative:
        return 1.0
    return float(np.exp(-(n // 2) * (t / bound) ** 2 / 2.0))


def _bound_test(which: str) -> Callable[..., CalibrationTestResult]:
    name = f"skce-bound-{which}"

    def run(p, y, *, lens, rng, clip_negative=True, **options) -> CalibrationTestResult:
        prob, spec, how = _kernel_setup(p, y, lens, rng, options)
        est = kern._skce_value(prob, spec, which, options)[0]
        n = prob.probs.shape[0]
        if which == "b":
            pv = bound_biased(est, n, spec.bound)
            method = "exp(−½·max(0, √(n·t/B) − 1)²) (McDiarmid)"
        else:
            pv = bound_unbiased(est, n, spec.bound, clip_negative=clip_negative)
            method = "exp(−⌊n/2⌋·t²/(2B²)) (Hoeffding)"
        return CalibrationTestResult(
            test=name,
            statistic=est,
            pvalue=pv,
            pvalue_is_bound=True,
            method=method,
            assumptions=TESTS.get(name).meta["assumptions"],
            lens=lens,
            n=n,
            details=_kernel_details(spec, how, clip_negative=clip_negative),
        )

    return run


_BOUND_ASSUMPTIONS = "i.i.d. rows; bounded kernel (B = 2); valid for any n but very conservative"
for _which, _label in (("b", "SKCE_b"), ("uq", "SKCE_uq"), ("ul", "SKCE_ul")):
    TESTS.register(
        f"skce-bound-{_which}",
        label=f"Distribution-free bound ({_label})",
        description=f"Upper bound of the p-value of {_label} under calibration.",
        formula="Widmann et al. (2019), Lemma 2",
        kind="bound",
        random=False,
        quadratic=_which != "ul",
        lenses=KERNEL_TEST_LENSES,
        default_lens="canonical",
        options=(*_KERNEL_OPTS, "clip_negative"),
        assumptions=_BOUND_ASSUMPTIONS,
    )(_bound_test(_which))


@TESTS.register(
    "skce-ul-asymptotic",
    label="Asymptotic test (SKCE_ul)",
    description="Normal approximation of the linear estimator: p = 1 − Φ(√⌊n/2⌋·t/σ̂).",
    formula="Widmann et al. (2019), Lemma 3",
    kind="asymptotic",
    random=False,
    quadratic=False,
    lenses=KERNEL_TEST_LENSES,
    default_lens="canonical",
    options=(*_KERNEL_OPTS, "ddof"),
    assumptions="i.i.d. rows in random order; ⌊n/2⌋ large enough for the CLT",
)
def _ul_asymptotic(p, y, *, lens, rng, ddof=0, **options) -> CalibrationTestResult:
    prob, spec, how = _kernel_setup(p, y, lens, rng, options)
    terms = kern.pair_terms(prob.probs, prob.labels, spec)
    k = terms.size
    t = float(terms.mean())
    sd = float(terms.std(ddof=int(ddof)))
    if sd == 0.0:
        pv = 1.0 if t <= 0 else 0.0
        z = np.inf if t > 0 else -np.inf
    else:
        z = float(np.sqrt(k) * t / sd)
        pv = float(stats.norm.sf(z))
    return CalibrationTestResult(
        test="skce-ul-asymptotic",
        statistic=t,
        pvalue=pv,
        pvalue_is_bound=False,
        method=f"normal approximation, σ̂ with ddof={int(ddof)} over {k} pair terms",
        assumptions=TESTS.get("skce-ul-asymptotic").meta["assumptions"],
        lens=lens,
        n=prob.probs.shape[0],
        details=_kernel_details(spec, how, z=z, sigma=sd, n_pairs=k, ddof=int(ddof)),
    )


def _multinomial_counts(rng: np.random.Generator, n: int, r: int) -> np.ndarray:
    """``(r, n)`` counts of each row in ``r`` bootstrap resamples (one ``bincount``)."""
    idx = rng.integers(0, n, size=(r, n))
    idx += (np.arange(r) * n)[:, None]
    return np.bincount(idx.ravel(), minlength=r * n).reshape(r, n).astype(np.float64)


def skce_uq_bootstrap_null(
    probs: np.ndarray,
    labels: np.ndarray,
    spec: kern.KernelSpec,
    *,
    n_resamples: int = 1000,
    rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, float, float]:
    """Bootstrap null distribution of SKCE_uq, never holding the ``n × n`` matrix.

    Each resample is a count vector ``c``; the statistic of Arcones & Giné's degenerate
    bootstrap is ``T′ = [n/(n−1)·(cᵀHc − cᵀd) − 2·cᵀH1] / n²`` (``d = diag H``), to be
    compared with ``S = n/(n−1)·SKCE_uq − SKCE_b``. All ``R`` resamples share one tiled
    pass over ``H``: the tile products accumulate ``CH`` (``R × n``).

    Parameters
    ----------
    probs, labels : numpy.ndarray
        ``(n, K)`` predictions and labels.
    spec : KernelSpec
        The kernel.
    n_resamples : int
        ``R``.
    rng : numpy.random.Generator
        Draws the resamples.

    Returns
    -------
    tuple
        ``(T′ (R,), S, SKCE_uq, SKCE_b)``.
    """
    gen = check_rng(rng)
    n = probs.shape[0]
    c = _multinomial_counts(gen, n, int(n_resamples))
    e = kern.residuals(probs, labels)
    ch = np.zeros_like(c)
    h1 = np.zeros(n)
    for ra, rc, h, diag in kern.iter_h_tiles(probs, e, spec):
        ch[:, rc] += c[:, ra] @ h
        h1[ra] += h.sum(axis=1)
        if not diag:
            ch[:, ra] += c[:, rc] @ h.T
            h1[rc] += h.sum(axis=0)
    d = spec.scale * np.einsum("ij,ij->i", e, e)
    total = float(h1.sum())
    skce_b = total / n**2
    skce_uq = (total - float(d.sum())) / (n * (n - 1))
    quad = np.einsum("ij,ij->i", c, ch)
    t_prime = (n / (n - 1) * (quad - c @ d) - 2.0 * (c @ h1)) / n**2
    s = n / (n - 1) * skce_uq - skce_b
    return t_prime, s, skce_uq, skce_b


@TESTS.register(
    "skce-uq-bootstrap",
    label="Bootstrap test (SKCE_uq)",
    description="Degenerate U-statistic SKCE_uq against its bootstrap null distribution.",
    formula="Widmann et al. (2019), Thm G.2 and App. G; Arcones & Giné (1992)",
    kind="resampling",
    random=True,
    quadratic=True,
    lenses=KERNEL_TEST_LENSES,
    default_lens="canonical",
    options=(*_KERNEL_OPTS, "n_resamples"),
    assumptions="i.i.d. rows; bootstrap approximation of the degenerate null law (large n)",
)
def _uq_bootstrap(p, y, *, lens, rng, n_resamples=1000, **options) -> CalibrationTestResult:
    prob, spec, how = _kernel_setup(p, y, lens, rng, options)
    n = prob.probs.shape[0]
    kern.check_exact_size(n, int(options.get("max_exact_n", kern.MAX_EXACT_N)), "The bootstrap")
    r = _check_resamples(n_resamples)
    t_prime, s, skce_uq, skce_b = skce_uq_bootstrap_null(
        prob.probs, prob.labels, spec, n_resamples=r, rng=rng
    )
    pv, se, hits = conservative_pvalue(t_prime, s)
    # on the SKCE_uq scale: T* / n = (n − 1)/n · (T′ + SKCE_b) approximates SKCE_uq's null law
    null = (n - 1) / n * (t_prime + skce_b)
    return CalibrationTestResult(
        test="skce-uq-bootstrap",
        statistic=skce_uq,
        pvalue=pv,
        pvalue_is_bound=False,
        method=f"bootstrap of the degenerate U-statistic, R = {r}, p = (1 + #{{T* ≥ T}})/(1 + R)",
        assumptions=TESTS.get("skce-uq-bootstrap").meta["assumptions"],
        lens=lens,
        n=n,
        null_distribution=null,
        n_resamples=r,
        mc_error=se,
        details=_kernel_details(spec, how, exceedances=hits, S=s, skce_b=skce_b),
    )


@TESTS.register(
    "skce-block",
    label="Block test (SKCE block)",
    description="z-test of the mean of per-block unbiased SKCE estimates.",
    formula="Widmann, Lindsten & Zachariah (2021), block estimator",
    kind="asymptotic",
    random=False,
    quadratic=False,
    lenses=KERNEL_TEST_LENSES,
    default_lens="canonical",
    options=(*_KERNEL_OPTS, "block_size", "level"),
    assumptions="i.i.d. rows in random order; enough blocks for the CLT",
)
def _block(p, y, *, lens, rng, block_size=None, level=0.95, **options) -> CalibrationTestResult:
    prob, spec, how = _kernel_setup(p, y, lens, rng, options)
    n = prob.probs.shape[0]
    bsz = int(block_size or max(2, int(np.sqrt(n))))
    x = kern.block_terms(prob.probs, prob.labels, spec, bsz)
    if x.size < 2:
        raise EstimationError(
            f"The block test needs at least two blocks; n = {n} with block_size {bsz} gives "
            f"{x.size}. Use a smaller block size."
        )
    est = float(x.mean())
    se = float(x.std(ddof=1) / np.sqrt(x.size))
    if se == 0.0:
        z = np.inf if est > 0 else -np.inf
        pv = 0.0 if est > 0 else 1.0
    else:
        z = est / se
        pv = float(stats.norm.sf(z))
    low = max(0.0, est - float(stats.norm.ppf(level)) * se)
    return CalibrationTestResult(
        test="skce-block",
        statistic=est,
        pvalue=pv,
        pvalue_is_bound=False,
        method=f"z-test over {x.size} blocks of {bsz} rows (standard error with ddof=1)",
        assumptions=TESTS.get("skce-block").meta["assumptions"],
        lens=lens,
        n=n,
        confidence_interval=(low, float("inf")),
        details=_kernel_details(spec, how, z=z, block_size=bsz, n_blocks=int(x.size), level=level),
    )


# ----------------------------------------------------------------- consistency resampling


def _check_resamples(n_resamples: object) -> int:
    try:
        r = int(n_resamples)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        r = 0
    if r < 1 or r != n_resamples:
        raise ConfigError(f"n_resamples must be a positive integer; got {n_resamples!r}.")
    return r


def _fast_plugin_null(
    p: np.ndarray,
    lens: str,
    n_bins: int,
    norm: float,
    r: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Consistency null of the equal-width plug-in estimator on a one-component lens.

    Bins do not depend on the sample here, so each resample is a ``bincount`` of
    (resample, bin) pairs; the redrawn outcome is Bernoulli(score) on these lenses.
    """
    from core.estimators.base import plugin_from_stats

    n = p.shape[0]
    scores = p[:, 1] if lens == "binary" else p.max(axis=1)
    idx, edges = bin_indices(scores, binning="equal-width", n_bins=n_bins)
    b = edges.size - 1
    out = np.empty(r)
    step = max(1, 4_000_000 // n)
    for s in range(0, r, step):
        m = min(step, r - s)
        rows = rng.integers(0, n, size=(m, n))
        outcome = rng.random((m, n)) < scores[rows]
        key = (idx[rows] + (np.arange(m) * b)[:, None]).ravel()
        counts = np.bincount(key, minlength=m * b).reshape(m, b)
        ssum = np.bincount(key, weights=scores[rows].ravel(), minlength=m * b).reshape(m, b)
        lsum = np.bincount(key, weights=outcome.ravel(), minlength=m * b).reshape(m, b)
        out[s : s + m] = plugin_from_stats(counts, ssum, lsum, norm)
    return out


def _resampled_labels(cdf: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    k = cdf.shape[1]
    u = rng.random(rows.size)[:, None] * cdf[rows, -1:]
    return np.minimum((u >= cdf[rows]).sum(axis=1), k - 1).astype(np.int64)


@TESTS.register(
    "consistency",
    label="Consistency resampling",
    description="Resample predictions with replacement, redraw labels from them, and compare "
    "the binned estimate with its resampled distribution.",
    formula="Bröcker & Smith (2007); Vaicenavicius et al. (2019); Widmann et al. (2019) §4.4",
    kind="resampling",
    random=True,
    quadratic=False,
    lenses=("binary", "top-label", "classwise"),
    options=("estimator", "binning", "n_bins", "norm", "tie_policy", "n_resamples"),
    assumptions="i.i.d. rows; known to reject too often with many or fine bins",
)
def _consistency(
    p,
    y,
    *,
    lens,
    rng,
    estimator="plugin",
    binning="equal-width",
    n_bins=15,
    norm=1,
    tie_policy="split",
    n_resamples=1000,
) -> CalibrationTestResult:
    entry = ESTIMATORS.get(estimator)
    if not entry.meta.get("binned"):
        raise ConfigError(
            f"Consistency resampling runs on a binned estimator; {estimator!r} is not one. "
            f"Choose one of {', '.join(ESTIMATORS.names(binned=True))}."
        )
    p_norm = check_norm(norm)
    if p_norm not in entry.meta.get("norms", ()):
        raise ConfigError(f"Estimator {estimator!r} does not support norm {norm!r}.")
    if lens not in entry.meta.get("lenses", ()):
        raise ConfigError(f"Estimator {estimator!r} does not support the {lens!r} lens.")
    r = _check_resamples(n_resamples)
    kw = {
        "lens": lens,
        "norm": p_norm,
        "binning": binning,
        "n_bins": check_n_bins(n_bins),
        "tie_policy": check_tie_policy(tie_policy),
        "class_weights": None,
        "class_names": None,
    }
    t = float(entry.func(p, y, rng=np.random.default_rng(0), **kw).value)
    fast = estimator == "plugin" and binning == "equal-width" and lens in BINARY_TEST_LENSES
    if fast:
        null = _fast_plugin_null(p, lens, kw["n_bins"], p_norm, r, rng)
    else:
        n = p.shape[0]
        cdf = np.cumsum(p, axis=1)
        null = np.empty(r)
        for i in range(r):  # one vectorised estimator call per resample
            rows = rng.integers(0, n, size=n)
            y_star = _resampled_labels(cdf, rows, rng)
            null[i] = entry.func(p[rows], y_star, rng=rng, **kw).value
    pv, se, hits = conservative_pvalue(null, t)
    return CalibrationTestResult(
        test="consistency",
        statistic=t,
        pvalue=pv,
        pvalue_is_bound=False,
        method=f"consistency resampling of {entry.label}, R = {r}, p = (1 + #{{T* ≥ T}})/(1 + R)",
        assumptions=TESTS.get("consistency").meta["assumptions"],
        lens=lens,
        n=p.shape[0],
        null_distribution=null,
        n_resamples=r,
        mc_error=se,
        details={
            "estimator": estimator,
            "binning": binning,
            "n_bins": kw["n_bins"],
            "norm": p_norm,
            "exceedances": hits,
            "vectorised": fast,
        },
    )


# ----------------------------------------------------------------- classical binary tests


def _binary_view(p: np.ndarray, y: np.ndarray, lens: str) -> tuple[np.ndarray, np.ndarray]:
    prob = kern.lens_problems(p, y, lens, validated=True)[0]
    return prob.probs[:, 1], prob.labels.astype(np.float64)


@TESTS.register(
    "hosmer-lemeshow",
    label="Hosmer–Lemeshow",
    description="χ² over equal-mass risk groups: Σ (O − E)² / (E(1 − E/n_g)).",
    formula="Hosmer & Lemeshow (1980)",
    kind="classical",
    random=False,
    quadratic=False,
    lenses=BINARY_TEST_LENSES,
    options=("n_groups", "fitted"),
    assumptions="independent rows; expected counts per group not too small (χ² approximation)",
)
def _hosmer_lemeshow(p, y, *, lens, rng, n_groups=10, fitted=False) -> CalibrationTestResult:
    s, o = _binary_view(p, y, lens)
    g = check_n_bins(n_groups)
    idx, _edges = bin_indices(s, binning="equal-mass", n_bins=g)
    counts = np.bincount(idx, minlength=g).astype(np.float64)
    expected = np.bincount(idx, weights=s, minlength=g)
    observed = np.bincount(idx, weights=o, minlength=g)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = expected * (1.0 - expected / counts)
    used = (counts > 0) & (var > 0)
    stat = float(np.sum((observed[used] - expected[used]) ** 2 / var[used]))
    dof = int(used.sum()) - (2 if fitted else 0)
    if dof < 1:
        raise EstimationError(
            f"Hosmer–Lemeshow needs at least {3 if fitted else 1} groups with variance; "
            f"these scores give {int(used.sum())}. Use more rows or fewer ties."
        )
    pv = float(stats.chi2.sf(stat, dof))
    return CalibrationTestResult(
        test="hosmer-lemeshow",
        statistic=stat,
        pvalue=pv,
        pvalue_is_bound=False,
        method=f"χ² with {dof} degrees of freedom ({'G − 2, fitted on these data' if fitted else 'G, held-out data'})",
        assumptions=TESTS.get("hosmer-lemeshow").meta["assumptions"],
        lens=lens,
        n=s.size,
        details={
            "dof": dof,
            "n_groups": int(used.sum()),
            "group_counts": counts,
            "observed": observed,
            "expected": expected,
        },
    )


@TESTS.register(
    "spiegelhalter",
    label="Spiegelhalter's Z",
    description="Z = Σ (y − p)(1 − 2p) / √Σ (1 − 2p)² p(1 − p); two-sided normal p-value.",
    formula="Spiegelhalter (1986)",
    kind="classical",
    random=False,
    quadratic=False,
    lenses=BINARY_TEST_LENSES,
    options=(),
    assumptions="independent rows; normal approximation of a sum (large n)",
)
def _spiegelhalter(p, y, *, lens, rng) -> CalibrationTestResult:
    s, o = _binary_view(p, y, lens)
    w = 1.0 - 2.0 * s
    var = float(np.sum(w * w * s * (1.0 - s)))
    if var <= 0.0:
        raise EstimationError(
            "Spiegelhalter's Z is undefined when every score is 0, ½ or 1 (zero variance)."
        )
    z = float(np.sum((o - s) * w) / np.sqrt(var))
    return CalibrationTestResult(
        test="spiegelhalter",
        statistic=z,
        pvalue=float(2.0 * stats.norm.sf(abs(z))),
        pvalue_is_bound=False,
        method="two-sided normal approximation",
        assumptions=TESTS.get("spiegelhalter").meta["assumptions"],
        lens=lens,
        n=s.size,
        details={"variance": var},
    )


# ----------------------------------------------------------------- simulation (teaching)


@dataclass(frozen=True, eq=False)
class TestErrorSimulation:
    """Empirical test error against the significance level on simulated data sets.

    Attributes
    ----------
    pvalues : dict of str to numpy.ndarray
        p-values (or bounds) of each test over the simulated data sets.
    alphas : numpy.ndarray
        Significance levels of the curves.
    calibrated : bool
        True when the generator is calibrated: the curves are type-I errors
        ``P[p ≤ α]``; otherwise type-II errors ``P[p > α]``.
    n : int
        Rows per data set.
    n_datasets : int
        Number of data sets.
    """

    pvalues: dict[str, np.ndarray]
    alphas: np.ndarray
    calibrated: bool
    n: int
    n_datasets: int

    def to_frame(self) -> pd.DataFrame:
        """Return a long DataFrame ``test, alpha, error`` (one row per test and level)."""
        rows = []
        for name, pv in self.pvalues.items():
            below = (pv[None, :] <= self.alphas[:, None]).mean(axis=1)
            err = below if self.calibrated else 1.0 - below
            rows.append(pd.DataFrame({"test": name, "alpha": self.alphas, "error": err}))
        return pd.concat(rows, ignore_index=True)


def simulate_test_errors(
    tests: Sequence[str],
    sampler: Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray]],
    *,
    n: int = 250,
    n_datasets: int = 200,
    calibrated: bool = True,
    seed: int | np.random.Generator | None = None,
    alphas: ArrayLike | None = None,
    test_options: dict[str, dict[str, Any]] | None = None,
) -> TestErrorSimulation:
    """Run tests on many simulated data sets (the paper's Figure 2).

    Parameters
    ----------
    tests : sequence of str
        Names in :data:`TESTS`.
    sampler : callable
        ``sampler(n, rng) -> (probs, labels)``, e.g. ``DirichletWorld(...).sample``.
    n : int
        Rows per data set.
    n_datasets : int
        Number of data sets.
    calibrated : bool
        Whether the sampler is calibrated (type-I vs type-II curves).
    seed : int, Generator or None
        Seed of the whole simulation.
    alphas : array_like, optional
        Levels; default ``0, 0.01, …, 1``.
    test_options : dict, optional
        Per-test options, e.g. ``{"skce-uq-bootstrap": {"n_resamples": 200}}``.

    Returns
    -------
    TestErrorSimulation
        p-values and error curves.
    """
    for name in tests:
        TESTS.get(name)
    gen = check_rng(seed)
    opts = test_options or {}
    out = {name: np.empty(int(n_datasets)) for name in tests}
    for i in range(int(n_datasets)):
        probs, labels = sampler(int(n), gen)
        for name in tests:
            out[name][i] = calibration_test(
                probs, labels, test=name, seed=gen, **opts.get(name, {})
            ).pvalue
    grid = np.round(np.linspace(0, 1, 101), 2) if alphas is None else np.asarray(alphas, float)
    return TestErrorSimulation(out, grid, bool(calibrated), int(n), int(n_datasets))


# ----------------------------------------------------------------- a suite of tests (pages, reports)

#: Every test, in the order a report lists them.
DEFAULT_SUITE: tuple[str, ...] = (
    "skce-ul-asymptotic",
    "skce-uq-bootstrap",
    "skce-block",
    "skce-bound-b",
    "skce-bound-uq",
    "skce-bound-ul",
    "consistency",
    "hosmer-lemeshow",
    "spiegelhalter",
)


@dataclass(frozen=True, eq=False)
class TestSuiteResult:
    """Several calibration tests on the same predictions.

    Attributes
    ----------
    results : tuple of CalibrationTestResult
        One per test that ran.
    skipped : dict of str to str
        Tests that did not run, with the reason (e.g. a quadratic test above
        ``max_exact_n`` rows, with the linear and block tests offered instead).
    """

    results: tuple[CalibrationTestResult, ...]
    skipped: dict[str, str]

    def to_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """Return one row per test: statistic, p-value or bound, decision at ``alpha``.

        Parameters
        ----------
        alpha : float
            Significance level of the ``reject`` column.

        Returns
        -------
        pandas.DataFrame
            Columns ``test, label, statistic, pvalue, bound, reject, mc_error, method,
            assumptions, lens``.
        """
        return pd.DataFrame(
            [
                {
                    "test": r.test,
                    "label": r.label,
                    "statistic": r.statistic,
                    "pvalue": r.pvalue,
                    "bound": r.pvalue_is_bound,
                    "reject": r.reject(alpha),
                    "mc_error": r.mc_error,
                    "method": r.method,
                    "assumptions": r.assumptions,
                    "lens": r.lens,
                }
                for r in self.results
            ],
            columns=[
                "test", "label", "statistic", "pvalue", "bound", "reject", "mc_error",
                "method", "assumptions", "lens",
            ],
        )  # fmt: skip

    def get(self, test: str) -> CalibrationTestResult | None:
        """Return the result of ``test``, or ``None`` if it did not run."""
        return next((r for r in self.results if r.test == test), None)


def run_tests(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    tests: Sequence[str] = DEFAULT_SUITE,
    kernel_lens: str = "canonical",
    lens: str | None = None,
    seed: int | np.random.Generator | None = None,
    n_resamples: int = 1000,
    max_exact_n: int = kern.MAX_EXACT_N,
    consistency_options: dict[str, Any] | None = None,
) -> TestSuiteResult:
    """Run several calibration tests; quadratic ones are skipped (not replaced) when too large.

    Parameters
    ----------
    probs, labels : array_like
        Predictions and labels.
    tests : sequence of str
        Names in :data:`TESTS`.
    kernel_lens : str
        Lens of the kernel tests (``"canonical"``, ``"binary"`` or ``"top-label"``).
    lens : str, optional
        Lens of the other tests (default ``"binary"`` for two classes, else ``"top-label"``).
    seed : int, Generator or None
        Seed of the resampling tests (each test gets the same seed).
    n_resamples : int
        Resamples of the bootstrap and consistency tests.
    max_exact_n : int
        Above this many rows the quadratic tests are skipped with a note naming the
        linear and block tests; raise it to run them anyway.
    consistency_options : dict, optional
        ``estimator``, ``binning``, ``n_bins``, ``norm``, ``tie_policy`` of the
        consistency test.

    Returns
    -------
    TestSuiteResult
        The results and the skipped tests with reasons.
    """
    p, y = check_probs_labels(probs, labels)
    n = p.shape[0]
    base_seed = seed if isinstance(seed, np.random.Generator) else (0 if seed is None else seed)
    results, skipped = [], {}
    for name in tests:
        entry = TESTS.get(name)
        opts: dict[str, Any] = {}
        if "max_exact_n" in entry.meta["options"]:
            opts["max_exact_n"] = max_exact_n
            if entry.meta.get("quadratic") and n > max_exact_n:
                skipped[name] = (
                    f"quadratic in n: {n:,} rows exceed max_exact_n = {max_exact_n:,}. Use the "
                    "linear (SKCE_ul) or block test, or raise the limit to run it."
                )
                continue
        if "n_resamples" in entry.meta["options"]:
            opts["n_resamples"] = n_resamples
        if name == "consistency":
            opts.update(consistency_options or {})
        test_lens = kernel_lens if entry.meta.get("default_lens") == "canonical" else lens
        try:
            results.append(
                calibration_test(p, y, test=name, lens=test_lens, seed=base_seed, **opts)
            )
        except (ConfigError, EstimationError) as exc:
            skipped[name] = str(exc)
    return TestSuiteResult(tuple(results), skipped)
