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
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core._validation import check_probs_labels, check_rng
from core.calibration_tests import classical, kernel  # noqa: F401  (register the tests)
from core.calibration_tests.base import (
    BINARY_TEST_LENSES,
    KERNEL_TEST_LENSES,
    TESTS,
    CalibrationTestResult,
    check_resamples,
    conservative_pvalue,
)
from core.calibration_tests.kernel import bound_biased, bound_unbiased, skce_uq_bootstrap_null
from core.errors import ConfigError, EstimationError
from core.estimators import kernel as kern
from core.lenses import LENSES

__all__ = [
    "BINARY_TEST_LENSES",
    "DEFAULT_SUITE",
    "KERNEL_TEST_LENSES",
    "TESTS",
    "CalibrationTestResult",
    "TestErrorSimulation",
    "TestSuiteResult",
    "bound_biased",
    "bound_unbiased",
    "calibration_test",
    "check_resamples",
    "conservative_pvalue",
    "run_tests",
    "simulate_test_errors",
    "skce_uq_bootstrap_null",
]


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
    allowed = entry.lenses
    if lens is None:
        lens = entry.default_lens or ("binary" if p.shape[1] == 2 else "top-label")
    LENSES.get(lens)
    if lens not in allowed:
        raise ConfigError(
            f"The {test!r} test runs on the {', '.join(allowed)} lens(es), not {lens!r}."
        )
    unknown = sorted(set(options) - set(entry.options))
    if unknown:
        raise ConfigError(
            f"Test {test!r} has no option(s) {', '.join(unknown)}; it accepts "
            f"{', '.join(entry.options) or 'none'}."
        )
    return entry.func(p, y, lens=lens, rng=check_rng(seed), **options)


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

    __test__ = False  # not a pytest test class

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

    __test__ = False  # not a pytest test class

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
        if "max_exact_n" in entry.options:
            opts["max_exact_n"] = max_exact_n
            if entry.quadratic and n > max_exact_n:
                skipped[name] = (
                    f"quadratic in n: {n:,} rows exceed max_exact_n = {max_exact_n:,}. Use the "
                    "linear (SKCE_ul) or block test, or raise the limit to run it."
                )
                continue
        if "n_resamples" in entry.options:
            opts["n_resamples"] = n_resamples
        if entry.binned:
            opts.update(consistency_options or {})
        test_lens = kernel_lens if entry.default_lens == "canonical" else lens
        try:
            results.append(
                calibration_test(p, y, test=name, lens=test_lens, seed=base_seed, **opts)
            )
        except (ConfigError, EstimationError) as exc:
            skipped[name] = str(exc)
    return TestSuiteResult(tuple(results), skipped)
