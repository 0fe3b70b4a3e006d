"""One calibration-error estimate: :func:`calibration_error` and its result record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core._validation import check_norm, check_probs_labels, check_rng
from core.binning import BINNINGS, BinStats, check_n_bins, check_tie_policy
from core.errors import ConfigError
from core.estimators import ESTIMATORS
from core.lenses import LENSES

_BIN_COLUMNS = ["bin", "lower", "upper", "count", "mean_score", "mean_label", "gap"]


@dataclass(frozen=True, eq=False)
class CalibrationErrorResult:
    """A calibration-error estimate with the settings and bins that produced it.

    Attributes
    ----------
    value : float
        The estimate (aggregated over components).
    estimator, lens, binning : str
        Registry names used.
    n_bins : int
        Requested number of bins (the sweep reports its choice in ``details["b_star"]``).
    norm : float
        ``1.0``, ``2.0`` or ``inf``.
    components : tuple of str
        Component names.
    component_values : tuple of float
        Per-component estimates.
    bins : tuple of BinStats or None
        Per-component bin statistics (None for kernel estimators).
    details : dict
        Estimator extras (``signed_square``, ``b_star``, ``sweep_trace``, ...).
    """

    value: float
    estimator: str
    lens: str
    binning: str
    n_bins: int
    norm: float
    components: tuple[str, ...]
    component_values: tuple[float, ...]
    bins: tuple[BinStats, ...] | None
    details: dict[str, Any] = field(default_factory=dict)

    def __float__(self) -> float:
        return float(self.value)

    @property
    def bin_table(self) -> pd.DataFrame:
        """Bin table of every component (``component`` column when there are several).

        Returns
        -------
        pandas.DataFrame
            Columns ``bin, lower, upper, count, mean_score, mean_label, gap``; empty for
            estimators without bins.
        """
        if not self.bins:
            return pd.DataFrame({c: [] for c in _BIN_COLUMNS})
        if len(self.bins) == 1:
            return self.bins[0].to_frame()
        frames = []
        for name, st in zip(self.components, self.bins, strict=True):
            frame = st.to_frame()
            frame.insert(0, "component", name)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)


def calibration_error(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    estimator: str = "plugin",
    binning: str = "equal-width",
    n_bins: int = 15,
    norm: float | str = 1,
    lens: str = "top-label",
    tie_policy: str = "split",
    class_weights: ArrayLike | None = None,
    class_names: tuple[str, ...] | None = None,
    seed: int | np.random.Generator | None = None,
    **options: Any,
) -> CalibrationErrorResult:
    """Estimate the calibration error of probabilistic predictions.

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probability rows.
    labels : array_like
        Class indices ``0..K−1``.
    estimator : str, default "plugin"
        A name in :data:`core.estimators.ESTIMATORS` (``plugin``, ``label-binned``,
        ``debiased``, ``sweep``, kernel estimators ...).
    binning : str, default "equal-width"
        A name in :data:`core.binning.BINNINGS` (binned estimators only).
    n_bins : int, default 15
        Number of bins (≥ 1).
    norm : {1, 2, inf}, default 1
        The ℓp norm: 1 is the ECE, 2 the ℓ2 calibration error, inf the MCE.
    lens : str, default "top-label"
        ``binary``, ``top-label``, ``classwise`` or (kernel estimators) ``canonical``.
    tie_policy : {"split", "keep"}, default "split"
        Equal-mass treatment of equal scores (see :mod:`core.binning`).
    class_weights : array_like, optional
        Classwise aggregation weights (default uniform).
    class_names : tuple of str, optional
        Component names for the classwise lens.
    seed : int, Generator or None
        Randomness of random estimators (``None`` means seed 0).
    **options
        Estimator-specific options (e.g. ``n_resamples`` for ℓ1 debiased, ``max_bins`` for
        the sweep); unknown options raise :class:`~core.errors.ConfigError`.

    Returns
    -------
    CalibrationErrorResult
        The estimate with its settings, bins and details.

    Raises
    ------
    DataError
        For invalid probabilities or labels.
    ConfigError
        For unknown names, unsupported norm/lens combinations or bad options.

    Examples
    --------
    >>> p = [0.6, 0.7, 0.8, 0.9]; y = [0, 0, 1, 1]
    >>> round(calibration_error(p, y, lens="binary", n_bins=2).value, 12)
    0.25
    """
    entry = ESTIMATORS.get(estimator)
    meta = entry.meta
    p_norm = check_norm(norm)
    n_bins = check_n_bins(n_bins)
    tie_policy = check_tie_policy(tie_policy)
    LENSES.get(lens)
    if lens not in meta.get("lenses", ()):
        raise ConfigError(
            f"Estimator {estimator!r} does not support the {lens!r} lens; it supports "
            f"{', '.join(meta.get('lenses', ()))}. Estimators for {lens!r}: "
            f"{', '.join(ESTIMATORS.names(lenses=lens)) or 'none'}."
        )
    norms = meta.get("norms")
    if norms is not None and p_norm not in norms:
        supported = ", ".join(_norm_name(v) for v in norms)
        raise ConfigError(
            f"Estimator {estimator!r} does not support the {_norm_name(p_norm)} norm; "
            f"use one of: {supported}."
        )
    if meta.get("binned"):
        BINNINGS.get(binning)
        allowed = meta.get("binnings")
        if allowed is not None and binning not in allowed:
            raise ConfigError(
                f"Estimator {estimator!r} bins with {' or '.join(allowed)}, not {binning!r}."
            )
    p, y = check_probs_labels(probs, labels)
    est = entry.func(
        p,
        y,
        lens=lens,
        norm=p_norm,
        binning=binning,
        n_bins=n_bins,
        tie_policy=tie_policy,
        class_weights=class_weights,
        class_names=class_names,
        rng=check_rng(seed),
        **options,
    )
    return CalibrationErrorResult(
        value=float(est.value),
        estimator=estimator,
        lens=lens,
        binning=binning,
        n_bins=n_bins,
        norm=p_norm,
        components=tuple(est.components),
        component_values=tuple(float(v) for v in est.component_values),
        bins=est.bins,
        details=dict(est.details),
    )


def _norm_name(p: float) -> str:
    return "ℓ∞" if np.isinf(p) else f"ℓ{int(p)}"
