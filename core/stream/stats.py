"""What one chunk of rows adds to a streamed analysis, as statistics that merge by ``+``.

Every pass of :mod:`core.stream.engine` (batches in order) and :mod:`core.stream.dask`
(partitions on workers, merged by a tree reduction) calls these functions on a chunk of rows
with its :class:`Offsets` (where the chunk starts in the whole data and in each model's rows,
and how many rows before it hold each tied boundary score), so that both give the same
statistics:

- :func:`first_stats`: the first histogram of the scores (equal-mass) or their distinct
  values (discrete), per model and lens component;
- :func:`narrow_stats`: what a pass of the rank search collects;
- :func:`group_stats`: cells, band sums, Brier sums, lint facts and digest per model;
- :func:`row_stats`: the label-binned distances, the kernel subsample and the tie counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.data.lint import TieCounts, ValueFacts
from core.data.predictions import Digest
from core.inference.cells import CellStats, cells_of
from core.stats.binned_view import BinnedView, ComponentBins
from core.stats.consistency_bands import BandStats
from core.stats.lenses import lens_view
from core.stats.scores import SCORES
from core.stream.bins import Distinct, StreamBins, add_seen, fixed_bins
from core.stream.load import Plan, Rows
from core.stream.ranks import RankSearch, level1_counts
from core.stream.threads import beside

#: A lens component binned one way: ``(spec index, component)``.
Key = tuple[int, int]


@dataclass(frozen=True)
class BinSpec:
    """A way of binning the rows: lens, binning, number of bins, tie policy."""

    lens: str
    binning: str
    n_bins: int
    tie_policy: str


@dataclass
class Offsets:
    """Where a chunk of rows starts.

    Attributes
    ----------
    groups : dict
        Model (None for all rows) → rows of that model before the chunk.
    seen : dict
        ``(model, key)`` → boundary score → rows holding it before the chunk.
    merged : dict
        The statistics of the rows before the chunk, merged (the stream engine keeps them
        as it goes; empty for a Dask partition). They only spare work whose result merging
        would drop, so the statistics of a chunk merge to the same whatever this holds.
    """

    groups: dict[str | None, int] = field(default_factory=dict)
    seen: dict[tuple[str | None, Key], dict[float, int]] = field(default_factory=dict)
    merged: Mapping[Any, Any] = field(default_factory=dict)

    def advance(self, counts: Mapping[str | None, int], held: Mapping[Any, dict]) -> None:
        """Move past a chunk with these rows per model and tied boundary scores."""
        for name, m in counts.items():
            self.groups[name] = self.groups.get(name, 0) + m
        for key, values in held.items():
            add_seen(self.seen.setdefault(key, {}), values)


def split_groups(rows: Rows, split: bool, only: str | None) -> list[tuple[str | None, Any]]:
    """Return each model's rows in a chunk: ``(model, (probs, labels, roles))`` in order."""
    out = []
    for name, idx in model_rows(rows, split, only):
        if idx is None:
            out.append((name, (rows.probs, rows.labels, rows.roles)))
            continue
        roles = {r: v[idx] for r, v in rows.roles.items()}
        out.append((name, (rows.probs[idx], rows.labels[idx], roles)))
    return out


def model_rows(rows: Rows, split: bool, only: str | None) -> list[tuple[str | None, Any]]:
    """Return each model's rows in a chunk: ``(model, positions in the chunk)`` in order.

    Positions are None for all rows (no model column, or ``split`` false).
    """
    models = rows.roles.get("model")
    if models is None or not split:
        return [(None, None)]
    import pandas as pd

    codes, uniques = pd.factorize(models)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    return [
        (str(name), order[bounds[j] : bounds[j + 1]])
        for j, name in enumerate(uniques)
        if only is None or str(name) == only
    ]


def component_scores(
    p: np.ndarray, y: np.ndarray, lens: str, plan: Plan, class_weights: Any
) -> Any:
    """Return the lens view of a chunk's rows (scores and outcomes per component)."""
    return lens_view(p, y, lens, class_names=plan.class_names, class_weights=class_weights)


