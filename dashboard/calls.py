"""The pages' core calls, cached, with the figures drawn from their results.

Every page and section reaches :mod:`core`'s analyses and :mod:`core.figures` through here
(the import contract keeps figures out of the pages): each call goes through the one cache
(:func:`dashboard.cache.compute`, or :func:`dashboard.cache.run_with_progress` for long runs
with a Stop button), and each figure is drawn from the result it shows, cached with that
result (a frozen result keys the cache by identity). Figures of tables (pandas frames) are
drawn on each call: a frame cannot key a cache. Grouped by the page that first needed them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from core.analyses.analysis import AnalysisConfig, bootstrap_mode
from core.analyses.analysis import analyze as core_analyze
from core.analyses.calibration_tests import (
    TESTS,
    run_tests,
    simulate_test_errors,
    slow_tests,
)
from core.analyses.estimator_comparison import compare_estimators, error_versus_bins
from core.analyses.gallery import run_entry
from core.analyses.model_comparison import compare_models, comparison_mode
from core.analyses.peers import peer_table
from core.analyses.subgroups import subgroup_analysis, window_analysis
from core.analyses.validity import validity_curves
from core.bias import (
    bias_heatmap,
    detection_power,
    ece_vs_tce,
    estimate_histogram,
    fit_data,
    observed_estimate,
    simulate_estimates,
)
from core.figures import (
    analysis_figure,
    before_after_reliability,
    beta_fit_figure,
    bias_curve_figure,
    bias_heatmap_figure,
    bin_validity_figure,
    class_balance,
    confidence_histogram,
    coverage_accuracy_figure,
    ece_vs_tce_figure,
    epsilon_versus_n_figure,
    error_rate_figure,
    error_versus_bins_figure,
    estimate_distribution_figure,
    estimator_intervals_figure,
    fitted_curve_figure,
    gallery_figure,
    log_counts,
    metric_forest_figure,
    null_distribution_figure,
    paired_difference_figure,
    power_figure,
    rank_heatmap_figure,
    reliability_overlay_figure,
    score_separation_figure,
    selective_threshold_figure,
    subgroup_forest_figure,
    subgroup_reliability_figure,
    sweep_trace_figure,
    tradeoff_figure,
    validity_figure,
    window_figure,
)
from core.figures.diagrams import DIAGRAMS, diagram_figure, reliability_diagram
from core.recalibration.evaluation import compare_recalibrators, reliability_bins
from core.report import build_report
from core.stats.guarantees import guarantee_calculator
from core.stats.lenses import lens_components
from core.stats.summary import summarize
from dashboard import cache

if TYPE_CHECKING:
    from core.analyses.analysis import ReliabilityAnalysis
    from core.data import Predictions
    from core.stats.summary import DataSummary

__all__ = [
    "analyze",
    "before_after_chart",
    "beta_fit_chart",
    "bias_chart",
    "bin_validity_chart",
    "bins_chart",
    "bins_curve",
    "bootstrap_kind",
    "bootstrap_work",
    "class_balance_chart",
    "comparison",
    "comparison_key",
    "comparison_with_progress",
    "comparison_work",
    "confidence_chart",
    "coverage_chart",
    "detection_powers",
    "diagram",
    "diagram_chart",
    "difference_chart",
    "distribution",
    "distribution_chart",
    "epsilon_chart",
    "error_rate_chart",
    "estimator_chart",
    "estimators",
    "exact_analysis",
    "fitted_curve_chart",
    "fitted_world",
    "forest_chart",
    "gallery_chart",
    "gallery_entry",
    "guarantee",
    "heatmap",
    "heatmap_chart",
    "null_chart",
    "observed",
    "overlay_chart",
    "peers",
    "power_chart",
    "rank_chart",
    "recalibration",
    "reliability_chart",
    "report_files",
    "report_key",
    "separation_chart",
    "simulation",
    "subgroup_charts",
    "subgroups",
    "summary",
    "sweep_chart",
    "tce_chart",
    "tce_table",
    "test_errors",
    "tests",
    "threshold_chart",
    "tradeoff_chart",
    "validity",
    "validity_chart",
    "window_chart",
    "windows",
    "without_resamples",
]


def analyze(predictions: Predictions, config: AnalysisConfig) -> ReliabilityAnalysis:
    """Return :func:`core.analyses.analysis.analyze` of the predictions (one cache, by digest and config).

    Parameters
    ----------
    predictions : core.data.Predictions
        The data (its exact ``digest`` is the cache key).
    config : core.analyses.analysis.AnalysisConfig
        The analysis options.

    Returns
    -------
    core.analyses.analysis.ReliabilityAnalysis
        The result.
    """

    return cache.compute(core_analyze, predictions, config, spinner="Computing the analysis…")


def exact_analysis(key: Any, predictions: Predictions, config: AnalysisConfig) -> Any:
    """Return :func:`analyze` of a config with the exact bootstrap, run with progress and kept."""
    return _with_progress(
        key,
        f"Exact bootstrap: {predictions.n:,} rows × {config.n_resamples:,} resamples",
        core_analyze,
        predictions,
        config,
    )


def summary(predictions: Predictions) -> DataSummary:
    """Return :func:`core.stats.summary.summarize` of the predictions (cached by digest)."""

    return cache.compute(summarize, predictions)


def reliability_chart(
    predictions: Predictions, config: AnalysisConfig, *, interval: str, log: bool = False
) -> Any:
    """Return the reliability figure of an analysis (:func:`core.figures.analysis_figure`).

    Cached by digest, config and legend (the classwise grid takes a few tenths of a second);
    ``log`` puts the count bars on a log axis, on a copy of the cached figure.
    """
    return log_counts(cache.compute(_chart, predictions, config, interval), log)


def _chart(predictions: Predictions, config: AnalysisConfig, interval: str) -> Any:

    return analysis_figure(analyze(predictions, config), interval_label=interval)


def diagram(predictions: Predictions, config: AnalysisConfig, kind: str) -> Any:
    """Return :func:`core.figures.diagrams.reliability_diagram` of one kind (one cache)."""

    label = DIAGRAMS.get(kind).label.lower()
    return cache.compute(
        _diagram, predictions, config, kind, spinner=f"Computing the {label} diagram…"
    )


def _diagram(predictions: Predictions, config: AnalysisConfig, kind: str) -> Any:

    return reliability_diagram(predictions, config, kind=kind)


def diagram_chart(predictions: Predictions, config: AnalysisConfig, kind: str) -> Any:
    """Return the figure of :func:`diagram` (:func:`core.figures.diagrams.diagram_figure`), cached."""
    return cache.compute(_diagram_chart, predictions, config, kind)


def _diagram_chart(predictions: Predictions, config: AnalysisConfig, kind: str) -> Any:

    return diagram_figure(kind, diagram(predictions, config, kind))


def subgroups(predictions: Predictions, config: AnalysisConfig, **options: Any) -> Any:
    """Return :func:`core.analyses.subgroups.subgroup_analysis` (cached by digest, config and options).

    ``options`` are its keywords (``by`` a tuple, ``min_rows``, ``estimator``, ...).
    """

    return cache.compute(
        subgroup_analysis, predictions, config, spinner="Computing the subgroups…", **options
    )


def windows(predictions: Predictions, config: AnalysisConfig, **options: Any) -> Any:
    """Return :func:`core.analyses.subgroups.window_analysis` (cached by digest, config and options)."""

    return cache.compute(
        window_analysis, predictions, config, spinner="Computing the windows…", **options
    )


def subgroup_charts(result: Any, component: int) -> tuple[Any, Any]:
    """Return the overlay and forest figures of a subgroup analysis (cached with it)."""
    return cache.compute(_subgroup_charts, result, component)


def _subgroup_charts(result: Any, component: int) -> tuple[Any, Any]:

    return subgroup_reliability_figure(result, component=component), subgroup_forest_figure(result)


def without_resamples(config: AnalysisConfig) -> AnalysisConfig:
    """Return the config with the bootstrap off (the fast part of the analysis)."""
    return dataclasses.replace(config, n_resamples=0)


def bootstrap_kind(predictions: Predictions, config: AnalysisConfig) -> str:
    """Return how the analysis bootstraps these predictions: ``"exact"`` (rows) or ``"cells"``.

    The analysis's own rule (:func:`core.analyses.analysis.bootstrap_mode`).
    """
    components = lens_components(config.lens, predictions.n_classes)
    return bootstrap_mode(config, predictions.n, components)


def bootstrap_work(predictions: Predictions, config: AnalysisConfig) -> int:
    """Rows × resamples × components (one per class for the classwise lens)."""
    return predictions.n * config.n_resamples * lens_components(config.lens, predictions.n_classes)


def comparison_work(models: Mapping[str, Predictions], config: AnalysisConfig) -> int:
    """Return the bootstrap work of comparing ``models`` (0 for the cell bootstrap).

    The comparison takes the cell bootstrap at large n
    (:func:`core.analyses.model_comparison.comparison_mode`), which is quick at any n.
    """

    if not models:
        return 0
    first = next(iter(models.values()))
    sizes = [p.n for p in models.values()]
    mode = comparison_mode(
        config, config.n_resamples, sizes, lens_components(config.lens, first.n_classes)
    )
    return 0 if mode == "cells" else sum(bootstrap_work(p, config) for p in models.values())


def _with_progress(key: Any, label: str, func: Any, *args: Any, **kwargs: Any) -> Any:
    """``func(*args, progress=..., **kwargs)`` with a progress bar and a Stop button, kept under key."""
    return cache.run_with_progress(
        key, label, lambda progress: func(*args, progress=progress, **kwargs)
    )


# ---------------------------------------------------------------- Data


def confidence_chart(facts: DataSummary, log: bool) -> Any:
    """Return the confidence histogram of a data summary, its counts on a log axis if ``log``."""
    return log_counts(cache.compute(confidence_histogram, facts), log)


# ---------------------------------------------------------------- Estimators


def estimators(
    predictions: Predictions, config: AnalysisConfig, *, intervals: str, experimental: bool
) -> Any:
    """Return :func:`core.analyses.estimator_comparison.compare_estimators` (cached)."""
    return cache.compute(
        compare_estimators,
        predictions,
        config,
        intervals=intervals,
        experimental=experimental,
        spinner="Running every estimator…",
    )


def estimator_chart(comparison: Any, lp_scale: bool) -> Any:
    """Return the intervals of the estimators on the ℓp scale (or the others), cached."""
    return cache.compute(_estimator_chart, comparison, lp_scale)


def _estimator_chart(comparison: Any, lp_scale: bool) -> Any:
    return estimator_intervals_figure(comparison.table, lp_scale=lp_scale)


def peers(predictions: Predictions, config: AnalysisConfig) -> Any:
    """Return :func:`core.analyses.peers.peer_table`: what each library reports (cached)."""
    return cache.compute(peer_table, predictions, config, spinner="Binning as each library does…")


def bins_curve(
    predictions: Predictions, config: AnalysisConfig, n_bins_range: tuple[int, int]
) -> Any:
    """Return :func:`core.analyses.estimator_comparison.error_versus_bins` (cached)."""
    return cache.compute(
        error_versus_bins,
        predictions,
        config,
        n_bins_range=n_bins_range,
        spinner="Computing the error for every number of bins…",
    )


def bins_chart(curve: Any, comparison: Any, norm_label: str) -> Any:
    """Return the figure of :func:`bins_curve`, with the sweep's choices of ``comparison``."""
    return error_versus_bins_figure(curve, comparison.sweep_choices, norm_label=norm_label)


