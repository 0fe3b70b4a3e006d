"""The comparison of the models of a stream: :func:`compare_stream`.

The same :class:`~core.analyses.model_comparison.ModelComparison` as :func:`core.compare_models` on the
models of a model column (``Predictions.by_model()``) with ``bootstrap="cells"``, from
statistics that merge over batches, in a few passes over the files:

1. **Shared bins.** Equal-width bins need nothing. Equal-mass edges are those of the *pooled*
   scores of the compared models, found by the rank search of the streamed analysis
   (:mod:`core.stream.ranks`, usually two passes); discrete edges from their distinct scores.
2. **Statistics** (one pass). Each batch's rows of every compared model are placed on the
   shared edges (:func:`core.stats.binning.assign_to_edges`, as in memory) and add to that model's
   cells (:func:`core.inference.comparison_cells.model_cells`, with the per-row scores' sums), its row
   count and an order-sensitive digest of its labels (:class:`core.data.predictions.Digest`
   of the labels alone: fixed leaves by position, so any batching gives the same digest).
   The models are **paired**, as in memory, when all have the same ``n`` and the same labels
   in the same order (equal label digests).
3. **Rows** (one pass, when needed). The label-binned estimator's ``Σ |s − ȳ_b|^p`` per
   shared bin (its centres come from pass 2), and each model's seeded subsample of
   ``config.kernel_sample`` rows (:func:`core.analyses.analysis.kernel_rows`, as the streamed
   analysis) for the metrics that read rows: the sweep, kernel estimators, the smooth ECE,
   ``mcb``. Below ``kernel_sample`` rows the subsample is every row, and the numbers are
   those of memory.
4. **Joint cells** (paired models). A joint cell holds every model's bins
   at one row position (:mod:`core.inference.comparison_cells`), so the models' rows are read side by
   side: one reader per model runs through the files keeping that model's rows, and the
   readers are zipped by position and cut into aligned chunks whose joint cells merge by
   ``+``. Memory holds at most about two batches per model; the files are read once per
   model (the pass costs ``models`` reads). On Dask, each partition's rows of every model are
   cut by block of row positions and one task per block gathers its pieces from the
   partitions (:meth:`core.stream.dask.DaskRunner.side_by_side`); both engines compute the
   same chunks (:func:`joint_chunk`). The labels are compared position by position on the
   way: should they differ after all, the comparison is the unpaired one.

Intervals come from the cell bootstrap (each model's own cells and seed when not paired; one
draw of the joint cells for all models when paired), which reads merged cells only and does
not depend on the batching. The Dask engine runs passes 1–3 as tasks per partition.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from core.analyses.analysis import AnalysisConfig, check_config
from core.analyses.model_comparison import (
    DEFAULT_METRICS,
    ComparisonOptions,
    ComparisonSettings,
    ModelComparison,
    assemble_comparison,
    call_options,
    check_comparison_config,
    check_options,
    estimator_options,
    joint_dists,
    model_seed,
    on_edges,
    own_cell_dists,
    too_few_models,
)
from core.base.errors import ConfigError, DataError
from core.base.progress import Progress
from core.data.limits import LoadLimits
from core.data.lint import LintReport
from core.data.predictions import Digest
from core.data.text import rows_in
from core.estimators.base import estimate_binned
from core.inference.calibration import EstimatorCall
from core.inference.cells import CellStats, cell_bootstrap
from core.inference.comparison_cells import joint_cells, model_cells, resampled_by_cells
from core.stats.binned_view import ComponentBins
from core.stats.binning import BINNINGS
from core.stats.intervals import pivots
from core.stats.lenses import lens_view
from core.stats.scores import SCORES
from core.stream.analysis import (
    AnalysisPasses,
    StreamInput,
    bin_label_means,
    check_stream_config,
    stats_view,
    stream_kernel_rows,
)
from core.stream.dask import DaskRunner
from core.stream.engine import StreamRunner
from core.stream.load import LoadOptions, Plan, Rows, batch_facts, read_rows
from core.stream.sources import BATCH_ROWS, read_batches
from core.stream.stats import (
    ALL_ROWS,
    BinSpec,
    Offsets,
    RowStats,
    model_rows,
    several,
    whole_stats,
)

__all__ = [
    "ModelStats",
    "StreamComparison",
    "compare_dask",
    "compare_stream",
    "model_stats",
    "run_comparison",
]

#: The note of a metric the cell bootstrap cannot resample, on a stream.
NO_STREAM_INTERVAL = "no interval on a stream (it reads rows)"


# --------------------------------------------------------------------------- chunk functions


def select_models(rows: Rows, offsets: Offsets, *, func: Any, models: tuple[str, ...]) -> Any:
    """Run a chunk function on the rows of ``models`` only (the pooled rows of a comparison)."""
    keep = rows_in(rows.roles["model"], models)
    if keep.all():
        return func(rows, offsets)
    chosen = replace(
        rows,
        positions=None if rows.positions is None else rows.positions[keep],
        probs=rows.probs[keep],
        labels=rows.labels[keep],
        roles={r: v[keep] for r, v in rows.roles.items()},
        extra={c: v[keep] for c, v in rows.extra.items()},
    )
    return func(chosen, offsets)


#: The key of :func:`model_names`' statistics.
MODEL_NAMES = ("model names",)


@dataclass(frozen=True)
class ModelNames:
    """The models of a model column in order of first appearance (merge by ``+``)."""

    names: tuple[str, ...]

    def __add__(self, other: ModelNames) -> ModelNames:
        return ModelNames(tuple(dict.fromkeys(self.names + other.names)))


def model_names(rows: Rows, offsets: Offsets) -> tuple[dict, dict, dict]:
    """Return the models of a chunk, in order of first appearance."""
    names = tuple(name for name, _ in model_rows(rows, True, None))
    return {MODEL_NAMES: ModelNames(names)}, {}, {}


def _on_edges(
    p: np.ndarray, y: np.ndarray, plan: Plan, config: AnalysisConfig, edges: Sequence[np.ndarray]
) -> tuple[list[ComponentBins], np.ndarray]:
    """Return a model's lens components on the shared edges, and their weights."""
    view = lens_view(
        p, y, config.lens, class_names=plan.class_names, class_weights=config.class_weights
    )
    return on_edges(view, edges, config), np.asarray(view.weights, dtype=np.float64)


