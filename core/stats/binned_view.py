"""Binned views: each lens component binned once, shared by everything that reads its bins.

A :class:`BinnedView` is the binned form of one lens view under one binning: per component,
the row-to-bin index and the :class:`~core.stats.binning.BinStats`, plus the sorted order of the
scores when something sorts them. :class:`BinnedViews` holds the views of one data set and
computes each (lens, binning, number of bins, tie policy) once; :func:`core.analyses.analysis.analyze`,
:func:`core.analyses.model_comparison.compare_models` and :func:`core.analyses.estimator_comparison.
compare_estimators` make one and hand it to every consumer: the estimators, the bin table,
the bootstrap, the consistency band and the Brier decomposition.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from core.base.memo import stable_order
from core.base.parallel import map_helped
from core.stats.binning import (
    BINNINGS,
    BinStats,
    RowBatch,
    batch_bin_sums,
    check_n_bins,
    check_tie_policy,
    index_of_runs,
    sorted_bin_stats,
)
from core.stats.conventions import CONVENTIONS
from core.stats.lenses import LensView, lens_view

#: Calibscope's own bins (:data:`core.stats.conventions.DEFAULT_CONVENTION`).
DEFAULT_CONVENTION = "calibscope"


@dataclass(frozen=True, eq=False)
class ComponentBins:
    """One lens component binned: its rows, their bins and the bins' statistics.

    Attributes
    ----------
    name : str
        Component name.
    scores, outcomes : numpy.ndarray
        The component's float64 scores and 0/1 outcomes.
    index_ : numpy.ndarray or None
        Bin of every row; None for bins given as runs of the score order (``runs_``),
        whose :attr:`index` is built when first read.
    edges : numpy.ndarray
        ``(B + 1,)`` bin edges.
    binning, tie_policy : str
        How the rows were binned.
    requested_bins : int
        The number of bins asked for (the binning may give fewer).
    order_ : numpy.ndarray or None
        The stable argsort of the scores, when known.
    runs_ : numpy.ndarray or None
        First sorted position of each bin, followed by ``n``, for bins given as runs.
    stats_ : BinStats or None
        The bins' statistics, when known.
    """

    name: str
    scores: np.ndarray
    outcomes: np.ndarray
    index_: np.ndarray | None
    edges: np.ndarray
    binning: str
    tie_policy: str
    requested_bins: int
    order_: np.ndarray | None = field(default=None, repr=False)
    runs_: np.ndarray | None = field(default=None, repr=False)
    stats_: BinStats | None = field(default=None, repr=False)
    _rebinned: dict[int, ComponentBins] = field(default_factory=dict, repr=False)

    @property
    def n_bins(self) -> int:
        """Number of bins ``B``."""
        return int(self.edges.shape[0] - 1)

    @cached_property
    def index(self) -> np.ndarray:
        """Bin of every row."""
        if self.index_ is not None:
            return self.index_
        return index_of_runs(self.order, self.runs_)

    @cached_property
    def batch(self) -> RowBatch:
        """The component as a batch of one sample (what binned estimators' kernels read)."""
        known = self.__dict__.get("stats", self.stats_)
        sums = None
        if known is not None:
            sums = (known.counts[None, :], known.score_sums[None, :], known.label_sums[None, :])
        return RowBatch(
            self.index[None, :], self.scores[None, :], self.outcomes[None, :], self.n_bins, sums
        )

    @cached_property
    def stats(self) -> BinStats:
        """Counts, score sums and outcome sums per bin."""
        if self.stats_ is not None:
            return self.stats_
        b = self.batch
        return BinStats(self.edges, b.counts[0], b.score_sums[0], b.label_sums[0], self.binning)

    @cached_property
    def order(self) -> np.ndarray:
        """Stable ascending argsort of the scores (computed at most once)."""
        if self.order_ is not None:
            return self.order_
        return stable_order(self.scores)

    def rebinned(self, n_bins: int) -> ComponentBins:
        """Return the same rows under the same binning with another number of bins (cached).

        The sweep's chosen ``b*`` bins: its estimate and the bin table share them (the
        sweep leaves them here, see :meth:`rebinned_sorted`).
        """
        if n_bins == self.requested_bins:
            return self
        if n_bins not in self._rebinned:
            func = BINNINGS.get(self.binning).func
            order = self.__dict__.get("order", self.order_)
            idx, edges = func(self.scores, n_bins, self.tie_policy, order)
            self._rebinned[n_bins] = ComponentBins(
                self.name,
                self.scores,
                self.outcomes,
                idx,
                edges,
                self.binning,
                self.tie_policy,
                n_bins,
                order,
            )
        return self._rebinned[n_bins]

    def rebinned_sorted(
        self, n_bins: int, sorted_scores: np.ndarray, outcome_prefix: np.ndarray
    ) -> ComponentBins:
        """Return :meth:`rebinned` from the rows in score order, without binning them again.

        Equal-width and equal-mass bins are runs of the score order, so the statistics
        come from the sorted scores and the outcome prefix sums the sweep holds
        (:func:`core.stats.binning.sorted_bin_stats`); the row-to-bin index is built only if
        something reads it.

        Parameters
        ----------
        n_bins : int
            Number of bins.
        sorted_scores : numpy.ndarray
            The scores in the order :attr:`order`.
        outcome_prefix : numpy.ndarray
            ``(n + 1,)`` sums of the outcomes before each sorted position.

        Returns
        -------
        ComponentBins
            The rows with ``n_bins`` bins (cached with those of :meth:`rebinned`).
        """
        if n_bins == self.requested_bins:
            return self
        if n_bins not in self._rebinned:
            runs, stats = sorted_bin_stats(
                sorted_scores, outcome_prefix, self.binning, n_bins, self.tie_policy
            )
            self._rebinned[n_bins] = ComponentBins(
                self.name,
                self.scores,
                self.outcomes,
                None,
                stats.edges,
                self.binning,
                self.tie_policy,
                n_bins,
                self.order,
                runs,
                stats,
            )
        return self._rebinned[n_bins]

    def square_sums(self) -> np.ndarray:
        """``(B,)`` sums of squared scores per bin."""
        return np.bincount(self.index, weights=self.scores * self.scores, minlength=self.n_bins)

    def positive_score_sums(self) -> np.ndarray:
        """``(B,)`` sums of the scores of rows with outcome 1, per bin."""
        return np.bincount(self.index, weights=self.scores * self.outcomes, minlength=self.n_bins)


@dataclass(frozen=True, eq=False)
class BinnedView:
    """Every component of a lens view, binned the same way.

    Attributes
    ----------
    lens, binning : str
        Registry names.
    n_bins : int
        Requested number of bins (a component may have fewer, e.g. equal-mass with
        ``tie_policy="keep"``, or one per value with the discrete binning).
    tie_policy : str
        Equal-mass tie policy.
    components : tuple of ComponentBins
        One per lens component.
    names : tuple of str
        Component names.
    weights : numpy.ndarray
        Aggregation weights of the components.
    """

    lens: str
    binning: str
    n_bins: int
    tie_policy: str
    components: tuple[ComponentBins, ...]
    names: tuple[str, ...]
    weights: np.ndarray

    @property
    def stats(self) -> tuple[BinStats, ...]:
        """The bin statistics of every component."""
        return tuple(c.stats for c in self.components)


def bin_view(
    view: LensView,
    binning: str,
    n_bins: int,
    tie_policy: str = "split",
    orders: tuple[np.ndarray | None, ...] | None = None,
) -> BinnedView:
    """Bin every component of a lens view.

    Parameters
    ----------
    view : LensView
        The lens components.
    binning : str
        A name in :data:`core.stats.binning.BINNINGS`.
    n_bins : int
        Number of bins.
    tie_policy : {"split", "keep"}
        Equal-mass tie policy.
    orders : tuple of numpy.ndarray or None, optional
        Each component's stable argsort, when already known (schemes that sort reuse it;
        without it equal-mass bins need no sort, see :mod:`core.stats.binning`).

    Returns
    -------
    BinnedView
        The binned components.
    """
    info = BINNINGS.get(binning)
    n_bins = check_n_bins(n_bins)
    tie_policy = check_tie_policy(tie_policy)
    many = len(view.names) > 1

    def binned(c: int) -> ComponentBins:
        name, scores, outcomes = view.names[c], view.scores[c], view.outcomes[c]
        order = None if orders is None else orders[c]
        idx, edges = info.func(scores, n_bins, tie_policy, order)
        stats = None
        if many:  # every consumer reads them: counted here, one component per thread
            counts, score_sums, label_sums = batch_bin_sums(
                idx[None, :], scores[None, :], outcomes[None, :], edges.shape[0] - 1
            )
            stats = BinStats(edges, counts[0], score_sums[0], label_sums[0], binning)
        return ComponentBins(
            name, scores, outcomes, idx, edges, binning, tie_policy, n_bins, order, None, stats
        )

    entries = sum(int(np.size(s)) for s in view.scores)
    comps = map_helped(binned, range(len(view.names)), entries=entries if many else 0)
    return BinnedView(
        view.lens, binning, n_bins, tie_policy, tuple(comps), view.names, view.weights
    )


def convention_view(
    view: LensView,
    binning: str,
    n_bins: int,
    tie_policy: str,
    convention: str,
    float32_input: bool = False,
) -> BinnedView:
    """Bin every component of a lens view as a library does (:mod:`core.stats.conventions`).

    Parameters
    ----------
    view : LensView
        The lens components.
    binning : str
        A binning the convention has.
    n_bins : int
        Number of bins asked for (a library's extra bin for 1.0 makes ``B + 1``).
    tie_policy : str
        Recorded only: a library's equal-mass edges are its own.
    convention : str
        A name in :data:`core.stats.conventions.CONVENTIONS`.
    float32_input : bool, default=False
        Whether the predictions were given as float32 (a library that bins in the input's
        dtype then uses float32 edges).

    Returns
    -------
    BinnedView
        The binned components; their scores are the library's (cast, clipped).
    """
    conv = CONVENTIONS.get(convention)
    n_bins = check_n_bins(n_bins)
    comps = []
    for name, scores, outcomes in zip(view.names, view.scores, view.outcomes, strict=True):
        s = conv.transform(scores, view.lens)
        idx, edges = conv.bins(s, binning, n_bins, view.lens, float32_input=float32_input)
        comps.append(ComponentBins(name, s, outcomes, idx, edges, binning, tie_policy, n_bins))
    return BinnedView(
        view.lens, binning, n_bins, tie_policy, tuple(comps), view.names, view.weights
    )


@dataclass(frozen=True, eq=False)
class SortedComponent:
    """One lens component in score order (what the bootstrap's sorted engine reads).

    Attributes
    ----------
    order : numpy.ndarray
        Stable argsort of the scores.
    rank : numpy.ndarray
        Position of each row in that order.
    scores : numpy.ndarray
        Sorted scores.
    outcomes : numpy.ndarray
        Outcomes in the same order, as integers.
    """

    order: np.ndarray
    rank: np.ndarray
    scores: np.ndarray
    outcomes: np.ndarray


#: ``class_weights`` not given: the data set's own (None means uniform weights).
OWN_WEIGHTS: Any = object()


class BinnedViews:
    """The lens views and binned views of one data set, each computed once.

    Parameters
    ----------
    probs : numpy.ndarray
        Validated ``(n, K)`` probabilities.
    labels : numpy.ndarray
        Validated int64 labels.
    class_names : tuple of str, optional
        Component names of the classwise lens.
    class_weights : array_like, optional
        Classwise aggregation weights.
    float32_input : bool, default=False
        Whether the predictions were given as float32 (read by the library conventions that
        bin in the input's dtype).
    """

    def __init__(
        self,
        probs: np.ndarray,
        labels: np.ndarray,
        class_names: tuple[str, ...] | None = None,
        class_weights: ArrayLike | None = None,
        float32_input: bool = False,
    ) -> None:
        self.float32_input = bool(float32_input)
        self.probs = probs
        self.labels = labels
        self.class_names = class_names
        self.class_weights = None if class_weights is None else tuple(class_weights)
        self._lenses: dict[tuple[str, Any], LensView] = {}
        self._binned: dict[tuple[str, str, int, str, Any], BinnedView] = {}
        self._orders: dict[str, list[np.ndarray | None]] = {}
        self._sorted: dict[tuple[str, int], SortedComponent] = {}
        self._coded: dict[tuple[int, int], np.ndarray] = {}

    def _weights(self, class_weights: Any) -> tuple[float, ...] | None:
        if class_weights is OWN_WEIGHTS:
            return self.class_weights
        return None if class_weights is None else tuple(float(w) for w in class_weights)

    def lens(self, lens: str, class_weights: Any = OWN_WEIGHTS) -> LensView:
        """Return the lens view (components, outcomes, weights) of ``lens``.

        ``class_weights`` default to the data set's (those given when it was made); None
        means uniform.
        """
        weights = self._weights(class_weights)
        key = (lens, weights)
        if key not in self._lenses:
            self._lenses[key] = lens_view(
                self.probs,
                self.labels,
                lens,
                class_names=self.class_names,
                class_weights=weights,
            )
        return self._lenses[key]

    def binned(
        self,
        lens: str,
        binning: str,
        n_bins: int,
        tie_policy: str = "split",
        class_weights: Any = OWN_WEIGHTS,
        convention: str = "calibscope",
    ) -> BinnedView:
        """Return the binned view of ``lens`` (computed on first use, then shared).

        Views that differ only in their class weights share their components' bins. A
        library ``convention`` (:data:`core.stats.conventions.CONVENTIONS`) bins the scores as
        that library does (its casting and clipping applied to the component's scores).
        """
        weights = self._weights(class_weights)
        if convention != DEFAULT_CONVENTION:
            key = (lens, binning, int(n_bins), convention, weights)
            if key not in self._binned:
                self._binned[key] = convention_view(
                    self.lens(lens, weights),
                    binning,
                    n_bins,
                    tie_policy,
                    convention,
                    self.float32_input,
                )
            return self._binned[key]
        key = (lens, binning, int(n_bins), tie_policy, weights)
        if key not in self._binned:
            view = self.lens(lens, weights)
            same = next((v for k, v in self._binned.items() if k[:4] == key[:4]), None)
            if same is not None:
                self._binned[key] = dataclasses.replace(same, weights=view.weights)
            else:
                # an analysis sorts each component anyway (the sweep, the bootstrap): binnings
                # that sort read that one order
                sorts = BINNINGS.get(binning).sorts
                orders = tuple(
                    self.order(lens, c) if sorts else known
                    for c, known in enumerate(self._known_orders(lens))
                )
                self._binned[key] = bin_view(view, binning, n_bins, tie_policy, orders)
        return self._binned[key]

    def forget(self, lens: str, binning: str, n_bins: int, tie_policy: str = "split") -> None:
        """Drop a binned view that will not be read again (its sort order is kept)."""
        self._known_orders(lens)
        for key in [k for k in self._binned if k[:4] == (lens, binning, int(n_bins), tie_policy)]:
            del self._binned[key]

    def order(self, lens: str, component: int) -> np.ndarray:
        """Stable argsort of one component's scores (shared with the binnings that sort)."""
        known = self._known_orders(lens)
        if known[component] is None:
            self._orders[lens][component] = stable_order(self.lens(lens).scores[component])
        return self._orders[lens][component]  # type: ignore[return-value]

    def _known_orders(self, lens: str) -> list[np.ndarray | None]:
        orders = self._orders.setdefault(lens, [None] * len(self.lens(lens).names))
        for (view_lens, *_), binned in self._binned.items():
            if view_lens != lens:
                continue
            for c, comp in enumerate(binned.components):
                if orders[c] is None and (comp.order_ is not None or "order" in comp.__dict__):
                    orders[c] = comp.order
        return orders

    def sorted_component(self, lens: str, component: int) -> SortedComponent:
        """One component in score order, with each row's rank (computed once)."""
        key = (lens, component)
        if key not in self._sorted:
            order = self.order(lens, component)
            view = self.lens(lens)
            n = order.shape[0]
            rank = np.empty(n, dtype=np.intp)
            rank[order] = np.arange(n, dtype=np.intp)
            self._sorted[key] = SortedComponent(
                order,
                rank,
                view.scores[component][order],
                view.outcomes[component].astype(np.intp)[order],
            )
        return self._sorted[key]

    def coded_bins(self, view: BinnedView, component: int) -> np.ndarray:
        """``2·bin + outcome`` of every row of one binned component (computed once)."""
        key = (id(view), component)
        if key not in self._coded:
            comp = view.components[component]
            self._coded[key] = 2 * comp.index.astype(np.intp) + comp.outcomes.astype(np.intp)
        return self._coded[key]
