"""Calibscope core: calibration assessment and recalibration for probabilistic classifiers.

The public API is re-exported here and imported lazily, so ``import core`` stays
fast (plotly, scipy.optimize and friends load only when a function needs them).

Examples
--------
>>> import numpy as np, core
>>> p = np.array([0.2, 0.8, 0.9, 0.4]); y = np.array([0, 1, 1, 1])
>>> round(core.calibration_error(p, y, lens="binary", n_bins=2).value, 4)
0.175
"""

from __future__ import annotations

from core.base.lazy import lazy_exports

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # errors
    "CalibscopeError": "core.base.errors",
    "DataError": "core.base.errors",
    "ConfigError": "core.base.errors",
    "EstimationError": "core.base.errors",
    "FitError": "core.base.errors",
    "ExportError": "core.base.errors",
    # data
    "Predictions": "core.data",
    "LintFinding": "core.data",
    "LintReport": "core.data",
    "load_predictions": "core.data",
    "load_models": "core.data",
    "ColumnError": "core.data",
    "read_table": "core.data",
    "combine_models": "core.data",
    "as_predictions": "core.data",
    "Query": "core.data.sql",
    "DataSummary": "core.stats.summary",
    "summarize": "core.stats.summary",
    # lenses and binning
    "LENSES": "core.stats.lenses",
    "LensView": "core.stats.lenses",
    "apply_lens": "core.stats.lenses",
    "BINNINGS": "core.stats.binning",
    "BinStats": "core.stats.binning",
    "bin_stats": "core.stats.binning",
    # estimators
    "ESTIMATORS": "core.estimators",
    "EstimatorInfo": "core.estimators",
    "CalibrationErrorResult": "core.inference.calibration",
    "calibration_error": "core.inference.calibration",
    "smooth_ece": "core.estimators.smooth",
    "SmoothECEResult": "core.estimators.smooth",
    # reliability diagrams
    "DIAGRAMS": "core.figures.diagrams",
    "DiagramInfo": "core.figures.diagrams",
    "reliability_diagram": "core.figures.diagrams",
    "SmoothDiagram": "core.analyses.smooth",
    "smooth_diagram": "core.analyses.smooth",
    # library conventions
    "CONVENTIONS": "core.stats.conventions",
    "ConventionInfo": "core.stats.conventions",
    "PeerTable": "core.analyses.peers",
    "peer_table": "core.analyses.peers",
    # scores and intervals
    "accuracy": "core.stats.scores",
    "brier_score": "core.stats.scores",
    "log_loss": "core.stats.scores",
    "brier_decomposition": "core.stats.scores",
    "SCORES": "core.stats.scores",
    "ConfidenceInterval": "core.stats.intervals",
    "BootstrapResult": "core.stats.intervals",
    "bootstrap_interval": "core.inference.bootstrap",
    "bin_intervals": "core.stats.intervals",
    "bootstrap_many": "core.inference.bootstrap",
    "INTERVAL_METHODS": "core.stats.intervals",
    "ConsistencyBand": "core.stats.consistency_bands",
    "consistency_band": "core.stats.consistency_bands",
    # one-call analysis shared by the dashboard, the CLI and reports
    "AnalysisConfig": "core.analyses.analysis",
    "ReliabilityAnalysis": "core.analyses.analysis",
    "ComponentTable": "core.analyses.analysis",
    "analyze": "core.analyses.analysis",
    # distribution-free guarantees of histogram binning
    "guarantee_calculator": "core.stats.guarantees",
    "GuaranteeReport": "core.stats.guarantees",
    "guarantee_epsilon": "core.stats.guarantees",
    "expected_ece_bound": "core.stats.guarantees",
    "n_needed": "core.stats.guarantees",
    "largest_bins": "core.stats.guarantees",
    "theory_validity": "core.stats.guarantees",
    # validity plots over repeated calibration/test splits
    "validity_curves": "core.analyses.validity",
    "ValidityResult": "core.analyses.validity",
    # every estimator side by side
    "compare_estimators": "core.analyses.estimator_comparison",
    "error_versus_bins": "core.analyses.estimator_comparison",
    # several models on identical bins
    "ModelComparison": "core.analyses.model_comparison",
    "compare_models": "core.analyses.model_comparison",
    "ComparisonOptions": "core.analyses.model_comparison",
    # calibration tests
    "TESTS": "core.analyses.calibration_tests",
    "CalibrationTestResult": "core.analyses.calibration_tests",
    "calibration_test": "core.analyses.calibration_tests",
    "run_tests": "core.analyses.calibration_tests",
    # recalibration
    "RECALIBRATORS": "core.recalibration",
    "make_recalibrator": "core.recalibration",
    # ground-truth worlds and bias vs n
    "PRESET_WORLDS": "core.worlds",
    "World": "core.worlds",
    "true_calibration_error": "core.worlds",
    "draw_predictions": "core.worlds",
    "true_error": "core.worlds",
    "world_named": "core.worlds",
    "bias_vs_n": "core.bias",
    "simulate_estimates": "core.bias",
    "fit_world": "core.worlds",
    "DirichletWorld": "core.worlds",
    # files larger than memory, and Dask
    "analyze_stream": "core.stream.analysis",
    "load_parts": "core.stream.gather",
    "StreamAnalysis": "core.stream.analysis",
    "LoadOptions": "core.stream.load",
    "analyze_dask": "core.stream.dask",
    "compare_stream": "core.stream.compare",
    "compare_dask": "core.stream.compare",
    # the self-contained report
    "GateResult": "core.analyses.gate",
    "check_calibration": "core.analyses.gate",
    "Report": "core.report",
    "build_report": "core.report",
    # subgroups and time windows
    "subgroup_analysis": "core.analyses.subgroups",
    "SubgroupAnalysis": "core.analyses.subgroups",
    "window_analysis": "core.analyses.subgroups",
    "GroupOptions": "core.analyses.subgroups",
    "WindowOptions": "core.analyses.subgroups",
    "window_analysis_stream": "core.stream.windows",
    "WindowAnalysis": "core.analyses.subgroups",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports("core", _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