def _scores_of(p: np.ndarray, y: np.ndarray, binary: bool, scores: Sequence[str]) -> dict:
    return {s: SCORES.get(s).rows(p, y, binary=binary) for s in scores}


@dataclass(frozen=True, eq=False)
class ModelStats:
    """One model's statistics in a comparison (merge by ``+``, later rows on the right).

    Attributes
    ----------
    n : int
        Rows.
    cells : CellStats
        Cells on the shared edges, with every score's row sums (a paired model's own
        interval draws them all, as the analysis does: :func:`core.analyses.model_comparison.own_cell_dists`).
    labels : Digest
        The digest of the model's labels in order (its probabilities left out).
    """

    n: int
    cells: CellStats
    labels: Digest

    def __add__(self, other: ModelStats) -> ModelStats:
        return ModelStats(self.n + other.n, self.cells + other.cells, self.labels + other.labels)


def _label_digest(y: np.ndarray, start: int) -> Digest:
    digest = Digest(1, start)
    digest.update(np.zeros((y.shape[0], 1)), y)
    return digest


def model_stats(
    rows: Rows,
    offsets: Offsets,
    *,
    config: AnalysisConfig,
    edges: tuple[np.ndarray, ...],
    models: tuple[str, ...] | None,
) -> tuple[dict[str, ModelStats], dict[str, int], dict]:
    """Return the chunk's :class:`ModelStats` of every compared model and its rows per model.

    The cells keep every score's row sums, compared or not (:class:`ModelStats`).
    """
    plan = rows.plan
    assert plan is not None
    out: dict[str, ModelStats] = {}
    counts: dict[str, int] = {}
    for name, idx in model_rows(rows, True, None):
        if models is not None and name not in models:
            continue
        p, y = rows.probs[idx], rows.labels[idx]
        comps, weights = _on_edges(p, y, plan, config, edges)
        cells = model_cells(
            comps,
            weights,
            **config.binning_options(),
            row_values=_scores_of(p, y, plan.binary, SCORES.names()),
        )
        start = offsets.groups.get(name, 0)
        out[name] = ModelStats(int(y.shape[0]), cells, _label_digest(y, start))
        counts[name] = int(y.shape[0])
    return out, counts, {}


