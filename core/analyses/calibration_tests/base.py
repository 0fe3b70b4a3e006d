"""Shared pieces of the calibration tests: the :data:`TESTS` registry and the result type.

Test modules (:mod:`core.analyses.calibration_tests.kernel`, :mod:`core.analyses.calibration_tests.classical`) register their tests
here; :mod:`core.analyses.calibration_tests` imports them all and dispatches by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.base.errors import ConfigError
from core.base.registry import Entry, Registry
from core.base.validation import MAX_RESAMPLES, check_at_most


@dataclass(frozen=True, kw_only=True)
class TestInfo(Entry):
    """A calibration test; its func is ``func(probs, labels, *, lens, rng, **options)``.

    Attributes
    ----------
    kind : {"bound", "asymptotic", "resampling", "classical"}
        How the p-value is obtained.
    random : bool
        The p-value depends on the seed.
    quadratic : bool
        Quadratic cost in the number of rows.
    lenses : tuple of str
        Lenses it runs on.
    options : tuple of str
        Options it takes.
    assumptions : str
        What the p-value relies on, in one line.
    default_lens : str or None
        Its lens when none is given (None: binary for two classes, else top-label).
    binned : bool
        It tests a binned estimator (options ``estimator``, ``binning``, ``n_bins``, ...).
    power : str
        A caveat on its power, shown beside every p-value it gives ("" for none): a test
        that often misses real miscalibration, or a bound that is vacuous at common ``n``.
    estimator : str
        The registered estimator whose value on the test's lens is its statistic ("" when
        the statistic is no registered estimate), so tables that show both can say so.
    row_work : callable or None
        ``row_work(probs, labels, *, lens, **options)``: what the test costs on these
        predictions and options, in row draws' worth (about 33 ns each), by which a suite
        skips a test too slow for a page (:func:`~core.analyses.calibration_tests.run_tests`'s
        ``max_row_work``); None when its cost is bounded otherwise.
    reports_progress : bool
        Its function takes ``progress(fraction, message)``, called as the work goes on.
    """

    __test__ = False  # not a pytest test class

    kind: str
    random: bool
    quadratic: bool
    lenses: tuple[str, ...]
    options: tuple[str, ...]
    assumptions: str
    default_lens: str | None = None
    binned: bool = False
    power: str = ""
    estimator: str = ""
    row_work: Callable[..., int] | None = None
    reports_progress: bool = False


#: Tests of calibration.
TESTS: Registry[TestInfo] = Registry("calibration test", TestInfo)

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
    caveat : str
        What to keep in mind beside the p-value: the test's power caveat
        (:attr:`TestInfo.power`), and that a distribution-free bound at 1 is vacuous here.
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
    caveat: str = ""

    def reject(self, alpha: float = 0.05) -> bool:
        """Return whether "calibrated" is rejected at level ``alpha`` (``p ≤ alpha``)."""
        return bool(self.pvalue <= alpha)

    @property
    def label(self) -> str:
        """The test's human label."""
        return TESTS.get(self.test).label

    def to_record(self) -> dict[str, Any]:
        """Return the result as a JSON-ready record (the null distribution left out).

        Returns
        -------
        dict
            ``test, label, statistic, pvalue, pvalue_is_bound, method, assumptions, lens,
            n, n_resamples, mc_error, confidence_interval, details``.
        """
        return {
            "test": self.test,
            "label": self.label,
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "pvalue_is_bound": self.pvalue_is_bound,
            "method": self.method,
            "assumptions": self.assumptions,
            "lens": self.lens,
            "n": self.n,
            "n_resamples": self.n_resamples,
            "mc_error": self.mc_error,
            "confidence_interval": self.confidence_interval,
            "details": self.details,
        }


def make_result(
    test: str, *, lens: str, n: int, statistic: float, pvalue: float, method: str, **fields: Any
) -> CalibrationTestResult:
    """Return the result of the registered test ``test``.

    Its assumptions come from the registry, and its p-value is a bound exactly for the
    distribution-free tests (kind ``"bound"``).

    Parameters
    ----------
    test : str
        A name in :data:`TESTS`.
    lens, n, statistic, pvalue, method
        As in :class:`CalibrationTestResult`.
    **fields
        Its optional fields (``null_distribution``, ``details``, ...).

    Returns
    -------
    CalibrationTestResult
        The result.
    """
    info = TESTS.get(test)
    return CalibrationTestResult(
        test=test,
        statistic=statistic,
        pvalue=pvalue,
        pvalue_is_bound=info.kind == "bound",
        method=method,
        assumptions=info.assumptions,
        lens=lens,
        n=n,
        caveat=_caveat(info, pvalue),
        **fields,
    )


def _caveat(info: TestInfo, pvalue: float) -> str:
    """Return the test's power caveat, and for a bound at 1 that it is vacuous here."""
    if info.kind == "bound" and pvalue >= 1.0:
        return (
            "Vacuous here: the bound is 1, so it says nothing about these data (it needs a much "
            "larger n or a much larger error to reject). " + info.power
        ).strip()
    return info.power


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


def resampling_result(
    test: str,
    *,
    lens: str,
    n: int,
    statistic: float,
    resamples: np.ndarray,
    observed: float,
    method: str,
    details: dict[str, Any],
    null_distribution: np.ndarray | None = None,
) -> CalibrationTestResult:
    """Return the result of a resampling test, its p-value by :func:`conservative_pvalue`.

    Parameters
    ----------
    test, lens, n, statistic
        As in :func:`make_result`.
    resamples : numpy.ndarray
        The ``R`` resampled statistics ``T*``.
    observed : float
        The statistic ``T`` they are compared with (on their scale).
    method : str
        How the statistics were resampled; ``R`` and the p-value's formula are appended.
    details : dict
        Test-specific numbers; the count of ``T* ≥ T`` is added as ``exceedances``.
    null_distribution : numpy.ndarray, optional
        The null distribution on the scale of ``statistic`` (default ``resamples``).

    Returns
    -------
    CalibrationTestResult
        The result, with its Monte-Carlo error.
    """
    pv, se, hits = conservative_pvalue(resamples, observed)
    r = resamples.size
    return make_result(
        test,
        lens=lens,
        n=n,
        statistic=statistic,
        pvalue=pv,
        method=f"{method}, R = {r}, p = (1 + #{{T* ≥ T}})/(1 + R)",
        null_distribution=resamples if null_distribution is None else null_distribution,
        n_resamples=r,
        mc_error=se,
        details={**details, "exceedances": hits},
    )


def check_resamples(n_resamples: object) -> int:
    """Return ``n_resamples`` as a positive int or raise :class:`ConfigError`."""
    try:
        r = int(n_resamples)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        r = 0
    if r < 1 or r != n_resamples:
        raise ConfigError(f"n_resamples must be a positive integer; got {n_resamples!r}.")
    check_at_most("n_resamples", r, MAX_RESAMPLES)
    return r
