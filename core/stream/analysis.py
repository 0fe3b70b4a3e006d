"""The reliability analysis of a stream: :func:`analyze_stream`.

The same :class:`~core.analysis.ReliabilityAnalysis` as :func:`core.analyze`, from statistics
that merge over batches, in a few passes over the files:

1. **Bins.** Equal-width bins need nothing. Equal-mass bins need the scores at a few ranks of
   every lens component: a first pass histograms the scores, further passes narrow the
   buckets of those ranks until their scores are gathered (:mod:`core.stream.ranks`;
   usually two passes in all). The discrete binning collects the distinct scores.
2. **Statistics** (one pass). Each batch's rows are binned on those bins and add: the cells
   of equal bins and outcomes with their score sums (:class:`core.cells.CellStats`: the bin
   tables, every estimator that reads bin statistics, accuracy, Brier score, log loss and the
   cell bootstrap of their intervals), the consistency bands' per-bin sums
   (:class:`core.consistency_bands.BandStats`), the Brier decomposition's per-bin sums, the
   lint facts and the digest.
3. **Rows** (one pass, when needed). The label-binned estimator's ``Σ |s − ȳ_b|^p`` per bin
   (its centres are known only after pass 2), and the seeded subsample of
   ``config.kernel_sample`` rows the kernel estimators and the monotone sweep run on (the
   rows :func:`core.analysis.kernel_rows` picks in memory, so the numbers are the same).

Every exact statistic equals the in-memory analysis's to rounding (a test asserts 1e-12);
the intervals are those of the cell bootstrap (``AnalysisConfig(bootstrap="cells")`` in
memory gives the same), which does not depend on the batching. Memory is bounded by the
batch size and the number of bins, not by the number of rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from core.analysis import (
    CONSISTENCY_BAND_MAX_BINS,
    METRIC_COLUMNS,
    AnalysisConfig,
    ReliabilityAnalysis,
    _metric_row,
    _note,
    check_config,
    component_tables,
    intervals_from_cells,
    kernel_estimates,
    kernel_rows,
)
from core.binned_view import BinnedView, ComponentBins
from core.binning import BINNINGS, BinStats
from core.calibration import EstimatorCall
from core.cells import CellStats, cells_of, supports
from core.consistency_bands import BandStats
from core.data.lint import LintReport, TieCounts, ValueFacts
from core.data.predictions import Digest
from core.errors import ConfigError
from core.estimators import ESTIMATORS
from core.estimators.base import estimate_binned
from core.lenses import LENSES, lens_view
from core.scores import BRIER_CONVENTIONS, SCORES, brier_decomposition_from_bins
from core.stream.bins import (
    Distinct,
    StreamBins,
    discrete_bins,
    equal_mass_bins,
    equal_mass_ranks,
    fixed_bins,
    keep_bins,
)
from core.stream.load import LoadOptions, Plan, Rows, plan_from, read_stream
from core.stream.ranks import PassCounts, RankSearch, level1_counts, level1_size
from core.stream.sources import BATCH_ROWS, Layout, Part, layout, read_batches, resolve_parts

#: ``progress(fraction, message)``.
Progress = Callable[[float, str], Any]


@dataclass(frozen=True, eq=False)
class StreamInput:
    """What a stream held: the counterpart of :class:`core.data.Predictions` without rows.

    Attributes
    ----------
    source : str
        The source as given.
    parts : tuple of str
        The files read, in order.
    n : int
        Rows.
    class_names : tuple of str
        Class names.
    binary : bool
        One P(y=1) column.
    digest : str
        The digest the in-memory load of the same rows gives.
    columns : dict
        The column mapping (as :attr:`core.data.Predictions.columns`).
    lint : LintReport
        The findings over all rows.
    models : tuple of str
        Models of the model column, in order of first appearance (empty without one).
    """

    source: str
    parts: tuple[str, ...]
    n: int
    class_names: tuple[str, ...]
    binary: bool
    digest: str
    columns: dict[str, Any]
    lint: LintReport
    models: tuple[str, ...] = ()

    @property
    def n_classes(self) -> int:
        """Number of classes."""
        return len(self.class_names)


@dataclass(frozen=True, eq=False)
class StreamAnalysis:
    """The analysis of a stream: its input and one analysis per model.

    Attributes
    ----------
    input : StreamInput
        The stream as a whole.
    results : tuple
        ``(model, StreamInput, ReliabilityAnalysis)`` per model (model None for a stream
        without a model column), as ``calibscope metrics`` reports them.
    passes : int
        Passes made over the files.
    """

    input: StreamInput
    results: tuple[tuple[str | None, StreamInput, ReliabilityAnalysis], ...]
    passes: int

    @property
    def analysis(self) -> ReliabilityAnalysis:
        """The analysis of a stream without a model column (or its only model)."""
        if len(self.results) != 1:
            raise ConfigError(
                f"The stream holds {len(self.results)} models; read .results for each."
            )
        return self.results[0][2]


# --------------------------------------------------------------------------- groups


@dataclass(eq=False)
class _Group:
    """The rows of one model (or all rows), accumulated over passes."""

    name: str | None
    roles: tuple[str, ...]
    k: int
    n: int = 0
    seen: int = 0  # rows of the current pass so far
    bins: dict[tuple[str, int], StreamBins] = field(default_factory=dict)
    level1: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    distinct: dict[tuple[str, int], Distinct] = field(default_factory=dict)
    search: PassCounts | None = None
    pass_counts: dict[tuple[str, int], PassCounts] = field(default_factory=dict)
    cells: CellStats | None = None
    bands: list[BandStats | None] = field(default_factory=list)
    brier: list[np.ndarray] = field(default_factory=list)  # per component: (5, B) sums
    values: ValueFacts | None = None
    digest: Digest | None = None
    deviations: dict[tuple[int, float], np.ndarray] = field(default_factory=dict)
    wanted_rows: np.ndarray | None = None
    kernel_p: list[np.ndarray] = field(default_factory=list)
    kernel_y: list[np.ndarray] = field(default_factory=list)


def _split(rows: Rows, split: bool, only: str | None) -> list[tuple[str | None, np.ndarray | None]]:
    """Return the rows of each model in a batch: (model, row indices or None for all)."""
    models = rows.roles.get("model")
    if models is None or not split:
        return [(None, None)]
    import pandas as pd

    codes, uniques = pd.factorize(models)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    out = []
    for j, name in enumerate(uniques):
        if only is not None and str(name) != only:
            continue
        out.append((str(name), order[bounds[j] : bounds[j + 1]]))
    return out


def _lenses(config: AnalysisConfig, binary: bool) -> list[str]:
    """Return the lenses binned: the config's and the Brier decomposition's."""
    brier = "binary" if binary else "classwise"
    return [config.lens] if config.lens == brier else [config.lens, brier]


# --------------------------------------------------------------------------- the engine


class _Engine:
    """One analysis of a stream: the passes and their state."""

    def __init__(
        self,
        source: Any,
        config: AnalysisConfig,
        load: LoadOptions,
        *,
        split_models: bool,
        model: str | None,
        batch_rows: int,
        progress: Progress | None,
    ) -> None:
        self.config = config
        self.load = load
        self.split = split_models
        self.only = model
        self.batch_rows = int(batch_rows)
        self.progress = progress
        self.source = str(source)
        self.parts: tuple[Part, ...] = resolve_parts(source)
        self.layout: Layout = layout(self.parts)
        self.passes = 0
        self.total_rows = self._parquet_rows()

    def _parquet_rows(self) -> int | None:
        if self.parts[0].format != "parquet":
            return None
        from core.stream.sources import count_rows

        return sum(count_rows(self.parts, self.layout))

    def _first_plan(self) -> Plan:
        first = next(
            read_batches(self.parts, self.layout, self.layout.columns, batch_rows=self.batch_rows)
        )
        return plan_from(first, self.layout, self.load, self.source)

    # -- passes

    def _pass(
        self,
        plan: Plan,
        visit: Callable[[Rows], None],
        what: str,
        reset: Callable[[], None] | None = None,
    ) -> tuple[Plan, Any]:
        """Read every row once (deciding the plan the first time); ``reset`` on a (re)start."""
        self.passes += 1
        done = [0]

        def start() -> None:
            done[0] = 0
            if reset is not None:
                reset()
            for g in self.groups.values():
                g.seen = 0

        def step(_state: Any, rows: Rows) -> None:
            visit(rows)
            done[0] += rows.labels.shape[0]
            if self.progress is not None:
                frac = done[0] / self.total_rows if self.total_rows else 0.0
                self.progress(min(frac, 1.0), f"pass {self.passes}: {what} ({done[0]:,} rows)")

        plan, facts, _ = read_stream(
            self.parts, self.layout, plan, start, step, batch_rows=self.batch_rows
        )
        return plan, facts

    def _each_group(self, rows: Rows) -> list[tuple[_Group, np.ndarray, np.ndarray, dict]]:
        out = []
        for name, idx in _split(rows, self.split, self.only):
            g = self.groups.get(name)
            if g is None:
                g = self.groups[name] = _Group(name, tuple(rows.roles), rows.probs.shape[1])
            if idx is None:
                p, y, roles = rows.probs, rows.labels, rows.roles
            else:
                p, y = rows.probs[idx], rows.labels[idx]
                roles = {r: v[idx] for r, v in rows.roles.items()}
            out.append((g, p, y, roles))
        return out

    def _views(self, p: np.ndarray, y: np.ndarray, names: tuple[str, ...]) -> dict[str, Any]:
        return {
            lens: lens_view(p, y, lens, class_names=names, class_weights=self.config.class_weights)
            for lens in self.lenses
        }

    # -- 1. bins

    def fix_bins(self, plan: Plan) -> Plan:
        cfg = self.config
        info = BINNINGS.get(cfg.binning)
        if not info.data_dependent:
            return plan
        # the first histograms share 2^20 buckets among the components searched
        k = len(plan.class_names)
        size = level1_size(sum(k if lens == "classwise" else 1 for lens in self.lenses))

        def first(rows: Rows) -> None:
            for g, p, y, _ in self._each_group(rows):
                g.seen += y.shape[0]
                for lens, view in self._views(p, y, plan.class_names).items():
                    for c, s in enumerate(view.scores):
                        key = (lens, c)
                        if cfg.binning == "discrete":
                            d = Distinct.of(s)
                            g.distinct[key] = d if key not in g.distinct else g.distinct[key] + d
                        else:
                            h = level1_counts(s, size)
                            g.level1[key] = h if key not in g.level1 else g.level1[key] + h

        def reset() -> None:
            self.groups = {}

        plan, _ = self._pass(plan, first, "histogram of the scores", reset)
        for g in self.groups.values():
            g.n = g.seen
        if cfg.binning == "discrete":
            for g in self.groups.values():
                g.bins = {key: discrete_bins(d.values) for key, d in g.distinct.items()}
            return plan
        searches: dict[str | None, RankSearch] = {}
        for name, g in self.groups.items():
            ranks = {key: equal_mass_ranks(g.n, cfg.n_bins) for key in g.level1}
            size = next(iter(g.level1.values())).shape[0]
            search = searches[name] = RankSearch(ranks, level1=size)
            for key, hist in g.level1.items():
                search.update(key, PassCounts(level1=hist))
            g.level1 = {}
        self._narrow(plan, searches)
        found = {name: {key: s.found(key) for key in s.targets} for name, s in searches.items()}
        again: dict[str | None, RankSearch] = {}
        for name, g in self.groups.items():
            todo = {}
            for key, f in found[name].items():
                bins, rest = equal_mass_bins(g.n, cfg.n_bins, cfg.tie_policy, f)
                g.bins[key] = bins
                if rest.size:
                    todo[key] = rest
            if todo:
                again[name] = RankSearch(todo)
        if again:  # tie_policy="keep": the first scores after tie blocks
            self._narrow(plan, again)
            for name, search in again.items():
                g = self.groups[name]
                for key in search.targets:
                    merged = {**found[name][key], **search.found(key)}
                    g.bins[key] = keep_bins(g.bins[key], g.n, merged)
        return plan

    def _narrow(self, plan: Plan, searches: dict[str | None, RankSearch]) -> None:
        """Pass over the rows until every search has found its ranks."""
        while not all(s.done for s in searches.values()):

            def collect(rows: Rows) -> None:
                for g, p, y, _ in self._each_group(rows):
                    search = searches.get(g.name)
                    if search is None or search.done:
                        continue
                    for lens, view in self._views(p, y, plan.class_names).items():
                        for c, s in enumerate(view.scores):
                            key = (lens, c)
                            if key not in search.targets:
                                continue
                            got = search.counts(key, s)
                            prev = g.pass_counts.get(key)
                            g.pass_counts[key] = got if prev is None else prev + got

            self._pass(plan, collect, "exact equal-mass edges")
            for name, search in searches.items():
                g = self.groups[name]
                for key in search.targets:
                    search.update(key, g.pass_counts.pop(key, PassCounts()))

    # -- 2. statistics

    def accumulate(self, plan: Plan) -> tuple[Plan, Any]:
        fixed = not BINNINGS.get(self.config.binning).data_dependent

        def reset() -> None:
            self.all_values: ValueFacts | None = None
            self.all_digest: Digest | None = None
            self.row = 0
            if fixed:
                self.groups = {}
            for g in self.groups.values():
                g.cells, g.bands, g.brier, g.values, g.digest = None, [], [], None, None
                for b in g.bins.values():
                    b.seen.clear()

        def visit(rows: Rows) -> None:
            groups = self._each_group(rows)
            for g, p, y, roles in groups:
                self._add(g, p, y, roles, plan)
            if groups[0][0].name is not None:  # models: the whole file's facts besides
                facts = ValueFacts.of(
                    rows.probs, rows.labels, binary=plan.binary, offset=self.row, ties=False
                )
                self.all_values = facts if self.all_values is None else self.all_values + facts
                if self.all_digest is None:
                    self.all_digest = Digest(rows.probs.shape[1], 0, tuple(rows.roles))
                self.all_digest.update(rows.probs, rows.labels, rows.roles)
            self.row += rows.labels.shape[0]

        plan, facts = self._pass(plan, visit, "bin statistics", reset)
        for g in self.groups.values():
            g.n = g.seen
        if self.all_values is None:  # one group: its facts are the whole file's
            (g,) = self.groups.values()
            self.all_values, self.all_digest = g.values, g.digest
        return plan, facts

    def _add(self, g: _Group, p: np.ndarray, y: np.ndarray, roles: dict, plan: Plan) -> None:
        cfg = self.config
        names = plan.class_names
        views = self._views(p, y, names)
        binned: dict[str, BinnedView] = {}
        for lens, view in views.items():
            comps = []
            for c, (name, s, o) in enumerate(
                zip(view.names, view.scores, view.outcomes, strict=True)
            ):
                bins = g.bins.get((lens, c))
                if bins is None:  # equal-width: the same for every group
                    bins = g.bins[(lens, c)] = fixed_bins(cfg.binning, cfg.n_bins, cfg.tie_policy)
                idx = bins.assign(s)
                comps.append(
                    ComponentBins(
                        name, s, o, idx, bins.edges, cfg.binning, cfg.tie_policy, cfg.n_bins
                    )
                )
            binned[lens] = BinnedView(
                lens,
                cfg.binning,
                cfg.n_bins,
                cfg.tie_policy,
                tuple(comps),
                view.names,
                view.weights,
            )
        view = binned[cfg.lens]
        rows = {s: SCORES.get(s).rows(p, y, binary=plan.binary) for s in SCORES.names()}
        cells = cells_of(view, rows)
        g.cells = cells if g.cells is None else g.cells + cells
        if cfg.consistency_band and all(
            c.n_bins <= CONSISTENCY_BAND_MAX_BINS for c in view.components
        ):
            bands = [
                BandStats.of(c.scores, c.index, c.n_bins, keep_rows=True) for c in view.components
            ]
            g.bands = bands if not g.bands else [a + b for a, b in zip(g.bands, bands, strict=True)]
        brier_lens = "binary" if plan.binary else "classwise"
        sums = [
            np.stack(
                [
                    np.bincount(c.index, minlength=c.n_bins).astype(np.float64),
                    np.bincount(c.index, weights=c.scores, minlength=c.n_bins),
                    np.bincount(c.index, weights=c.outcomes, minlength=c.n_bins),
                    c.square_sums(),
                    c.positive_score_sums(),
                ]
            )
            for c in binned[brier_lens].components
        ]
        g.brier = sums if not g.brier else [a + b for a, b in zip(g.brier, sums, strict=True)]
        facts = ValueFacts.of(p, y, binary=plan.binary, offset=g.seen, ties=False)
        g.values = facts if g.values is None else g.values + facts
        if g.digest is None:
            g.digest = Digest(p.shape[1], 0, tuple(roles))
        g.digest.update(p, y, roles)
        g.seen += y.shape[0]

    # -- 3. rows

    def rows_pass(self, plan: Plan, needs: dict[str | None, dict[int, tuple[float, ...]]]) -> None:
        cfg = self.config
        for g in self.groups.values():
            g.wanted_rows = _kernel_rows(g.n, cfg)
            for b in g.bins.values():
                b.seen.clear()
        centers = {
            name: [_label_means(g.cells.component_bins(c)) for c in range(len(g.cells.names))]
            for name, g in self.groups.items()
            if g.cells is not None
        }

        count_ties = self._needs_ties()
        ties: dict[str | None, TieCounts] = {}

        def visit(rows: Rows) -> None:
            if count_ties:
                _add_ties(ties, "__all__", rows.probs, plan.binary)
            for g, p, y, _ in self._each_group(rows):
                if count_ties:
                    _add_ties(ties, g.name, p, plan.binary)
                lo, m = g.seen, y.shape[0]
                g.seen += m
                want = g.wanted_rows
                if want is not None:
                    sel = want[(want >= lo) & (want < lo + m)] - lo
                    if sel.size:
                        g.kernel_p.append(p[sel])
                        g.kernel_y.append(y[sel])
                norms = needs.get(g.name, {})
                if not norms:
                    continue
                view = lens_view(
                    p, y, cfg.lens, class_names=plan.class_names, class_weights=cfg.class_weights
                )
                for c, s in enumerate(view.scores):
                    bins = g.bins[(cfg.lens, c)]
                    idx = bins.assign(s)
                    dev = np.abs(s - centers[g.name][c][idx])
                    for norm in norms.get(c, ()):
                        key = (c, norm)
                        if np.isinf(norm):
                            out = np.full(bins.size, -np.inf)
                            np.maximum.at(out, idx, dev)
                            prev = g.deviations.get(key)
                            g.deviations[key] = out if prev is None else np.maximum(prev, out)
                        else:
                            w = dev if norm == 1.0 else dev * dev
                            out = np.bincount(idx, weights=w, minlength=bins.size)
                            prev = g.deviations.get(key)
                            g.deviations[key] = out if prev is None else prev + out

        self._pass(plan, visit, "rows for the label-binned and kernel estimators")
        if count_ties:
            for name, g in self.groups.items():
                g.values = replace(g.values, ties=ties[name])
            whole = self.all_values
            self.all_values = replace(whole, ties=ties["__all__"]) if whole is not None else None

    def _needs_ties(self) -> bool:
        """Whether the lint needs the counts of score values (the buckets did not rule out ties)."""
        facts = [g.values for g in self.groups.values()] + [self.all_values]
        return any(f is not None and f.needs_ties for f in facts)

    # -- the whole

    def run(self) -> StreamAnalysis:
        cfg = self.config
        plan = self._first_plan()
        if self.only is not None and "model" not in plan.roles:
            raise ConfigError(f"--model {self.only!r} given but {self.source} has no model column.")
        self.groups: dict[str | None, _Group] = {}
        self.lenses = _lenses(cfg, plan.binary)
        plan = self.fix_bins(plan)
        plan, facts = self.accumulate(plan)
        needs = {name: self._deviation_needs(g, plan) for name, g in self.groups.items()}
        if any(needs.values()) or self._rows_needed(plan) or self._needs_ties():
            self.rows_pass(plan, needs)
        return self._finish(plan, facts)

    def _rows_needed(self, plan: Plan) -> bool:
        """Whether some estimator of the table reads rows (kernel estimators, the sweep)."""
        cfg = self.config
        lens_kernels = any(not info.binned and cfg.lens in info.lenses for info in ESTIMATORS)
        return lens_kernels or any(not c.info.from_bins for c in self._calls(plan).values())

    def _calls(self, plan: Plan) -> dict[str, EstimatorCall]:
        cfg = self.config
        opts = {**cfg.calibration_options(), "class_names": plan.class_names}
        calls = {
            name: EstimatorCall.make(name, **opts)
            for name in ESTIMATORS.binned_for(lens=cfg.lens, norm=cfg.norm, binning=cfg.binning)
        }
        if cfg.estimator not in calls:
            calls = {cfg.estimator: EstimatorCall.make(cfg.estimator, **opts), **calls}
        return calls

    def _deviation_needs(self, g: _Group, plan: Plan) -> dict[int, tuple[float, ...]]:
        """Norms at which each component's rows' distances to their bin's mean label are needed."""
        norms = tuple(
            sorted(
                {
                    c.norm
                    for c in self._calls(plan).values()
                    if c.info.statistics == "scores-in-bins"
                }
            )
        )
        if not norms or g.cells is None:
            return {}
        return {c: norms for c in range(len(g.cells.names))}

    def _finish(self, plan: Plan, facts: Any) -> StreamAnalysis:
        names = plan.class_names
        load_findings = plan.findings(facts)
        assert self.all_values is not None and self.all_digest is not None
        whole_lint = LintReport(
            tuple(load_findings + self.all_values.findings(names, plan.prob_columns))
        )
        whole = StreamInput(
            source=self.source,
            parts=tuple(p.name for p in self.parts),
            n=facts.n,
            class_names=names,
            binary=plan.binary,
            digest=self.all_digest.hexdigest(names, plan.binary),
            columns=plan.mapping(),
            lint=whole_lint,
            models=tuple(str(m) for m in self.groups if m is not None),
        )
        kept = list(load_findings)
        results = []
        for name, g in self.groups.items():
            assert g.values is not None and g.digest is not None
            lint = (
                whole_lint
                if name is None
                else LintReport(tuple(kept + g.values.findings(names, plan.prob_columns)))
            )
            part = StreamInput(
                source=self.source,
                parts=whole.parts,
                n=g.n,
                class_names=names,
                binary=plan.binary,
                digest=g.digest.hexdigest(names, plan.binary),
                columns=whole.columns,
                lint=lint,
                models=() if name is None else (name,),
            )
            results.append((name, part, self._analysis(g, plan)))
        return StreamAnalysis(whole, tuple(results), self.passes)

    def _analysis(self, g: _Group, plan: Plan) -> ReliabilityAnalysis:
        cfg = self.config
        names = plan.class_names
        cells = g.cells
        assert cells is not None
        n = g.n
        stats = tuple(cells.component_bins(c) for c in range(len(cells.names)))
        squares = tuple(
            np.bincount(cells.bins[:, c], weights=cells.score_squares[:, c], minlength=st.n_bins)
            for c, st in enumerate(stats)
        )
        view = _StatsView(
            tuple(
                _StatsComponent(name, st, _SumsBatch(st, sq, c, g.deviations))
                for c, (name, st, sq) in enumerate(zip(cells.names, stats, squares, strict=True))
            ),
            cells.names,
            cells.weights,
        )
        kp = np.concatenate(g.kernel_p) if g.kernel_p else None
        ky = np.concatenate(g.kernel_y) if g.kernel_y else None
        m = 0 if ky is None else ky.shape[0]
        calls = self._calls(plan)
        results = {}
        notes: dict[str, str] = {}
        for name, call in calls.items():
            if call.info.from_bins:
                est = estimate_binned(call.info, view, call.norm, cfg.seed, call.options)
                results[name] = call.result(est)
                notes[name] = _note(call, results[name], cfg.seed)
            else:
                if kp is None or ky is None:
                    raise ConfigError(
                        f"{name} reads rows, and with kernel_sample=0 a stream keeps none: set "
                        "kernel_sample to the number of rows it may run on."
                    )
                results[name] = call.result(call.run(kp, ky, cfg.seed))
                where = (
                    f"on a seeded subsample of {m:,} of the {n:,} rows (seed {cfg.seed})"
                    if m < n
                    else ""
                )
                notes[name] = "; ".join(filter(None, [_note(call, results[name], cfg.seed), where]))
        headline = results[cfg.estimator]
        opts = {**cfg.calibration_options(), "class_names": names}
        if kp is not None and ky is not None:
            kernel_values, kernel_notes = kernel_estimates(kp, ky, n, cfg, opts, exclude=results)
        else:
            kernel_values = {
                info.name: float("nan")
                for info in ESTIMATORS
                if not info.binned and cfg.lens in info.lenses and info.name not in results
            }
            kernel_notes = dict.fromkeys(
                kernel_values, "not on a stream with kernel_sample=0 (it would hold every row)"
            )
        scores = {s: cells.score_value(s) for s in SCORES.names()}
        notes["brier"] = BRIER_CONVENTIONS[plan.binary]
        known = {**{k: r.value for k, r in results.items()}, **scores}
        intervals = {}
        if cfg.n_resamples > 0:
            fits = {k: c for k, c in calls.items() if supports(c.info, c.norm)}
            for k in calls:
                if k not in fits:
                    extra = "no interval on a stream (it reads rows)"
                    notes[k] = "; ".join(filter(None, [notes.get(k, ""), extra]))
            intervals = intervals_from_cells(cells, cfg, fits, known, notes)
        import pandas as pd

        rows = [
            _metric_row(k, ESTIMATORS.get(k).label, r.value, intervals, notes)
            for k, r in results.items()
        ]
        rows += [
            _metric_row(k, ESTIMATORS.get(k).label, v, {}, kernel_notes)
            for k, v in kernel_values.items()
        ]
        rows += [
            _metric_row(k, SCORES.get(k).label, v, intervals, notes) for k, v in scores.items()
        ]
        bands = g.bands if g.bands else [None] * len(stats)
        parts = [
            (
                BinStats(bins.edges, s[0].round().astype(np.int64), s[1], s[2], cfg.binning),
                s[3],
                s[4],
            )
            for s, bins in zip(
                g.brier, [g.bins[(_brier_lens(plan), c)] for c in range(len(g.brier))], strict=True
            )
        ]
        return ReliabilityAnalysis(
            config=cfg,
            headline=headline,
            headline_interval=intervals.get(cfg.estimator),
            components=component_tables(cells.names, stats, bands, cells.weights, cfg),
            metrics=pd.DataFrame(rows, columns=METRIC_COLUMNS),
            intervals=intervals,
            brier_decomposition=brier_decomposition_from_bins(
                parts, scores["brier"], cfg.binning, cfg.n_bins
            ),
            n=n,
            class_names=names,
            binary=plan.binary,
        )