# --------------------------------------------------------------------------- bins


def first_stats(
    rows: Rows,
    offsets: Offsets,
    *,
    specs: list[BinSpec],
    size: int,
    class_weights: Any,
    split: bool,
    only: str | None,
) -> tuple[dict[str | None, Keyed], dict, dict]:
    """Per model and key: the first histogram (equal-mass) or distinct scores (discrete)."""
    plan = _plan(rows)
    out: dict[str | None, Keyed] = {}
    for name, (p, y, _) in split_groups(rows, split, only):
        got = out.setdefault(name, Keyed())
        got[(-1, 0)] = np.array([y.shape[0]])  # rows of the model
        for i, spec in enumerate(specs):
            if spec.binning not in ("equal-mass", "discrete"):
                continue
            view = component_scores(p, y, spec.lens, plan, class_weights)
            for c, s in enumerate(view.scores):
                got[(i, c)] = (
                    Distinct.of(s) if spec.binning == "discrete" else level1_counts(s, size)
                )
    return out, {}, {}


def narrow_stats(
    rows: Rows,
    offsets: Offsets,
    *,
    specs: list[BinSpec],
    searches: Mapping[str | None, RankSearch],
    class_weights: Any,
    split: bool,
    only: str | None,
) -> tuple[dict[str | None, Keyed], dict, dict]:
    """Per model and key: what this pass of the rank search collects from the chunk."""
    plan = _plan(rows)
    out: dict[str | None, Keyed] = {}
    for name, (p, y, _) in split_groups(rows, split, only):
        search = searches.get(name)
        if search is None or search.done:
            continue
        got = out.setdefault(name, Keyed())
        for i, spec in enumerate(specs):
            if not any(key[0] == i for key in search.targets):
                continue
            view = component_scores(p, y, spec.lens, plan, class_weights)
            for c, s in enumerate(view.scores):
                if (i, c) in search.targets:
                    got[(i, c)] = search.counts((i, c), s)
    return out, {}, {}


class Keyed(dict):
    """Statistics by key that merge by adding the statistics of equal keys."""

    def __add__(self, other: Keyed) -> Keyed:
        out = Keyed(self)
        for key, value in other.items():
            out[key] = value if key not in out else out[key] + value
        return out


def merge_groups(a: Mapping[Any, Any], b: Mapping[Any, Any]) -> dict[Any, Any]:
    """Merge per-model statistics of two chunks (``b``'s rows after ``a``'s)."""
    out = dict(a)
    for name, value in b.items():
        out[name] = value if name not in out else out[name] + value
    return out


#: The key of statistics of all rows (besides those of each model).
ALL_ROWS = ("all rows",)


# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True, eq=False)
class GroupStats:
    """The statistics of one model's rows (merge by ``+``, later rows on the right).

    Attributes
    ----------
    n : int
        Rows.
    cells : CellStats
        Cells of the config's binned view, with the scores' row sums.
    bands : tuple of BandStats or None
        What each component's consistency band is drawn from (None without bands).
    brier : tuple of numpy.ndarray
        Per component of the Brier decomposition's lens, ``(5, B)`` sums: counts, scores,
        outcomes, squared scores, scores of rows with outcome 1.
    values : ValueFacts
        Lint facts.
    digest : Digest
        The digest of the rows.
    """

    n: int
    cells: CellStats
    bands: tuple[BandStats, ...] | None
    brier: tuple[np.ndarray, ...]
    values: ValueFacts
    digest: Digest

    def __add__(self, other: GroupStats) -> GroupStats:
        return GroupStats(
            self.n + other.n,
            self.cells + other.cells,
            None
            if self.bands is None or other.bands is None
            else tuple(a + b for a, b in zip(self.bands, other.bands, strict=True)),
            tuple(a + b for a, b in zip(self.brier, other.brier, strict=True)),
            self.values + other.values,
            self.digest + other.digest,
        )


