"""The estimator registry: typed entries, the :class:`Estimate` record and the shared kernels.

Every calibration-error estimator is one :class:`EstimatorInfo` in :data:`ESTIMATORS`. The
entry declares everything the rest of :mod:`core` needs to know about it: the lenses,
norms and binnings it accepts, whether its value depends on the seed, whether its cost is
quadratic, its options with their defaults, and for a binned estimator how it is computed
from bin statistics:

- ``statistics``: what a batched evaluation needs (see :data:`STATISTICS`): the bins' sums
  alone (``"bins"``: counts, score sums and label sums, which add up across chunks of
  data), the bins' sums plus the spread of each bin's scores (``"scores-in-bins"``), the
  scores in sorted order (``"sorted"``: every number of bins at once, the sweep), or the
  rows themselves (``"rows"``: the kernel estimators);
- ``kernel``: the batched kernel, ``kernel(batch, norm, context) -> values`` of one lens
  component for each of the batch's ``R`` samples (a :class:`BinBatch` for ``"bins"`` and
  ``"scores-in-bins"``, a :class:`SortedSample` for ``"sorted"``);
- ``combine``: how per-component values become the estimate (:func:`combine_lp` or
  :func:`combine_signed`);
- ``describe``: the per-component values, bins and details of a single estimate.

One sample is a batch of one: :func:`estimate_binned` runs the same kernel as the bootstrap
(:mod:`core.stats.intervals`), the model comparison on shared bins, the bias-vs-n runner and the
consistency test, which only ask the registry. Adding a binned estimator is one entry (a
kernel written against :class:`BinBatch`) and its tests.

The batch kernels :func:`plugin_from_stats`, :func:`debiased_sq_from_stats` and
:func:`debiased_l1_from_stats` take bin statistics with any leading batch shape (last
axis = bins).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import ArrayLike

from core.base.errors import ConfigError
from core.base.registry import Entry, Registry
from core.base.validation import check_norm, norm_key, norm_text
from core.stats.binning import BINNINGS, BinStats
from core.stats.combine import aggregate, combine_lp, combine_signed  # noqa: F401  (re-exported)
from core.stats.lenses import LENSES, LensView, data_lens, lens_view  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from core.stats.binned_view import BinnedView

#: Norms every binned estimator can be asked for (``check_norm`` returns these floats).
ALL_NORMS: tuple[float, ...] = (1.0, 2.0, np.inf)

#: Lenses with a 1-D view, i.e. the lenses binned estimators accept.
BINNED_LENSES: tuple[str, ...] = ("binary", "top-label", "classwise")

#: What a batched evaluation of an estimator needs (:attr:`EstimatorInfo.statistics`).
STATISTICS: dict[str, str] = {
    "bins": "counts, score sums and label sums per bin (sums: chunks of data merge by addition)",
    "scores-in-bins": "the bins' sums and the spread of each bin's scores around a per-bin "
    "centre (ℓ2: sums of squares, which merge; ℓ1 and ℓ∞: the rows of each bin)",
    "sorted": "the scores in sorted order with prefix sums of the outcomes (the bins of every "
    "number of bins)",
    "rows": "the rows themselves, in order (kernel estimators)",
}


@dataclass(frozen=True, eq=False)
class Estimate:
    """The output of one registered estimator.

    Attributes
    ----------
    value : float
        The calibration error (after aggregation over components).
    components : tuple of str
        Component names (``("top-label",)``, the positive class, or class names).
    component_values : tuple of float
        The error of each component before aggregation.
    bins : tuple of BinStats or None
        Bin statistics per component (None for kernel estimators).
    details : dict
        Estimator-specific extras, e.g. ``signed_square`` (debiased ℓ2), ``b_star`` and
        ``sweep_trace`` (sweep).
    """

    value: float
    components: tuple[str, ...]
    component_values: tuple[float, ...]
    bins: tuple[BinStats, ...] | None = None
    details: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- batches


class BinBatch(Protocol):
    """Bin statistics of ``R`` samples of one lens component (last axis = bins).

    Implemented by :class:`core.stats.binning.RowBatch` (rows with a fixed bin each: one sample,
    gathered bootstrap resamples, simulated datasets) and by the bootstrap's sorted
    engine (resamples re-binned by rank).
    """

    @property
    def counts(self) -> np.ndarray:
        """``(R, B)`` points per bin."""

    @property
    def score_sums(self) -> np.ndarray:
        """``(R, B)`` sums of the scores per bin."""

    @property
    def label_sums(self) -> np.ndarray:
        """``(R, B)`` sums of the outcomes per bin."""

    def score_deviation(self, center: np.ndarray, norm: float) -> np.ndarray:
        """``(R, B)``: ``Σ_{i in bin} |s_i − c_b|^p`` (``p`` = 1, 2) or ``max |s_i − c_b|`` (∞)."""


class SortedSample(Protocol):
    """``R`` samples of one lens component, each in score order (the sweep's input).

    ``binning`` and ``tie_policy`` say which candidate binnings the boundaries follow.
    """

    n_rows: int
    n: int
    binning: str
    tie_policy: str

    def boundaries(self, rows: np.ndarray, k: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(t, prefix)``: positions of candidate boundaries and the outcome sums before them."""

    def monotone(self, rows: np.ndarray) -> np.ndarray:
        """Whether every candidate binning of each row is monotone (see ``sweep_search``)."""

    def bin_sums(self, rows: np.ndarray, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(counts, score_sums, label_sums)`` of the ``b``-bin binning of each row."""


class NormalStream:
    """A stream of standard normal draws shared by every sample of a batch.

    A random estimator reads its draws from this stream at a per-sample offset, so each
    sample of a batch gets exactly the numbers a single call seeded the same way would.

    Parameters
    ----------
    seed : int or numpy.random.Generator
        An int restarts the stream from ``default_rng(seed)`` (what the bootstrap does on
        every resample); a Generator is read from sequentially (one estimate).
    """

    def __init__(self, seed: int | np.random.Generator) -> None:
        self._rng = seed if isinstance(seed, np.random.Generator) else None
        self._seed = seed
        self._z = np.zeros(0)

    def first(self, length: int) -> np.ndarray:
        """Return the first ``length`` draws of the stream."""
        if self._rng is None:
            if length > self._z.size:
                # the first draws of a seeded generator do not depend on how many follow,
                # so growing geometrically keeps every prefix and draws O(length) in all
                size = max(length, 2 * self._z.size)
                self._z = np.random.default_rng(self._seed).standard_normal(size)
        elif length > self._z.size:
            more = self._rng.standard_normal(length - self._z.size)
            self._z = np.concatenate([self._z, more])
        return self._z[:length]


@dataclass
class KernelContext:
    """What a kernel needs besides the statistics: options and the random stream.

    Attributes
    ----------
    options : mapping
        The estimator's options, defaults filled in.
    stream : NormalStream
        The normal draws of a random estimator.
    offset : numpy.ndarray
        ``(R,)`` where each sample's draws continue (components are evaluated in order;
        a kernel that draws advances it).
    """

    options: Mapping[str, Any]
    stream: NormalStream
    offset: np.ndarray


Kernel = Callable[[Any, float, KernelContext], "np.ndarray | tuple[np.ndarray, dict]"]
Describe = Callable[
    ["EstimatorInfo", np.ndarray, Mapping[str, np.ndarray], "BinnedView", float, Mapping],
    tuple[tuple[float, ...], tuple[BinStats, ...], dict[str, Any]],
]


def describe_plain(
    info: EstimatorInfo,
    signed: np.ndarray,
    extras: Mapping[str, np.ndarray],
    view: BinnedView,
    norm: float,
    options: Mapping[str, Any],
) -> tuple[tuple[float, ...], tuple[BinStats, ...], dict[str, Any]]:
    """Per-component values as computed, the view's bins, no details."""
    return tuple(float(v) for v in signed), view.stats, {}


# --------------------------------------------------------------------------- the entry


@dataclass(frozen=True, kw_only=True)
class EstimatorInfo(Entry):
    """Everything about one calibration-error estimator (see the module docstring).

    Attributes
    ----------
    family : {"binned", "joint-binned", "kernel", "smooth"}
        How it measures calibration (``joint-binned``: bins of the whole probability
        vector, :mod:`core.estimators.joint`).
    lenses : tuple of str
        Lenses it accepts.
    norms : tuple of float or None
        ℓp norms it accepts; None for an estimator without an ℓp parameter (it ignores
        ``norm``).
    binnings : tuple of str or None
        Binnings a binned estimator accepts (None: every registered binning).
    own_binning : str or None
        A binning the estimator always uses, whatever binning it is asked for (the CORP
        ``mcb`` reads the ``"discrete"`` bins: its definition has no binning choice); its
        calls (:class:`core.inference.calibration.EstimatorCall`) carry this binning. None: the
        caller's binning.
    random_norms : tuple of float
        Norms at which the value depends on the seed.
    quadratic : bool
        Quadratic cost in the number of rows (point estimates only at large ``n``).
    options : mapping
        Extra options and their defaults.
    statistics : str
        What a batched evaluation needs, a key of :data:`STATISTICS`.
    sample : callable or None
        ``sample(component) -> batch``: what the kernel of one estimate reads of a binned
        lens component (:class:`~core.stats.binned_view.ComponentBins`); None: its bins' batch
        (the sweep reads the component in score order).
    kernel : callable or None
        The batched kernel of a binned estimator.
    combine : callable
        ``combine(per_component (R, C), weights (C,), norm) -> (R,)``.
    describe : callable
        Per-component values, bins and details of one estimate.
    check_option_values : callable or None
        ``check(options) -> options``: validates option values (raises ConfigError).
    default_lens : str
        The lens used when a caller gives none (``lens=None``; an entry declared without
        one takes ``"top-label"`` if it accepts it, else its first lens): ``"top-label"`` for the
        binned estimators and MMCE (its definition), ``"canonical"`` for the SKCE and KDE
        estimators (the full vector, as in their papers). The one rule of every entry
        point (:func:`core.inference.calibration.calibration_error`, the bootstrap, the CLI).
    quantity : str
        What a kernel estimator's number is, for the notes beside it in tables (empty
        for binned estimators: the ℓp calibration error of their bins).
    experimental : bool
        Not yet checked against enough published numbers to be relied on; pages and
        tables say so (its label and description carry the word).
    resample : callable or None
        A vectorised bootstrap of an estimator that reads rows (``statistics="rows"``):
        ``resample(scores, outcomes, idx, options) -> (R,)``, the values on one lens
        component of the ``R`` resamples drawn as row indices ``idx`` (``(R, n)``), equal
        to the estimator's per-component value on each resample's rows; the bootstrap
        combines the components with ``combine`` (path ``"rows-batch"``).
    lp_scale : bool or None
        Whether its value is an ℓp calibration error on the scale of the binned ones (None:
        whether it is binned). The analysis bootstraps these beside the binned estimators,
        and the consistency test accepts them.
    subsample : bool or None
        Whether it runs on the seeded kernel subsample at large ``n`` (``kernel_sample``)
        rather than on every row (None: whether it is off the ℓp scale, as the kernel
        estimators are; the joint-binned ones are linear in ``n`` and read every row).
    no_interval : str
        Why it gets no bootstrap interval ("": it gets one), shown in its row's note.
    reads_n_bins : bool or None
        Whether its value depends on the number of bins asked for (None: whether it bins
        the scores itself, binned or joint-binned, with the caller's binning). An estimator
        that picks its own number of bins (the sweep) or ignores it (``mcb``'s discrete
        bins) says False, and a change of ``n_bins`` reuses its value.
    bootstrap_truth : str
        The estimator whose value on a sample is what this one estimates in that sample's
        bootstrap world, where the rows are the population ("": itself). The basic
        bootstrap interval pivots on it (:mod:`core.stats.intervals`): a debiased estimator
        targets the plug-in error of the rows (``"plugin"``), an unbiased SKCE the SKCE of
        their empirical distribution, the biased V-statistic (``"skce-b"``).
    truth_options : mapping
        Options of that estimator that differ from this one's (its other options are this
        call's, where it has them): MMCE's unbiased estimate targets the biased one.
    support : tuple of float
        The range of the estimand, ``[0, inf)`` for every calibration error (a squared or
        kernel one included, whose unbiased estimates can be negative): the basic bootstrap
        interval is cut to it (:func:`core.inference.bootstrap.support_of`).
    """

    family: str
    lenses: tuple[str, ...]
    norms: tuple[float, ...] | None = ALL_NORMS
    binnings: tuple[str, ...] | None = None
    own_binning: str | None = None
    random_norms: tuple[float, ...] = ()
    quadratic: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)
    statistics: str = "rows"
    sample: Callable[[Any], Any] | None = None
    kernel: Kernel | None = None
    combine: Callable[[np.ndarray, np.ndarray, float], np.ndarray] = combine_lp
    describe: Describe = describe_plain
    check_option_values: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    default_lens: str = None  # type: ignore[assignment]  (None: set in __post_init__)
    quantity: str = ""
    experimental: bool = False
    resample: Callable[..., np.ndarray] | None = None
    lp_scale: bool | None = None
    subsample: bool | None = None
    no_interval: str = ""
    reads_n_bins: bool | None = None
    bootstrap_truth: str = ""
    truth_options: Mapping[str, Any] = field(default_factory=dict)
    support: tuple[float, float] = (0.0, math.inf)

    def __post_init__(self) -> None:
        if self.reads_n_bins is None:
            bins_itself = self.family in ("binned", "joint-binned") and self.own_binning is None
            object.__setattr__(self, "reads_n_bins", bins_itself)
        if self.lp_scale is None:
            object.__setattr__(self, "lp_scale", self.binned)
        if self.subsample is None:
            object.__setattr__(self, "subsample", not self.lp_scale)
        if self.default_lens is None:  # top-label when accepted, else its first lens
            own = "top-label" if "top-label" in self.lenses else self.lenses[0]
            object.__setattr__(self, "default_lens", own)
        if self.default_lens not in self.lenses:
            raise ValueError(
                f"default lens {self.default_lens!r} of {self.name} is not one of its lenses"
            )
        if self.statistics not in STATISTICS:
            raise ValueError(f"unknown statistics {self.statistics!r} of {self.name}")
        if self.binned and self.kernel is None:
            raise ValueError(f"binned estimator {self.name} needs a kernel")
        if self.own_binning is not None and not self.binned:
            raise ValueError(f"own_binning applies to binned estimators, not {self.name}")

    @property
    def binned(self) -> bool:
        """Whether the estimator bins the scores."""
        return self.family == "binned"

    @property
    def lp_error(self) -> bool:
        """Whether its value is an ℓp calibration error: on the ℓp scale and with a norm.

        The CORP ``mcb`` is bootstrapped with the binned estimators (:attr:`lp_scale`) but
        is a difference of Brier scores (squared, no norm): sentences that compare ℓp
        errors, or write them in percent, leave it out.
        """
        return bool(self.lp_scale) and self.norms is not None

    def lens_or_default(self, lens: str | None) -> str:
        """Return ``lens``, or the estimator's :attr:`default_lens` for None."""
        return self.default_lens if lens is None else lens

    def lens_for(self, n_classes: int, lens: str | None = None) -> str:
        """Return ``lens``, or the lens this estimator reads data of ``n_classes`` classes on.

        The one default-lens rule of every surface: an estimator whose default is the
        top-label lens reads two classes on the binary lens where it has one
        (:func:`core.stats.lenses.data_lens`); any other default (the kernel estimators'
        canonical lens, MMCE's top-label one) stays.
        """
        if lens is not None:
            return lens
        if self.default_lens == "top-label":
            wanted = data_lens(n_classes)
            return wanted if wanted in self.lenses else self.default_lens
        return self.default_lens

    @property
    def from_bins(self) -> bool:
        """Whether its kernel reads bin statistics (a :class:`BinBatch`) on fixed bins."""
        return self.statistics in ("bins", "scores-in-bins")

    def random(self, norm: float) -> bool:
        """Whether the value at ``norm`` depends on the seed."""
        return norm in self.random_norms

    def accepts_binning(self, binning: str) -> bool:
        """Whether a binned estimator accepts ``binning`` (kernel estimators: always).

        An estimator with its own binning accepts any: it ignores the choice.
        """
        return (
            not self.binned
            or self.own_binning is not None
            or self.binnings is None
            or binning in self.binnings
        )

    def binning_for(self, binning: str) -> str:
        """Return the binning a call asking for ``binning`` runs with (its own, if any)."""
        return self.own_binning if self.own_binning is not None else binning

    def supports(
        self, *, lens: str | None = None, norm: float | None = None, binning: str | None = None
    ) -> bool:
        """Whether the estimator accepts every given choice (None: not asked)."""
        return (
            (lens is None or lens in self.lenses)
            and (norm is None or self.norms is None or norm in self.norms)
            and (binning is None or self.accepts_binning(binning))
        )

    def check(
        self,
        *,
        lens: str | None = None,
        norm: float | str | None = None,
        binning: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Validate choices for this estimator: the one place its constraints are enforced.

        Parameters
        ----------
        lens, norm, binning : optional
            Choices to check (None: not checked). ``norm`` may be a string.
        options : mapping, optional
            Extra options; unknown ones are refused.

        Returns
        -------
        dict
            The options with their defaults filled in (and values validated).

        Raises
        ------
        ConfigError
            Naming what is wrong and what would work.
        """
        if lens is not None:
            LENSES.get(lens)
            if lens not in self.lenses:
                fits = ", ".join(ESTIMATORS.names(lenses=lens)) or "none"
                raise ConfigError(
                    f"Estimator {self.name!r} does not support the {lens!r} lens; it supports "
                    f"{', '.join(self.lenses)}. Estimators for {lens!r}: {fits}."
                )
        if norm is not None and self.norms is not None:
            p = check_norm(norm)
            if p not in self.norms:
                supported = ", ".join(f"{norm_key(v)} ({norm_text(v)})" for v in self.norms)
                raise ConfigError(
                    f"Estimator {self.name!r} does not support norm {norm_key(p)} "
                    f"({norm_text(p)}): it has no norm {norm_key(p)}. Use one of: {supported}."
                )
        if binning is not None and self.binned:
            BINNINGS.get(binning)
            if not self.accepts_binning(binning):
                raise ConfigError(
                    f"Estimator {self.name!r} bins with {' or '.join(self.binnings or ())}, "
                    f"not {binning!r}."
                )
        given = dict(options or {})
        unknown = sorted(set(given) - set(self.options))
        if unknown:
            allowed = tuple(self.options)
            hint = f"It accepts: {', '.join(allowed)}." if allowed else "It takes no extra options."
            raise ConfigError(
                f"Estimator {self.name!r} has no option(s) {', '.join(unknown)}. {hint}"
            )
        if self.check_option_values is not None:
            given = self.check_option_values(given)
        return {**self.options, **given}


class EstimatorRegistry(Registry[EstimatorInfo]):
    """The registry of estimators, with the one check of a choice of options."""

    def check(self, name: str, **choices: Any) -> EstimatorInfo:
        """Return the entry ``name`` after checking ``lens``, ``norm``, ``binning``, ``options``.

        Raises
        ------
        ConfigError
            For an unknown name or a choice the estimator does not accept.
        """
        info = self.get(name)
        info.check(**choices)
        return info

    def binned_for(self, *, lens: str, norm: float, binning: str) -> list[str]:
        """Names of the binned estimators that accept a lens, norm and binning."""
        return [
            e.name for e in self if e.binned and e.supports(lens=lens, norm=norm, binning=binning)
        ]

    def lp_for(self, *, lens: str, norm: float, binning: str) -> list[str]:
        """Names of the ℓp-scale estimators (binned or not) that accept a lens, norm and binning."""
        return [
            e.name for e in self if e.lp_scale and e.supports(lens=lens, norm=norm, binning=binning)
        ]


ESTIMATORS: EstimatorRegistry = EstimatorRegistry("estimator", EstimatorInfo)


# --------------------------------------------------------------------------- one estimate


def estimate_binned(
    info: EstimatorInfo,
    view: BinnedView,
    norm: float,
    rng: np.random.Generator | int,
    options: Mapping[str, Any],
    combine: Callable[[np.ndarray, np.ndarray, float], np.ndarray] | None = None,
) -> Estimate:
    """Evaluate a binned estimator on one sample: its kernel on a batch of one.

    Parameters
    ----------
    info : EstimatorInfo
        A binned estimator.
    view : core.stats.binned_view.BinnedView
        The binned lens components of the sample.
    norm : float
        A validated norm.
    rng : numpy.random.Generator or int
        Randomness of a random estimator.
    options : mapping
        Its options, defaults filled in (:meth:`EstimatorInfo.check`).
    combine : callable, optional
        How per-component values aggregate; default the entry's ``combine`` (a library
        convention may clip each component first, :mod:`core.stats.conventions`).

    Returns
    -------
    Estimate
        Value, per-component values, bins and details.
    """
    ctx = KernelContext(options, NormalStream(rng), np.zeros(1, dtype=np.int64))
    signed = np.empty(len(view.components))
    extras: dict[str, list[Any]] = {}
    for c, comp in enumerate(view.components):
        batch = comp.batch if info.sample is None else info.sample(comp)
        out = info.kernel(batch, norm, ctx)  # type: ignore[misc]
        values, more = out if isinstance(out, tuple) else (out, {})
        signed[c] = values[0]
        for key, arr in more.items():
            extras.setdefault(key, []).append(arr[0])
    weights = np.asarray(view.weights, dtype=np.float64)
    value = float((combine or info.combine)(signed[None, :], weights, norm)[0])
    arrays = {k: np.asarray(v) for k, v in extras.items()}
    component_values, bins, details = info.describe(info, signed, arrays, view, norm, options)
    return Estimate(value, view.names, component_values, bins, details)


# --------------------------------------------------------------------------- helpers


def plugin_from_stats(
    counts: ArrayLike, score_sums: ArrayLike, label_sums: ArrayLike, norm: float
) -> np.ndarray:
    """Plug-in binned ℓp calibration error from bin statistics (batched).

    ``(Σ_k (n_k/n) |f̄_k − ȳ_k|^p)^(1/p)``; empty bins contribute nothing and ``p = ∞``
    is the largest gap over non-empty bins.

    Parameters
    ----------
    counts, score_sums, label_sums : array_like
        Arrays of the same shape ``(..., B)``.
    norm : float
        ``1.0``, ``2.0`` or ``inf``.

    Returns
    -------
    numpy.ndarray
        Shape ``(...)`` (a 0-d array for one set of bins); NaN where ``n = 0``.

    Examples
    --------
    >>> round(float(plugin_from_stats([2, 2], [0.6, 1.7], [1, 2], 1)), 12)
    0.175
    """
    c = np.asarray(counts, dtype=np.float64)
    diff = np.abs(np.asarray(score_sums, dtype=np.float64) - label_sums)
    n = c.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if norm == 1.0:
            # Σ (n_k/n)|S_k/n_k − L_k/n_k| = Σ|S_k − L_k| / n
            out = diff.sum(axis=-1) / n
        elif np.isinf(norm):
            gap = np.where(c > 0, diff / np.where(c > 0, c, 1.0), -np.inf)
            out = gap.max(axis=-1)
            out = np.where(n > 0, out, np.nan)
        else:
            per_bin = np.where(c > 0, diff**norm / np.where(c > 0, c, 1.0) ** (norm - 1.0), 0.0)
            out = (per_bin.sum(axis=-1) / n) ** (1.0 / norm)
    return out


def debiased_sq_from_stats(
    counts: ArrayLike, score_sums: ArrayLike, label_sums: ArrayLike
) -> np.ndarray:
    """Signed debiased squared ℓ2 calibration error from bin statistics (batched).

    ``Σ_k (n_k/n) [ (f̄_k − ȳ_k)² − ȳ_k(1 − ȳ_k)/(n_k − 1) ]`` over bins with ``n_k ≥ 2``;
    bins with fewer than two points contribute 0 but keep their weight in ``n``
    (Bröcker 2012; Ferro & Fricker 2012; Kumar et al. 2019 Def. 5.2).

    Parameters
    ----------
    counts, score_sums, label_sums : array_like
        Arrays of the same shape ``(..., B)``.

    Returns
    -------
    numpy.ndarray
        Shape ``(...)``; may be negative.  The ℓ2 estimate is ``sqrt(max(·, 0))``.

    Examples
    --------
    >>> counts = [4, 5]; scores = [2.0, 3.0]; labels = [1, 4]
    >>> round(float(debiased_sq_from_stats(counts, scores, labels)), 12)
    0.0
    """
    c = np.asarray(counts, dtype=np.float64)
    s = np.asarray(score_sums, dtype=np.float64)
    lab = np.asarray(label_sums, dtype=np.float64)
    n = c.sum(axis=-1)
    ok = c >= 2
    safe = np.where(ok, c, 2.0)
    ybar = lab / safe
    gap_sq = ((s - lab) / safe) ** 2
    term = np.where(ok, c * (gap_sq - ybar * (1.0 - ybar) / (safe - 1.0)), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return term.sum(axis=-1) / n


#: Draws (rows × draws × bins) the ℓ1 debiased kernel holds at once (cache-sized blocks).
_L1_BLOCK = 2**16

#: Rows of a batch reading the same draws from which the ℓ1 debiased kernel sorts the draws
#: once (about when a sort of ``D`` draws costs less than the rows' direct sums).
_L1_SHARED = 16


def _shared_l1(
    z: np.ndarray,
    starts: np.ndarray,
    group: np.ndarray,
    n_draws: int,
    fbar: np.ndarray,
    ybar: np.ndarray,
    sd: np.ndarray,
    weight: np.ndarray,
) -> np.ndarray:
    """``Σ_j w_j (1/D) Σ_d |σ_j z_dj + ȳ_j − f̄_j|`` of rows that share their draws.

    Rows of group ``g`` read ``z[starts[g] + d·m + j]`` (``m`` bins). With ``t = (f̄ − ȳ)/σ``,
    ``Σ_d |σ z_d − σ t| = σ·(S − 2·S_k + t·(2k − D))`` for the ``k`` draws ``≤ t`` summing to
    ``S_k`` of a total ``S``: one sort and prefix sum of each column of draws, then a
    binary search per row and bin instead of ``D`` terms. The same sum as the direct one,
    summed in another order (equal within 1e-13); ``σ = 0`` gives ``|ȳ − f̄|``.
    """
    width = fbar.shape[1]
    out = np.zeros(fbar.shape[0])
    gap = fbar - ybar
    noisy = sd > 0
    t = np.divide(gap, sd, out=np.zeros_like(gap), where=noisy)
    per = np.abs(gap)  # the bins without label noise
    for g in np.unique(group):
        mine = np.flatnonzero(group == g)
        block = z[starts[g] : starts[g] + n_draws * width].reshape(n_draws, width)
        block = np.sort(block, axis=0)
        prefix = np.zeros((n_draws + 1, width))
        np.cumsum(block, axis=0, out=prefix[1:])
        for j in range(width):
            rows = mine[noisy[mine, j]]
            tj = t[rows, j]
            k = np.searchsorted(block[:, j], tj, side="right")
            total = prefix[n_draws, j]
            dist = total - 2.0 * prefix[k, j] + tj * (2.0 * k - n_draws)
            per[rows, j] = sd[rows, j] * dist / n_draws
    np.einsum("ij,ij->i", per, weight, out=out)
    return out


def debiased_l1_from_stats(
    counts: ArrayLike,
    score_sums: ArrayLike,
    label_sums: ArrayLike,
    rng: np.random.Generator | NormalStream,
    n_draws: int,
    *,
    offset: ArrayLike = 0,
) -> np.ndarray:
    """Signed ℓ1 debiased binned calibration error from bin statistics (batched).

    ``2·θ̂ − (1/D) Σ_d Σ_k (n_k/n) |ȳ_k + σ_k z_dk − f̄_k|`` over the non-empty bins, with
    ``θ̂`` the plug-in ECE, ``σ_k = sqrt(ȳ_k(1 − ȳ_k)/n_k)`` and ``D = n_draws`` standard
    normal draws ``z`` (Kumar et al.'s ``normal_debiased_ce`` with ``power=1``).

    Every set of bins (every row of the batch) reads the same stream of standard normals:
    a row with ``m`` non-empty bins gives its ``j``-th non-empty bin the value
    ``z[offset + d·m + j]`` in draw ``d``. For one row with ``offset=0`` this is
    ``rng.normal(ȳ, σ, size=(D, m))``, so a batch equals evaluating each row with its own
    copy of ``rng`` (the bootstrap reseeds the estimator on every resample), and
    ``offset`` continues the stream past earlier components (``offset + D·m`` is where
    the next component of a row starts). A Generator advances by the largest
    ``offset + D·m`` of the batch; a :class:`NormalStream` is read from its start.

    Parameters
    ----------
    counts, score_sums, label_sums : array_like
        Arrays of the same shape ``(..., B)``.
    rng : numpy.random.Generator or NormalStream
        Source of the normal draws.
    n_draws : int
        Draws ``D`` of the resampled bin means.
    offset : array_like of int, default=0
        Per row (shape ``(...)``), the position in the stream where the row starts.

    Returns
    -------
    numpy.ndarray
        Shape ``(...)``; may be negative (the estimate clips at 0). NaN where ``n = 0``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> float(debiased_l1_from_stats([2, 2], [0.2, 1.8], [0, 2], rng, 10))  # no label noise
    0.1
    """
    c = np.asarray(counts, dtype=np.float64)
    s = np.asarray(score_sums, dtype=np.float64)
    lab = np.asarray(label_sums, dtype=np.float64)
    batch, n_bins = c.shape[:-1], c.shape[-1]
    full = c > 0
    m = full.sum(axis=-1)
    start = np.broadcast_to(np.asarray(offset, dtype=np.int64), batch)
    used = start + n_draws * m
    length = int(used.max()) if used.size else 0
    if isinstance(rng, NormalStream):
        z = rng.first(length)
    else:
        z = rng.standard_normal(length)
    if z.size == 0:  # every bin empty: nothing is drawn, the values are NaN
        z = np.zeros(1)
    safe = np.where(full, c, 1.0)
    fbar = s / safe
    ybar = lab / safe
    sd = np.sqrt(np.clip(ybar * (1.0 - ybar), 0.0, None) / safe)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = c / c.sum(axis=-1, keepdims=True)
    plug = (w * np.abs(fbar - ybar)).sum(axis=-1)
    flat = [a.reshape(-1, n_bins) for a in (full, fbar, ybar, sd, w)]
    start, m = start.reshape(-1), m.reshape(-1)
    resampled = np.zeros(start.shape[0])  # rows without points stay NaN through ``plug``
    for width in np.unique(m[m > 0]):
        rows = np.flatnonzero(m == width)
        kept = flat[0][rows]
        fb, yb, sdv, wv = (a[rows][kept].reshape(-1, width) for a in flat[1:])
        shared = np.zeros(rows.shape[0], dtype=bool)
        if rows.shape[0] >= _L1_SHARED:
            starts, group = np.unique(start[rows], return_inverse=True)
            shared = (np.bincount(group) >= _L1_SHARED)[group]
        if shared.any():
            # rows reading the same draws (a bootstrap's resamples): one sort of the draws
            resampled[rows[shared]] = _shared_l1(
                z, starts, group[shared], n_draws, fb[shared], yb[shared], sdv[shared], wv[shared]
            )
            rows, fb, yb, sdv, wv = (v[~shared] for v in (rows, fb, yb, sdv, wv))
        # row i's draws are z[start_i + d·width + j]: a strided view of the stream
        view = np.lib.stride_tricks.as_strided(
            z,
            shape=(z.shape[0] - n_draws * width + 1, n_draws, width),
            strides=(z.strides[0], width * z.strides[0], z.strides[0]),
            writeable=False,
        )
        step = max(1, _L1_BLOCK // (n_draws * width))
        for lo in range(0, rows.shape[0], step):
            sl = slice(lo, lo + step)
            draws = view[start[rows[sl]]]
            # in place, in the order of rng.normal(ȳ, σ) − f̄: (σ·z + ȳ) − f̄
            draws *= sdv[sl, None, :]
            draws += yb[sl, None, :]
            draws -= fb[sl, None, :]
            np.abs(draws, out=draws)
            resampled[rows[sl]] = (draws.mean(axis=1) * wv[sl]).sum(axis=-1)
    return 2.0 * plug - resampled.reshape(batch)
