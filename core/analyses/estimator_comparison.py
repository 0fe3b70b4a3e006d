"""Every calibration-error estimator side by side on one data set (the Estimators page).

- :func:`compare_estimators` runs every registered estimator that fits an
  :class:`core.analyses.analysis.AnalysisConfig` on the same predictions, with bootstrap intervals on
  common resamples, and both monotone sweeps (equal-width and equal-mass) with their traces;
- :func:`error_versus_bins` is the calibration error of binned estimators against the number
  of bins, as a tidy DataFrame;
- :func:`explain_disagreement` turns both into short sentences on the user's own numbers.

Every number comes from :func:`core.inference.calibration.calibration_error` and
:func:`core.inference.bootstrap.bootstrap_many`; nothing here re-implements an estimator.

Lens policy. Binned estimators run on the config's lens. Kernel estimators run on the config's
lens too when they support it (the SKCE family reduces every 1-D lens to a two-class problem),
so the comparison is on the same scores; MMCE is defined on the top-label confidence only and is
always shown there. For multiclass data (K > 2) the SKCE estimators are also shown on the
canonical lens (the full probability vector), the quantity they were designed for. The ``lens``
column of the table says which lens each row uses.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core.analyses.analysis import (
    EXACT_BOOTSTRAP_WORK,
    QUADRATIC_BOOTSTRAP_MAX_N,
    AnalysisConfig,
    bootstrap_mode,
    cell_intervals,
    check_config,
    kernel_rows,
)
from core.base.errors import CalibscopeError, ConfigError
from core.base.options import N_BINS
from core.base.validation import check_norm, norm_text
from core.data import as_predictions
from core.estimators import ESTIMATORS
from core.estimators.base import KernelContext, NormalStream
from core.estimators.kernel import MAX_EXACT_N, check_exact_size, resample_options
from core.inference.bootstrap import bootstrap_many
from core.inference.calibration import CalibrationErrorResult, EstimatorCall
from core.inference.resampling import SortedBins, SortedChunk
from core.stats.binned_view import BinnedViews
from core.stats.binning import rank_starts
from core.stats.intervals import BootstrapResult, undefined_note, with_outside_note

__all__ = [
    "CURVE_COLUMNS",
    "CURVE_ESTIMATORS",
    "INTERVAL_CHOICES",
    "SWEEP_BINNINGS",
    "TABLE_COLUMNS",
    "EstimatorComparison",
    "compare_estimators",
    "curve_estimators",
    "error_versus_bins",
    "explain_disagreement",
]

#: Columns of :attr:`EstimatorComparison.table`.
TABLE_COLUMNS = [
    "key",
    "estimator",
    "label",
    "group",
    "lp_scale",
    "lens",
    "binning",
    "value",
    "low",
    "high",
    "note",
    "description",
    "formula",
]
#: Columns of :func:`error_versus_bins`.
CURVE_COLUMNS = ["estimator", "label", "binning", "n_bins", "value", "rows_per_bin"]
#: Binned estimators drawn against the number of bins: on fixed bins, reading ``n_bins``.
CURVE_ESTIMATORS: tuple[str, ...] = tuple(
    e.name for e in ESTIMATORS if e.binned and e.from_bins and e.reads_n_bins
)
#: The binnings of the monotone sweep.
SWEEP_BINNINGS: tuple[str, ...] = ("equal-width", "equal-mass")
#: Which estimators :func:`compare_estimators` bootstraps.
INTERVAL_CHOICES: tuple[str, ...] = ("all", "binned", "none")


@dataclass(frozen=True, eq=False)
class EstimatorComparison:
    """Every estimator on one data set, with intervals and the sweeps' traces.

    Attributes
    ----------
    config : AnalysisConfig
        The options that produced it.
    table : pandas.DataFrame
        One row per estimator and lens, columns :data:`TABLE_COLUMNS`: ``key`` (unique row
        id, ``"name"`` or ``"name@lens"``), ``estimator`` (registry name), ``label``,
        ``group`` (the estimator's family: ``binned``, ``smooth`` or ``kernel``), ``lens``, ``binning`` (empty for kernel
        estimators), ``value`` (NaN when not computed), bootstrap ``low`` / ``high`` (NaN
        when not computed), ``note`` (why a value or interval is missing, b*, the quantity
        a kernel estimator measures), and the registry's ``description`` and ``formula``.
    results : dict
        ``key -> CalibrationErrorResult`` of the rows that were computed.
    intervals : dict
        ``key -> BootstrapResult`` (all drawn from ``config.seed``, so on the same resamples).
    sweeps : dict
        ``binning -> CalibrationErrorResult`` of the sweep estimator with each binning of
        :data:`SWEEP_BINNINGS` on the config's lens (missing when it failed).
    n : int
        Number of rows.
    n_classes : int
        Number of classes.
    class_names : tuple of str
        Class names.
    interval_scope : str
        Which estimators were bootstrapped: ``"all"``, ``"binned"`` or ``"none"``.
    """

    config: AnalysisConfig
    table: pd.DataFrame
    results: dict[str, CalibrationErrorResult] = field(default_factory=dict)
    intervals: dict[str, BootstrapResult] = field(default_factory=dict)
    sweeps: dict[str, CalibrationErrorResult] = field(default_factory=dict)
    n: int = 0
    n_classes: int = 0
    class_names: tuple[str, ...] = ()
    interval_scope: str = "all"

    @property
    def sweep_traces(self) -> pd.DataFrame:
        """The sweeps' traces in one frame.

        Returns
        -------
        pandas.DataFrame
            Columns ``binning, component, b, monotone, chosen``: each candidate number of
            bins ``b`` checked by the sweep, whether its bin means were non-decreasing, and
            whether ``b`` is the chosen ``b*`` of its component.
        """
        frames = []
        for binning, res in self.sweeps.items():
            trace = res.details["sweep_trace"].copy()
            if "component" not in trace.columns:
                trace.insert(0, "component", res.components[0])
            stars = dict(zip(res.components, _b_stars(res), strict=True))
            trace["chosen"] = trace["b"].to_numpy() == trace["component"].map(stars).to_numpy()
            trace.insert(0, "binning", binning)
            frames.append(trace)
        if not frames:
            return pd.DataFrame(columns=["binning", "component", "b", "monotone", "chosen"])
        return pd.concat(frames, ignore_index=True)

    @property
    def sweep_choices(self) -> pd.DataFrame:
        """The sweeps' chosen numbers of bins.

        Returns
        -------
        pandas.DataFrame
            Columns ``binning, component, b_star, value, total``: per component the chosen
            ``b*`` and its plug-in error, and ``total`` the sweep estimate (aggregated over
            components).
        """
        rows = []
        for binning, res in self.sweeps.items():
            for comp, b_star, value in zip(
                res.components, _b_stars(res), res.component_values, strict=True
            ):
                rows.append(
                    {
                        "binning": binning,
                        "component": comp,
                        "b_star": int(b_star),
                        "value": float(value),
                        "total": float(res.value),
                    }
                )
        return pd.DataFrame(rows, columns=["binning", "component", "b_star", "value", "total"])

    def value(self, key: str) -> float:
        """Return the value of a row of the table (NaN when it was not computed).

        Parameters
        ----------
        key : str
            A ``key`` of :attr:`table`.

        Returns
        -------
        float
            The estimate.
        """
        res = self.results.get(key)
        return float(res.value) if res is not None else math.nan


def _b_stars(res: CalibrationErrorResult) -> tuple[int, ...]:
    b = res.details["b_star"]
    return tuple(int(v) for v in b) if isinstance(b, tuple) else (int(b),)


def _row_plan(config: AnalysisConfig, n_classes: int) -> list[tuple[str, str, str, str, str]]:
    """``(key, estimator, lens, binning, note)`` of every row, or a reason in ``note``."""
    plan = []
    for info in ESTIMATORS:
        name = info.name
        if info.binned:
            binning, note = info.binning_for(config.binning), ""
            allowed = info.binnings
            if not info.accepts_binning(binning):
                binning = "equal-mass" if "equal-mass" in allowed else allowed[0]  # type: ignore[index, operator]
                note = f"bins with {' or '.join(allowed)}; shown with {binning}"  # type: ignore[arg-type]
            if not info.supports(norm=config.norm):
                supported = ", ".join(norm_text(v) for v in info.norms or ())
                note = f"not defined for the {norm_text(config.norm)} norm (supports {supported})"
                plan.append((name, name, config.lens, binning, "skip: " + note))
                continue
            plan.append((name, name, config.lens, binning, note))
            continue
        lenses = info.lenses
        if not info.supports(norm=config.norm):
            supported = ", ".join(norm_text(v) for v in info.norms or ())
            note = f"not defined for the {norm_text(config.norm)} norm (supports {supported})"
            plan.append((name, name, config.lens, "", "skip: " + note))
            continue
        if config.lens in lenses:
            plan.append((name, name, config.lens, "", ""))
        else:
            own = next((lens for lens in lenses if lens != "canonical"), lenses[0])
            plan.append((name, name, own, "", f"defined on the {own} lens only"))
            if own == "canonical":  # its one row is already the canonical one
                continue
        if n_classes > 2 and "canonical" in lenses:
            plan.append((f"{name}@canonical", name, "canonical", "", "full probability vector"))
    return plan


def _kernel_note(name: str, res: CalibrationErrorResult) -> str:
    parts = [ESTIMATORS.get(name).quantity]
    bw = res.details.get("bandwidth")
    if bw is not None:
        parts.append(f"bandwidth {bw:.3g}")
    return "; ".join(parts)


def _binned_note(res: CalibrationErrorResult) -> str:
    d = res.details
    parts = []
    if "b_star" in d:
        b = d["b_star"]
        parts.append(f"b* = {b}" if not isinstance(b, tuple) else f"b* per class = {list(b)}")
    if "signed_square" in d:
        parts.append(f"signed square {d['signed_square']:.3g}")
    if "signed_value" in d:
        parts.append(f"signed value {d['signed_value']:.3g}")
    if "bandwidth" in d:
        parts.append(
            "bandwidth σ = " + ", ".join(f"{v:.4g}" for v in np.atleast_1d(d["bandwidth"]))
        )
    return "; ".join(parts)


#: The note of an experimental estimator's row when it was not asked for.
NOT_ASKED = "experimental and slow: computed when asked for"


def compare_estimators(
    data: Any,
    config: AnalysisConfig | None = None,
    *,
    intervals: str = "all",
    quadratic_interval_max_n: int = QUADRATIC_BOOTSTRAP_MAX_N,
    max_exact_n: int = MAX_EXACT_N,
    experimental: bool = False,
) -> EstimatorComparison:
    """Run every registered estimator on the same predictions, with bootstrap intervals.

    Parameters
    ----------
    data : Predictions or (probs, labels)
        The predictions (see :func:`core.data.as_predictions`).
    config : AnalysisConfig, optional
        Lens, binning, number of bins, norm, tie policy, class weights, and the bootstrap's
        resamples, level and seed (``config.estimator`` is not used: all of them run).
    intervals : {"all", "binned", "none"}, default="all"
        Which estimators get bootstrap intervals (none when ``config.n_resamples`` is 0).
        Kernel estimators are re-run on every resample, which is slow, so a caller can show
        the binned intervals first.
    quadratic_interval_max_n : int, default=QUADRATIC_BOOTSTRAP_MAX_N
        Above this many rows, quadratic-cost estimators get no interval (with a note).
    max_exact_n : int, default=MAX_EXACT_N
        Above this many rows, quadratic-cost estimators are not run; the row's note holds
        the size-limit message naming the block and linear estimators.
    experimental : bool, default=False
        Also run the experimental estimators (:attr:`EstimatorInfo.experimental`; the
        KDE-ECE's bandwidth search alone takes tens of seconds on a kernel subsample of ten
        classes). Without it their rows say they were not asked for.

    Returns
    -------
    EstimatorComparison
        The table, the results, the intervals and the sweeps.

    Raises
    ------
    DataError
        For invalid predictions or labels.
    ConfigError
        For a lens that does not fit the data (e.g. the binary lens on three classes) or an
        unknown ``intervals`` choice.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=300); y = (rng.uniform(size=300) < p).astype(int)
    >>> c = compare_estimators((p, y), AnalysisConfig(lens="binary", n_resamples=0))
    >>> c.table.key.tolist()[:4]
    ['plugin', 'label-binned', 'debiased', 'sweep']
    """
    config = check_config(config)
    if intervals not in INTERVAL_CHOICES:
        raise ConfigError(
            f"intervals must be one of {', '.join(INTERVAL_CHOICES)}; got {intervals!r}."
        )
    pred = as_predictions(data)
    p, y = pred.probs, pred.labels
    n, k = p.shape
    names = tuple(pred.class_names)
    views = BinnedViews(p, y, names, config.class_weights)
    # a lens that does not fit the data is one error for the whole page, not one per row
    views.lens(config.lens)
    # kernel estimators run on a seeded subsample at large n (config.kernel_sample)
    sample = kernel_rows(n, config)
    kernel_views = (
        views if sample is None else BinnedViews(p[sample], y[sample], names, config.class_weights)
    )
    subsample_note = (
        ""
        if sample is None
        else f"on a seeded subsample of {sample.shape[0]:,} of the {n:,} rows (seed {config.seed})"
    )

    base = {
        "norm": config.norm,
        "n_bins": config.n_bins,
        "tie_policy": config.tie_policy,
        "class_weights": config.class_weights,
        "class_names": names,
    }
    results: dict[str, CalibrationErrorResult] = {}
    options: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    for key, name, lens, binning, note in _row_plan(config, k):
        entry = ESTIMATORS.get(name)
        binned = entry.binned
        row = {
            "key": key,
            "estimator": name,
            "label": entry.label,
            "group": entry.family,
            "lp_scale": bool(entry.lp_scale),
            "lens": lens,
            "binning": binning,
            "value": math.nan,
            "low": math.nan,
            "high": math.nan,
            "note": note.removeprefix("skip: "),
            "description": entry.description,
            "formula": entry.formula,
        }
        rows.append(row)
        if note.startswith("skip: "):
            continue
        if entry.experimental and not experimental:
            row["note"] = "; ".join(filter(None, [row["note"], NOT_ASKED]))
            continue
        opts = {**base, "lens": lens}
        if binned:
            opts["binning"] = binning
        try:
            # binned, smooth and joint-binned estimators are linear in n: every row
            on = kernel_views if entry.subsample else views
            if entry.quadratic:
                check_exact_size(on.labels.shape[0], max_exact_n, entry.label)
            call = EstimatorCall.make(name, **opts)
            res = call.result(call.run_on(on, config.seed))
        except CalibscopeError as exc:
            row["note"] = "; ".join(filter(None, [row["note"], f"not computed: {exc}"]))
            continue
        results[key] = res
        options[key] = opts
        row["value"] = float(res.value)
        extra = _binned_note(res) if entry.lp_scale else _kernel_note(name, res)
        where = subsample_note if entry.subsample else ""
        row["note"] = "; ".join(filter(None, [where, row["note"], extra]))

    boot: dict[str, BootstrapResult] = {}
    if config.n_resamples > 0 and intervals != "none":
        boot = _bootstrap(
            views,
            kernel_views,
            pred.binary,
            config,
            rows,
            results,
            options,
            intervals,
            quadratic_interval_max_n,
        )
    for row in rows:
        if row["key"] in boot:
            _add_interval(row, boot[row["key"]])

    sweeps = _sweeps(views, config, base, results)
    return EstimatorComparison(
        config=config,
        table=pd.DataFrame(rows, columns=TABLE_COLUMNS),
        results=results,
        intervals=boot,
        sweeps=sweeps,
        n=n,
        n_classes=k,
        class_names=names,
        interval_scope="none" if config.n_resamples == 0 else intervals,
    )


def _add_interval(row: dict[str, Any], b: BootstrapResult) -> None:
    """Write a bootstrap interval into a table row, with what its note must say of it."""
    row["low"] = float(b.confidence_interval.low)
    row["high"] = float(b.confidence_interval.high)
    note = "; ".join(filter(None, [row["note"], undefined_note(b.distribution)]))
    row["note"] = with_outside_note(note, row["value"], row["low"], row["high"], b.method)


def _sweeps(
    views: BinnedViews,
    config: AnalysisConfig,
    base: dict[str, Any],
    results: Mapping[str, CalibrationErrorResult],
) -> dict[str, CalibrationErrorResult]:
    """Return the sweep on each of its binnings (from the table's rows where it has them)."""
    sweeps: dict[str, CalibrationErrorResult] = {}
    sweep = _sweep_estimator()
    for binning in SWEEP_BINNINGS if sweep is not None else ():
        found = next(
            (
                res
                for res in results.values()
                if res.estimator == sweep and res.binning == binning and res.lens == config.lens
            ),
            None,
        )
        if found is None:
            try:
                call = EstimatorCall.make(
                    sweep, **{**base, "lens": config.lens, "binning": binning}
                )
                found = call.result(call.run_on(views, config.seed))
            except CalibscopeError:
                continue
        sweeps[binning] = found
    return sweeps


def _sweep_estimator() -> str | None:
    """Return the estimator that chooses its own number of bins and reports its trace (the sweep)."""
    return next((e.name for e in ESTIMATORS if e.binned and e.statistics == "sorted"), None)


def _bootstrap(
    views: BinnedViews,
    kernel_views: BinnedViews,
    binary: bool,
    config: AnalysisConfig,
    rows: list[dict[str, Any]],
    results: Mapping[str, CalibrationErrorResult],
    options: Mapping[str, dict[str, Any]],
    scope: str,
    quadratic_max_n: int,
) -> dict[str, BootstrapResult]:
    """Bootstrap the computed rows; every call draws the same resamples from ``config.seed``.

    Binned and smooth rows (the ℓp scale) take the analysis's rule
    (:func:`core.analyses.analysis.bootstrap_mode`): exact, or the cell bootstrap at large ``n`` (which
    the smooth ECE cannot read: its row says so); kernel rows bootstrap the rows they ran on.
    """
    by_key = {row["key"]: row for row in rows}
    binned = {
        key: (results[key].estimator, options[key])
        for key in results
        if ESTIMATORS.get(results[key].estimator).lp_scale
    }
    common = {
        "n_resamples": config.n_resamples,
        "confidence_level": config.confidence_level,
        "seed": config.seed,
        "binary": binary,
        "method": config.bootstrap_interval,
    }
    out: dict[str, BootstrapResult] = {}
    known = {key: results[key].value for key in binned}
    mode = bootstrap_mode(config, views.labels.shape[0], len(views.lens(config.lens).names))
    if binned and mode == "cells":
        calls = {key: EstimatorCall.make(name, **opts) for key, (name, opts) in binned.items()}
        notes = {key: by_key[key]["note"] for key in binned}
        out.update(cell_intervals(views, binary, config, calls, known, notes, scores=False))
        for key in binned:
            by_key[key]["note"] = notes[key]
    elif binned:
        try:
            out.update(bootstrap_many(None, None, binned, values=known, views=views, **common))
        except CalibscopeError as exc:
            for key in binned:
                by_key[key]["note"] = "; ".join(filter(None, [by_key[key]["note"], f"{exc}"]))
    for key, res in results.items():
        row = by_key[key]
        entry = ESTIMATORS.get(res.estimator)
        if entry.lp_scale or scope != "all":
            continue
        if entry.no_interval:
            row["note"] = "; ".join(filter(None, [row["note"], entry.no_interval]))
            continue
        on = kernel_views if entry.subsample else views
        why = _too_costly(entry, on.labels.shape[0], config.n_resamples, quadratic_max_n)
        if why:
            row["note"] = "; ".join(filter(None, [row["note"], why]))
            continue
        # one call per kernel estimator: a failure on a resample (e.g. a zero median
        # distance) costs only that row's interval; the resamples are the same as above
        opts = resample_options(options[key], res)
        try:
            out.update(bootstrap_many(None, None, {key: (res.estimator, opts)}, views=on, **common))
        except CalibscopeError as exc:
            row["note"] = "; ".join(filter(None, [row["note"], f"no interval: {exc}"]))
    return out


def _too_costly(entry: Any, n: int, n_resamples: int, quadratic_max_n: int) -> str:
    """Say why a kernel row gets no interval at this size ("" when it gets one)."""
    if entry.quadratic and n > quadratic_max_n:
        return f"no interval: quadratic cost at n > {quadratic_max_n:,}"
    if not entry.subsample and n * n_resamples > EXACT_BOOTSTRAP_WORK:
        return f"no interval: {n_resamples:,} resamples of {n:,} rows"
    return ""


def curve_estimators(norm: float | str = 1.0) -> tuple[str, ...]:
    """Return the estimators of :data:`CURVE_ESTIMATORS` that support a norm.

    Parameters
    ----------
    norm : {1, 2, inf}
        The ℓp norm.

    Returns
    -------
    tuple of str
        Registry names, e.g. without ``debiased`` for ℓ∞.
    """
    p = check_norm(norm)
    return tuple(name for name in CURVE_ESTIMATORS if ESTIMATORS.get(name).supports(norm=p))


def _check_range(n_bins_range: Sequence[int]) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in n_bins_range)
    except (TypeError, ValueError):
        raise ConfigError(
            f"n_bins_range must be two whole numbers (first, last); got {n_bins_range!r}."
        ) from None
    if not N_BINS.minimum <= lo <= hi <= N_BINS.maximum:
        raise ConfigError(
            f"n_bins_range must satisfy {N_BINS.minimum} ≤ first ≤ last ≤ {N_BINS.maximum}; "
            f"got ({lo}, {hi})."
        )
    return lo, hi


