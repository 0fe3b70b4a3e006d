"""Kernel calibration tests (Widmann, Lindsten & Zachariah 2019; 2021).

- ``skce-bound-b``, ``skce-bound-uq``, ``skce-bound-ul``: distribution-free upper bounds of
  the p-value (McDiarmid / Hoeffding; valid for any ``n``, very conservative);
- ``skce-ul-asymptotic``: normal approximation of the linear estimator;
- ``skce-uq-bootstrap``: bootstrap of the degenerate U-statistic SKCE_uq (Arcones & Giné);
- ``skce-block``: z-test of the block estimator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from core.analyses.calibration_tests.base import (
    KERNEL_TEST_LENSES,
    TESTS,
    CalibrationTestResult,
    check_resamples,
    make_result,
    resampling_result,
)
from core.base.errors import EstimationError
from core.base.tails import norm_ppf, norm_sf
from core.base.validation import check_rng
from core.estimators import kernel as kern

_KERNEL_OPTS = ("kernel", "metric", "bandwidth", "max_exact_n")


def _kernel_setup(
    p: np.ndarray, y: np.ndarray, lens: str, rng: np.random.Generator, options: dict
) -> tuple[kern.KernelProblem, kern.KernelSpec, str]:
    prob = kern.lens_problems(p, y, lens, validated=True)[0]
    if prob.probs.shape[0] < 4:
        raise EstimationError("Kernel calibration tests need at least 4 rows.")
    spec, how = kern.spec_from_options(prob.probs, options, rng)
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


def _register_kernel_test(name: str, *, options: tuple[str, ...], **fields: Any) -> Any:
    """Register a kernel test: on the kernel lenses, canonical by default, with the kernel options."""
    return TESTS.register(
        name,
        lenses=KERNEL_TEST_LENSES,
        default_lens="canonical",
        options=(*_KERNEL_OPTS, *options),
        **fields,
    )


def _normal_upper_tail(value: float, sd: float, scale: float = 1.0) -> tuple[float, float]:
    """Return ``z = scale·value/sd`` and ``P[Z ≥ z]``; with ``sd = 0``, ``z = ±∞``."""
    if sd == 0.0:
        return (np.inf, 0.0) if value > 0 else (-np.inf, 1.0)
    z = float(scale * value / sd)
    return z, float(norm_sf(z))


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
        est = kern.skce_value(prob, spec, which, options)[0]
        n = prob.probs.shape[0]
        if which == "b":
            pv = bound_biased(est, n, spec.bound)
            method = "exp(−½·max(0, √(n·t/B) − 1)²) (McDiarmid)"
        else:
            pv = bound_unbiased(est, n, spec.bound, clip_negative=clip_negative)
            method = "exp(−⌊n/2⌋·t²/(2B²)) (Hoeffding)"
        return make_result(
            name,
            lens=lens,
            n=n,
            statistic=est,
            pvalue=pv,
            method=method,
            details=_kernel_details(spec, how, clip_negative=clip_negative),
        )

    return run


_BOUND_ASSUMPTIONS = "i.i.d. rows; bounded kernel (B = 2); valid for any n but very conservative"
for _which, _label in (("b", "SKCE_b"), ("uq", "SKCE_uq"), ("ul", "SKCE_ul")):
    _register_kernel_test(
        f"skce-bound-{_which}",
        label=f"Distribution-free bound ({_label})",
        description=f"Upper bound of the p-value of {_label} under calibration.",
        formula="Widmann et al. (2019), Lemma 2",
        kind="bound",
        random=False,
        quadratic=_which != "ul",
        options=("clip_negative",),
        assumptions=_BOUND_ASSUMPTIONS,
        estimator=f"skce-{_which}",
        power="A distribution-free bound: valid at any n but very conservative, so it "
        "rarely rejects before n is in the tens of thousands.",
    )(_bound_test(_which))


@_register_kernel_test(
    "skce-ul-asymptotic",
    label="Asymptotic test (SKCE_ul)",
    description="Normal approximation of the linear estimator: p = 1 − Φ(√⌊n/2⌋·t/σ̂).",
    formula="Widmann et al. (2019), Lemma 3",
    kind="asymptotic",
    random=False,
    quadratic=False,
    options=("ddof",),
    assumptions="i.i.d. rows in random order; ⌊n/2⌋ large enough for the CLT",
    estimator="skce-ul",
    power="Low power: it uses only ⌊n/2⌋ disjoint pairs of rows, so it often misses "
    "miscalibration the block test or the consistency test detects (Widmann et al. 2019).",
)
def _ul_asymptotic(p, y, *, lens, rng, ddof=0, **options) -> CalibrationTestResult:
    prob, spec, how = _kernel_setup(p, y, lens, rng, options)
    terms = kern.pair_terms(prob.probs, prob.labels, spec)
    k = terms.size
    t = float(terms.mean())
    sd = float(terms.std(ddof=int(ddof)))
    z, pv = _normal_upper_tail(t, sd, np.sqrt(k))
    return make_result(
        "skce-ul-asymptotic",
        lens=lens,
        n=prob.probs.shape[0],
        statistic=t,
        pvalue=pv,
        method=f"normal approximation, σ̂ with ddof={int(ddof)} over {k} pair terms",
        details=_kernel_details(spec, how, z=z, sigma=sd, n_pairs=k, ddof=int(ddof)),
    )


def _multinomial_counts(rng: np.random.Generator, n: int, r: int) -> np.ndarray:
    """``(r, n)`` counts of each row in ``r`` bootstrap resamples (offset ``bincount``s)."""
    out = np.empty((r, n))
    step = max(1, 2_000_000 // n)  # bounds the index buffer at ~16 MB
    for s in range(0, r, step):
        m = min(step, r - s)
        idx = rng.integers(0, n, size=(m, n))
        idx += (np.arange(m) * n)[:, None]
        out[s : s + m] = np.bincount(idx.ravel(), minlength=m * n).reshape(m, n)
    return out


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


@_register_kernel_test(
    "skce-uq-bootstrap",
    label="Bootstrap test (SKCE_uq)",
    description="Degenerate U-statistic SKCE_uq against its bootstrap null distribution.",
    formula="Widmann et al. (2019), Thm G.2 and App. G; Arcones & Giné (1992)",
    kind="resampling",
    random=True,
    quadratic=True,
    options=("n_resamples",),
    assumptions="i.i.d. rows; bootstrap approximation of the degenerate null law (large n)",
    estimator="skce-uq",
)
def _uq_bootstrap(p, y, *, lens, rng, n_resamples=1000, **options) -> CalibrationTestResult:
    prob, spec, how = _kernel_setup(p, y, lens, rng, options)
    n = prob.probs.shape[0]
    kern.check_exact_size(n, int(options.get("max_exact_n", kern.MAX_EXACT_N)), "The bootstrap")
    r = check_resamples(n_resamples)
    t_prime, s, skce_uq, skce_b = skce_uq_bootstrap_null(
        prob.probs, prob.labels, spec, n_resamples=r, rng=rng
    )
    return resampling_result(
        "skce-uq-bootstrap",
        lens=lens,
        n=n,
        statistic=skce_uq,
        resamples=t_prime,
        observed=s,
        method="bootstrap of the degenerate U-statistic",
        details=_kernel_details(spec, how, S=s, skce_b=skce_b),
        # on the SKCE_uq scale: T* / n = (n − 1)/n · (T′ + SKCE_b) approximates SKCE_uq's null law
        null_distribution=(n - 1) / n * (t_prime + skce_b),
    )


@_register_kernel_test(
    "skce-block",
    label="Block test (SKCE block)",
    description="z-test of the mean of per-block unbiased SKCE estimates.",
    formula="Widmann, Lindsten & Zachariah (2021), block estimator",
    kind="asymptotic",
    random=False,
    quadratic=False,
    options=("block_size", "confidence_level"),
    assumptions="i.i.d. rows in random order; enough blocks for the CLT",
    estimator="skce-block",
)
def _block(
    p, y, *, lens, rng, block_size=None, confidence_level=0.95, **options
) -> CalibrationTestResult:
    prob, spec, how = _kernel_setup(p, y, lens, rng, options)
    n = prob.probs.shape[0]
    bsz = int(block_size or kern.default_block_size(n))
    x = kern.block_terms(prob.probs, prob.labels, spec, bsz)
    if x.size < 2:
        raise EstimationError(
            f"The block test needs at least two blocks; n = {n} with block_size {bsz} gives "
            f"{x.size}. Use a smaller block size."
        )
    est = float(x.mean())
    se = float(x.std(ddof=1) / np.sqrt(x.size))
    z, pv = _normal_upper_tail(est, se)
    low = max(0.0, est - float(norm_ppf(confidence_level)) * se)
    return make_result(
        "skce-block",
        lens=lens,
        n=n,
        statistic=est,
        pvalue=pv,
        method=f"z-test over {x.size} blocks of {bsz} rows (standard error with ddof=1)",
        confidence_interval=(low, float("inf")),
        details=_kernel_details(
            spec, how, z=z, block_size=bsz, n_blocks=int(x.size), confidence_level=confidence_level
        ),
    )
