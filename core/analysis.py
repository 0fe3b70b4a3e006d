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
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core._validation import check_norm, check_probs_labels
from core.binning import (
    BINNINGS,
    BinStats,
    bin_indices,
    bin_stats,
    check_n_bins,
    check_tie_policy,
)
from core.calibration import CalibrationErrorResult, calibration_error
from core.consistency_bands import ConsistencyBand, consistency_band
from core.errors import CalibscopeError, ConfigError
from core.estimators import ESTIMATORS, lens_view
from core.intervals import (
    INTERVAL_METHODS,
    BootstrapResult,
    bin_intervals,
    bootstrap_many,
    check_level,
    check_seed,
)
from core.lenses import LENSES
from core.scores import SCORES, BrierDecomposition, brier_decomposition

#: Columns of :attr:`ReliabilityAnalysis.metrics`.
METRIC_COLUMNS = ["metric", "label", "value", "low", "high", "note"]

#: Above this many rows, quadratic-cost estimators get no bootstrap interval.
QUADRATIC_BOOTSTRAP_MAX_N = 5000

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


def _norm_to_text(norm: float) -> str:
    return "inf" if math.isinf(norm) else str(int(norm))


def _whole(name: str, value: object, minimum: int) -> int:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ConfigError(f"{name} must be a whole number ≥ {minimum}; got {value!r}.")
    return int(value)


@dataclass(frozen=True)
class AnalysisConfig:
    """Every option of a reliability analysis (frozen, hashable, serialisable).

    Attributes
    ----------
    lens : str, default="top-label"
        A name in :data:`core.lenses.LENSES`.
    binning : str, default="equal-width"
        A name in :data:`core.binning.BINNINGS`.
    n_bins : int, default=15
        Number of bins (≥ 1).
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
        Bootstrap resamples per metric; 0 means no bootstrap intervals.
    level : float, default=0.95
        Confidence level of the bootstrap and per-bin intervals.
    interval_method : str, default="wilson"
        Per-bin interval, a name in :data:`core.intervals.INTERVAL_METHODS`.
    class_weights : tuple of float, optional
        Classwise aggregation weights (stored normalised to sum 1); None means uniform.
    consistency_band : bool, default=True
        Add each component's consistency band (:func:`core.consistency_bands.
        consistency_band`, ``CONSISTENCY_BAND_RESAMPLES`` outcome redraws at ``level``,
        seeded by ``seed``); strings such as ``"false"`` are accepted.

    Raises
    ------
    ConfigError
        On construction, for unknown names, out-of-range values, or an estimator that
        does not support the lens or norm.
    """

    lens: str = "top-label"
    binning: str = "equal-width"
    n_bins: int = 15
    norm: float = 1.0
    estimator: str = "plugin"
    tie_policy: str = "split"
    seed: int = 0
    n_resamples: int = 1000
    level: float = 0.95
    interval_method: str = "wilson"
    class_weights: tuple[float, ...] | None = None
    consistency_band: bool = True

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
        put("n_bins", check_n_bins(_whole("n_bins", self.n_bins, 1)))
        put("norm", check_norm(self.norm))
        put("tie_policy", check_tie_policy(self.tie_policy))
        seed = check_seed(_whole("seed", self.seed, 0))
        put("seed", int(seed))  # check_seed returns an int for int input
        put("n_resamples", _whole("n_resamples", self.n_resamples, 0))
        level = self.level
        if isinstance(level, str):
            try:
                level = float(level)
            except ValueError:
                raise ConfigError(f"level must be a number such as 0.95; got {level!r}.") from None
        put("level", check_level(level))
        put("consistency_band", _flag("consistency_band", self.consistency_band))
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
        meta = ESTIMATORS.get(self.estimator).meta
        if self.lens not in meta.get("lenses", ()):
            raise ConfigError(
                f"Estimator {self.estimator!r} does not support the {self.lens!r} lens; "
                f"estimators for it: {', '.join(ESTIMATORS.names(lenses=self.lens)) or 'none'}."
            )
        if self.norm not in meta.get("norms", ()):
            supported = ", ".join(_norm_to_text(v) for v in meta.get("norms", ()))
            raise ConfigError(
                f"Estimator {self.estimator!r} does not support norm {_norm_to_text(self.norm)}; "
                f"use one of: {supported}."
            )
        allowed = meta.get("binnings")
        if meta.get("binned") and allowed is not None and self.binning not in allowed:
            raise ConfigError(
                f"Estimator {self.estimator!r} bins with {' or '.join(allowed)}, "
                f"not {self.binning!r}."
            )

    def to_dict(self) -> dict[str, Any]:
        """Return the options as JSON-ready values (``norm`` as ``"1"``, ``"2"`` or ``"inf"``).

        Returns
        -------
        dict
            One entry per field; ``AnalysisConfig.from_dict(c.to_dict()) == c``.
        """
        out = asdict(self)
        out["norm"] = _norm_to_text(self.norm)
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

    def calibration_options(self) -> dict[str, Any]:
        """Return the keyword options of :func:`core.calibration.calibration_error`.

        Returns
        -------
        dict
            ``binning, n_bins, norm, lens, tie_policy, class_weights``.
        """
        return {
            "binning": self.binning,
            "n_bins": self.n_bins,
            "norm": self.norm,
            "lens": self.lens,
            "tie_policy": self.tie_policy,
            "class_weights": self.class_weights,
        }


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
        binning (see :func:`core.scores.brier_decomposition`).
    n : int
        Number of rows.
    class_names : tuple of str
        Class names.
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