def error_versus_bins(
    data: Any,
    config: AnalysisConfig | None = None,
    *,
    estimators: Iterable[str] | None = None,
    binnings: Iterable[str] = SWEEP_BINNINGS,
    n_bins_range: Sequence[int] = (2, 50),
) -> pd.DataFrame:
    """Calibration error of binned estimators against the number of bins.

    Each value is the estimator with that binning and number of bins on the config's lens
    (:func:`core.inference.calibration.calibration_error`'s numbers, to float rounding of the sums).
    Equal-width and equal-mass bins are runs of the score order, so one sort and prefix sums
    per component give every number of bins (:func:`core.stats.binning.rank_starts`); other
    binnings bin once per ``B``.

    Parameters
    ----------
    data : Predictions or (probs, labels)
        The predictions (see :func:`core.data.as_predictions`).
    config : AnalysisConfig, optional
        Lens, norm, tie policy, class weights and seed (of random estimators, the same for
        every ``B``) are used.
    estimators : iterable of str, optional
        Binned estimators on fixed bins; default :func:`curve_estimators` of the norm.
    binnings : iterable of str, default=("equal-width", "equal-mass")
        Binnings to draw.
    n_bins_range : (int, int), default=(2, 50)
        First and last number of bins (inclusive).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CURVE_COLUMNS` (``estimator, label, binning, n_bins, value,
        rows_per_bin``), one row per estimator, binning and number of bins.

    Raises
    ------
    ConfigError
        For an estimator without a fixed number of bins, one that does not support the
        norm, or a bad range.

    Examples
    --------
    >>> p = [0.6, 0.7, 0.8, 0.9]; y = [0, 0, 1, 1]
    >>> f = error_versus_bins((p, y), AnalysisConfig(lens="binary"), estimators=["plugin"],
    ...                       binnings=["equal-width"], n_bins_range=(2, 2))
    >>> round(float(f.value.iloc[0]), 12)
    0.25
    """
    config = check_config(config)
    lo, hi = _check_range(n_bins_range)
    names = curve_estimators(config.norm) if estimators is None else tuple(estimators)
    for name in names:
        info = ESTIMATORS.get(name)
        if not info.binned or not info.from_bins:
            raise ConfigError(
                f"error_versus_bins draws estimators with a free number of bins "
                f"(e.g. {', '.join(CURVE_ESTIMATORS)}); {name!r} is not one."
            )
        info.check(norm=config.norm)
    pred = as_predictions(data)
    views = BinnedViews(pred.probs, pred.labels, pred.class_names, config.class_weights)
    n = pred.n
    opts = {**config.calibration_options(), "class_names": pred.class_names}
    calls = {name: EstimatorCall.make(name, **opts) for name in names}
    lens_view = views.lens(config.lens)
    weights = np.asarray(lens_view.weights, dtype=np.float64)
    chunks = [_sorted_component(views, config.lens, c) for c in range(len(lens_view.names))]
    # every B reads the draws of a random estimator from the seed's start: one stream each
    streams = {name: NormalStream(int(config.seed)) for name in calls}
    rows = []
    for binning in binnings:
        for b in range(lo, hi + 1):
            if binning in ("equal-width", "equal-mass"):
                # one sort per component: the bins of every B are runs of the score order
                batches = [
                    SortedBins(ch, rank_starts(ch.s_sorted, binning, b, config.tie_policy)[None])
                    for ch in chunks
                ]
            else:
                view = views.binned(config.lens, binning, b, config.tie_policy)
                batches = [comp.batch for comp in view.components]
            for name, call in calls.items():
                ctx = KernelContext(call.options, streams[name], np.zeros(1, dtype=np.int64))
                per = np.empty((1, len(batches)))
                for c, batch in enumerate(batches):
                    out = call.info.kernel(batch, config.norm, ctx)  # type: ignore[misc]
                    per[0, c] = (out[0] if isinstance(out, tuple) else out)[0]
                value = call.info.combine(per, weights, config.norm)[0]
                rows.append(
                    {
                        "estimator": name,
                        "label": call.info.label,
                        "binning": binning,
                        "n_bins": b,
                        "value": float(value),
                        "rows_per_bin": n / b,
                    }
                )
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def _sorted_component(views: BinnedViews, lens: str, c: int) -> SortedChunk:
    """One component's prefix sums in score order (a batch of one sample, every row once)."""
    s = views.sorted_component(lens, c)
    n = s.rank.shape[0]
    return SortedChunk(np.arange(n)[None, :], s.rank, s.scores, s.outcomes, squares=True)