def bins_for(bins: dict[Key, StreamBins], spec: BinSpec, key: Key) -> StreamBins:
    """Return a key's bins (equal-width bins are made on first use: the same for all)."""
    found = bins.get(key)
    if found is None:
        found = bins[key] = fixed_bins(spec.binning, spec.n_bins, spec.tie_policy)
    return found


def _binned(
    name: str | None,
    p: np.ndarray,
    y: np.ndarray,
    i: int,
    spec: BinSpec,
    plan: Plan,
    bins: dict[Key, StreamBins],
    offsets: Offsets,
    held: dict,
    class_weights: Any,
) -> BinnedView:
    view = component_scores(p, y, spec.lens, plan, class_weights)
    comps = []
    for c, (cname, s, o) in enumerate(zip(view.names, view.scores, view.outcomes, strict=True)):
        # a column of the matrix is strided: one copy, and every sum below reads it faster
        s = np.ascontiguousarray(s)
        sb = bins_for(bins, spec, (i, c))
        idx, tied = sb.assign(s, offsets.seen.get((name, (i, c))))
        if tied:
            held[(name, (i, c))] = tied
        comps.append(
            ComponentBins(cname, s, o, idx, sb.edges, spec.binning, spec.tie_policy, spec.n_bins)
        )
    return BinnedView(
        spec.lens,
        spec.binning,
        spec.n_bins,
        spec.tie_policy,
        tuple(comps),
        view.names,
        view.weights,
    )


def group_stats(
    rows: Rows,
    offsets: Offsets,
    *,
    specs: list[BinSpec],
    bins: dict[str | None, dict[Key, StreamBins]],
    bands: bool,
    max_band_bins: int,
    class_weights: Any,
    split: bool,
    only: str | None,
) -> tuple[dict[str | None, GroupStats], dict[str | None, int], dict]:
    """Return the chunk's statistics per model, its rows per model and its tied scores.

    ``specs[0]`` is the config's binning (cells, bands), ``specs[1]`` the Brier
    decomposition's (the same spec when the lenses agree).
    """
    plan = _plan(rows)
    out: dict[str | None, GroupStats] = {}
    counts: dict[str | None, int] = {}
    held: dict = {}
    for name, (p, y, roles) in split_groups(rows, split, only):
        gbins = bins.setdefault(name, {})
        start = offsets.groups.get(name, 0)
        # the digest (hashing releases the GIL) and the lint facts are made in a thread
        # while the rows are binned and summed here
        digest = Digest(p.shape[1], start, tuple(roles))
        side = beside(_digest_and_facts, digest, p, y, roles, plan.binary, start)
        view = _binned(name, p, y, 0, specs[0], plan, gbins, offsets, held, class_weights)
        brier_view = (
            view
            if specs[1] == specs[0]
            else _binned(name, p, y, 1, specs[1], plan, gbins, offsets, held, class_weights)
        )
        values = {s: SCORES.get(s).rows(p, y, binary=plan.binary) for s in SCORES.names()}
        band = None
        if bands and all(c.n_bins <= max_band_bins for c in view.components):
            earlier = offsets.merged.get(name)
            before = (None,) * len(view.components)
            if isinstance(earlier, GroupStats) and earlier.bands is not None:
                before = earlier.bands
            band = tuple(
                BandStats.of(c.scores, c.index, c.n_bins, keep_rows=True, before=b)
                for c, b in zip(view.components, before, strict=True)
            )
        shared = band if brier_view is view else None
        brier = tuple(
            _brier_sums(c, None if shared is None else shared[j])
            for j, c in enumerate(brier_view.components)
        )
        cells = cells_of(view, values)
        out[name] = GroupStats(
            n=int(y.shape[0]),
            cells=cells,
            bands=band,
            brier=brier,
            values=side.result(),
            digest=digest,
        )
        counts[name] = int(y.shape[0])
    return out, counts, held


