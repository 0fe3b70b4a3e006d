"""Several models on identical bins: metrics with intervals, paired differences, rankings.

:func:`compare_models` is what the Compare page shows and what a model-review meeting needs:

- **Identical bins.** Every model is binned with the same edges per lens component
  (:func:`core.stats.binning.shared_edges`): equal-width edges are common by construction;
  equal-mass edges are computed once from the *pooled* scores of all compared models;
  discrete bins use the union of the models' values (empty bins carry no weight, so a
  model's discrete estimate equals its own one-bin-per-value estimate). The binned
  estimators ``plugin``, ``label-binned`` and ``debiased`` are evaluated on those shared
  edges from their registered batch kernels (:func:`~core.estimators.plugin_from_stats`,
  ``debiased_sq_from_stats``, ``debiased_l1_from_stats``); with equal-width bins they
  equal :func:`core.inference.calibration.calibration_error` exactly. ``sweep`` chooses its own
  number of bins per model by definition (its ``b*`` differs between models), and
  scores (Brier, log loss, accuracy) and kernel estimators have no bins; they come from
  :func:`core.inference.bootstrap.bootstrap_many`.
- **Intervals.** Percentile bootstrap over rows. The shared edges are held fixed across
  resamples (the comparison is conditional on the common grid), so every row keeps its
  bin and a chunk of resamples costs a few ``bincount`` calls, as in the bootstrap's
  fixed-bin path. All metrics of a model see the same resamples (common random numbers).
- **Paired comparisons.** When every model was evaluated on the same rows (same ``n`` and
  identical labels in the same order), all models are resampled with the *same* row
  indices, and the difference of a metric between a model and the reference model gets
  the interval of the per-resample differences (percentile, or basic around the difference
  with the difference of the models' pivots: ``config.bootstrap_interval``). Whatever the
  rows' shared difficulty adds to both models cancels: the interval is narrower than the
  overlap of the two models' own intervals implies (on CIFAR-10's networks about 0.5–0.7 of the sum of
  their widths), and for scores whose per-row values move together across models (Brier,
  log loss) often narrower than either model's own interval.
  Otherwise every model is resampled independently (its own seed derived from the one
  seed) and the difference's interval is that of independent bootstraps.
- **Ranking disagreement.** Models are ranked by every metric; Kendall's τ compares the
  rankings, and every pair of models whose order flips between two metrics is listed with
  whether the flip is significant (both differences' intervals exclude 0) or within noise.

Metric keys are registry names with an optional norm, ``"name@p"`` with ``p`` in ``1``,
``2``, ``inf`` (``"plugin@1"`` is the ECE, ``"debiased@2"`` the debiased ℓ2 error), or
score names (``"brier"``, ``"log-loss"``, ``"accuracy"``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from core.analyses.analysis import AnalysisConfig, bootstrap_mode, check_config
from core.analyses.calibration_tests import TESTS, calibration_test, test_settings
from core.base.errors import CalibscopeError, ConfigError, DataError
from core.base.options import DEFAULT_METRICS
from core.base.parallel import map_ordered
from core.base.progress import Progress
from core.base.validation import check_norm, norm_key, norm_text
from core.data import as_predictions
from core.data.lint import FEW_ROWS
from core.estimators import ESTIMATORS
from core.estimators.base import KernelContext, NormalStream
from core.estimators.kernel import resample_options
from core.inference.bootstrap import bootstrap_many, support_of, truth_values
from core.inference.calibration import EstimatorCall
from core.inference.cells import analysis_draws, cell_bootstrap
from core.inference.comparison_cells import (
    joint_cell_bootstrap,
    joint_cells,
    model_cells,
    resampled_by_cells,
)
from core.inference.resampling import chunks
from core.stats.binned_view import BinnedViews, ComponentBins
from core.stats.binning import BINNINGS, BinStats, RowBatch, assign_to_edges, shared_edges
from core.stats.intervals import (
    check_resampling,
    interval_bounds,
    pivots,
    undefined_note,
    with_outside_note,
)
from core.stats.lenses import LENSES
from core.stats.scores import SCORES

if TYPE_CHECKING:
    from core.inference.cells import CellStats

__all__ = [
    "COMPARISON_COLUMNS",
    "DEFAULT_METRICS",
    "MetricSpec",
    "ModelComparison",
    "ComparisonOptions",
    "ComparisonPlan",
    "ModelValues",
    "compare_models",
    "metric_choices",
    "parse_metric",
]

#: Columns of :attr:`ModelComparison.table`.
COMPARISON_COLUMNS = ["model", "metric", "label", "value", "low", "high", "rank", "best", "note"]
#: Bin statistics (resamples × bins) held per chunk.
_CHUNK_BINS = 2**22


@dataclass(frozen=True)
class MetricSpec:
    """One compared metric.

    Attributes
    ----------
    key : str
        ``"name@p"`` for estimators with a norm, else the registry name.
    name : str
        Registry name in :data:`core.estimators.ESTIMATORS` or :data:`core.stats.scores.SCORES`.
    norm : float or None
        The ℓp norm of an estimator (None for scores).
    label : str
        Human label, e.g. ``"Plug-in binned (ECE) · ℓ1"``.
    kind : {"shared-bins", "estimator", "score"}
        How it is computed: on the shared edges, by the registered estimator (own bins or
        none), or as a mean of per-row scores.
    higher_is_better : bool
        Ranking direction (only accuracy is higher-is-better).
    """

    key: str
    name: str
    norm: float | None
    label: str
    kind: str
    higher_is_better: bool = False


def parse_metric(key: str, *, default_norm: float = 1.0) -> MetricSpec:
    """Parse a metric key such as ``"plugin@1"``, ``"debiased@2"``, ``"sweep"`` or ``"brier"``.

    Parameters
    ----------
    key : str
        Registry name, optionally followed by ``@1``, ``@2`` or ``@inf``.
    default_norm : float, default=1.0
        Norm of an estimator given without ``@p``.

    Returns
    -------
    MetricSpec
        The parsed metric.

    Raises
    ------
    ConfigError
        For unknown names or a norm the estimator does not support.
    """
    if not isinstance(key, str) or not key.strip():
        raise ConfigError(f"A metric must be a name such as 'plugin@1' or 'brier'; got {key!r}.")
    name, _, given_norm = key.strip().partition("@")
    if name in SCORES:
        if given_norm:
            raise ConfigError(f"The score {name!r} has no norm; use {name!r} without '@'.")
        entry = SCORES.get(name)
        return MetricSpec(name, name, None, entry.label, "score", entry.higher_is_better)
    if name not in ESTIMATORS:
        choices = ", ".join([*ESTIMATORS.names(), *SCORES.names()])
        raise ConfigError(f"Unknown metric {key!r}; use one of {choices} (estimators as 'name@p').")
    info = ESTIMATORS.get(name)
    if info.norms is None:
        return MetricSpec(name, name, None, info.label, "estimator")
    norm = check_norm(given_norm) if given_norm else check_norm(default_norm)
    info.check(norm=norm)
    kind = "shared-bins" if info.from_bins else "estimator"
    return MetricSpec(
        f"{name}@{norm_key(norm)}", name, norm, f"{info.label} · {norm_text(norm)}", kind
    )


def metric_choices(lens: str = "top-label", *, kernels: bool = False) -> list[str]:
    """Return the metric keys available on a lens (for select boxes and the CLI).

    Parameters
    ----------
    lens : str, default="top-label"
        A lens with a 1-D view.
    kernels : bool, default=False
        Include kernel estimators (their bootstrap re-runs them on every resample).

    Returns
    -------
    list of str
        ℓp-scale estimators (binned, smooth) with each supported norm, then kernel
        estimators (if asked), then scores.
    """
    out = []
    for info in ESTIMATORS:
        if lens not in info.lenses or not (info.lp_scale or kernels):
            continue
        if info.norms is None:
            out.append(info.name)
        else:
            out += [f"{info.name}@{norm_key(v)}" for v in info.norms]
    return out + SCORES.names()


@dataclass(frozen=True, eq=False)
class ModelComparison:
    """Several models on identical bins (see the module docstring).

    Attributes
    ----------
    config : AnalysisConfig
        Lens, binning, number of bins, tie policy and class weights used.
    models : tuple of str
        Model names, in input order.
    metrics : tuple of MetricSpec
        The compared metrics; the first orders the models and picks the default reference.
    reference : str
        The model the paired differences are taken against.
    paired : bool
        Whether all models were evaluated on the same rows (paired bootstrap).
    n : dict of str to int
        Rows per model.
    n_resamples : int
        Bootstrap resamples (0: no intervals).
    confidence_level : float
        Confidence level of every interval.
    seed : int
        The one seed.
    test : str or None
        The calibration test run on every model.
    component_names : tuple of str
        Lens components (one for binary and top-label, one per class for classwise).
    edges : tuple of numpy.ndarray
        The shared edges of each component.
    bins : dict of str to tuple of BinStats
        Each model's bin statistics on the shared edges, per component.
    table : pandas.DataFrame
        One row per model and metric, columns :data:`COMPARISON_COLUMNS` (``rank`` 1 is the
        best; ``best`` marks the best value of each metric).
    differences : pandas.DataFrame
        ``model, metric, label, reference, difference, low, high, significant, better``:
        each model minus the reference, with the paired (or unpaired) bootstrap interval;
        ``significant`` when the interval excludes 0, ``better`` when the model beats the
        reference significantly.
    tests : pandas.DataFrame
        ``model, test, lens, statistic, pvalue, bound, note`` (empty without a test).
    ranks : pandas.DataFrame
        Models × metric keys, rank 1 = best (ties share the lowest rank).
    kendall : pandas.DataFrame
        Metric keys × metric keys, Kendall's τ-b between the rankings (NaN when a metric
        does not separate the models).
    flips : pandas.DataFrame
        ``model_a, model_b, metric_a, metric_b, better_by_a, better_by_b, significant_a, significant_b,
        significant, intervals_overlap``: each pair of models ordered one way by
        ``metric_a`` and the other way by ``metric_b``. ``significant_x`` says whether
        the difference's interval under metric x excludes 0; the flip is ``significant``
        only when both do. ``intervals_overlap`` is the cruder check of the two models'
        own intervals overlapping under either metric.
    distributions : dict
        ``(model, metric key) -> (n_resamples,)`` bootstrap values; paired models share
        resamples index by index. The differences are read from these.
    model_distributions : dict
        What each model's own interval is read from: ``distributions``, except for paired
        models on the cell bootstrap, whose common draw of joint cells pairs the differences
        while each model's interval comes from its own cells drawn as
        :func:`core.analyses.analysis.analyze` draws them (the same interval on every page).
    notes : tuple of str
        What the numbers rest on (shared edges, pairing, the sweep's own bins, models with
        few rows, ...).
    """

    config: AnalysisConfig
    models: tuple[str, ...]
    metrics: tuple[MetricSpec, ...]
    reference: str
    paired: bool
    n: dict[str, int]
    n_resamples: int
    confidence_level: float
    seed: int
    test: str | None
    component_names: tuple[str, ...]
    edges: tuple[np.ndarray, ...]
    bins: dict[str, tuple[BinStats, ...]]
    table: pd.DataFrame
    differences: pd.DataFrame
    tests: pd.DataFrame
    ranks: pd.DataFrame
    kendall: pd.DataFrame
    flips: pd.DataFrame
    distributions: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    model_distributions: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def few_rows(self) -> tuple[str, ...]:
        """Models with fewer than :data:`core.data.lint.FEW_ROWS` rows.

        Their intervals, and any difference involving them (significant or not), are not to
        be trusted.
        """
        return tuple(m for m in self.models if self.n[m] < FEW_ROWS)

    def value(self, model: str, metric: str) -> float:
        """Return the point estimate of ``metric`` (a key) for ``model``."""
        row = self.table[(self.table.model == model) & (self.table.metric == metric)]
        if row.empty:
            raise ConfigError(f"No metric {metric!r} for model {model!r} in this comparison.")
        return float(row.value.iloc[0])

    def to_record(self) -> dict[str, Any]:
        """Return every number as a JSON-ready record (``calibscope compare --json``).

        Returns
        -------
        dict
            Seed, resamples, level, models, rows per model, pairing, reference, metrics,
            shared edges, the tables (``table``, ``differences``, ``tests``, ``ranks``,
            ``kendall``, ``flips``) and the notes.
        """
        return {
            "seed": self.seed,
            "n_resamples": self.n_resamples,
            "confidence_level": self.confidence_level,
            "models": list(self.models),
            "n": self.n,
            "paired": self.paired,
            "reference": self.reference,
            "metrics": [{"key": s.key, "label": s.label} for s in self.metrics],
            "edges": [list(e) for e in self.edges],
            "table": self.table.to_dict(orient="records"),
            "differences": self.differences.to_dict(orient="records"),
            "tests": self.tests.to_dict(orient="records"),
            "ranks": self.ranks.reset_index().to_dict(orient="records"),
            "kendall": self.kendall.to_dict(),
            "flips": self.flips.to_dict(orient="records"),
            "notes": list(self.notes),
        }

    def wide(self) -> pd.DataFrame:
        """Return one row per model with ``<label>``, ``<label> low``, ``<label> high`` columns.

        Returns
        -------
        pandas.DataFrame
            The metrics table as a meeting reads it (and as the CSV download holds it),
            with ``n`` and, when a test ran, its ``p-value``.
        """
        out = pd.DataFrame({"model": list(self.models)})
        out["n"] = [self.n[m] for m in self.models]
        for spec in self.metrics:
            part = self.table[self.table.metric == spec.key].set_index("model")
            for col, name in (("value", spec.label), ("low", "low"), ("high", "high")):
                title = name if col == "value" else f"{spec.label} {name}"
                out[title] = part[col].reindex(self.models).to_numpy()
        if len(self.tests):
            out["p-value"] = self.tests.set_index("model").pvalue.reindex(self.models).to_numpy()
        return out


# --------------------------------------------------------------------------- inputs


def model_seed(seed: int, index: int, paired: bool) -> int:
    # paired models share the seed (hence the resamples); unpaired ones get independent
    # streams derived from the one seed
    if paired:
        return seed
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


# --------------------------------------------------------------------------- shared-bin engine


def _shared_bin_values(
    rows: np.ndarray,
    comps: Sequence[ComponentBins],
    weights: np.ndarray,
    calls: Mapping[str, EstimatorCall],
    streams: Mapping[str, NormalStream],
) -> dict[str, np.ndarray]:
    """Shared-bin metrics of each resample ``rows`` (``(r, n)`` row indices).

    Every row keeps its bin on the shared edges, so each component of a chunk of
    resamples is one :class:`~core.stats.binning.RowBatch` read by every metric's kernel.
    """
    r = rows.shape[0]
    per = {key: np.empty((r, len(comps))) for key in calls}
    ctxs = {
        key: KernelContext(call.options, streams[key], np.zeros(r, dtype=np.int64))
        for key, call in calls.items()
    }
    for c, comp in enumerate(comps):
        batch = RowBatch(
            np.take(comp.index, rows),
            np.take(comp.scores, rows),
            np.take(comp.outcomes.astype(np.intp), rows),
            comp.n_bins,
        )
        for key, call in calls.items():
            out = call.info.kernel(batch, call.norm, ctxs[key])  # type: ignore[misc]
            per[key][:, c] = out[0] if isinstance(out, tuple) else out
    return {key: call.info.combine(per[key], weights, call.norm) for key, call in calls.items()}


# --------------------------------------------------------------------------- the comparison


def check_comparison_config(config: AnalysisConfig | None) -> AnalysisConfig:
    config = check_config(config)
    if LENSES.get(config.lens).kernel_only:
        raise ConfigError(
            f"Models are compared on binned views; the {config.lens!r} lens has none. Use "
            "the binary, top-label or classwise lens."
        )
    return config


def _binning_note(config: AnalysisConfig, n_models: int, pooled: int) -> str:
    if config.binning == "equal-width":
        return (
            f"Identical bins: {config.n_bins} equal-width bins [k/B, (k+1)/B) (last closed), "
            "the same for every model by construction."
        )
    if config.binning == "equal-mass":
        return (
            f"Identical bins: {config.n_bins} equal-mass bins whose edges were computed once "
            f"from the pooled scores of all {n_models} models ({pooled:,} scores per "
            "component), so each model's bins hold about 1/B of the pooled mass, not of its "
            "own; the edges are held fixed across bootstrap resamples."
        )
    return (
        "Identical bins: one bin per distinct score over the union of all models' values "
        "(a model's empty bins carry no weight)."
    )


def shared_lens_edges(lenses: Sequence[Any], config: AnalysisConfig) -> tuple[np.ndarray, ...]:
    """Bin edges of each lens component, made from the scores of every lens view pooled.

    Parameters
    ----------
    lenses : sequence of core.stats.lenses.LensView
        Views of one lens on several sets of rows (models, or all rows of a subgroup analysis).
    config : AnalysisConfig
        Binning, number of bins and tie policy.

    Returns
    -------
    tuple of numpy.ndarray
        One edge array per component.
    """
    return tuple(
        shared_edges(
            [lv.scores[c] for lv in lenses],
            binning=config.binning,
            n_bins=config.n_bins,
            tie_policy=config.tie_policy,
        )
        for c in range(len(lenses[0].names))
    )


def on_edges(lv: Any, edges: Sequence[np.ndarray], config: AnalysisConfig) -> list[ComponentBins]:
    """Each component of a lens view binned on given edges (:func:`shared_lens_edges`)."""
    return [
        ComponentBins(
            lv.names[c],
            lv.scores[c],
            lv.outcomes[c],
            assign_to_edges(lv.scores[c], e),
            e,
            config.binning,
            config.tie_policy,
            config.n_bins,
        )
        for c, e in enumerate(edges)
    ]


def compare_models(
    parts: Mapping[str, Any],
    *,
    config: AnalysisConfig | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    reference: str | None = None,
    n_resamples: int | None = None,
    confidence_level: float | None = None,
    seed: int | None = None,
    test: str | None = None,
    test_options: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
) -> ModelComparison:
    """Compare several models on identical bins, with intervals, p-values and rankings.

    Parameters
    ----------
    parts : mapping of str to Predictions or (probs, labels)
        Model name → its predictions (e.g. ``Predictions.by_model()``). All must have the
        same number of classes; a binary ``Predictions`` is used as P(y=1).
    config : AnalysisConfig, optional
        Lens, binning, ``n_bins``, ``tie_policy``, ``class_weights`` (and the defaults of
        ``n_resamples``, ``confidence_level`` and ``seed``); default ``AnalysisConfig()``.
    metrics : sequence of str, default=DEFAULT_METRICS
        Metric keys (see :func:`parse_metric`); an estimator without ``@p`` takes
        ``config.norm``. The first one orders the models and picks the default reference.
    reference : str, optional
        Model the differences are taken against; default the best by the first metric.
    n_resamples : int, optional
        Bootstrap resamples (default ``config.n_resamples``; 0 turns intervals off).
    confidence_level : float, optional
        Confidence level of the intervals (default ``config.confidence_level``).
    seed : int, optional
        The one seed (default ``config.seed``).
    test : str, optional
        A name in :data:`core.analyses.calibration_tests.TESTS` run on every model; None for none.
    test_options : mapping, optional
        Options of the test (default: ``n_resamples=1000`` for a resampling test).
    progress : callable, optional
        ``progress(fraction, message)`` after each model's values and each model's test
        (a progress bar); what it raises stops the comparison.

    Returns
    -------
    ModelComparison
        Metrics with intervals, paired differences, p-values, bins and ranking views.

    Raises
    ------
    DataError
        With fewer than two models or models with different numbers of classes.
    ConfigError
        For unknown metrics, tests or models, or a lens without bins.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=400); y = (rng.uniform(size=400) < p).astype(int)
    >>> cmp = compare_models({"a": (p, y), "b": (p ** 2, y)}, n_resamples=100,
    ...                      config=AnalysisConfig(lens="binary"))
    >>> cmp.paired, cmp.reference
    (True, 'a')
    """
    options = ComparisonOptions(
        metrics, reference, n_resamples, confidence_level, seed, test, test_options
    )
    plan = prepare_comparison(parts, config=config, options=options)
    count = len(plan.models)
    steps = count * (2 if plan.settings.test else 1)

    def step(what: str, before: int = 0) -> Callable[[int], None] | None:
        if progress is None:
            return None
        return lambda i: progress((before + i + 1) / steps, f"{what} {i + 1:,} of {count:,}")

    # each model's values are independent of the others' (numpy releases the GIL)
    values = map_ordered(plan.model_values, plan.models, done=step("Bootstrap of model"))
    return plan.finish(values, done=step("Calibration test of model", count))


@dataclass(frozen=True)
class ComparisonOptions:
    """What a comparison measures, against which model, and its bootstrap and test.

    The options beside a comparison's :class:`~core.analyses.analysis.AnalysisConfig`,
    checked when made as far as they do not depend on the config (the rest:
    :func:`check_options`).

    Attributes
    ----------
    metrics : tuple of str
        Metric keys (:func:`parse_metric`), at least one.
    reference : str or None
        The model differences are taken against; None for the best by the first metric.
    n_resamples, confidence_level, seed : optional
        The bootstrap's settings; None for the config's.
    test : str or None
        A name in :data:`core.analyses.calibration_tests.TESTS` run on every model.
    test_options : mapping or None
        Options of the test (default: ``n_resamples=1000`` for a resampling test).

    Raises
    ------
    ConfigError
        For no metric or an unknown test.
    """

    metrics: tuple[str, ...] = DEFAULT_METRICS
    reference: str | None = None
    n_resamples: int | None = None
    confidence_level: float | None = None
    seed: int | None = None
    test: str | None = None
    test_options: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", tuple(self.metrics))
        if not self.metrics:
            raise ConfigError("Choose at least one metric to compare the models on.")
        if self.test is not None:
            TESTS.get(self.test)


@dataclass(frozen=True)
class ComparisonSettings:
    """A comparison's options checked against its config (:func:`check_options`).

    Attributes
    ----------
    specs : tuple of MetricSpec
        The metrics, each once.
    reference : str or None
        As asked (checked against the models when they are known).
    n_resamples : int
        Resamples (the config's when not given).
    confidence_level : float
        Interval level.
    seed : int
        The seed every model derives its own from.
    test : str or None
        The calibration test run on every model.
    test_options : mapping or None
        Its options.
    """

    specs: tuple[MetricSpec, ...]
    reference: str | None
    n_resamples: int
    confidence_level: float
    seed: int
    test: str | None
    test_options: Mapping[str, Any] | None


def check_options(config: AnalysisConfig, options: ComparisonOptions) -> ComparisonSettings:
    """Return a comparison's options checked against its config (the config's defaults).

    Raises
    ------
    ConfigError
        For unknown or repeated metrics, or an invalid number of resamples, level or seed.
    """
    n_resamples, confidence_level, seed_value = check_resampling(
        config.n_resamples if options.n_resamples is None else options.n_resamples,
        config.confidence_level if options.confidence_level is None else options.confidence_level,
        config.seed if options.seed is None else options.seed,
        why="every model derives its seed from it",
    )
    specs = tuple(parse_metric(k, default_norm=config.norm) for k in options.metrics)
    if len({s.key for s in specs}) != len(specs):
        raise ConfigError("A metric is listed twice; list each metric once.")
    return ComparisonSettings(
        specs=specs,
        reference=options.reference,
        n_resamples=int(n_resamples),
        confidence_level=float(confidence_level),
        seed=seed_value,
        test=options.test,
        test_options=options.test_options,
    )


def call_options(config: AnalysisConfig, class_names: Sequence[str]) -> dict[str, Any]:
    """Return the options every compared estimator is called with (lens, bins, classes)."""
    return {
        "lens": config.lens,
        "binning": config.binning,
        "n_bins": config.n_bins,
        "tie_policy": config.tie_policy,
        "class_weights": config.class_weights,
        "class_names": tuple(class_names),
    }


def estimator_options(
    spec: MetricSpec, config: AnalysisConfig, opts: Mapping[str, Any]
) -> dict[str, Any]:
    """Return the options of an estimator not on the shared bins (its own binning if need be)."""
    o = {**opts, "norm": spec.norm if spec.norm is not None else config.norm}
    info = ESTIMATORS.get(spec.name)
    if not info.accepts_binning(config.binning):
        o["binning"] = info.binnings[0]  # type: ignore[index]
    return o


def too_few_models(count: int) -> str:
    """Return the message of a comparison of fewer than two models."""
    return (
        f"Comparing models needs at least two; got {count}. Load a file with a "
        "`model` column (one block of rows per model) or one file per model."
    )


def _shared_calls(specs: Sequence[MetricSpec], opts: Mapping[str, Any]) -> dict[str, EstimatorCall]:
    """Return the calls of the metrics evaluated on the models' shared bins."""
    return {
        s.key: EstimatorCall.make(s.name, **{**opts, "norm": s.norm})
        for s in specs
        if s.kind == "shared-bins"
    }