def _at(curve: pd.DataFrame, name: str, binning: str, b: int) -> float:
    sel = curve[(curve.estimator == name) & (curve.binning == binning) & (curve.n_bins == b)]
    return float(sel.value.iloc[0]) if len(sel) else math.nan


def _spreads(
    curve: pd.DataFrame | None, binning: str, names: tuple[str, str]
) -> tuple[float, float, str] | None:
    """Max − min over B of two estimators' curves (the config's binning, else the first)."""
    if curve is None or not len(curve) or not set(names) <= set(curve.estimator):
        return None
    if binning not in set(curve.binning):
        binning = str(curve.binning.iloc[0])
    part = curve[curve.binning == binning]
    a, b = (part.value[part.estimator == name] for name in names)
    return float(a.max() - a.min()), float(b.max() - b.min()), binning


def explain_disagreement(
    comparison: EstimatorComparison, curve: pd.DataFrame | None = None
) -> tuple[str, ...]:
    """Say, on the data's own numbers, why the estimators give different values.

    Parameters
    ----------
    comparison : EstimatorComparison
        The result of :func:`compare_estimators`.
    curve : pandas.DataFrame, optional
        The result of :func:`error_versus_bins` on the same data and lens.

    Returns
    -------
    tuple of str
        Markdown sentences, one per effect (plug-in bias, debiasing, Jensen, the sweep,
        bin edges, kernel estimators); effects whose numbers are missing are left out.
    """
    return tuple(
        text
        for effect in (
            _plugin_effect,
            _debiased_effect,
            _label_binned_effect,
            _sweep_effect,
            _edges_effect,
            _apart_effect,
        )
        if (text := effect(comparison, curve)) is not None
    )


