"""Estimator configurations of a bias-vs-n run: :class:`EstimatorSpec` and the choices."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.base.errors import ConfigError
from core.estimators import ESTIMATORS
from core.estimators.base import EstimatorInfo
from core.stats.binning import BINNINGS, check_n_bins, check_tie_policy

_SHORT = {"equal-width": "EW", "equal-mass": "EM", "discrete": "discrete"}


@dataclass(frozen=True)
class EstimatorSpec:
    """One estimator configuration of a bias-vs-n run.

    Parameters
    ----------
    estimator : str
        A name in :data:`core.estimators.ESTIMATORS`.
    binning : str
        Binning scheme (binned estimators).
    n_bins : int
        Number of bins (ignored by the sweep, which chooses ``b*``).
    tie_policy : {"split", "keep"}
        Equal-mass tie policy.
    """

    estimator: str
    binning: str = "equal-mass"
    n_bins: int = 15
    tie_policy: str = "split"

    def __post_init__(self) -> None:
        check_n_bins(self.n_bins)
        check_tie_policy(self.tie_policy)
        info = ESTIMATORS.check(self.estimator, binning=self.binning)
        # an estimator with its own binning (mcb: discrete) runs with it, whatever was asked
        object.__setattr__(self, "binning", info.binning_for(self.binning))

    @classmethod
    def parse(cls, spec: EstimatorSpec | str | tuple[Any, ...]) -> EstimatorSpec:
        """Build a spec from ``"name"``, ``"name:binning"``, ``"name:binning:bins"`` or a tuple."""
        if isinstance(spec, EstimatorSpec):
            return spec
        if isinstance(spec, str):
            parts = spec.split(":")
        elif isinstance(spec, tuple):
            parts = list(spec)
        else:
            raise ConfigError(f"Cannot read an estimator from {spec!r}; use 'name:binning:bins'.")
        if not 1 <= len(parts) <= 4:
            raise ConfigError(f"Cannot read an estimator from {spec!r}; use 'name:binning:bins'.")
        kwargs: dict[str, Any] = {"estimator": parts[0]}
        if len(parts) > 1:
            kwargs["binning"] = parts[1]
        if len(parts) > 2:
            kwargs["n_bins"] = int(parts[2])
        if len(parts) > 3:
            kwargs["tie_policy"] = parts[3]
        return cls(**kwargs)

    @property
    def info(self) -> EstimatorInfo:
        """The estimator's registry entry."""
        return ESTIMATORS.get(self.estimator)

    @property
    def binned(self) -> bool:
        """Whether the estimator bins with a chosen binning and estimates the true ℓp error.

        Estimators without an ℓp norm (``norms=None``: the kernel estimators, the CORP
        ``mcb`` on the Brier scale) estimate another quantity: no true-error reference.
        """
        return self.info.binned and self.info.norms is not None

    @property
    def fixed_bins(self) -> bool:
        """Whether it bins with ``n_bins`` bins (the sweep chooses its own number)."""
        return self.binned and self.info.statistics != "sorted"

    @property
    def label(self) -> str:
        """Short label, e.g. ``"plugin EM-15"`` or ``"sweep EW"``."""
        if not self.binned:
            return self.estimator
        short = _SHORT.get(self.binning, self.binning)
        if not self.fixed_bins:
            return f"{self.estimator} {short}"
        return f"{self.estimator} {short}-{self.n_bins}"

    @property
    def display(self) -> str:
        """Human label, as controls, tables and legends show it.

        The registry's label, then the binning's and the number of bins, e.g.
        ``"Plug-in binned (ECE), equal mass, B = 15"`` (:attr:`label` is the papers'
        shorthand ``"plugin EM-15"``, the key of the result tables).
        """
        text = option_label(f"{self.estimator}:{self.binning}") if self.binned else self.info.label
        return f"{text}, B = {self.n_bins}" if self.fixed_bins else text


def default_estimators(n_bins: int = 15) -> tuple[EstimatorSpec, ...]:
    """Return the paper's six binned estimators: plug-in, debiased and sweep, each EW and EM."""
    return tuple(
        EstimatorSpec(name, binning, n_bins)
        for name in ("plugin", "debiased", "sweep")
        for binning in ("equal-width", "equal-mass")
    )


#: Binnings a bias run offers for binned estimators.
SIMULATION_BINNINGS = ("equal-width", "equal-mass")


def estimator_choices(*, binned_only: bool = False) -> list[str]:
    """Return every estimator a bias run can simulate, as :meth:`EstimatorSpec.parse` reads it.

    Binned estimators appear once per binning they accept of :data:`SIMULATION_BINNINGS`
    (``"name:binning"``); kernel estimators by name.

    Parameters
    ----------
    binned_only : bool, default=False
        Leave out the kernel estimators (they estimate another quantity, so a world's true
        calibration error is no reference for them).

    Returns
    -------
    list of str
        Options in registry order.
    """
    out = []
    for info in ESTIMATORS:
        if info.binned and info.norms is not None:
            out += [f"{info.name}:{b}" for b in SIMULATION_BINNINGS if info.accepts_binning(b)]
        elif not binned_only:
            out.append(info.name)
    return out


def option_label(option: str) -> str:
    """Return the label of an option of :func:`estimator_choices`, as controls show it.

    The estimator's registry label and, for a binned estimator, its binning's, e.g.
    ``"Plug-in binned (ECE), equal width"`` for ``"plugin:equal-width"`` (no bin count).
    """
    spec = EstimatorSpec.parse(option)
    if not spec.binned:
        return spec.info.label
    return f"{spec.info.label}, {BINNINGS.get(spec.binning).label.lower()}"


def specs_with_bins(options: Sequence[str], n_bins: int) -> tuple[EstimatorSpec, ...]:
    """Return the specs of :func:`estimator_choices` options, fixed-bin ones with ``n_bins``."""
    out = []
    for option in options:
        spec = EstimatorSpec.parse(option)
        if spec.fixed_bins:
            spec = EstimatorSpec(spec.estimator, spec.binning, int(n_bins), spec.tie_policy)
        out.append(spec)
    return tuple(out)
