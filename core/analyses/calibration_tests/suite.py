"""Several calibration tests on the same predictions: :func:`run_tests` (pages, reports)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from core.analyses.analysis import check_config
from core.analyses.calibration_tests.base import TESTS, CalibrationTestResult
from core.analyses.calibration_tests.run import calibration_test
from core.base.errors import ConfigError, EstimationError, arg, render
from core.base.numbers import format_duration
from core.base.options import N_TEST_RESAMPLES
from core.data import as_predictions
from core.estimators import ESTIMATORS
from core.estimators import kernel as kern
from core.stats.binning import BINNINGS
from core.stats.lenses import LENSES, data_lens

#: Row draws a second that a null drawn one resample at a time makes on a laptop (about
#: 33 ns each at 2·10⁵ × 10 on the classwise lens), for the time a slow test would take.
ROW_DRAWS_PER_SECOND = 30_000_000
#: Row draws' worth a test without row work counts for on a suite's progress bar (a tenth of
#: a second: the kernel and classical tests take about that at a page's sizes).
QUICK_TEST_WORK = ROW_DRAWS_PER_SECOND / 10
#: Row draws a page lets a test make one resample at a time before it asks first (about
#: a second): :func:`run_tests`'s ``max_row_work`` on the Tests page.
PAGE_ROW_WORK = ROW_DRAWS_PER_SECOND

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
            assumptions, lens, caveat``.
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
                    "caveat": r.caveat,
                }
                for r in self.results
            ],
            columns=[
                "test", "label", "statistic", "pvalue", "bound", "reject", "mc_error",
                "method", "assumptions", "lens", "caveat",
            ],
        )  # fmt: skip

    def get(self, test: str) -> CalibrationTestResult | None:
        """Return the result of ``test``, or ``None`` if it did not run."""
        return next((r for r in self.results if r.test == test), None)


def run_tests(
    data: Any,
    config: Any = None,
    *,
    tests: Sequence[str] = DEFAULT_SUITE,
    kernel_lens: str = "canonical",
    n_resamples: int | None = None,
    max_exact_n: int = kern.MAX_EXACT_N,
    max_row_work: int | None = None,
    progress: Callable[[float, str], Any] | None = None,
) -> TestSuiteResult:
    """Run several calibration tests; quadratic ones are skipped (not replaced) when too large.

    Each test runs as :func:`test_settings` says for the analysis options (lens, the
    consistency test's estimator and bins), with the kernel tests on ``kernel_lens``.

    Parameters
    ----------
    data : Predictions or (probs, labels)
        The predictions (see :func:`core.data.as_predictions`).
    config : core.analyses.analysis.AnalysisConfig, optional
        The analysis options (lens, binning, norm, estimator, seed); default
        ``AnalysisConfig()``.
    tests : sequence of str
        Names in :data:`TESTS`.
    kernel_lens : str
        Lens of the kernel tests (``"canonical"``, ``"binary"`` or ``"top-label"``).
    n_resamples : int, optional
        Resamples of the resampling tests (default :data:`TEST_RESAMPLES`).
    max_exact_n : int
        Above this many rows the quadratic tests are skipped with a note naming the
        linear and block tests; raise it to run them anyway.
    max_row_work : int, optional
        Above this many row draws made one resample at a time (:func:`slow_tests`), a test
        is skipped with a note naming its fast settings; None (the default) runs every
        test however long it takes.
    progress : callable, optional
        ``progress(fraction, message)`` before each test and as a long one goes on, the
        message naming the test and how far it is.

    Returns
    -------
    TestSuiteResult
        The results and the skipped tests with reasons.
    """
    config = check_config(config)
    pred = as_predictions(data)
    n = pred.n
    results: list[CalibrationTestResult] = []
    works = (
        {}
        if max_row_work is None and progress is None
        else _row_works(pred, config, tests, n_resamples)
    )
    slow = {} if max_row_work is None else _slow(pred, works, max_row_work)
    # a test's share of the bar is its row work (the others a tenth of a second's worth),
    # so the time left a bar estimates from the pace so far holds across the suite
    weights = [
        float(works[t][0]) if t in works and t not in slow else QUICK_TEST_WORK for t in tests
    ]
    done_before = np.concatenate([[0.0], np.cumsum(weights)]) / (sum(weights) or 1.0)
    skipped: dict[str, str] = {}
    for step, name in enumerate(tests):
        report = None
        if progress is not None:
            report = _suite_progress(progress, name, step, len(tests), done_before)
            report(0.0, "")
        if name in slow:
            skipped[name] = slow[name]
            continue
        entry = TESTS.get(name)
        lens, opts = test_settings(
            name, config, None if n_resamples is None else {"n_resamples": int(n_resamples)}
        )
        if "max_exact_n" in entry.options:
            opts["max_exact_n"] = max_exact_n
            if entry.quadratic and n > max_exact_n:
                skipped[name] = (
                    f"quadratic in n: {n:,} rows exceed max_exact_n = {max_exact_n:,}. Use the "
                    "linear (SKCE_ul) or block test, or raise the limit to run it."
                )
                continue
        if entry.default_lens == "canonical":
            lens = kernel_lens
        try:
            results.append(
                calibration_test(
                    pred.probs,
                    pred.labels,
                    test=name,
                    lens=lens,
                    seed=config.seed,
                    progress=report,
                    **opts,
                )
            )
        except (ConfigError, EstimationError) as exc:
            skipped[name] = str(exc)
    if progress is not None:
        progress(1.0, "done")
    return TestSuiteResult(tuple(results), skipped)


def _suite_progress(
    progress: Callable[[float, str], Any],
    name: str,
    step: int,
    steps: int,
    done_before: np.ndarray,
) -> Callable[[float, str], None]:
    """Report a test's own progress as its share of the suite.

    ``done_before`` holds the share of the suite before each test, then 1.
    """
    label = TESTS.get(name).label
    start, end = float(done_before[step]), float(done_before[step + 1])

    def report(fraction: float, message: str) -> None:
        what = f"{label}, {message}" if message else label
        progress(start + fraction * (end - start), f"test {step + 1} of {steps}: {what}")

    return report


def slow_tests(
    data: Any,
    config: Any,
    tests: Sequence[str] = DEFAULT_SUITE,
    n_resamples: int | None = None,
    max_row_work: int | None = PAGE_ROW_WORK,
    surface: str = "api",
) -> dict[str, str]:
    """Return the tests whose cost, in row draws' worth, is above ``max_row_work``.

    What :func:`run_tests` skips with the same arguments, so a page can say so before it
    runs them: :attr:`TestInfo.row_work` says what a test costs, in row draws' worth. A
    consistency null one resample at a time (the classwise lens, data-dependent bins)
    costs ``n × R × components`` row draws or more; in batches, ``n × R``; from the
    redrawn cells, a few per cell and resample.

    Parameters
    ----------
    data : Predictions or (probs, labels)
        The predictions (see :func:`core.data.as_predictions`).
    config : core.analyses.analysis.AnalysisConfig
        The analysis options (:func:`test_settings`).
    tests : sequence of str
        Names in :data:`TESTS`.
    n_resamples : int, optional
        Resamples of the resampling tests (default :data:`TEST_RESAMPLES`).
    max_row_work : int or None
        The budget; None means none (nothing is slow).
    surface : {"api", "cli", "ui"}
        Whose words the reasons name the options in (:func:`core.base.errors.render`).

    Returns
    -------
    dict of str to str
        Each slow test with the reason, which names the settings that are drawn in
        batches and the resamples that fit.
    """
    if max_row_work is None:
        return {}
    pred = as_predictions(data)
    return _slow(pred, _row_works(pred, config, tests, n_resamples), max_row_work, surface)


def _row_works(
    pred: Any, config: Any, tests: Sequence[str], n_resamples: int | None
) -> dict[str, tuple[int, str, dict[str, Any]]]:
    """Return the tests that cost their row work (:attr:`TestInfo.row_work`): work, lens, options."""
    out = {}
    for name in tests:
        entry = TESTS.get(name)
        if entry.row_work is None:
            continue
        lens, opts = test_settings(
            name, config, None if n_resamples is None else {"n_resamples": int(n_resamples)}
        )
        lens = lens or data_lens(pred.n_classes)
        out[name] = (entry.row_work(pred.probs, pred.labels, lens=lens, **opts), lens, opts)
    return out


def _slow(
    pred: Any,
    works: Mapping[str, tuple[int, str, dict[str, Any]]],
    max_row_work: int,
    surface: str = "api",
) -> dict[str, str]:
    """Return the reasons of the tests whose row work is above ``max_row_work``."""
    n, n_classes = pred.n, pred.n_classes
    slow = {}
    for name, (work, lens, opts) in works.items():
        if work > max_row_work:
            r = int(opts["n_resamples"])
            fits = r * max_row_work // work
            one = data_lens(n_classes)
            label = ESTIMATORS.get(opts.get("estimator", "plugin")).label
            # the page names its controls' choices as they show them, and not the budget
            ui = surface == "ui"
            fast = ("plugin", "equal-width", one)
            if ui:
                fast = (
                    ESTIMATORS.get("plugin").label,
                    BINNINGS.get("equal-width").label,
                    LENSES.get(one).label,
                )
            cost = "" if ui else f" ({work:,} row draws' worth, above {max_row_work:,})"
            slow[name] = render(
                f"{r:,} resamples of {n:,} rows on the {lens} lens with {label} take about "
                f"{format_duration(work / ROW_DRAWS_PER_SECOND)}{cost}. The plug-in estimator "
                "on fixed bins and a one-component lens is fast: "
                f"{arg('estimator', fast[0])}, {arg('binning', fast[1])}, {arg('lens', fast[2])}; "
                + (f"{arg('n_resamples', fits)} fits" if fits else "not one resample fits")
                + f"; or {arg('max_row_work')}.",
                surface,
            )
    return slow


#: Resamples of a resampling test run for a page or a report, unless options say otherwise.
TEST_RESAMPLES: int = N_TEST_RESAMPLES.default  # type: ignore[assignment]


def test_settings(
    test: str, config: Any, options: Mapping[str, Any] | None = None
) -> tuple[str | None, dict[str, Any]]:
    """Return the lens and options of a test run on an analysis's data (pages, reports).

    The one rule by which the Compare page, ``calibscope compare`` and the report run a
    test on every model: kernel tests on their own (canonical) lens, other tests on the
    analysis lens when they accept it; a resampling test with :data:`TEST_RESAMPLES`
    resamples; a test of a binned estimator (consistency resampling) with the analysis's
    estimator when it is binned (else the plug-in estimator) on its binning and norm.

    Parameters
    ----------
    test : str
        A name in :data:`TESTS`.
    config : core.analyses.analysis.AnalysisConfig
        The analysis options.
    options : mapping, optional
        Options that override these (e.g. ``{"n_resamples": 200}``; ``n_resamples`` is
        dropped for a test that does not resample, so one setting serves every test).

    Returns
    -------
    lens : str or None
        The lens to pass (None: the test's default).
    options : dict
        The test's options.
    """
    info = TESTS.get(test)
    opts: dict[str, Any] = {}
    if "n_resamples" in info.options:
        opts["n_resamples"] = TEST_RESAMPLES
    if info.binned:
        opts.update(
            estimator=config.estimator if ESTIMATORS.get(config.estimator).lp_scale else "plugin",
            binning=config.binning,
            n_bins=config.n_bins,
            norm=config.norm,
            tie_policy=config.tie_policy,
        )
    given = dict(options or {})
    if "n_resamples" not in info.options:
        given.pop("n_resamples", None)
    opts.update(given)
    own = info.default_lens == "canonical" or config.lens not in info.lenses
    return (None if own else config.lens), opts