def sweep_chart(comparison: Any) -> Any:
    """Return the sweep's trace of an estimator comparison (cached with it)."""
    return cache.compute(_sweep_chart, comparison)


def _sweep_chart(comparison: Any) -> Any:
    return sweep_trace_figure(comparison.sweep_traces)


# ---------------------------------------------------------------- Compare


def comparison(
    models: Mapping[str, Predictions],
    config: AnalysisConfig,
    *,
    metrics: tuple[str, ...],
    reference: str | None,
    n_resamples: int,
    test: str | None,
) -> Any:
    """Return :func:`core.analyses.model_comparison.compare_models` (cached)."""
    return cache.compute(
        compare_models,
        models,
        config=config,
        metrics=metrics,
        reference=reference,
        n_resamples=n_resamples,
        test=test,
        spinner=f"Comparing {len(models)} models: {len(metrics)} metrics × {n_resamples:,} "
        "resamples…",
    )


def comparison_key(
    models: Mapping[str, Predictions], config: AnalysisConfig, **options: Any
) -> Any:
    """Where :func:`comparison_with_progress` keeps the comparison of these models and options."""
    return ("compare", cache.data_key(models), config, tuple(sorted(options.items())))


def comparison_with_progress(
    models: Mapping[str, Predictions], config: AnalysisConfig, **options: Any
) -> Any:
    """:func:`comparison` run with a progress bar, the time left and a Stop button, and kept.

    ``options`` are those of :func:`comparison`; None when it failed (the error shown).
    """
    return _with_progress(
        comparison_key(models, config, **options),
        f"Comparing {len(models)} models with {options.get('n_resamples', 0):,} resamples",
        compare_models,
        models,
        config=config,
        **options,
    )


