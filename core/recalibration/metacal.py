"""Meta-Cal (Ma & Blaschko 2021): selective recalibration by ranking.

A ranking score ``h`` (entropy of the uncalibrated prediction by default; higher
means more likely wrong) is thresholded at ``r*``: rows with ``h <= r*`` are
*accepted* and get the base calibrator's output (temperature scaling, which keeps
the predicted class); rows with ``h > r*`` are *rejected* and get the uniform
distribution ``1/K`` (rows still sum to 1). The threshold is chosen on a seeded
part ``S1`` of the calibration rows; the base calibrator is fitted on the other
part's rows with ``h < r*``.

- ``mode="miscoverage"``: ``S1`` holds ``n1 = min(⌊ρ·#correct⌋, cap)`` correctly
  classified rows and ``r*`` is an order statistic of their scores:

  - ``threshold_rule="paper"``: ``v = ⌈(n1 + 1)(1 − α)⌉`` (exact rational arithmetic).
    The miscoverage ``F0 = P(reject | correct)`` then follows Beta(n1 + 1 − v, v):
    **in expectation** ``E[F0] = ⌊(n1 + 1)α⌋/(n1 + 1) ≤ α``, but it exceeds α with
    probability ``P(Binom(n1, 1 − α) ≥ v)`` (Eq. 5; ≈ 0.4 at the paper's sizes).
    This is *not* a high-probability guarantee.
  - ``threshold_rule="high-probability"``: the Neyman–Pearson umbrella order
    statistic ``k* = min{k : P(Binom(n1, 1 − α) ≥ k) ≤ δ}``, so ``P(F0 > α) ≤ δ``.
  - ``threshold_rule="reference"``: ``numpy.quantile(..., method="higher")`` as the
    reference code (its expected miscoverage can exceed α).

  When no order statistic qualifies (``n1`` too small) nothing is rejected.
- ``mode="coverage-accuracy"``: ``S1`` is ``min(⌊ρ·n⌋, cap)`` random rows; ``b``
  uniform-mass score bins give knots (mean score, cumulative accuracy); a
  decreasing isotonic fit ``l̂`` is inverted at β by linear interpolation. The
  accuracy among accepted rows is then ≈ β on average (slightly above: conservative),
  with no finite-sample guarantee. β above ``l̂`` at the lowest scores is infeasible
  (:class:`~core.base.errors.FitError`); β at or below the accuracy of all rows rejects nothing.

``split="iid"`` draws ``S1`` from all rows (only its correct rows set the
miscoverage threshold), which removes the paper split's bias of the base
calibrator towards higher temperatures.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import isotonic_regression
from scipy.special import entr

from core.base.errors import ConfigError, FitError
from core.base.validation import as_labels
from core.recalibration.base import (
    BLOCK_ENTRIES,
    FUSED_BLOCK_ENTRIES,
    FittedParameters,
    Inputs,
    Recalibrator,
    Setting,
    as_inputs,
    chunk_sizes,
    fit_rng,
    register,
    softmax,
)
from core.recalibration.scaling import temperature_fit

RANKINGS = ("entropy", "max-prob", "margin")
RULES = ("paper", "high-probability", "reference")


def ranking_score(probs: np.ndarray, kind: str = "entropy") -> np.ndarray:
    """Score that is higher for rows more likely misclassified.

    Parameters
    ----------
    probs : numpy.ndarray
        ``(n, K)`` uncalibrated probabilities.
    kind : {"entropy", "max-prob", "margin"}
        Entropy ``-Σ p log p`` (natural log), ``1 - max p``, or minus the gap
        between the two largest probabilities.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` scores.
    """
    if kind == "entropy":
        out = np.empty(probs.shape[0])
        per = max(1, BLOCK_ENTRIES // max(probs.shape[1], 1))
        for i in range(0, probs.shape[0], per):  # in blocks: no (n, K) temporary
            out[i : i + per] = entr(probs[i : i + per]).sum(axis=1)
        return out
    if kind == "max-prob":
        return 1.0 - probs.max(axis=1)
    if kind == "margin":
        top2 = -np.partition(-probs, 1, axis=1)[:, :2]
        return top2[:, 1] - top2[:, 0]
    raise ConfigError(f"Unknown ranking {kind!r}; choose one of {', '.join(RANKINGS)}.")


def _softmax_blocks(z: np.ndarray) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
    """Yield ``(rows, z[rows], softmax(z[rows]))`` for consecutive blocks of rows.

    Each block's probabilities are made in one scratch buffer (the same softmax
    arithmetic, so the same bits), overwritten by the next block: no ``(n, K)``
    probability matrix is made.
    """
    n, k = z.shape
    step = max(1, FUSED_BLOCK_ENTRIES // k)
    scratch = np.empty((min(step, n), k))
    for i in range(0, n, step):
        zb = z[i : i + step]
        yield slice(i, i + step), zb, softmax(zb, out=scratch[: zb.shape[0]])


def _scores_and_top(
    inputs: Inputs, kind: str, *, top: bool = False
) -> tuple[np.ndarray, np.ndarray | None]:
    """Ranking scores (and the predicted classes when ``top``) of every row.

    From logits the probabilities are made block by block (:func:`_softmax_blocks`)
    and never as a whole ``(n, K)`` matrix: at 50,000 × 1,000 a second matrix of fresh
    memory costs more than the softmax itself.
    """
    if inputs.has_probs:
        p = inputs.probs
        return ranking_score(p, kind), (p.argmax(axis=1) if top else None)
    z = inputs.log_scores
    h = np.empty(z.shape[0])
    pred = np.empty(z.shape[0], dtype=np.intp) if top else None
    for rows, _, pb in _softmax_blocks(z):
        h[rows] = ranking_score(pb, kind)
        if pred is not None:
            pred[rows] = pb.argmax(axis=1)
    return h, pred


def _exact(alpha: float) -> Fraction:
    """Return ``alpha`` as the exact fraction of its decimal text (0.05 is exactly 1/20)."""
    return Fraction(str(alpha)) if isinstance(alpha, float) else Fraction(alpha)


def paper_order_statistic(n1: int, alpha: float) -> int | None:
    """``v = ⌈(n1 + 1)(1 − α)⌉`` computed exactly; None when ``v > n1`` (reject nothing).

    Examples
    --------
    >>> [paper_order_statistic(n, 0.05) for n in (18, 19, 21, 50, 100, 462, 500)]
    [None, 19, 21, 49, 96, 440, 476]
    """
    v = math.ceil((n1 + 1) * (1 - _exact(alpha)))
    return v if v <= n1 else None


def reference_order_statistic(n1: int, alpha: float) -> int | None:
    """1-based index picked by ``numpy.quantile(scores, 1 - α, method="higher")``."""
    if n1 < 1:
        return None
    return math.ceil((1 - _exact(alpha)) * (n1 - 1)) + 1


def umbrella_order_statistic(n1: int, alpha: float, delta: float) -> int | None:
    """Neyman–Pearson umbrella ``k* = min{k : P(Binom(n1, 1 − α) ≥ k) ≤ δ}`` (or None)."""
    from scipy.stats import binom  # a third of a second to import: only when fitted

    if n1 < 1:
        return None
    k = np.arange(1, n1 + 1)
    ok = np.flatnonzero(binom.sf(k - 1, n1, 1.0 - alpha) <= delta)
    return int(k[ok[0]]) if ok.size else None


def violation_probability(n1: int, v: int | None, alpha: float) -> float:
    """``P(F0 > α) = P(Binom(n1, 1 − α) ≥ v)`` (Eq. 5); 0 when nothing is rejected."""
    from scipy.stats import binom

    if v is None:
        return 0.0
    return float(binom.sf(v - 1, n1, 1.0 - alpha))


def expected_miscoverage(n1: int, v: int | None) -> float:
    """``E[F0] = (n1 + 1 − v)/(n1 + 1)`` for continuous scores; 0 when nothing is rejected."""
    return 0.0 if v is None else (n1 + 1 - v) / (n1 + 1)


@dataclass(frozen=True, eq=False)
class SelectiveCurves:
    """Coverage, miscoverage and coverage accuracy for every threshold ``accept iff h <= r``.

    Attributes
    ----------
    thresholds : numpy.ndarray
        Distinct scores, ascending.
    coverage : numpy.ndarray
        Fraction of rows accepted.
    miscoverage : numpy.ndarray
        Fraction of correctly classified rows rejected (``F0``).
    coverage_accuracy : numpy.ndarray
        Accuracy among accepted rows (``F1``).
    """

    thresholds: np.ndarray
    coverage: np.ndarray
    miscoverage: np.ndarray
    coverage_accuracy: np.ndarray


def selective_curves(scores: ArrayLike, correct: ArrayLike) -> SelectiveCurves:
    """Curves of the selective rule ``accept iff score <= r`` over all thresholds ``r``.

    Parameters
    ----------
    scores : array_like
        Ranking scores.
    correct : array_like
        Whether each row is correctly classified.

    Returns
    -------
    SelectiveCurves
        One point per distinct score.
    """
    h = np.asarray(scores, dtype=np.float64)
    c = np.asarray(correct, dtype=np.float64)
    order = np.argsort(h, kind="stable")
    hs, cs = h[order], c[order]
    last = np.flatnonzero(np.append(np.diff(hs) != 0, True))
    acc_n = last + 1
    acc_c = np.cumsum(cs)[last]
    total_c = max(cs.sum(), 1.0)
    return SelectiveCurves(
        thresholds=hs[last],
        coverage=acc_n / h.size,
        miscoverage=1.0 - acc_c / total_c,
        coverage_accuracy=acc_c / acc_n,
    )


@dataclass(frozen=True)
class SelectiveMetrics:
    """Selective-prediction summary on a set of rows.

    Attributes
    ----------
    coverage : float
        Fraction accepted.
    miscoverage : float
        Fraction of correctly classified rows rejected.
    coverage_accuracy : float
        Accuracy among accepted rows (NaN when none is accepted).
    n_accepted, n : int
        Counts.
    """

    coverage: float
    miscoverage: float
    coverage_accuracy: float
    n_accepted: int
    n: int


def selective_metrics(probs: ArrayLike, labels: ArrayLike, accepted: ArrayLike) -> SelectiveMetrics:
    """Coverage, miscoverage and coverage accuracy of an accept mask.

    Parameters
    ----------
    probs : array_like
        Uncalibrated probabilities (they define which rows are correct).
    labels : array_like
        Class indices.
    accepted : array_like of bool
        Accept mask.

    Returns
    -------
    SelectiveMetrics
        The summary.
    """
    inp = as_inputs(probs)
    y = as_labels(labels, inp.n_classes, inp.n)
    acc = np.asarray(accepted, dtype=bool)
    correct = inp.probs.argmax(axis=1) == y
    n_acc = int(acc.sum())
    n_cor = int(correct.sum())
    return SelectiveMetrics(
        coverage=n_acc / y.size,
        miscoverage=float((correct & ~acc).sum() / n_cor) if n_cor else 0.0,
        coverage_accuracy=float((correct & acc).sum() / n_acc) if n_acc else float("nan"),
        n_accepted=n_acc,
        n=int(y.size),
    )


@register(
    "meta-cal",
    label="Meta-Cal (selective)",
    description="Rejects likely-wrong rows (uniform output) by thresholding a ranking score under "
    "miscoverage or coverage-accuracy control; temperature scaling on the rest. Report with coverage.",
    formula="Ma & Blaschko 2021, Algorithms 1-2, Eq. 5",
    family="selective",
    selective=True,
    settings=(
        Setting(
            "mode",
            "Meta-Cal control",
            choices={
                "miscoverage": "miscoverage",
                "coverage-accuracy": "coverage-accuracy",
            },
        ),
        Setting("alpha", "α (miscoverage)", low=0.001, high=0.5, step=0.01),
        Setting(
            "beta",
            "β (coverage accuracy)",
            low=0.01,
            high=0.999,
            step=0.01,
            applies_when=("mode", "coverage-accuracy"),
            suggest=lambda summary: float(min(0.99, round((1 + summary.accuracy) / 2, 2))),
            help="Must exceed the accuracy of all rows to reject anything; it starts halfway "
            "between that accuracy and 1.",
        ),
        Setting(
            "threshold_rule",
            "Meta-Cal threshold rule",
            choices={
                "paper": "paper: controls the mean",
                "high-probability": "Neyman–Pearson: ≤ α w.p. 1 − δ",
                "reference": "reference code (numpy 'higher')",
            },
        ),
    ),
)
class MetaCal(Recalibrator):
    """Meta-Cal under miscoverage or coverage-accuracy control (module docstring).

    Parameters
    ----------
    mode : {"miscoverage", "coverage-accuracy"}
        Which quantity the threshold controls.
    alpha : float, default 0.05
        Miscoverage tolerance (``miscoverage`` mode).
    beta : float, optional
        Target accuracy among accepted rows (``coverage-accuracy`` mode; required there).
    threshold_rule : {"paper", "high-probability", "reference"}
        Order statistic for ``miscoverage`` mode.
    delta : float, default 0.05
        Allowed probability that miscoverage exceeds α (``high-probability`` rule).
    ranking : {"entropy", "max-prob", "margin"}
        Ranking score of the uncalibrated prediction.
    split : {"paper", "iid"}
        How ``S1`` is drawn in ``miscoverage`` mode.
    rho : float, default 0.1
        Share of rows in ``S1``.
    cap : int, default 500
        Largest ``S1``.
    n_score_bins : int, default 20
        Uniform-mass score bins for ``l̂`` (``coverage-accuracy`` mode).
    base : {"temperature", "none"}
        Base calibrator of accepted rows.
    seed : int or None
        Seed of the split; None means 0.
    """

    def __init__(
        self,
        *,
        mode: str = "miscoverage",
        alpha: float = 0.05,
        beta: float | None = None,
        threshold_rule: str = "paper",
        delta: float = 0.05,
        ranking: str = "entropy",
        split: str = "paper",
        rho: float = 0.1,
        cap: int = 500,
        n_score_bins: int = 20,
        base: str = "temperature",
        seed: int | None = 0,
    ) -> None:
        if mode not in ("miscoverage", "coverage-accuracy"):
            raise ConfigError(f"mode must be 'miscoverage' or 'coverage-accuracy'; got {mode!r}.")
        if not 0 < float(alpha) < 1:
            raise ConfigError(f"alpha must lie in (0, 1); got {alpha!r}.")
        if mode == "coverage-accuracy" and (beta is None or not 0 < float(beta) < 1):
            raise ConfigError(
                "Coverage-accuracy control needs beta in (0, 1): the target accuracy among accepted rows."
            )
        if threshold_rule not in RULES:
            raise ConfigError(
                f"threshold_rule must be one of {', '.join(RULES)}; got {threshold_rule!r}."
            )
        if not 0 < float(delta) < 1:
            raise ConfigError(f"delta must lie in (0, 1); got {delta!r}.")
        if ranking not in RANKINGS:
            raise ConfigError(f"ranking must be one of {', '.join(RANKINGS)}; got {ranking!r}.")
        if split not in ("paper", "iid"):
            raise ConfigError(f"split must be 'paper' or 'iid'; got {split!r}.")
        if not 0 < float(rho) < 1 or int(cap) < 1 or int(n_score_bins) < 2:
            raise ConfigError("rho must lie in (0, 1), cap >= 1 and n_score_bins >= 2.")
        if base not in ("temperature", "none"):
            raise ConfigError(f"base must be 'temperature' or 'none'; got {base!r}.")
        self.mode = mode
        self.alpha = float(alpha)
        self.beta = None if beta is None else float(beta)
        self.threshold_rule = threshold_rule
        self.delta = float(delta)
        self.ranking = ranking
        self.split = split
        self.rho = float(rho)
        self.cap = int(cap)
        self.n_score_bins = int(n_score_bins)
        self.base = base
        self.seed = seed

    # -- threshold selection
    def _miscoverage_threshold(
        self, h: np.ndarray, correct: np.ndarray, rng: np.random.Generator
    ) -> tuple[float, np.ndarray, dict[str, Any]]:
        n = h.size
        neg = np.flatnonzero(correct)
        if self.split == "paper":
            n1 = min(int(math.floor(self.rho * neg.size)), self.cap)
            s1 = rng.choice(neg, size=n1, replace=False)
            s1_neg = s1
        else:
            acc = max(neg.size / n, 1e-12)
            size = min(int(math.floor(self.rho * n)), int(round(self.cap / acc)))
            s1 = rng.choice(n, size=size, replace=False)
            s1_neg = s1[correct[s1]]
            n1 = int(s1_neg.size)
        rest = np.setdiff1d(np.arange(n), s1, assume_unique=True)
        if self.threshold_rule == "paper":
            v = paper_order_statistic(n1, self.alpha)
        elif self.threshold_rule == "reference":
            v = reference_order_statistic(n1, self.alpha)
        else:
            v = umbrella_order_statistic(n1, self.alpha, self.delta)
        r = np.sort(h[s1_neg])
        threshold = float(r[v - 1]) if v is not None else math.inf
        e_f0 = expected_miscoverage(n1, v)
        p_viol = violation_probability(n1, v, self.alpha)
        if v is None:
            guarantee = (
                f"Nothing is rejected: n1 = {n1} correct rows are too few for an order statistic "
                f"at α = {self.alpha:g}, so miscoverage is 0."
            )
        elif self.threshold_rule == "high-probability":
            guarantee = (
                f"Miscoverage ≤ α = {self.alpha:g} with probability ≥ 1 − δ = {1 - self.delta:g} over "
                f"calibration draws (P(miscoverage > α) = {p_viol:.3g}); expected miscoverage {e_f0:.4g}."
            )
        else:
            guarantee = (
                f"Expected miscoverage over calibration draws = {e_f0:.4g}"
                + (
                    f" = ⌊(n1+1)α⌋/(n1+1) ≤ α = {self.alpha:g}"
                    if self.threshold_rule == "paper"
                    else ""
                )
                + f"; it is NOT controlled with high probability: P(miscoverage > α) = {p_viol:.3g}."
            )
        info = {
            "n1": int(n1),
            "order_statistic": v,
            "expected_miscoverage": e_f0,
            "violation_probability": p_viol,
            "guarantee": guarantee,
        }
        return threshold, rest, info

    def _accuracy_threshold(
        self, h: np.ndarray, correct: np.ndarray, rng: np.random.Generator
    ) -> tuple[float, np.ndarray, dict[str, Any]]:
        n = h.size
        n1 = min(int(math.floor(self.rho * n)), self.cap)
        b = min(self.n_score_bins, n1)
        if b < 2:
            raise FitError(f"Coverage-accuracy control needs at least 2 rows in S1; got {n1}.")
        perm = rng.permutation(n)
        s1, rest = perm[:n1], perm[n1:]
        order = np.argsort(h[s1], kind="stable")
        hs, cs = h[s1][order], correct[s1][order].astype(np.float64)
        sizes = chunk_sizes(n1, b)
        ends = np.cumsum(sizes)
        starts = ends - sizes
        csum_h = np.concatenate([[0.0], np.cumsum(hs)])
        csum_c = np.concatenate([[0.0], np.cumsum(cs)])
        knot_s = (csum_h[ends] - csum_h[starts]) / sizes
        knot_a = csum_c[ends] / ends  # cumulative accuracy over bins 1..j, weighted by rows
        l_hat = isotonic_regression(knot_a, increasing=False).x
        beta = float(self.beta)
        if l_hat[0] < beta:
            raise FitError(
                f"Coverage accuracy β = {beta:g} is not achievable: even the most confident "
                f"{sizes[0]} of {n1} rows in S1 have accuracy {l_hat[0]:.3g}. Lower β."
            )
        if l_hat[-1] >= beta:
            threshold = math.inf
            guarantee = f"β = {beta:g} is at or below the accuracy of all rows ({l_hat[-1]:.3g}); nothing is rejected."
        else:
            j = int(np.flatnonzero(l_hat >= beta)[-1])
            frac = (l_hat[j] - beta) / (l_hat[j] - l_hat[j + 1])
            threshold = float(knot_s[j] + frac * (knot_s[j + 1] - knot_s[j]))
            guarantee = (
                f"Accuracy among accepted rows ≈ β = {beta:g} on average (the rule is slightly "
                "conservative); there is no finite-sample guarantee."
            )
        info = {
            "n1": int(n1),
            "knot_score": knot_s,
            "knot_accuracy": knot_a,
            "knot_fit": l_hat,
            "guarantee": guarantee,
        }
        return threshold, rest, info

    # -- fit / predict
    def _fit(self, inputs: Inputs, labels: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
        rng = fit_rng(self.seed)
        h, pred = _scores_and_top(inputs, self.ranking, top=True)
        correct = pred == labels
        if self.mode == "miscoverage":
            threshold, rest, info = self._miscoverage_threshold(h, correct, rng)
        else:
            threshold, rest, info = self._accuracy_threshold(h, correct, rng)
        fit_rows = rest[h[rest] < threshold]
        temperature = 1.0
        notes = []
        if self.base == "temperature":
            if fit_rows.size == 0 or np.unique(labels[fit_rows]).size < 2:
                raise FitError(
                    "Too few accepted rows of different classes remain to fit the base temperature; "
                    "use more calibration rows or a looser threshold."
                )
            temperature, tinfo = temperature_fit(inputs.exact_log_scores, labels, rows=fit_rows)
            if tinfo["at_bound"]:
                notes.append(f"The base temperature stopped at a bound ({temperature:g}).")
        accepted_cal = h[rest] <= threshold
        info = {
            **info,
            "threshold_rule": self.threshold_rule
            if self.mode == "miscoverage"
            else "isotonic-inverse",
            "n_base_fit": int(fit_rows.size),
            "calibration_coverage": float(accepted_cal.mean()) if rest.size else float("nan"),
            "notes": notes,
        }
        return {"threshold": threshold, "temperature": float(temperature)}, info

    def accepted(self, probs: ArrayLike, *, logits: bool = False) -> np.ndarray:
        """Return the accept mask (``h <= r*``) of new rows.

        Parameters
        ----------
        probs : array_like
            Predictions (logits when ``logits=True``).
        logits : bool, default False
            Whether ``probs`` holds logits.

        Returns
        -------
        numpy.ndarray
            Boolean mask; False rows get the uniform distribution.
        """
        params = self._require_fitted()
        inputs = as_inputs(probs, logits=logits)
        return _scores_and_top(inputs, self.ranking)[0] <= params.values["threshold"]

    def _predict(self, params: FittedParameters, inputs: Inputs) -> np.ndarray:
        threshold = params.values["threshold"]
        temperature = params.values["temperature"]
        if inputs.has_probs:
            h = ranking_score(inputs.probs, self.ranking)
            acc = h <= threshold
            # every row's tempered softmax in one buffer, then the rejected rows made uniform
            # (softmax rows are independent, so accepted rows are as if computed alone)
            out = softmax(inputs.exact_log_scores, divide_by=temperature)
            out[~acc] = 1.0 / inputs.n_classes
            return out
        # from logits: one pass of row blocks (scores of the block's softmax, then its
        # tempered softmax into the output), so no (n, K) probability matrix is made
        z = inputs.log_scores
        out = np.empty(z.shape)
        for rows, zb, pb in _softmax_blocks(z):
            h = ranking_score(pb, self.ranking)
            ob = softmax(zb, divide_by=temperature, out=out[rows])
            ob[~(h <= threshold)] = 1.0 / z.shape[1]
        return out
