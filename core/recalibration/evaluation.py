"""Fit several recalibrators under a split protocol and judge them on held-out rows.

:func:`compare_recalibrators` is the one call behind the Recalibration page: it fits
each chosen recalibrator on the calibration rows of every split, predicts the test
rows, and computes on those test rows the calibration errors of the estimator
registry (with bootstrap intervals on common resamples), Brier score, log loss,
accuracy and, for Meta-Cal, coverage, miscoverage and coverage accuracy.

Rows a recalibrator was fitted on are never used to judge it, except with the
``in-sample`` protocol, which must be asked for and labels every number
"in-sample". Recalibrators whose outputs take few distinct values (histogram
binning, isotonic, scaling-binning) are judged with **discrete** bins (one bin per
distinct output) unless ``evaluation_binning`` says otherwise: binning them again
with equal-width bins would average distinct outputs together and hide or invent
calibration error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core.base.errors import CalibscopeError, ConfigError
from core.base.validation import as_labels, check_norm, norm_text
from core.estimators import ESTIMATORS
from core.inference.bootstrap import bootstrap_many
from core.inference.calibration import calibration_error
from core.recalibration.base import RECALIBRATORS, FittedParameters, as_inputs, make_recalibrator
from core.recalibration.metacal import (
    SelectiveCurves,
    SelectiveMetrics,
    ranking_score,
    selective_curves,
    selective_metrics,
)
from core.recalibration.splits import make_splits
from core.stats.binning import bin_stats
from core.stats.lenses import apply_lens
from core.stats.scores import SCORES

UNCALIBRATED = "uncalibrated"
SCORE_LABELS = {"brier": "Brier score", "log-loss": "Log loss", "accuracy": "Accuracy"}
SELECTIVE_LABELS = {
    "coverage": "Coverage",
    "miscoverage": "Miscoverage",
    "coverage-accuracy": "Coverage accuracy",
}


@dataclass(frozen=True, eq=False)
class SelectiveView:
    """What the Meta-Cal views need, on the evaluation rows.

    Attributes
    ----------
    scores : numpy.ndarray
        Ranking scores of the uncalibrated predictions.
    correct : numpy.ndarray
        Whether each uncalibrated prediction is correct.
    threshold : float
        The fitted ``r*`` (first split).
    accepted : numpy.ndarray
        Accept mask of the recalibrator's predictions.
    curves : SelectiveCurves
        Coverage / miscoverage / coverage accuracy against the threshold.
    metrics : SelectiveMetrics
        Values at the operating point.
    guarantee : str
        What the fitted rule guarantees, in words.
    """

    scores: np.ndarray
    correct: np.ndarray
    threshold: float
    accepted: np.ndarray
    curves: SelectiveCurves
    metrics: SelectiveMetrics
    guarantee: str


@dataclass(frozen=True, eq=False)
class RecalibrationComparison:
    """Recalibrators fitted and judged under one split protocol.

    Attributes
    ----------
    metrics : pandas.DataFrame
        Long table: ``method, method_label, metric, metric_label, value, low, high,
        mean_over_splits, sd_over_splits, evaluation, binning, note``.
    predictions : dict
        Method key to ``(m, K)`` recalibrated probabilities of the evaluation rows
        (``uncalibrated`` holds the original ones).
    rows : numpy.ndarray
        Indices of the evaluation rows in the input.
    labels : numpy.ndarray
        Labels of the evaluation rows.
    fitted : dict
        Method key to the fitted parameters of every split (one per fold for cross-fitting).
    errors : dict
        Method key to the message of a fit that failed.
    evaluation_binning : dict
        Method key to the binning used to judge it.
    selective : dict
        Method key to its :class:`SelectiveView` (Meta-Cal only).
    labels_of : dict
        Method key to its display label.
    protocol : str
        The split protocol.
    evaluation : str
        ``"test"``, ``"out-of-fold"`` or ``"in-sample"``.
    settings : dict
        Every option used (for exports), including the seed.
    """

    metrics: pd.DataFrame
    predictions: dict[str, np.ndarray]
    rows: np.ndarray
    labels: np.ndarray
    fitted: dict[str, tuple[FittedParameters, ...]]
    errors: dict[str, str]
    evaluation_binning: dict[str, str]
    selective: dict[str, SelectiveView]
    labels_of: dict[str, str]
    protocol: str
    evaluation: str
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def methods(self) -> list[str]:
        """Method keys that were fitted, ``uncalibrated`` first."""
        return list(self.predictions)

    def summary(self) -> pd.DataFrame:
        """Return one row per method and one column per metric (point values)."""
        table = self.metrics.pivot_table(
            index="method_label", columns="metric_label", values="value", sort=False
        )
        return table.reindex([self.labels_of[m] for m in self.methods])

    def predictions_frame(self, class_names: Sequence[str] | None = None) -> pd.DataFrame:
        """Return the recalibrated predictions as a long table (one ``model`` per method).

        Parameters
        ----------
        class_names : sequence of str, optional
            Names of the probability columns; default ``"0"``, ``"1"``, ...

        Returns
        -------
        pandas.DataFrame
            Columns ``row, model, evaluation, label, <one per class>, accepted``; it can
            be loaded again with :func:`core.data.load_predictions` (``model`` column).
        """
        k = next(iter(self.predictions.values())).shape[1]
        names = [str(c) for c in (class_names or range(k))]
        frames = []
        for key, q in self.predictions.items():
            f = pd.DataFrame(q, columns=names)
            f.insert(0, "label", np.asarray(names, dtype=object)[self.labels])
            f.insert(0, "evaluation", self.evaluation)
            f.insert(0, "model", self.labels_of[key])
            f.insert(0, "row", self.rows)
            sel = self.selective.get(key)
            f["accepted"] = sel.accepted if sel is not None else True
            frames.append(f)
        return pd.concat(frames, ignore_index=True)

    def parameters_json(self, key: str) -> str:
        """Return the fitted parameters of one method (every split) as JSON text."""
        import json

        recs = [p.to_dict() for p in self.fitted[key]]
        payload = {
            "method": key,
            "protocol": self.protocol,
            "settings": self.settings,
            "fits": recs,
        }
        return json.dumps(payload, indent=2, allow_nan=False, default=str)


def _method_specs(
    methods: Sequence[str | tuple[str, Mapping[str, Any]]] | Mapping[str, Mapping[str, Any]],
) -> list[tuple[str, str, dict[str, Any], str]]:
    items = list(methods.items()) if isinstance(methods, Mapping) else list(methods)
    if not items:
        raise ConfigError("Choose at least one recalibrator.")
    parsed = [
        (item, {}) if isinstance(item, str) else (item[0], dict(item[1] or {})) for item in items
    ]
    total = {name: sum(n == name for n, _ in parsed) for name, _ in parsed}
    out, seen = [], {}
    for name, opts in parsed:
        entry = RECALIBRATORS.get(name)
        make_recalibrator(name, **opts)  # validate options before any fitting
        seen[name] = seen.get(name, 0) + 1
        key = name if seen[name] == 1 else f"{name} #{seen[name]}"
        label = entry.label
        if total[name] > 1:  # the same method twice: its options tell the rows apart
            detail = ", ".join(f"{k}={v}" for k, v in sorted(opts.items()) if k != "seed")
            label += f" ({detail or 'defaults'}) #{seen[name]}"
        out.append((key, name, opts, label))
    return out


def _estimator_plan(
    estimators: Sequence[str], binning: str, norm: float
) -> tuple[list[str], list[str]]:

    usable, skipped = [], []
    for est in estimators:
        info = ESTIMATORS.get(est)
        if not info.supports(norm=norm):
            skipped.append(f"{est} (no {norm_text(norm)} version)")
        elif not info.accepts_binning(binning):
            skipped.append(f"{est} (needs {' or '.join(info.binnings or ())} bins)")
        else:
            usable.append(est)
    return usable, skipped


def _statistics(
    estimators: Sequence[str], *, binning: str, n_bins: int, norm: float, lens: str
) -> dict[str, tuple[str, dict[str, Any]]]:

    stats: dict[str, tuple[str, dict[str, Any]]] = {}
    for est in estimators:
        opts: dict[str, Any] = {"norm": norm, "lens": lens}
        if ESTIMATORS.get(est).binned:
            opts |= {"binning": binning, "n_bins": n_bins}
        stats[est] = (est, opts)
    for score in SCORE_LABELS:
        stats[score] = (score, {})
    return stats


def _point_values(
    q: np.ndarray, y: np.ndarray, stats: Mapping[str, tuple[str, dict[str, Any]]], seed: int
) -> dict[str, float]:

    out = {}
    for key, (stat, opts) in stats.items():
        if stat in SCORE_LABELS:
            out[key] = float(SCORES.get(stat).func(q, y))
        else:
            out[key] = float(calibration_error(q, y, estimator=stat, seed=seed, **opts).value)
    return out


def _judging_binning(
    key: str, q: np.ndarray, y: np.ndarray, lens: str, evaluation_binning: str, binning: str
) -> tuple[bool, str]:
    """Return whether a method's outputs are discrete and the binning that judges them.

    Outputs of a discrete recalibrator that take few values are judged on discrete bins
    (one per value) with ``evaluation_binning="auto"``.
    """
    discrete = key != UNCALIBRATED and RECALIBRATORS.get(_base_name(key)).discrete_output
    few = discrete and _few_valued(q, y, lens)
    return discrete, "discrete" if (few and evaluation_binning == "auto") else binning


def _method_records(specs: Sequence[tuple[str, str, dict[str, Any], str]]) -> list[dict]:
    """Return the methods compared, as the settings record lists them."""
    return [{"key": k, "name": n, "options": o} for k, n, o, _ in specs]


def _fit_methods(
    specs: Sequence[tuple[str, str, dict[str, Any], str]],
    splits: Sequence[Any],
    x: np.ndarray,
    y: np.ndarray,
    inputs: Any,
    cross: bool,
    rows: np.ndarray,
    seed: Any,
    lens: str,
) -> tuple[dict, dict, dict, dict, dict, dict]:
    """Fit every method on the splits: predictions of the judged rows, fits, errors, views."""
    y_eval = y[rows]
    p_eval = inputs.probs[rows]
    predictions: dict[str, np.ndarray] = {UNCALIBRATED: p_eval}
    per_split: dict[str, list[np.ndarray]] = {}
    fitted: dict[str, tuple[FittedParameters, ...]] = {}
    errors: dict[str, str] = {}
    selective: dict[str, SelectiveView] = {}
    labels_of = {UNCALIBRATED: "Uncalibrated"}
    for key, name, opts, label in specs:
        labels_of[key] = label
        opts = _fit_options(name, opts, seed, lens)
        try:
            fits, preds, masks, out = _fit_on_splits(name, opts, splits, x, y, inputs, cross)
        except CalibscopeError as exc:
            errors[key] = str(exc)
            continue
        fitted[key] = tuple(fits)
        predictions[key] = out if cross else preds[0]
        per_split[key] = preds
        if masks:
            acc = _accepted_rows(masks if cross else masks[:1], inputs.n)
            selective[key] = _selective_view(p_eval, y_eval, acc[rows], opts, fits[0])

    return predictions, per_split, fitted, errors, selective, labels_of


def _fit_options(name: str, opts: dict[str, Any], seed: Any, lens: str) -> dict[str, Any]:
    """Return a method's options with the comparison's seed and lens where it takes them."""
    accepted = list(RECALIBRATORS.get(name).options)
    if "seed" in accepted:
        opts = {"seed": seed, **opts}
    if "lens" in accepted and lens in ("binary", "top-label", "classwise"):
        opts = {"lens": lens, **opts}  # recalibrate through the lens that judges
    return opts


def _accepted_rows(masks: Sequence[tuple[np.ndarray, np.ndarray]], n: int) -> np.ndarray:
    """Return which of ``n`` rows a selective recalibrator accepted, from its test splits."""
    acc = np.zeros(n, dtype=bool)
    for idx, m in masks:
        acc[idx] = m
    return acc


def _check_evaluation_binning(evaluation_binning: str) -> None:
    if evaluation_binning not in ("auto", "config"):
        raise ConfigError(
            f"evaluation_binning must be 'auto' or 'config'; got {evaluation_binning!r}."
        )


def _split_values(
    split_preds: Sequence[np.ndarray],
    splits: Sequence[Any],
    y: np.ndarray,
    stats: Mapping[str, Any],
    seed: Any,
) -> list[dict[str, float]]:
    """Return every statistic's value on each split's test rows (the repeated protocol)."""
    return [
        _point_values(qs, y[sp.test], stats, seed)
        for qs, sp in zip(split_preds, splits, strict=True)
    ]


def _judging_note(
    binning_used: str,
    auto_discrete: bool,
    lens: str,
    binning: str,
    skipped: Sequence[str],
    selective: bool,
) -> str:
    """Return the note of a method's rows: how it was judged and what was skipped."""
    note = []
    if binning_used == "discrete":
        note.append("judged with discrete bins (one per distinct output)")
    elif auto_discrete:
        note.append(
            f"outputs take many distinct values under the {lens} lens (e.g. after "
            f"renormalising classes), so they are judged with {binning} bins"
        )
    if skipped:
        note.append("skipped: " + "; ".join(skipped))
    if selective:
        note.append("rejected rows output 1/K; top-label ties go to the first class")
    return "; ".join(note)