# ---------------------------------------------------------------- Recalibration


def recalibration(predictions: Predictions, request: str) -> Any:
    """Return :func:`core.recalibration.evaluation.compare_recalibrators` of a JSON request.

    ``request`` is the keywords as JSON (sorted keys), so it keys the cache; the split
    column of the predictions is read when the protocol is ``"column"``.
    """
    return cache.compute(
        _recalibration, predictions, request, spinner="Fitting and judging the recalibrators…"
    )


def _recalibration(predictions: Predictions, request: str) -> Any:
    req = json.loads(request)
    split = predictions.split if req["protocol"] == "column" else None
    return compare_recalibrators(predictions.probs, predictions.labels, split_labels=split, **req)


def before_after_chart(result: Any, lens: str, n_bins: int) -> Any:
    """Return the reliability of every recalibrator before and after, on ``lens`` (cached)."""
    return cache.compute(_before_after_chart, result, lens, n_bins)


def _before_after_chart(result: Any, lens: str, n_bins: int) -> Any:
    return before_after_reliability(
        reliability_bins(result, lens=lens, n_bins=n_bins),
        result.labels_of,
        lens_label="P(y = 1)" if lens == "binary" else "top-label confidence",
    )


def tradeoff_chart(result: Any, x_metric: str, x_label: str) -> Any:
    """Return MSE against a calibration error for every recalibrator (cached with the result)."""
    return cache.compute(_tradeoff_chart, result, x_metric, x_label)


