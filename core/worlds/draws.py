"""Ground-truth worlds as a data source: named worlds, drawn predictions and their true error.

A world is named by a string, so a link can carry it (``world=...&n=...&seed=...``):

- a key of :data:`core.worlds.PRESET_WORLDS` (the paper fits, Roelofs et al.'s figure
  worlds, Kumar et al.'s Platt worlds and constructions);
- ``widmann-m1``, ``widmann-m2``, ``widmann-m3``: Widmann et al.'s Dirichlet models
  (10 classes, ``Dir(0.1, …, 0.1)`` predictions);
- ``glm:ALPHA,BETA,GLM[,B0[,B1]]``: any Beta(α, β) score distribution with a GLM curve
  of Roelofs et al.'s family (:data:`core.worlds.GLM_NAMES`), e.g.
  ``glm:2.7752,0.0478,logflip_logflip_b0_b1,-0.24,0.3``.

:func:`draw_predictions` draws ``n`` rows of a world as :class:`core.data.Predictions`;
:func:`true_error` is the world's true calibration error under a lens and a norm, the
number every estimate of the drawn data estimates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np
from scipy import special

from core.base.errors import ConfigError
from core.base.validation import check_norm, check_rng
from core.data import as_predictions
from core.worlds.curves import GLM_NAMES, GLMCurve
from core.worlds.multiclass import DirichletWorld
from core.worlds.presets import PRESET_WORLDS
from core.worlds.scores import BetaScores
from core.worlds.world import World, true_calibration_error

if TYPE_CHECKING:
    from core.data import Predictions

#: Widmann et al. (2019), §6: the generative models M1 (calibrated), M2 and M3.
WIDMANN_WORLDS: Mapping[str, DirichletWorld] = MappingProxyType(
    {
        "widmann-m1": DirichletWorld(10, 0.1, 0.0, "uniform", name="widmann-m1"),
        "widmann-m2": DirichletWorld(10, 0.1, 0.5, "first", name="widmann-m2"),
        "widmann-m3": DirichletWorld(10, 0.1, 1.0, "uniform", name="widmann-m3"),
    }
)

_WIDMANN_WORDS = {
    "widmann-m1": "Widmann et al. (2019), M1: Dir(0.1) predictions over 10 classes, calibrated.",
    "widmann-m2": "Widmann et al. (2019), M2: half of the labels are class 0 whatever the "
    "prediction (true canonical ECE 0.45).",
    "widmann-m3": "Widmann et al. (2019), M3: labels uniform whatever the prediction "
    "(true canonical ECE 0.7106).",
}

#: Prefix of a Beta-scores + GLM-curve world given by its parameters.
GLM_PREFIX = "glm:"
#: Draws of the Monte Carlo true errors (top-label lens of a Dirichlet world).
TRUTH_DRAWS = 2_000_000
#: Largest number of rows a world draws (the sizes an upload allows).
MAX_DRAW_ROWS = 10_000_000

AnyWorld = World | DirichletWorld


def world_choices() -> dict[str, str]:
    """Return the named worlds, name → one-line description (presets, then Widmann's)."""
    choices = {name: w.description or w.label for name, w in PRESET_WORLDS.items()}
    choices.update(_WIDMANN_WORDS)
    return choices


def glm_world_name(alpha: float, beta: float, glm: str, b0: float = 0.0, b1: float = 0.0) -> str:
    """Return the name of a Beta + GLM world (the inverse of :func:`world_named`).

    Parameters
    ----------
    alpha, beta : float
        Beta parameters of the scores.
    glm : str
        One of :data:`core.worlds.GLM_NAMES`.
    b0, b1 : float
        The curve's parameters (ignored when the GLM has no such parameter).

    Returns
    -------
    str
        ``glm:ALPHA,BETA,GLM,B0,B1`` (numbers to 10 significant digits).
    """
    world = _glm_world(float(alpha), float(beta), glm, float(b0), float(b1))
    curve = world.curve
    assert isinstance(curve, GLMCurve)
    return f"{GLM_PREFIX}{alpha:.10g},{beta:.10g},{glm},{curve.b0:.10g},{curve.b1:.10g}"


def world_named(name: str) -> AnyWorld:
    """Return the world a name stands for (see the module docstring).

    Parameters
    ----------
    name : str
        A preset key, ``widmann-m1``/``-m2``/``-m3`` or ``glm:ALPHA,BETA,GLM[,B0[,B1]]``.

    Returns
    -------
    World or DirichletWorld
        The world.

    Raises
    ------
    ConfigError
        For an unknown name or invalid parameters.
    """
    name = str(name).strip()
    if name in PRESET_WORLDS:
        return PRESET_WORLDS[name]
    if name in WIDMANN_WORLDS:
        return WIDMANN_WORLDS[name]
    if name.startswith(GLM_PREFIX):
        parts = [p.strip() for p in name[len(GLM_PREFIX) :].split(",")]
        if not 3 <= len(parts) <= 5:
            raise ConfigError(
                f"A Beta + GLM world is written glm:ALPHA,BETA,GLM[,B0[,B1]]; got {name!r}."
            )
        try:
            alpha, beta = float(parts[0]), float(parts[1])
            b0, b1 = (float(p) for p in [*parts[3:], "0", "0"][:2])
        except ValueError as exc:
            raise ConfigError(
                f"The numbers of the world {name!r} are not numbers ({exc})."
            ) from exc
        return _glm_world(alpha, beta, parts[2], b0, b1)
    raise ConfigError(
        f"Unknown world {name!r}. Use a preset ({', '.join(PRESET_WORLDS)}), widmann-m1, "
        "widmann-m2, widmann-m3, or glm:ALPHA,BETA,GLM,B0,B1."
    )


def _glm_world(alpha: float, beta: float, glm: str, b0: float, b1: float) -> World:
    if not (np.isfinite(alpha) and np.isfinite(beta) and alpha > 0 and beta > 0):
        raise ConfigError(f"Beta parameters must be positive; got α = {alpha}, β = {beta}.")
    if glm not in GLM_NAMES:
        raise ConfigError(f"Unknown GLM {glm!r}; choose one of {', '.join(GLM_NAMES)}.")
    if not (np.isfinite(b0) and np.isfinite(b1)):
        raise ConfigError("The GLM parameters b0 and b1 must be finite numbers.")
    params = glm.split("_", 2)[2]
    curve = GLMCurve.from_name(
        glm, b0 if "b0" in params.split("_") else None, b1 if "b1" in params.split("_") else None
    )
    return World(
        BetaScores(alpha, beta),
        curve,
        name="",
        description=f"Beta({alpha:g}, {beta:g}) scores with the GLM curve {glm} "
        f"(b0 = {curve.b0:g}, b1 = {curve.b1:g}).",
    )


def draw_predictions(
    world: AnyWorld | str, n: int, seed: int | np.random.Generator | None = None
) -> Predictions:
    """Draw ``n`` labelled predictions from a world.

    A binary :class:`World` gives binary predictions: the score is P(y=1) and the label is
    ``Bernoulli(curve(score))``. A :class:`DirichletWorld` gives its ``(n, m)`` prediction
    vectors and labels.

    Parameters
    ----------
    world : World, DirichletWorld or str
        The world, or its name (:func:`world_named`).
    n : int
        Number of rows, 1 … :data:`MAX_DRAW_ROWS`.
    seed : int, Generator or None
        Randomness of the draw (None means 0); the same seed gives the same rows.

    Returns
    -------
    core.data.Predictions
        The rows; ``source`` names the world, n and the seed.

    Examples
    --------
    >>> pred = draw_predictions("kumar-platt", 1000, seed=3)
    >>> pred.n, pred.binary, pred.source
    (1000, True, 'world kumar-platt, n = 1,000, seed 3')
    """
    obj = world_named(world) if isinstance(world, str) else world
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_DRAW_ROWS:
        raise ConfigError(f"The number of rows must be a whole number from 1 to {MAX_DRAW_ROWS:,}.")
    gen = check_rng(seed)
    probs, labels = obj.sample(int(n), gen)
    pred = as_predictions((probs, labels))
    name = world if isinstance(world, str) else (obj.name or obj.label)
    if isinstance(seed, np.random.Generator):
        seed_words = "a given generator"
    else:
        seed_words = f"seed {0 if seed is None else int(seed)}"
    return dataclasses.replace(pred, source=f"world {name}, n = {int(n):,}, {seed_words}")


@dataclass(frozen=True)
class TrueError:
    """A world's true calibration error under one lens and norm.

    Attributes
    ----------
    value : float
        The true calibration error (a fraction).
    lens : str
        The lens it is defined under.
    norm : float
        The p of ℓp (``1.0`` for the canonical lens, the total-variation ECE).
    method : str
        How it was computed: ``"closed form"``, ``"quadrature"`` or ``"Monte Carlo"``.
    standard_error : float
        Monte Carlo standard error (0 for the exact methods).
    """

    value: float
    lens: str
    norm: float
    method: str
    standard_error: float = 0.0

    @property
    def text(self) -> str:
        """The value in percent with how it was computed, e.g. ``"3.21 % (quadrature)"``."""
        words = f"{100 * self.value:.4g} %"
        if self.standard_error > 0:
            return f"{words} ± {100 * self.standard_error:.1g} % ({self.method})"
        return f"{words} ({self.method})"


def true_error(world: AnyWorld | str, *, lens: str, norm: float | str = 1) -> TrueError | None:
    """Return the true calibration error of a world under a lens and a norm.

    Parameters
    ----------
    world : World, DirichletWorld or str
        The world, or its name.
    lens : {"binary", "top-label", "classwise", "canonical"}
        The lens of the estimates it is compared with.
    norm : {1, 2, inf}
        The p of ℓp (the canonical lens has one: the ECE with the total-variation distance).

    Returns
    -------
    TrueError or None
        None when the world does not define it (e.g. the binary lens of a 10-class world,
        ℓ∞ of a Dirichlet world).

    Notes
    -----
    A binary world's gap ``c − μ(c)`` has the same absolute value under every lens (the
    top-label confidence ``max(c, 1 − c)`` is right with probability ``μ(c)`` or
    ``1 − μ(c)``; both classwise components have the gap ``±(c − μ(c))``; half the
    total variation of ``[1 − c, c]`` and ``[1 − μ, μ]`` is ``|c − μ|``), so every lens gives
    ``TCE_p = (∫ |c − μ(c)|^p dF(c))^(1/p)`` (quadrature, :func:`true_calibration_error`).

    A Dirichlet world's gap vector is ``π (G − β)`` with ``G ~ Dir(α)``. Canonical: the
    closed form of :meth:`DirichletWorld.true_canonical_ece`. Classwise: with the marginal
    ``G_k ~ Beta(α_k, α₀ − α_k)``, ``E|G_k − β_k| = (m_k − β_k) + 2[β_k I(β_k; α_k, α₀ − α_k)
    − m_k I(β_k; α_k + 1, α₀ − α_k)]`` and ``E(G_k − β_k)² = Var G_k + (m_k − β_k)²``, combined
    as ``π (Σ_k E|G_k − β_k|^p / m)^(1/p)`` (equal class weights). Top-label:
    ``π (E|max G − β_argmax|^p)^(1/p)`` by Monte Carlo over :data:`TRUTH_DRAWS` draws
    (seed 0), with its standard error.
    """
    obj = world_named(world) if isinstance(world, str) else world
    if lens == "canonical":
        if isinstance(obj, DirichletWorld):
            return TrueError(obj.true_canonical_ece(), lens, 1.0, "closed form")
        return TrueError(true_calibration_error(obj, norm=1), lens, 1.0, "quadrature")
    p = check_norm(norm)
    if isinstance(obj, World):
        return TrueError(true_calibration_error(obj, norm=p), lens, p, "quadrature")
    if lens == "binary" and obj.n_classes != 2:
        return None
    if np.isinf(p):
        return None
    if lens == "classwise":
        return TrueError(_dirichlet_classwise(obj, p), lens, p, "closed form")
    if lens in ("top-label", "binary"):
        value, se = _dirichlet_top_label(obj, p)
        return TrueError(value, lens, p, "Monte Carlo", se)
    raise ConfigError(f"Unknown lens {lens!r}; use binary, top-label, classwise or canonical.")


def _dirichlet_classwise(world: DirichletWorld, p: float) -> float:
    a = world.alpha_vector
    a0 = a.sum()
    b = world.beta_vector
    m = a / a0
    if p == 1:
        below = b * special.betainc(a, a0 - a, b) - m * special.betainc(a + 1, a0 - a, b)
        moment = (m - b) + 2.0 * below
    else:  # p == 2
        moment = a * (a0 - a) / (a0**2 * (a0 + 1)) + (m - b) ** 2
    return float(world.pi * np.mean(moment) ** (1.0 / p))


def _dirichlet_top_label(world: DirichletWorld, p: float) -> tuple[float, float]:
    gen = np.random.default_rng(0)
    a = world.alpha_vector
    b = world.beta_vector
    total, total_sq, count = 0.0, 0.0, 0
    chunk = 200_000
    for start in range(0, TRUTH_DRAWS, chunk):
        g = gen.gamma(a, size=(min(chunk, TRUTH_DRAWS - start), a.size))
        g /= g.sum(axis=1, keepdims=True)
        k = g.argmax(axis=1)
        terms = np.abs(g[np.arange(k.size), k] - b[k]) ** p
        total += float(terms.sum())
        total_sq += float((terms**2).sum())
        count += terms.size
    mean = total / count
    var = max(total_sq / count - mean**2, 0.0) * count / (count - 1)
    se_mean = np.sqrt(var / count)
    value = mean ** (1.0 / p)
    se = se_mean * (mean ** (1.0 / p - 1.0) / p) if mean > 0 else 0.0
    return float(world.pi * value), float(world.pi * se)