def _plugin_effect(c: EstimatorComparison, curve: pd.DataFrame | None) -> str | None:
    """Say why the plug-in estimate is biased upward with few rows per bin."""
    cfg = c.config
    norm = norm_text(cfg.norm)
    plug = c.value("plugin")
    per_bin = c.n / cfg.n_bins
    if not math.isnan(plug):
        text = (
            f"**Plug-in is biased upward when bins hold few rows.** With n = {c.n:,} rows in "
            f"B = {cfg.n_bins} bins (about {per_bin:,.0f} rows per bin) the plug-in {norm} "
            f"error is {plug:.4f}. Each bin's gap |ȳ − s̄| also contains label noise of size "
            "about √(ȳ(1 − ȳ)/n_b), which the absolute value never cancels, so more bins "
            "(fewer rows each) push the estimate up even for a calibrated model."
        )
        if curve is not None and len(curve):
            binning = cfg.binning if cfg.binning in set(curve.binning) else curve.binning.iloc[0]
            bs = curve.n_bins[curve.binning == binning]
            lo, hi = int(bs.min()), int(bs.max())
            a, b = _at(curve, "plugin", binning, lo), _at(curve, "plugin", binning, hi)
            if not (math.isnan(a) or math.isnan(b)):
                text += f" On this data ({binning}) it goes from {a:.4f} at B = {lo} to {b:.4f} at B = {hi}."
        return text
    return None