def model_row_stats(
    rows: Rows,
    offsets: Offsets,
    *,
    config: AnalysisConfig,
    edges: tuple[np.ndarray, ...],
    models: tuple[str, ...] | None,
    centers: Mapping[str, list[np.ndarray]],
    norms: tuple[float, ...],
    wanted: Mapping[str, np.ndarray | None],
) -> tuple[dict[str, RowStats], dict[str, int], dict]:
    """Return each compared model's distances to its bins' mean labels and subsample rows."""
    plan = rows.plan
    assert plan is not None
    out: dict[str, RowStats] = {}
    counts: dict[str, int] = {}
    for name, idx in model_rows(rows, True, None):
        if models is not None and name not in models:
            continue
        p, y = rows.probs[idx], rows.labels[idx]
        start, m = offsets.groups.get(name, 0), y.shape[0]
        counts[name] = int(m)
        stats = RowStats()
        want = wanted.get(name)
        if want is not None:
            sel = want[(want >= start) & (want < start + m)] - start
            if sel.size:
                stats = RowStats({}, (sel + start,), (p[sel],), (y[sel],))
        if norms:
            comps, _ = _on_edges(p, y, plan, config, edges)
            deviations = {}
            for c, comp in enumerate(comps):
                idx_c = comp.index
                dev = np.abs(comp.scores - centers[name][c][idx_c])
                size = edges[c].shape[0] - 1
                for norm in norms:
                    if np.isinf(norm):
                        top = np.full(size, -np.inf)
                        np.maximum.at(top, idx_c, dev)
                        deviations[(c, norm)] = top
                    else:
                        w = dev if norm == 1.0 else dev * dev
                        deviations[(c, norm)] = np.bincount(idx_c, weights=w, minlength=size)
            stats = RowStats(deviations, stats.positions, stats.probs, stats.labels)
        out[name] = stats
    return out, counts, {}


# --------------------------------------------------------------------------- joint cells


def _model_chunks(runner: StreamRunner, plan: Plan, model: str) -> Iterator[tuple[Any, Any]]:
    """Yield ``(probs, labels)`` of one model's rows, batch after batch, in file order."""
    for batch in read_batches(
        runner.parts, runner.layout, plan.columns, batch_rows=runner.batch_rows
    ):
        facts, P, labels, keep = batch_facts(batch, plan, decide=False)
        rows = read_rows(batch, plan, facts, P, labels, keep)
        mine = rows_in(rows.roles["model"], (model,))
        if mine.any():
            yield rows.probs[mine], rows.labels[mine]


class _Reader:
    """One model's rows, pulled from its reader as the zipped readers need them."""

    def __init__(self, chunks: Iterator[tuple[Any, Any]]) -> None:
        self.chunks = chunks
        self.held: list[tuple[Any, Any]] = []
        self.size = 0
        self.done = False

    def fill(self, rows: int) -> None:
        while self.size < rows and not self.done:
            got = next(self.chunks, None)
            if got is None:
                self.done = True
            else:
                self.held.append(got)
                self.size += got[1].shape[0]

    def take(self, rows: int) -> tuple[np.ndarray, np.ndarray]:
        p = np.concatenate([h[0] for h in self.held])
        y = np.concatenate([h[1] for h in self.held])
        self.held = [(p[rows:], y[rows:])] if rows < y.shape[0] else []
        self.size -= rows
        return p[:rows], y[:rows]


