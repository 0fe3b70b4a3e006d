"""Cached core calls of the Estimators page, keyed on the data digest and the options.

Arrays are passed as ``_``-prefixed arguments, so Streamlit never hashes a sample of them;
the exact :attr:`core.data.Predictions.digest` is the key instead (as in
:mod:`dashboard.state`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st

if TYPE_CHECKING:
    import pandas as pd

    from core.analysis import AnalysisConfig
    from core.data import Predictions
    from core.estimator_comparison import EstimatorComparison

#: Session key of the (digest, config) pairs whose kernel intervals were asked for.
_KERNEL_REQUESTED = "_estimators_kernel_intervals"


@st.cache_data(max_entries=16, show_spinner="Running every estimator…")
def _compare(
    digest: str,
    config: AnalysisConfig,
    intervals: str,
    _predictions: Any,
) -> EstimatorComparison:
    from core.estimator_comparison import compare_estimators

    return compare_estimators(_predictions, config, intervals=intervals)


def compare(
    predictions: Predictions, config: AnalysisConfig, intervals: str
) -> EstimatorComparison:
    """Return :func:`core.estimator_comparison.compare_estimators`, cached.

    Parameters
    ----------
    predictions : core.data.Predictions
        The data (its exact ``digest`` is the cache key).
    config : core.analysis.AnalysisConfig
        The sidebar's options.
    intervals : {"all", "binned", "none"}
        Which estimators get bootstrap intervals.

    Returns
    -------
    core.estimator_comparison.EstimatorComparison
        The comparison.
    """
    return _compare(predictions.digest, config, intervals, predictions)


@st.cache_data(max_entries=16, show_spinner="Computing the error for every number of bins…")
def _curve(
    digest: str,
    config: AnalysisConfig,
    n_bins_range: tuple[int, int],
    _predictions: Any,
) -> pd.DataFrame:
    from core.estimator_comparison import error_versus_bins

    return error_versus_bins(_predictions, config, n_bins_range=n_bins_range)


def curve(
    predictions: Predictions, config: AnalysisConfig, n_bins_range: tuple[int, int]
) -> pd.DataFrame:
    """Return :func:`core.estimator_comparison.error_versus_bins` on the config's lens, cached.

    Parameters
    ----------
    predictions : core.data.Predictions
        The data.
    config : core.analysis.AnalysisConfig
        Lens, norm, tie policy, class weights and seed are used.
    n_bins_range : (int, int)
        First and last number of bins.

    Returns
    -------
    pandas.DataFrame
        The tidy curve table.
    """
    return _curve(
        predictions.digest, config, (int(n_bins_range[0]), int(n_bins_range[1])), predictions
    )


def request_kernel_intervals(key: tuple) -> None:
    """Remember that kernel intervals were asked for on this data and these options."""
    st.session_state.setdefault(_KERNEL_REQUESTED, set()).add(key)


def kernel_intervals_requested(predictions: Predictions, config: AnalysisConfig) -> bool:
    """Whether this session asked for the kernel intervals of this data and these options."""
    return (predictions.digest, config) in st.session_state.get(_KERNEL_REQUESTED, set())
