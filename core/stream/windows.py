"""Calibration per time window over a stream: :func:`window_analysis_stream`.

The in-memory :func:`core.analyses.subgroups.window_analysis` cuts the rows into windows (a day, a
week from Monday, or ``N`` rows), bins every row on the pooled rows' edges and measures each
window on them. Over a stream (a folder of daily Parquet files, say):

1. **Bins** as :func:`core.stream.analysis.analyze_stream` fixes them (equal-width: none;
   equal-mass: the rank search; discrete: the distinct scores), per model. Each row is then
   placed on those edges by :func:`core.stats.binning.assign_to_edges`, as the in-memory analysis
   places it, so a row's bin depends on its score alone.
2. **Statistics** (one pass). Each batch's time column gives every row its window (from the
   row's own time, so a window may span several files and a file several windows), and the
   rows of each window form cells of equal bins and outcomes
   (:func:`core.inference.cells.cells_by_group`). The cells of a window merge over batches by ``+``:
   memory is the batch plus windows × cells, not the rows.
3. **Assembly** (:func:`core.analyses.subgroups.grouped_from_cells`): each window's value and the
   pooled value from bin sums, the equal-calibration test from the cells' sums, and the
   intervals from the paired cell bootstrap over the (window, cell) pairs — the numbers of
   ``window_analysis`` with ``AnalysisConfig(bootstrap="cells")`` on the same rows, whatever
   the batching.

Windows of ``N`` rows follow the order of the rows: in memory the time column's order (a
stable sort), on a stream the file order, so with a time column the stream checks that the
rows are already in its order (a fact that merges over batches) and refuses otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from core.analyses.analysis import AnalysisConfig, check_config
from core.analyses.subgroups import (
    GroupOptions,
    WindowAnalysis,
    WindowOptions,
    check_cells_readable,
    grouped_from_cells,
    metric_call,
    metric_settings,
    time_values,
    window_days,
    window_names,
    with_breaches,
)
from core.base.errors import ConfigError
from core.base.progress import Progress
from core.data.groups import MIN_GROUP_ROWS
from core.data.limits import LoadLimits
from core.data.loader import kept_names
from core.inference.cells import cells_by_group
from core.stats.binned_view import BinnedView, ComponentBins
from core.stats.binning import BINNINGS, assign_to_edges
from core.stats.scores import SCORES
from core.stream.analysis import AnalysisPasses, check_stream_config
from core.stream.engine import StreamRunner
from core.stream.load import LoadOptions, Plan, Rows
from core.stream.sources import BATCH_ROWS
from core.stream.stats import (
    BinSpec,
    Keyed,
    Offsets,
    bins_for,
    component_scores,
    model_rows,
)

__all__ = [
    "TimeOrder",
    "WindowStats",
    "check_windows",
    "run_windows",
    "window_analysis_stream",
    "window_stats",
]


@dataclass(frozen=True)
class TimeOrder:
    """Whether a model's rows are in time order: a fact of chunks that merges by ``+``.

    Attributes
    ----------
    first, last : object
        The first and the last time of the chunk.
    first_where : str
        Where the chunk's first row is (file and row).
    broken : str or None
        Where the first row earlier than the row before it is (None: in order).
    """

    first: Any
    last: Any
    first_where: str
    broken: str | None = None

    def __add__(self, other: TimeOrder) -> TimeOrder:
        """Merge two chunks, ``other``'s rows after these."""
        broken = self.broken
        if broken is None and other.first < self.last:
            broken = other.first_where
        if broken is None:
            broken = other.broken
        return TimeOrder(self.first, other.last, self.first_where, broken)


@dataclass(frozen=True, eq=False)
class WindowStats:
    """One model's statistics per window (merge by ``+``, later rows on the right).

    Attributes
    ----------
    cells : Keyed
        Window key (days since 1970, or the window number of ``N``-row windows) → the
        :class:`core.inference.cells.CellStats` of its rows.
    order : TimeOrder or None
        For ``N``-row windows in the order of a time column: whether the rows are in it.
    """

    cells: Keyed
    order: TimeOrder | None = None

    @property
    def n(self) -> int:
        """Rows."""
        return sum(c.n for c in self.cells.values())

    def __add__(self, other: WindowStats) -> WindowStats:
        order = (
            other.order
            if self.order is None
            else self.order
            if other.order is None
            else self.order + other.order
        )
        return WindowStats(self.cells + other.cells, order)


