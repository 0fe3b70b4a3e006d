"""The reliability analysis of a stream: :func:`analyze_stream`.

The same :class:`~core.analyses.analysis.ReliabilityAnalysis` as :func:`core.analyze`, from statistics
that merge over batches, in a few passes over the files:

1. **Bins.** Equal-width bins need nothing. Equal-mass bins need the scores at a few ranks of
   every lens component: a first pass histograms the scores, further passes narrow the
   buckets of those ranks until their scores are gathered (:mod:`core.stream.ranks`;
   usually two passes in all). The discrete binning collects the distinct scores.
2. **Statistics** (one pass). Each batch's rows are binned on those bins and add: the cells
   of equal bins and outcomes with their score sums (:class:`core.inference.cells.CellStats`: the bin
   tables, every estimator that reads bin statistics, accuracy, Brier score, log loss and the
   cell bootstrap of their intervals), the consistency bands' per-bin sums
   (:class:`core.stats.consistency_bands.BandStats`), the Brier decomposition's per-bin sums, the
   lint facts and the digest.
3. **Rows** (one pass, when needed). The label-binned estimator's ``Σ |s − ȳ_b|^p`` per bin
   (its centres are known only after pass 2), and the seeded subsample of
   ``config.kernel_sample`` rows the kernel estimators and the monotone sweep run on (the
   rows :func:`core.analyses.analysis.kernel_rows` picks in memory, so the numbers are the same).

Every exact statistic equals the in-memory analysis's to rounding (a test asserts 1e-12);
the intervals are those of the cell bootstrap (``AnalysisConfig(bootstrap="cells")`` in
memory gives the same), which does not depend on the batching. Memory is bounded by the
batch size and the number of bins, not by the number of rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from core.analyses.analysis import (
    CONSISTENCY_BAND_MAX_BINS,
    AnalysisConfig,
    ReliabilityAnalysis,
    assemble_analysis,
    check_config,
    component_tables,
    estimate_note,
    intervals_from_cells,
    kernel_estimates,
    kernel_rows,
)
from core.base.errors import ConfigError
from core.base.progress import Progress
from core.data.limits import LoadLimits
from core.data.lint import LintReport, ValueFacts
from core.estimators import ESTIMATORS
from core.estimators.base import Estimate, estimate_binned
from core.inference.calibration import EstimatorCall
from core.inference.cells import supports
from core.stats.binning import BINNINGS, BinStats
from core.stats.lenses import LENSES, lens_components
from core.stats.scores import BRIER_CONVENTIONS, SCORES, brier_decomposition_from_bins
from core.stream.bins import (
    StreamBins,
    discrete_bins,
    equal_mass_bins,
    equal_mass_ranks,
    keep_bins,
)
from core.stream.engine import StreamRunner
from core.stream.load import LoadOptions, Plan
from core.stream.ranks import PassCounts, RankSearch, level1_size
from core.stream.sources import BATCH_ROWS
from core.stream.stats import (
    ALL_ROWS,
    BinSpec,
    GroupStats,
    Key,
    RowStats,
    WholeStats,
    bins_for,
    first_stats,
    group_stats,
    lint_stats,
    narrow_stats,
    row_stats,
    row_stats_ties,
    several,
    whole_stats,
)


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
    samples : dict
        Model → ``(probs, labels)`` of the seeded subsample the kernel estimators ran on
        (None where no rows were kept).
    """

    input: StreamInput
    results: tuple[tuple[str | None, StreamInput, ReliabilityAnalysis], ...]
    passes: int
    samples: dict[str | None, tuple[np.ndarray, np.ndarray] | None] = field(default_factory=dict)

    @property
    def analysis(self) -> ReliabilityAnalysis:
        """The analysis of a stream without a model column (or its only model)."""
        if len(self.results) != 1:
            raise ConfigError(
                f"The stream holds {len(self.results)} models; read .results for each."
            )
        return self.results[0][2]


# --------------------------------------------------------------------------- the passes