def _metric_record(
    key: str,
    label: str,
    metric: str,
    res: Any,
    over_splits: Sequence[float],
    *,
    metric_label: str,
    evaluation: str,
    binning: str,
    note: str,
) -> dict[str, Any]:
    """Return one metric's row: its value and interval, and its spread over the splits."""
    return {
        "method": key,
        "method_label": label,
        "metric": metric,
        "metric_label": metric_label,
        "value": float(res.value),
        "low": float(res.confidence_interval.low),
        "high": float(res.confidence_interval.high),
        "mean_over_splits": float(np.mean(over_splits)) if over_splits else np.nan,
        "sd_over_splits": float(np.std(over_splits, ddof=1)) if len(over_splits) > 1 else np.nan,
        "evaluation": evaluation,
        "binning": binning,
        "note": note,
    }


def _fit_on_splits(
    name: str,
    opts: dict[str, Any],
    splits: Sequence[Any],
    x: np.ndarray,
    y: np.ndarray,
    inputs: Any,
    cross: bool,
) -> tuple[list[FittedParameters], list[np.ndarray], list[tuple[np.ndarray, np.ndarray]], Any]:
    """Fit one recalibrator on every split's calibration rows and predict its test rows.

    Returns the fitted parameters, the test predictions of each split (none when
    cross-fitted), the accepted rows of a selective recalibrator and, cross-fitted, the
    out-of-fold predictions of every row.
    """
    fits, preds, masks = [], [], []
    out = np.empty_like(inputs.probs) if cross else None
    for sp in splits:
        r = make_recalibrator(name, **opts).fit(
            x[sp.calibration], y[sp.calibration], logits=inputs.from_logits
        )
        q = r.predict_proba(x[sp.test], logits=inputs.from_logits)
        fits.append(r.params_)
        if cross:
            out[sp.test] = q
        else:
            preds.append(q)
        if hasattr(r, "accepted"):
            masks.append((sp.test, r.accepted(x[sp.test], logits=inputs.from_logits)))
    return fits, preds, masks, out