def _debiased_effect(c: EstimatorComparison, curve: pd.DataFrame | None) -> str | None:
    """Say what the debiased estimate subtracts."""
    cfg = c.config
    plug = c.value("plugin")
    deb = c.value("debiased")
    if not math.isnan(deb) and not math.isnan(plug):
        res = c.results["debiased"]
        what = (
            "subtracts each bin's label-noise variance ȳ(1 − ȳ)/(n_b − 1) from the squared gap"
            if cfg.norm == 2.0
            else "subtracts a seeded Gaussian estimate of the noise each bin's gap carries"
        )
        signed = res.details.get("signed_square", res.details.get("signed_value"))
        clip = (
            f" (the signed value {signed:.3g} is below 0 and is clipped)"
            if signed is not None and signed < 0
            else ""
        )
        text = (
            f"**Debiased** {what}: {deb:.4f} against the plug-in's {plug:.4f}{clip}, a "
            f"difference of {plug - deb:+.4f} that estimates the noise term."
        )
        spread = _spreads(curve, cfg.binning, ("plugin", "debiased"))
        if spread is not None:
            text += (
                f" Over the B range drawn ({spread[2]}) the debiased values span "
                f"{spread[1]:.4f} against the plug-in's {spread[0]:.4f}"
                + (
                    ", so it depends less on the choice of B."
                    if spread[1] < spread[0]
                    else "; with so few rows per bin its correction is itself noisy."
                )
            )
        return text
    return None


