"""Calibration gates for CI pipelines: :func:`check_calibration` and :class:`GateResult`.

A gate passes a scope (all rows, one model, or one group of a model) when the upper end of
the bootstrap interval of the chosen estimator is at most the threshold — the data must show
the error is small, not merely fail to show it is large — and, when a calibration test is
asked for, the test does not reject at level ``alpha``. The gate passes when every judged
scope passes. Groups with fewer rows than ``min_group_rows`` are reported as skipped.

The numbers are those of :func:`core.analyses.analysis.analyze` (the headline estimate and its
interval) and of :func:`core.analyses.calibration_tests.calibration_test` with the report's
settings (:func:`core.analyses.calibration_tests.test_settings`): the same data and options give the
same numbers as the Reliability page, ``calibscope metrics`` and the report.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

from core.analyses.analysis import AnalysisConfig, analyze
from core.analyses.calibration_tests import TESTS, calibration_test, test_settings
from core.base.errors import CalibscopeError, ConfigError
from core.base.numbers import format_number, format_pvalue
from core.data import as_predictions
from core.data.groups import MIN_GROUP_ROWS, find_groups
from core.stats.intervals import level_words
from core.stats.lenses import data_lens

__all__ = ["GateResult", "GateRow", "check_calibration"]

# Groups smaller than MIN_GROUP_ROWS (core.data.groups, shared with the Subgroups page) are
# skipped, not judged: an interval on a handful of rows is so wide that the gate would fail
# for lack of data, not for miscalibration.


@dataclass(frozen=True)
class GateRow:
    """The verdict on one scope.

    Attributes
    ----------
    model, group : str or None
        The scope (None: all models, all groups).
    n : int
        Rows in the scope.
    value, low, high : float
        The estimate and its bootstrap interval (NaN when not judged).
    pvalue : float or None
        The test's p-value (None without a test).
    status : {"pass", "fail", "skipped", "error"}
        The verdict.
    reason : str
        Why, in one sentence.
    """

    model: str | None
    group: str | None
    n: int
    value: float
    low: float
    high: float
    pvalue: float | None
    status: str
    reason: str

    @property
    def scope(self) -> str:
        """``all rows``, ``model 'a'``, ``group 'x'`` or ``model 'a', group 'x'``."""
        parts = [f"model {self.model!r}"] if self.model is not None else []
        parts += [f"group {self.group!r}"] if self.group is not None else []
        return ", ".join(parts) or "all rows"


@dataclass(frozen=True)
class GateResult:
    """The verdict of :func:`check_calibration` on every scope.

    Attributes
    ----------
    passed : bool
        Whether every judged scope passed (skipped scopes do not count).
    rows : tuple of GateRow
        One per scope: all rows (or each model), then each group of it.
    threshold : float
        The largest acceptable upper bound.
    estimator : str
        The estimator (a name in :data:`core.estimators.ESTIMATORS`).
    test : str or None
        The calibration test, or None.
    alpha : float
        The test's level.
    config : AnalysisConfig
        The analysis options.
    """

    passed: bool
    rows: tuple[GateRow, ...]
    threshold: float
    estimator: str
    test: str | None
    alpha: float
    config: AnalysisConfig

    @property
    def verdict(self) -> str:
        """``"pass"``, ``"fail"`` or ``"cannot judge"``.

        A scope that fails makes the gate fail; otherwise a scope whose estimate, interval
        or test could not be computed on its rows (a test undefined on scores of exactly 0
        or 1, say) leaves the gate unable to judge, which is neither a pass nor a fail.
        """
        statuses = {r.status for r in self.rows}
        if "fail" in statuses:
            return "fail"
        return "cannot judge" if "error" in statuses else "pass"

    @property
    def scopes(self) -> str:
        """The scopes gated, in words: all rows or each model, and each value of ``group``."""
        models = sorted({r.model for r in self.rows if r.model is not None})
        groups = sorted({r.group for r in self.rows if r.group is not None})
        what = f"each of the {len(models)} models" if models else "all rows"
        if groups:
            what += f" and each of the {len(groups)} values of the group column"
            what += " within each model" if models else ""
        return what

    @property
    def summary(self) -> str:
        """One line: PASS, FAIL or CANNOT JUDGE, and the worst scope."""
        judged = [r for r in self.rows if r.status in ("pass", "fail", "error")]
        failed = [r for r in judged if r.status != "pass"]
        level = f"{self.config.confidence_level:.0%}"
        skipped = len(self.rows) - len(judged)
        tail = f"; {skipped} small group(s) skipped" if skipped else ""
        if self.verdict == "cannot judge":
            first = next(r for r in judged if r.status == "error")
            return (
                f"CANNOT JUDGE: {len(failed)} of {len(judged)} scope(s) could not be judged; "
                f"{first.scope}: {first.reason}{tail}"
            )
        if not failed:
            worst = max(judged, key=lambda r: r.high)
            scopes = f"all {len(judged)} scopes" if len(judged) > 1 else worst.scope
            return (
                f"PASS: {self.estimator} {level} upper bound ≤ {_num(self.threshold)} for "
                f"{scopes} (largest {_num(worst.high)}, {worst.scope}){tail}"
            )
        first = failed[0]
        return f"FAIL: {len(failed)} of {len(judged)} scope(s); {first.scope}: {first.reason}{tail}"

    def to_record(self) -> dict[str, Any]:
        """Return the verdict as JSON-ready values."""
        return {
            "command": "check",
            "passed": self.passed,
            "verdict": self.verdict,
            "gated": self.scopes,
            "summary": self.summary,
            "threshold": self.threshold,
            "estimator": self.estimator,
            "test": self.test,
            "alpha": self.alpha if self.test is not None else None,
            "config": self.config.to_dict(),
            "scopes": [
                {
                    "model": r.model,
                    "group": r.group,
                    "n": r.n,
                    "value": _finite(r.value),
                    "low": _finite(r.low),
                    "high": _finite(r.high),
                    "pvalue": r.pvalue,
                    "status": r.status,
                    "reason": r.reason,
                }
                for r in self.rows
            ],
        }

    def to_junit(self) -> str:
        """Return a JUnit XML report: one test case per scope (skipped groups as skipped)."""
        failures = sum(r.status == "fail" for r in self.rows)
        errors = sum(r.status == "error" for r in self.rows)
        skipped = sum(r.status == "skipped" for r in self.rows)
        suite = ET.Element(
            "testsuite",
            name="calibscope check",
            tests=str(len(self.rows)),
            failures=str(failures),
            errors=str(errors),
            skipped=str(skipped),
        )
        for r in self.rows:
            case = ET.SubElement(
                suite, "testcase", classname="calibscope.check", name=f"calibration: {r.scope}"
            )
            if r.status == "fail":
                ET.SubElement(case, "failure", message=r.reason).text = r.reason
            elif r.status == "error":
                ET.SubElement(case, "error", message=r.reason).text = r.reason
            elif r.status == "skipped":
                ET.SubElement(case, "skipped", message=r.reason)
            ET.SubElement(case, "system-out").text = r.reason
        ET.indent(suite)
        return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def check_calibration(
    data: Any,
    *,
    max_error: float,
    config: AnalysisConfig | None = None,
    test: str | None = None,
    alpha: float = 0.05,
    test_options: dict[str, Any] | None = None,
    min_group_rows: int = MIN_GROUP_ROWS,
) -> GateResult:
    """Gate predictions on their calibration (see the module docstring).

    Parameters
    ----------
    data : Predictions or (probs, labels)
        The predictions; with a ``model`` column each model is a scope, with a ``group``
        column each group (of each model) is one too.
    max_error : float
        The largest acceptable upper bound of the bootstrap interval (≥ 0).
    config : AnalysisConfig, optional
        The estimator (``config.estimator``), lens, bins, resamples, level and seed;
        default ``AnalysisConfig()`` with the binary lens for binary predictions.
    test : str, optional
        A name in :data:`core.analyses.calibration_tests.TESTS`; None applies no test.
    alpha : float, default=0.05
        The test's level: a p-value below it fails the scope.
    test_options : dict, optional
        Options of the test (as in :func:`core.report.build_report`).
    min_group_rows : int, default=MIN_GROUP_ROWS
        Groups with fewer rows are skipped.

    Returns
    -------
    GateResult
        The verdict; ``passed`` is the CI outcome.

    Raises
    ------
    ConfigError
        For a negative or non-finite threshold, no bootstrap (``n_resamples=0``), an
        unknown test or an ``alpha`` outside (0, 1).
    """
    pred = as_predictions(data)
    if not (isinstance(max_error, (int, float)) and math.isfinite(max_error) and max_error >= 0):
        raise ConfigError(f"The threshold must be a number ≥ 0; got {max_error!r}.")
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be between 0 and 1; got {alpha!r}.")
    if test is not None:
        TESTS.get(test)
    if config is None:
        config = AnalysisConfig(lens=data_lens(pred.n_classes))
    if config.n_resamples == 0:
        raise ConfigError(
            "The gate compares the upper end of a bootstrap interval with the threshold; "
            "ask for bootstrap resamples (for example 1000)."
        )
    scopes: list[tuple[str | None, str | None, Any]] = []
    models = [(None, pred)] if pred.model is None else list(pred.by_model().items())
    for name, part in models:
        scopes.append((name, None, part))
        if part.group is not None:
            # the groups of the `group` column, as the Subgroups page and calibscope see them
            for value, rows in find_groups(part, ("group",)).parts(part).items():
                scopes.append((name, value, rows))
    rows = [
        _judge(m, g, part, config, max_error, test, alpha, test_options, min_group_rows)
        for m, g, part in scopes
    ]
    passed = all(r.status in ("pass", "skipped") for r in rows)
    return GateResult(
        passed=passed,
        rows=tuple(rows),
        threshold=float(max_error),
        estimator=config.estimator,
        test=test,
        alpha=float(alpha),
        config=config,
    )


def _judge(
    model: str | None,
    group: str | None,
    part: Any,
    config: AnalysisConfig,
    threshold: float,
    test: str | None,
    alpha: float,
    test_options: dict[str, Any] | None,
    min_rows: int,
) -> GateRow:
    nan = math.nan
    if group is not None and part.n < min_rows:
        reason = f"{part.n} rows, fewer than {min_rows}: too few to judge"
        return GateRow(model, group, part.n, nan, nan, nan, None, "skipped", reason)
    try:
        analysis = analyze(part, config)
    except CalibscopeError as exc:
        return GateRow(model, group, part.n, nan, nan, nan, None, "error", str(exc))
    value = analysis.headline.value
    boot = analysis.headline_interval
    if boot is None:
        reason = f"no bootstrap interval of {config.estimator} on these rows"
        return GateRow(model, group, part.n, value, nan, nan, None, "error", reason)
    low, high = boot.confidence_interval.low, boot.confidence_interval.high
    level = level_words(config.confidence_level, boot.method)
    if not high <= threshold:
        reason = (
            f"{config.estimator} = {_num(value)}, {level} upper bound {_num(high)} > "
            f"{_num(threshold)}"
        )
        return GateRow(model, group, part.n, value, low, high, None, "fail", reason)
    reason = (
        f"{config.estimator} = {_num(value)}, {level} upper bound {_num(high)} ≤ {_num(threshold)}"
    )
    pvalue = None
    if test is not None:
        lens, opts = test_settings(test, config, test_options)
        try:
            result = calibration_test(
                part.probs, part.labels, test=test, lens=lens, seed=config.seed, **opts
            )
        except CalibscopeError as exc:
            return GateRow(model, group, part.n, value, low, high, None, "error", str(exc))
        pvalue = float(result.pvalue)
        if pvalue < alpha:
            reason = f"{test} rejects calibration: p = {_p(pvalue)} < α = {_num(alpha)}"
            return GateRow(model, group, part.n, value, low, high, pvalue, "fail", reason)
        reason += f"; {test} p = {_p(pvalue)} ≥ α = {_num(alpha)}"
    return GateRow(model, group, part.n, value, low, high, pvalue, "pass", reason)


def _num(x: float) -> str:

    return format_number(x)


def _p(x: float) -> str:

    return format_pvalue(x)


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
