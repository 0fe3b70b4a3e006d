"""KDE calibration error (experimental): the leave-one-out kernel ratio of Popordanoska et al.

Popordanoska, Sayer & Blaschko (NeurIPS 2022) estimate the conditional expectation
``E[e_Y | f(X) = f_i]`` at each prediction by a leave-one-out Nadaraya–Watson ratio with a
Dirichlet kernel on the probability simplex,

    r_i = Σ_{j≠i} k(f_i; f_j) e_{y_j} / Σ_{j≠i} k(f_i; f_j),
    k(f_i; f_j) = Dir(f_i; α_j),  α_j = f_j / b + 1,

and the ℓp calibration error by the mean ``(1/n) Σ_i ‖r_i − f_i‖_p^p``. For a 1-D lens
component (scores ``s`` and 0/1 outcomes) the kernel is the beta kernel
``Beta(s_i; s_j/b + 1, (1 − s_j)/b + 1)``, the Dirichlet kernel of ``(s, 1 − s)``.

The estimator reported here is the p-th root of that mean, on the ℓp scale of the binned
estimators (``details["power_p"]`` keeps the mean itself, which is what the reference
code returns); ``p = ∞`` is the largest deviation over the rows. The bandwidth ``b`` is
a positive number or ``"loo-mle"``, the reference code's rule: the value of the grid
``logspace(−5, −1, 15) ∪ linspace(0.2, 1, 5)`` that maximises
``Σ_i [log Σ_{j≠i} k(f_i; f_j) − log((n − 1)·b)]``. The exact formula, the edge
conventions and where they differ from the reference code are in ``docs/formulas.md``.

Cost: ``O(n²·K)`` for one bandwidth, twenty times that for the ``"loo-mle"`` search (one
shared ``n × n`` product of log-probabilities; the pair terms are visited in row tiles,
never held whole). Quadratic, so the analyses run it on the kernel subsample.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import gammaln

from core.base.errors import ConfigError, EstimationError
from core.estimators.base import ALL_NORMS, ESTIMATORS, Estimate
from core.estimators.kernel import MAX_EXACT_N, check_exact_size, lens_problems

#: The bandwidth grid of the ``"loo-mle"`` rule (the reference code's, in float64).
KDE_BANDWIDTHS: np.ndarray = np.concatenate([np.logspace(-5, -1, 15), np.linspace(0.2, 1.0, 5)])
#: Bandwidth rules besides a positive number.
KDE_BANDWIDTH_RULES: tuple[str, ...] = ("loo-mle",)
#: Exact zeros enter ``log f`` as the log of the smallest positive normal double.
LOG_FLOOR: float = float(np.log(np.finfo(np.float64).tiny))
#: Rows ``i`` the bandwidth criterion sums over (a seeded subsample above it).
LOO_ROWS = 1000
#: Entries of one tile of the ``n × n`` pair terms (rows × n), about 16 MB of float64.
_TILE_ENTRIES = 1 << 21


def _log_probs(f: np.ndarray) -> np.ndarray:
    """``log f`` with exact zeros at :data:`LOG_FLOOR` (a finite kernel value, never NaN)."""
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(f), LOG_FLOOR)


def _log_beta(f: np.ndarray, bandwidth: float) -> np.ndarray:
    """``log B(α_j) = Σ_k log Γ(α_jk) − log Γ(Σ_k α_jk)`` with ``α_j = f_j/b + 1``, per row."""
    alpha = f / bandwidth + 1.0
    return gammaln(alpha).sum(axis=1) - gammaln(alpha.sum(axis=1))


def _row_tiles(n: int) -> range:
    return range(0, n, max(1, _TILE_ENTRIES // max(n, 1)))


def _log_kernel_tile(
    log_f: np.ndarray, f: np.ndarray, lo: int, hi: int, bandwidth: float, log_b: np.ndarray
) -> np.ndarray:
    """``log k(f_i; f_j)`` for rows ``i`` in ``[lo, hi)`` and every ``j``; ``−∞`` on ``i = j``."""
    t = log_f[lo:hi] @ f.T
    t /= bandwidth
    t -= log_b[None, :]
    rows = np.arange(hi - lo)
    t[rows, rows + lo] = -np.inf
    return t


def loo_log_likelihood(
    probs: ArrayLike, bandwidths: ArrayLike = KDE_BANDWIDTHS, *, max_rows: int | None = LOO_ROWS
) -> np.ndarray:
    """Return the ``"loo-mle"`` criterion of each bandwidth (the reference code's).

    ``L(b) = Σ_i log Σ_{j≠i} Dir(f_i; f_j/b + 1) − n·log((n − 1)·b)``. Above ``max_rows``
    rows the sum over ``i`` is ``n/m`` times the sum over ``m = max_rows`` rows drawn by
    ``default_rng(0)`` (every ``j`` is kept), which makes the search ``O(m·n·K)``.

    Parameters
    ----------
    probs : array_like
        ``(n, K)`` probability rows, ``n ≥ 2``.
    bandwidths : array_like
        Candidate bandwidths (default :data:`KDE_BANDWIDTHS`).
    max_rows : int or None
        Rows ``i`` of the sum (None: all).

    Returns
    -------
    numpy.ndarray
        One value per bandwidth.
    """
    f = np.asarray(probs, dtype=np.float64)
    b = np.asarray(bandwidths, dtype=np.float64).ravel()
    n = f.shape[0]
    rows_i = np.arange(n)
    if max_rows is not None and n > max_rows:
        rows_i = np.sort(np.random.default_rng(0).choice(n, size=max_rows, replace=False))
    log_f = _log_probs(f)
    log_b = [_log_beta(f, v) for v in b]
    total = np.zeros(b.size)
    tiles = _row_tiles(n)
    for lo in range(0, rows_i.size, tiles.step):
        idx = rows_i[lo : lo + tiles.step]
        base = log_f[idx] @ f.T
        buf = np.empty_like(base)
        own = np.arange(idx.size)
        for k, v in enumerate(b):
            np.divide(base, v, out=buf)
            buf -= log_b[k][None, :]
            buf[own, idx] = -np.inf
            top = buf.max(axis=1, keepdims=True)
            buf -= top
            np.exp(buf, out=buf)
            total[k] += float((np.log(buf.sum(axis=1)) + top[:, 0]).sum())
    return total * (n / rows_i.size) - n * np.log((n - 1) * b)


def select_bandwidth(probs: ArrayLike) -> float:
    """Return the ``"loo-mle"`` bandwidth: the grid value with the largest criterion.

    Ties go to the first (smallest) grid value, as the reference code's strict ``>``.
    """
    crit = loo_log_likelihood(probs)
    return float(KDE_BANDWIDTHS[int(np.argmax(crit))])


def kde_ratio(probs: ArrayLike, labels: ArrayLike, bandwidth: float) -> np.ndarray:
    """Return the leave-one-out kernel ratios ``r_i`` (rows of an ``(n, K)`` matrix).

    Parameters
    ----------
    probs : array_like
        ``(n, K)`` probability rows.
    labels : array_like
        Class indices ``0..K−1``.
    bandwidth : float
        ``b > 0``.

    Returns
    -------
    numpy.ndarray
        ``(n, K)``: ``r_i = Σ_{j≠i} k_ij e_{y_j} / Σ_{j≠i} k_ij``, computed in log space
        (each row's kernel values are scaled by their largest, so none underflows).
    """
    f = np.asarray(probs, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    n, k = f.shape
    onehot = np.zeros((n, k))
    onehot[np.arange(n), y] = 1.0
    log_f = _log_probs(f)
    log_b = _log_beta(f, bandwidth)
    out = np.empty((n, k))
    tiles = _row_tiles(n)
    for lo in tiles:
        hi = min(lo + tiles.step, n)
        t = _log_kernel_tile(log_f, f, lo, hi, bandwidth, log_b)
        t -= t.max(axis=1, keepdims=True)
        np.exp(t, out=t)
        out[lo:hi] = (t @ onehot) / t.sum(axis=1, keepdims=True)
    return out


def _check_bandwidth(bandwidth: Any) -> float | str:
    if isinstance(bandwidth, str):
        if bandwidth in KDE_BANDWIDTH_RULES:
            return bandwidth
        try:
            bandwidth = float(bandwidth)
        except ValueError:
            raise ConfigError(
                f"KDE bandwidth must be a positive number or one of "
                f"{', '.join(KDE_BANDWIDTH_RULES)}; got {bandwidth!r}."
            ) from None
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, int | float | np.number):
        raise ConfigError(
            f"KDE bandwidth must be a positive number or 'loo-mle'; got {bandwidth!r}."
        )
    if not np.isfinite(bandwidth) or bandwidth <= 0:
        raise ConfigError(f"KDE bandwidth must be a positive number; got {bandwidth!r}.")
    return float(bandwidth)


def _check_options(options: dict[str, Any]) -> dict[str, Any]:
    out = dict(options)
    if "bandwidth" in out:
        out["bandwidth"] = _check_bandwidth(out["bandwidth"])
    if "max_exact_n" in out:
        m = out["max_exact_n"]
        if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 2:
            raise ConfigError(f"max_exact_n must be a whole number ≥ 2; got {m!r}.")
    return out


def _deviation(ratio: np.ndarray, f: np.ndarray, one_d: bool, norm: float) -> tuple[float, float]:
    """Return ``(power_p, value)`` of one component: the mean of ``‖r_i − f_i‖_p^p`` and its root."""
    diff = np.abs(ratio[:, 1] - f[:, 1]) if one_d else np.abs(ratio - f)
    if np.isinf(norm):
        m = float(diff.max())
        return m, m
    per_row = diff**norm if one_d else (diff**norm).sum(axis=1)
    power = float(per_row.mean())
    return power, power ** (1.0 / norm)


@ESTIMATORS.register(
    "kde",
    label="KDE-ECE (experimental)",
    description=(
        "Experimental. Leave-one-out kernel-ratio estimate of the ℓp calibration error with a "
        "Dirichlet kernel on the simplex (canonical lens) or a beta kernel (1-D lenses), "
        "bandwidth by the reference code's leave-one-out likelihood (Popordanoska et al. 2022). "
        "Cost O(n²·K) per bandwidth, ×20 for the bandwidth search: run on the kernel subsample."
    ),
    formula="Popordanoska, Sayer & Blaschko (2022), Eq. 9–12; docs/formulas.md#kde-calibration-error",
    family="kernel",
    quadratic=True,
    experimental=True,
    norms=ALL_NORMS,
    lenses=("canonical", "binary", "top-label", "classwise"),
    default_lens="canonical",
    quantity="ℓp calibration error by a leave-one-out kernel regression (experimental)",
    options={"bandwidth": "loo-mle", "max_exact_n": MAX_EXACT_N},
    check_option_values=_check_options,
)
def kde_calibration_error(
    probs, labels, *, lens="canonical", norm=1.0, binning=None, n_bins=None,
    tie_policy=None, class_weights=None, class_names=None, rng=None, **options,
) -> Estimate:  # fmt: skip
    """KDE calibration error ``((1/n) Σ_i ‖r_i − f_i‖_p^p)^(1/p)`` of each lens component.

    Components of the classwise lens combine as ``(Σ_k w_k CE_k^p)^(1/p)`` (max for ∞);
    binning options are ignored. Options: ``bandwidth`` (``"loo-mle"`` or a number) and
    ``max_exact_n`` (above it the estimator refuses: it is quadratic).
    """
    opts = ESTIMATORS.get("kde").check(norm=norm, options=options)
    p_norm = float(norm)
    problems = lens_problems(
        probs, labels, lens, class_names=class_names, class_weights=class_weights, validated=True
    )
    n = problems[0].probs.shape[0]
    if n < 2:
        raise EstimationError("The KDE calibration error needs at least two rows (leave-one-out).")
    check_exact_size(n, int(opts["max_exact_n"]), "The KDE calibration error")
    one_d = lens != "canonical"
    values, powers, notes = [], [], {}
    for prob in problems:
        rule = opts["bandwidth"]
        b = select_bandwidth(prob.probs) if rule == "loo-mle" else float(rule)
        ratio = kde_ratio(prob.probs, prob.labels, b)
        power, value = _deviation(ratio, prob.probs, one_d, p_norm)
        values.append(value)
        powers.append(power)
        notes[prob.name] = {"bandwidth": b, "power_p": power}
    weights = np.array([pr.weight for pr in problems])
    total = ESTIMATORS.get("kde").combine(np.array([values]), weights, p_norm)[0]
    first = notes[problems[0].name]
    return Estimate(
        value=float(total),
        components=tuple(pr.name for pr in problems),
        component_values=tuple(float(v) for v in values),
        bins=None,
        details={
            "bandwidth": first["bandwidth"],
            "bandwidth_rule": "loo-mle" if opts["bandwidth"] == "loo-mle" else "given",
            "kernel": "dirichlet" if lens == "canonical" else "beta",
            "power_p": first["power_p"] if len(problems) == 1 else None,
            "per_component": notes,
        },
    )