def _window_keys(
    rows: Rows, idx: np.ndarray | None, time: str | None, every: str | int, start: int
) -> tuple[np.ndarray, TimeOrder | None]:
    """Every row's window key, and the time order of ``N``-row windows by a time column."""
    m = rows.labels.shape[0] if idx is None else idx.shape[0]
    at = np.arange(m) if idx is None else idx  # rows of the chunk, for messages
    if time is None:
        return (start + np.arange(m, dtype=np.int64)) // int(every), None
    raw = rows.extra[time]
    raw = raw if idx is None else raw[idx]
    if isinstance(every, str):
        try:
            t = time_values(raw, time)
        except ConfigError as exc:
            raise ConfigError(f"{_bad_time(rows, raw, at)}: {exc}") from None
        nat = np.isnat(t)
        if nat.any():
            i = int(np.flatnonzero(nat)[0])
            raise ConfigError(
                f"{rows.where(int(at[i]))}: {int(nat.sum()):,} rows of this batch have no time in "
                f"{time!r} (the first here); drop them first."
            )
        return window_days(t, every), None
    missing = _missing(raw)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise ConfigError(
            f"{rows.where(int(at[i]))}: a row has no value in {time!r}; windows of {every} rows "
            "in its order need one in every row. Drop such rows first."
        )
    keys = (start + np.arange(m, dtype=np.int64)) // int(every)
    if m == 0:
        return keys, None
    back = np.flatnonzero(raw[1:] < raw[:-1])
    broken = rows.where(int(at[back[0] + 1])) if back.size else None
    return keys, TimeOrder(raw[0], raw[-1], rows.where(int(at[0])), broken)


def _missing(raw: np.ndarray) -> np.ndarray:
    if raw.dtype.kind == "M":
        return np.isnat(raw)
    if raw.dtype.kind == "f":
        return np.isnan(raw)
    if raw.dtype == object:
        return raw == ""
    return np.zeros(raw.shape[0], dtype=bool)


def _bad_time(rows: Rows, raw: np.ndarray, at: np.ndarray) -> str:
    """Where the first value that is not a time is (the file, when no row is to blame)."""
    if raw.dtype != object:
        return rows.part
    import pandas as pd

    values = pd.Series(raw).replace("", None)
    parsed = pd.to_datetime(values, errors="coerce", utc=True, format="mixed")
    bad = np.flatnonzero(parsed.isna().to_numpy() & values.notna().to_numpy())
    return rows.where(int(at[bad[0]])) if bad.size else rows.part


def window_stats(
    rows: Rows,
    offsets: Offsets,
    *,
    spec: BinSpec,
    bins: dict[str | None, dict],
    time: str | None,
    every: str | int,
    class_weights: Any,
    split: bool,
    only: str | None,
) -> tuple[dict[str | None, WindowStats], dict[str | None, int], dict]:
    """Return a chunk's cells per model and window, and its rows per model.

    Every row is binned on its model's edges (:func:`core.stats.binning.assign_to_edges`) and
    given its window from its own time (or its position among the model's rows).
    """
    plan = rows.plan
    assert plan is not None
    out: dict[str | None, WindowStats] = {}
    counts: dict[str | None, int] = {}
    for name, idx in model_rows(rows, split, only):
        p = rows.probs if idx is None else rows.probs[idx]
        y = rows.labels if idx is None else rows.labels[idx]
        start = offsets.groups.get(name, 0)
        keys, order = _window_keys(rows, idx, time, every, start)
        view = component_scores(p, y, spec.lens, plan, class_weights)
        gbins = bins.setdefault(name, {})
        comps = []
        for c, (cname, s, o) in enumerate(zip(view.names, view.scores, view.outcomes, strict=True)):
            edges = bins_for(gbins, spec, (0, c)).edges
            comps.append(
                ComponentBins(
                    cname,
                    s,
                    o,
                    assign_to_edges(s, edges),
                    edges,
                    spec.binning,
                    spec.tie_policy,
                    spec.n_bins,
                )
            )
        binned = BinnedView(
            spec.lens,
            spec.binning,
            spec.n_bins,
            spec.tie_policy,
            tuple(comps),
            view.names,
            view.weights,
        )
        # every score's row sums: all rows' interval is drawn as the analysis draws it
        values = {s: SCORES.get(s).rows(p, y, binary=plan.binary) for s in SCORES.names()}
        out[name] = WindowStats(Keyed(cells_by_group(binned, keys, values)), order)
        counts[name] = int(y.shape[0])
    return out, counts, {}