def _tradeoff_chart(result: Any, x_metric: str, x_label: str) -> Any:
    return tradeoff_figure(result.metrics, x_metric=x_metric, x_label=x_label)


def coverage_chart(result: Any) -> Any:
    """Return coverage against accuracy of every selective recalibrator (cached)."""
    return cache.compute(_coverage_chart, result)


def _coverage_chart(result: Any) -> Any:
    return coverage_accuracy_figure(result.selective, result.labels_of)


# ---------------------------------------------------------------- Validity


def validity(key: Any, predictions: Predictions, request: Mapping[str, Any]) -> Any:
    """Return :func:`core.analyses.validity.validity_curves`, run with progress and kept."""
    return _with_progress(
        key,
        f"Fitting and judging {request['n_resamples']} random splits",
        validity_curves,
        predictions,
        **request,
    )


def guarantee(n: int, n_bins: int, alpha: float, **options: Any) -> Any:
    """Return :func:`core.stats.guarantees.guarantee_calculator` (closed forms, cached)."""
    return cache.compute(guarantee_calculator, n, n_bins, alpha, **options)


# ---------------------------------------------------------------- Tests


def tests(predictions: Predictions, config: AnalysisConfig, **options: Any) -> Any:
    """Return :func:`core.analyses.calibration_tests.run_tests` (cached; ``options`` its keywords)."""
    return cache.compute(
        run_tests, predictions, config, spinner="Running the calibration tests…", **options
    )


def slow_tests_note(
    predictions: Predictions,
    config: AnalysisConfig,
    tests: tuple[str, ...],
    n_resamples: int,
    max_row_work: int,
) -> dict[str, str]:
    """Return :func:`core.analyses.calibration_tests.slow_tests` in the page's words (cached).

    The tests a page's budget holds back, each with why and what is fast.
    """
    return cache.compute(
        slow_tests, predictions, config, tests, n_resamples, max_row_work, surface="ui"
    )


def tests_key(predictions: Predictions, config: AnalysisConfig, **options: Any) -> Any:
    """Where :func:`tests_with_progress` keeps the suite of these data and options."""
    return ("tests", cache.data_key(predictions), config, tuple(sorted(options.items())))


def tests_with_progress(predictions: Predictions, config: AnalysisConfig, **options: Any) -> Any:
    """:func:`tests` run with a progress bar, the time left and a Stop button, and kept.

    For a suite whose slow tests the user asked for; None when it failed (the error shown).
    """
    return _with_progress(
        tests_key(predictions, config, **options),
        "Running the calibration tests",
        run_tests,
        predictions,
        config,
        **options,
    )