def _label_binned_effect(c: EstimatorComparison, curve: pd.DataFrame | None) -> str | None:
    """Say why label-binned is at least the plug-in (Jensen)."""
    plug = c.value("plugin")
    lab = c.value("label-binned")
    if not math.isnan(lab) and not math.isnan(plug):
        same = abs(lab - plug) <= 1e-4 * max(abs(plug), 1e-12)
        return (
            f"**Label-binned ≥ plug-in (Jensen).** Label-binned keeps each row's own score "
            f"against its bin's mean outcome: {lab:.4f} ≥ {plug:.4f}. Averaging the scores "
            "within a bin first (plug-in) can only shrink the average distance"
            + (
                "; here the two nearly coincide because the rows of each bin share almost "
                "the same score (or all lie on the same side of the bin's outcome rate)."
                if same
                else "."
            )
        )
    return None


def _sweep_effect(c: EstimatorComparison, curve: pd.DataFrame | None) -> str | None:
    """Say which number of bins the sweep picks."""
    choices = c.sweep_choices
    if len(choices):
        parts = []
        for binning, group in choices.groupby("binning", sort=False):
            stars = group.b_star.tolist()
            star = f"b* = {stars[0]}" if len(stars) == 1 else f"b* per class {stars}"
            parts.append(f"{binning}: {star}, ECE_sweep = {group.total.iloc[0]:.4f}")
        return (
            "**The sweep picks B from the data:** the largest number of bins whose bin "
            "accuracies still rise with the score (the first non-monotone B stops it). "
            + "; ".join(parts)
            + "."
        )
    return None


