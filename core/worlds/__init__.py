"""Ground-truth worlds: score distributions, calibration curves, presets and fits.

A :class:`World` pairs a score distribution with a true calibration curve, so
samples can be drawn and the true calibration error computed exactly; see
:mod:`core.bias` for estimator bias against sample size.
"""

from core.worlds.curves import (
    GLM_NAMES,
    GLMCurve,
    IdentityCurve,
    LogisticCurve,
    NoisyCurve,
    PolynomialCurve,
    SineCurve,
    StepCurve,
)
from core.worlds.draws import (
    WIDMANN_WORLDS,
    TrueError,
    draw_predictions,
    glm_world_name,
    true_error,
    world_choices,
    world_named,
)
from core.worlds.fitting import (
    BetaFit,
    BetaFitHistogram,
    GLMFits,
    beta_fit_histogram,
    fit_beta,
    fit_glms,
    fit_world,
)
from core.worlds.multiclass import DirichletWorld, MonteCarloTruth, TemperatureWorld
from core.worlds.presets import (
    PAPER_BETA_FITS,
    PAPER_GLM_FITS,
    PAPER_NETWORKS,
    PRESET_WORLDS,
    binning_hides_error_world,
    paper_world,
)
from core.worlds.scores import BetaScores, EmpiricalScores, UniformScores
from core.worlds.world import (
    World,
    polynomial_for_tce,
    polynomial_tce,
    polynomial_world,
    true_calibration_error,
)

__all__ = [
    "GLM_NAMES",
    "PAPER_BETA_FITS",
    "PAPER_GLM_FITS",
    "PAPER_NETWORKS",
    "PRESET_WORLDS",
    "WIDMANN_WORLDS",
    "BetaFit",
    "BetaFitHistogram",
    "BetaScores",
    "DirichletWorld",
    "EmpiricalScores",
    "GLMCurve",
    "GLMFits",
    "IdentityCurve",
    "LogisticCurve",
    "MonteCarloTruth",
    "NoisyCurve",
    "PolynomialCurve",
    "SineCurve",
    "StepCurve",
    "TemperatureWorld",
    "TrueError",
    "UniformScores",
    "World",
    "beta_fit_histogram",
    "binning_hides_error_world",
    "draw_predictions",
    "fit_beta",
    "fit_glms",
    "fit_world",
    "glm_world_name",
    "paper_world",
    "polynomial_for_tce",
    "polynomial_tce",
    "polynomial_world",
    "true_calibration_error",
    "true_error",
    "world_choices",
    "world_named",
]
