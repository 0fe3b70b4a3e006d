"""Preset worlds: the paper's fitted networks, figure worlds and teaching constructions.

Parameters are copied exactly from Roelofs, Cain, Shlens, Mozer (2022),
"Mitigating Bias in Calibration Error Estimation": Table 2 (Beta MLE of the
top-label confidences) and Table 3 (bootstrap-mean GLM fits with AIC, all 120
rows). The AIC-best row of each network defines its preset world.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from core.base.errors import ConfigError
from core.worlds.curves import (
    GLMCurve,
    LogisticCurve,
    NoisyCurve,
    PolynomialCurve,
    SineCurve,
    StepCurve,
)
from core.worlds.scores import BetaScores, UniformScores
from core.worlds.world import World

# Roelofs et al. (2022), Table 2: Beta MLE (alpha, beta) per logit dataset.
PAPER_BETA_FITS: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        "resnet110_c10": (2.7752, 0.0478),
        "resnet110_SD_c10": (2.1714, 0.0394),
        "resnet_wide32_c10": (2.3806, 0.0379),
        "densenet40_c10": (1.9824, 0.0397),
        "resnet110_c100": (1.1823, 0.1081),
        "resnet110_SD_c100": (1.1233, 0.1147),
        "resnet_wide32_c100": (1.0611, 0.0650),
        "densenet40_c100": (1.0805, 0.0808),
        "resnet152_imgnet": (1.1359, 0.2069),
        "densenet161_imgnet": (1.1928, 0.2206),
    }
)

# Roelofs et al. (2022), Table 3: (dataset, GLM name, bootstrap-mean AIC, b0, b1), rows in
# the paper's order (ascending AIC within a dataset); None marks an absent parameter.
PAPER_GLM_FITS: tuple[tuple[str, str, float, float | None, float | None], ...] = (
    ("resnet110_c10", "logflip_logflip_b0_b1", 2779.22, -0.24, 0.3),
    ("resnet110_c10", "logit_logflip_b0_b1", 2790.40, -0.55, -0.38),
    ("resnet110_c10", "logit_logflip_b1", 2827.51, None, -0.31),
    ("resnet110_c10", "logit_logit_b0_b1", 2840.70, -0.38, 0.36),
    ("resnet110_c10", "logit_logit_b1", 2900.02, None, 0.3),
    ("resnet110_c10", "logflip_logflip_b1", 2932.09, None, 0.34),
    ("resnet110_c10", "log_log_b0_b1", 3221.72, -0.06, 2.53),
    ("resnet110_c10", "logit_logit_b0", 3799.63, 1.99, None),
    ("resnet110_c10", "logflip_logflip_b0", 3811.98, -2.13, None),
    ("resnet110_c10", "log_log_b0", 3829.05, -0.13, None),
    ("resnet110_c10", "logit_logflip_b0", 3868.40, 1.95, None),
    ("resnet110_c10", "log_log_b1", 4281.78, None, 4.75),
    ("resnet110_SD_c10", "logit_logflip_b0_b1", 2498.98, -0.27, -0.35),
    ("resnet110_SD_c10", "logit_logit_b1", 2502.52, None, 0.3),
    ("resnet110_SD_c10", "logit_logflip_b1", 2508.70, None, -0.3),
    ("resnet110_SD_c10", "logit_logit_b0_b1", 2538.41, -0.26, 0.33),
    ("resnet110_SD_c10", "logflip_logflip_b0_b1", 2550.29, -0.36, 0.27),
    ("resnet110_SD_c10", "logflip_logflip_b1", 2572.85, None, 0.35),
    ("resnet110_SD_c10", "log_log_b0_b1", 2594.91, -0.08, 1.98),
    ("resnet110_SD_c10", "log_log_b0", 3137.19, -0.19, None),
    ("resnet110_SD_c10", "logflip_logflip_b0", 3150.42, -1.8, None),
    ("resnet110_SD_c10", "logit_logit_b0", 3175.58, 1.58, None),
    ("resnet110_SD_c10", "logit_logflip_b0", 3179.67, 1.56, None),
    ("resnet110_SD_c10", "log_log_b1", 3697.37, None, 3.77),
    ("resnet_wide32_c10", "logit_logit_b1", 2483.34, None, 0.26),
    ("resnet_wide32_c10", "logflip_logflip_b0_b1", 2487.69, -0.47, 0.22),
    ("resnet_wide32_c10", "logit_logit_b0_b1", 2511.39, -0.13, 0.28),
    ("resnet_wide32_c10", "logit_logflip_b0_b1", 2558.45, -0.26, -0.28),
    ("resnet_wide32_c10", "logit_logflip_b1", 2586.47, None, -0.25),
    ("resnet_wide32_c10", "log_log_b0_b1", 2647.03, -0.12, 1.87),
    ("resnet_wide32_c10", "logflip_logflip_b1", 2713.17, None, 0.3),
    ("resnet_wide32_c10", "log_log_b0", 2981.24, -0.21, None),
    ("resnet_wide32_c10", "logflip_logflip_b0", 2983.05, -1.7, None),
    ("resnet_wide32_c10", "logit_logit_b0", 2989.90, 1.49, None),
    ("resnet_wide32_c10", "logit_logflip_b0", 3055.55, 1.45, None),
    ("resnet_wide32_c10", "log_log_b1", 4582.09, None, 4.61),
    ("densenet40_c10", "logit_logflip_b1", 2910.62, None, -0.26),
    ("densenet40_c10", "logit_logit_b0_b1", 2961.31, -0.4, 0.31),
    ("densenet40_c10", "logit_logflip_b0_b1", 3000.23, -0.38, -0.31),
    ("densenet40_c10", "logflip_logflip_b0_b1", 3001.78, -0.31, 0.24),
    ("densenet40_c10", "logit_logit_b1", 3021.54, None, 0.25),
    ("densenet40_c10", "logflip_logflip_b1", 3027.78, None, 0.31),
    ("densenet40_c10", "log_log_b0_b1", 3153.38, -0.12, 2.04),
    ("densenet40_c10", "log_log_b0", 3531.22, -0.22, None),
    ("densenet40_c10", "logflip_logflip_b0", 3589.11, -1.6, None),
    ("densenet40_c10", "logit_logit_b0", 3601.85, 1.37, None),
    ("densenet40_c10", "logit_logflip_b0", 3679.95, 1.3, None),
    ("densenet40_c10", "log_log_b1", 4735.18, None, 4.27),
    ("resnet110_c100", "logflip_logflip_b0_b1", 8181.97, -0.11, 0.28),
    ("resnet110_c100", "logit_logit_b0_b1", 8206.19, -0.88, 0.39),
    ("resnet110_c100", "logflip_logflip_b1", 8301.28, None, 0.31),
    ("resnet110_c100", "logit_logflip_b0_b1", 8371.53, -1.01, -0.4),
    ("resnet110_c100", "logit_logit_b1", 8732.11, None, 0.25),
    ("resnet110_c100", "log_log_b0_b1", 8918.21, -0.16, 2.35),
    ("resnet110_c100", "logit_logflip_b1", 8926.99, None, -0.23),
    ("resnet110_c100", "logit_logflip_b0", 10903.83, 0.74, None),
    ("resnet110_c100", "logit_logit_b0", 10943.95, 0.72, None),
    ("resnet110_c100", "logflip_logflip_b0", 10964.91, -1.12, None),
    ("resnet110_c100", "log_log_b0", 11002.20, -0.4, None),
    ("resnet110_c100", "log_log_b1", 11850.89, None, 4.26),
    ("resnet110_SD_c100", "logit_logit_b0_b1", 7873.61, -0.88, 0.49),
    ("resnet110_SD_c100", "logflip_logflip_b0_b1", 7878.19, -0.09, 0.35),
    ("resnet110_SD_c100", "logflip_logflip_b1", 7932.28, None, 0.38),
    ("resnet110_SD_c100", "logit_logflip_b0_b1", 7944.61, -1.04, -0.52),
    ("resnet110_SD_c100", "logit_logit_b1", 8315.51, None, 0.32),
    ("resnet110_SD_c100", "log_log_b0_b1", 8437.82, -0.11, 2.18),
    ("resnet110_SD_c100", "logit_logflip_b1", 8510.36, None, -0.3),
    ("resnet110_SD_c100", "log_log_b1", 9988.07, None, 3.3),
    ("resnet110_SD_c100", "logit_logit_b0", 10803.27, 0.8, None),
    ("resnet110_SD_c100", "log_log_b0", 10810.90, -0.37, None),
    ("resnet110_SD_c100", "logflip_logflip_b0", 10823.15, -1.16, None),
    ("resnet110_SD_c100", "logit_logflip_b0", 10834.48, 0.78, None),
    ("resnet_wide32_c100", "logflip_logflip_b0_b1", 7183.93, -0.13, 0.21),
    ("resnet_wide32_c100", "logit_logit_b0_b1", 7219.14, -0.98, 0.33),
    ("resnet_wide32_c100", "logflip_logflip_b1", 7233.51, None, 0.25),
    ("resnet_wide32_c100", "logit_logflip_b0_b1", 7297.00, -1.06, -0.34),
    ("resnet_wide32_c100", "logit_logit_b1", 7626.21, None, 0.19),
    ("resnet_wide32_c100", "log_log_b0_b1", 7650.97, -0.24, 2.51),
    ("resnet_wide32_c100", "logit_logflip_b1", 7795.28, None, -0.17),
    ("resnet_wide32_c100", "logflip_logflip_b0", 8977.39, -0.98, None),
    ("resnet_wide32_c100", "logit_logflip_b0", 8987.38, 0.49, None),
    ("resnet_wide32_c100", "log_log_b0", 9000.24, -0.49, None),
    ("resnet_wide32_c100", "logit_logit_b0", 9009.51, 0.49, None),
    ("resnet_wide32_c100", "log_log_b1", 11911.51, None, 5.48),
    ("densenet40_c100", "logit_logit_b0_b1", 8158.28, -0.97, 0.34),
    ("densenet40_c100", "logflip_logflip_b0_b1", 8229.43, -0.12, 0.22),
    ("densenet40_c100", "logit_logflip_b0_b1", 8267.77, -1.08, -0.35),
    ("densenet40_c100", "logflip_logflip_b1", 8368.86, None, 0.25),
    ("densenet40_c100", "logit_logit_b1", 8783.50, None, 0.19),
    ("densenet40_c100", "log_log_b0_b1", 8832.20, -0.25, 2.26),
    ("densenet40_c100", "logit_logflip_b1", 8918.57, None, -0.18),
    ("densenet40_c100", "logit_logit_b0", 10138.24, 0.47, None),
    ("densenet40_c100", "logit_logflip_b0", 10182.61, 0.45, None),
    ("densenet40_c100", "logflip_logflip_b0", 10242.15, -0.94, None),
    ("densenet40_c100", "log_log_b0", 10261.01, -0.5, None),
    ("densenet40_c100", "log_log_b1", 13322.10, None, 5.25),
    ("resnet152_imgnet", "logflip_logflip_b0_b1", 18729.85, -0.12, 0.58),
    ("resnet152_imgnet", "logit_logit_b0_b1", 18783.22, -0.29, 0.65),
    ("resnet152_imgnet", "log_log_b0_b1", 18785.44, -0.03, 1.32),
    ("resnet152_imgnet", "logflip_logflip_b1", 18872.14, None, 0.65),
    ("resnet152_imgnet", "logit_logit_b1", 19074.37, None, 0.57),
    ("resnet152_imgnet", "logit_logflip_b0_b1", 19095.40, -0.82, -0.79),
    ("resnet152_imgnet", "log_log_b1", 19840.25, None, 1.53),
    ("resnet152_imgnet", "logit_logflip_b1", 20062.10, None, -0.5),
    ("resnet152_imgnet", "logflip_logflip_b0", 26935.09, -1.41, None),
    ("resnet152_imgnet", "log_log_b0", 26968.50, -0.28, None),
    ("resnet152_imgnet", "logit_logflip_b0", 27012.77, 1.12, None),
    ("resnet152_imgnet", "logit_logit_b0", 27084.11, 1.11, None),
    ("densenet161_imgnet", "log_log_b0_b1", 18202.41, -0.03, 1.27),
    ("densenet161_imgnet", "logit_logit_b0_b1", 18460.70, -0.25, 0.68),
    ("densenet161_imgnet", "logflip_logflip_b1", 18521.48, None, 0.67),
    ("densenet161_imgnet", "logflip_logflip_b0_b1", 18534.07, -0.1, 0.61),
    ("densenet161_imgnet", "logit_logit_b1", 18822.25, None, 0.6),
    ("densenet161_imgnet", "logit_logflip_b0_b1", 18913.25, -0.77, -0.8),
    ("densenet161_imgnet", "log_log_b1", 19493.85, None, 1.44),
    ("densenet161_imgnet", "logit_logflip_b1", 19562.58, None, -0.54),
    ("densenet161_imgnet", "logit_logflip_b0", 26426.38, 1.19, None),
    ("densenet161_imgnet", "logflip_logflip_b0", 26445.91, -1.46, None),
    ("densenet161_imgnet", "logit_logit_b0", 26519.76, 1.18, None),
    ("densenet161_imgnet", "log_log_b0", 26662.65, -0.27, None),
)

#: Display names of the ten networks (image set, architecture).
PAPER_NETWORKS: Mapping[str, str] = MappingProxyType(
    {
        "resnet110_c10": "CIFAR-10 ResNet-110",
        "resnet110_SD_c10": "CIFAR-10 ResNet-110 SD",
        "resnet_wide32_c10": "CIFAR-10 Wide ResNet-32",
        "densenet40_c10": "CIFAR-10 DenseNet-40",
        "resnet110_c100": "CIFAR-100 ResNet-110",
        "resnet110_SD_c100": "CIFAR-100 ResNet-110 SD",
        "resnet_wide32_c100": "CIFAR-100 Wide ResNet-32",
        "densenet40_c100": "CIFAR-100 DenseNet-40",
        "resnet152_imgnet": "ImageNet ResNet-152",
        "densenet161_imgnet": "ImageNet DenseNet-161",
    }
)


def paper_glm_table(dataset: str | None = None) -> list[dict[str, object]]:
    """Return Table 3 rows as dictionaries, optionally for one dataset.

    Parameters
    ----------
    dataset : str, optional
        A key of :data:`PAPER_BETA_FITS`.

    Returns
    -------
    list of dict
        Keys ``dataset, glm, aic, b0, b1`` in the paper's order.
    """
    if dataset is not None and dataset not in PAPER_BETA_FITS:
        raise ConfigError(
            f"Unknown network {dataset!r}; choose one of {', '.join(PAPER_BETA_FITS)}."
        )
    keys = ("dataset", "glm", "aic", "b0", "b1")
    return [dict(zip(keys, r, strict=True)) for r in PAPER_GLM_FITS if dataset in (None, r[0])]


def paper_world(dataset: str) -> World:
    """Return the world of one network: Table 2 Beta and AIC-best Table 3 GLM.

    Parameters
    ----------
    dataset : str
        A key of :data:`PAPER_BETA_FITS`, e.g. ``"resnet110_c10"``.

    Returns
    -------
    World
        The preset world.
    """
    rows = paper_glm_table(dataset)
    best = min(rows, key=lambda r: r["aic"])
    curve = GLMCurve.from_name(str(best["glm"]), best["b0"], best["b1"])  # type: ignore[arg-type]
    alpha, beta = PAPER_BETA_FITS[dataset]
    return World(
        BetaScores(alpha, beta),
        curve,
        name=dataset,
        description=(
            f"{PAPER_NETWORKS[dataset]}: Beta({alpha}, {beta}) scores (Roelofs et al. 2022, "
            f"Table 2) with the AIC-best GLM {best['glm']} (Table 3)."
        ),
    )


def binning_hides_error_world(eps: float = 0.01, n_bins: int = 10) -> World:
    """Kumar et al. (2019), Example 3.2: equal-width binning shows no error, the truth ~0.5.

    Scores are Uniform(0.5 - eps, 0.5 + eps). Within each equal-width bin's part
    ``[a, b]`` of the support the label is 1 exactly when ``c < a + p (b - a)``
    with ``p = (a + b) / 2``, so each bin's mean label equals its mean score while
    ``E[Y | C = c]`` is 0 or 1 everywhere.

    Parameters
    ----------
    eps : float
        Half-width of the score support.
    n_bins : int
        Number of equal-width bins the construction defeats.

    Returns
    -------
    World
        The world.
    """
    if not 0 < eps < 0.5:
        raise ConfigError(f"eps must lie in (0, 0.5); got {eps}.")
    lo, hi = 0.5 - eps, 0.5 + eps
    edges = np.arange(n_bins + 1) / n_bins
    thresholds: list[float] = []
    values: list[float] = [1.0]
    for left, right in zip(edges[:-1], edges[1:], strict=True):
        a, b = max(left, lo), min(right, hi)
        if b <= a:
            continue
        cut = a + 0.5 * (a + b) * (b - a)
        if thresholds and a > thresholds[-1]:
            thresholds.append(float(a))
            values.append(1.0)
        thresholds.append(float(cut))
        values.append(0.0)
    return World(
        UniformScores(lo, hi),
        StepCurve(tuple(thresholds), tuple(values)),
        name="kumar-binning-hides",
        description=(
            f"Kumar et al. (2019), Example 3.2: {n_bins} equal-width bins report ≈0 while the "
            "true calibration error is about 0.5."
        ),
    )


def _build() -> dict[str, World]:
    worlds: dict[str, World] = {}
    for key in PAPER_BETA_FITS:
        world = paper_world(key)
        worlds[key] = world
        worlds[f"{key}-calibrated"] = world.calibrated()
    worlds["roelofs-fig1"] = World(
        BetaScores(2.8, 0.05),
        PolynomialCurve(1.0),
        name="roelofs-fig1",
        description=(
            "Roelofs et al. (2022), Fig. 1: perfectly calibrated, Beta(2.8, 0.05) scores; ECE_bin "
            "(15 equal-width bins, n = 200) averages about 6.7 %."
        ),
    )
    worlds["roelofs-fig2b"] = World(
        BetaScores(1.1, 0.1),
        PolynomialCurve(2.0),
        name="roelofs-fig2b",
        description="Roelofs et al. (2022), Fig. 2b heat map: Beta(1.1, 0.1) scores, μ(c) = c².",
    )
    worlds["roelofs-fig14"] = World(
        UniformScores(),
        LogisticCurve(10.0, -5.0),
        name="roelofs-fig14",
        description="Roelofs et al. (2022), Fig. 14a: uniform scores, μ(c) = logistic(10c − 5).",
    )
    worlds["kumar-platt"] = World(
        UniformScores(),
        GLMCurve("logit", "logit", b0=1.0, b1=2.0),
        name="kumar-platt",
        description=(
            "Kumar et al. (2019), App. E(A): uniform scores, μ(z) = σ(2·logit z + 1) "
            "(a well-specified Platt world)."
        ),
    )
    platt = GLMCurve("logit", "logit", b0=1.0, b1=2.0)
    worlds["kumar-noisy-platt"] = World(
        UniformScores(0.25, 0.75),
        NoisyCurve(platt, 0.25, 0.75, 100_000, 0.02, seed=0),
        name="kumar-noisy-platt",
        description=(
            "Kumar et al. (2019), App. E(B): scores on [0.25, 0.75], μ(z) = σ(2·logit z + 1) "
            "plus a fixed ±0.02 offset on each of 100,000 cells (signs drawn with seed 0)."
        ),
    )
    worlds["kumar-sine"] = World(
        UniformScores(),
        SineCurve(0.1, 0.8, 0.05, 8.0),
        name="kumar-sine",
        description=(
            "Kumar et al. (2019), Prop. 3.3: μ(z) = 0.1 + 0.8z + 0.05 sin(16πz); coarse bins "
            "underestimate the true error."
        ),
    )
    worlds["kumar-binning-hides"] = binning_hides_error_world()
    return worlds


#: Preset worlds by name: the ten paper fits (and ``<name>-calibrated`` variants), the
#: figure worlds of Roelofs et al. and Kumar et al.'s constructions.
PRESET_WORLDS: Mapping[str, World] = MappingProxyType(_build())