class AnalysisPasses:
    """The passes of one streamed analysis, made by a runner (stream or Dask)."""

    def __init__(self, runner: Any, config: AnalysisConfig, *, split: bool, only: str | None):
        self.runner = runner
        self.config = config
        self.split = split
        self.only = only

    def _chunk_args(self) -> dict[str, Any]:
        return {
            "class_weights": self.config.class_weights,
            "split": self.split,
            "only": self.only,
        }

    def run(self) -> StreamAnalysis:
        cfg = self.config
        plan = self.runner.plan()
        if self.only is not None and "model" not in plan.roles:
            raise ConfigError(f"--model {self.only!r} given but {plan.source} has no model column.")
        self.models = self.split and "model" in plan.roles
        brier = "binary" if plan.binary else "classwise"
        main = BinSpec(cfg.lens, cfg.binning, cfg.n_bins, cfg.tie_policy)
        self.specs = [main, BinSpec(brier, cfg.binning, cfg.n_bins, cfg.tie_policy)]
        if self.specs[1].lens == main.lens:
            self.specs[1] = main
        self.bins: dict[str | None, dict[Key, StreamBins]] = {}
        if BINNINGS.get(cfg.binning).data_dependent:
            plan = self._fix_bins(plan)
        plan, facts, groups = self._statistics(plan)
        whole = groups.pop(ALL_ROWS, None)
        rows = self._rows(plan, groups, whole)
        return self._finish(plan, facts, groups, whole, rows)

    # -- 1. bins

    def _fix_bins(self, plan: Plan) -> Plan:
        cfg = self.config
        k = len(plan.class_names)
        columns = sum(lens_components(spec.lens, k) for spec in set(self.specs))
        size = level1_size(columns)
        specs = self.specs if self.specs[1] != self.specs[0] else self.specs[:1]

        first = partial(first_stats, specs=specs, size=size, **self._chunk_args())
        plan, _, got = self.runner.run(plan, first, "histogram of the scores")
        self.n = {name: int(keyed.pop((-1, 0))[0]) for name, keyed in got.items()}
        if cfg.binning == "discrete":
            for name, keyed in got.items():
                self.bins[name] = {key: discrete_bins(d.values) for key, d in keyed.items()}
            return plan
        searches = {}
        for name, keyed in got.items():
            ranks = {key: equal_mass_ranks(self.n[name], cfg.n_bins) for key in keyed}
            search = searches[name] = RankSearch(ranks, level1=size)
            for key, hist in keyed.items():
                search.update(key, PassCounts(level1=hist))
        self._narrow(plan, specs, searches)
        found = {
            name: {key: search.found(key) for key in search.targets}
            for name, search in searches.items()
        }
        again = {}
        for name in searches:
            todo = {}
            for key, f in found[name].items():
                bins, rest = equal_mass_bins(self.n[name], cfg.n_bins, cfg.tie_policy, f)
                self.bins.setdefault(name, {})[key] = bins
                if rest.size:
                    todo[key] = rest
            if todo:
                again[name] = RankSearch(todo)
        if again:  # tie_policy="keep": the first scores after the tie blocks
            self._narrow(plan, specs, again)
            for name, search in again.items():
                for key in search.targets:
                    merged = {**found[name][key], **search.found(key)}
                    self.bins[name][key] = keep_bins(self.bins[name][key], self.n[name], merged)
        return plan

    def _narrow(self, plan: Plan, specs: list[BinSpec], searches: dict) -> None:
        while not all(search.done for search in searches.values()):
            narrow = partial(narrow_stats, specs=specs, searches=searches, **self._chunk_args())
            _, _, got = self.runner.run(plan, narrow, "exact equal-mass edges")
            for name, search in searches.items():
                keyed = got.get(name, {})
                for key in search.targets:
                    search.update(key, keyed.get(key, PassCounts()))

    # -- 2. statistics

    def _statistics(self, plan: Plan) -> tuple[Plan, Any, dict]:
        cfg = self.config

        groups = partial(
            group_stats,
            specs=self.specs,
            bins=self.bins,
            bands=cfg.consistency_band,
            max_band_bins=CONSISTENCY_BAND_MAX_BINS,
            **self._chunk_args(),
        )
        func = partial(several, funcs=(groups, whole_stats)) if self.models else groups
        return self.runner.run(plan, func, "bin statistics")

    # -- 3. rows

    def _rows(self, plan: Plan, groups: dict, whole: Any) -> dict:
        cfg = self.config
        norms = tuple(
            sorted(
                {
                    c.norm
                    for c in self._calls(plan).values()
                    if c.info.statistics == "scores-in-bins"
                }
            )
        )
        wanted = {name: stream_kernel_rows(g.n, cfg) for name, g in groups.items()}
        facts = [g.values for g in groups.values()] + ([whole.values] if whole else [])
        ties = any(f.needs_ties for f in facts)
        if not (norms or ties or self._rows_needed(plan)):
            return {}
        centers = {
            name: [bin_label_means(g.cells.component_bins(c)) for c in range(len(g.cells.names))]
            for name, g in groups.items()
        }

        rows_of = partial(
            row_stats,
            spec=self.specs[0],
            bins=self.bins,
            centers=centers,
            norms=norms,
            wanted=wanted,
            ties=ties,
            **self._chunk_args(),
        )

        _, _, got = self.runner.run(
            plan, rows_of, "rows for the label-binned and kernel estimators"
        )
        return got

    def _rows_needed(self, plan: Plan) -> bool:
        """Whether some estimator of the table reads rows (kernel estimators, the sweep)."""
        cfg = self.config
        kernels = any(not info.binned and cfg.lens in info.lenses for info in ESTIMATORS)
        return kernels or any(
            not c.info.from_bins or c.binning != cfg.binning for c in self._calls(plan).values()
        )

    def _calls(self, plan: Plan) -> dict[str, EstimatorCall]:
        cfg = self.config
        opts = {**cfg.calibration_options(), "class_names": plan.class_names}
        calls = {
            name: EstimatorCall.make(name, **opts)
            for name in ESTIMATORS.lp_for(lens=cfg.lens, norm=cfg.norm, binning=cfg.binning)
        }
        if cfg.estimator not in calls:
            calls = {cfg.estimator: EstimatorCall.make(cfg.estimator, **opts), **calls}
        return calls

    # -- the results

    def _finish(
        self, plan: Plan, facts: Any, groups: dict, whole: Any, rows: dict
    ) -> StreamAnalysis:
        names = plan.class_names
        load_findings = plan.findings(facts)
        if whole is None:
            ((_, only),) = groups.items()
            whole = WholeStats(only.values, only.digest)
        all_ties = rows.get(ALL_ROWS)
        values = whole.values
        if all_ties is not None:
            values = replace(values, ties=all_ties.ties)
        elif whole.values.needs_ties and None in rows:
            values = replace(values, ties=rows[None].ties)
        lint = LintReport(tuple(load_findings + values.findings(names, plan.prob_columns)))
        source = StreamInput(
            source=plan.source,
            parts=self.runner.part_names,
            n=facts.n,
            class_names=names,
            binary=plan.binary,
            digest=whole.digest.hexdigest(names, plan.binary),
            columns=plan.mapping(),
            lint=lint,
            models=tuple(str(m) for m in groups if m is not None),
        )
        results = []
        samples = {}
        for name, g in groups.items():
            got = rows.get(name, RowStats())
            samples[name] = got.kernel_rows()
            if name is None:
                part_lint = lint
            else:
                v = g.values if got.ties is None else replace(g.values, ties=got.ties)
                part_lint = LintReport(tuple(load_findings + v.findings(names, plan.prob_columns)))
            part = replace(
                source,
                n=g.n,
                digest=g.digest.hexdigest(names, plan.binary),
                lint=part_lint,
                models=() if name is None else (name,),
            )
            results.append((name, part, self._analysis(g, got, plan, name)))
        return StreamAnalysis(source, tuple(results), self.runner.passes, samples)

    def _analysis(self, g: GroupStats, got: RowStats, plan: Plan, name: Any) -> ReliabilityAnalysis:
        cfg = self.config
        names = plan.class_names
        cells = g.cells
        n = g.n
        view = stats_view(cells, got.deviations)
        stats = view.stats
        kernel = got.kernel_rows()
        calls = self._calls(plan)
        results: dict[str, Any] = {}
        notes: dict[str, str] = {}
        for key, call in calls.items():
            results[key], notes[key] = _stream_estimate(key, call, view, kernel, n, cfg)
        kernel_values, kernel_notes = _stream_kernel_estimates(kernel, n, cfg, names, results)
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
        bands = g.bands if g.bands is not None else (None,) * len(stats)
        brier_bins = self.bins.setdefault(name, {})
        parts = [
            (
                BinStats(
                    bins_for(brier_bins, self.specs[1], (j, c)).edges,
                    sums[0].round().astype(np.int64),
                    sums[1],
                    sums[2],
                    cfg.binning,
                ),
                sums[3],
                sums[4],
            )
            for c, sums in enumerate(g.brier)
            for j in [0 if self.specs[1] == self.specs[0] else 1]
        ]
        return assemble_analysis(
            cfg,
            headline=results[cfg.estimator],
            values={k: r.value for k, r in results.items()},
            kernel_values=kernel_values,
            kernel_notes=kernel_notes,
            scores=scores,
            intervals=intervals,
            notes=notes,
            components=component_tables(cells.names, stats, bands, cells.weights, cfg),
            brier_decomposition=brier_decomposition_from_bins(
                parts, scores["brier"], cfg.binning, cfg.n_bins
            ),
            n=n,
            class_names=names,
            binary=plan.binary,
        )