def joint_pass(
    runner: StreamRunner,
    plan: Plan,
    config: AnalysisConfig,
    edges: tuple[np.ndarray, ...],
    models: Sequence[str],
    scores: Sequence[str],
) -> CellStats | None:
    """Return the joint cells of paired models, read side by side (module docstring, 4).

    Returns None when two models' labels differ at some position (then they are not paired).
    """
    readers = [_Reader(_model_chunks(runner, plan, m)) for m in models]
    runner.passes += len(models)
    total: CellStats | None = None
    done = 0
    while True:
        for r in readers:
            r.fill(runner.batch_rows)
        k = min(r.size for r in readers)
        if k == 0:
            if any(r.size for r in readers):
                return None  # one model has more rows after all
            return total
        cells = joint_chunk([r.take(k) for r in readers], plan, config, edges, scores)
        if cells is None:
            return None
        total = cells if total is None else total + cells
        done += k
        if runner.progress is not None:
            runner.progress(0.0, f"joint cells of {len(models)} models ({done:,} rows each)")


def joint_chunk(
    taken: Sequence[tuple[np.ndarray, np.ndarray]],
    plan: Plan,
    config: AnalysisConfig,
    edges: Sequence[np.ndarray],
    scores: Sequence[str],
) -> CellStats | None:
    """Return the joint cells of the same positions of every model's rows (None: not paired).

    ``taken`` holds each model's ``(probs, labels)`` at the same row positions; the cells of
    consecutive positions merge by ``+`` whatever the chunks (the stream's batches, Dask's
    blocks of positions).
    """
    labels = taken[0][1]
    if any(y.shape != labels.shape or not np.array_equal(y, labels) for _, y in taken[1:]):
        return None
    parts, values = [], []
    weights = None
    for p, y in taken:
        comps, weights = _on_edges(p, y, plan, config, edges)
        parts.append(comps)
        values.append(_scores_of(p, y, plan.binary, scores))
    return joint_cells(
        parts,
        weights,
        **config.binning_options(),
        row_values=values,
    )


# --------------------------------------------------------------------------- the passes


class _Selected:
    """A runner whose passes see the rows of the compared models only."""

    def __init__(self, runner: Any, models: tuple[str, ...] | None) -> None:
        self.runner = runner
        self.models = models

    def plan(self) -> Plan:
        return self.runner.plan()

    def run(self, plan: Plan, func: Any, what: str) -> Any:
        if self.models is not None:
            func = partial(select_models, func=func, models=self.models)
        return self.runner.run(plan, func, what)


class _SharedBins(AnalysisPasses):
    """The edges of the pooled rows (the streamed analysis' bins of all rows as one)."""

    def _chunk_args(self) -> dict[str, Any]:
        return {"class_weights": self.config.class_weights, "split": False, "only": None}

    def edges(self, plan: Plan) -> tuple[Plan, tuple[np.ndarray, ...] | None]:
        cfg = self.config
        main = BinSpec(cfg.lens, cfg.binning, cfg.n_bins, cfg.tie_policy)
        self.specs = [main, main]
        self.bins = {}
        if not BINNINGS.get(cfg.binning).data_dependent:
            return plan, None
        plan = self._fix_bins(plan)
        got = self.bins.get(None, {})
        return plan, tuple(got[key].edges for key in sorted(got))


@dataclass(frozen=True, eq=False)
class StreamComparison:
    """The comparison of a stream's models, with what the stream held.

    Attributes
    ----------
    input : StreamInput
        The stream as a whole (rows, digest, columns, lint without tie counts).
    comparison : ModelComparison
        The comparison, as :func:`core.compare_models` returns it.
    passes : int
        Passes made over the files (the joint cells count one per model).
    """

    input: StreamInput
    comparison: ModelComparison
    passes: int


