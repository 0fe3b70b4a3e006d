"""Plotly figures of calibration results: pure functions of :mod:`core` result objects.

Every public figure function takes one result object of :mod:`core` (an analysis component,
a :class:`~core.stats.summary.DataSummary`, a :class:`~core.analyses.model_comparison.ModelComparison`, a
:class:`~core.analyses.validity.ValidityResult`, a test result, or a tidy table returned by a core
function) plus presentation keywords, and returns a :class:`plotly.graph_objects.Figure`.
Nothing here bins or estimates: the dashboard, the report and notebooks draw the same
figures from the same objects. plotly is imported nowhere else in :mod:`core`.

One module per subject: :mod:`~core.figures.reliability`, :mod:`~core.figures.data`,
:mod:`~core.figures.bias`, :mod:`~core.figures.compare`, :mod:`~core.figures.estimators`,
:mod:`~core.figures.recalibration`, :mod:`~core.figures.validity`,
:mod:`~core.figures.subgroups` and :mod:`~core.figures.tests`; :mod:`~core.figures.style` holds the shared look and
:func:`plotly_js` the library for self-contained HTML.
"""

from core.figures.bias import (
    beta_fit_figure,
    bias_curve_figure,
    bias_heatmap_figure,
    ece_vs_tce_figure,
    estimate_distribution_figure,
    fitted_curve_figure,
    power_figure,
)
from core.figures.compare import (
    metric_forest_figure,
    model_color,
    paired_difference_figure,
    rank_heatmap_figure,
    reliability_overlay_figure,
)
from core.figures.corp import corp_figure
from core.figures.data import class_balance, confidence_histogram
from core.figures.estimators import (
    error_versus_bins_figure,
    estimator_intervals_figure,
    sweep_trace_figure,
)
from core.figures.gallery import gallery_figure
from core.figures.html import plotly_js
from core.figures.recalibration import (
    before_after_reliability,
    coverage_accuracy_figure,
    score_separation_figure,
    selective_threshold_figure,
    tradeoff_figure,
)
from core.figures.reliability import (
    analysis_figure,
    band_arguments,
    classwise_grid,
    reliability_figure,
    smooth_diagram_figure,
)
from core.figures.style import log_counts
from core.figures.subgroups import (
    subgroup_forest_figure,
    subgroup_reliability_figure,
    window_figure,
)
from core.figures.tests import error_rate_figure, null_distribution_figure
from core.figures.validity import bin_validity_figure, epsilon_versus_n_figure, validity_figure

__all__ = [
    "gallery_figure",
    "analysis_figure",
    "band_arguments",
    "before_after_reliability",
    "beta_fit_figure",
    "bias_curve_figure",
    "bias_heatmap_figure",
    "bin_validity_figure",
    "class_balance",
    "classwise_grid",
    "corp_figure",
    "confidence_histogram",
    "coverage_accuracy_figure",
    "ece_vs_tce_figure",
    "epsilon_versus_n_figure",
    "error_rate_figure",
    "error_versus_bins_figure",
    "estimate_distribution_figure",
    "estimator_intervals_figure",
    "fitted_curve_figure",
    "log_counts",
    "metric_forest_figure",
    "model_color",
    "null_distribution_figure",
    "paired_difference_figure",
    "plotly_js",
    "power_figure",
    "rank_heatmap_figure",
    "reliability_figure",
    "smooth_diagram_figure",
    "reliability_overlay_figure",
    "score_separation_figure",
    "selective_threshold_figure",
    "subgroup_forest_figure",
    "subgroup_reliability_figure",
    "sweep_trace_figure",
    "tradeoff_figure",
    "validity_figure",
    "window_figure",
]