def _note(name: str, result: CalibrationErrorResult, seed: int) -> str:
    d = result.details
    parts = []
    if "b_star" in d:
        parts.append(f"b* = {d['b_star']}")
    if "signed_square" in d:
        parts.append(f"signed square {d['signed_square']:.3g}")
    if "signed_value" in d:
        parts.append(f"signed value {d['signed_value']:.3g}")
    small = d.get("small_bins")
    if small is not None and sum(np.atleast_1d(small)) > 0:
        parts.append(f"{int(np.sum(small))} one-point bin(s) skipped")
    if ESTIMATORS.get(name).meta.get("random"):
        parts.append(f"seed {seed}")
    return "; ".join(parts)


def _binned_estimators(config: AnalysisConfig) -> list[str]:
    out = []
    for name in ESTIMATORS.names(binned=True, lenses=config.lens, norms=config.norm):
        allowed = ESTIMATORS.get(name).meta.get("binnings")
        if allowed is None or config.binning in allowed:
            out.append(name)
    return out


def analyze(
    probs: ArrayLike,
    labels: ArrayLike,
    config: AnalysisConfig | None = None,
    *,
    class_names: tuple[str, ...] | None = None,
) -> ReliabilityAnalysis:
    """Run the reliability analysis of predictions under one config.

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like
        Class indices ``0..K-1``.
    config : AnalysisConfig, optional
        The options; default ``AnalysisConfig()``.
    class_names : tuple of str, optional
        Class names (component names of the classwise lens).

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
    >>> a = analyze(p, y, AnalysisConfig(lens="binary", n_resamples=50))
    >>> list(a.metrics.metric[:2]), a.metrics.columns.tolist()[:3]
    (['plugin', 'label-binned'], ['metric', 'label', 'value'])
    """
    config = AnalysisConfig() if config is None else config
    if not isinstance(config, AnalysisConfig):
        raise ConfigError("config must be an AnalysisConfig (see AnalysisConfig.from_dict).")
    is_binary = np.ndim(probs) == 1 or (np.ndim(probs) == 2 and np.shape(probs)[1] == 1)
    p, y = check_probs_labels(probs, labels)
    p_in = np.ascontiguousarray(p[:, 1]) if is_binary else p
    n, k = p.shape
    names = tuple(class_names) if class_names is not None else tuple(str(i) for i in range(k))
    opts = {**config.calibration_options(), "class_names": names}

    headline = calibration_error(p_in, y, estimator=config.estimator, seed=config.seed, **opts)

    results: dict[str, CalibrationErrorResult] = {}
    for name in _binned_estimators(config):
        results[name] = (
            headline
            if name == config.estimator
            else calibration_error(p_in, y, estimator=name, seed=config.seed, **opts)
        )
    if config.estimator not in results:
        results = {config.estimator: headline, **results}

    notes = {name: _note(name, res, config.seed) for name, res in results.items()}
    kernel_values, kernel_notes = _kernel_estimates(p_in, y, config, opts, exclude=results)
    specs: dict[str, tuple[str, dict[str, Any]]] = {}
    for name in results:
        meta = ESTIMATORS.get(name).meta
        if meta.get("quadratic") and n > QUADRATIC_BOOTSTRAP_MAX_N:
            extra = f"no interval: quadratic cost at n > {QUADRATIC_BOOTSTRAP_MAX_N:,}"
            notes[name] = "; ".join(filter(None, [notes[name], extra]))
            continue
        specs[name] = (name, opts)
    for name in SCORES.names():
        specs[name] = (name, {})
    intervals: dict[str, BootstrapResult] = {}
    if config.n_resamples > 0:
        intervals = bootstrap_many(
            p_in,
            y,
            specs,
            n_resamples=config.n_resamples,
            level=config.level,
            seed=config.seed,
        )

    rows = []
    for name, res in results.items():
        rows.append(_metric_row(name, ESTIMATORS.get(name).label, res.value, intervals, notes))
    for name, value in kernel_values.items():
        rows.append(_metric_row(name, ESTIMATORS.get(name).label, value, {}, kernel_notes))
    for name in SCORES.names():
        value = SCORES.get(name).func(p_in, y)
        rows.append(_metric_row(name, SCORES.get(name).label, value, intervals, {}))
    metrics = pd.DataFrame(rows, columns=METRIC_COLUMNS)

    return ReliabilityAnalysis(
        config=config,
        headline=headline,
        headline_interval=intervals.get(config.estimator),
        components=_component_tables(p, y, config, headline, names),
        metrics=metrics,
        intervals=intervals,
        brier_decomposition=brier_decomposition(
            p_in,
            y,
            binning=config.binning,
            n_bins=config.n_bins,
            tie_policy=config.tie_policy,
        ),
        n=n,
        class_names=names,
    )