def _check_same_task(data: Mapping[str, Any], models: tuple[str, ...]) -> None:
    """Refuse models that predict different numbers of classes."""
    ks = {data[m].n_classes for m in models}
    if len(ks) != 1:
        raise DataError(
            "The models predict different numbers of classes "
            f"({', '.join(f'{m}: {data[m].n_classes}' for m in models)}); compare models "
            "of the same task."
        )


def _common_classes(data: Mapping[str, Any], models: tuple[str, ...]) -> tuple[str, ...]:
    """Return the class names the models share, refusing models that name them differently."""
    first = data[models[0]]
    # default names "0", "1", ... are no names: they agree with any naming
    default = tuple(str(i) for i in range(first.n_classes))
    named = {d.class_names for d in data.values() if d.class_names != default}
    if len(named) > 1:
        raise DataError(
            "The models name their classes differently ("
            + "; ".join(", ".join(n) for n in sorted(named))
            + "); compare models of the same task with the same class order."
        )
    return next(iter(named), first.class_names)


def prepare_comparison(
    parts: Mapping[str, Any],
    *,
    config: AnalysisConfig | None = None,
    options: ComparisonOptions | None = None,
) -> ComparisonPlan:
    """Check the inputs of :func:`compare_models` and fix what every model shares.

    The shared edges, the metrics' calls and the models' seeds; each model's values and
    resamples then come from :meth:`ComparisonPlan.model_values` (independent of the other
    models: a report computes them in the job that analyses the model) and
    :meth:`ComparisonPlan.finish` makes the comparison. ``options`` are the comparison's
    (default ``ComparisonOptions()``); parameters, errors: as for :func:`compare_models`.

    Returns
    -------
    ComparisonPlan
        What the models' values are computed from.
    """
    config = check_comparison_config(config)
    settings = check_options(config, options or ComparisonOptions())
    specs, reference, seed = settings.specs, settings.reference, settings.seed
    if len(parts) < 2:
        raise DataError(too_few_models(len(parts)))

    models = tuple(str(m) for m in parts)
    data = {m: as_predictions(part) for m, part in zip(models, parts.values(), strict=True)}
    _check_same_task(data, models)
    if reference is not None and reference not in models:
        raise ConfigError(f"Unknown reference model {reference!r}; models: {', '.join(models)}.")
    names = _common_classes(data, models)
    first = data[models[0]]
    paired = all(
        data[m].labels.shape == first.labels.shape and np.array_equal(data[m].labels, first.labels)
        for m in models[1:]
    )
    views = {
        m: BinnedViews(data[m].probs, data[m].labels, names, config.class_weights) for m in models
    }
    lenses = {m: views[m].lens(config.lens) for m in models}
    components = lenses[models[0]].names
    weights = np.asarray(lenses[models[0]].weights, dtype=np.float64)
    edges = shared_lens_edges([lenses[m] for m in models], config)
    comps = {m: on_edges(lenses[m], edges, config) for m in models}
    bins = {m: tuple(comp.stats for comp in comps[m]) for m in models}

    opts = call_options(config, names)
    shared_calls = _shared_calls(specs, opts)
    others = [s for s in specs if s.kind != "shared-bins"]
    model_seeds = {m: model_seed(seed, i, paired) for i, m in enumerate(models)}
    mode = comparison_mode(
        config, settings.n_resamples, [data[m].n for m in models], len(components)
    )
    return ComparisonPlan(
        config=config,
        settings=settings,
        models=models,
        data=data,
        views=views,
        lenses=lenses,
        components=tuple(components),
        weights=weights,
        edges=edges,
        comps=comps,
        bins=bins,
        opts=opts,
        shared_calls=shared_calls,
        others=tuple(others),
        model_seeds=model_seeds,
        paired=paired,
        mode=mode,
    )


