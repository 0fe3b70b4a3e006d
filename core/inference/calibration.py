"""One calibration-error estimate: :func:`calibration_error` and its result record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from core.base.validation import check_norm, check_probs_labels, check_rng, check_with_top_label
from core.estimators import ESTIMATORS
from core.estimators.base import Estimate, EstimatorInfo, estimate_binned
from core.stats.binned_view import OWN_WEIGHTS, BinnedViews
from core.stats.binning import BinStats, check_n_bins, check_tie_policy
from core.stats.conventions import CONVENTIONS
from core.stats.lenses import LENSES, known_top_label

if TYPE_CHECKING:
    import pandas as pd

    from core.stats.binned_view import BinnedViews

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
        import pandas as pd

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


@dataclass(frozen=True, eq=False)
class EstimatorCall:
    """One estimator with every choice validated: what :func:`calibration_error` runs.

    Build it with :meth:`make`; the bootstrap, the model comparison and the analyses
    validate options once this way and then run the estimator on many samples.

    Attributes
    ----------
    info : EstimatorInfo
        The registry entry.
    lens, binning : str
        Registry names (``binning``: the estimator's own binning when it has one,
        :attr:`~core.estimators.base.EstimatorInfo.own_binning`).
    norm : float
        ``1.0``, ``2.0`` or ``inf``.
    n_bins : int
        Number of bins.
    tie_policy : str
        Equal-mass tie policy.
    class_weights : tuple of float or None
        Classwise aggregation weights.
    class_names : tuple of str or None
        Component names of the classwise lens.
    options : dict
        The estimator's options, defaults filled in.
    """

    info: EstimatorInfo
    lens: str
    norm: float
    binning: str
    n_bins: int
    tie_policy: str
    class_weights: tuple[float, ...] | None
    class_names: tuple[str, ...] | None
    options: Mapping[str, Any]
    convention: str = "calibscope"

    @classmethod
    def make(
        cls,
        estimator: str,
        *,
        binning: str = "equal-width",
        n_bins: int = 15,
        norm: float | str = 1,
        lens: str | None = None,
        tie_policy: str = "split",
        class_weights: ArrayLike | None = None,
        class_names: tuple[str, ...] | None = None,
        convention: str = "calibscope",
        **options: Any,
    ) -> EstimatorCall:
        """Validate an estimator's choices (the one :class:`~core.base.errors.ConfigError`).

        Parameters are those of :func:`calibration_error`; ``lens=None`` is the
        estimator's :attr:`~core.estimators.base.EstimatorInfo.default_lens`.
        """
        info = ESTIMATORS.get(estimator)
        lens = info.lens_or_default(lens)
        filled = info.check(lens=lens, norm=norm, binning=binning, options=options)
        CONVENTIONS.get(convention).check(
            estimator=estimator, norm=check_norm(norm), binning=binning, lens=lens
        )
        weights = None if class_weights is None else tuple(np.asarray(class_weights, float).ravel())
        return cls(
            info,
            lens,
            check_norm(norm),
            info.binning_for(binning),
            check_n_bins(n_bins),
            check_tie_policy(tie_policy),
            weights,
            None if class_names is None else tuple(class_names),
            filled,
            convention,
        )

    @property
    def native(self) -> bool:
        """Whether the bins are Calibscope's own (no library convention)."""
        return CONVENTIONS.get(self.convention).native

    def combine(self) -> Any:
        """How per-component values aggregate (the estimator's rule, or the convention's)."""
        return CONVENTIONS.get(self.convention).combine_for(self.info)

    def run(
        self,
        p: np.ndarray,
        y: np.ndarray,
        rng: np.random.Generator | int,
        float32_input: bool = False,
    ) -> Estimate:
        """Return the estimate on validated arrays.

        ``p`` is an ``(n, K)`` matrix or the P(y=1) vector of binary predictions
        (:func:`core.base.validation.as_probs`); ``float32_input`` says the predictions
        were given as float32 (a library convention may bin in that dtype).
        """
        if not self.native:  # a library's bins: through the views, which bin as it does
            views = BinnedViews(p, y, self.class_names, self.class_weights, float32_input)
            return self.run_on(views, rng)
        return self.info.func(
            p,
            y,
            lens=self.lens,
            norm=self.norm,
            binning=self.binning,
            n_bins=self.n_bins,
            tie_policy=self.tie_policy,
            class_weights=self.class_weights,
            class_names=self.class_names,
            rng=check_rng(rng),
            **self.options,
        )

    def run_on(self, views: BinnedViews, rng: np.random.Generator | int) -> Estimate:
        """Return the estimate on a data set's shared views (binned estimators reuse its bins)."""
        if self.info.binned and self.info.statistics != "rows":
            view = views.binned(
                self.lens,
                self.binning,
                self.n_bins,
                self.tie_policy,
                self.view_weights,
                convention=self.convention,
            )
            return estimate_binned(
                self.info, view, self.norm, check_rng(rng), self.options, self.combine()
            )
        return self.run(views.probs, views.labels, rng)

    def signature(self) -> tuple[Any, ...]:
        """Every choice of the call, hashable: equal signatures give equal values."""
        return (
            self.info.name,
            self.lens,
            self.norm,
            self.binning,
            self.n_bins,
            self.tie_policy,
            self.class_weights,
            self.class_names,
            tuple(sorted((k, repr(v)) for k, v in self.options.items())),
            self.convention,
        )

    def truth_call(self) -> EstimatorCall | None:
        """Return the call whose value on a sample is this one's estimand in its bootstrap world.

        The registry entry's :attr:`~core.estimators.base.EstimatorInfo.bootstrap_truth`
        with this call's lens, norm, bins and the options both share (plus the entry's
        ``truth_options``); None when that is this call itself.
        """
        name = self.info.bootstrap_truth
        if not name:
            return None
        entry = ESTIMATORS.get(name)
        options = {k: v for k, v in self.options.items() if k in entry.options}
        options.update(self.info.truth_options)
        truth = replace(
            self,
            info=entry,
            binning=entry.binning_for(self.binning),
            options=entry.check(lens=self.lens, options=options),
        )
        return None if truth.signature() == self.signature() else truth

    @property
    def view_weights(self) -> Any:
        """Class weights to ask a data set's views for (its own, off the classwise lens)."""
        # class weights only shape the classwise lens; elsewhere any view will do
        return self.class_weights if self.lens == "classwise" else OWN_WEIGHTS

    def result(self, est: Estimate) -> CalibrationErrorResult:
        """Wrap an estimate with these settings."""
        return CalibrationErrorResult(
            value=float(est.value),
            estimator=self.info.name,
            lens=self.lens,
            binning=self.binning,
            n_bins=self.n_bins,
            norm=self.norm,
            components=tuple(est.components),
            component_values=tuple(float(v) for v in est.component_values),
            bins=est.bins,
            details=dict(est.details),
        )


