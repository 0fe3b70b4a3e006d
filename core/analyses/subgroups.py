"""Calibration per subgroup and per time window, on identical bins, with paired intervals.

:func:`subgroup_analysis` is what the Subgroups page, ``calibscope metrics --by`` and the
report's Subgroups section show; :func:`window_analysis` is the same analysis over time
windows (production monitoring).

- **Groups.** One or several grouping columns (:func:`core.data.groups.find_groups`: the
  ``group`` role column or any column kept at load, and their intersections). A group
  with fewer than ``min_rows`` rows is flagged ``small``: its numbers are shown but it is
  not judged (not the worst group, not in the test). A window is a group too: the rows of
  one day, one week, or ``N`` consecutive rows in time order.
- **Identical bins.** The pooled rows are binned once (the pooled data's own edges,
  :func:`core.stats.binning.shared_edges` of the pooled scores), and every group is evaluated on
  those edges by the estimator's registered batch kernel: each row keeps its bin, and the
  (group × bin) statistics of a sample are one ``bincount`` of ``g·B + bin``. With
  equal-width bins a group's value equals :func:`core.inference.calibration.calibration_error` on
  its rows; with equal-mass bins it equals :func:`core.analyses.model_comparison.compare_models`
  with one "model" per group (both pool the same scores for the edges).
- **Intervals.** Bootstrap over the *pooled* rows: a resample of the pooled
  rows holds each group's resampled rows (their number varies, as it does in new data),
  and the group's value and the pooled value are computed on the same resample. The gap
  ``CE_g − CE_pooled`` therefore gets a paired interval (from the per-resample gaps, read
  as ``config.bootstrap_interval`` says: percentile, or basic around the gap with the
  difference of the groups' pivots): a group's rows are rows of the pooled data, so the two estimates
  are dependent and independent intervals would misstate the gap's uncertainty. The
  bootstrap follows :func:`core.analyses.analysis.analyze`'s rule (``bootstrap_mode``: the cell
  bootstrap above its work threshold), and the ``(all rows)`` line's own interval is the
  analysis's (on cells: :func:`all_rows_draws`).
- **Equal calibration across groups.** A stratified χ² test of "within each bin, the
  mean residual ``y − s`` is the same in every group" (see :func:`equal_calibration_test`
  and ``docs/formulas.md``), on the judged groups. It asks whether the groups share one
  calibration curve, not whether that curve is the diagonal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from core.analyses.analysis import AnalysisConfig, bootstrap_mode, check_config
from core.analyses.model_comparison import MetricSpec, on_edges, parse_metric, shared_lens_edges
from core.base.errors import ConfigError, DataError
from core.base.numbers import format_number, format_pvalue
from core.base.tails import chi2_sf
from core.base.validation import norm_key
from core.data import as_predictions
from core.data.groups import MIN_GROUP_ROWS, column_values, find_groups
from core.estimators import ESTIMATORS
from core.estimators.base import KernelContext, NormalStream
from core.inference.bootstrap import support_of
from core.inference.calibration import EstimatorCall
from core.inference.cells import (
    analysis_draws,
    cells_by_group,
    grouped_cell_bootstrap,
    grouped_values,
    supports,
)
from core.inference.resampling import chunks
from core.stats.binned_view import BinnedView, BinnedViews, ComponentBins
from core.stats.binning import BinStats, RowBatch
from core.stats.intervals import BOOTSTRAP_INTERVALS, check_resampling, interval_bounds, pivots
from core.stats.lenses import LENSES
from core.stats.scores import SCORES

__all__ = [
    "SUBGROUP_COLUMNS",
    "WINDOW_UNITS",
    "EqualCalibrationTest",
    "GroupOptions",
    "SubgroupAnalysis",
    "WindowOptions",
    "equal_calibration_test",
    "subgroup_analysis",
    "subgroup_metrics",
    "window_analysis",
    "window_codes",
]

#: Columns of :attr:`SubgroupAnalysis.table`.
SUBGROUP_COLUMNS = [
    "group", "n", "value", "low", "high", "gap", "gap_low", "gap_high", "significant",
    "small", "note",
]  # fmt: skip
#: Window units of :func:`window_analysis` (besides a number of rows).
WINDOW_UNITS = ("day", "week")
#: A (group × bin) cell enters the equal-calibration test when its rows' scores sum to at
#: least this many expected events and as many expected non-events.
MIN_CELL_EVENTS = 5
#: Bin statistics (resamples × groups × bins) held per chunk of resamples.
_CHUNK_BINS = 2**22
#: The equal-calibration test's formula, as the page and the report state it.
TEST_FORMULA = (
    "T = Σ_b (n_b − 1) · Σ_g n_gb (r̄_gb − r̄_b)² / Σ_{i∈b} (r_i − r̄_b)²,  r = y − s,  "
    "T ~ χ²(Σ_b (G_b − 1)) under equal calibration"
)


@dataclass(frozen=True)
class GroupOptions:
    """How groups (subgroups or time windows) are measured, checked when made.

    Attributes
    ----------
    estimator : str or None
        A metric key ``"name@p"`` (or a name, with the config's norm) of an estimator that
        reads fixed bins; None for the config's estimator.
    min_rows : int
        Groups with fewer rows are flagged small: shown, not judged or tested.
    n_resamples, confidence_level, seed : optional
        The bootstrap's settings; None for the config's (0 resamples: no intervals).

    Raises
    ------
    ConfigError
        For ``min_rows`` that is not a whole number ≥ 1. What depends on the config (the
        estimator, the resampling settings it fills in) is checked with it, by
        :func:`metric_settings`.
    """

    estimator: str | None = None
    min_rows: int = MIN_GROUP_ROWS
    n_resamples: int | None = None
    confidence_level: float | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        m = self.min_rows
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
            raise ConfigError(f"min_rows must be an integer ≥ 1; got {m!r}.")


@dataclass(frozen=True)
class WindowOptions:
    """Which time windows, and the threshold they are judged against, checked when made.

    Attributes
    ----------
    time : str or None
        The time column; None for windows of ``every`` rows in file order.
    every : {"day", "week"} or int
        Calendar days, weeks from Monday, or ``N`` rows (a whole number ≥ 1).
    threshold : float or None
        The largest acceptable error: the first judged window over it is reported.

    Raises
    ------
    ConfigError
        For windows that are no unit or number of rows, a day or a week without a time
        column, or a threshold that is not a number ≥ 0.
    """

    time: str | None = None
    every: str | int = "day"
    threshold: float | None = None

    def __post_init__(self) -> None:
        every = self.every
        if isinstance(every, (int, np.integer)) and not isinstance(every, bool):
            if every < 1:
                raise ConfigError(f"A window holds at least 1 row; got {every}.")
            object.__setattr__(self, "every", int(every))
        else:
            if every not in WINDOW_UNITS:
                raise ConfigError(f"Windows are 'day', 'week' or a number of rows; got {every!r}.")
            if self.time is None:
                raise ConfigError("Windows of a day or a week need a time column (time=...).")
        check_threshold(self.threshold)
        if self.threshold is not None:
            object.__setattr__(self, "threshold", float(self.threshold))


@dataclass(frozen=True)
class EqualCalibrationTest:
    """The test of equal calibration across groups (see :func:`equal_calibration_test`).

    Attributes
    ----------
    statistic : float
        ``T`` (of the component with the smallest p-value when the lens has several).
    df : int
        Its degrees of freedom ``Σ_b (G_b − 1)``.
    pvalue : float
        ``P(χ²_df ≥ T)``; with several components, Bonferroni's ``min(1, C · min_c p_c)``.
    groups : tuple of str
        The groups tested (the judged ones).
    component_statistics, component_df, component_pvalues : tuple
        Per lens component.
    method : str
        The test's name.
    formula : str
        Its formula in one line.
    """

    statistic: float
    df: int
    pvalue: float
    groups: tuple[str, ...]
    component_statistics: tuple[float, ...]
    component_df: tuple[int, ...]
    component_pvalues: tuple[float, ...]
    method: str = "stratified χ² test of equal calibration (residuals by bin and group)"
    formula: str = TEST_FORMULA

    def to_record(self) -> dict[str, Any]:
        """Return the test as JSON-ready values."""
        return {
            "method": self.method,
            "formula": self.formula,
            "statistic": _finite(self.statistic),
            "df": self.df,
            "pvalue": _finite(self.pvalue),
            "groups": list(self.groups),
            "component_statistics": [_finite(x) for x in self.component_statistics],
            "component_df": list(self.component_df),
            "component_pvalues": [_finite(x) for x in self.component_pvalues],
        }


@dataclass(frozen=True, eq=False)
class SubgroupAnalysis:
    """Calibration per group on identical bins (see the module docstring).

    Attributes
    ----------
    config : AnalysisConfig
        Lens, binning, bins, tie policy and class weights used.
    by : tuple of str
        The grouping columns (or ``("window",)`` for time windows).
    metric : MetricSpec
        The estimator (``name@p``) every group is measured with.
    groups : tuple of str
        Group names in order (sorted values, or windows in time order).
    n : dict of str to int
        Rows per group.
    min_rows : int
        Groups with fewer rows are ``small``: shown, not judged.
    n_resamples, confidence_level, seed
        The bootstrap's settings (0 resamples: no intervals).
    table : pandas.DataFrame
        One row per group, columns :data:`SUBGROUP_COLUMNS`: ``value`` with its interval
        ``low``/``high``, ``gap`` = value − pooled value with the paired interval
        ``gap_low``/``gap_high``, ``significant`` when that interval excludes 0.
    pooled : dict
        ``n, value, low, high`` of all rows on the same bins and resamples.
    worst : str or None
        The judged group with the largest value (None when no group is judged).
    test : EqualCalibrationTest or None
        The equal-calibration test of the judged groups (None with fewer than two).
    component_names : tuple of str
        Lens components.
    edges : tuple of numpy.ndarray
        The bins' edges per component (the pooled data's).
    bins : dict of str to tuple of BinStats
        Each group's bin statistics per component; ``pooled_bins`` those of all rows.
    pooled_bins : tuple of BinStats
        The pooled rows' bin statistics.
    distributions : dict of str to numpy.ndarray
        Bootstrap values per group, and ``"(pooled)"``; index ``r`` is the same resample
        for every group (NaN where a resample holds none of the group's rows).
    notes : tuple of str
        What the numbers rest on.
    """

    config: AnalysisConfig
    by: tuple[str, ...]
    metric: MetricSpec
    groups: tuple[str, ...]
    n: dict[str, int]
    min_rows: int
    n_resamples: int
    confidence_level: float
    seed: int
    table: pd.DataFrame
    pooled: dict[str, float]
    worst: str | None
    test: EqualCalibrationTest | None
    component_names: tuple[str, ...]
    edges: tuple[np.ndarray, ...]
    bins: dict[str, tuple[BinStats, ...]]
    pooled_bins: tuple[BinStats, ...]
    distributions: dict[str, np.ndarray] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def small(self) -> tuple[str, ...]:
        """Groups with fewer than ``min_rows`` rows (too small to judge)."""
        return tuple(g for g in self.groups if self.n[g] < self.min_rows)

    @property
    def judged(self) -> tuple[str, ...]:
        """Groups with at least ``min_rows`` rows."""
        return tuple(g for g in self.groups if self.n[g] >= self.min_rows)

    def row(self, group: str) -> Any:
        """Return the table's row of ``group`` (a named tuple)."""
        part = self.table[self.table.group == group]
        if part.empty:
            raise ConfigError(f"No group {group!r}; groups: {', '.join(map(repr, self.groups))}.")
        return next(part.itertuples(index=False))

    @property
    def worst_sentence(self) -> str:
        """The worst group and its gap to the pooled model, in one sentence."""
        if self.worst is None:
            return f"No group has {self.min_rows} rows or more: none can be judged."
        r = self.row(self.worst)
        name = self.metric.label
        text = f"Worst group: {self.worst!r} with {name} = {_num(r.value)}"
        if not math.isnan(r.low):
            text += f" [{_num(r.low)}, {_num(r.high)}]"
        text += f", {_num(abs(r.gap))} {'above' if r.gap >= 0 else 'below'} all rows ({_num(self.pooled['value'])})"
        if math.isnan(r.gap_low):
            return text + "."
        level = f"{self.confidence_level:.0%}"
        verdict = "the gap is significant" if r.significant else "the gap is within noise"
        return (
            text + f"; paired {level} interval of the gap [{_num(r.gap_low)}, "
            f"{_num(r.gap_high)}]: {verdict}."
        )

    @property
    def test_sentence(self) -> str:
        """The equal-calibration test's verdict, in one sentence."""
        if self.test is None:
            return (
                "No test of equal calibration: it needs two groups or more with at least "
                f"{self.min_rows} rows, and bins in which two of them each expect at least "
                f"{MIN_CELL_EVENTS} events and {MIN_CELL_EVENTS} non-events (scores of exactly "
                "0 or 1 expect none)."
            )
        t = self.test
        return (
            f"Equal calibration across {len(t.groups)} groups: T = {_num(t.statistic)} on "
            f"{t.df} degrees of freedom, p = {format_pvalue(t.pvalue)}."
        )

    def to_frame(self, *, pooled: bool = True) -> pd.DataFrame:
        """Return the table, with a first ``(all rows)`` line when ``pooled``."""
        if not pooled:
            return self.table.copy()
        head = pd.DataFrame(
            [
                {
                    "group": "(all rows)",
                    "n": self.pooled["n"],
                    "value": self.pooled["value"],
                    "low": self.pooled["low"],
                    "high": self.pooled["high"],
                    "gap": 0.0,
                    "gap_low": math.nan,
                    "gap_high": math.nan,
                    "significant": False,
                    "small": False,
                    "note": "pooled",
                }
            ],
            columns=SUBGROUP_COLUMNS,
        )
        return pd.concat([head, self.table], ignore_index=True)

    def to_record(self) -> dict[str, Any]:
        """Return every number as a JSON-ready record (``calibscope metrics --by --json``)."""
        return {
            "by": list(self.by),
            "metric": {"key": self.metric.key, "label": self.metric.label},
            "config": self.config.to_dict(),
            "seed": self.seed,
            "n_resamples": self.n_resamples,
            "confidence_level": self.confidence_level,
            "min_rows": self.min_rows,
            "pooled": {k: _finite(v) for k, v in self.pooled.items()},
            "groups": [
                {k: _finite(v) if isinstance(v, float) else v for k, v in row.items()}
                for row in self.table.to_dict(orient="records")
            ],
            "small": list(self.small),
            "worst": self.worst,
            "worst_sentence": self.worst_sentence,
            "test": None if self.test is None else self.test.to_record(),
            "edges": [list(map(float, e)) for e in self.edges],
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------- engine


class _GroupBatch:
    """The (group × bin) statistics of ``R`` samples read as ``R·G`` samples of ``B`` bins.

    Rows are binned into ``g·B + bin`` (one :class:`~core.stats.binning.RowBatch` of ``G·B``
    bins), so a registered kernel sees each group of each sample as one sample of its own.
    """

    def __init__(self, inner: RowBatch, n_groups: int, n_bins: int) -> None:
        self.inner, self.g, self.b = inner, n_groups, n_bins

    def _split(self, x: np.ndarray) -> np.ndarray:
        return x.reshape(-1, self.b)

    @property
    def counts(self) -> np.ndarray:
        return self._split(self.inner.counts)

    @property
    def score_sums(self) -> np.ndarray:
        return self._split(self.inner.score_sums)

    @property
    def label_sums(self) -> np.ndarray:
        return self._split(self.inner.label_sums)

    def score_deviation(self, center: np.ndarray, norm: float) -> np.ndarray:
        flat = np.asarray(center, dtype=np.float64).reshape(-1, self.g * self.b)
        return self._split(self.inner.score_deviation(flat, norm))


def _values(
    rows: np.ndarray,
    comps: Sequence[ComponentBins],
    codes: np.ndarray,
    n_groups: int,
    weights: np.ndarray,
    call: EstimatorCall,
    streams: tuple[NormalStream, NormalStream],
) -> tuple[np.ndarray, np.ndarray]:
    """``(R, G)`` group values and ``(R,)`` pooled values of the resamples ``rows`` ``(R, n)``."""
    r = rows.shape[0]
    per_g = np.empty((r * n_groups, len(comps)))
    per_p = np.empty((r, len(comps)))
    ctx_g = KernelContext(call.options, streams[0], np.zeros(r * n_groups, dtype=np.int64))
    ctx_p = KernelContext(call.options, streams[1], np.zeros(r, dtype=np.int64))
    g_rows = np.take(codes, rows)
    kernel = call.info.kernel
    for c, comp in enumerate(comps):
        b = comp.n_bins
        idx = np.take(comp.index, rows)
        s = np.take(comp.scores, rows)
        o = np.take(comp.outcomes.astype(np.intp), rows)
        grouped = _GroupBatch(RowBatch(g_rows * b + idx, s, o, n_groups * b), n_groups, b)
        with np.errstate(invalid="ignore", divide="ignore"):
            out_p = kernel(RowBatch(idx, s, o, b), call.norm, ctx_p)  # type: ignore[misc]
            out_g = kernel(grouped, call.norm, ctx_g)  # type: ignore[misc]
        per_p[:, c] = out_p[0] if isinstance(out_p, tuple) else out_p
        per_g[:, c] = out_g[0] if isinstance(out_g, tuple) else out_g
    with np.errstate(invalid="ignore", divide="ignore"):
        groups = call.info.combine(per_g, weights, call.norm).reshape(r, n_groups)
        pooled = call.info.combine(per_p, weights, call.norm)
    # a group with no row in a sample has no value there (not 0)
    present = np.zeros((r, n_groups), dtype=bool)
    present[np.repeat(np.arange(r), rows.shape[1]), g_rows.ravel()] = True
    return np.where(present, groups, np.nan), pooled


def equal_calibration_test(
    comps: Sequence[ComponentBins],
    codes: np.ndarray,
    tested: Sequence[int],
    names: Sequence[str],
) -> EqualCalibrationTest | None:
    """Test equal calibration across groups (a stratified χ² test).

    For each lens component, rows carry a residual ``r = y − s`` (outcome minus score) and
    a bin ``b``. In bin ``b`` with ``n_b`` rows of ``G_b`` tested groups (``n_gb`` rows,
    mean residual ``r̄_gb``; ``r̄_b`` over the bin)::

        T_b = (n_b − 1) · Σ_g n_gb (r̄_gb − r̄_b)² / Σ_{i∈b} (r_i − r̄_b)²

    — the between-group share of the bin's residual variation, scaled as in the
    Kruskal–Wallis statistic (on residuals, not ranks). Under the hypothesis that within a
    bin the residuals are exchangeable across groups (every group has the same mean
    residual there: the groups share one calibration curve), ``E[T_b] = G_b − 1`` exactly
    and ``T = Σ_b T_b`` is asymptotically χ² with ``Σ_b (G_b − 1)`` degrees of freedom.
    Bins with fewer than two rows, one group, or no residual variation add nothing. With
    several components (classwise lens) the p-value is Bonferroni's ``min(1, C·min_c p_c)``.

    The statistic is computed from per (group, bin, outcome) sums — rows, scores, squared
    scores — (:func:`equal_calibration_from_sums`), which is how a stream computes it too.

    Parameters
    ----------
    comps : sequence of ComponentBins
        The binned lens components of the pooled rows.
    codes : numpy.ndarray
        ``(n,)`` group of every row.
    tested : sequence of int
        The groups tested (codes); rows of other groups are left out.
    names : sequence of str
        Group names by code.

    Returns
    -------
    EqualCalibrationTest or None
        None with fewer than two tested groups or no degree of freedom.
    """
    n_groups = int(codes.max()) + 1 if codes.size else 0
    sums = []
    for comp in comps:
        b = comp.n_bins
        size = n_groups * b * 2
        cell = (codes * b + comp.index) * 2 + comp.outcomes.astype(np.intp)
        s = comp.scores
        sums.append(
            tuple(
                np.bincount(cell, weights=w, minlength=size).reshape(n_groups, b, 2)
                for w in (None, s, s * s)
            )
        )
    return equal_calibration_from_sums(sums, tested, names)


def equal_calibration_from_sums(
    sums: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
    tested: Sequence[int],
    names: Sequence[str],
) -> EqualCalibrationTest | None:
    """Test equal calibration (:func:`equal_calibration_test`) from per-cell sums.

    Parameters
    ----------
    sums : sequence of (counts, score_sums, score_squares)
        Per lens component, three ``(G, B, 2)`` arrays: rows, sums of scores and of squared
        scores of the rows of group ``g`` in bin ``b`` with outcome 0 or 1.
    tested, names
        As for :func:`equal_calibration_test`.

    Returns
    -------
    EqualCalibrationTest or None
        None with fewer than two tested groups or no degree of freedom.

    Notes
    -----
    Within a (group, bin, outcome) cell the residual is ``o − s``, so with ``a = o − r̄_b``
    the spread ``Σ (r − r̄_b)² = c·a² − 2a·Σs + Σs²`` of the cell's ``c`` rows comes from
    its sums without a second pass over the rows.
    """
    tested = np.asarray(sorted(tested), dtype=np.int64)
    if tested.size < 2:
        return None
    outcome = np.array([0.0, 1.0])
    stats_, dfs, ps = [], [], []
    for counts, scores, squares in sums:
        chosen = np.zeros(counts.shape[0], dtype=bool)
        chosen[tested] = True
        # cells too small for the χ² approximation are left out, judged by the scores alone
        # (so the choice does not depend on the outcomes): a cell enters when it expects at
        # least MIN_CELL_EVENTS events and as many non-events
        cnt_all = counts.sum(axis=2)
        big = np.minimum(scores.sum(axis=2), cnt_all - scores.sum(axis=2)) >= MIN_CELL_EVENTS
        keep = (chosen[:, None] & big)[:, :, None]
        c = np.where(keep, counts, 0.0)
        s = np.where(keep, scores, 0.0)
        q = np.where(keep, squares, 0.0)
        n_gb = c.sum(axis=2)
        r_gb = (c * outcome - s).sum(axis=2)
        n_b = n_gb.sum(axis=0)
        mean_b = np.divide(r_gb.sum(axis=0), n_b, out=np.zeros(n_b.shape), where=n_b > 0)
        a = outcome[None, None, :] - mean_b[None, :, None]
        # the spread around each bin's mean, from each cell's centred sums
        sst = (c * a * a - 2.0 * a * s + q).sum(axis=(0, 2))
        dev_gb = r_gb - n_gb * mean_b
        with np.errstate(invalid="ignore", divide="ignore"):
            ssb = np.where(n_gb > 0, dev_gb**2 / np.where(n_gb > 0, n_gb, 1.0), 0.0).sum(axis=0)
        g_b = (n_gb > 0).sum(axis=0)
        ok = (n_b >= 2) & (g_b >= 2) & (sst > 1e-12 * np.maximum(n_b, 1))
        t = float(np.sum((n_b[ok] - 1.0) * ssb[ok] / sst[ok]))
        df = int(np.sum(g_b[ok] - 1))
        stats_.append(t)
        dfs.append(df)
        ps.append(float(chi2_sf(t, df)))  # nan without degrees of freedom
    finite = [p for p in ps if not math.isnan(p)]
    if not finite:
        return None
    best = int(np.nanargmin(ps))
    pvalue = min(1.0, len(finite) * min(finite))
    return EqualCalibrationTest(
        statistic=stats_[best],
        df=dfs[best],
        pvalue=pvalue,
        groups=tuple(names[i] for i in tested),
        component_statistics=tuple(stats_),
        component_df=tuple(dfs),
        component_pvalues=tuple(ps),
    )


@dataclass(frozen=True)
class GroupSettings:
    """The settings of a grouped analysis, checked against its config (:func:`metric_settings`)."""

    config: AnalysisConfig
    spec: MetricSpec
    n_resamples: int
    confidence_level: float
    seed: int
    min_rows: int


def metric_settings(
    config: AnalysisConfig | None, options: GroupOptions, *, what: str
) -> GroupSettings:
    """Check the options of a grouped analysis against its config and fill in the config's.

    Parameters
    ----------
    config : AnalysisConfig or None
        The analysis config (None: the defaults).
    options : GroupOptions
        The groups' options.
    what : str
        The groups' word in messages ("groups", "windows").

    Returns
    -------
    GroupSettings
        The config, the metric, and the resampling settings and ``min_rows`` to use.

    Raises
    ------
    ConfigError
        For a lens without bins, an estimator that does not read fixed bins, or bad
        resampling settings.
    """
    config = check_config(config)
    n_resamples, confidence_level, seed = (
        options.n_resamples,
        options.confidence_level,
        options.seed,
    )
    if LENSES.get(config.lens).kernel_only:
        raise ConfigError(
            f"{what.capitalize()} are measured on identical bins; the {config.lens!r} lens has "
            "none. Use the binary, top-label or classwise lens."
        )
    n_resamples, confidence_level, seed_value = check_resampling(
        config.n_resamples if n_resamples is None else n_resamples,
        config.confidence_level if confidence_level is None else confidence_level,
        config.seed if seed is None else seed,
    )
    spec = parse_metric(options.estimator or config.estimator, default_norm=config.norm)
    if spec.kind != "shared-bins":
        usable = ", ".join(ESTIMATORS.names(from_bins=True))
        raise ConfigError(
            f"{what.capitalize()} are measured on identical bins, and {spec.label} does not "
            f"read fixed bins (it chooses its own, or has none); use one of {usable}."
        )
    return GroupSettings(
        config,
        spec,
        int(n_resamples),
        float(confidence_level),
        int(seed_value),
        int(options.min_rows),
    )


def metric_call(settings: GroupSettings, class_names: Sequence[str]) -> EstimatorCall:
    """Return the estimator call of a grouped analysis's metric on its config's bins."""
    config = settings.config
    return EstimatorCall.make(
        settings.spec.name,
        lens=config.lens,
        binning=config.binning,
        n_bins=config.n_bins,
        tie_policy=config.tie_policy,
        class_weights=config.class_weights,
        class_names=class_names,
        norm=settings.spec.norm,
    )


def check_cells_readable(call: EstimatorCall, spec: MetricSpec, what: str) -> None:
    """Refuse an estimator the cell bootstrap cannot read (it needs the rows)."""
    if not supports(call.info, call.norm):
        usable = ", ".join(
            f"{info.name}@{norm_key(p)}"
            for info in ESTIMATORS
            if info.from_bins
            for p in info.norms or ()
            if supports(info, p)
        )
        raise ConfigError(
            f"{what.capitalize()} from cells (bootstrap='cells', or a stream) are measured by "
            f"estimators that read bin sums, and {spec.label} reads the rows; use one of "
            f"{usable}."
        )


def _row_draws(
    comps: Any,
    codes: np.ndarray,
    n_groups: int,
    weights: np.ndarray,
    call: Any,
    n_resamples: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Return every group's and all rows' values on each row resample (the exact bootstrap)."""
    n = codes.shape[0]
    streams = (NormalStream(seed), NormalStream(seed))
    b_max = max(comp.n_bins for comp in comps)
    chunk = max(1, min(2**20 // n, _CHUNK_BINS // (b_max * n_groups)))
    dist_g = np.empty((n_resamples, n_groups))
    dist_p = np.empty(n_resamples)
    done = 0
    for rows in chunks(np.random.default_rng(seed), n, n_resamples, chunk):
        g, p = _values(rows, comps, codes, n_groups, weights, call, streams)
        dist_g[done : done + rows.shape[0]] = g
        dist_p[done : done + rows.shape[0]] = p
        done += rows.shape[0]
    return dist_g, dist_p


def _grouped_analysis(
    pred: Any,
    config: AnalysisConfig | None,
    codes: np.ndarray,
    names: tuple[str, ...],
    by: tuple[str, ...],
    options: GroupOptions,
    *,
    run_test: bool,
    what: str,
) -> SubgroupAnalysis:
    st = metric_settings(config, options, what=what)
    config, seed_value, n_resamples = st.config, st.seed, st.n_resamples
    n_groups = len(names)
    views = BinnedViews(pred.probs, pred.labels, pred.class_names, config.class_weights)
    lv = views.lens(config.lens)
    weights = np.asarray(lv.weights, dtype=np.float64)
    comps = on_edges(lv, shared_lens_edges([lv], config), config)
    call = metric_call(st, pred.class_names)
    # the bootstrap of analyze's rule ("auto": cells above EXACT_BOOTSTRAP_WORK), so all rows
    # get the Reliability page's interval; an estimator the cells cannot read stays exact
    mode = bootstrap_mode(replace(config, n_resamples=n_resamples), pred.n, len(lv.names))
    cells = mode == "cells" and (config.bootstrap == "cells" or supports(call.info, call.norm))
    if cells:
        check_cells_readable(call, st.spec, what)
    n = pred.n
    counts = np.bincount(codes, minlength=n_groups)
    full_g, full_p = _values(
        np.arange(n, dtype=np.intp)[None, :], comps, codes, n_groups, weights, call,
        (NormalStream(seed_value), NormalStream(seed_value)),
    )  # fmt: skip
    values, pooled_value = full_g[0], float(full_p[0])
    truths = None
    truth = call.truth_call() if pivots(config.bootstrap_interval) else None
    if truth is not None:
        t_g, t_p = _values(
            np.arange(n, dtype=np.intp)[None, :], comps, codes, n_groups, weights, truth,
            (NormalStream(seed_value), NormalStream(seed_value)),
        )  # fmt: skip
        truths = (t_g[0], float(t_p[0]))
    dist_g = dist_p = all_rows = None
    if n_resamples and cells:
        view = BinnedView(
            config.lens, config.binning, config.n_bins, config.tie_policy, tuple(comps),
            lv.names, lv.weights,
        )  # fmt: skip
        rows = {
            s: SCORES.get(s).rows(pred.probs, pred.labels, binary=pred.binary)
            for s in SCORES.names()
        }
        by_group = cells_by_group(view, codes, rows)
        group_cells = [by_group[g] for g in range(n_groups)]
        dist_g, dist_p = grouped_cell_bootstrap(
            group_cells, call, n_resamples=n_resamples, seed=seed_value
        )
        all_rows = all_rows_draws(group_cells, call, n_resamples, seed_value)
    elif n_resamples:
        dist_g, dist_p = _row_draws(comps, codes, n_groups, weights, call, n_resamples, seed_value)
    judged = [g for g in range(n_groups) if counts[g] >= st.min_rows]
    test = equal_calibration_test(comps, codes, judged, names) if run_test else None
    # every group's bin statistics at once: one bincount of g·B + bin per component
    per_comp = [_group_stats(comp, codes, n_groups) for comp in comps]
    return _assemble(
        st,
        by,
        names,
        counts,
        values,
        pooled_value,
        dist_g,
        dist_p,
        test,
        component_names=tuple(lv.names),
        edges=tuple(comp.edges for comp in comps),
        bins={name: tuple(stats[g] for stats in per_comp) for g, name in enumerate(names)},
        pooled_bins=tuple(comp.stats for comp in comps),
        what=what,
        cells=cells,
        truths=truths,
        all_rows=all_rows,
    )


def grouped_from_cells(
    groups: Sequence[Any],
    names: tuple[str, ...],
    by: tuple[str, ...],
    class_names: Sequence[str],
    *,
    config: AnalysisConfig | None,
    options: GroupOptions | None = None,
    run_test: bool = True,
    what: str = "groups",
) -> SubgroupAnalysis:
    """Analyse groups as :func:`subgroup_analysis` does, from each group's cells.

    Values come from the groups' bin sums (:func:`core.inference.cells.grouped_values`), intervals
    from :func:`core.inference.cells.grouped_cell_bootstrap` and the test from the cells' sums
    (:func:`equal_calibration_from_sums`): what ``bootstrap="cells"`` gives in memory.

    Parameters
    ----------
    groups : sequence of core.inference.cells.CellStats
        Each group's cells on the pooled rows' edges, in the order of ``names``.
    names : tuple of str
        Group names.
    by : tuple of str
        The grouping columns (``("window",)`` for windows).
    class_names : sequence of str
        Class names.
    config : AnalysisConfig or None
        As for :func:`subgroup_analysis`.
    options : GroupOptions, optional
        The groups' options (default ``GroupOptions()``: the config's settings).
    run_test : bool, default=True
        Whether to test equal calibration.
    what : str, default="groups"
        The groups' word in messages and notes ("windows").

    Returns
    -------
    SubgroupAnalysis
        As :func:`subgroup_analysis` returns it.
    """
    st = metric_settings(config, options or GroupOptions(), what=what)
    call = metric_call(st, class_names)
    check_cells_readable(call, st.spec, what)
    groups = list(groups)
    n_groups = len(groups)
    counts = np.array([g.n for g in groups], dtype=np.int64)
    values, pooled_value = grouped_values(groups, call, st.seed)
    truths = None
    truth = call.truth_call() if pivots(st.config.bootstrap_interval) else None
    if truth is not None:
        truths = grouped_values(groups, truth, st.seed)
    dist_g = dist_p = all_rows = None
    if st.n_resamples:
        dist_g, dist_p = grouped_cell_bootstrap(
            groups, call, n_resamples=st.n_resamples, seed=st.seed
        )
        all_rows = all_rows_draws(groups, call, st.n_resamples, st.seed)
    first = groups[0]
    n_comp = len(first.names)
    bins = {
        name: tuple(groups[g].component_bins(c) for c in range(n_comp))
        for g, name in enumerate(names)
    }
    pooled_bins = tuple(
        BinStats(
            first.edges[c],
            sum(bins[name][c].counts for name in names),
            sum(bins[name][c].score_sums for name in names),
            sum(bins[name][c].label_sums for name in names),
            first.binning,
        )
        for c in range(n_comp)
    )
    test = None
    if run_test:
        judged = [g for g in range(n_groups) if counts[g] >= st.min_rows]
        test = equal_calibration_from_sums(
            [_cell_sums(groups, c) for c in range(n_comp)], judged, names
        )
    return _assemble(
        st,
        by,
        names,
        counts,
        values,
        pooled_value,
        dist_g,
        dist_p,
        test,
        component_names=tuple(first.names),
        edges=tuple(first.edges),
        bins=bins,
        pooled_bins=pooled_bins,
        what=what,
        cells=True,
        truths=truths,
        all_rows=all_rows,
    )


def all_rows_draws(groups: Sequence[Any], call: Any, n_resamples: int, seed: int) -> np.ndarray:
    """All rows' resamples of ``call`` from the groups' cells, as the analysis draws them.

    The groups' cells (with every score's row sums) merge into the cells of all rows, which
    :func:`core.inference.cells.analysis_draws` resamples as :func:`core.analyses.analysis.analyze` does.
    """
    return analysis_draws(sum(groups), {"value": call}, n_resamples=n_resamples, seed=seed)["value"]


def _cell_sums(groups: Sequence[Any], c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Component ``c``'s (group, bin, outcome) rows, score sums and squared-score sums."""
    b = groups[0].edges[c].shape[0] - 1
    out = np.zeros((3, len(groups), b, 2))
    for g, cells in enumerate(groups):
        at = cells.bins[:, c] * 2 + cells.outcomes[:, c]
        for j, w in enumerate((cells.counts, cells.score_sums[:, c], cells.score_squares[:, c])):
            out[j, g] = np.bincount(at, weights=w, minlength=2 * b).reshape(b, 2)
    return out[0], out[1], out[2]


def _assemble(
    st: GroupSettings,
    by: tuple[str, ...],
    names: tuple[str, ...],
    counts: np.ndarray,
    values: np.ndarray,
    pooled_value: float,
    dist_g: np.ndarray | None,
    dist_p: np.ndarray | None,
    test: EqualCalibrationTest | None,
    *,
    component_names: tuple[str, ...],
    edges: tuple[np.ndarray, ...],
    bins: dict[str, tuple[BinStats, ...]],
    pooled_bins: tuple[BinStats, ...],
    what: str,
    cells: bool,
    truths: tuple[np.ndarray, float] | None = None,
    all_rows: np.ndarray | None = None,
) -> SubgroupAnalysis:
    """Return the analysis: table, worst group and notes from the values and resamples.

    ``truths`` are the groups' and the pooled rows' pivots of the basic interval
    (``config.bootstrap_interval``; None: the values themselves). ``all_rows``, on cells, are
    all rows' resamples drawn as the analysis draws them (:func:`all_rows_draws`): the
    ``(all rows)`` interval is then the Reliability page's, while the gaps pair each group
    with ``dist_p``, the pooled value of the same draws as the groups'.
    """
    config, spec, min_rows = st.config, st.spec, st.min_rows
    n_groups = len(names)
    method = config.bootstrap_interval
    truth_g, truth_p = (values, pooled_value) if truths is None else truths

    # a group's basic interval is cut to the metric's range; a gap has none
    support = support_of(spec.name)

    def interval(
        d: np.ndarray | None, value: float, truth: float, cut: bool = True
    ) -> tuple[float, float]:
        return interval_bounds(
            d,
            st.confidence_level,
            method,
            value,
            truth,
            skip_nan=True,
            support=support if cut else None,
        )

    p_low, p_high = interval(dist_p if all_rows is None else all_rows, pooled_value, truth_p)
    rows_out = []
    for g, name in enumerate(names):
        low, high = interval(None if dist_g is None else dist_g[:, g], values[g], truth_g[g])
        gap = float(values[g] - pooled_value)
        g_low, g_high = interval(
            None if dist_g is None else dist_g[:, g] - dist_p,
            gap,
            truth_g[g] - truth_p,
            cut=False,
        )
        small = bool(counts[g] < min_rows)
        notes = []
        if small:
            notes.append(f"fewer than {min_rows} rows: too small to judge")
        if dist_g is not None and np.isnan(dist_g[:, g]).any():
            share = float(np.isnan(dist_g[:, g]).mean())
            notes.append(f"absent from {share:.1%} of resamples")
        rows_out.append(
            {
                "group": name,
                "n": int(counts[g]),
                "value": float(values[g]),
                "low": low,
                "high": high,
                "gap": gap,
                "gap_low": g_low,
                "gap_high": g_high,
                "significant": bool(g_low > 0 or g_high < 0),
                "small": small,
                "note": "; ".join(notes),
            }
        )
    table = pd.DataFrame(rows_out, columns=SUBGROUP_COLUMNS)
    judged = [g for g in range(n_groups) if counts[g] >= min_rows]
    worst = names[max(judged, key=lambda g: values[g])] if judged else None
    if not st.n_resamples:
        how = "No bootstrap (0 resamples): no intervals."
    elif cells:
        how = (
            "Intervals: cell bootstrap (multinomial draws over the (group, bin, outcome) cells "
            "of the pooled rows, a normal term for the score sums); every group and the pooled "
            "value are computed on the same draws, so the gap to all rows has a paired interval."
        )
    else:
        how = (
            "Intervals: bootstrap over the pooled rows; every group and the pooled value are "
            "computed on the same resample, so the gap to all rows has a paired interval."
        )
    if st.n_resamples:
        kind = BOOTSTRAP_INTERVALS.get(method).description
        how += f" {kind[0].upper()}{kind[1:]}."
    notes = [
        f"Identical bins: {config.n_bins} {config.binning} bins of the pooled rows' scores; "
        f"every {what[:-1]} is measured on them by {spec.label}.",
        how,
    ]
    small_names = [names[g] for g in range(n_groups) if counts[g] < min_rows]
    if small_names:
        shown = ", ".join(repr(s) for s in small_names[:10]) + (
            " ..." if len(small_names) > 10 else ""
        )
        notes.append(
            f"Too small to judge: {len(small_names)} {what} with fewer than {min_rows} rows "
            f"({shown}); they are shown but neither ranked nor tested."
        )
    return SubgroupAnalysis(
        config=config,
        by=by,
        metric=spec,
        groups=names,
        n={name: int(counts[g]) for g, name in enumerate(names)},
        min_rows=int(min_rows),
        n_resamples=int(st.n_resamples),
        confidence_level=float(st.confidence_level),
        seed=int(st.seed),
        table=table,
        pooled={"n": int(counts.sum()), "value": pooled_value, "low": p_low, "high": p_high},
        worst=worst,
        test=test,
        component_names=component_names,
        edges=edges,
        bins=bins,
        pooled_bins=pooled_bins,
        distributions={}
        if dist_g is None
        else {**{name: dist_g[:, g] for g, name in enumerate(names)}, "(pooled)": dist_p},
        notes=tuple(notes),
    )


def _group_stats(comp: ComponentBins, codes: np.ndarray, n_groups: int) -> list[BinStats]:
    """Each group's :class:`BinStats` of one component on its fixed bins."""
    b = comp.n_bins
    cell = codes * b + comp.index
    size = n_groups * b
    counts = np.bincount(cell, minlength=size).reshape(n_groups, b).astype(np.int64)
    scores = np.bincount(cell, weights=comp.scores, minlength=size).reshape(n_groups, b)
    labels = np.bincount(cell, weights=comp.outcomes.astype(np.float64), minlength=size).reshape(
        n_groups, b
    )
    return [
        BinStats(
            edges=comp.edges,
            counts=counts[g],
            score_sums=scores[g],
            label_sums=labels[g],
            scheme=comp.binning,
        )
        for g in range(n_groups)
    ]


# --------------------------------------------------------------------------- public


def subgroup_analysis(
    data: Any,
    config: AnalysisConfig | None = None,
    *,
    by: Sequence[str] | str = ("group",),
    min_rows: int = MIN_GROUP_ROWS,
    estimator: str | None = None,
    n_resamples: int | None = None,
    confidence_level: float | None = None,
    seed: int | None = None,
) -> SubgroupAnalysis:
    """Calibration per subgroup on identical bins, with paired gaps and a test of equality.

    Parameters
    ----------
    data : Predictions
        The predictions with their grouping columns (the ``group`` role column, or columns
        kept at load: ``load_predictions(..., keep_columns=[...])``).
    config : AnalysisConfig, optional
        Lens, binning, bins, tie policy, class weights, and the defaults of the estimator
        (``config.estimator`` with ``config.norm``), resamples, level and seed.
    by : str or sequence of str, default=("group",)
        Grouping columns; several make their intersections the groups.
    min_rows : int, default=MIN_GROUP_ROWS
        Groups with fewer rows are flagged small: shown, not judged or tested.
    estimator : str, optional
        A metric key ``"name@p"`` (or a name, with ``config.norm``) of an estimator that
        reads fixed bins (default ``config.estimator``).
    n_resamples, confidence_level, seed : optional
        The bootstrap's settings (default: the config's; 0 resamples turns intervals off).

    Returns
    -------
    SubgroupAnalysis
        The table, the pooled value, the worst group, the test and the bins.

    Raises
    ------
    ConfigError
        For an unknown grouping column, an estimator without fixed bins, a lens without
        bins or bad settings.
    DataError
        When the rows form fewer than two groups.

    Examples
    --------
    >>> import pandas as pd
    >>> from core.data import load_predictions
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=600); y = (rng.uniform(size=600) < p).astype(int)
    >>> df = pd.DataFrame({"p": p, "y": y, "group": np.repeat(["a", "b"], 300)})
    >>> res = subgroup_analysis(load_predictions(df), n_resamples=50)
    >>> res.groups, res.test.df > 0
    (('a', 'b'), True)
    """
    pred = as_predictions(data)
    groups = find_groups(pred, by)
    if len(groups) < 2:
        raise DataError(
            f"The rows form {len(groups)} group by {', '.join(map(repr, groups.by))}; "
            "calibration per subgroup needs two or more. Pick another column."
        )
    options = GroupOptions(estimator, min_rows, n_resamples, confidence_level, seed)
    return _grouped_analysis(
        pred, config, groups.codes, groups.names, groups.by, options, run_test=True, what="groups"
    )


def subgroup_metrics(result: SubgroupAnalysis) -> pd.DataFrame:
    """Return the table with the pooled line, as the page, the CLI and the report show it."""
    return result.to_frame(pooled=True)


# --------------------------------------------------------------------------- time windows


def time_values(values: np.ndarray, column: str) -> np.ndarray:
    """Return a time column as ``datetime64[ns]`` (strings parsed; NaT where missing)."""
    if values.dtype.kind == "M":
        return values.astype("datetime64[ns]")
    if values.dtype == object:
        try:
            parsed = pd.to_datetime(
                pd.Series(values).replace("", None), errors="raise", utc=True, format="mixed"
            )
        except (ValueError, TypeError) as exc:
            raise ConfigError(
                f"The column {column!r} is not a time column ({exc}); windows of a day or a "
                "week need dates or timestamps. Use windows of N rows instead."
            ) from None
        return parsed.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")
    raise ConfigError(
        f"The column {column!r} holds numbers, not times; windows of a day or a week need "
        "dates or timestamps (windows of N rows order the rows by it)."
    )


def window_codes(
    pred: Any, *, time: str | None, every: str | int
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Cut the rows into time windows: a code per row and a name per window, in time order.

    Parameters
    ----------
    pred : Predictions
        The predictions, with the time column kept at load.
    time : str or None
        The time column (a kept column); None with ``every`` a number of rows: file order.
    every : {"day", "week"} or int
        Calendar days, weeks starting on Monday, or ``N`` consecutive rows in time order.

    Returns
    -------
    codes : numpy.ndarray
        ``(n,)`` window of every row.
    names : tuple of str
        ``YYYY-MM-DD`` (the day, or the Monday of the week) or ``rows a–b`` (1-based).
    """
    every = WindowOptions(time, every).every  # the windows' one check
    raw = None if time is None else np.asarray(column_values(pred, time))
    if isinstance(every, int):
        n = pred.n
        order = np.arange(n) if raw is None else np.argsort(raw, kind="stable")
        codes = np.empty(n, dtype=np.int64)
        codes[order] = np.arange(n) // int(every)
        k = int(codes.max()) + 1
        return codes, window_names(np.arange(k), every, n)
    t = time_values(raw, time)  # type: ignore[arg-type]
    if np.isnat(t).any():
        raise ConfigError(
            f"{int(np.isnat(t).sum()):,} rows have no time in {time!r}; drop them first."
        )
    starts, codes = np.unique(window_days(t, every), return_inverse=True)
    return codes.ravel().astype(np.int64), window_names(starts, every, pred.n)


def window_days(times: np.ndarray, every: str) -> np.ndarray:
    """Return the window of every time: its day, or the Monday of its week (days since 1970)."""
    days = times.astype("datetime64[D]").astype(np.int64)
    if every == "week":
        days = days - (days + 3) % 7  # 1970-01-01 was a Thursday: back to Monday
    return days


def window_names(keys: np.ndarray, every: str | int, n: int) -> tuple[str, ...]:
    """Name windows by their keys: ``YYYY-MM-DD`` (a day, a week's Monday) or ``rows a–b``.

    Parameters
    ----------
    keys : numpy.ndarray
        Days since 1970 (``every`` a unit) or window numbers from 0 (``every`` rows each).
    every : {"day", "week"} or int
        The windows.
    n : int
        Rows in all (the last window of ``every`` rows ends there).

    Returns
    -------
    tuple of str
        One name per key.
    """
    if isinstance(every, str):
        return tuple(str(np.datetime64(int(d), "D")) for d in keys)
    return tuple(f"rows {int(i) * every + 1}–{min(n, (int(i) + 1) * every)}" for i in keys)


def window_analysis(
    data: Any,
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
) -> WindowAnalysis:
    """Calibration error per time window, with intervals and the first window over a threshold.

    The windows are groups of :func:`subgroup_analysis` (identical bins of all rows, paired
    bootstrap of the pooled rows), in time order.

    Parameters
    ----------
    data : Predictions
        The predictions with the time column kept at load.
    config : AnalysisConfig, optional
        As for :func:`subgroup_analysis`.
    time : str, optional
        The time column; None for windows of ``every`` rows in file order.
    every : {"day", "week"} or int, default="day"
        The windows (see :func:`window_codes`).
    threshold : float, optional
        The largest acceptable error: the first judged window whose value exceeds it is
        reported (and the first whose interval lies wholly above it).
    min_rows, estimator, n_resamples, confidence_level, seed
        As for :func:`subgroup_analysis`.

    Returns
    -------
    WindowAnalysis
        The per-window analysis and the first breaking windows.
    """
    windows = WindowOptions(time, every, threshold)
    options = GroupOptions(estimator, min_rows, n_resamples, confidence_level, seed)
    pred = as_predictions(data)
    codes, names = window_codes(pred, time=windows.time, every=windows.every)
    result = _grouped_analysis(
        pred, config, codes, names, ("window",), options, run_test=len(names) >= 2, what="windows"
    )
    return with_breaches(result, windows)


def check_threshold(threshold: Any) -> None:
    """Refuse a threshold that is not a number ≥ 0 (None: no threshold)."""
    if threshold is not None and not (
        isinstance(threshold, (int, float))
        and not isinstance(threshold, bool)
        and math.isfinite(threshold)
        and threshold >= 0
    ):
        raise ConfigError(f"The threshold must be a number ≥ 0; got {threshold!r}.")


def with_breaches(result: SubgroupAnalysis, windows: WindowOptions) -> WindowAnalysis:
    """Return the windows' analysis with the first windows that break the threshold.

    Parameters
    ----------
    result : SubgroupAnalysis
        The analysis whose groups are the windows in time order.
    windows : WindowOptions
        The windows and the threshold.

    Returns
    -------
    WindowAnalysis
        The first judged window over ``threshold`` and the first whose interval lies
        wholly above it.
    """
    threshold = windows.threshold
    first = first_sure = None
    if threshold is not None:
        for row in result.table.itertuples(index=False):
            if row.small:
                continue
            if first is None and row.value > threshold:
                first = row.group
            if first_sure is None and row.low > threshold:
                first_sure = row.group
    return WindowAnalysis(
        result=result,
        time=windows.time,
        every=windows.every,
        threshold=threshold,
        first_breach=first,
        first_sure_breach=first_sure,
    )


@dataclass(frozen=True, eq=False)
class WindowAnalysis:
    """Calibration per time window (see :func:`window_analysis`).

    Attributes
    ----------
    result : SubgroupAnalysis
        The per-window table (groups = windows in time order), pooled value and test.
    time : str or None
        The time column.
    every : str or int
        The windows.
    threshold : float or None
        The largest acceptable error.
    first_breach : str or None
        The first judged window whose value exceeds the threshold.
    first_sure_breach : str or None
        The first judged window whose whole interval lies above it.
    """

    result: SubgroupAnalysis
    time: str | None
    every: str | int
    threshold: float | None
    first_breach: str | None
    first_sure_breach: str | None

    @property
    def table(self) -> pd.DataFrame:
        """The per-window table (:data:`SUBGROUP_COLUMNS`, ``group`` = window)."""
        return self.result.table

    @property
    def breach_sentence(self) -> str:
        """Which window first breaks the threshold, in one sentence."""
        if self.threshold is None:
            return "No threshold set."
        key = self.result.metric.label
        if self.first_breach is None:
            return f"No window's {key} exceeds {_num(self.threshold)}."
        text = f"First window over {_num(self.threshold)}: {self.first_breach}"
        if self.first_sure_breach is None:
            return text + "; no window's interval lies wholly above it."
        return text + f"; first whose interval lies wholly above it: {self.first_sure_breach}."

    def to_record(self) -> dict[str, Any]:
        """Return every number as a JSON-ready record (``calibscope metrics --window``)."""
        return {
            "time": self.time,
            "every": self.every,
            "threshold": self.threshold,
            "first_breach": self.first_breach,
            "first_sure_breach": self.first_sure_breach,
            **self.result.to_record(),
        }


def _num(x: float) -> str:

    return format_number(x)


def _finite(x: Any) -> Any:
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    return x