def comparison_mode(
    config: AnalysisConfig, n_resamples: int, sizes: Sequence[int], n_components: int
) -> str:
    """Return how a comparison bootstraps: ``"exact"`` (rows) or ``"cells"``.

    The rule of :func:`core.analyses.analysis.bootstrap_mode` (``config.bootstrap``; ``"auto"``:
    exact up to :data:`core.analyses.analysis.EXACT_BOOTSTRAP_WORK` row-resamples) applied to the
    largest model, so that every model of a comparison takes the same bootstrap.

    Parameters
    ----------
    config : AnalysisConfig
        The options (``bootstrap``).
    n_resamples : int
        Resamples of the comparison.
    sizes : sequence of int
        Rows of each model.
    n_components : int
        Components of the lens.

    Returns
    -------
    str
        ``"exact"`` or ``"cells"``.
    """
    cfg = replace(config, n_resamples=int(n_resamples))
    return bootstrap_mode(cfg, max(sizes, default=0), n_components)


@dataclass(frozen=True)
class ModelValues:
    """One model's part of a comparison: ``(model, metric key) →`` value, resamples, note."""

    values: dict[tuple[str, str], float]
    dists: dict[tuple[str, str], np.ndarray]
    notes: dict[tuple[str, str], str]
    truths: dict[tuple[str, str], float] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class ComparisonPlan:
    """The checked inputs of a comparison and what every model shares.

    Made by :func:`prepare_comparison`; :meth:`model_values` per model, then :meth:`finish`.
    """

    config: AnalysisConfig
    settings: ComparisonSettings
    models: tuple[str, ...]
    data: dict[str, Any]
    views: dict[str, BinnedViews]
    lenses: dict[str, Any]
    components: tuple[str, ...]
    weights: np.ndarray
    edges: tuple[np.ndarray, ...]
    comps: dict[str, list[ComponentBins]]
    bins: dict[str, tuple[BinStats, ...]]
    opts: dict[str, Any]
    shared_calls: dict[str, EstimatorCall]
    others: tuple[MetricSpec, ...]
    model_seeds: dict[str, int]
    paired: bool
    mode: str = "exact"

    def model_values(self, m: str) -> ModelValues:
        """Return model ``m``'s values, bootstrap resamples and notes."""
        values: dict[tuple[str, str], float] = {}
        dists: dict[tuple[str, str], np.ndarray] = {}
        notes_by: dict[tuple[str, str], str] = {}
        truths: dict[tuple[str, str], float] = {}
        if self.shared_calls:
            self._shared_values(m, values, dists, truths)
        boot_specs, known, other_calls = self._other_values(m, values, notes_by)
        if self.settings.n_resamples and self.mode != "exact":
            dists.update(self._cell_values(m, notes_by))
        elif self.settings.n_resamples and boot_specs:
            dists.update(self._exact_resamples(m, boot_specs, known, notes_by))
        resampled = {k: c for k, c in other_calls.items() if (m, k) in dists}
        if pivots(self.config.bootstrap_interval) and resampled:
            self._other_truths(m, resampled, known, dists, notes_by, truths)
        return ModelValues(values, dists, notes_by, truths)

    def _shared_values(
        self,
        m: str,
        values: dict[tuple[str, str], float],
        dists: dict[tuple[str, str], np.ndarray],
        truths: dict[tuple[str, str], float],
    ) -> None:
        """Add model ``m``'s shared-bin estimates, their pivots and (exact) resamples."""
        comps, weights, shared_calls = self.comps, self.weights, self.shared_calls
        n, m_seed, n_resamples = self.data[m].n, self.model_seeds[m], self.settings.n_resamples
        streams = {key: NormalStream(m_seed) for key in shared_calls}
        full = _shared_bin_values(
            np.arange(n, dtype=np.intp)[None, :], comps[m], weights, shared_calls, streams
        )
        for key in shared_calls:
            values[m, key] = float(full[key][0])
        if pivots(self.config.bootstrap_interval):
            truths.update(self._shared_truths(m, values))
        if not (n_resamples and self.mode == "exact"):
            return
        b_max = max(comp.n_bins for comp in comps[m])
        chunk = max(1, min(2**20 // n, _CHUNK_BINS // b_max))
        out = {key: np.empty(n_resamples) for key in shared_calls}
        done = 0
        for rows in chunks(np.random.default_rng(m_seed), n, n_resamples, chunk):
            got = _shared_bin_values(rows, comps[m], weights, shared_calls, streams)
            for key in shared_calls:
                out[key][done : done + rows.shape[0]] = got[key]
            done += rows.shape[0]
        for key in shared_calls:
            dists[m, key] = out[key]

    def _other_values(
        self, m: str, values: dict[tuple[str, str], float], notes_by: dict[tuple[str, str], str]
    ) -> tuple[dict[str, tuple[str, dict[str, Any]]], dict[str, float], dict[str, EstimatorCall]]:
        """Add model ``m``'s scores and own-bin estimates; return how each is bootstrapped."""
        pred, m_seed = self.data[m], self.model_seeds[m]
        boot_specs: dict[str, tuple[str, dict[str, Any]]] = {}
        known: dict[str, float] = {}
        other_calls: dict[str, EstimatorCall] = {}
        for s in self.others:
            if s.kind == "score":
                boot_specs[s.key] = (s.name, {})
                values[m, s.key] = known[s.key] = SCORES.get(s.name).value(
                    pred.probs, pred.labels, binary=pred.binary
                )
                continue
            o = estimator_options(s, self.config, self.opts)
            info = ESTIMATORS.get(s.name)
            call = other_calls[s.key] = EstimatorCall.make(s.name, **o)
            res = call.result(call.run_on(self.views[m], m_seed))
            values[m, s.key] = known[s.key] = float(res.value)
            if "b_star" in res.details:
                notes_by[m, s.key] = f"b* = {res.details['b_star']}"
            if not info.binned:  # a kernel number says its lens and what it measures
                notes_by[m, s.key] = "; ".join(p for p in (f"lens {call.lens}", info.quantity) if p)
                o = resample_options(o, res)  # as the Estimators table bootstraps it
                other_calls[s.key] = EstimatorCall.make(s.name, **o)
            boot_specs[s.key] = (s.name, o)
        return boot_specs, known, other_calls

    def _exact_resamples(
        self,
        m: str,
        boot_specs: dict[str, tuple[str, dict[str, Any]]],
        known: Mapping[str, float],
        notes_by: dict[tuple[str, str], str],
    ) -> dict[tuple[str, str], np.ndarray]:
        """Return model ``m``'s row resamples of its scores and own-bin estimates."""
        pred = self.data[m]

        def resample(specs: Mapping[str, Any]) -> dict[str, Any]:
            return bootstrap_many(
                None,
                None,
                specs,
                n_resamples=self.settings.n_resamples,
                confidence_level=self.settings.confidence_level,
                seed=self.model_seeds[m],
                views=self.views[m],
                binary=pred.binary,
                values={k: known[k] for k in specs},
            )

        try:
            boots = resample(boot_specs)
        except CalibscopeError:
            # a metric that fails on some resample (a kernel estimate of rows whose
            # predictions are all equal) costs its own interval only; each metric alone
            # draws the same resamples from the same seed
            boots = {}
            for key, spec in boot_specs.items():
                try:
                    boots.update(resample({key: spec}))
                except CalibscopeError as exc:
                    why = f"no interval: {exc}"
                    notes_by[m, key] = "; ".join(filter(None, [notes_by.get((m, key)), why]))
        return {(m, key): res.distribution for key, res in boots.items()}

    def _other_truths(
        self,
        m: str,
        resampled: Mapping[str, EstimatorCall],
        known: Mapping[str, float],
        dists: dict[tuple[str, str], np.ndarray],
        notes_by: dict[tuple[str, str], str],
        truths: dict[tuple[str, str], float],
    ) -> None:
        """Add the basic interval's pivots of model ``m``'s own-bin estimates.

        A pivot that cannot be computed costs that metric its interval, with the reason.
        """
        failed: dict[Any, str] = {}

        def evaluate(call: EstimatorCall) -> float:
            try:
                return float(call.run_on(self.views[m], self.model_seeds[m]).value)
            except CalibscopeError as exc:  # e.g. the V-statistic of too many rows
                failed[call.signature()] = f"no interval: its pivot, {call.info.label}: {exc}"
                return math.nan

        found = truth_values(resampled, known, evaluate)
        for key, value in found.items():
            truth = resampled[key].truth_call()
            why = None if truth is None else failed.get(truth.signature())
            if why is None:
                truths[m, key] = value
                continue
            del dists[m, key]
            notes_by[m, key] = "; ".join(filter(None, [notes_by.get((m, key), ""), why]))

    def _shared_truths(
        self, m: str, values: Mapping[tuple[str, str], float]
    ) -> dict[tuple[str, str], float]:
        """Return the basic interval's pivots of model ``m``'s shared-bin estimators."""
        rows = np.arange(self.data[m].n, dtype=np.intp)[None, :]

        def evaluate(call: EstimatorCall) -> float:
            stream = {"truth": NormalStream(self.model_seeds[m])}
            full = _shared_bin_values(rows, self.comps[m], self.weights, {"truth": call}, stream)
            return float(full["truth"][0])

        mine = {key: values[m, key] for key in self.shared_calls}
        found = truth_values(self.shared_calls, mine, evaluate)
        return {(m, key): value for key, value in found.items()}

    def _cell_calls(self, m: str, notes: dict[tuple[str, str], str]) -> dict[str, Any]:
        """Return the shared-bin calls the cells resample; note the others as analyze does."""
        fits = resampled_by_cells(self.shared_calls)
        extra = "no interval at this n with the fast bootstrap: choose the exact bootstrap"
        for s in self.settings.specs:
            if s.kind != "score" and s.key not in fits:
                notes[m, s.key] = "; ".join(filter(None, [notes.get((m, s.key), ""), extra]))
        return fits

    def _row_values(self, m: str, *, every: bool = False) -> dict[str, np.ndarray]:
        """Per-row values of the compared scores (``every``: of every score, in order)."""
        pred = self.data[m]
        names = (
            SCORES.names() if every else [s.name for s in self.settings.specs if s.kind == "score"]
        )
        return {
            name: SCORES.get(name).rows(pred.probs, pred.labels, binary=pred.binary)
            for name in names
        }

    def _cell_values(
        self, m: str, notes: dict[tuple[str, str], str]
    ) -> dict[tuple[str, str], np.ndarray]:
        """Return model ``m``'s resamples from its own cells (unpaired; paired: :meth:`finish`)."""
        fits = self._cell_calls(m, notes)
        if self.paired:
            return {}  # the joint cells of every model are drawn together in finish
        config, seed = self.config, self.model_seeds[m]
        cells = model_cells(
            self.comps[m],
            self.weights,
            **config.binning_options(),
            row_values=self._row_values(m),
        )
        stats: dict[str, Any] = {
            **fits,
            **{s.key: s.name for s in self.settings.specs if s.kind == "score"},
        }
        got = cell_bootstrap(
            cells, stats, n_resamples=self.settings.n_resamples, seed=seed, est_seed=seed
        )
        return {(m, key): dist for key, dist in got.items()}

    def _paired_cell_values(
        self,
    ) -> tuple[dict[tuple[str, str], np.ndarray], dict[tuple[str, str], np.ndarray]]:
        """Return paired models' resamples on cells: the differences' and each model's own.

        The differences come from one draw of the joint cells; each model's own interval
        from its own cells drawn as the analysis draws them (:func:`own_cell_dists`). Every
        score's per-row values are computed once per model for both.
        """
        config, models = self.config, self.models
        rows = {m: self._row_values(m, every=True) for m in models}
        compared = [s.name for s in self.settings.specs if s.kind == "score"]
        fits = resampled_by_cells(self.shared_calls)
        cells = joint_cells(
            [self.comps[m] for m in models],
            self.weights,
            **config.binning_options(),
            row_values=[{name: rows[m][name] for name in compared} for m in models],
        )
        joint = joint_dists(
            cells,
            models,
            self.settings.specs,
            fits,
            n_resamples=self.settings.n_resamples,
            seed=self.settings.seed,
        )
        own: dict[tuple[str, str], np.ndarray] = {}
        for m in models:
            mine = model_cells(
                self.comps[m], self.weights, **config.binning_options(), row_values=rows[m]
            )
            own.update(
                own_cell_dists(
                    mine,
                    m,
                    self.settings.specs,
                    fits,
                    n_resamples=self.settings.n_resamples,
                    seed=self.model_seeds[m],
                )
            )
        return joint, own

    def finish(
        self, parts: Sequence[ModelValues], *, done: Callable[[int], Any] | None = None
    ) -> ModelComparison:
        """Return the comparison from every model's :meth:`model_values`, in model order.

        ``done(i)`` is called once model ``i``'s calibration test is in.
        """
        models, data = self.models, self.data
        values: dict[tuple[str, str], float] = {}
        dists: dict[tuple[str, str], np.ndarray] = {}
        notes_by: dict[tuple[str, str], str] = {}
        truths: dict[tuple[str, str], float] = {}
        for part in parts:
            values.update(part.values)
            dists.update(part.dists)
            notes_by.update(part.notes)
            truths.update(part.truths)
        own = None
        if self.mode != "exact" and self.paired and self.settings.n_resamples:
            joint, own = self._paired_cell_values()
            dists.update(joint)
        tests = _tests(
            data,
            models,
            self.settings.test,
            self.config,
            self.model_seeds,
            self.settings.test_options,
            done=done,
        )
        return assemble_comparison(
            config=self.config,
            settings=self.settings,
            models=models,
            n={m: data[m].n for m in models},
            values=values,
            dists=dists,
            notes_by=notes_by,
            paired=self.paired,
            tests=tests,
            components=self.components,
            edges=self.edges,
            bins=self.bins,
            mode=self.mode,
            truths=truths,
            own=own,
        )


def own_cell_dists(
    cells: CellStats,
    model: str,
    specs: Sequence[MetricSpec],
    fits: Mapping[str, Any],
    *,
    n_resamples: int,
    seed: int,
) -> dict[tuple[str, str], np.ndarray]:
    """One paired model's resamples from its own cells, as :func:`core.analyses.analysis.analyze` draws.

    The cell bootstrap's draws depend on the cells and on the scores resampled with them, so
    with the cells of the model's own bins carrying every score's row sums (as the analysis's
    do) and every score drawn, the seed gives each statistic the resamples the Reliability page
    reads: a model has one interval on every page. The comparison's differences come from the
    common draw of the joint cells instead (:func:`joint_dists`).

    Parameters
    ----------
    cells : CellStats
        The model's cells on the shared edges, with the row sums of every score of
        :data:`core.stats.scores.SCORES`.
    model : str
        The model.
    specs : sequence of MetricSpec
        The compared metrics.
    fits : mapping
        Metric key → the shared-bin call the cells resample.
    n_resamples, seed
        Resamples and the seed (paired models share it).

    Returns
    -------
    dict
        ``(model, metric key) -> (n_resamples,)`` for the fitted calls and the scores.
    """
    got = analysis_draws(cells, fits, n_resamples=n_resamples, seed=seed)
    out = {(model, key): got[key] for key in fits}
    out.update({(model, s.key): got[s.name] for s in specs if s.kind == "score"})
    return out


def joint_dists(
    cells: Any,
    models: Sequence[str],
    specs: Sequence[MetricSpec],
    calls: Mapping[str, EstimatorCall],
    *,
    n_resamples: int,
    seed: int,
) -> dict[tuple[str, str], np.ndarray]:
    """Every paired model's resamples from common draws of their joint cells.

    Parameters
    ----------
    cells : core.inference.cells.CellStats
        The joint cells (:func:`core.inference.comparison_cells.joint_cells`) of ``models``, in order.
    models : sequence of str
        The models.
    specs : sequence of MetricSpec
        The compared metrics (their scores are resampled from the cells' row sums).
    calls : mapping
        Metric key → the shared-bin call the cell bootstrap resamples.
    n_resamples, seed : int
        Resamples and the one seed (paired models share it).

    Returns
    -------
    dict
        ``(model, metric key) → (n_resamples,)`` values.
    """
    scores = [s.name for s in specs if s.kind == "score"]
    got = joint_cell_bootstrap(
        cells, len(models), calls, scores, n_resamples=n_resamples, seed=seed, est_seed=seed
    )
    return {(models[i], key): dist for (i, key), dist in got.items()}


def _own_bins_note(spec: MetricSpec, config: AnalysisConfig) -> str:
    """Say that a binned estimator is not computed on the shared bins ("" for the others)."""
    info = ESTIMATORS.get(spec.name) if spec.kind == "estimator" else None
    if info is not None and info.own_binning is not None:
        return (
            f"{info.label} reads each model's own {info.own_binning} bins (one per distinct "
            "score), so it is not computed on the shared bins."
        )
    if info is not None and info.binned:
        own = config.binning if info.accepts_binning(config.binning) else info.binnings[0]  # type: ignore[index]
        return (
            f"{info.label} chooses its own {own} bins per model (b* in the note), so it is "
            "not computed on the shared bins."
        )
    return ""


def assemble_comparison(
    *,
    config: AnalysisConfig,
    settings: ComparisonSettings,
    models: tuple[str, ...],
    n: Mapping[str, int],
    values: Mapping[tuple[str, str], float],
    dists: Mapping[tuple[str, str], np.ndarray],
    notes_by: Mapping[tuple[str, str], str],
    paired: bool,
    tests: pd.DataFrame,
    components: Sequence[str],
    edges: tuple[np.ndarray, ...],
    bins: dict[str, tuple[BinStats, ...]],
    mode: str = "exact",
    extra_notes: Sequence[str] = (),
    truths: Mapping[tuple[str, str], float] | None = None,
    own: Mapping[tuple[str, str], np.ndarray] | None = None,
) -> ModelComparison:
    """Return the comparison from every model's values and resamples (tables, ranks, notes).

    ``dists`` are what the differences are read from (paired models: common resamples);
    ``own``, where given, what each model's own interval is read from instead (paired models
    on cells: each model's own cells, drawn as :func:`core.analyses.analysis.analyze` draws them, so a
    model has one interval on every page; see :func:`own_cell_dists`). ``truths`` holds ``(model, metric key) →`` the estimand's value in the bootstrap world,
    for the basic interval (``config.bootstrap_interval``; a key without one pivots on its
    value); a difference pivots on the difference of its models' truths.

    The last step of :meth:`ComparisonPlan.finish`, shared with the streamed comparison
    (:func:`core.stream.compare.run_comparison`), which has the same values and resamples
    without the rows.

    Returns
    -------
    ModelComparison
        The comparison.
    """
    specs, reference, test = settings.specs, settings.reference, settings.test
    n_resamples, confidence_level, seed = (
        settings.n_resamples,
        settings.confidence_level,
        settings.seed,
    )
    dists = dict(dists)
    by_model = dists if own is None else {**dists, **own}
    ranks = _ranks(models, specs, values)
    pivots = {k: (truths or {}).get(k, v) for k, v in values.items()}
    supports = {spec.key: support_of(spec.name) for spec in specs}
    bounds = _Intervals(confidence_level, config.bootstrap_interval, pivots, supports)
    table = _table(models, specs, values, by_model, bounds, notes_by, ranks)
    if reference is None:
        reference = str(ranks[specs[0].key].idxmin())
    differences = _differences(models, specs, values, dists, reference, bounds)
    kendall = _kendall(specs, ranks)
    flips = _flips(models, specs, values, dists, bounds, table)

    pooled = sum(n[m] for m in models)
    notes = [_binning_note(config, len(models), pooled)]
    notes.append(_pairing_note(paired, mode, n_resamples))
    notes += [note for s in specs if (note := _own_bins_note(s, config))]
    notes.extend(extra_notes)
    few = [m for m in models if n[m] < FEW_ROWS]
    if few:
        shown = ", ".join(f"{m!r} ({n[m]:,})" for m in few)
        notes.append(
            f"Few rows: {shown} {'has' if len(few) == 1 else 'have'} fewer than {FEW_ROWS} "
            "rows. Bootstrap intervals of so few rows are too narrow to trust, so a "
            "difference marked significant for such a model may well be noise."
        )
    if test is not None and TESTS.get(test).binned and BINNINGS.get(config.binning).data_dependent:
        notes.append(
            f"The {TESTS.get(test).label} test bins each model with its own {config.binning} edges."
        )
    return ModelComparison(
        config=config,
        models=models,
        metrics=specs,
        reference=reference,
        paired=paired,
        n=dict(n),
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        seed=seed,
        test=test,
        component_names=tuple(components),
        edges=edges,
        bins=bins,
        table=table,
        differences=differences,
        tests=tests,
        ranks=ranks,
        kendall=kendall,
        flips=flips,
        distributions=dists,
        model_distributions=by_model,
        notes=tuple(notes),
    )


def _pairing_note(paired: bool, mode: str, n_resamples: int) -> str:
    if mode == "exact" or not n_resamples:
        return (
            "Paired: every model was evaluated on the same rows, so all models are resampled "
            "with the same row indices and differences get paired-bootstrap intervals."
            if paired
            else "Not paired: the models were evaluated on different rows (different n or "
            "labels), so each model is resampled independently and the intervals of "
            "differences are those of independent bootstraps (wider than paired ones)."
        )
    if paired:
        return (
            "Paired: every model was evaluated on the same rows. Differences get paired "
            "intervals from the cell bootstrap over joint cells (the combination of every "
            "model's bins and the labels: one draw resamples all models together); each "
            "model's own interval comes from its own cells, drawn as the Reliability page "
            "draws them (on equal-width or discrete bins, which are each model's own, it is "
            "the interval that page shows)."
        )
    return (
        "Not paired: the models were evaluated on different rows (different n or labels). "
        "Intervals come from the cell bootstrap of each model's own cells with its own seed; "
        "the intervals of differences are those of independent bootstraps."
    )


# --------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class _Intervals:
    """How the comparison's intervals are read: level, method, the basic pivots and ranges."""

    confidence_level: float
    method: str
    truths: Mapping[tuple[str, str], float]
    supports: Mapping[str, tuple[float, float] | None]

    def of(
        self, dist: np.ndarray | None, value: float, models: Sequence[str], key: str
    ) -> tuple[float, float]:
        """Return the interval of a model's value (one model) or of a difference (a − b).

        A model's basic interval is cut to its metric's range; a difference has none.
        """
        truth = math.nan
        if pivots(self.method):
            sign = (1.0, -1.0)
            truth = sum(s * self.truths[m, key] for s, m in zip(sign, models, strict=False))
        support = self.supports.get(key) if len(models) == 1 else None
        return interval_bounds(
            dist, self.confidence_level, self.method, value, truth, support=support
        )


def _signed(spec: MetricSpec, values: np.ndarray) -> np.ndarray:
    """Values oriented so that lower is better."""
    return -values if spec.higher_is_better else values


def _table(
    models: tuple[str, ...],
    specs: tuple[MetricSpec, ...],
    values: Mapping[tuple[str, str], float],
    dists: Mapping[tuple[str, str], np.ndarray],
    bounds: _Intervals,
    notes: Mapping[tuple[str, str], str],
    ranks: pd.DataFrame,
) -> pd.DataFrame:
    rows = []
    for spec in specs:
        v = np.array([values[m, spec.key] for m in models])
        rank = ranks[spec.key].to_numpy()
        best = rank == 1
        for i, m in enumerate(models):
            low, high = bounds.of(dists.get((m, spec.key)), float(v[i]), (m,), spec.key)
            rows.append(
                {
                    "model": m,
                    "metric": spec.key,
                    "label": spec.label,
                    "value": float(v[i]),
                    "low": low,
                    "high": high,
                    "rank": int(rank[i]) if np.isfinite(rank[i]) else 0,
                    "best": bool(best[i]),
                    "note": with_outside_note(
                        "; ".join(
                            filter(
                                None,
                                [
                                    notes.get((m, spec.key), ""),
                                    undefined_note(dists.get((m, spec.key))),
                                ],
                            )
                        ),
                        v[i],
                        low,
                        high,
                        bounds.method,
                    ),
                }
            )
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def _ranks(
    models: tuple[str, ...],
    specs: tuple[MetricSpec, ...],
    values: Mapping[tuple[str, str], float],
) -> pd.DataFrame:
    from scipy import stats as _stats  # a third of a second to import: only when ranked

    out = {}
    for spec in specs:
        v = np.array([values[m, spec.key] for m in models])
        out[spec.key] = _stats.rankdata(_signed(spec, v), method="min", nan_policy="omit")
    return pd.DataFrame(out, index=pd.Index(models, name="model"))


def _differences(
    models: tuple[str, ...],
    specs: tuple[MetricSpec, ...],
    values: Mapping[tuple[str, str], float],
    dists: Mapping[tuple[str, str], np.ndarray],
    reference: str,
    bounds: _Intervals,
) -> pd.DataFrame:
    rows = []
    for spec in specs:
        for m in models:
            if m == reference:
                continue
            diff = values[m, spec.key] - values[reference, spec.key]
            a, b = dists.get((m, spec.key)), dists.get((reference, spec.key))
            paired = None if a is None or b is None else a - b
            low, high = bounds.of(paired, diff, (m, reference), spec.key)
            significant = bool(low > 0 or high < 0)
            lower_better = not spec.higher_is_better
            better = significant and ((high < 0) if lower_better else (low > 0))
            rows.append(
                {
                    "model": m,
                    "metric": spec.key,
                    "label": spec.label,
                    "reference": reference,
                    "difference": diff,
                    "low": low,
                    "high": high,
                    "significant": significant,
                    "better": better,
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "model", "metric", "label", "reference", "difference", "low", "high",
            "significant", "better",
        ],
    )  # fmt: skip


def _tests(
    data: Mapping[str, tuple],
    models: tuple[str, ...],
    test: str | None,
    config: AnalysisConfig,
    seeds: Mapping[str, int],
    test_options: Mapping[str, Any] | None,
    *,
    done: Callable[[int], Any] | None = None,
) -> pd.DataFrame:
    columns = ["model", "test", "lens", "statistic", "pvalue", "bound", "note"]
    if test is None:
        return pd.DataFrame(columns=columns)
    lens, opts = test_settings(test, config, test_options)

    def run(m: str) -> Any:
        try:
            return calibration_test(
                data[m].probs, data[m].labels, test=test, lens=lens, seed=seeds[m], **opts
            )
        except CalibscopeError as exc:
            return exc

    rows = []
    for m, r in zip(models, map_ordered(run, models, done=done), strict=True):
        if isinstance(r, CalibscopeError):
            rows.append(
                {"model": m, "test": test, "lens": lens or "", "statistic": math.nan,
                 "pvalue": math.nan, "bound": False, "note": str(r)}
            )  # fmt: skip
            continue
        note = r.method + (f" (± {r.mc_error:.2g} Monte-Carlo)" if r.mc_error else "")
        if r.caveat:
            note += f". {r.caveat}"
        rows.append(
            {"model": m, "test": test, "lens": r.lens, "statistic": float(r.statistic),
             "pvalue": float(r.pvalue), "bound": bool(r.pvalue_is_bound), "note": note}
        )  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def _kendall(specs: tuple[MetricSpec, ...], ranks: pd.DataFrame) -> pd.DataFrame:
    from scipy import stats as _stats

    keys = [s.key for s in specs]
    out = pd.DataFrame(np.eye(len(keys)), index=keys, columns=keys)
    for a, b in itertools.combinations(keys, 2):
        ra, rb = ranks[a].to_numpy(), ranks[b].to_numpy()
        ok = np.isfinite(ra) & np.isfinite(rb)
        tau = math.nan
        if ok.sum() >= 2 and np.ptp(ra[ok]) > 0 and np.ptp(rb[ok]) > 0:
            tau = float(_stats.kendalltau(ra[ok], rb[ok]).statistic)
        out.loc[a, b] = out.loc[b, a] = tau
    return out


def _flips(
    models: tuple[str, ...],
    specs: tuple[MetricSpec, ...],
    values: Mapping[tuple[str, str], float],
    dists: Mapping[tuple[str, str], np.ndarray],
    intervals: _Intervals,
    table: pd.DataFrame,
) -> pd.DataFrame:
    columns = [
        "model_a", "model_b", "metric_a", "metric_b", "better_by_a", "better_by_b", "significant_a",
        "significant_b", "significant", "intervals_overlap",
    ]  # fmt: skip
    bounds = {(r.model, r.metric): (r.low, r.high) for r in table.itertuples(index=False)}

    def decided(spec: MetricSpec, a: str, b: str) -> bool | None:
        da, db = dists.get((a, spec.key)), dists.get((b, spec.key))
        if da is None or db is None:
            return None
        diff = values[a, spec.key] - values[b, spec.key]
        low, high = intervals.of(da - db, diff, (a, b), spec.key)
        return bool(low > 0 or high < 0)

    def overlap(spec: MetricSpec, a: str, b: str) -> bool | None:
        (la, ha), (lb, hb) = bounds[a, spec.key], bounds[b, spec.key]
        if any(math.isnan(x) for x in (la, ha, lb, hb)):
            return None
        return bool(la <= hb and lb <= ha)

    rows = []
    for sa, sb in itertools.combinations(specs, 2):
        for a, b in itertools.combinations(models, 2):
            da = float(_signed(sa, np.array(values[a, sa.key] - values[b, sa.key])))
            db = float(_signed(sb, np.array(values[a, sb.key] - values[b, sb.key])))
            if not (da * db < 0):
                continue
            sig_a, sig_b = decided(sa, a, b), decided(sb, a, b)
            over = [overlap(sa, a, b), overlap(sb, a, b)]
            rows.append(
                {
                    "model_a": a,
                    "model_b": b,
                    "metric_a": sa.key,
                    "metric_b": sb.key,
                    "better_by_a": a if da < 0 else b,
                    "better_by_b": a if db < 0 else b,
                    "significant_a": sig_a,
                    "significant_b": sig_b,
                    "significant": None if sig_a is None or sig_b is None else sig_a and sig_b,
                    "intervals_overlap": None if None in over else any(over),
                }
            )
    return pd.DataFrame(rows, columns=columns)