class _Windows(AnalysisPasses):
    """The passes of the windows of a stream: the bins, then the cells per window."""

    def cells(self, time: str | None, every: str | int) -> tuple[Plan, dict]:
        cfg = self.config
        plan = self.runner.plan()
        if self.only is not None and "model" not in plan.roles:
            raise ConfigError(f"model {self.only!r} given but {plan.source} has no model column.")
        if time is not None:
            (time,) = kept_names(plan.layout.columns, [time])
            if time not in plan.kept:
                plan = replace(plan, kept=(*plan.kept, time))
        main = BinSpec(cfg.lens, cfg.binning, cfg.n_bins, cfg.tie_policy)
        self.specs = [main, main]
        self.bins: dict[str | None, dict] = {}
        if BINNINGS.get(cfg.binning).data_dependent:
            plan = self._fix_bins(plan)
        func = partial(
            window_stats,
            spec=main,
            bins=self.bins,
            time=time,
            every=every,
            **self._chunk_args(),
        )
        plan, _, got = self.runner.run(plan, func, "bin statistics per window")
        return plan, got


def check_windows(
    runner: Any,
    config: AnalysisConfig | None,
    windows: WindowOptions,
    options: GroupOptions | None = None,
) -> AnalysisConfig:
    """Check the options of :func:`run_windows` before any pass over the rows.

    A caller that reads the stream for something else first (``calibscope metrics
    --window``) calls it beforehand, so a bad option fails before the first pass.

    Parameters
    ----------
    runner : StreamRunner or DaskRunner
        Where the rows are read (for the class names).
    config : AnalysisConfig or None
        The analysis config.
    windows : WindowOptions
        The windows and the threshold (checked when made).
    options : GroupOptions, optional
        How the windows are measured.

    Returns
    -------
    AnalysisConfig
        The checked config.

    Raises
    ------
    ConfigError
        For an estimator or option a stream cannot honour.
    """
    config = check_config(config)
    check_stream_config(config)
    st = metric_settings(config, options or GroupOptions(), what="windows")
    check_cells_readable(metric_call(st, runner.plan().class_names), st.spec, "windows")
    return config


def run_windows(
    runner: Any,
    config: AnalysisConfig | None,
    windows: WindowOptions,
    options: GroupOptions | None = None,
    *,
    split_models: bool = True,
    model: str | None = None,
) -> dict[str | None, WindowAnalysis]:
    """Run the passes of the windows of a stream with a runner (stream or Dask).

    Parameters
    ----------
    runner : StreamRunner or DaskRunner
        Where the rows are read.
    config, windows, options
        As for :func:`check_windows`.
    split_models : bool, default=True
        One analysis per model of a model column (as ``calibscope metrics`` does).
    model : str, optional
        Only this model.

    Returns
    -------
    dict
        Model (None for all rows) → its :class:`~core.analyses.subgroups.WindowAnalysis`.
    """
    options = options or GroupOptions()
    config = check_windows(runner, config, windows, options)
    time, every = windows.time, windows.every
    job = _Windows(runner, config, split=split_models or model is not None, only=model)
    plan, got = job.cells(time, every)
    out = {}
    for name, stats in got.items():
        if stats.order is not None and stats.order.broken is not None:
            raise ConfigError(
                f"Windows of {every} rows in {time!r} order need the rows sorted by it, and a "
                f"stream reads them in file order: {stats.order.broken} is earlier than the row "
                f"before it. Sort the files by {time!r}, leave out the time column for windows "
                "of rows in file order, or use windows of a day or a week."
            )
        keys = np.array(sorted(stats.cells), dtype=np.int64)
        result = grouped_from_cells(
            [stats.cells[int(k)] for k in keys],
            window_names(keys, every, stats.n),
            ("window",),
            plan.class_names,
            config=config,
            options=options,
            run_test=keys.size >= 2,
            what="windows",
        )
        out[name] = with_breaches(result, windows)
    return out