def test_errors(
    world: Any, tests: tuple[str, ...], n: int, n_resamples: int, seed: int, test_resamples: int
) -> Any:
    """Return :func:`core.analyses.calibration_tests.simulate_test_errors` on a Dirichlet world.

    Data sets of ``n`` rows drawn from ``world``; a resampling test takes ``test_resamples``.
    """
    return cache.compute(
        _test_errors,
        world,
        tests,
        n,
        n_resamples,
        seed,
        test_resamples,
        spinner="Simulating data sets and testing each one…",
    )


def _test_errors(
    world: Any, tests: tuple[str, ...], n: int, n_resamples: int, seed: int, test_resamples: int
) -> Any:
    opts = {
        t: {"n_resamples": test_resamples} for t in tests if "n_resamples" in TESTS.get(t).options
    }
    return simulate_test_errors(
        tests,
        world.sample,
        n=n,
        n_resamples=n_resamples,
        calibrated=world.pi == 0,
        seed=seed,
        test_options=opts,
    )


# ---------------------------------------------------------------- Papers


def gallery_entry(key: Any, name: str, label: str, seed: int) -> Any:
    """Return :func:`core.analyses.gallery.run_entry`, run with progress and kept under ``key``."""
    return _with_progress(key, label, run_entry, name, seed=seed)


def gallery_chart(result: Any) -> Any:
    """Return the figure of a gallery entry's result (drawn each time: it holds tables)."""
    return gallery_figure(result)


# ---------------------------------------------------------------- Report


def report_key(
    predictions: Predictions,
    config: AnalysisConfig,
    title: str,
    test: str,
    diagrams: tuple[str, ...] = (),
) -> Any:
    """Where :func:`report_files` keeps the report of these data and options."""
    return ("report", cache.data_key(predictions), config, title, test, tuple(diagrams))


def report_files(
    predictions: Predictions,
    config: AnalysisConfig,
    title: str,
    test: str,
    diagrams: tuple[str, ...] = (),
) -> tuple[str, str, dict[str, Any]] | None:
    """Return the report's HTML, its JSON and what the page shows of it, with progress.

    Built with a progress bar per model and a Stop button, and kept; None when it failed
    (the error shown). The strings, not the :class:`~core.report.Report`, are kept: they are
    what the page shows and serves.
    """
    return _with_progress(
        report_key(predictions, config, title, test, diagrams),
        "Building the report (analysis, bootstrap, test, figures)",
        _report_files,
        predictions,
        config,
        title,
        test,
        diagrams,
    )


def _report_files(
    pred: Predictions,
    config: AnalysisConfig,
    title: str,
    test: str,
    diagrams: Any,
    *,
    progress: Any,
) -> Any:
    def step(fraction: float, message: str) -> None:
        progress(0.9 * fraction, message)  # the figures of the page: the last tenth

    report = build_report(
        pred,
        config=config,
        title=title or None,
        test=test or None,
        diagrams=diagrams,
        progress=step,
    )
    progress(0.9, "Drawing the figures")
    summary = {
        "models": [
            (m.model, m.n, m.analysis.headline.value, m.test.pvalue if m.test else None)
            for m in report.models
        ],
        "comparison": report.comparison is not None,
        "title": report.title,
    }
    return report.to_html(), report.to_json(), summary


# ---------------------------------------------------------------- Bias vs n


def simulation(key: Any, label: str, specs: Any, source: Any, **options: Any) -> Any:
    """Return :func:`core.bias.simulate_estimates`, run with progress and kept under ``key``."""
    return _with_progress(key, label, simulate_estimates, specs, source, **options)


def heatmap(key: Any, label: str, world: Any, **options: Any) -> Any:
    """Return :func:`core.bias.bias_heatmap`, run with progress and kept under ``key``."""
    return _with_progress(key, label, bias_heatmap, world, **options)


def tce_table(key: Any, label: str, scores: Any, **options: Any) -> Any:
    """Return :func:`core.bias.ece_vs_tce`, run with progress and kept under ``key``."""
    return _with_progress(key, label, ece_vs_tce, scores, **options)