def _stream_estimate(
    key: str, call: EstimatorCall, view: Any, kernel: Any, n: int, cfg: AnalysisConfig
) -> tuple[Any, str]:
    """Return one metric of a stream and its note: on the stream's bins, or on its kept rows.

    Raises
    ------
    ConfigError
        For the headline estimator when it reads rows and the stream keeps none.
    """
    if call.info.from_bins and call.binning == cfg.binning:
        est = estimate_binned(call.info, view, call.norm, cfg.seed, call.options)
        result = call.result(est)
        return result, estimate_note(call, result, cfg.seed)
    if kernel is None and key != cfg.estimator and call.info.from_bins:
        # its own bins (mcb: discrete) are not the stream's: it needs rows
        return call.result(Estimate(float("nan"), (), ())), (
            f"not on a stream with kernel_sample=0: it bins with {call.binning}, the "
            f"stream with {cfg.binning}"
        )
    if kernel is None:
        raise ConfigError(
            f"{key} reads rows, and with kernel_sample=0 a stream keeps none: set "
            "kernel_sample to the number of rows it may run on."
        )
    m = kernel[1].shape[0]
    result = call.result(call.run(kernel[0], kernel[1], cfg.seed))
    where = f"on a seeded subsample of {m:,} of the {n:,} rows (seed {cfg.seed})" if m < n else ""
    return result, "; ".join(filter(None, [estimate_note(call, result, cfg.seed), where]))


