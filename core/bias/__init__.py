"""Bias of calibration-error estimators against sample size (bias by construction).

Draw ``n_resamples`` datasets of each size ``n`` from a source, compute every
requested estimator on each, and summarise mean, bias, spread and RMSE against
a reference (Roelofs et al. 2022, §4 and Eq. 7). Three sources:

- a :class:`~core.worlds.World` with known truth (``reference_kind="true CE"``);
- a world fitted to data (:class:`~core.worlds.fitting.WorldFit`,
  ``"true CE of the fitted world"``);
- the uploaded data itself, subsampled without replacement (``"full-data
  estimate"``: the estimator on all rows, a labelled reference, not the truth).

Randomness: replicate ``r`` draws from ``SeedSequence(seed, spawn_key=(r, k))``
(see :func:`draw_replicate`) and uses nested prefixes of one draw of size
``max(ns)``, so all estimators and all ``n`` share common random numbers,
and any split of the replicates into chunks (one process, joblib, Dask, Ray)
gives identical results for a given seed.

Binned estimators are vectorised across replicates: bin statistics are built
for a whole chunk of replicates at once and passed to the estimators' batch
kernels (:func:`~core.estimators.plugin_from_stats`,
:func:`~core.estimators.debiased_sq_from_stats`); the monotone sweep runs on all
replicates of a chunk at once through the estimator's own search,
:func:`~core.estimators.binned.sweep_search`. Other estimators are called once
per replicate through the registry.
"""

from core.bias.batches import batch_bin_stats, batch_sweep
from core.bias.presets import TEACHING_PRESETS, TeachingPreset
from core.bias.runner import (
    CHUNK_ELEMENTS,
    DEFAULT_NS,
    ChunkResult,
    MapFunction,
    Progress,
    SimulationCancelled,
    SimulationPlan,
    SimulationResult,
    bias_vs_n,
    run_chunk,
    simulate_estimates,
)
from core.bias.sources import (
    DataSource,
    FittedData,
    data_source,
    draw_replicate,
    fit_data,
    simulation_lens,
)
from core.bias.specs import (
    EstimatorSpec,
    default_estimators,
    estimator_choices,
    option_label,
    specs_with_bins,
)
from core.bias.views import (
    EstimateHistogram,
    bias_heatmap,
    consistent_tce_range,
    detection_power,
    ece_vs_tce,
    estimate_histogram,
    least_biased_bins,
    n_for_power,
    observed_estimate,
)

__all__ = [
    "CHUNK_ELEMENTS",
    "DEFAULT_NS",
    "TEACHING_PRESETS",
    "ChunkResult",
    "DataSource",
    "EstimateHistogram",
    "EstimatorSpec",
    "FittedData",
    "MapFunction",
    "Progress",
    "SimulationCancelled",
    "SimulationPlan",
    "SimulationResult",
    "TeachingPreset",
    "batch_bin_stats",
    "batch_sweep",
    "bias_heatmap",
    "bias_vs_n",
    "consistent_tce_range",
    "data_source",
    "default_estimators",
    "detection_power",
    "estimate_histogram",
    "draw_replicate",
    "ece_vs_tce",
    "estimator_choices",
    "fit_data",
    "least_biased_bins",
    "n_for_power",
    "observed_estimate",
    "option_label",
    "run_chunk",
    "simulate_estimates",
    "simulation_lens",
    "specs_with_bins",
]
