"""Distribution-free guarantees of histogram binning (Gupta & Ramdas 2021).

These need no data: they turn a sample size ``n``, a number of bins ``B`` and a
failure probability ``α`` into the ε of the conditional-calibration guarantee, and
back into the largest ``B`` that keeps ε under a target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from core.base.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

#: Defaults of the bin-count guidance: failure probability and target ε (Gupta & Ramdas 2021, §3).
DEFAULT_ALPHA = 0.1
DEFAULT_EPSILON = 0.1


def _check_alpha(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"The failure probability α must lie in (0, 1); got {alpha!r}.")
    return float(alpha)


# --------------------------------------------------------------------------- calculator
#
# The functions below complete the calculator of Gupta & Ramdas (2021): the marginal ε of
# Theorem 4, Corollary 1's ε for the original Zadrozny–Elkan binning, the expected-ECE
# bound, the sample size a target ε needs, the largest B for either guarantee, and the
# theory validity curves obtained by solving the bound (11) for the failure probability.

#: Guarantees the calculator knows: conditional (Theorem 3, Eq. (8)), marginal (Theorem 4's
#: ε₁) and the original Zadrozny–Elkan variant (Corollary 1, Eq. (10); conditional).
GUARANTEE_KINDS = ("conditional", "marginal", "zadrozny-elkan")


def _check_bins_n(n: int, n_bins: int) -> tuple[int, int]:
    if isinstance(n, bool) or int(n) != n or int(n) < 1:
        raise ConfigError(f"The sample size n must be a positive integer; got {n!r}.")
    if isinstance(n_bins, bool) or int(n_bins) != n_bins or int(n_bins) < 1:
        raise ConfigError(f"The number of bins must be a positive integer; got {n_bins!r}.")
    return int(n), int(n_bins)


def _check_kind(kind: str) -> str:
    if kind not in GUARANTEE_KINDS:
        raise ConfigError(
            f"Unknown guarantee {kind!r}; choose one of {', '.join(GUARANTEE_KINDS)}."
        )
    return kind


def _check_delta(delta: float) -> float:
    if not 0.0 <= float(delta) < 1.0:
        raise ConfigError(f"The randomisation δ must lie in [0, 1); got {delta!r}.")
    return float(delta)


def _check_guarantee(alpha: float, kind: str, delta: float) -> tuple[float, str, float]:
    return _check_alpha(alpha), _check_kind(kind), _check_delta(delta)


def _check_epsilon(epsilon: float) -> None:
    if not np.isfinite(epsilon) or epsilon <= 0:
        raise ConfigError(f"The target ε must be a positive number; got {epsilon!r}.")


def _union_factor(kind: str, n_bins: Any) -> Any:
    """Return the union bound's factor in ε: 2 for the marginal guarantee, ``2B`` otherwise."""
    return 2.0 if kind == "marginal" else 2.0 * n_bins


def guarantee_epsilon(
    n: int,
    n_bins: int,
    alpha: float = DEFAULT_ALPHA,
    *,
    kind: str = "conditional",
    delta: float = 0.0,
) -> float:
    """ε of one of the distribution-free guarantees of UMD histogram binning.

    With ``m = ⌊n/B⌋ − 1`` (Gupta & Ramdas 2021):

    - ``conditional`` (Theorem 3, Eq. (8); Theorem 4's ε₂):
      ``sqrt(log(2B/α) / (2m)) + δ`` — with probability ``1 − α`` over the calibration
      data, *every* bin's value is within ε of ``E[Y | bin]``;
    - ``marginal`` (Theorem 4's ε₁, randomised UMD with distinct bin values):
      ``sqrt(log(2/α) / (2m)) + δ`` — ``Pr(|E[Y | h(X)] − h(X)| ≤ ε) ≥ 1 − α`` over
      the calibration data and a new point;
    - ``zadrozny-elkan`` (Corollary 1, Eq. (10)): the conditional ε plus ``1/⌊n/B⌋``
      for the original binning, which also averages each bin's upper boundary label.

    Parameters
    ----------
    n : int
        Calibration sample size.
    n_bins : int
        Number of bins ``B``.
    alpha : float, default 0.1
        Failure probability.
    kind : {"conditional", "marginal", "zadrozny-elkan"}
        Which guarantee.
    delta : float, default 0.0
        Algorithm 2's randomisation δ (0 for the δ → 0 limit).

    Returns
    -------
    float
        ε, or ``inf`` when ``n < 2B`` (no guarantee).

    Examples
    --------
    >>> round(guarantee_epsilon(1500, 10, 0.1, kind="marginal"), 5)
    0.10026
    """
    n, n_bins = _check_bins_n(n, n_bins)
    return float(epsilon_table(n, n_bins, alpha, kind=kind, delta=delta))