def _stream_kernel_estimates(
    kernel: Any, n: int, cfg: AnalysisConfig, names: Any, results: Mapping[str, Any]
) -> tuple[dict[str, float], dict[str, str]]:
    """Return the kernel estimators' values and notes on the kept rows (NaN without rows)."""
    if kernel is not None:
        opts = {**cfg.calibration_options(), "class_names": names}
        return kernel_estimates(*kernel, n, cfg, opts, exclude=results)
    kernel_values = {
        info.name: float("nan")
        for info in ESTIMATORS
        if not info.lp_scale and cfg.lens in info.lenses and info.name not in results
    }
    return kernel_values, dict.fromkeys(
        kernel_values, "not on a stream with kernel_sample=0 (it would hold every row)"
    )


def stream_kernel_rows(n: int, config: AnalysisConfig) -> np.ndarray | None:
    """Return the rows kept for the kernel estimators: memory's choice, or None for none.

    ``kernel_sample=0`` (every row) is more than a stream holds: then no rows are kept.
    """
    if config.kernel_sample == 0:
        return None
    rows = kernel_rows(n, config)
    return np.arange(n) if rows is None else rows


def bin_label_means(st: BinStats) -> np.ndarray:
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
        if not np.array_equal(np.asarray(center).ravel(), bin_label_means(self.stats)):
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


def stats_view(cells: Any, deviations: Mapping[tuple[int, float], np.ndarray]) -> Any:
    """Return the binned view that binned kernels read, from cells and the rows pass' distances.

    Parameters
    ----------
    cells : core.inference.cells.CellStats
        Merged cells of one data set (a model's rows).
    deviations : mapping
        ``(component, norm) → Σ |s − ȳ_b|^p`` per bin (:class:`core.stream.stats.RowStats`).

    Returns
    -------
    object
        ``components`` (each with ``stats`` and ``batch``), ``names``, ``weights``, ``stats``:
        what :func:`core.estimators.base.estimate_binned` reads.
    """
    stats = tuple(cells.component_bins(c) for c in range(len(cells.names)))
    squares = tuple(
        np.bincount(cells.bins[:, c], weights=cells.score_squares[:, c], minlength=st.n_bins)
        for c, st in enumerate(stats)
    )
    return _StatsView(
        tuple(
            _StatsComponent(cname, st, _SumsBatch(st, sq, c, deviations))
            for c, (cname, st, sq) in enumerate(zip(cells.names, stats, squares, strict=True))
        ),
        cells.names,
        cells.weights,
    )