def window_analysis_stream(
    source: Any,
    config: AnalysisConfig | None = None,
    *,
    time: str | None = None,
    every: str | int = "day",
    threshold: float | None = None,
    min_rows: int = MIN_GROUP_ROWS,
    estimator: str | None = None,
    n_resamples: int | None = None,
    confidence_level: float | None = None,
    seed: int | None = None,
    load: LoadOptions | None = None,
    model: str | None = None,
    batch_rows: int = BATCH_ROWS,
    progress: Progress | None = None,
    limits: LoadLimits | None = None,
) -> WindowAnalysis:
    """Calibration error per time window of files read in batches (see the module docstring).

    The same :class:`~core.analyses.subgroups.WindowAnalysis` as :func:`core.window_analysis` with
    ``AnalysisConfig(bootstrap="cells")`` gives on the rows loaded in memory: the same
    windows, counts, values, pooled value and test (to rounding), and the same intervals
    for the same seed (the paired cell bootstrap, which does not depend on the batching).

    Parameters
    ----------
    source : str, path or sequence of them
        A CSV or Parquet file, a folder of them, a glob such as ``'daily/*.parquet'``, or a
        list of files (:func:`core.stream.sources.resolve_parts`).
    config : AnalysisConfig, optional
        Lens, binning, bins, tie policy, class weights, estimator (one that reads bin sums:
        ``plugin``, ``debiased``, ...), resamples, level and seed; ``bootstrap`` must not be
        ``"exact"``.
    time : str, optional
        The time column; None for windows of ``every`` rows in file order.
    every : {"day", "week"} or int, default="day"
        Calendar days, weeks from Monday, or ``N`` rows. Windows of ``N`` rows by a time
        column need the rows in its order already (a stream does not sort them): otherwise
        a ``ConfigError`` names the first row out of order.
    threshold, min_rows, estimator, n_resamples, confidence_level, seed
        As for :func:`core.window_analysis`.
    load : LoadOptions, optional
        How to read the columns (the time column is added to its ``keep_columns``).
    model : str, optional
        Only the rows of this model of a model column (default: all rows, as
        :func:`core.window_analysis` of the loaded predictions).
    batch_rows, progress, limits
        As for :func:`core.analyze_stream`.

    Returns
    -------
    WindowAnalysis
        The per-window analysis and the first windows over the threshold.

    Raises
    ------
    DataError
        For unreadable files or rows, or a time column the files lack (naming the file
        and row).
    ConfigError
        For times that cannot be read or are missing (naming the file and row), options a
        stream cannot honour, and ``N``-row windows by a time column the rows are not
        sorted by.
    """
    windows = WindowOptions(time, every, threshold)
    options = GroupOptions(estimator, min_rows, n_resamples, confidence_level, seed)
    load = load or LoadOptions()
    if time is not None:
        load = replace(load, keep_columns=(*load.keep_columns, time))
    with StreamRunner(
        source, load, batch_rows=batch_rows, progress=progress, limits=limits
    ) as runner:
        got = run_windows(
            runner, config, windows, options, split_models=model is not None, model=model
        )
    if not got:
        raise ConfigError(f"No rows of model {model!r} in {runner.source}.")
    ((_, result),) = got.items()
    return result