def expected_ece_bound(n: int, n_bins: int, *, delta: float = 0.0) -> float:
    """Bound on the expected ℓp-ECE (p ∈ [1, 2]) of randomised UMD, valid for every ``n ≥ 2B``.

    Theorem 4(b)'s proof gives ``E[ℓ2-ECE] ≤ sqrt(1/(4m) + δ²) ≤ 1/(2√m) + δ`` with
    ``m = ⌊n/B⌋ − 1``; the paper's simplification ``sqrt(B/(2n)) + δ`` holds only when
    ``m ≥ n/(2B)`` (n = 2B or n ≥ 3B), so the always-valid form is returned.

    Parameters
    ----------
    n : int
        Calibration sample size.
    n_bins : int
        Number of bins ``B``.
    delta : float, default 0.0
        Algorithm 2's randomisation δ.

    Returns
    -------
    float
        The bound, or ``inf`` when ``n < 2B``.

    Examples
    --------
    >>> round(expected_ece_bound(1000, 10), 4)
    0.0503
    """
    n, n_bins = _check_bins_n(n, n_bins)
    delta = _check_delta(delta)
    m = n // n_bins - 1
    if n < 2 * n_bins or m < 1:
        return float("inf")
    return float(1.0 / (2.0 * np.sqrt(m))) + delta


def n_needed(
    epsilon: float,
    n_bins: int,
    alpha: float = DEFAULT_ALPHA,
    *,
    kind: str = "conditional",
    delta: float = 0.0,
) -> int | None:
    """Smallest calibration sample size whose guarantee ε is at most ``epsilon``.

    For the conditional and marginal guarantees ``⌊n/B⌋ − 1 ≥ x`` with
    ``x = log(c/α) / (2(ε − δ)²)`` (``c = 2B`` or ``2``) gives the closed form
    ``n = B(⌈x⌉ + 1)``; Corollary 1's ε has no closed form, and since it depends on
    ``n`` only through ``⌊n/B⌋`` and decreases in it, the smallest admissible ``⌊n/B⌋``
    is found by doubling and bisection.

    Parameters
    ----------
    epsilon : float
        Target ε.
    n_bins : int
        Number of bins ``B``.
    alpha, kind, delta
        As in :func:`guarantee_epsilon`.

    Returns
    -------
    int or None
        The sample size (a multiple of ``B``, at least ``2B``), or None when no sample
        size reaches ``epsilon`` (``epsilon ≤ δ``).

    Examples
    --------
    >>> n_needed(0.1, 10, 0.1), n_needed(0.1, 10, 0.1, kind="marginal")
    (2660, 1510)
    """
    _, n_bins = _check_bins_n(1, n_bins)
    alpha, kind, delta = _check_guarantee(alpha, kind, delta)
    _check_epsilon(epsilon)
    if epsilon <= delta:
        return None
    base = "conditional" if kind == "zadrozny-elkan" else kind

    def eps_at(q: int, which: str) -> float:
        return guarantee_epsilon(q * n_bins, n_bins, alpha, kind=which, delta=delta)

    x = np.log(_union_factor(kind, n_bins) / alpha) / (2.0 * (epsilon - delta) ** 2)
    q = max(int(np.ceil(x)) + 1, 2)
    # the closed form can be off by one when x is within rounding of an integer
    while q > 2 and eps_at(q - 1, base) <= epsilon:
        q -= 1
    while eps_at(q, base) > epsilon:
        q += 1
    if kind != "zadrozny-elkan":
        return q * n_bins
    # Corollary 1's ε exceeds the conditional one, so its ⌊n/B⌋ is at least q
    lo, hi = q - 1, q
    while eps_at(hi, kind) > epsilon:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if eps_at(mid, kind) <= epsilon else (mid, hi)
    return hi * n_bins


