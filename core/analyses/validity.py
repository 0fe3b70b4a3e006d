"""Validity plots of binned recalibrators over repeated calibration/test splits.

Gupta & Ramdas (2021) judge a binning recalibrator ``h`` by its *validity curve*
``V(ε) = Pr(|E[Y | h(X)] − h(X)| ≤ ε)``: ``h`` is ``(ε, 1 − V(ε))``-marginally
calibrated for every ε, and ``1 − ∫₀¹ V = E[ℓ1-ECE]``. On a held-out test set the
estimator (6) groups the test rows by their distinct output value ``h_b``, takes the
mean outcome ``ȳ_b`` of each group and its gap ``d_b = |ȳ_b − h_b|``:

- marginal validity ``V̂(ε) = Σ_b (n_b / N)·1{d_b ≤ ε}`` (a step function with a jump
  of ``n_b/N`` at ``d_b``; its AUC is one minus the plug-in ℓ1-ECE of the discrete bins);
- conditional validity ``V̂_c(ε) = 1{max_b d_b ≤ ε}`` (0 or 1 per split).

Each of ``R`` runs draws a random calibration subset, fits the recalibrator on it and
evaluates on disjoint test rows; the curves are then averaged over runs and shown as
mean ± standard deviation of the mean, as in the paper. The *theory curves* invert the
bound (11) of Theorem 4 (:func:`core.stats.guarantees.theory_validity`) and apply to UMD
(and, by Corollary 1, to the original Zadrozny–Elkan binning) only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from core.base.errors import ConfigError, DataError
from core.base.progress import Progress
from core.base.validation import (
    MAX_BINS,
    MAX_RESAMPLES,
    check_at_most,
    check_probs_labels,
    check_rng,
)
from core.data import Predictions
from core.estimators.base import plugin_from_stats
from core.recalibration import RECALIBRATORS
from core.recalibration.histogram import JITTER_DELTA
from core.stats.guarantees import DEFAULT_ALPHA, guarantee_epsilon, theory_validity
from core.stats.intervals import bin_intervals

if TYPE_CHECKING:
    import pandas as pd

#: Lenses a validity plot is defined for: one score and one 0/1 outcome per row.
VALIDITY_LENSES = ("binary", "top-label")
#: Default ε grid: 0, 0.001, …, 1 (the reference code's step).
DEFAULT_EPS_GRID = np.linspace(0.0, 1.0, 1001)
#: Recalibrators whose bound (11) gives a theory curve, with their variant.
THEORY_VARIANTS = {"histogram-umd": "umd", "histogram-ze": "zadrozny-elkan"}


@dataclass(frozen=True, eq=False)
class ValidityResult:
    """Validity curves of a recalibrator over repeated calibration/test splits.

    Attributes
    ----------
    method : str
        Registry name of the recalibrator.
    lens : str
        ``binary`` or ``top-label``.
    n_bins : int
        ``B`` given to the recalibrator (when it has bins).
    n_rows, n_cal, n_test, n_resamples : int
        Rows of the data, calibration and test rows of each run, number of runs ``R``.
    seed : int or None
        The seed of the splits and fits.
    alpha, confidence_level : float
        Failure probability of the per-bin guarantee half-width; level of the Wilson
        intervals.
    recalibrator_options : Mapping
        Options the recalibrator was made with.
    eps : numpy.ndarray
        ``(G,)`` ε grid.
    marginal, conditional : numpy.ndarray
        ``(R, G)`` per-run ``V̂(ε)`` and ``V̂_c(ε)``.
    marginal_mean, marginal_sem, conditional_mean, conditional_sem : numpy.ndarray
        ``(G,)`` mean over runs and standard deviation of the mean (sample sd with
        ``ddof=1`` over ``√R``; NaN when ``R = 1``).
    theory_marginal, theory_conditional : numpy.ndarray or None
        ``(G,)`` theory curves (None when the bound does not apply to the method).
    theory_note : str
        The theory curve's formula and assumptions, or why there is none.
    min_bin_labels : int
        ``m = ⌊n_cal/B⌋ − 1``, the fewest calibration labels a UMD bin averages.
    ece : numpy.ndarray
        ``(R,)`` plug-in ℓ1-ECE of each run's test rows on its discrete bins.
    auc : numpy.ndarray
        ``(R,)`` area under each run's ``V̂`` on [0, 1] (left Riemann sum on the grid
        with 0 and 1 added).
    auc_identity_gap : float
        ``max_r |1 − auc_r − ece_r|``: the AUC identity holds up to the grid.
    auc_identity_tolerance : float
        The largest grid step (the most the identity can be off by).
    max_gap : numpy.ndarray
        ``(R,)`` ``max_b d_b`` of each run (where its conditional curve jumps to 1).
    n_groups : numpy.ndarray
        ``(R,)`` distinct output values of each run on its test rows.
    bins : pandas.DataFrame
        Per-bin view of the representative run (run 0): ``value`` (``h_b``), ``count``,
        ``positives``, ``mean_label`` (``ȳ_b``), Wilson ``low``/``high``, ``gap``
        (``ȳ_b − h_b``), ``abs_gap``, ``cal_count`` (calibration labels behind the
        value, when the recalibrator reports them) and ``halfwidth``
        (``sqrt(log(2B/α)/(2·cal_count))``, Theorem 3's per-bin guarantee).
    pooled_bins : pandas.DataFrame or None
        Bins pooled over runs by the rank of their value (only when every run has the
        same number of groups): mean ``value``, ``mean_label``, ``count``,
        ``abs_gap``, its sd over runs, and ``share_within`` — the share of runs whose
        gap is at most the conditional guarantee ε (NaN without theory).
    notes : tuple of str
        Remarks (ties, small test bins, assumptions).
    """

    method: str
    lens: str
    n_bins: int
    n_rows: int
    n_cal: int
    n_test: int
    n_resamples: int
    seed: int | None
    alpha: float
    confidence_level: float
    recalibrator_options: Mapping[str, Any]
    eps: np.ndarray
    marginal: np.ndarray
    conditional: np.ndarray
    marginal_mean: np.ndarray
    marginal_sem: np.ndarray
    conditional_mean: np.ndarray
    conditional_sem: np.ndarray
    theory_marginal: np.ndarray | None
    theory_conditional: np.ndarray | None
    theory_note: str
    min_bin_labels: int
    ece: np.ndarray
    auc: np.ndarray
    auc_identity_gap: float
    auc_identity_tolerance: float
    max_gap: np.ndarray
    n_groups: np.ndarray
    bins: pd.DataFrame
    pooled_bins: pd.DataFrame | None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def auc_identity_holds(self) -> bool:
        """Whether ``1 − AUC`` equals the plug-in ℓ1-ECE of every run up to the grid."""
        return self.auc_identity_gap <= self.auc_identity_tolerance + 1e-12

    @property
    def ece_mean(self) -> float:
        """Mean plug-in ℓ1-ECE over runs (``1 − AUC`` of the mean curve, exactly)."""
        return float(self.ece.mean())

    @property
    def epsilon_conditional(self) -> float:
        """Theorem 3's ε at ``α`` for ``n_cal`` and ``B`` (``inf`` without a guarantee)."""
        if self.method not in THEORY_VARIANTS:
            return float("inf")
        kind = "zadrozny-elkan" if THEORY_VARIANTS[self.method] != "umd" else "conditional"
        return guarantee_epsilon(self.n_cal, self.n_bins, self.alpha, kind=kind)

    def epsilon_at(self, q: float, *, curve: str = "marginal") -> float:
        """Smallest grid ε where the mean curve reaches ``q`` (NaN if it never does).

        Parameters
        ----------
        q : float
            Target validity, e.g. 0.9: "for 90 % of test points the miscalibration is at
            most ε".
        curve : {"marginal", "conditional"}
            Which mean curve.

        Returns
        -------
        float
            ε, or NaN.
        """
        mean = self.marginal_mean if curve == "marginal" else self.conditional_mean
        hit = np.flatnonzero(mean >= q - 1e-12)
        return float(self.eps[hit[0]]) if hit.size else float("nan")

    def to_frame(self) -> pd.DataFrame:
        """Return the curves as a tidy table: ``eps``, ``curve``, ``mean``, ``sem``."""
        import pandas as pd

        parts = [
            pd.DataFrame(
                {
                    "eps": self.eps,
                    "curve": "marginal",
                    "mean": self.marginal_mean,
                    "sem": self.marginal_sem,
                }
            ),
            pd.DataFrame(
                {
                    "eps": self.eps,
                    "curve": "conditional",
                    "mean": self.conditional_mean,
                    "sem": self.conditional_sem,
                }
            ),
        ]
        if self.theory_marginal is not None and self.theory_conditional is not None:
            parts.append(
                pd.DataFrame(
                    {
                        "eps": self.eps,
                        "curve": "theory marginal",
                        "mean": self.theory_marginal,
                        "sem": np.nan,
                    }
                )
            )
            parts.append(
                pd.DataFrame(
                    {
                        "eps": self.eps,
                        "curve": "theory conditional",
                        "mean": self.theory_conditional,
                        "sem": np.nan,
                    }
                )
            )
        return pd.concat(parts, ignore_index=True)


@dataclass(frozen=True, eq=False)
class GroupStats:
    """Test rows grouped by distinct output value (the estimator (6)), for several runs.

    Attributes
    ----------
    run : numpy.ndarray
        ``(M,)`` run index of each group (groups of a run sorted by value).
    value : numpy.ndarray
        ``(M,)`` the output value ``h_b``.
    count : numpy.ndarray
        ``(M,)`` test rows ``n_b``.
    positives : numpy.ndarray
        ``(M,)`` positive outcomes in the group.
    n_test : numpy.ndarray
        ``(R,)`` test rows of each run.
    """

    run: np.ndarray
    value: np.ndarray
    count: np.ndarray
    positives: np.ndarray
    n_test: np.ndarray

    @property
    def mean_label(self) -> np.ndarray:
        """``ȳ_b`` of every group."""
        return self.positives / self.count

    @property
    def gap(self) -> np.ndarray:
        """``d_b = |ȳ_b − h_b|`` of every group."""
        return np.abs(self.mean_label - self.value)


def group_outputs(h: ArrayLike, outcomes: ArrayLike) -> GroupStats:
    """Group ``(R, N)`` outputs by run and distinct value; one lexicographic sort.

    Parameters
    ----------
    h : array_like
        ``(N,)`` or ``(R, N)`` recalibrated scores of the test rows.
    outcomes : array_like
        Same shape, 0/1 outcomes.

    Returns
    -------
    GroupStats
        One entry per (run, distinct value).
    """
    hv = np.atleast_2d(np.asarray(h, dtype=np.float64))
    tv = np.atleast_2d(np.asarray(outcomes, dtype=np.float64))
    if hv.shape != tv.shape:
        raise DataError(f"Outputs {hv.shape} and outcomes {tv.shape} must have the same shape.")
    if hv.shape[1] == 0:
        raise DataError("There are no test rows to evaluate on.")
    r, n = hv.shape
    flat_h = hv.ravel()
    flat_r = np.repeat(np.arange(r), n)
    order = np.lexsort((flat_h, flat_r))
    sh, sr = flat_h[order], flat_r[order]
    start = np.ones(sh.size, dtype=bool)
    start[1:] = (sh[1:] != sh[:-1]) | (sr[1:] != sr[:-1])
    gid = np.cumsum(start) - 1
    count = np.bincount(gid)
    positives = np.bincount(gid, weights=tv.ravel()[order])
    return GroupStats(sr[start], sh[start], count, positives, np.full(r, n, dtype=np.int64))


def validity_from_groups(groups: GroupStats, eps: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Marginal and conditional validity of every run on an ε grid (estimator (6)).

    A group counts towards ``V̂(ε)`` at the grid points ``ε ≥ d_b``: its weight
    ``n_b / N`` is added at the first such point (one ``searchsorted``) and a
    cumulative sum along the grid gives the step function, for all runs at once.

    Parameters
    ----------
    groups : GroupStats
        From :func:`group_outputs`.
    eps : array_like
        ``(G,)`` increasing ε values.

    Returns
    -------
    marginal, conditional : numpy.ndarray
        ``(R, G)`` arrays.
    """
    e = np.asarray(eps, dtype=np.float64)
    r = groups.n_test.size
    d = groups.gap
    first = np.searchsorted(e, d, side="left")  # first grid point with ε ≥ d_b
    weight = groups.count / groups.n_test[groups.run]
    jumps = np.zeros((r, e.size + 1))
    np.add.at(jumps, (groups.run, first), weight)
    marginal = np.cumsum(jumps, axis=1)[:, :-1]
    max_gap = np.full(r, -np.inf)
    np.maximum.at(max_gap, groups.run, d)
    conditional = (e[None, :] >= max_gap[:, None]).astype(np.float64)
    return np.minimum(marginal, 1.0), conditional


def _check_eps_grid(eps_grid: ArrayLike | None) -> np.ndarray:
    if eps_grid is None:
        return DEFAULT_EPS_GRID.copy()
    e = np.asarray(eps_grid, dtype=np.float64).ravel()
    if e.size < 2 or not np.isfinite(e).all():
        raise ConfigError("The ε grid needs at least two finite values.")
    if (np.diff(e) <= 0).any() or e[0] < 0 or e[-1] > 1:
        raise ConfigError("The ε grid must be strictly increasing within [0, 1].")
    return e


def _check_n_cal(n_cal: float | int, n_rows: int) -> int:
    if isinstance(n_cal, bool) or not isinstance(n_cal, int | float | np.integer):
        raise ConfigError(f"n_cal must be a fraction in (0, 1) or a row count; got {n_cal!r}.")
    if isinstance(n_cal, float) and 0 < n_cal < 1:
        k = int(round(n_cal * n_rows))
    elif float(n_cal) == int(n_cal) and int(n_cal) >= 1:
        k = int(n_cal)
    else:
        raise ConfigError(f"n_cal must be a fraction in (0, 1) or a row count; got {n_cal!r}.")
    if k < 2 or k > n_rows - 1:
        raise ConfigError(
            f"The calibration part must hold between 2 and n − 1 = {n_rows - 1} rows; "
            f"n_cal = {n_cal!r} gives {k} of {n_rows} rows."
        )
    return k


def _recalibrator(
    method: str, n_bins: int, lens: str, options: Mapping[str, Any] | None
) -> tuple[Any, dict[str, Any]]:

    entry = RECALIBRATORS.get(method)
    if not entry.discrete_output:
        allowed = ", ".join(RECALIBRATORS.names(discrete_output=True))
        raise ConfigError(
            f"Validity plots group test rows by the recalibrator's distinct outputs, so they "
            f"need a piecewise-constant recalibrator; {method!r} outputs a continuum. "
            f"Choose one of: {allowed}."
        )
    klass = entry.func
    params = list(entry.options)
    opts: dict[str, Any] = {}
    if "n_bins" in params:
        opts["n_bins"] = int(n_bins)
    if "lens" in params:
        opts["lens"] = lens
    if method in THEORY_VARIANTS and "unique_values" in params:
        # Algorithm 2's bin-value jitter: distinct values make E[Y | h(X)] = E[Y | bin],
        # which the marginal theory curve needs (the paper's experiments all use it)
        opts["unique_values"] = True
    opts.update(dict(options or {}))
    if opts.get("interpolation", "step") != "step":
        raise ConfigError(
            "Isotonic regression with linear interpolation is not piecewise constant; "
            "use interpolation='step' for validity plots."
        )
    unknown = sorted(set(opts) - set(params))
    if unknown:
        raise ConfigError(
            f"Unknown option(s) {', '.join(map(repr, unknown))} for recalibrator {method!r}; "
            f"valid options: {', '.join(params)}."
        )
    return klass, opts


def _theory(
    method: str, eps: np.ndarray, n_cal: int, n_bins: int, delta: float, lens: str
) -> tuple[np.ndarray | None, np.ndarray | None, str]:
    variant = THEORY_VARIANTS.get(method)
    if variant is None:
        return (
            None,
            None,
            f"No theory curve: the distribution-free bound (11) is proven for UMD histogram "
            f"binning (and, via Corollary 1, the original Zadrozny–Elkan binning), not for "
            f"{method}.",
        )
    if n_cal < 2 * n_bins:
        return None, None, f"No theory curve: the bound needs n_cal ≥ 2B ({n_cal} < {2 * n_bins})."
    m = n_cal // n_bins - 1
    shift = "ε − δ" if variant == "umd" else "ε − δ − 1/⌊n/B⌋"
    note = (
        f"Theory (Gupta & Ramdas 2021, Theorem 4{' and Corollary 1' if variant != 'umd' else ''}, "
        f"the bound (11) solved for α): V_th(ε) = max(0, 1 − 2·exp(−2m({shift})²)) and "
        f"V_th,c(ε) = max(0, 1 − 2B·exp(−2m({shift})²)) with m = ⌊n_cal/B⌋ − 1 = {m}, "
        f"δ = {delta:g}. Assumes calibration and test rows i.i.d. from one distribution, a "
        "score function not fitted on these rows, and ties broken at random "
        "(Algorithm 2); the marginal curve also needs distinct bin values."
    )
    if lens == "top-label":
        note += " Here the score is the top-label confidence and the label is 1{y = argmax}."
    tm = theory_validity(eps, n_cal, n_bins, kind="marginal", delta=delta, variant=variant)
    tc = theory_validity(eps, n_cal, n_bins, kind="conditional", delta=delta, variant=variant)
    return tm, tc, note


def _component(probs: np.ndarray, labels: np.ndarray, lens: str) -> np.ndarray:
    """Return the 0/1 outcome of the lens's one component (its recalibrated score is ``h``)."""
    if lens == "binary":
        return (labels == 1).astype(np.float64)
    pred = probs.argmax(axis=1)  # ties to the lowest index, as the recalibrators' top-label
    return (labels == pred).astype(np.float64)


def _sem(x: np.ndarray) -> np.ndarray:
    if x.shape[0] < 2:
        return np.full(x.shape[1], np.nan)
    return x.std(axis=0, ddof=1) / np.sqrt(x.shape[0])


def _validity_notes(bins: Any, n_groups: np.ndarray, method: str, n_bins: int) -> list[str]:
    """Say what makes the plot less reliable: bins of few test rows, merged equal outputs."""
    notes = []
    small = bins["count"] < 30
    if small.any():
        notes.append(
            f"{int(small.sum())} of {len(bins)} bins of run 1 hold fewer than 30 test rows: "
            "their gaps carry test noise of about 1/(2√n_b) or more, so V̂ is biased low "
            "(Gupta & Ramdas 2021, §2.1)."
        )
    if method in THEORY_VARIANTS and (n_groups < n_bins).any():
        notes.append(
            "Some runs have fewer distinct outputs than bins: bins with equal values are "
            "merged by the estimator (6)."
        )
    return notes


def _validity_inputs(predictions: Any, labels: Any, lens: str) -> tuple[np.ndarray, np.ndarray]:
    """Return the probabilities and labels of a validity plot, refusing a lens it cannot use."""
    if isinstance(predictions, Predictions):
        probs, y = predictions.probs, predictions.labels
    else:
        if labels is None:
            raise DataError("Labels are required when predictions are given as an array.")
        probs, y = check_probs_labels(predictions, labels)
    if lens not in VALIDITY_LENSES:
        raise ConfigError(
            f"Validity plots need one score and one 0/1 outcome per row: choose the binary or "
            f"top-label lens (got {lens!r})."
        )
    if lens == "binary" and probs.shape[1] != 2:
        raise ConfigError(
            f"The binary lens needs two classes; these predictions have {probs.shape[1]}. "
            "Use the top-label lens."
        )
    return probs, y


def _check_sizes(
    n_resamples: object, n_bins: object, confidence_level: object, alpha: object
) -> tuple[int, int, float]:
    """Return the runs, bins and level of a validity plot, refusing values out of range."""
    if isinstance(n_resamples, bool) or int(n_resamples) != n_resamples or int(n_resamples) < 1:
        raise ConfigError(f"n_resamples must be a positive integer; got {n_resamples!r}.")
    check_at_most("n_resamples", int(n_resamples), MAX_RESAMPLES)
    if isinstance(n_bins, bool) or int(n_bins) != n_bins or int(n_bins) < 1:
        raise ConfigError(f"n_bins must be a positive integer; got {n_bins!r}.")
    check_at_most("n_bins", int(n_bins), MAX_BINS)
    level = float(confidence_level)
    if not 0 < level < 1:
        raise ConfigError(f"confidence_level must lie in (0, 1); got {confidence_level!r}.")
    if not 0 < float(alpha) < 1:
        raise ConfigError(f"alpha must lie in (0, 1); got {alpha!r}.")
    return int(n_resamples), int(n_bins), level


def _one_run(
    probs: np.ndarray,
    y: np.ndarray,
    outcome: np.ndarray,
    klass: Any,
    opts: dict[str, Any],
    seeded: bool,
    rng: np.random.Generator,
    k_cal: int,
    k_test: int,
) -> tuple[Any, GroupStats]:
    """Fit on one random calibration split and return the fit and its test groups."""
    perm = rng.permutation(y.size)
    cal, test = perm[:k_cal], perm[k_cal : k_cal + k_test]
    run_opts = dict(opts)
    if seeded:
        run_opts["seed"] = int(rng.integers(2**32))
    rec = klass(**run_opts).fit(probs[cal], y[cal])
    # the lens's column of predict_proba, without the matrix around it
    return rec, group_outputs(rec.predict_component(probs[test]), outcome[test])


def _run_ece(groups: GroupStats, n_resamples: int) -> np.ndarray:
    """Plug-in ℓ1-ECE of each run on its discrete bins (one bin per group, runs padded)."""
    width = int(np.bincount(groups.run, minlength=n_resamples).max())
    slot = np.arange(groups.run.size) - np.searchsorted(groups.run, groups.run, side="left")
    counts = np.zeros((n_resamples, width))
    score_sums = np.zeros((n_resamples, width))
    label_sums = np.zeros((n_resamples, width))
    counts[groups.run, slot] = groups.count
    score_sums[groups.run, slot] = groups.value * groups.count
    label_sums[groups.run, slot] = groups.positives
    return np.asarray(plugin_from_stats(counts, score_sums, label_sums, 1.0), dtype=np.float64)


def validity_curves(
    predictions: Any,
    labels: ArrayLike | None = None,
    *,
    method: str = "histogram-umd",
    n_bins: int = 10,
    lens: str = "binary",
    n_cal: float | int = 0.5,
    n_test: int | None = None,
    n_resamples: int = 50,
    eps_grid: ArrayLike | None = None,
    alpha: float = DEFAULT_ALPHA,
    confidence_level: float = 0.95,
    recalibrator_options: Mapping[str, Any] | None = None,
    seed: int | np.random.Generator | None = None,
    progress: Progress | None = None,
) -> ValidityResult:
    """Marginal and conditional validity curves over ``R`` random calibration/test splits.

    Each run draws ``n_cal`` calibration rows at random (without replacement), fits the
    recalibrator on them, predicts the ``n_test`` other rows and evaluates the estimator
    (6) of Gupta & Ramdas (2021) on them (module docstring). The curves are averaged over
    runs (mean ± sd of the mean) and the theory curves of Theorem 4 are added for UMD.

    Parameters
    ----------
    predictions : Predictions or array_like
        A :class:`core.data.Predictions`, or ``(n,)`` P(y=1) / ``(n, K)`` probabilities
        (then ``labels`` is required).
    labels : array_like, optional
        Class indices, when ``predictions`` is an array.
    method : str, default "histogram-umd"
        A recalibrator with piecewise-constant output (registry meta
        ``discrete_output``): histogram binning (UMD, UMS, Zadrozny–Elkan, fixed width),
        isotonic regression (step), scaling-binning.
    n_bins : int, default 10
        ``B`` (ignored by recalibrators without bins, e.g. isotonic).
    lens : {"binary", "top-label"}
        ``binary``: the score is P(y=1) (two classes); ``top-label``: the confidence of
        the predicted class, the outcome is whether it is right.
    n_cal : float or int, default 0.5
        Calibration rows of each run: a fraction in (0, 1) or a count.
    n_test : int, optional
        Test rows of each run (default: all rows not used for calibration).
    n_resamples : int, default 50
        Number of random splits ``R``.
    eps_grid : array_like, optional
        Strictly increasing ε values in [0, 1]; default 0, 0.001, …, 1.
    alpha : float, default 0.1
        Failure probability of the per-bin guarantee half-width in the bin table.
    confidence_level : float, default 0.95
        Level of the per-bin Wilson intervals.
    recalibrator_options : mapping, optional
        Further options of the recalibrator (override the defaults; histogram UMD and
        Zadrozny–Elkan get ``unique_values=True``, Algorithm 2's jitter).
    seed : int, Generator or None
        Randomness of the splits and of the fits; None means 0.
    progress : callable, optional
        ``progress(fraction_done, message)`` after each run.

    Returns
    -------
    ValidityResult
        Curves, theory, per-bin views and the AUC identity check.

    Raises
    ------
    ConfigError
        For a recalibrator that is not piecewise constant, a lens other than binary /
        top-label, or sizes that do not fit the data.
    DataError
        For invalid predictions or labels.
    FitError
        When a run's calibration rows cannot be fitted (e.g. ``n_cal < 2B`` for UMD).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000); y = (rng.uniform(size=2000) < p).astype(int)
    >>> r = validity_curves(p, y, n_bins=5, n_resamples=3, seed=1)
    >>> r.marginal.shape, bool(r.auc_identity_holds)
    ((3, 1001), True)
    """
    import pandas as pd

    probs, y = _validity_inputs(predictions, labels, lens)
    n_resamples, n_bins, confidence_level = _check_sizes(
        n_resamples, n_bins, confidence_level, alpha
    )
    eps = _check_eps_grid(eps_grid)
    n_rows = int(y.size)
    k_cal = _check_n_cal(n_cal, n_rows)
    k_test = n_rows - k_cal if n_test is None else int(n_test)
    if k_test < 1 or k_cal + k_test > n_rows:
        raise ConfigError(
            f"n_test must be between 1 and n − n_cal = {n_rows - k_cal}; got {n_test!r}."
        )
    klass, opts = _recalibrator(method, n_bins, lens, recalibrator_options)

    has_seed = "seed" in RECALIBRATORS.get(method).options
    rng = check_rng(seed)
    outcome = _component(probs, y, lens)

    # each run is reduced to its groups at once: R × n_test outputs are never held
    parts: list[GroupStats] = []
    first_fit = None
    seeded = has_seed and "seed" not in (recalibrator_options or {})
    for r in range(n_resamples):
        rec, part = _one_run(probs, y, outcome, klass, opts, seeded, rng, k_cal, k_test)
        parts.append(part)
        if r == 0:
            first_fit = rec.fitted_params
        if progress is not None:
            progress((r + 1) / n_resamples, f"run {r + 1} of {n_resamples}")

    groups = GroupStats(
        run=np.repeat(np.arange(n_resamples), [g.run.size for g in parts]),
        value=np.concatenate([g.value for g in parts]),
        count=np.concatenate([g.count for g in parts]),
        positives=np.concatenate([g.positives for g in parts]),
        n_test=np.full(n_resamples, k_test, dtype=np.int64),
    )
    marginal, conditional = validity_from_groups(groups, eps)
    # the AUC on [0, 1]: the grid with its ends added, integrated as a left step sum
    nodes = np.unique(np.concatenate([[0.0], eps, [1.0]]))
    v_nodes, _ = validity_from_groups(groups, nodes)
    auc = (v_nodes[:, :-1] * np.diff(nodes)).sum(axis=1)
    ece = _run_ece(groups, n_resamples)
    gap = float(np.max(np.abs(1.0 - auc - ece)))
    tolerance = float(np.diff(nodes).max())
    max_gap = np.full(n_resamples, -np.inf)
    np.maximum.at(max_gap, groups.run, groups.gap)

    delta = 0.0
    if opts.get("unique_values"):
        delta = JITTER_DELTA
    tm, tc, note = _theory(method, eps, k_cal, n_bins, delta, lens)

    bins = _bin_table(groups, first_fit, n_bins, float(alpha), confidence_level)
    eps_cond = float("nan")
    if method in THEORY_VARIANTS:
        kind = "zadrozny-elkan" if THEORY_VARIANTS[method] != "umd" else "conditional"
        eps_cond = guarantee_epsilon(k_cal, n_bins, float(alpha), kind=kind, delta=delta)
    pooled = _pooled_table(groups, n_resamples, eps_cond)
    n_groups = np.bincount(groups.run, minlength=n_resamples)
    notes = _validity_notes(bins, n_groups, method, n_bins)
    for arr in (eps, marginal, conditional, auc, ece, max_gap, n_groups):
        arr.setflags(write=False)
    return ValidityResult(
        method=method,
        lens=lens,
        n_bins=n_bins,
        n_rows=n_rows,
        n_cal=k_cal,
        n_test=k_test,
        n_resamples=n_resamples,
        seed=seed if not isinstance(seed, np.random.Generator) else None,
        alpha=float(alpha),
        confidence_level=confidence_level,
        recalibrator_options=dict(opts),
        eps=eps,
        marginal=marginal,
        conditional=conditional,
        marginal_mean=marginal.mean(axis=0),
        marginal_sem=_sem(marginal),
        conditional_mean=conditional.mean(axis=0),
        conditional_sem=_sem(conditional),
        theory_marginal=tm,
        theory_conditional=tc,
        theory_note=note,
        min_bin_labels=max(k_cal // n_bins - 1, 0),
        ece=ece,
        auc=auc,
        auc_identity_gap=gap,
        auc_identity_tolerance=tolerance,
        max_gap=max_gap,
        n_groups=n_groups,
        bins=bins,
        pooled_bins=pooled if isinstance(pooled, pd.DataFrame) else None,
        notes=tuple(notes),
    )


def _bin_table(
    groups: GroupStats, fitted: Any, n_bins: int, alpha: float, confidence_level: float
) -> pd.DataFrame:
    """Per-bin view of run 0, with the calibration labels behind each value when known."""
    import pandas as pd

    sel = groups.run == 0
    value, count, pos = groups.value[sel], groups.count[sel], groups.positives[sel]
    low, high = bin_intervals(count, pos, method="wilson", confidence_level=confidence_level)
    mean = pos / count
    cal_count = np.full(value.size, np.nan)
    comp = None
    if fitted is not None:
        comps = fitted.values.get("components")
        comp = comps[0] if comps else None
    if comp is not None and "values" in comp and "counts" in comp:
        fit_values = np.atleast_1d(np.asarray(comp["values"], dtype=np.float64))
        fit_counts = np.atleast_1d(np.asarray(comp["counts"], dtype=np.float64))
        if fit_values.shape == fit_counts.shape:
            # bins sharing a value are one group of (6): their calibration labels add up
            uniq, inv = np.unique(fit_values, return_inverse=True)
            per_value = np.bincount(inv, weights=fit_counts)
            at = np.clip(np.searchsorted(uniq, value), 0, uniq.size - 1)
            cal_count = np.where(uniq[at] == value, per_value[at], np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        halfwidth = np.sqrt(np.log(2 * n_bins / alpha) / (2 * cal_count))
    return pd.DataFrame(
        {
            "value": value,
            "count": count.astype(np.int64),
            "positives": pos,
            "mean_label": mean,
            "low": low,
            "high": high,
            "gap": mean - value,
            "abs_gap": np.abs(mean - value),
            "cal_count": cal_count,
            "halfwidth": halfwidth,
        }
    )


def _pooled_table(groups: GroupStats, n_resamples: int, eps_cond: float) -> pd.DataFrame | None:
    """Bins pooled over runs by the rank of their value (UMD bins move between runs)."""
    import pandas as pd

    per_run = np.bincount(groups.run, minlength=n_resamples)
    if per_run.min() != per_run.max():
        return None
    b = int(per_run[0])
    shape = (n_resamples, b)
    value = groups.value.reshape(shape)
    mean = groups.mean_label.reshape(shape)
    count = groups.count.reshape(shape)
    d = groups.gap.reshape(shape)
    within = (d <= eps_cond).mean(axis=0) if np.isfinite(eps_cond) else np.full(b, np.nan)
    return pd.DataFrame(
        {
            "rank": np.arange(1, b + 1),
            "value": value.mean(axis=0),
            "mean_label": mean.mean(axis=0),
            "count": count.mean(axis=0),
            "abs_gap": d.mean(axis=0),
            "abs_gap_sd": d.std(axis=0, ddof=1) if n_resamples > 1 else np.full(b, np.nan),
            "share_within": within,
        }
    )