def _kernel_estimates(
    p: np.ndarray,
    y: np.ndarray,
    config: AnalysisConfig,
    opts: Mapping[str, Any],
    exclude: Mapping[str, Any],
) -> tuple[dict[str, float], dict[str, str]]:
    """Point estimates of the kernel estimators that support the config's lens.

    A kernel estimator that cannot run on this data (too many rows for an exact
    quadratic estimate, a zero median distance, ...) gets NaN and the reason as its note.
    """
    values: dict[str, float] = {}
    notes: dict[str, str] = {}
    for name in ESTIMATORS.names(binned=False, lenses=config.lens):
        if name in exclude:
            continue
        if ESTIMATORS.get(name).meta.get("quadratic") and p.shape[0] > QUADRATIC_BOOTSTRAP_MAX_N:
            values[name] = math.nan
            notes[name] = (
                f"not computed here at n > {QUADRATIC_BOOTSTRAP_MAX_N:,} (quadratic cost): run "
                "it on its own (Estimators page, core.calibration_error) or use the linear or "
                "block estimator"
            )
            continue
        try:
            res = calibration_error(p, y, estimator=name, seed=config.seed, **opts)
        except CalibscopeError as exc:
            values[name], notes[name] = math.nan, str(exc)
            continue
        values[name] = res.value
        notes[name] = (
            "kernel estimator, not on the ℓp scale of the binned rows; intervals on the Estimators page"
        )
    return values, notes


def _metric_row(
    name: str,
    label: str,
    value: float,
    intervals: Mapping[str, BootstrapResult],
    notes: Mapping[str, str],
) -> dict[str, Any]:
    boot = intervals.get(name)
    low, high = (
        (boot.confidence_interval.low, boot.confidence_interval.high)
        if boot
        else (
            np.nan,
            np.nan,
        )
    )
    return {
        "metric": name,
        "label": label,
        "value": float(value),
        "low": float(low),
        "high": float(high),
        "note": notes.get(name, ""),
    }


def _component_tables(
    p: np.ndarray,
    y: np.ndarray,
    config: AnalysisConfig,
    headline: CalibrationErrorResult,
    names: tuple[str, ...],
) -> tuple[ComponentTable, ...]:
    if LENSES.get(config.lens).meta.get("kernel_only"):
        return ()
    view = lens_view(p, y, config.lens, class_names=names, class_weights=config.class_weights)
    if headline.bins is not None and len(headline.bins) == len(view.names):
        all_bins = headline.bins
    else:
        all_bins = tuple(
            bin_stats(
                s,
                o,
                binning=config.binning,
                n_bins=config.n_bins,
                tie_policy=config.tie_policy,
            )
            for s, o in zip(view.scores, view.outcomes, strict=True)
        )
    # its own generator from the one seed, so the bootstrap's draws stay as they were
    band_rng = np.random.default_rng(config.seed)
    tables = []
    for name, st, weight, scores in zip(
        view.names, all_bins, view.weights, view.scores, strict=True
    ):
        low, high = bin_intervals(
            st.counts, st.label_sums, method=config.interval_method, level=config.level
        )
        band = None
        if config.consistency_band:
            band = _band(scores, st, config, band_rng)
        tables.append(ComponentTable(name, st, low, high, float(weight), band))
    return tuple(tables)


def _band(
    scores: np.ndarray, st: BinStats, config: AnalysisConfig, rng: np.random.Generator
) -> ConsistencyBand | None:
    """Return the consistency band on exactly the bins of ``st`` (same rows, same bins).

    ``st`` comes from the config's binning with ``n_bins`` bins, or with fewer (equal
    scores kept together; a sweep's chosen number); None if no assignment reproduces it,
    or above ``CONSISTENCY_BAND_MAX_BINS`` bins.
    """
    if st.n_bins > CONSISTENCY_BAND_MAX_BINS:
        return None
    for n_bins in dict.fromkeys((config.n_bins, st.n_bins)):
        idx, edges = bin_indices(
            scores, binning=config.binning, n_bins=n_bins, tie_policy=config.tie_policy
        )
        if np.array_equal(edges, st.edges) and np.array_equal(
            np.bincount(idx, minlength=st.n_bins), st.counts
        ):
            band = consistency_band(
                scores,
                bin_index=idx,
                n_bins=st.n_bins,
                n_resamples=CONSISTENCY_BAND_RESAMPLES,
                level=config.level,
                seed=rng,
            )
            return dataclasses.replace(band, seed=config.seed)
    return None