def largest_bins(
    n: int,
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = DEFAULT_ALPHA,
    *,
    kind: str = "conditional",
    delta: float = 0.0,
    max_bins: int = 100_000,
) -> int | None:
    """Largest number of bins whose guarantee ε (of any kind) is at most ``epsilon``.

    Every ``B ≤ min(max_bins, n/2)`` is checked (ε is not monotone in ``B`` because of
    the floor).

    Parameters
    ----------
    n : int
        Calibration sample size.
    epsilon : float, default 0.1
        Target ε.
    alpha, kind, delta
        As in :func:`guarantee_epsilon`.
    max_bins : int, default 100000
        Largest ``B`` considered.

    Returns
    -------
    int or None
        The largest admissible ``B``, or None when none reaches ``epsilon``.

    Examples
    --------
    >>> largest_bins(1000, 0.1), largest_bins(1000, 0.1, kind="marginal")
    (4, 6)
    """
    n, _ = _check_bins_n(n, 1)
    eps = epsilon_table(n, np.arange(1, min(max_bins, n // 2) + 1), alpha, kind=kind, delta=delta)
    ok = np.flatnonzero(eps <= epsilon)
    return int(ok[-1] + 1) if ok.size else None


def epsilon_table(
    n: int | np.ndarray,
    n_bins: int | np.ndarray,
    alpha: float = DEFAULT_ALPHA,
    *,
    kind: str = "conditional",
    delta: float = 0.0,
) -> np.ndarray:
    """Vectorised :func:`guarantee_epsilon` over arrays of ``n`` and ``B`` (broadcast).

    Parameters
    ----------
    n, n_bins : int or numpy.ndarray
        Sample sizes and numbers of bins (positive integers; broadcast together).
    alpha, kind, delta
        As in :func:`guarantee_epsilon`.

    Returns
    -------
    numpy.ndarray
        ε per entry; ``inf`` where ``n < 2B``.
    """
    alpha, kind, delta = _check_guarantee(alpha, kind, delta)
    n_arr, b_arr = np.broadcast_arrays(
        np.asarray(n, dtype=np.int64), np.asarray(n_bins, dtype=np.int64)
    )
    if (n_arr < 1).any() or (b_arr < 1).any():
        raise ConfigError("Sample sizes and numbers of bins must be positive integers.")
    q = n_arr // b_arr
    valid = (n_arr >= 2 * b_arr) & (q >= 2)
    factor = _union_factor(kind, b_arr)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.sqrt(np.log(factor / alpha) / (2.0 * np.maximum(q - 1, 1))) + delta
        if kind == "zadrozny-elkan":
            eps = eps + 1.0 / np.maximum(q, 1)
    return np.where(valid, eps, np.inf)


def theory_validity(
    eps: np.ndarray | float,
    n: int,
    n_bins: int,
    *,
    kind: str = "marginal",
    delta: float = 0.0,
    variant: str = "umd",
) -> np.ndarray:
    """Theory validity curve: the guarantee (11) solved for ``1 − α`` at each ε.

    Setting ``α = 2·exp(−2m(ε − δ)²)`` (marginal) or ``2B·exp(−2m(ε − δ)²)``
    (conditional) in Theorem 4 gives the lower bounds

    - ``V_th(ε) = max(0, 1 − 2·exp(−2m(ε − δ)²))`` for ``ε > δ``, else 0;
    - ``V_th,c(ε) = max(0, 1 − 2B·exp(−2m(ε − δ)²))``;

    with ``m = ⌊n/B⌋ − 1``. For the Zadrozny–Elkan variant (Corollary 1) ``ε`` is first
    reduced by ``1/⌊n/B⌋`` (the marginal analogue follows by the same argument).
    The paper overlays this "Theorem 4 curve" without printing its formula; this
    inversion is its natural reading.

    Parameters
    ----------
    eps : array_like
        Values of ε.
    n : int
        Calibration sample size.
    n_bins : int
        Number of bins ``B``.
    kind : {"marginal", "conditional"}
        Which validity.
    delta : float, default 0.0
        Algorithm 2's randomisation δ.
    variant : {"umd", "zadrozny-elkan"}
        Which histogram binning.

    Returns
    -------
    numpy.ndarray
        The curve, in [0, 1]; all zeros when ``n < 2B``.

    Examples
    --------
    >>> theory_validity([0.05, 0.08], 3000, 10).round(3).tolist()
    [0.552, 0.956]
    """
    n, n_bins = _check_bins_n(n, n_bins)
    delta = _check_delta(delta)
    if kind not in ("marginal", "conditional"):
        raise ConfigError(f"kind must be 'marginal' or 'conditional'; got {kind!r}.")
    if variant not in ("umd", "zadrozny-elkan"):
        raise ConfigError(f"variant must be 'umd' or 'zadrozny-elkan'; got {variant!r}.")
    e = np.asarray(eps, dtype=np.float64)
    q = n // n_bins
    if n < 2 * n_bins or q < 2:
        return np.zeros_like(e)
    m = q - 1
    shift = delta + (1.0 / q if variant == "zadrozny-elkan" else 0.0)
    x = e - shift
    v = 1.0 - _union_factor(kind, n_bins) * np.exp(-2.0 * m * np.maximum(x, 0.0) ** 2)
    return np.where(x > 0, np.clip(v, 0.0, 1.0), 0.0)


@dataclass(frozen=True)
class GuaranteeReport:
    """What the guarantee calculator says for ``(n, B, α)`` and a target ε.

    Attributes
    ----------
    n, n_bins, alpha, epsilon_target, delta : int, int, float, float, float
        The inputs.
    min_bin_labels : int
        ``m = ⌊n/B⌋ − 1``, the fewest labels any UMD bin averages (0 when ``n < 2B``).
    valid : bool
        Whether ``n ≥ 2B`` (otherwise every ε is ``inf``).
    epsilon_conditional : float
        Theorem 3 / Theorem 4 ε₂: every bin within ε with probability ``1 − α``.
    epsilon_marginal : float
        Theorem 4 ε₁ (randomised UMD).
    epsilon_zadrozny_elkan : float
        Corollary 1: the original Zadrozny–Elkan binning.
    expected_ece : float
        ``E[ℓp-ECE] ≤ 1/(2√m) + δ`` (p ∈ [1, 2]).
    n_needed_conditional, n_needed_marginal, n_needed_zadrozny_elkan : int or None
        Smallest ``n`` reaching ``epsilon_target`` at this ``B`` and ``α``.
    largest_bins_conditional, largest_bins_marginal : int or None
        Largest ``B`` reaching ``epsilon_target`` at this ``n`` and ``α``.
    """

    n: int
    n_bins: int
    alpha: float
    epsilon_target: float
    delta: float
    min_bin_labels: int
    valid: bool
    epsilon_conditional: float
    epsilon_marginal: float
    epsilon_zadrozny_elkan: float
    expected_ece: float
    n_needed_conditional: int | None
    n_needed_marginal: int | None
    n_needed_zadrozny_elkan: int | None
    largest_bins_conditional: int | None
    largest_bins_marginal: int | None

    @property
    def min_n(self) -> int:
        """Fewest calibration rows with a guarantee: ``2B``."""
        return 2 * self.n_bins

    def epsilon_versus_n(self, ns: np.ndarray | None = None) -> pd.DataFrame:
        """ε of the three guarantees against ``n`` at this ``B`` and ``α`` (tidy table).

        Parameters
        ----------
        ns : array_like, optional
            Sample sizes; default 200 log-spaced values from ``2B`` to
            ``max(100·B, 10·n, 2·n_needed)``.

        Returns
        -------
        pandas.DataFrame
            Columns ``n``, ``guarantee`` (one of :data:`GUARANTEE_KINDS`), ``epsilon``.
        """
        import pandas as pd

        if ns is None:
            top = max(100 * self.n_bins, 10 * self.n, 2 * (self.n_needed_zadrozny_elkan or 0))
            ns = np.unique(np.geomspace(2 * self.n_bins, top, 200).round().astype(np.int64))
        ns = np.asarray(ns, dtype=np.int64)
        frames = [
            pd.DataFrame(
                {
                    "n": ns,
                    "guarantee": kind,
                    "epsilon": epsilon_table(
                        ns, self.n_bins, self.alpha, kind=kind, delta=self.delta
                    ),
                }
            )
            for kind in GUARANTEE_KINDS
        ]
        return pd.concat(frames, ignore_index=True)


def guarantee_calculator(
    n: int,
    n_bins: int,
    alpha: float = DEFAULT_ALPHA,
    *,
    epsilon: float = DEFAULT_EPSILON,
    delta: float = 0.0,
) -> GuaranteeReport:
    """Every guarantee of UMD histogram binning for ``(n, B, α)``, and the inverses for ε.

    Needs no data: ε of the conditional (Theorem 3), marginal (Theorem 4) and
    Zadrozny–Elkan (Corollary 1) guarantees, the expected-ECE bound, the ``n`` each
    guarantee needs for the target ``epsilon``, and the largest ``B`` that reaches it
    at this ``n`` (Gupta & Ramdas 2021, §3).

    Parameters
    ----------
    n, n_bins, alpha, delta
        As in :func:`guarantee_epsilon`.
    epsilon : float, default 0.1
        Target ε of the inverse problems.

    Returns
    -------
    GuaranteeReport
        The numbers.

    Examples
    --------
    >>> r = guarantee_calculator(2900, 10, 0.1)
    >>> round(r.epsilon_conditional, 5), round(r.epsilon_zadrozny_elkan, 5)
    (0.09574, 0.09919)
    """
    n, n_bins = _check_bins_n(n, n_bins)
    alpha = _check_alpha(alpha)
    delta = _check_delta(delta)
    _check_epsilon(epsilon)
    valid = n >= 2 * n_bins
    return GuaranteeReport(
        n=n,
        n_bins=n_bins,
        alpha=alpha,
        epsilon_target=float(epsilon),
        delta=delta,
        min_bin_labels=max(n // n_bins - 1, 0) if valid else 0,
        valid=valid,
        epsilon_conditional=guarantee_epsilon(n, n_bins, alpha, delta=delta),
        epsilon_marginal=guarantee_epsilon(n, n_bins, alpha, kind="marginal", delta=delta),
        epsilon_zadrozny_elkan=guarantee_epsilon(
            n, n_bins, alpha, kind="zadrozny-elkan", delta=delta
        ),
        expected_ece=expected_ece_bound(n, n_bins, delta=delta),
        n_needed_conditional=n_needed(epsilon, n_bins, alpha, delta=delta),
        n_needed_marginal=n_needed(epsilon, n_bins, alpha, kind="marginal", delta=delta),
        n_needed_zadrozny_elkan=n_needed(
            epsilon, n_bins, alpha, kind="zadrozny-elkan", delta=delta
        ),
        largest_bins_conditional=largest_bins(n, epsilon, alpha, delta=delta),
        largest_bins_marginal=largest_bins(n, epsilon, alpha, kind="marginal", delta=delta),
    )