def run_comparison(
    runner: Any,
    config: AnalysisConfig | None = None,
    options: ComparisonOptions | None = None,
    *,
    models: Sequence[str] | None = None,
) -> StreamComparison:
    """Run the passes of a streamed comparison with a runner (stream or Dask).

    Parameters
    ----------
    runner : StreamRunner or DaskRunner
        Where the rows are read.
    config : AnalysisConfig, optional
        As for :func:`compare_stream`.
    options : ComparisonOptions, optional
        The metrics, reference and bootstrap (default ``ComparisonOptions()``); a stream
        runs no calibration test.
    models : sequence of str, optional
        As for :func:`compare_stream`.

    Returns
    -------
    StreamComparison
        The input and the comparison.
    """
    config = check_comparison_config(config)
    check_stream_config(config)
    settings = _stream_settings(config, options or ComparisonOptions())
    specs, n_resamples, seed_value = settings.specs, settings.n_resamples, settings.seed
    reference = settings.reference
    wanted = None if models is None else tuple(dict.fromkeys(str(m) for m in models))

    plan = runner.plan()
    if "model" not in plan.roles:
        raise DataError(
            f"{plan.source} has no model column; compare needs one (one block of rows per model)."
        )
    found = _check_wanted(runner, plan, wanted)
    selected = _Selected(runner, wanted)
    shared = _SharedBins(selected, config, split=False, only=None)
    plan, edges = shared.edges(plan)
    if edges is None:  # equal-width: the same for every model by construction
        edges = _fixed_edges(plan, config)

    scores = tuple(s.name for s in specs if s.kind == "score")
    func = partial(model_stats, config=config, edges=edges, models=wanted)
    func = partial(several, funcs=(func, whole_stats))
    plan, facts, got = runner.run(plan, func, "bin statistics of every model")
    whole = got.pop(ALL_ROWS)
    names = _compared(got, wanted, plan, reference)
    stats = {m: got[m] for m in names}
    n = {m: stats[m].n for m in names}
    digests = {m: stats[m].labels.hexdigest(("labels",), False) if n[m] else "" for m in names}
    paired = len(set(n.values())) == 1 and len(set(digests.values())) == 1

    joint = None
    if paired and n_resamples:
        joint = _joint_cells(runner, plan, config, edges, names, scores, n[names[0]])
        paired = joint is not None

    calls, others = _calls(specs, config, plan)
    rows = _rows_pass(runner, plan, config, edges, names, stats, calls, specs, n)
    seeds = {m: model_seed(seed_value, i, paired) for i, m in enumerate(names)}
    values: dict[tuple[str, str], float] = {}
    notes: dict[tuple[str, str], str] = {}
    dists: dict[tuple[str, str], np.ndarray] = {}
    own: dict[tuple[str, str], np.ndarray] = {}
    truths: dict[tuple[str, str], float] = {}
    fits = resampled_by_cells(calls)
    for m in names:
        got_rows = rows.get(m, RowStats())
        _model_values(
            m, stats[m], got_rows, config, specs, calls, others, seeds[m], values, notes, truths
        )
        if n_resamples:
            _no_stream_interval_notes(m, specs, fits, notes)
            got_dists = _model_dists(m, stats[m].cells, specs, fits, n_resamples, seeds[m], paired)
            (own if paired else dists).update(got_dists)
    if joint is not None:
        dists.update(
            joint_dists(joint, names, specs, fits, n_resamples=n_resamples, seed=seed_value)
        )
    components = stats[names[0]].cells.names
    bins = {
        m: tuple(stats[m].cells.component_bins(c) for c in range(len(components))) for m in names
    }
    import pandas as pd

    comparison = assemble_comparison(
        config=config,
        settings=settings,
        models=names,
        n=n,
        values=values,
        dists=dists,
        notes_by=notes,
        paired=paired,
        tests=pd.DataFrame(
            columns=["model", "test", "lens", "statistic", "pvalue", "bound", "note"]
        ),
        components=components,
        edges=edges,
        bins=bins,
        mode="cells",
        truths=truths,
        own=own or None,
    )
    models_seen = found if wanted is not None else tuple(str(m) for m in got)
    source = _stream_input(runner, plan, facts, whole, models_seen)
    return StreamComparison(source, comparison, runner.passes)


def _stream_settings(config: AnalysisConfig, options: ComparisonOptions) -> ComparisonSettings:
    """Check a streamed comparison's options: no calibration test (it reads every row)."""
    if options.test is not None:
        raise ConfigError(
            f"The calibration test {options.test!r} runs on every model's rows, which a stream "
            "does not keep: run compare without a test, or with --engine memory."
        )
    return check_options(config, options)


def _check_wanted(runner: Any, plan: Plan, wanted: tuple[str, ...] | None) -> tuple[str, ...]:
    """Return the models of the stream when some were asked for, refusing an unknown one.

    The names are checked before the passes that read the models' rows.
    """
    if wanted is None:
        return ()
    _, _, seen = runner.run(plan, model_names, "names of the models")
    found = seen[MODEL_NAMES].names if seen else ()
    _refuse_missing(wanted, found, plan)
    return found