def analyze_stream(
    source: Any,
    config: AnalysisConfig | None = None,
    *,
    load: LoadOptions | None = None,
    split_models: bool = True,
    model: str | None = None,
    batch_rows: int = BATCH_ROWS,
    progress: Progress | None = None,
    limits: LoadLimits | None = None,
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
    limits : LoadLimits, optional
        Columns and gzip expansion allowed (default :meth:`LoadLimits.from_env`; a stream
        does not limit rows or bytes).

    Returns
    -------
    StreamAnalysis
        The input (rows, digest, lint over all rows) and one
        :class:`~core.analyses.analysis.ReliabilityAnalysis` per model.

    Raises
    ------
    DataError
        For unreadable files or rows, naming the file and row.
    ConfigError
        For options a stream cannot honour (see ``config``).
    """
    config = check_config(config)
    check_stream_config(config)
    with StreamRunner(
        source, load or LoadOptions(), batch_rows=batch_rows, progress=progress, limits=limits
    ) as runner:
        return run_analysis(runner, config, split_models=split_models, model=model)


def lint_stream(
    runner: Any, *, split_models: bool = True, model: str | None = None
) -> StreamAnalysis:
    """Lint a stream: the findings over all rows (and per model), in one or two passes.

    Parameters
    ----------
    runner : StreamRunner or DaskRunner
        Where the rows are read.
    split_models, model
        As for :func:`analyze_stream`.

    Returns
    -------
    StreamAnalysis
        The input and, per model, its input with its lint (no analyses: None).
    """
    plan = runner.plan()
    if model is not None and "model" not in plan.roles:
        raise ConfigError(f"--model {model!r} given but {plan.source} has no model column.")
    split = split_models and "model" in plan.roles
    func = partial(lint_stats, split=split, only=model)
    plan, facts, got = runner.run(plan, func, "lint")
    if any(w.values.needs_ties for w in got.values()):
        ties = partial(row_stats_ties, split=split, only=model)
        _, _, counted = runner.run(plan, ties, "counts of tied scores")
        got = {k: replace(w, values=replace(w.values, ties=counted[k])) for k, w in got.items()}
    names = plan.class_names
    load = plan.findings(facts)
    whole = got.pop(ALL_ROWS)

    def report(values: ValueFacts) -> LintReport:
        return LintReport(tuple(load + values.findings(names, plan.prob_columns)))

    source = StreamInput(
        source=plan.source,
        parts=runner.part_names,
        n=facts.n,
        class_names=names,
        binary=plan.binary,
        digest=whole.digest.hexdigest(names, plan.binary),
        columns=plan.mapping(),
        lint=report(whole.values),
        models=tuple(str(m) for m in got if m is not None),
    )
    results = tuple(
        (
            name,
            replace(
                source,
                n=w.values.n,
                digest=w.digest.hexdigest(names, plan.binary),
                lint=report(w.values),
                models=() if name is None else (name,),
            ),
            None,
        )
        for name, w in got.items()
        if split
    )
    return StreamAnalysis(source, results, runner.passes)


def run_analysis(
    runner: Any, config: AnalysisConfig, *, split_models: bool = True, model: str | None = None
) -> StreamAnalysis:
    """Run the passes of a streamed analysis with a runner (:mod:`core.stream.engine`, Dask)."""
    return AnalysisPasses(runner, config, split=split_models, only=model).run()


def check_stream_config(config: AnalysisConfig) -> None:
    """Refuse the options a stream cannot honour (a lens without a 1-D view, exact bootstrap).

    Raises
    ------
    ConfigError
        Saying what to choose instead.
    """
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
    if config.convention != "calibscope":
        raise ConfigError(
            f"The {config.convention!r} convention bins in memory only: analyse the file "
            "with --engine memory, or use convention='calibscope' on a stream."
        )


__all__ = [
    "LoadOptions",
    "StreamAnalysis",
    "StreamInput",
    "analyze_stream",
    "check_stream_config",
    "run_analysis",
]