def _selective_view(
    p_eval: np.ndarray,
    y_eval: np.ndarray,
    accepted: np.ndarray,
    opts: dict[str, Any],
    fit: FittedParameters,
) -> SelectiveView:
    """Return the view of a selective recalibrator on the judged rows."""
    h = ranking_score(p_eval, opts.get("ranking", "entropy"))
    correct = p_eval.argmax(axis=1) == y_eval
    return SelectiveView(
        scores=h,
        correct=correct,
        threshold=float(fit.values["threshold"]),
        accepted=accepted,
        curves=selective_curves(h, correct),
        metrics=selective_metrics(p_eval, y_eval, accepted),
        guarantee=str(fit.info.get("guarantee", "")),
    )


def _selective_records(
    key: str, label: str, view: SelectiveView, evaluation: str
) -> list[dict[str, Any]]:
    """Return the coverage rows of a selective recalibrator's metrics table."""
    m = view.metrics
    return [
        {
            "method": key,
            "method_label": label,
            "metric": stat_key,
            "metric_label": SELECTIVE_LABELS[stat_key],
            "value": float(value),
            "low": np.nan,
            "high": np.nan,
            "mean_over_splits": np.nan,
            "sd_over_splits": np.nan,
            "evaluation": evaluation,
            "binning": "",
            "note": view.guarantee,
        }
        for stat_key, value in (
            ("coverage", m.coverage),
            ("miscoverage", m.miscoverage),
            ("coverage-accuracy", m.coverage_accuracy),
        )
    ]


