"""Library conventions: the bins other calibration libraries make, reproduced exactly.

A convention is one :class:`ConventionInfo` in :data:`CONVENTIONS`. It declares how its
library turns scores into bins — the equal-width edges (``numpy.arange(B + 1) / B``,
``numpy.linspace`` or ``torch.linspace``), the equal-mass edges (``numpy.quantile``,
``numpy.percentile`` or ``numpy.array_split`` midpoints), which side a bin is closed on,
clipping, float32 casting and the extra bin for a confidence of exactly 1.0 — and which
estimators, norms, lenses and binnings the library has. Only the binning changes: the
estimators' kernels, the bootstrap, the bin table and the figures read the bins a
convention makes like any other bins, so ``calibration_error(..., convention="netcal")``
is netcal's ECE on any input, with Calibscope's intervals and diagram around it.

``calibscope`` is the default (:mod:`core.stats.binning`); the others are ``sklearn``
(``calibration_curve``), ``netcal`` (``ECE``, ``MCE``, ``ACE``), ``torchmetrics``
(``binary_/multiclass_calibration_error``), ``uncertainty-calibration`` (``get_ece``,
``get_ece_em``, ``lower_bound_scaling_ce``) and ``relplot`` (``binnedECE``).
:func:`core.analyses.peers.peer_table` says what each library would report on a data set and why
it differs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from core.base.errors import ConfigError
from core.base.registry import Entry, Registry
from core.base.validation import norm_text
from core.stats.binning import BINNINGS
from core.stats.combine import combine_lp, combine_signed

__all__ = [
    "CONVENTIONS",
    "DEFAULT_CONVENTION",
    "ConventionInfo",
    "LibraryFunction",
    "torch_linspace",
]

#: The convention of :mod:`core.stats.binning` (Calibscope's own bins).
DEFAULT_CONVENTION = "calibscope"


@dataclass(frozen=True)
class LibraryFunction:
    """One thing a library computes: an estimator at a norm on a binning, and its call.

    Attributes
    ----------
    estimator : str
        The Calibscope estimator it equals on the library's bins.
    norm : float
        ``1.0``, ``2.0`` or ``inf``.
    binning : str
        ``"equal-width"``, ``"equal-mass"`` or ``"discrete"``.
    call : str
        The library's own call, ``B`` standing for the number of bins.
    """

    estimator: str
    norm: float
    binning: str
    call: str


@dataclass(frozen=True, kw_only=True)
class ConventionInfo(Entry):
    """How one library bins scores, and what it computes on its bins.

    ``func(scores, binning, n_bins) -> (index, edges)`` bins scores that
    :meth:`transform` has already cast and clipped; ``edges`` has one more entry than
    there are bins (an extra bin for 1.0 is ``[1, 1]``).

    Attributes
    ----------
    library : str
        The library's name as users know it (``""`` for Calibscope's own).
    native : bool
        True for Calibscope's own bins (:mod:`core.stats.binning`).
    functions : tuple of LibraryFunction
        Everything the library computes that a convention reproduces.
    lenses : tuple of str
        The lenses the library has.
    closed : str
        ``"left"`` or ``"right"``: the side of an equal-width bin a score on an edge joins.
    edge_rule : str
        How its equal-width edges are computed (one phrase).
    mass_rule : str
        How its equal-mass edges are computed (one phrase; empty when it has none).
    clip : bool
        Scores are clipped to ``[ε, 1 − ε]`` (ε the float64 machine epsilon) first.
    float32_lenses : tuple of str
        Lenses whose scores the library casts to float32 (and bins on float32 edges).
    input_dtype_lenses : tuple of str
        Lenses on which the library bins in the input's dtype: float32 predictions are
        binned on float32 edges there (float64 ones on float64 edges).
    extra_bin : bool
        A score of exactly 1.0 lies in a bin of its own above the last.
    combine_clipped : bool
        Signed per-component values (debiased ℓ2) are clipped at 0 per component before
        they are averaged, rather than once after.
    """

    library: str = ""
    native: bool = False
    functions: tuple[LibraryFunction, ...] = ()
    lenses: tuple[str, ...] = ()
    closed: str = "left"
    edge_rule: str = ""
    mass_rule: str = ""
    clip: bool = False
    float32_lenses: tuple[str, ...] = ()
    input_dtype_lenses: tuple[str, ...] = ()
    extra_bin: bool = False
    combine_clipped: bool = False

    @property
    def estimators(self) -> tuple[str, ...]:
        """The estimators the library has (in the order of :attr:`functions`)."""
        return tuple(dict.fromkeys(f.estimator for f in self.functions))

    @property
    def binnings(self) -> tuple[str, ...]:
        """The binnings the library has."""
        return tuple(dict.fromkeys(f.binning for f in self.functions))

    def function(self, estimator: str, norm: float, binning: str) -> LibraryFunction | None:
        """Return the library's function for these choices, or None."""
        for f in self.functions:
            if (f.estimator, f.norm, f.binning) == (estimator, float(norm), binning):
                return f
        return None

    def offers(self) -> str:
        """One phrase listing what the library has (for error messages and notes)."""
        parts = [f"{f.estimator} {norm_text(f.norm)} on {f.binning} bins" for f in self.functions]
        return "; ".join(parts) + f" (lenses: {', '.join(self.lenses)})"

    def check(self, *, estimator: str, norm: float, binning: str, lens: str) -> None:
        """Raise :class:`~core.base.errors.ConfigError` unless the library has these choices."""
        if self.native:
            return
        if lens not in self.lenses or self.function(estimator, norm, binning) is None:
            raise ConfigError(
                f"The {self.name} convention reproduces {self.library}, which has no "
                f"{estimator} {norm_text(norm)} on {binning} bins with the {lens} lens. "
                f"It offers: {self.offers()}. Choose one of these or convention='calibscope'."
            )

    def transform(self, scores: np.ndarray, lens: str) -> np.ndarray:
        """Return the scores the library bins and averages (cast, clipped), as float64."""
        out = scores
        if lens in self.float32_lenses:
            out = np.asarray(out, dtype=np.float32).astype(np.float64)
        if self.clip:
            eps = np.finfo(np.float64).eps
            out = np.clip(out, eps, 1.0 - eps)
        return np.asarray(out, dtype=np.float64)

    def bins(
        self,
        scores: np.ndarray,
        binning: str,
        n_bins: int,
        lens: str,
        *,
        float32_input: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(index, edges)`` of scores already :meth:`transform`-ed.

        ``float32_input``: the predictions were given as float32, which a library binning
        in the input's dtype (:attr:`input_dtype_lenses`) bins on float32 edges.
        """
        float32 = lens in self.float32_lenses or (float32_input and lens in self.input_dtype_lenses)
        return self.func(scores, binning, n_bins, float32)

    def combine_for(self, info: Any) -> Callable[[np.ndarray, np.ndarray, float], np.ndarray]:
        """Return how an estimator's per-component values aggregate under this convention."""
        if self.combine_clipped and info.combine is combine_signed:

            def clipped(per: np.ndarray, weights: np.ndarray, norm: float) -> np.ndarray:
                if norm == 2.0:  # each component's √max(·, 0), then the ℓ2 mean
                    return combine_lp(np.sqrt(np.maximum(per, 0.0)), weights, norm)
                return combine_lp(np.maximum(per, 0.0), weights, norm)

            return clipped
        return info.combine


CONVENTIONS: Registry[ConventionInfo] = Registry("convention", ConventionInfo)


# --------------------------------------------------------------------------- edges


@lru_cache(maxsize=64)
def _torch_linspace(n_bins: int, float32: bool) -> np.ndarray:
    def rnd(x: Fraction) -> float:
        # every value here is exact in float64, so float32 rounding from it is exact too
        return float(np.float32(float(x))) if float32 else float(x)

    step = Fraction(rnd(Fraction(1, n_bins)))
    half = (n_bins + 1) // 2
    out = [rnd(step * k) if k < half else rnd(1 - step * (n_bins - k)) for k in range(n_bins + 1)]
    arr = np.array(out, dtype=np.float64)
    arr.flags.writeable = False
    return arr


def torch_linspace(n_bins: int, *, float32: bool = False) -> np.ndarray:
    """Return ``torch.linspace(0, 1, n_bins + 1)`` exactly, as float64 values.

    PyTorch's CPU kernel computes ``step = 1/B`` in the tensor's dtype, the first half of
    the points as ``step·k`` and the second half as ``1 − step·(B − k)`` with one rounding
    (a fused multiply-add), so its edges differ from ``numpy.linspace`` in the last bit for
    some ``B`` (``tests/test_conventions.py`` compares them for ``B`` up to 1,200).

    Parameters
    ----------
    n_bins : int
        Number of bins ``B``.
    float32 : bool, default False
        The float32 edges (torchmetrics' multiclass path).

    Returns
    -------
    numpy.ndarray
        ``(B + 1,)`` float64 (read-only).
    """
    return _torch_linspace(int(n_bins), bool(float32))


def _right_closed(scores: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin k = (e_k, e_{k+1}], the first [e_0, e_1]: ``searchsorted(interior, side="left")``."""
    return np.searchsorted(edges[1:-1], scores, side="left").astype(np.intp)


def _left_closed(scores: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin k = [e_k, e_{k+1}), the last closed (``numpy.histogram``)."""
    idx = np.searchsorted(edges, scores, side="right").astype(np.intp) - 1
    return np.clip(idx, 0, edges.shape[0] - 2)


def _native_discrete(scores: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    return BINNINGS.get("discrete").func(scores, n_bins, "split")


def _unsupported(binning: str) -> ConfigError:
    return ConfigError(f"This convention has no {binning!r} binning.")


@CONVENTIONS.register(
    "calibscope",
    label="Calibscope",
    description="Calibscope's own bins (core.stats.binning): equal-width bins [k/B, (k+1)/B) on the "
    "edges numpy.arange(B + 1)/B, equal-mass bins by rank.",
    formula="docs/formulas.md#binning",
    native=True,
    lenses=("binary", "top-label", "classwise"),
)
def _calibscope(
    scores: np.ndarray, binning: str, n_bins: int, float32: bool
) -> tuple[np.ndarray, np.ndarray]:
    return BINNINGS.get(binning).func(scores, n_bins, "split")


_ALL = (1.0, 2.0, np.inf)


@CONVENTIONS.register(
    "sklearn",
    label="scikit-learn",
    description="sklearn.calibration.calibration_curve's bins: numpy.linspace edges (strategy "
    "'uniform') or numpy.percentile edges ('quantile'), right-closed (searchsorted on the "
    "interior edges); the ECE weights its bins by their counts.",
    formula="docs/formulas.md#library-conventions",
    library="scikit-learn",
    functions=tuple(
        LibraryFunction("plugin", p, b, f"calibration_curve(y, p, n_bins={{B}}, strategy={s!r})")
        for b, s in (("equal-width", "uniform"), ("equal-mass", "quantile"))
        for p in _ALL
    ),
    lenses=("binary", "top-label"),
    closed="right",
    edge_rule="numpy.linspace edges, right-closed",
    mass_rule="numpy.percentile edges, right-closed",
)
def _sklearn(
    scores: np.ndarray, binning: str, n_bins: int, float32: bool
) -> tuple[np.ndarray, np.ndarray]:
    if binning == "equal-width":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    elif binning == "equal-mass":
        edges = np.percentile(scores, np.linspace(0, 1, n_bins + 1) * 100)
    else:
        raise _unsupported(binning)
    return _right_closed(scores, edges), edges


@CONVENTIONS.register(
    "netcal",
    label="netcal",
    description="netcal.metrics ECE/MCE/ACE: scores clipped to [ε, 1 − ε], numpy.linspace "
    "edges (or numpy.quantile edges with the ends set to 0 and 1), left-closed bins "
    "(numpy.histogramdd).",
    formula="docs/formulas.md#library-conventions",
    library="netcal",
    functions=(
        LibraryFunction("plugin", 1.0, "equal-width", "ECE(bins={B}).measure(X, y)"),
        LibraryFunction("plugin", np.inf, "equal-width", "MCE(bins={B}).measure(X, y)"),
        LibraryFunction("average", 1.0, "equal-width", "ACE(bins={B}).measure(X, y)"),
        LibraryFunction(
            "plugin", 1.0, "equal-mass", "ECE(bins={B}, equal_intervals=False).measure(X, y)"
        ),
        LibraryFunction(
            "plugin", np.inf, "equal-mass", "MCE(bins={B}, equal_intervals=False).measure(X, y)"
        ),
        LibraryFunction(
            "average", 1.0, "equal-mass", "ACE(bins={B}, equal_intervals=False).measure(X, y)"
        ),
    ),
    lenses=("binary", "top-label"),
    closed="left",
    edge_rule="numpy.linspace edges, left-closed",
    mass_rule="numpy.quantile edges, left-closed",
    clip=True,
)
def _netcal(
    scores: np.ndarray, binning: str, n_bins: int, float32: bool
) -> tuple[np.ndarray, np.ndarray]:
    if binning == "equal-width":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    elif binning == "equal-mass":
        edges = np.quantile(scores, np.linspace(0.0, 1.0, n_bins + 1))
        edges[0], edges[-1] = 0.0, 1.0
    else:
        raise _unsupported(binning)
    return _left_closed(scores, edges), edges


@CONVENTIONS.register(
    "torchmetrics",
    label="torchmetrics",
    description="torchmetrics binary_/multiclass_calibration_error: torch.linspace edges, "
    "left-closed bins (torch.bucketize(right=True) − 1) and an extra bin for a confidence of "
    "exactly 1.0; the multiclass (top-label) confidences and edges are float32.",
    formula="docs/formulas.md#library-conventions",
    library="torchmetrics",
    functions=(
        LibraryFunction("plugin", 1.0, "equal-width", "calibration_error(p, y, n_bins={B})"),
        LibraryFunction(
            "plugin", 2.0, "equal-width", "calibration_error(p, y, n_bins={B}, norm='l2')"
        ),
        LibraryFunction(
            "plugin", np.inf, "equal-width", "calibration_error(p, y, n_bins={B}, norm='max')"
        ),
    ),
    lenses=("binary", "top-label"),
    closed="left",
    edge_rule="torch.linspace edges, left-closed",
    float32_lenses=("top-label",),
    input_dtype_lenses=("binary",),
    extra_bin=True,
)
def _torchmetrics(
    scores: np.ndarray, binning: str, n_bins: int, float32: bool
) -> tuple[np.ndarray, np.ndarray]:
    if binning != "equal-width":
        raise _unsupported(binning)
    edges = torch_linspace(n_bins, float32=float32)
    idx = np.searchsorted(edges, scores, side="right").astype(np.intp) - 1
    np.maximum(idx, 0, out=idx)  # scores are in [0, 1]: only rounding could go below
    return idx, np.append(edges, 1.0)  # bin B is [1, 1]: the extra bin


@CONVENTIONS.register(
    "uncertainty-calibration",
    label="uncertainty-calibration",
    description="Kumar et al.'s uncertainty-calibration (import name calibration): edges k/B "
    "or midpoints between numpy.array_split chunks of the sorted scores, right-closed "
    "(numpy.searchsorted, side left); marginal errors average each class's clipped value.",
    formula="docs/formulas.md#library-conventions",
    library="uncertainty-calibration",
    functions=(
        LibraryFunction("plugin", 1.0, "equal-width", "get_ece(probs, labels, num_bins={B})"),
        LibraryFunction(
            "plugin",
            2.0,
            "equal-width",
            "lower_bound_scaling_ce(..., debias=False, binning_scheme=get_equal_prob_bins)",
        ),
        LibraryFunction(
            "debiased",
            2.0,
            "equal-width",
            "lower_bound_scaling_ce(..., binning_scheme=get_equal_prob_bins)",
        ),
        LibraryFunction("plugin", 1.0, "equal-mass", "get_ece_em(probs, labels, num_bins={B})"),
        LibraryFunction(
            "plugin", 2.0, "equal-mass", "lower_bound_scaling_ce(..., p=2, debias=False)"
        ),
        LibraryFunction("debiased", 2.0, "equal-mass", "lower_bound_scaling_ce(..., p=2)"),
        LibraryFunction("plugin", 1.0, "discrete", "get_binning_ce(..., p=1, debias=False)"),
        LibraryFunction("plugin", 2.0, "discrete", "get_binning_ce(..., p=2, debias=False)"),
        LibraryFunction("debiased", 2.0, "discrete", "get_binning_ce(..., p=2)"),
    ),
    lenses=("binary", "top-label", "classwise"),
    closed="right",
    edge_rule="edges k/B, right-closed",
    mass_rule="numpy.array_split midpoints, right-closed",
    combine_clipped=True,
)
def _uncertainty_calibration(
    scores: np.ndarray, binning: str, n_bins: int, float32: bool
) -> tuple[np.ndarray, np.ndarray]:
    if binning == "discrete":
        # get_discrete_bins: the midpoints of consecutive distinct values, then 1.0, read by
        # bisect_left; a midpoint that rounds up onto the larger of two values one ulp apart
        # puts both in one bin, as the library does
        u = np.unique(scores)
        upper = np.append((u[:-1] + u[1:]) / 2.0, 1.0)
    elif binning == "equal-width":
        upper = np.arange(1, n_bins + 1) * 1.0 / n_bins
    elif binning == "equal-mass":
        s = np.sort(scores)
        b = min(n_bins, s.shape[0])
        q, r = divmod(s.shape[0], b)
        # numpy.array_split: the first r chunks hold q + 1 scores, the others q
        starts = np.arange(1, b) * q + np.minimum(np.arange(1, b), r)
        upper = np.unique(np.append((s[starts - 1] + s[starts]) / 2.0, 1.0))
    else:
        raise _unsupported(binning)
    return np.searchsorted(upper, scores, side="left").astype(np.intp), np.append(0.0, upper)


@CONVENTIONS.register(
    "relplot",
    label="relplot",
    description="relplot.metrics.binnedECE: bin int(f / (1/B)) with B + 1 slots, so a score "
    "of exactly 1.0 has a bin of its own; ℓ1 only.",
    formula="docs/formulas.md#library-conventions",
    library="relplot",
    functions=(
        LibraryFunction("plugin", 1.0, "equal-width", "metrics.binnedECE(f, y, nbins={B})"),
    ),
    lenses=("binary", "top-label"),
    closed="left",
    edge_rule="bin int(f / (1/B)), left-closed",
    extra_bin=True,
)
def _relplot(
    scores: np.ndarray, binning: str, n_bins: int, float32: bool
) -> tuple[np.ndarray, np.ndarray]:
    if binning != "equal-width":
        raise _unsupported(binning)
    idx = (scores / (1.0 / n_bins)).astype(np.intp)
    return idx, np.append(np.arange(n_bins + 1) / n_bins, 1.0)