def calibration_error(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    estimator: str = "plugin",
    binning: str = "equal-width",
    n_bins: int = 15,
    norm: float | str = 1,
    lens: str | None = None,
    tie_policy: str = "split",
    class_weights: ArrayLike | None = None,
    class_names: tuple[str, ...] | None = None,
    seed: int | np.random.Generator | None = None,
    convention: str = "calibscope",
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
        A name in :data:`core.stats.binning.BINNINGS` (binned estimators only).
    n_bins : int, default 15
        Number of bins (≥ 1).
    norm : {1, 2, inf}, default 1
        The ℓp norm: 1 is the ECE, 2 the ℓ2 calibration error, inf the MCE.
    lens : str, optional
        ``binary``, ``top-label``, ``classwise`` or (kernel estimators) ``canonical``.
        None (the default) is the data's lens for the estimator
        (:meth:`~core.estimators.base.EstimatorInfo.lens_for`): ``binary`` for two classes
        (a P(y=1) vector or two columns) and ``top-label`` for more with the binned and
        smooth estimators, ``top-label`` for MMCE, ``canonical`` for the SKCE and KDE
        estimators. The result's ``lens`` says which was used.
    tie_policy : {"split", "keep"}, default "split"
        Equal-mass treatment of equal scores (see :mod:`core.stats.binning`).
    class_weights : array_like, optional
        Classwise aggregation weights (default uniform).
    class_names : tuple of str, optional
        Component names for the classwise lens.
    seed : int, Generator or None
        Randomness of random estimators (``None`` means seed 0).
    convention : str, default "calibscope"
        Whose bins: a name in :data:`core.stats.conventions.CONVENTIONS` (``calibscope``,
        ``sklearn``, ``netcal``, ``torchmetrics``, ``uncertainty-calibration``,
        ``relplot``); a library's convention reproduces that library's value exactly and
        raises :class:`~core.base.errors.ConfigError` naming what it offers otherwise.
    **options
        Estimator-specific options (e.g. ``n_resamples`` for ℓ1 debiased, ``max_bins`` for
        the sweep); unknown options raise :class:`~core.base.errors.ConfigError`.

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
    if lens is None:  # the data's default lens (binary for two classes)
        lens = ESTIMATORS.get(estimator).lens_for(_classes_of(probs))
    call = EstimatorCall.make(
        estimator,
        binning=binning,
        n_bins=n_bins,
        norm=norm,
        lens=lens,
        tie_policy=tie_policy,
        class_weights=class_weights,
        class_names=class_names,
        convention=convention,
        **options,
    )
    # binary P(y=1) stays a vector: the lenses read it without the [1 − p, p] matrix
    if LENSES.get(call.lens).row_argmax:
        # the rows' top label is taken while the checks read each block of the matrix
        p, y, top = check_with_top_label(probs, labels)
    else:
        p, y = check_probs_labels(probs, labels, matrix=False)
        top = None
    with known_top_label(p, top):
        return call.result(call.run(p, y, check_rng(seed), is_float32(probs)))


def _classes_of(probs: ArrayLike) -> int:
    """Return the number of classes of probabilities as given (a vector is P(y=1): two)."""
    shape = np.shape(probs)
    return 2 if len(shape) < 2 or shape[1] == 1 else int(shape[1])


def is_float32(probs: ArrayLike) -> bool:
    """Return whether predictions were given as float32 (numpy, or a tensor's dtype)."""
    return str(getattr(probs, "dtype", "")) in ("float32", "torch.float32")