def _kernel_rows(n: int, config: AnalysisConfig) -> np.ndarray | None:
    """Return the rows kept for the kernel estimators: memory's choice, or None for none.

    ``kernel_sample=0`` (every row) is more than a stream holds: then no rows are kept.
    """
    if config.kernel_sample == 0:
        return None
    rows = kernel_rows(n, config)
    return np.arange(n) if rows is None else rows


def _add_ties(ties: dict, key: Any, p: np.ndarray, binary: bool) -> None:
    counts = TieCounts.of(p[:, 1] if binary else p.max(axis=1))
    ties[key] = counts if key not in ties else ties[key] + counts


def _brier_lens(plan: Plan) -> str:
    return "binary" if plan.binary else "classwise"


def _label_means(st: BinStats) -> np.ndarray:
    counts = st.counts
    return np.divide(st.label_sums, counts, out=np.zeros(counts.shape), where=counts > 0)


@dataclass(frozen=True, eq=False)
class _SumsBatch:
    """A component's bin statistics as the batch of one sample that binned kernels read."""

    stats: BinStats
    squares: np.ndarray
    component: int
    deviations: Mapping[tuple[int, float], np.ndarray]

    @property
    def counts(self) -> np.ndarray:
        return self.stats.counts[None, :]

    @property
    def score_sums(self) -> np.ndarray:
        return self.stats.score_sums[None, :]

    @property
    def label_sums(self) -> np.ndarray:
        return self.stats.label_sums[None, :]

    def score_deviation(self, center: np.ndarray, norm: float) -> np.ndarray:
        """``Σ |s − c_b|^p`` per bin, read in the rows pass for the bins' mean labels."""
        if not np.array_equal(np.asarray(center).ravel(), _label_means(self.stats)):
            raise NotImplementedError("a stream has the rows' distances to the mean labels only")
        return self.deviations[(self.component, float(norm))][None, :]