def _refuse_missing(names: Sequence[str], found: Sequence[str], plan: Plan) -> None:
    """Refuse model names the stream does not hold, naming the ones it does."""
    missing = [m for m in names if m not in found]
    if missing:
        raise DataError(
            f"No model(s) {', '.join(map(repr, missing))} in {plan.source}; models: "
            f"{', '.join(map(repr, found)) or 'none'}."
        )


def _fixed_edges(plan: Plan, config: AnalysisConfig) -> tuple[np.ndarray, ...]:
    """Return every component's edges of a binning whose edges do not depend on the data."""
    view = lens_view(
        np.full((1, len(plan.class_names)), 1.0 / len(plan.class_names)),
        np.zeros(1, dtype=np.int64),
        config.lens,
        class_names=plan.class_names,
        class_weights=config.class_weights,
    )
    e = BINNINGS.get(config.binning).func(np.zeros(1), config.n_bins, config.tie_policy)[1]
    return tuple(e for _ in view.names)


def _compared(
    got: Mapping[str, Any], wanted: tuple[str, ...] | None, plan: Plan, reference: str | None
) -> tuple[str, ...]:
    """Return the models compared, refusing fewer than two or an unknown reference."""
    names = tuple(got) if wanted is None else wanted
    _refuse_missing(names, tuple(got), plan)
    if len(names) < 2:
        raise DataError(too_few_models(len(names)))
    if reference is not None and reference not in names:
        raise ConfigError(f"Unknown reference model {reference!r}; models: {', '.join(names)}.")
    return names


def _joint_cells(
    runner: Any,
    plan: Plan,
    config: AnalysisConfig,
    edges: tuple[np.ndarray, ...],
    names: tuple[str, ...],
    scores: tuple[str, ...],
    n: int,
) -> Any:
    """Return the joint cells of paired models (None when the rows do not pair)."""
    if isinstance(runner, StreamRunner):
        return joint_pass(runner, plan, config, edges, names, scores)
    # Dask: blocks of row positions gathered from the partitions that hold them
    chunk = partial(joint_chunk, plan=plan, config=config, edges=edges, scores=scores)
    return runner.side_by_side(plan, names, n, chunk)


def _no_stream_interval_notes(
    model: str, specs: Sequence[Any], fits: Mapping[str, Any], notes: dict
) -> None:
    """Say in its note that a metric the cells cannot resample has no interval on a stream."""
    for s in specs:
        if s.kind != "score" and s.key not in fits:
            notes[model, s.key] = "; ".join(
                filter(None, [notes.get((model, s.key), ""), NO_STREAM_INTERVAL])
            )


def _model_dists(
    model: str,
    cells: Any,
    specs: Sequence[Any],
    fits: Mapping[str, Any],
    n_resamples: int,
    seed: int,
    paired: bool,
) -> dict[tuple[str, str], np.ndarray]:
    """Return a model's own resamples.

    The differences of paired models come from the joint cells; a paired model's own
    interval is drawn from its own cells as :func:`core.analyses.analysis.analyze` draws them.
    """
    if paired:
        return own_cell_dists(cells, model, specs, fits, n_resamples=n_resamples, seed=seed)
    boot = {**fits, **{s.key: s.name for s in specs if s.kind == "score"}}
    res = cell_bootstrap(cells, boot, n_resamples=n_resamples, seed=seed, est_seed=seed)
    return {(model, key): d for key, d in res.items()}


def _stream_input(
    runner: Any, plan: Plan, facts: Any, whole: Any, models: tuple[str, ...]
) -> StreamInput:
    """Return what a streamed comparison read: its parts, rows, classes, digest and lint."""
    names_k = plan.class_names
    return StreamInput(
        source=plan.source,
        parts=runner.part_names,
        n=facts.n,
        class_names=names_k,
        binary=plan.binary,
        digest=whole.digest.hexdigest(names_k, plan.binary),
        columns=plan.mapping(),
        lint=LintReport(
            tuple(plan.findings(facts) + whole.values.findings(names_k, plan.prob_columns))
        ),
        models=models,
    )


