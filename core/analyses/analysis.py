"""The one-call analysis behind the Reliability page, ``calibscope metrics`` and reports.

:class:`AnalysisConfig` holds every analysis option (frozen and hashable, so it keys
caches and round-trips through URLs and reports with :meth:`AnalysisConfig.to_dict` /
:meth:`AnalysisConfig.from_dict`); :func:`analyze` turns predictions, labels and a
config into a :class:`ReliabilityAnalysis`: the headline calibration error, the
per-component bin tables with per-bin intervals, and a metrics table in which every
scalar carries a bootstrap interval computed on common resamples from the one seed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd

from core.base.errors import CalibscopeError, ConfigError
from core.base.memo import Memo
from core.base.options import KERNEL_SAMPLE, N_BINS, N_RESAMPLES, whole_number
from core.base.parallel import map_ordered
from core.base.validation import check_norm, norm_key
from core.data import as_predictions
from core.estimators import ESTIMATORS
from core.estimators.kernel import bandwidth_fell_back
from core.inference.bootstrap import bootstrap_many, support_of, truth_values
from core.inference.calibration import CalibrationErrorResult, EstimatorCall
from core.inference.cells import analysis_draws, cells_of, grouped_values, supports
from core.stats.binned_view import BinnedViews
from core.stats.binning import BINNINGS, BinStats, check_tie_policy
from core.stats.consistency_bands import BandStats, ConsistencyBand
from core.stats.conventions import CONVENTIONS
from core.stats.intervals import (
    INTERVAL_METHODS,
    BootstrapResult,
    bin_intervals,
    bootstrap_result,
    check_bootstrap_interval,
    check_confidence_level,
    check_seed,
    pivots,
    with_outside_note,
)
from core.stats.lenses import LENSES, data_lens
from core.stats.scores import BRIER_CONVENTIONS, SCORES, BrierDecomposition, decompose_brier

#: Columns of :attr:`ReliabilityAnalysis.metrics`.
METRIC_COLUMNS = ["metric", "label", "value", "low", "high", "note"]

#: Above this many rows, quadratic-cost estimators get no bootstrap interval.
QUADRATIC_BOOTSTRAP_MAX_N = 5000

#: Ways to bootstrap the intervals (see :class:`AnalysisConfig`).
BOOTSTRAP_MODES = ("auto", "exact", "cells")

#: Above this many row-resamples (n × resamples × components) the ``"auto"`` bootstrap
#: resamples cells instead of rows; about two seconds of exact bootstrap on two cores.
EXACT_BOOTSTRAP_WORK = 10_000_000

#: Most rows the kernel estimators run on (``kernel_sample``): their cost is quadratic, and a
#: stream keeps these rows in memory.
MAX_KERNEL_SAMPLE = KERNEL_SAMPLE.maximum

#: Outcome redraws of the consistency band. Fixed rather than ``n_resamples``: turning the
#: bootstrap off (``n_resamples=0``, the page's fast first pass) must not change the band.
CONSISTENCY_BAND_RESAMPLES = 1000

#: Above this many bins (the discrete binning of continuous scores) no band is drawn: one
#: band per near-empty bin is unreadable and costs bins × resamples draws.
CONSISTENCY_BAND_MAX_BINS = 1000

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _flag(name: str, value: object) -> bool:
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise ConfigError(f"{name} must be true or false; got {value!r}.")


@dataclass(frozen=True)
class AnalysisConfig:
    """Every option of a reliability analysis (frozen, hashable, serialisable).

    Attributes
    ----------
    lens : str, default="top-label"
        A name in :data:`core.stats.lenses.LENSES`.
    binning : str, default="equal-width"
        A name in :data:`core.stats.binning.BINNINGS`.
    n_bins : int, default=15
        Number of bins (1 to :data:`core.base.validation.MAX_BINS`, 10,000).
    norm : float, default=1.0
        ``1.0`` (ECE), ``2.0`` or ``inf`` (MCE); strings such as ``"inf"`` are accepted.
    estimator : str, default="plugin"
        The headline estimator, a name in :data:`core.estimators.ESTIMATORS`; it must
        support ``lens`` and ``norm``.
    tie_policy : {"split", "keep"}, default="split"
        Equal-mass treatment of equal scores.
    seed : int, default=0
        The one seed of everything random in the analysis.
    n_resamples : int, default=1000
        Bootstrap resamples per metric (at most :data:`core.base.validation.MAX_RESAMPLES`,
        100,000); 0 means no bootstrap intervals.
    confidence_level : float, default=0.95
        Confidence level of the bootstrap and per-bin intervals.
    interval_method : str, default="wilson"
        Per-bin interval, a name in :data:`core.stats.intervals.INTERVAL_METHODS`.
    class_weights : tuple of float, optional
        Classwise aggregation weights (stored normalised to sum 1); None means uniform.
    bootstrap : {"auto", "exact", "cells"}, default="auto"
        How intervals are bootstrapped: ``"exact"`` resamples rows; ``"cells"`` resamples
        the cells of equal bins and outcomes (:mod:`core.inference.cells`, the fast scheme for large
        ``n``); ``"auto"`` is exact while ``n × n_resamples × components`` is at most
        :data:`EXACT_BOOTSTRAP_WORK`, else cells.
    kernel_sample : int, default=5000
        Kernel estimators' point estimates run on at most this many rows: above it, on a
        seeded random subsample of this size (said in the row's note); 0 means all rows.
        At most :data:`MAX_KERNEL_SAMPLE`.
    consistency_band : bool, default=True
        Add each component's consistency band (:func:`core.stats.consistency_bands.
        consistency_band`, ``CONSISTENCY_BAND_RESAMPLES`` outcome redraws at ``level``,
        seeded by ``seed``); strings such as ``"false"`` are accepted.
    convention : str, default="calibscope"
        Whose bins the binned estimators, the bin table, the intervals and the band read:
        a name in :data:`core.stats.conventions.CONVENTIONS`; a library's convention must have
        the estimator, norm, binning and lens (the metrics table then lists the binned
        estimators that library has).
    bootstrap_interval : {"percentile", "basic"}, default="percentile"
        How the bootstrap intervals are read off the resamples
        (:data:`core.stats.intervals.BOOTSTRAP_INTERVALS`): where resampled estimates fall, or
        the basic (pivotal) interval around the estimate, which removes the estimator's
        bias at this ``n`` as the resamples show it.

    Raises
    ------
    ConfigError
        On construction, for unknown names, out-of-range values, or an estimator that
        does not support the lens or norm.
    """

    lens: str = "top-label"
    binning: str = "equal-width"
    n_bins: int = N_BINS.default  # type: ignore[assignment]
    norm: float = 1.0
    estimator: str = "plugin"
    tie_policy: str = "split"
    seed: int = 0
    n_resamples: int = N_RESAMPLES.default  # type: ignore[assignment]
    confidence_level: float = 0.95
    interval_method: str = "wilson"
    class_weights: tuple[float, ...] | None = None
    consistency_band: bool = True
    bootstrap: str = "auto"
    kernel_sample: int = KERNEL_SAMPLE.default  # type: ignore[assignment]
    convention: str = "calibscope"
    bootstrap_interval: str = "percentile"

    def __post_init__(self) -> None:
        def put(name: str, value: object) -> None:
            object.__setattr__(self, name, value)

        for name, registry in (
            ("lens", LENSES),
            ("binning", BINNINGS),
            ("estimator", ESTIMATORS),
            ("interval_method", INTERVAL_METHODS),
        ):
            registry.get(getattr(self, name))
        put("n_bins", N_BINS.check(self.n_bins))
        put("norm", check_norm(self.norm))
        put("tie_policy", check_tie_policy(self.tie_policy))
        seed = check_seed(whole_number("seed", self.seed, 0))
        put("seed", int(seed))  # check_seed returns an int for int input
        put("n_resamples", N_RESAMPLES.check(self.n_resamples))
        confidence_level = self.confidence_level
        if isinstance(confidence_level, str):
            try:
                confidence_level = float(confidence_level)
            except ValueError:
                raise ConfigError(
                    f"confidence_level must be a number such as 0.95; got {confidence_level!r}."
                ) from None
        put("confidence_level", check_confidence_level(confidence_level))
        put("consistency_band", _flag("consistency_band", self.consistency_band))
        if self.bootstrap not in BOOTSTRAP_MODES:
            raise ConfigError(
                f"bootstrap must be one of {', '.join(BOOTSTRAP_MODES)}; got {self.bootstrap!r}."
            )
        put("bootstrap_interval", check_bootstrap_interval(self.bootstrap_interval))
        put("kernel_sample", KERNEL_SAMPLE.check(self.kernel_sample))
        if self.class_weights is not None:
            w = self.class_weights
            if isinstance(w, str):
                w = [part for part in w.replace(";", ",").split(",") if part.strip()]
            try:
                arr = np.asarray(w, dtype=np.float64).ravel()
            except (TypeError, ValueError):
                raise ConfigError(
                    f"class_weights must be a list of non-negative numbers; got {w!r}."
                ) from None
            if arr.size == 0 or not np.isfinite(arr).all() or (arr < 0).any() or arr.sum() <= 0:
                raise ConfigError("class_weights must be non-negative numbers with a positive sum.")
            put("class_weights", tuple(float(v) for v in arr / arr.sum()))
        ESTIMATORS.check(self.estimator, lens=self.lens, norm=self.norm, binning=self.binning)
        if ESTIMATORS.get(self.estimator).binned:
            CONVENTIONS.get(self.convention).check(
                estimator=self.estimator, norm=self.norm, binning=self.binning, lens=self.lens
            )
        else:
            CONVENTIONS.get(self.convention)

    def to_dict(self) -> dict[str, Any]:
        """Return the options as JSON-ready values (``norm`` as ``"1"``, ``"2"`` or ``"inf"``).

        Returns
        -------
        dict
            One entry per field; ``AnalysisConfig.from_dict(c.to_dict()) == c``.
        """
        out = asdict(self)
        out["norm"] = norm_key(self.norm)
        if self.class_weights is not None:
            out["class_weights"] = list(self.class_weights)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AnalysisConfig:
        """Build a config from a mapping such as URL query parameters or a report.

        Parameters
        ----------
        data : mapping
            Field name → value; missing fields take their defaults and string values
            (as in URLs) are converted. ``class_weights`` may be a list or a
            comma-separated string.

        Returns
        -------
        AnalysisConfig
            The validated config.

        Raises
        ------
        ConfigError
            For unknown fields or invalid values.
        """
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ConfigError(
                f"Unknown analysis option(s) {', '.join(map(repr, unknown))}. "
                f"Valid options: {', '.join(names)}."
            )
        values = dict(data)
        if values.get("class_weights") in ("", "none", "None"):
            values["class_weights"] = None
        elif isinstance(values.get("class_weights"), list):
            values["class_weights"] = tuple(values["class_weights"])
        return cls(**values)

    def binning_options(self) -> dict[str, Any]:
        """Return how the rows are binned: ``lens, binning, n_bins, tie_policy``."""
        return {
            "lens": self.lens,
            "binning": self.binning,
            "n_bins": self.n_bins,
            "tie_policy": self.tie_policy,
        }

    def calibration_options(self) -> dict[str, Any]:
        """Return the keyword options of :func:`core.inference.calibration.calibration_error`.

        Returns
        -------
        dict
            ``binning, n_bins, norm, lens, tie_policy, class_weights``.
        """
        return {**self.binning_options(), "norm": self.norm, "class_weights": self.class_weights}


@dataclass(frozen=True, eq=False)
class ComponentTable:
    """The bins of one component of the lens view, with per-bin intervals.

    Attributes
    ----------
    name : str
        Component name (``"top-label"``, the positive class, or a class name).
    bins : BinStats
        Bin statistics.
    low, high : numpy.ndarray
        Per-bin interval of the mean outcome (NaN for empty bins).
    weight : float
        Aggregation weight of the component.
    band : ConsistencyBand or None
        Consistency band of the observed frequency per bin (None when not computed).
    """

    name: str
    bins: BinStats
    low: np.ndarray
    high: np.ndarray
    weight: float
    band: ConsistencyBand | None = None

    def to_frame(self) -> pd.DataFrame:
        """Return the bin table with ``low`` and ``high`` columns (and the band's).

        Returns
        -------
        pandas.DataFrame
            ``bin, lower, upper, count, mean_score, mean_label, gap, low, high``, then
            ``band_low, band_high, outside_band`` when the band was computed.
        """
        frame = self.bins.to_frame()
        frame["low"] = self.low
        frame["high"] = self.high
        if self.band is not None:
            frame["band_low"] = self.band.low
            frame["band_high"] = self.band.high
            frame["outside_band"] = self.band.outside(self.bins.mean_label)
        return frame


@dataclass(frozen=True, eq=False)
class ReliabilityAnalysis:
    """Everything the Reliability page, the metrics command and reports show.

    Attributes
    ----------
    config : AnalysisConfig
        The options that produced it.
    headline : CalibrationErrorResult
        ``config.estimator`` on the data.
    headline_interval : BootstrapResult or None
        Its bootstrap interval (None when ``n_resamples`` is 0 or it is skipped).
    components : tuple of ComponentTable
        One bin table per component (the headline's bins for a binned headline,
        otherwise the config's binning); empty for the canonical lens.
    metrics : pandas.DataFrame
        Columns ``metric, label, value, low, high, note``: every registered binned
        estimator supporting the config's lens, norm and binning, the headline if it
        is not binned, the kernel estimators supporting the lens (point estimates: their
        bootstrap costs a kernel pass per resample, so their intervals are on the
        Estimators page; quadratic ones only up to ``QUADRATIC_BOOTSTRAP_MAX_N`` rows),
        then accuracy, Brier score and log loss.
    intervals : dict
        ``metric -> BootstrapResult`` (all on the same resamples).
    brier_decomposition : BrierDecomposition or None
        Reliability, resolution and uncertainty of the Brier score on the config's
        binning (see :func:`core.stats.scores.brier_decomposition`).
    n : int
        Number of rows.
    class_names : tuple of str
        Class names.
    binary : bool
        Whether the predictions are binary (one P(y=1) column; the Brier score's
        convention, see :mod:`core.stats.scores`).
    """

    config: AnalysisConfig
    headline: CalibrationErrorResult
    headline_interval: BootstrapResult | None
    components: tuple[ComponentTable, ...]
    metrics: pd.DataFrame
    intervals: dict[str, BootstrapResult] = field(default_factory=dict)
    brier_decomposition: BrierDecomposition | None = None
    n: int = 0
    class_names: tuple[str, ...] = ()
    binary: bool = False

    def to_record(self) -> dict[str, Any]:
        """Return every number as a JSON-ready record (see :mod:`core.base.records`).

        Returns
        -------
        dict
            ``headline`` (estimator, lens, binning, ``n_bins``, norm, value, interval,
            per-component values, details), ``metrics`` (one dict per row of
            :attr:`metrics`), ``bins`` (per component: name, weight, bin table rows) and
            ``brier_decomposition`` (its terms, or None).
        """
        head = self.headline
        boot = self.headline_interval
        return {
            "headline": {
                "estimator": head.estimator,
                "lens": head.lens,
                "binning": head.binning,
                "n_bins": head.n_bins,
                "norm": norm_key(head.norm),
                "value": head.value,
                "low": None if boot is None else boot.confidence_interval.low,
                "high": None if boot is None else boot.confidence_interval.high,
                "components": list(head.components),
                "component_values": list(head.component_values),
                "details": head.details,
            },
            "metrics": self.metrics.to_dict(orient="records"),
            "bins": [
                {"component": c.name, "weight": c.weight, "rows": c.to_frame().to_dict("records")}
                for c in self.components
            ],
            "brier_decomposition": (
                None if self.brier_decomposition is None else self.brier_decomposition.to_record()
            ),
        }

    @property
    def bin_table(self) -> pd.DataFrame:
        """All component bin tables in one frame (``component`` column first).

        Returns
        -------
        pandas.DataFrame
            The concatenated :meth:`ComponentTable.to_frame` tables.
        """
        frames = []
        for comp in self.components:
            frame = comp.to_frame()
            frame.insert(0, "component", comp.name)
            frames.append(frame)
        if not frames:
            return pd.DataFrame(columns=["component", "bin"])
        return pd.concat(frames, ignore_index=True)


def brier_caption(analysis: ReliabilityAnalysis) -> str:
    """One sentence on the Brier decomposition of an analysis: its bins and its identity."""
    d = analysis.brier_decomposition
    where = "the P(y=1) bins" if analysis.binary else "each class's bins, summed over classes"
    return (
        f"Murphy's decomposition on {where} ({d.binning}, {d.n_bins} bins): Brier = REL − RES "
        "+ UNC + within-bin variance + within-bin covariance, exactly; the two within-bin "
        "terms (Stephenson, Coelho & Jolliffe 2008) vanish when every bin holds one score."
    )


def estimate_note(call: EstimatorCall, result: CalibrationErrorResult, seed: int) -> str:
    """Return the metrics table's note of one estimate (its lens, b*, signed values, ...)."""
    d = result.details
    # a kernel number says its lens and what it measures (binned rows share the config's)
    parts = [] if call.info.binned else [f"lens {call.lens}", call.info.quantity]
    if "b_star" in d:
        parts.append(f"b* = {d['b_star']}")
    if "signed_square" in d:
        parts.append(f"signed square {d['signed_square']:.3g}")
    if "signed_value" in d:
        parts.append(f"signed value {d['signed_value']:.3g}")
    small = d.get("small_bins")
    if small is not None and sum(np.atleast_1d(small)) > 0:
        parts.append(f"{int(np.sum(small))} one-point bin(s) skipped")
    if "note" in d:
        parts.append(str(d["note"]))
    if call.info.random(call.norm):
        parts.append(f"seed {seed}")
    if not call.info.binned and "bandwidth" in d:
        bw = np.atleast_1d(d["bandwidth"])
        parts.append("bandwidth σ = " + ", ".join(f"{v:.4g}" for v in bw))
    return "; ".join(p for p in parts if p)  # an estimator may state no quantity


def bootstrap_mode(config: AnalysisConfig, n: int, n_components: int) -> str:
    """Return ``"exact"`` or ``"cells"``: how :func:`analyze` bootstraps (``config.bootstrap``).

    Parameters
    ----------
    config : AnalysisConfig
        The options.
    n : int
        Rows.
    n_components : int
        Components of the lens.

    Returns
    -------
    str
        The mode; ``"auto"`` is exact up to :data:`EXACT_BOOTSTRAP_WORK` row-resamples.
    """
    if config.bootstrap != "auto":
        return config.bootstrap
    work = n * config.n_resamples * n_components
    return "exact" if work <= EXACT_BOOTSTRAP_WORK else "cells"


def cell_intervals(
    views: BinnedViews,
    binary: bool,
    config: AnalysisConfig,
    calls: Mapping[str, EstimatorCall],
    known: Mapping[str, float],
    notes: dict[str, str],
    *,
    scores: bool = True,
) -> dict[str, BootstrapResult]:
    """Intervals from the cell bootstrap (:mod:`core.inference.cells`) on the config's binned view.

    Estimators it cannot resample (they need the rows of each bin) get a note saying to ask
    for the exact bootstrap.

    Parameters
    ----------
    views : BinnedViews
        The data's views.
    binary : bool
        Whether the predictions are binary (the Brier score's convention).
    config : AnalysisConfig
        The options (lens, binning, resamples, level, seed).
    calls : mapping
        Key → estimator to bootstrap.
    known : mapping
        Key → the value on the full sample.
    notes : dict
        Key → note, extended in place.
    scores : bool, default=True
        Also bootstrap accuracy, Brier score and log loss.

    Returns
    -------
    dict
        Key → :class:`~core.stats.intervals.BootstrapResult` with path ``"cells"``.
    """
    view = views.binned(
        config.lens,
        config.binning,
        config.n_bins,
        config.tie_policy,
        convention=config.convention,
    )
    # every score's rows, shown or not: the draws are the same on every surface
    rows = _ScoreRows(views.probs, views.labels, binary)
    return intervals_from_cells(cells_of(view, rows), config, calls, known, notes, scores=scores)


class _ScoreRows(Mapping[str, np.ndarray]):
    """Every score's per-row values, computed when read and not kept.

    The cells add up one score's rows at a time, so at 10⁷ rows three n-sized arrays are
    not held at once.
    """

    def __init__(self, probs: np.ndarray, labels: np.ndarray, binary: bool) -> None:
        self._probs, self._labels, self._binary = probs, labels, binary

    def __getitem__(self, name: str) -> np.ndarray:
        return SCORES.get(name).rows(self._probs, self._labels, binary=self._binary)

    def __iter__(self) -> Iterator[str]:
        return iter(SCORES.names())

    def __len__(self) -> int:
        return len(SCORES.names())


def intervals_from_cells(
    cells: Any,
    config: AnalysisConfig,
    calls: Mapping[str, EstimatorCall],
    known: Mapping[str, float],
    notes: dict[str, str],
    *,
    scores: bool = True,
) -> dict[str, BootstrapResult]:
    """Intervals from the cell bootstrap of given cells (see :func:`cell_intervals`).

    Parameters
    ----------
    cells : core.inference.cells.CellStats
        The cells of the config's binned view, with every score's row sums: every score is
        drawn, shown or not, so the statistics' resamples are those of every other surface
        (:func:`core.inference.cells.analysis_draws`).
    config, calls, known, notes, scores
        As in :func:`cell_intervals` (``scores``: return the scores' intervals too).

    Returns
    -------
    dict
        Key → :class:`~core.stats.intervals.BootstrapResult` with path ``"cells"``.
    """
    stats: dict[str, Any] = {}
    for key, call in calls.items():
        if (
            supports(call.info, call.norm)
            and call.binning == cells.binning
            and call.lens == cells.lens
        ):
            stats[key] = call
        else:
            extra = "no interval at this n with the fast bootstrap: choose the exact bootstrap"
            notes[key] = "; ".join(filter(None, [notes.get(key, ""), extra]))
    dists = analysis_draws(cells, stats, n_resamples=config.n_resamples, seed=config.seed)
    if not scores:
        dists = {key: d for key, d in dists.items() if key in stats}
    method = config.bootstrap_interval
    truths: dict[str, float] = {}
    if pivots(method):
        # a truth these cells can resample can be read off them (the plug-in error)
        truths = truth_values(
            {k: call for k, call in calls.items() if k in dists},
            known,
            lambda call: grouped_values([cells], call, config.seed)[1],
        )
    return {
        key: bootstrap_result(
            known[key],
            dist,
            config.confidence_level,
            config.seed,
            statistic=key,
            path="cells",
            method=method,
            truth=truths.get(key),
            support=support_of(stats.get(key, key)),  # a score: its name
        )
        for key, dist in dists.items()
    }


def analyze(
    data: Any, config: Any = None, more: AnalysisConfig | None = None, *, progress: Any = None
) -> ReliabilityAnalysis:
    """Run the reliability analysis of predictions under one config.

    Every lens component is binned once (:class:`core.stats.binned_view.BinnedViews`), and
    the estimators, the bin table, the bootstrap, the consistency band and the Brier
    decomposition all read those bins.

    Parameters
    ----------
    data : Predictions or (probs, labels)
        Loaded predictions (:func:`core.load_predictions`), or a pair of arrays:
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities and class indices ``0..K-1``
        (see :func:`core.data.as_predictions`). ``analyze(probs, labels[, config])`` takes
        the two arrays as :func:`core.calibration_error` does.
    config : AnalysisConfig, optional
        The options; default ``AnalysisConfig()`` on the data's default lens (the binary lens
        for two classes, :func:`core.stats.lenses.data_lens`), as every surface reads them.
    more : AnalysisConfig, optional
        The config of ``analyze(probs, labels, config)``.
    progress : callable, optional
        ``progress(fraction, message)`` during an exact bootstrap.

    Returns
    -------
    ReliabilityAnalysis
        Headline estimate, per-component bin tables with per-bin intervals, and the
        metrics table with bootstrap intervals (all metrics share the resamples drawn
        from ``config.seed``).

    Raises
    ------
    DataError
        For invalid predictions or labels.
    ConfigError
        For options incompatible with the data (e.g. the binary lens on 3 classes).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=500); y = (rng.uniform(size=500) < p).astype(int)
    >>> a = analyze((p, y), AnalysisConfig(lens="binary", n_resamples=50))
    >>> list(a.metrics.metric[:2]), a.metrics.columns.tolist()[:3]
    (['plugin', 'label-binned'], ['metric', 'label', 'value'])
    """
    if config is not None and not isinstance(config, AnalysisConfig | Mapping | str):
        data, config = (data, config), more  # analyze(probs, labels[, config])
    elif more is not None:
        raise ConfigError("Give the config once: analyze(data, config) or analyze(p, y, config).")
    pred = as_predictions(data)
    if config is None:
        config = AnalysisConfig(lens=data_lens(pred.n_classes))
    config = check_config(config)
    p, y, binary = pred.probs, pred.labels, pred.binary
    n = p.shape[0]
    names = tuple(pred.class_names)
    views = BinnedViews(p, y, names, config.class_weights)
    opts = {**config.calibration_options(), "class_names": names}

    calls = _calls(config, opts)
    points = _POINTS.get_or_compute(
        (pred.digest, dataclasses.replace(config, n_resamples=0)),
        lambda: _point_estimates(views, config, calls, opts, binary, pred.digest),
    )
    values, scores = points.values, points.scores
    kernel_values, kernel_notes = points.kernel_values, points.kernel_notes
    notes = dict(points.notes)  # the intervals add their notes to a copy
    headline = points.headline
    specs: dict[str, tuple[str, dict[str, Any]]] = {}
    for name in values:
        if calls[name].info.quadratic and n > QUADRATIC_BOOTSTRAP_MAX_N:
            extra = f"no interval: quadratic cost at n > {QUADRATIC_BOOTSTRAP_MAX_N:,}"
            notes[name] = "; ".join(filter(None, [notes[name], extra]))
            continue
        specs[name] = (name, opts)
    for name in SCORES.names():
        specs[name] = (name, {})
    intervals: dict[str, BootstrapResult] = {}
    known = {**values, **scores}
    kernel_only = LENSES.get(config.lens).kernel_only
    mode = "exact" if kernel_only else bootstrap_mode(config, n, len(views.lens(config.lens).names))
    if config.n_resamples == 0 or mode != "exact":
        # bins only an estimator's own value read (mcb's discrete bins, one a distinct
        # score: 400 MB at 10⁷ rows) are let go; only the exact bootstrap reads them again
        for call in calls.values():
            if call.binning != config.binning:
                views.forget(call.lens, call.binning, call.n_bins, call.tie_policy)
    if config.n_resamples > 0 and mode == "exact":
        intervals = bootstrap_many(
            None,
            None,
            specs,
            n_resamples=config.n_resamples,
            confidence_level=config.confidence_level,
            seed=config.seed,
            views=views,
            binary=binary,
            values=known,
            progress=progress,
            method=config.bootstrap_interval,
            truths=_truths(config, calls, known, views),
        )
    elif config.n_resamples > 0:
        intervals = cell_intervals(views, binary, config, calls, known, notes)

    return assemble_analysis(
        config,
        headline=headline,
        values=values,
        kernel_values=kernel_values,
        kernel_notes=kernel_notes,
        scores=scores,
        intervals=intervals,
        notes=notes,
        components=points.components,
        brier_decomposition=points.brier_decomposition,
        n=n,
        class_names=names,
        binary=binary,
    )


def assemble_analysis(
    config: AnalysisConfig,
    *,
    headline: CalibrationErrorResult,
    values: Mapping[str, float],
    kernel_values: Mapping[str, float],
    kernel_notes: Mapping[str, str],
    scores: Mapping[str, float],
    intervals: Mapping[str, BootstrapResult],
    notes: Mapping[str, str],
    components: tuple[ComponentTable, ...],
    brier_decomposition: Any,
    n: int,
    class_names: tuple[str, ...],
    binary: bool,
) -> ReliabilityAnalysis:
    """Return the analysis from its gathered estimates, intervals and bin tables.

    The last step of every engine's analysis: :func:`analyze` in memory and
    :func:`core.stream.analysis.analyze_stream` on a stream or on Dask gather the numbers
    their own way and are assembled here, so their results have one shape.

    Parameters
    ----------
    config : AnalysisConfig
        The options of the analysis.
    headline : CalibrationErrorResult
        The estimate of ``config.estimator``.
    values, kernel_values, scores : mapping
        Metric name → value: the estimators with intervals, the kernel estimators (no
        interval on the page's first pass), the scores; the metrics table lists them in
        this order.
    kernel_notes, notes : mapping
        Metric name → the note beside it.
    intervals : mapping
        Metric name → bootstrap result (absent: no interval).
    components : tuple of ComponentTable
        The bin table of each lens component.
    brier_decomposition : object
        The Brier score's decomposition on the analysis' bins.
    n : int
        Rows analysed.
    class_names : tuple of str
        The classes.
    binary : bool
        Whether the predictions are binary.

    Returns
    -------
    ReliabilityAnalysis
        The analysis.
    """
    rows = [metric_row(k, ESTIMATORS.get(k).label, v, intervals, notes) for k, v in values.items()]
    rows += [
        metric_row(k, ESTIMATORS.get(k).label, v, {}, kernel_notes)
        for k, v in kernel_values.items()
    ]
    rows += [metric_row(k, SCORES.get(k).label, v, intervals, notes) for k, v in scores.items()]
    return ReliabilityAnalysis(
        config=config,
        headline=headline,
        headline_interval=intervals.get(config.estimator),
        components=components,
        metrics=pd.DataFrame(rows, columns=METRIC_COLUMNS),
        intervals=dict(intervals),
        brier_decomposition=brier_decomposition,
        n=n,
        class_names=class_names,
        binary=binary,
    )


def _truths(
    config: AnalysisConfig,
    calls: Mapping[str, EstimatorCall],
    known: Mapping[str, float],
    views: BinnedViews,
) -> dict[str, float] | None:
    """Return the basic interval's pivots of the metrics table's estimators (None: percentile)."""
    if not pivots(config.bootstrap_interval):
        return None
    mine = {k: call for k, call in calls.items() if k in known}
    return truth_values(mine, known, lambda call: call.run_on(views, config.seed).value)


def _calls(config: AnalysisConfig, opts: Mapping[str, Any]) -> dict[str, EstimatorCall]:
    """Return the estimators of the metrics table: the lens and norm's ℓp ones, headline first."""
    conv = CONVENTIONS.get(config.convention)
    calls = {
        name: EstimatorCall.make(name, **opts, convention=config.convention)
        for name in ESTIMATORS.lp_for(lens=config.lens, norm=config.norm, binning=config.binning)
        if conv.native or conv.function(name, config.norm, config.binning)
    }
    if config.estimator not in calls:
        calls = {config.estimator: EstimatorCall.make(config.estimator, **opts), **calls}
    return calls


@dataclass(frozen=True, eq=False)
class _Points:
    """What :func:`analyze` computes without resampling: estimates, notes, tables.

    Only the headline keeps its result object; the other estimators keep their value (a
    result can hold large per-score tables, such as the PAV bins of ``mcb``).
    """

    values: dict[str, float]
    headline: CalibrationErrorResult
    notes: dict[str, str]
    kernel_values: dict[str, float]
    kernel_notes: dict[str, str]
    scores: dict[str, float]
    components: tuple[Any, ...]
    brier_decomposition: Any


def _point_estimates(
    views: BinnedViews,
    config: AnalysisConfig,
    calls: Mapping[str, EstimatorCall],
    opts: Mapping[str, Any],
    binary: bool,
    digest: str,
) -> _Points:
    values, notes, results = {}, {}, {}
    # values that do not depend on the number of bins are kept across a change of it
    any_bins = dataclasses.replace(config, n_resamples=0, n_bins=AnalysisConfig.n_bins)
    for name, call in calls.items():
        if name == config.estimator or call.info.reads_n_bins:
            results[name] = call.result(call.run_on(views, config.seed))
            values[name] = results[name].value
            notes[name] = estimate_note(call, results[name], config.seed)
        else:
            values[name], notes[name] = _UNBINNED.get_or_compute(
                (digest, name, any_bins),
                lambda call=call: _value_and_note(call, views, config.seed),
            )
    notes["brier"] = BRIER_CONVENTIONS[binary]
    kernel_values, kernel_notes = _kernel_estimates(
        views, config, opts, exclude=values, kept=(digest, any_bins)
    )
    p, y = views.probs, views.labels
    scores = _UNBINNED.get_or_compute(
        (digest, "scores", binary),
        lambda: {name: SCORES.get(name).value(p, y, binary=binary) for name in SCORES.names()},
    )
    return _Points(
        values=values,
        headline=results[config.estimator],
        notes=notes,
        kernel_values=kernel_values,
        kernel_notes=kernel_notes,
        scores=scores,
        components=_component_tables(views, config, results[config.estimator]),
        brier_decomposition=decompose_brier(
            views, binary, config.binning, config.n_bins, config.tie_policy, scores["brier"]
        ),
    )


def _value_and_note(call: EstimatorCall, views: BinnedViews, seed: int) -> tuple[float, str]:
    result = call.result(call.run_on(views, seed))
    return result.value, estimate_note(call, result, seed)


#: Values and notes of estimators that do not read the number of bins (``reads_n_bins``), by
#: data digest, name and config with the default ``n_bins``: a change of bins reuses them.
_UNBINNED = Memo(256)

#: The point estimates, notes, bin tables and Brier decomposition of the last few analyses, by
#: data digest and config with ``n_resamples=0``: a page analyses the same rows twice (without
#: intervals for a quick first view, then with them), and only the intervals depend on the
#: resamples, so the rest is computed once.
_POINTS = Memo(8)


def check_config(config: AnalysisConfig | None) -> AnalysisConfig:
    """Return the config, or the default one for None (anything else is refused)."""
    config = AnalysisConfig() if config is None else config
    if not isinstance(config, AnalysisConfig):
        raise ConfigError("config must be an AnalysisConfig (see AnalysisConfig.from_dict).")
    return config


def kernel_rows(n: int, config: AnalysisConfig) -> np.ndarray | None:
    """Return the rows kernel estimates run on: None for all, else a seeded subsample.

    Above ``config.kernel_sample`` rows (0: never) the kernel estimators run on that many
    rows drawn without replacement by ``default_rng(seed)`` and kept in row order, so the
    linear estimator's pairs follow the data's order.
    """
    m = config.kernel_sample
    if m == 0 or n <= m:
        return None
    return np.sort(np.random.default_rng(config.seed).choice(n, size=m, replace=False))


def _kernel_estimates(
    views: BinnedViews,
    config: AnalysisConfig,
    opts: Mapping[str, Any],
    exclude: Mapping[str, Any],
    kept: tuple[str, AnalysisConfig],
) -> tuple[dict[str, float], dict[str, str]]:
    """Point estimates of the kernel estimators on the rows :func:`kernel_rows` picks.

    Those that do not read the number of bins (``reads_n_bins``) are kept in ``_UNBINNED``
    under ``kept`` (the data digest and the config with the default ``n_bins``).
    """
    n = views.labels.shape[0]
    rows = kernel_rows(n, config)

    def compute(only: Any = None) -> tuple[dict[str, float], dict[str, str]]:
        if rows is None:
            p, y = views.probs, views.labels
        else:
            p, y = views.probs[rows], views.labels[rows]
        every_row = (views.probs, views.labels)
        return kernel_estimates(p, y, n, config, opts, exclude, every_row=every_row, only=only)

    unbinned = [i.name for i in ESTIMATORS if not i.reads_n_bins]
    values, notes = _UNBINNED.get_or_compute((*kept, "kernel"), lambda: compute(unbinned))
    binned = [
        i.name for i in ESTIMATORS if i.reads_n_bins and not i.lp_scale and config.lens in i.lenses
    ]
    if binned:
        more, more_notes = compute(binned)
        # in the registry's order, as one call gives them
        values = {i.name: (values | more)[i.name] for i in ESTIMATORS if i.name in values | more}
        notes = {**notes, **more_notes}
    return values, notes


def kernel_estimates(
    p: np.ndarray,
    y: np.ndarray,
    n: int,
    config: AnalysisConfig,
    opts: Mapping[str, Any],
    exclude: Mapping[str, Any],
    every_row: tuple[np.ndarray, np.ndarray] | None = None,
    only: Sequence[str] | None = None,
) -> tuple[dict[str, float], dict[str, str]]:
    """Point estimates of the kernel estimators that support the config's lens.

    Experimental estimators (:attr:`EstimatorInfo.experimental`) are left out unless they
    are the headline: they are computed on the Estimators page.

    Parameters
    ----------
    p, y : numpy.ndarray
        The rows they run on: all ``n`` rows, or the seeded subsample of
        :func:`kernel_rows` (which the note then says).
    n : int
        Rows of the data.
    config : AnalysisConfig
        The options.
    opts : mapping
        Estimator options (:meth:`AnalysisConfig.calibration_options` and class names).
    exclude : mapping
        Estimators already computed.
    every_row : (probs, labels), optional
        All ``n`` rows, for the estimators that read every row
        (:attr:`EstimatorInfo.subsample` False); without it they run on ``p, y`` too.
    only : sequence of str, optional
        Run only these of them (default: all).

    Returns
    -------
    values, notes : dict
        Name → value (NaN, with the reason as its note, where an estimator cannot run on
        this data: a zero median distance, ...), and name → note.
    """
    values: dict[str, float] = {}
    notes: dict[str, str] = {}
    m = y.shape[0]
    where = (
        "" if m == n else f"on a seeded subsample of {m:,} of the {n:,} rows (seed {config.seed}); "
    )
    for info in ESTIMATORS:
        if info.lp_scale or config.lens not in info.lenses or info.name in exclude:
            continue
        if only is not None and info.name not in only:
            continue
        if info.experimental:  # costly and not settled: on the Estimators page, or as headline
            continue
        name = info.name
        on_all = every_row is not None and not info.subsample
        try:
            call = EstimatorCall.make(name, **opts)
            est = call.run(*(every_row if on_all else (p, y)), config.seed)
            values[name] = est.value
        except CalibscopeError as exc:
            values[name], notes[name] = math.nan, f"lens {config.lens}; {exc}"
            continue
        what = f"{'' if on_all else where}intervals on the Estimators page"
        rule = str(est.details.get("bandwidth_rule", ""))
        if bandwidth_fell_back(rule):
            what = f"bandwidth: {rule}; {what}"
        notes[name] = "; ".join(p for p in (f"lens {config.lens}", info.quantity, what) if p)
    return values, notes


def metric_row(
    name: str,
    label: str,
    value: float,
    intervals: Mapping[str, BootstrapResult],
    notes: Mapping[str, str],
) -> dict[str, Any]:
    """Return one row of the metrics table: value, bootstrap interval and note."""
    boot = intervals.get(name)
    low, high = (
        (boot.confidence_interval.low, boot.confidence_interval.high) if boot else (np.nan, np.nan)
    )
    return {
        "metric": name,
        "label": label,
        "value": float(value),
        "low": float(low),
        "high": float(high),
        "note": with_outside_note(
            notes.get(name, ""), value, low, high, boot.method if boot else "percentile"
        ),
    }


def _component_tables(
    views: BinnedViews, config: AnalysisConfig, headline: CalibrationErrorResult
) -> tuple[ComponentTable, ...]:
    """Return the bin tables: the headline's bins for a binned headline, else the config's binning."""
    if LENSES.get(config.lens).kernel_only:
        return ()
    view = views.binned(
        config.lens,
        config.binning,
        config.n_bins,
        config.tie_policy,
        convention=config.convention,
    )
    comps = list(view.components)
    if "b_star" in headline.details:  # the sweep's own number of bins, per component
        b = headline.details["b_star"]
        stars = b if isinstance(b, tuple) else (b,)
        comps = [comp.rebinned(int(s)) for comp, s in zip(comps, stars, strict=True)]
    banded = config.consistency_band and all(c.n_bins <= CONSISTENCY_BAND_MAX_BINS for c in comps)
    bands: list[BandStats | None] = [None] * len(comps)
    if banded:  # one component per thread: their laws are independent
        bands = map_ordered(
            lambda c: BandStats.of(c.scores, c.index, c.n_bins, keep_rows=True),
            comps,
            entries=views.labels.shape[0] * len(comps),
        )
    return component_tables(
        [c.name for c in comps], [c.stats for c in comps], bands, view.weights, config
    )


def component_tables(
    names: Sequence[str],
    stats: Sequence[BinStats],
    bands: Sequence[BandStats | None],
    weights: Sequence[float],
    config: AnalysisConfig,
) -> tuple[ComponentTable, ...]:
    """Return the bin tables of the components: per-bin intervals and consistency bands.

    Parameters
    ----------
    names, stats, weights
        Each component's name, bins and weight.
    bands : sequence of BandStats or None
        What each component's band is drawn from (:class:`core.stats.consistency_bands.BandStats`).
    config : AnalysisConfig
        The options (interval method, level, band, seed).

    Returns
    -------
    tuple of ComponentTable
        One per component.
    """
    # its own generator from the one seed, so the bootstrap's draws stay as they were
    band_rng = np.random.default_rng(config.seed)
    tables = []
    for name, st, band_stats, weight in zip(names, stats, bands, weights, strict=True):
        low, high = bin_intervals(
            st.counts,
            st.label_sums,
            method=config.interval_method,
            confidence_level=config.confidence_level,
        )
        band = None
        if config.consistency_band and band_stats is not None:
            band = _band(band_stats, config, band_rng)
        tables.append(ComponentTable(name, st, low, high, float(weight), band))
    return tuple(tables)


def _band(
    stats: BandStats, config: AnalysisConfig, rng: np.random.Generator
) -> ConsistencyBand | None:
    """Return the consistency band on exactly the component's bins (None above the bin limit)."""
    if stats.n_bins > CONSISTENCY_BAND_MAX_BINS:
        return None
    band = stats.band(CONSISTENCY_BAND_RESAMPLES, config.confidence_level, rng)
    return dataclasses.replace(band, seed=config.seed)