@dataclass(frozen=True, eq=False)
class _StatsComponent:
    name: str
    stats: BinStats
    batch: _SumsBatch


@dataclass(frozen=True, eq=False)
class _StatsView:
    components: tuple[_StatsComponent, ...]
    names: tuple[str, ...]
    weights: np.ndarray

    @property
    def stats(self) -> tuple[BinStats, ...]:
        return tuple(c.stats for c in self.components)


def analyze_stream(
    source: Any,
    config: AnalysisConfig | None = None,
    *,
    load: LoadOptions | None = None,
    split_models: bool = True,
    model: str | None = None,
    batch_rows: int = BATCH_ROWS,
    progress: Progress | None = None,
) -> StreamAnalysis:
    """Analyse predictions in files of any size, reading them in batches (module docstring).

    Parameters
    ----------
    source : str, path or sequence of them
        A CSV or Parquet file, a folder of them, a glob such as ``'logs/*.parquet'``, or a
        list of files (:func:`core.stream.sources.resolve_parts`).
    config : AnalysisConfig, optional
        The options; ``bootstrap`` must not be ``"exact"`` (intervals come from the cell
        bootstrap), and the lens must have a one-dimensional view.
    load : LoadOptions, optional
        How to read the columns (the options of :func:`core.load_predictions`).
    split_models : bool, default=True
        One analysis per model of a model column (as ``calibscope metrics`` does).
    model : str, optional
        Analyse only this model.
    batch_rows : int, default=1,000,000
        Rows read at once: memory is proportional to it.
    progress : callable, optional
        ``progress(fraction, message)`` during each pass.

    Returns
    -------
    StreamAnalysis
        The input (rows, digest, lint over all rows) and one
        :class:`~core.analysis.ReliabilityAnalysis` per model.

    Raises
    ------
    DataError
        For unreadable files or rows, naming the file and row.
    ConfigError
        For options a stream cannot honour (see ``config``).
    """
    config = check_config(config)
    if LENSES.get(config.lens).kernel_only:
        raise ConfigError(
            f"The {config.lens!r} lens has only kernel estimators, which need the rows: "
            "analyse it in memory, or on a sample of the stream."
        )
    if config.bootstrap == "exact":
        raise ConfigError(
            "The exact bootstrap resamples rows, which a stream does not keep; use "
            "bootstrap='cells' (or 'auto') for intervals from the cell bootstrap."
        )
    engine = _Engine(
        source,
        config,
        load or LoadOptions(),
        split_models=split_models,
        model=model,
        batch_rows=batch_rows,
        progress=progress,
    )
    return engine.run()


__all__ = ["LoadOptions", "StreamAnalysis", "StreamInput", "analyze_stream"]