def _edges_effect(c: EstimatorComparison, curve: pd.DataFrame | None) -> str | None:
    """Say how equal-width and equal-mass bins differ on the data."""
    cfg = c.config
    if curve is not None and len(curve) and {"equal-width", "equal-mass"} <= set(curve.binning):
        ew = _at(curve, "plugin", "equal-width", cfg.n_bins)
        em = _at(curve, "plugin", "equal-mass", cfg.n_bins)
        if not (math.isnan(ew) or math.isnan(em)):
            return (
                f"**Bin edges matter.** At B = {cfg.n_bins} the plug-in error is {ew:.4f} with "
                f"equal-width bins and {em:.4f} with equal-mass bins: the same formula on "
                "different partitions (libraries also differ in edge conventions, e.g. which "
                "bin a score equal to an edge falls in)."
            )
    return None


def _apart_effect(c: EstimatorComparison, curve: pd.DataFrame | None) -> str | None:
    """Say which estimates are read apart from the binned errors."""
    # off the ℓp scale as the registry declares it (kernel distances, the canonical TV
    # distance, the experimental KDE): each row says what it measures in its entry's words
    other = c.table[~c.table.lp_scale.astype(bool) & c.table.value.notna()]
    if len(other):
        by_quantity: dict[str, list[str]] = {}
        for r in other.itertuples():
            by_quantity.setdefault(ESTIMATORS.get(r.estimator).quantity, []).append(
                f"{r.label} ({r.lens}) = {r.value:.3g}"
            )
        listed = "; ".join(f"{q}: {', '.join(v)}" for q, v in by_quantity.items())
        return (
            "**Read apart from the binned errors** (not on their scale, or not of the same "
            f"lens) — {listed}. Compare them with each other or across models, not with the "
            "binned values; an unbiased one can be negative when the model is nearly "
            "calibrated."
        )
    return None
