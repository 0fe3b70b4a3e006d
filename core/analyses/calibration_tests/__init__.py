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

from core.analyses.calibration_tests import classical, kernel  # noqa: F401  (register the tests)
from core.analyses.calibration_tests.base import (
    BINARY_TEST_LENSES,
    KERNEL_TEST_LENSES,
    TESTS,
    CalibrationTestResult,
    TestInfo,
    check_resamples,
    conservative_pvalue,
)
from core.analyses.calibration_tests.kernel import (
    bound_biased,
    bound_unbiased,
    skce_uq_bootstrap_null,
)
from core.analyses.calibration_tests.run import calibration_test
from core.analyses.calibration_tests.simulation import TestErrorSimulation, simulate_test_errors
from core.analyses.calibration_tests.suite import (
    DEFAULT_SUITE,
    PAGE_ROW_WORK,
    TEST_RESAMPLES,
    TestSuiteResult,
    run_tests,
    slow_tests,
    test_settings,
)

__all__ = [
    "BINARY_TEST_LENSES",
    "DEFAULT_SUITE",
    "PAGE_ROW_WORK",
    "KERNEL_TEST_LENSES",
    "TESTS",
    "TEST_RESAMPLES",
    "CalibrationTestResult",
    "TestErrorSimulation",
    "TestInfo",
    "TestSuiteResult",
    "bound_biased",
    "bound_unbiased",
    "calibration_test",
    "check_resamples",
    "conservative_pvalue",
    "run_tests",
    "simulate_test_errors",
    "skce_uq_bootstrap_null",
    "slow_tests",
    "test_settings",
]