def detection_powers(
    key: Any,
    label: str,
    scores: Any,
    estimators: Mapping[str, Any],
    *,
    say_estimator: bool = True,
    **options: Any,
) -> Any:
    """Return :func:`core.bias.detection_power` of each estimator (label → table), with progress.

    ``estimators`` maps a label to an estimator (a spec or its name); the bar advances
    through them in order, its message led by the estimator's name if ``say_estimator``.
    """

    def run(progress: Any) -> dict[str, Any]:
        return {
            name: detection_power(
                scores,
                estimator=e,
                progress=lambda f, m, i=i, name=name: progress(
                    (i + f) / len(estimators), f"{name}: {m}" if say_estimator else m
                ),
                **options,
            )
            for i, (name, e) in enumerate(estimators.items())
        }

    return cache.run_with_progress(key, label, run)


def fitted_world(key: Any, predictions: Predictions, lens: str, name: str) -> Any:
    """Return :func:`core.bias.fit_data` (a world fitted to the data), with progress and kept."""
    return cache.run_with_progress(
        key, "Fitting a world to your data", lambda progress: fit_data(predictions, lens, name=name)
    )


def observed(predictions: Predictions, spec: Any, lens: str) -> float:
    """Return :func:`core.bias.observed_estimate` of the data (cached)."""
    return cache.compute(observed_estimate, predictions, spec, lens)


def distribution(estimates: Mapping[str, Any]) -> Any:
    """Return :func:`core.bias.estimate_histogram` of simulated estimates (label → values)."""
    return estimate_histogram(dict(estimates))


def beta_fit_chart(fitted: Any) -> Any:
    """Return the Beta law fitted to the scores over their histogram (cached with the fit)."""
    return cache.compute(_beta_fit_chart, fitted)


def _beta_fit_chart(fitted: Any) -> Any:
    return beta_fit_figure(fitted.beta_histogram)


def fitted_curve_chart(fitted: Any) -> Any:
    """Return the GLM curves fitted to the data over its binned frequencies (cached)."""
    return cache.compute(_fitted_curve_chart, fitted)


def _fitted_curve_chart(fitted: Any) -> Any:
    return fitted_curve_figure(fitted.bins, fitted.curves)


# ---------------------------------------------------------------- figures of a result
def _drawn(figure: Callable[..., Any], what: str, *, cached: bool = True) -> Callable[..., Any]:
    """Return the call that draws ``figure(result, **options)``: ``what``, cached with the result.

    A figure of a pandas frame, or of a result that holds frames, is drawn on each call
    (``cached=False``): a frame cannot key a cache.
    """

    def chart(result: Any, **options: Any) -> Any:
        if cached:
            return cache.compute(figure, result, **options)
        return figure(result, **options)

    chart.__doc__ = f"Return {what} (:func:`core.figures.{figure.__name__}`)" + (
        ", cached with the result it draws." if cached else ", drawn on each call."
    )
    return chart


class_balance_chart = _drawn(class_balance, "the class balance of a data summary")
forest_chart = _drawn(metric_forest_figure, "every model's metrics with intervals")
difference_chart = _drawn(paired_difference_figure, "the paired differences to the reference")
overlay_chart = _drawn(
    reliability_overlay_figure, "the models' reliability curves on the shared bins (``component=``)"
)
rank_chart = _drawn(rank_heatmap_figure, "the models' ranks by each metric")
separation_chart = _drawn(
    score_separation_figure, "Meta-Cal's score separation of a selective recalibrator"
)
threshold_chart = _drawn(
    selective_threshold_figure,
    "Meta-Cal's threshold of a selective recalibrator (``alpha=``, ``beta=``)",
)
epsilon_chart = _drawn(epsilon_versus_n_figure, "ε against n of a guarantee report")
validity_chart = _drawn(validity_figure, "the validity curves of a result (``show_conditional=``)")
bin_validity_chart = _drawn(bin_validity_figure, "the per-bin view of a validity result")
null_chart = _drawn(null_distribution_figure, "the null distribution of a resampling test's result")
error_rate_chart = _drawn(error_rate_figure, "the tests' error rates of a simulation")
window_chart = _drawn(window_figure, "the figure of a window analysis")
distribution_chart = _drawn(
    estimate_distribution_figure,
    "the distribution of simulated estimates against the reference (``reference=``)",
    cached=False,
)
bias_chart = _drawn(
    bias_curve_figure, "bias (or sd, RMSE) against n of a simulation's summary table", cached=False
)
heatmap_chart = _drawn(
    bias_heatmap_figure, "the heat map of bias over n and the number of bins", cached=False
)
tce_chart = _drawn(ece_vs_tce_figure, "ECE against the true CE of families of worlds", cached=False)
power_chart = _drawn(power_figure, "the detection power of each estimator against n", cached=False)