def _calls(
    specs: Sequence[Any], config: AnalysisConfig, plan: Plan
) -> tuple[dict[str, EstimatorCall], dict[str, EstimatorCall]]:
    """Return the shared-bin calls and the calls of the other estimators, as in memory."""
    opts = call_options(config, plan.class_names)
    shared, others = {}, {}
    for s in specs:
        if s.kind == "shared-bins":
            shared[s.key] = EstimatorCall.make(s.name, **{**opts, "norm": s.norm})
        elif s.kind == "estimator":
            others[s.key] = EstimatorCall.make(s.name, **estimator_options(s, config, opts))
    return shared, others


def _rows_pass(
    runner: Any,
    plan: Plan,
    config: AnalysisConfig,
    edges: tuple[np.ndarray, ...],
    names: tuple[str, ...],
    stats: Mapping[str, ModelStats],
    calls: Mapping[str, EstimatorCall],
    specs: Sequence[Any],
    n: Mapping[str, int],
) -> dict[str, RowStats]:
    """Return the label-binned distances and kernel subsamples, when a metric reads them."""
    norms = tuple(sorted({c.norm for c in calls.values() if c.info.statistics == "scores-in-bins"}))
    reads_rows = any(s.kind == "estimator" for s in specs)
    if not norms and not reads_rows:
        return {}
    wanted = {m: stream_kernel_rows(n[m], config) if reads_rows else None for m in names}
    centers = {
        m: [bin_label_means(stats[m].cells.component_bins(c)) for c in range(len(edges))]
        for m in names
    }
    func = partial(
        model_row_stats,
        config=config,
        edges=edges,
        models=names,
        centers=centers,
        norms=norms,
        wanted=wanted,
    )
    _, _, got = runner.run(plan, func, "rows for the label-binned and row estimators")
    return got


def _model_values(
    m: str,
    stats: ModelStats,
    rows: RowStats,
    config: AnalysisConfig,
    specs: Sequence[Any],
    calls: Mapping[str, EstimatorCall],
    others: Mapping[str, EstimatorCall],
    seed: int,
    values: dict[tuple[str, str], float],
    notes: dict[tuple[str, str], str],
    truths: dict[tuple[str, str], float],
) -> None:
    """Model ``m``'s point values: shared-bin metrics from its cells, the others from rows.

    With the basic interval, ``truths`` gets the pivot of each shared-bin metric that is not
    its own (:meth:`core.inference.calibration.EstimatorCall.truth_call`).
    """
    cells = stats.cells
    view = stats_view(cells, rows.deviations)
    kernel = rows.kernel_rows()
    for s in specs:
        if s.kind == "score":
            values[m, s.key] = cells.score_value(s.name)
        elif s.kind == "shared-bins":
            call = calls[s.key]
            values[m, s.key] = estimate_binned(call.info, view, call.norm, seed, call.options).value
            truth = call.truth_call() if pivots(config.bootstrap_interval) else None
            if truth is not None:  # the basic interval's pivot, from the same bins
                truths[m, s.key] = estimate_binned(
                    truth.info, view, truth.norm, seed, truth.options
                ).value
        else:
            call = others[s.key]
            if kernel is None:
                values[m, s.key] = math.nan
                notes[m, s.key] = "not on a stream with kernel_sample=0 (it would hold every row)"
                continue
            res = call.result(call.run(kernel[0], kernel[1], seed))
            values[m, s.key] = float(res.value)
            info = call.info
            if "b_star" in res.details:
                notes[m, s.key] = f"b* = {res.details['b_star']}"
            if not info.binned:
                notes[m, s.key] = "; ".join(p for p in (f"lens {call.lens}", info.quantity) if p)
            k = kernel[1].shape[0]
            if k < stats.n:
                where = f"on a seeded subsample of {k:,} of the {stats.n:,} rows"
                notes[m, s.key] = "; ".join(filter(None, [notes.get((m, s.key), ""), where]))