def compare_recalibrators(
    probs: ArrayLike,
    labels: ArrayLike,
    methods: Sequence[str | tuple[str, Mapping[str, Any]]] | Mapping[str, Mapping[str, Any]],
    *,
    logits: bool = False,
    protocol: str = "fraction",
    calibration_fraction: float = 0.5,
    split_labels: ArrayLike | None = None,
    n_repeats: int = 5,
    n_folds: int = 5,
    stratify: bool = True,
    estimators: Sequence[str] = ("plugin", "debiased", "sweep"),
    lens: str = "top-label",
    binning: str = "equal-width",
    n_bins: int = 15,
    norm: float | str = 1,
    evaluation_binning: str = "auto",
    n_resamples: int = 200,
    confidence_level: float = 0.95,
    seed: int = 0,
    bootstrap_interval: str = "percentile",
) -> RecalibrationComparison:
    """Fit recalibrators on calibration rows and judge them on test rows.

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities (logits with ``logits=True``).
    labels : array_like
        Class indices ``0..K-1``.
    methods : sequence or mapping
        Recalibrator names, ``(name, options)`` pairs, or ``{name: options}``.
    logits : bool, default False
        Whether ``probs`` holds logits.
    protocol : {"fraction", "column", "repeated", "cross-fit", "in-sample"}
        Split protocol (:func:`core.recalibration.splits.make_splits`).
    calibration_fraction, split_labels, n_repeats, n_folds
        Options of the protocol.
    stratify : bool, default True
        Keep class shares in random splits and folds.
    estimators : sequence of str
        Calibration-error estimators (registry names) for the table.
    lens, binning, n_bins, norm
        Options of :func:`core.inference.calibration.calibration_error`. One-dimensional
        recalibrators (Platt, isotonic, histograms, scaling-binning) are fitted through
        the same ``lens`` unless their options say otherwise.
    evaluation_binning : {"auto", "config"}
        ``auto`` judges few-valued recalibrators with discrete bins; ``config`` uses
        ``binning`` for every method.
    n_resamples : int, default 200
        Bootstrap resamples of the intervals (common to all metrics of a method).
    confidence_level : float, default 0.95
        Interval level.
    seed : int, default 0
        Seed of the splits, the recalibrators and the bootstrap.
    bootstrap_interval : {"percentile", "basic"}, default "percentile"
        How intervals are read off the resamples (:data:`core.stats.intervals.BOOTSTRAP_INTERVALS`).

    Returns
    -------
    RecalibrationComparison
        Metrics, predictions, fitted parameters and Meta-Cal views.
    """
    _check_evaluation_binning(evaluation_binning)
    norm_f = check_norm(norm)
    inputs = as_inputs(probs, logits=logits)
    y = as_labels(labels, inputs.n_classes, inputs.n)
    specs = _method_specs(methods)
    splits = make_splits(
        inputs.n,
        protocol=protocol,
        calibration_fraction=calibration_fraction,
        split_labels=split_labels,
        n_repeats=n_repeats,
        n_folds=n_folds,
        stratify=y if stratify else None,
        seed=seed,
    )
    x = inputs.log_scores if inputs.from_logits else inputs.probs
    cross = protocol == "cross-fit"
    rows = np.arange(inputs.n) if cross else splits[0].test
    evaluation = "in-sample" if splits[0].in_sample else ("out-of-fold" if cross else "test")
    y_eval = y[rows]
    predictions, per_split, fitted, errors, selective, labels_of = _fit_methods(
        specs, splits, x, y, inputs, cross, rows, seed, lens
    )
    records = []
    used_binning: dict[str, str] = {}
    for key, q in predictions.items():
        discrete, b = _judging_binning(key, q, y_eval, lens, evaluation_binning, binning)
        used_binning[key] = b
        usable, skipped = _estimator_plan(estimators, b, norm_f)
        stats = _statistics(usable, binning=b, n_bins=n_bins, norm=norm_f, lens=lens)
        boot = bootstrap_many(
            q,
            y_eval,
            stats,
            n_resamples=n_resamples,
            confidence_level=confidence_level,
            seed=seed,
            method=bootstrap_interval,
        )
        repeats = []
        if protocol == "repeated":
            split_preds = per_split.get(key) or [inputs.probs[sp.test] for sp in splits]
            repeats = _split_values(split_preds, splits, y, stats, seed)
        note = _judging_note(
            b, discrete and evaluation_binning == "auto", lens, binning, skipped, key in selective
        )
        records += [
            _metric_record(
                key,
                labels_of[key],
                stat_key,
                res,
                [r[stat_key] for r in repeats],
                metric_label=_metric_label(stat_key, norm_f),
                evaluation=evaluation,
                binning=b if stat_key not in SCORE_LABELS else "",
                note=note,
            )
            for stat_key, res in boot.items()
        ]
        if key in selective:
            records += _selective_records(key, labels_of[key], selective[key], evaluation)
    settings = {
        "protocol": protocol,
        "calibration_fraction": calibration_fraction,
        "n_repeats": n_repeats,
        "n_folds": n_folds,
        "stratify": stratify,
        "estimators": list(estimators),
        "lens": lens,
        "binning": binning,
        "n_bins": n_bins,
        "norm": "inf" if np.isinf(norm_f) else norm_f,
        "evaluation_binning": evaluation_binning,
        "n_resamples": n_resamples,
        "confidence_level": confidence_level,
        "seed": seed,
        "bootstrap_interval": bootstrap_interval,
        "methods": _method_records(specs),
    }
    return RecalibrationComparison(
        metrics=pd.DataFrame.from_records(records),
        predictions=predictions,
        rows=rows,
        labels=y_eval,
        fitted=fitted,
        errors=errors,
        evaluation_binning=used_binning,
        selective=selective,
        labels_of={k: v for k, v in labels_of.items() if k in predictions or k in errors},
        protocol=protocol,
        evaluation=evaluation,
        settings=settings,
    )


