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

from core.lazy import lazy_exports

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # errors
    "CalibscopeError": "core.errors",
    "DataError": "core.errors",
    "ConfigError": "core.errors",
    "EstimationError": "core.errors",
    "FitError": "core.errors",
    "ExportError": "core.errors",
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
    "DataSummary": "core.summary",
    "summarize": "core.summary",
    # lenses and binning
    "LENSES": "core.lenses",
    "LensView": "core.lenses",
    "apply_lens": "core.lenses",
    "BINNINGS": "core.binning",
    "BinStats": "core.binning",
    "bin_stats": "core.binning",
    # estimators
    "ESTIMATORS": "core.estimators",
    "EstimatorInfo": "core.estimators",
    "CalibrationErrorResult": "core.calibration",
    "calibration_error": "core.calibration",
    "smooth_ece": "core.estimators.smooth",
    # reliability diagrams
    "DIAGRAMS": "core.diagrams",
    "DiagramInfo": "core.diagrams",
    "reliability_diagram": "core.diagrams",
    "SmoothDiagram": "core.smooth",
    "smooth_diagram": "core.smooth",
    # library conventions
    "CONVENTIONS": "core.conventions",
    "ConventionInfo": "core.conventions",
    "PeerTable": "core.peers",
    "peer_table": "core.peers",
    # scores and intervals
    "accuracy": "core.scores",
    "brier_score": "core.scores",
    "log_loss": "core.scores",
    "brier_decomposition": "core.scores",
    "SCORES": "core.scores",
    "ConfidenceInterval": "core.intervals",
    "BootstrapResult": "core.intervals",
    "bootstrap_interval": "core.bootstrap",
    "bin_intervals": "core.intervals",
    "bootstrap_many": "core.bootstrap",
    "INTERVAL_METHODS": "core.intervals",
    "ConsistencyBand": "core.consistency_bands",
    "consistency_band": "core.consistency_bands",
    # one-call analysis shared by the dashboard, the CLI and reports
    "AnalysisConfig": "core.analysis",
    "ReliabilityAnalysis": "core.analysis",
    "ComponentTable": "core.analysis",
    "analyze": "core.analysis",
    # distribution-free guarantees of histogram binning
    "guarantee_calculator": "core.guarantees",
    "GuaranteeReport": "core.guarantees",
    "guarantee_epsilon": "core.guarantees",
    "expected_ece_bound": "core.guarantees",
    "n_needed": "core.guarantees",
    "largest_bins": "core.guarantees",
    "theory_validity": "core.guarantees",
    # validity plots over repeated calibration/test splits
    "validity_curves": "core.validity",
    "ValidityResult": "core.validity",
    # every estimator side by side
    "compare_estimators": "core.estimator_comparison",
    "error_versus_bins": "core.estimator_comparison",
    # several models on identical bins
    "ModelComparison": "core.model_comparison",
    "compare_models": "core.model_comparison",
    # calibration tests
    "TESTS": "core.calibration_tests",
    "CalibrationTestResult": "core.calibration_tests",
    "calibration_test": "core.calibration_tests",
    "run_tests": "core.calibration_tests",
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
    "StreamAnalysis": "core.stream.analysis",
    "LoadOptions": "core.stream.load",
    "analyze_dask": "core.stream.dask",
    "compare_stream": "core.stream.compare",
    "compare_dask": "core.stream.compare",
    # the self-contained report
    "GateResult": "core.gate",
    "check_calibration": "core.gate",
    "Report": "core.report",
    "build_report": "core.report",
    # subgroups and time windows
    "subgroup_analysis": "core.subgroups",
    "SubgroupAnalysis": "core.subgroups",
    "window_analysis": "core.subgroups",
    "window_analysis_stream": "core.stream.windows",
    "WindowAnalysis": "core.subgroups",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports("core", _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