def compare_stream(
    source: Any,
    config: AnalysisConfig | None = None,
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    models: Sequence[str] | None = None,
    reference: str | None = None,
    n_resamples: int | None = None,
    confidence_level: float | None = None,
    seed: int | None = None,
    load: LoadOptions | None = None,
    batch_rows: int = BATCH_ROWS,
    progress: Progress | None = None,
    limits: LoadLimits | None = None,
) -> ModelComparison:
    """Compare the models of a model column in files of any size (module docstring).

    Parameters
    ----------
    source : str, path or sequence of them
        A CSV or Parquet file, a folder of them, a glob such as ``'logs/*.parquet'``, or a
        list of files, with a model column.
    config : AnalysisConfig, optional
        Lens, binning, ``n_bins``, ``tie_policy``, ``class_weights`` and the defaults of
        ``n_resamples``, ``confidence_level`` and ``seed``; ``bootstrap`` must not be
        ``"exact"`` (the intervals are the cell bootstrap's).
    metrics : sequence of str, default=DEFAULT_METRICS
        Metric keys (:func:`core.analyses.model_comparison.parse_metric`).
    models : sequence of str, optional
        The models compared, in this order (default: all, in order of first appearance).
    reference : str, optional
        Model the differences are taken against; default the best by the first metric.
    n_resamples, confidence_level, seed
        As for :func:`core.compare_models`.
    load : LoadOptions, optional
        How to read the columns.
    batch_rows : int, default=1,000,000
        Rows read at once (memory grows with it; the joint pass holds about two batches per
        model).
    progress : callable, optional
        ``progress(fraction, message)`` during each pass.
    limits : LoadLimits, optional
        Columns and gzip expansion allowed.

    Returns
    -------
    ModelComparison
        What :func:`core.compare_models` returns for ``Predictions.by_model()`` of the same
        rows with ``AnalysisConfig(bootstrap="cells")``: values equal to rounding, the same
        intervals. Metrics that read rows (the sweep, kernel estimators) run on each
        model's seeded subsample of ``config.kernel_sample`` rows (all rows below it).

    Raises
    ------
    DataError
        For unreadable files, a source without a model column, unknown models, or fewer
        than two models.
    ConfigError
        For options a stream cannot honour.

    Examples
    --------
    >>> cmp = compare_stream("logs/*.parquet", AnalysisConfig(lens="binary"))  # doctest: +SKIP
    >>> cmp.paired, cmp.table.head()  # doctest: +SKIP
    """
    config = check_config(config)
    check_stream_config(config)
    options = ComparisonOptions(metrics, reference, n_resamples, confidence_level, seed)
    with StreamRunner(
        source, load or LoadOptions(), batch_rows=batch_rows, progress=progress, limits=limits
    ) as runner:
        return run_comparison(runner, config, options, models=models).comparison


def compare_dask(
    source: Any,
    config: AnalysisConfig | None = None,
    *,
    client: Any = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    models: Sequence[str] | None = None,
    reference: str | None = None,
    n_resamples: int | None = None,
    confidence_level: float | None = None,
    seed: int | None = None,
    load: LoadOptions | None = None,
    progress: Progress | None = None,
) -> ModelComparison:
    """Compare the models of a Parquet dataset on Dask: the numbers of :func:`compare_stream`.

    Passes 1–3 of the module docstring run as one task per partition, merged by a tree
    reduction. Paired models (the same rows and labels in the same order) have their rows
    gathered by blocks of row positions for the joint cells (pass 4: a shuffle between the
    workers), so the intervals are those of :func:`compare_stream`.

    Parameters
    ----------
    source : str
        A Parquet file, folder, glob or fsspec URL.
    config : AnalysisConfig, optional
        The options (as for :func:`compare_stream`).
    client : dask.distributed.Client, optional
        The cluster to run on (default: Dask's current scheduler).
    metrics, models, reference, n_resamples, confidence_level, seed, load, progress
        As for :func:`compare_stream`.

    Returns
    -------
    ModelComparison
        The comparison.
    """
    config = check_config(config)
    check_stream_config(config)
    runner = DaskRunner(source, load or LoadOptions(), client=client, progress=progress)
    options = ComparisonOptions(metrics, reference, n_resamples, confidence_level, seed)
    return run_comparison(runner, config, options, models=models).comparison