#: Discrete evaluation bins need at least this many rows per distinct output on average.
MIN_ROWS_PER_VALUE = 10


def _few_valued(q: np.ndarray, y: np.ndarray, lens: str) -> bool:
    """Whether every lens component of ``q`` takes at most ``m / MIN_ROWS_PER_VALUE`` values."""
    if lens not in ("binary", "top-label", "classwise"):
        return False
    view = apply_lens(q, y, lens)
    limit = q.shape[0] / MIN_ROWS_PER_VALUE
    return all(np.unique(s).size <= limit for s in view.scores)


def _base_name(key: str) -> str:
    return key.split(" #", 1)[0]


def _metric_label(key: str, norm: float) -> str:

    if key in SCORE_LABELS:
        return SCORE_LABELS[key]
    p = "∞" if np.isinf(norm) else f"{norm:g}"
    return f"{ESTIMATORS.get(key).label}, ℓ{p}"


def reliability_bins(
    comparison: RecalibrationComparison, *, lens: str = "top-label", n_bins: int = 15
) -> dict[str, Any]:
    """Bin statistics of every method's evaluation-row predictions, for reliability panels.

    Parameters
    ----------
    comparison : RecalibrationComparison
        The fitted comparison.
    lens : {"binary", "top-label"}
        One-dimensional view drawn (classwise comparisons are drawn top-label).
    n_bins : int, default 15
        Bins for methods judged with ``equal-width``/``equal-mass`` bins; methods
        judged with discrete bins get one point per distinct output.

    Returns
    -------
    dict
        Method key to :class:`core.stats.binning.BinStats`, ``uncalibrated`` first.
    """
    view_lens = lens if lens in ("binary", "top-label") else "top-label"
    out = {}
    for key, q in comparison.predictions.items():
        view = apply_lens(q, comparison.labels, view_lens)
        out[key] = bin_stats(
            view.scores[0],
            view.outcomes[0],
            binning=comparison.evaluation_binning.get(key, "equal-width"),
            n_bins=n_bins,
        )
    return out


def parameter_table(fitted: Sequence[FittedParameters]) -> pd.DataFrame:
    """Flatten the scalar fitted parameters of each split into a table (for display).

    Parameters
    ----------
    fitted : sequence of core.recalibration.FittedParameters
        One record per split.

    Returns
    -------
    pandas.DataFrame
        One row per split; arrays are summarised by their length.
    """
    rows = []
    for i, p in enumerate(fitted):
        row: dict[str, Any] = {"split": i + 1}
        for k, v in p.values.items():
            if isinstance(v, int | float | str) or v is None:
                row[k] = v
            elif k == "components":
                row["components"] = len(v)
        rows.append(row)
    return pd.DataFrame(rows)
