"""The Bias page's one-click lessons, each reproducing a published figure."""

from __future__ import annotations

from dataclasses import dataclass

from core.bias.runner import DEFAULT_NS


@dataclass(frozen=True)
class TeachingPreset:
    """A one-click lesson of the Bias page.

    Attributes
    ----------
    key : str
        Identifier.
    title : str
        Button text.
    lesson : str
        What the user should see, with the published number it reproduces.
    view : {"distribution", "bias", "heatmap", "power"}
        Which view the preset opens.
    world : str
        A key of :data:`core.PRESET_WORLDS` (unused by the power view).
    estimators : tuple of str
        Estimator specs.
    ns : tuple of int
        Sample sizes.
    n_resamples : int
        Replicates per n.
    """

    key: str
    title: str
    lesson: str
    view: str
    world: str
    estimators: tuple[str, ...]
    ns: tuple[int, ...]
    n_resamples: int = 1000


TEACHING_PRESETS: dict[str, TeachingPreset] = {
    p.key: p
    for p in (
        TeachingPreset(
            "fig1",
            "Perfectly calibrated but ECE says 6.7 %",
            "A perfectly calibrated model with CIFAR-10-like confidences, Beta(2.8, 0.05), "
            "n = 200 and 15 equal-width bins: ECE_bin (ℓ2) averages about 6.7 %, not 0 "
            "(Roelofs et al. 2022, Fig. 1).",
            "distribution",
            "roelofs-fig1",
            ("plugin:equal-width:15", "plugin:equal-mass:15", "debiased:equal-mass:15"),
            (200,),
        ),
        TeachingPreset(
            "em-vs-ew",
            "EM beats EW on skewed scores",
            "On the CIFAR-10 ResNet-110 fit, equal-mass binning has a smaller |bias| than "
            "equal-width for every binned estimator, and ECE_sweep (EM) is best "
            "(Roelofs et al. 2022, Fig. 4).",
            "bias",
            "resnet110_c10",
            tuple(
                f"{e}:{b}:15"
                for e in ("plugin", "debiased", "sweep")
                for b in ("equal-width", "equal-mass")
            ),
            DEFAULT_NS,
        ),
        TeachingPreset(
            "bins-grow",
            "Optimal number of bins grows with n",
            "Beta(1.1, 0.1) scores with μ(c) = c²: the bin count with the smallest |bias| "
            "grows with n, and ECE_bin both over- and underestimates (Roelofs et al. 2022, Fig. 2b).",
            "heatmap",
            "roelofs-fig2b",
            ("plugin:equal-width",),
            (200, 400, 800, 1600, 3200, 6400),
            500,
        ),
        TeachingPreset(
            "detect-2pct",
            "How many samples to detect 2 %?",
            "Uniform scores with μ(c) = c^d: a 2 % true CE needs about 10,000 samples to be "
            "detected reliably, and below 500 samples only ≳10 % is (Roelofs et al. 2022, §7.2, Fig. 5).",
            "power",
            "",
            ("sweep:equal-mass", "plugin:equal-width:15"),
            (200, 500, 1000, 2000, 5000, 10000, 20000),
            400,
        ),
    )
}