def _digest_and_facts(
    digest: Digest, p: np.ndarray, y: np.ndarray, roles: dict, binary: bool, start: int
) -> ValueFacts:
    digest.update(p, y, roles)
    return ValueFacts.of(p, y, binary=binary, offset=start, ties=False)


def _brier_sums(c: ComponentBins, band: BandStats | None) -> np.ndarray:
    """``(5, B)`` Brier sums of a component (counts and score sums read off its band's)."""
    if band is None:
        counts = np.bincount(c.index, minlength=c.n_bins).astype(np.float64)
        scores = np.bincount(c.index, weights=c.scores, minlength=c.n_bins)
    else:  # the same bincounts of the same rows
        counts, scores = band.counts.astype(np.float64), band.score_sums
    return np.stack(
        [
            counts,
            scores,
            np.bincount(c.index, weights=c.outcomes, minlength=c.n_bins),
            c.square_sums(),
            c.positive_score_sums(),
        ]
    )


@dataclass(frozen=True, eq=False)
class RowStats:
    """What the rows pass collects for one model (merge by ``+``).

    Attributes
    ----------
    deviations : dict
        ``(component, norm)`` → per-bin ``Σ |s − ȳ_b|^p`` (``max`` for ``p = ∞``).
    positions, probs, labels : tuple of numpy.ndarray
        The kernel subsample's rows, chunk by chunk.
    ties : TieCounts or None
        Counts of the lint's score values, when asked for.
    """

    deviations: dict[tuple[int, float], np.ndarray] = field(default_factory=dict)
    positions: tuple[np.ndarray, ...] = ()
    probs: tuple[np.ndarray, ...] = ()
    labels: tuple[np.ndarray, ...] = ()
    ties: TieCounts | None = None

    def __add__(self, other: RowStats) -> RowStats:
        deviations = dict(self.deviations)
        for key, value in other.deviations.items():
            mine = deviations.get(key)
            if mine is None:
                deviations[key] = value
            elif np.isinf(key[1]):
                deviations[key] = np.maximum(mine, value)
            else:
                deviations[key] = mine + value
        ties = (
            other.ties
            if self.ties is None
            else self.ties
            if other.ties is None
            else self.ties + other.ties
        )
        return RowStats(
            deviations,
            self.positions + other.positions,
            self.probs + other.probs,
            self.labels + other.labels,
            ties,
        )

    def kernel_rows(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Return the subsample's rows in row order (None if none were kept)."""
        if not self.positions:
            return None
        order = np.argsort(np.concatenate(self.positions), kind="stable")
        return np.concatenate(self.probs)[order], np.concatenate(self.labels)[order]


def row_stats(
    rows: Rows,
    offsets: Offsets,
    *,
    spec: BinSpec,
    bins: dict[str | None, dict[Key, StreamBins]],
    centers: Mapping[str | None, list[np.ndarray]],
    norms: tuple[float, ...],
    wanted: Mapping[str | None, np.ndarray | None],
    ties: bool,
    class_weights: Any,
    split: bool,
    only: str | None,
) -> tuple[dict[Any, RowStats], dict[str | None, int], dict]:
    """Return the chunk's rows-pass statistics per model (and :data:`ALL_ROWS` for ties)."""
    plan = _plan(rows)
    out: dict[Any, RowStats] = {}
    counts: dict[str | None, int] = {}
    held: dict = {}
    if ties:
        out[ALL_ROWS] = RowStats(ties=_tie_counts(rows.probs, plan.binary))
    for name, (p, y, _) in split_groups(rows, split, only):
        start, m = offsets.groups.get(name, 0), y.shape[0]
        counts[name] = int(m)
        stats = RowStats(ties=_tie_counts(p, plan.binary) if ties else None)
        want = wanted.get(name)
        if want is not None:
            sel = want[(want >= start) & (want < start + m)] - start
            if sel.size:
                stats = RowStats(stats.deviations, (sel + start,), (p[sel],), (y[sel],), stats.ties)
        if norms:
            view = component_scores(p, y, spec.lens, plan, class_weights)
            deviations = {}
            for c, s in enumerate(view.scores):
                s = np.ascontiguousarray(s)  # as in the statistics pass
                sb = bins_for(bins.setdefault(name, {}), spec, (0, c))
                idx, tied = sb.assign(s, offsets.seen.get((name, (0, c))))
                if tied:
                    held[(name, (0, c))] = tied
                dev = np.abs(s - centers[name][c][idx])
                for norm in norms:
                    if np.isinf(norm):
                        top = np.full(sb.size, -np.inf)
                        np.maximum.at(top, idx, dev)
                        deviations[(c, norm)] = top
                    else:
                        w = dev if norm == 1.0 else dev * dev
                        deviations[(c, norm)] = np.bincount(idx, weights=w, minlength=sb.size)
            stats = RowStats(deviations, stats.positions, stats.probs, stats.labels, stats.ties)
        out[name] = stats
    return out, counts, held


@dataclass(frozen=True, eq=False)
class WholeStats:
    """Lint facts and digest of all rows of a stream with models (merge by ``+``)."""

    values: ValueFacts
    digest: Digest

    def __add__(self, other: WholeStats) -> WholeStats:
        return WholeStats(self.values + other.values, self.digest + other.digest)


def whole_stats(rows: Rows, offsets: Offsets) -> tuple[dict, dict, dict]:
    """Return the lint facts and digest of all rows of a chunk, under :data:`ALL_ROWS`."""
    start = offsets.groups.get(ALL_ROWS, 0)
    digest = Digest(rows.probs.shape[1], start, tuple(rows.roles))
    hashed = beside(digest.update, rows.probs, rows.labels, rows.roles)
    values = ValueFacts.of(
        rows.probs, rows.labels, binary=_plan(rows).binary, offset=start, ties=False
    )
    hashed.result()
    return {ALL_ROWS: WholeStats(values, digest)}, {ALL_ROWS: int(rows.labels.shape[0])}, {}


def lint_stats(
    rows: Rows, offsets: Offsets, *, split: bool, only: str | None
) -> tuple[dict, dict, dict]:
    """Return the lint facts and digest of all rows and of each model's (``split``)."""
    stats, counts, _ = whole_stats(rows, offsets)
    if split:
        plan = _plan(rows)
        for name, (p, y, roles) in split_groups(rows, True, only):
            start = offsets.groups.get(name, 0)
            digest = Digest(p.shape[1], start, tuple(roles))
            hashed = beside(digest.update, p, y, roles)
            values = ValueFacts.of(p, y, binary=plan.binary, offset=start, ties=False)
            hashed.result()
            stats[name] = WholeStats(values, digest)
            counts[name] = int(y.shape[0])
    return stats, counts, {}


def row_stats_ties(
    rows: Rows, offsets: Offsets, *, split: bool, only: str | None
) -> tuple[dict, dict, dict]:
    """Return the counts of the lint's score values, of all rows and of each model's."""
    binary = _plan(rows).binary
    stats: dict[Any, TieCounts] = {ALL_ROWS: _tie_counts(rows.probs, binary)}
    if split:
        for name, (p, _, _) in split_groups(rows, True, only):
            stats[name] = _tie_counts(p, binary)
    return stats, {}, {}


def several(rows: Rows, offsets: Offsets, *, funcs: tuple[Any, ...]) -> tuple[dict, dict, dict]:
    """Run several chunk functions in one pass (their statistics under distinct keys)."""
    stats: dict = {}
    counts: dict = {}
    held: dict = {}
    for func in funcs:
        a, b, c = func(rows, offsets)
        stats.update(a)
        counts.update(b)
        held.update(c)
    return stats, counts, held


def _plan(rows: Rows) -> Plan:
    assert rows.plan is not None
    return rows.plan


def _tie_counts(p: np.ndarray, binary: bool) -> TieCounts:
    return TieCounts.of(p[:, 1] if binary else p.max(axis=1))
