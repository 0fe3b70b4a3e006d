"""Consistency resampling of binned estimators and the classical binary tests.

- ``consistency``: resample predictions with replacement, redraw labels from them
  (Bröcker & Smith 2007), and compare any binned estimator with its resampled law;
- ``hosmer-lemeshow`` and ``spiegelhalter``: on the binary or top-label lens.

On fixed bins and a one-component lens, a resample's bin statistics are drawn directly: up
to :data:`EXACT_NULL_WORK` resampled rows in all, by drawing the rows and their labels; above,
from the **redrawn cells** (bin × redrawn label). A resampled row lands in bin ``b`` with
redrawn label 1 with probability ``Σ_{i∈b} s_i / n`` and label 0 with ``Σ_{i∈b} (1 − s_i) / n``,
so the cells' counts are exactly ``Multinomial(n, ·)`` — the exact law of every resample's bin
counts and label sums — and each cell's score sum is drawn as a normal with the cell's exact
mean and variance (the scores weighted by ``s`` or ``1 − s``), as the cell bootstrap does
(:mod:`core.inference.cells`). The cost is ``O(R · B)`` instead of ``O(R · n)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from core.analyses.calibration_tests.base import (
    BINARY_TEST_LENSES,
    TESTS,
    CalibrationTestResult,
    check_resamples,
    make_result,
    resampling_result,
)
from core.base.errors import ConfigError, EstimationError
from core.base.tails import chi2_sf, norm_sf
from core.estimators import ESTIMATORS
from core.estimators import kernel as kern
from core.estimators.base import KernelContext, NormalStream, lens_view
from core.inference.calibration import EstimatorCall
from core.inference.cells import CHUNK_CELLS, multinomial_batch, supports
from core.stats.binned_view import bin_view
from core.stats.binning import BINNINGS, RowBatch, bin_stats, check_n_bins
from core.stats.lenses import lens_components


def _values(call: EstimatorCall, batch: Any, m: int) -> np.ndarray:
    """Return the estimator's values on a batch of ``m`` resamples of one component."""
    ctx = KernelContext(call.options, NormalStream(0), np.zeros(m, dtype=np.int64))
    values = call.info.kernel(batch, call.norm, ctx)  # type: ignore[misc]
    values = values[0] if isinstance(values, tuple) else values
    return call.info.combine(values[:, None], np.ones(1), call.norm)


def _batched_null(
    call: EstimatorCall,
    p: np.ndarray,
    y: np.ndarray,
    r: int,
    rng: np.random.Generator,
    progress: Any = None,
) -> np.ndarray:
    """Consistency null of a binned estimator on fixed bins and a one-component lens.

    Bins do not depend on the sample here, so a chunk of resamples is one batch of bin
    statistics read by the estimator's kernel; the redrawn outcome is Bernoulli(score)
    on these lenses.
    """
    view = lens_view(p, y, call.lens, class_names=call.class_names)
    comp = bin_view(view, call.binning, call.n_bins, call.tie_policy).components[0]
    scores, n = comp.scores, p.shape[0]
    out = np.empty(r)
    step = max(1, 4_000_000 // n)
    for s in range(0, r, step):
        m = min(step, r - s)
        rows = rng.integers(0, n, size=(m, n))
        outcome = rng.random((m, n)) < scores[rows]
        batch = RowBatch(comp.index[rows], scores[rows], outcome, comp.n_bins)
        out[s : s + m] = _values(call, batch, m)
        _report(progress, s + m, r)
    return out


def _report(progress: Any, done: int, r: int) -> None:
    """Tell ``progress`` how many of the ``r`` resamples are drawn (if it listens)."""
    if progress is not None:
        progress(done / r, f"{done:,} of {r:,} resamples")


#: Resampled rows (``n × R``) of consistency resampling drawn row by row; above, by cells.
EXACT_NULL_WORK = 10_000_000


@dataclass(frozen=True)
class _RedrawnCells:
    """The cells (bin × redrawn label) of one component, in the fields :func:`~core.inference.cells.multinomial_batch` reads.

    ``counts`` are the cells' expected shares times ``n`` (weights, not integers): the batch
    reads only the ratios ``score_sums / counts`` and ``score_squares / counts``.
    """

    edges: tuple[np.ndarray, ...]
    bins: np.ndarray
    outcomes: np.ndarray
    counts: np.ndarray
    score_sums: np.ndarray
    score_squares: np.ndarray

    @property
    def n_cells(self) -> int:
        return self.counts.shape[0]

    @classmethod
    def of(cls, index: np.ndarray, scores: np.ndarray, n_bins: int) -> _RedrawnCells:
        s = np.asarray(scores, dtype=np.float64)
        s1 = np.bincount(index, s, n_bins)
        s2 = np.bincount(index, s * s, n_bins)
        s3 = np.bincount(index, s * s * s, n_bins)
        n0 = np.bincount(index, minlength=n_bins) - s1  # Σ (1 − s)
        bins = np.repeat(np.arange(n_bins), 2)
        return cls(
            edges=(np.empty(n_bins + 1),),
            bins=bins[:, None],
            outcomes=np.tile([1.0, 0.0], n_bins)[:, None],
            counts=np.column_stack([s1, n0]).ravel(),
            score_sums=np.column_stack([s2, s1 - s2]).ravel()[:, None],
            score_squares=np.column_stack([s3, s2 - s3]).ravel()[:, None],
        )


def _cells_null(
    call: EstimatorCall,
    p: np.ndarray,
    y: np.ndarray,
    r: int,
    rng: np.random.Generator,
    progress: Any = None,
) -> np.ndarray:
    """Consistency null from the redrawn cells (module docstring); as :func:`_batched_null`."""
    view = lens_view(p, y, call.lens, class_names=call.class_names)
    comp = bin_view(view, call.binning, call.n_bins, call.tie_policy).components[0]
    cells = _RedrawnCells.of(comp.index, comp.scores, comp.n_bins)
    n = p.shape[0]
    shares = np.maximum(cells.counts, 0.0)
    shares = shares / shares.sum()
    out = np.empty(r)
    step = max(1, CHUNK_CELLS // cells.n_cells)
    for s in range(0, r, step):
        m = min(step, r - s)
        draws = rng.multinomial(n, shares, size=m).astype(np.float64)
        batch = multinomial_batch(cells, 0, draws, rng)  # type: ignore[arg-type]
        out[s : s + m] = _values(call, batch, m)
        _report(progress, s + m, r)
    return out


def _null_path(call: EstimatorCall, n: int, r: int) -> str:
    """How a consistency null of ``r`` resamples of ``n`` rows is drawn.

    ``"cells"`` (the redrawn cells) or ``"batched"`` (rows, a batch of resamples at a time)
    on fixed bins and a one-component lens; else ``"rows"``, one resample at a time.
    """
    fixed = call.binning == "discrete" or not BINNINGS.get(call.binning).data_dependent
    if not (call.info.from_bins and fixed and call.lens in BINARY_TEST_LENSES):
        return "rows"
    if n * r > EXACT_NULL_WORK and supports(call.info, call.norm):
        return "cells"
    return "batched"


def _consistency_row_work(
    p: np.ndarray,
    y: np.ndarray,
    *,
    lens: str,
    estimator: str = "plugin",
    binning: str = "equal-width",
    n_bins: int = 15,
    norm: float | str = 1,
    tie_policy: str = "split",
    n_resamples: int = 1000,
) -> int:
    """Return the work of a consistency null, in row draws' worth (about 33 ns each).

    ``n × R`` drawn in batches; ``R × cells ×`` :data:`CELL_COST` from the redrawn cells
    (two a bin; a bin a distinct score on the discrete bins); ``n × R × components`` one
    resample at a time, times :data:`REBIN_COST` where every resample is binned or sorted
    anew (a data-dependent or discrete binning, an estimator not read from bins).
    """
    call = EstimatorCall.make(
        estimator, lens=lens, norm=norm, binning=binning, n_bins=n_bins, tie_policy=tie_policy
    )
    n, r = p.shape[0], int(n_resamples)
    path = _null_path(call, n, r)
    if path == "batched":
        return n * r
    if path == "cells":
        if call.binning == "discrete":
            view = lens_view(p, y, call.lens, class_names=call.class_names)
            n_bins = bin_view(view, call.binning, call.n_bins, call.tie_policy).components[0].n_bins
        else:
            n_bins = call.n_bins
        return r * 2 * n_bins * CELL_COST
    rebin = (
        not call.info.from_bins
        or call.binning == "discrete"
        or BINNINGS.get(call.binning).data_dependent
    )
    return n * r * lens_components(call.lens, p.shape[1]) * (REBIN_COST if rebin else 1)


#: Row draws' worth of time a resample spends on each row where it is binned or sorted
#: anew (measured at 10⁶ binary rows: equal-mass bins, the sweep and the smooth estimator
#: about 150–300 ns a row, against about 33 ns a row and class on fixed bins).
REBIN_COST = 8
#: Row draws' worth of one redrawn cell of one resample (about 135 ns: a multinomial over
#: 2·10⁶ cells, the discrete bins of 10⁶ distinct scores).
CELL_COST = 4


def _resampled_labels(
    cdf_by_class: np.ndarray, rows: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Draw each resampled row's label from its probabilities (``(K, n)`` cumulative sums).

    Class by class, so every gather reads one contiguous column.
    """
    u = rng.random(rows.size)
    u *= cdf_by_class[-1][rows]
    labels = np.zeros(rows.size, dtype=np.int64)
    for column in cdf_by_class[:-1]:
        labels += u >= column[rows]
    return labels


@TESTS.register(
    "consistency",
    label="Consistency resampling",
    description="Resample predictions with replacement, redraw labels from them, and compare "
    "the binned estimate with its resampled distribution.",
    formula="Bröcker & Smith (2007); Vaicenavicius et al. (2019); Widmann et al. (2019) §4.4",
    kind="resampling",
    random=True,
    quadratic=False,
    lenses=("binary", "top-label", "classwise"),
    options=("estimator", "binning", "n_bins", "norm", "tie_policy", "n_resamples"),
    assumptions="i.i.d. rows; known to reject too often with many or fine bins",
    binned=True,
    row_work=_consistency_row_work,
    reports_progress=True,
)
def _consistency(
    p,
    y,
    *,
    lens,
    rng,
    estimator="plugin",
    binning="equal-width",
    n_bins=15,
    norm=1,
    tie_policy="split",
    n_resamples=1000,
    progress=None,
) -> CalibrationTestResult:
    info = ESTIMATORS.get(estimator)
    if not info.lp_scale:
        raise ConfigError(
            f"Consistency resampling runs on an ℓp calibration error (binned or smooth); "
            f"{estimator!r} is not one. Choose one of {', '.join(ESTIMATORS.names(lp_scale=True))}."
        )
    call = EstimatorCall.make(
        estimator, lens=lens, norm=norm, binning=binning, n_bins=n_bins, tie_policy=tie_policy
    )
    r = check_resamples(n_resamples)
    t = float(call.run(p, y, np.random.default_rng(0)).value)
    # a seeded Monte Carlo estimator (debiased ℓ1) is one function of the data: every resample
    # reads the draws the observed value read, so a batch of resamples shares one stream
    random = info.random(call.norm)
    how = _null_path(call, p.shape[0], r)
    fast = how != "rows"
    path = "cells" if how == "cells" else "rows"
    if how == "cells":
        null = _cells_null(call, p, y, r, rng, progress)
    elif how == "batched":
        null = _batched_null(call, p, y, r, rng, progress)
    else:
        n = p.shape[0]
        cdf = np.ascontiguousarray(np.cumsum(p, axis=1).T)
        null = np.empty(r)
        for i in range(r):  # one vectorised estimator call per resample
            rows = rng.integers(0, n, size=n)
            y_star = _resampled_labels(cdf, rows, rng)
            own = np.random.default_rng(0) if random else rng
            null[i] = call.run(p[rows], y_star, own).value
            if (i + 1) % max(1, r // 100) == 0:
                _report(progress, i + 1, r)
    return resampling_result(
        "consistency",
        lens=lens,
        n=p.shape[0],
        statistic=t,
        resamples=null,
        observed=t,
        method=f"consistency resampling of {info.label}"
        + (
            " (redrawn cells: exact bin counts and label sums, normal score sums)"
            * (path == "cells")
        ),
        details={
            "path": path,
            "estimator": estimator,
            "binning": binning,
            "n_bins": call.n_bins,
            "norm": call.norm,
            "vectorised": fast,
        },
    )


# ----------------------------------------------------------------- classical binary tests


def _binary_view(p: np.ndarray, y: np.ndarray, lens: str) -> tuple[np.ndarray, np.ndarray]:
    prob = kern.lens_problems(p, y, lens, validated=True)[0]
    return prob.probs[:, 1], prob.labels.astype(np.float64)


#: Hosmer–Lemeshow's χ² approximation needs at least this many expected events and
#: expected non-events in every group (see docs/formulas.md#hosmer-lemeshow).
HL_MIN_EXPECTED = 1.0


def _hl_cells_ok(counts: np.ndarray, expected: np.ndarray, used: np.ndarray) -> bool:
    return bool(
        np.all(expected[used] >= HL_MIN_EXPECTED)
        and np.all(counts[used] - expected[used] >= HL_MIN_EXPECTED)
    )


def _check_expected_counts(
    s: np.ndarray,
    o: np.ndarray,
    counts: np.ndarray,
    expected: np.ndarray,
    used: np.ndarray,
    n_groups: int,
) -> None:
    """Refuse Hosmer–Lemeshow when a group expects fewer than ``HL_MIN_EXPECTED`` of either outcome."""
    if _hl_cells_ok(counts, expected, used):
        return
    low = np.minimum(expected, counts - expected)
    worst = int(np.argmin(np.where(used, low, np.inf)))
    fewer = next(
        (g for g in range(n_groups - 1, 0, -1) if _hl_ok_with(s, o, g)),
        None,
    )
    hint = (
        f"n_groups={fewer} meets it on these data"
        if fewer is not None
        else "no number of groups meets it on these data"
    )
    raise EstimationError(
        f"Hosmer–Lemeshow is not applicable: too few expected counts. Its χ² approximation "
        f"needs at least {HL_MIN_EXPECTED:g} expected event and non-event in every group, but "
        f"group {worst + 1} of {n_groups} ({int(counts[worst])} rows) expects "
        f"{expected[worst]:.3g} events and {counts[worst] - expected[worst]:.3g} non-events. "
        f"Use fewer groups ({hint}), more rows, or a test without this requirement "
        "(consistency resampling, Spiegelhalter's Z)."
    )


def _hl_ok_with(s: np.ndarray, o: np.ndarray, n_groups: int) -> bool:
    groups = bin_stats(s, o, binning="equal-mass", n_bins=n_groups)
    counts = groups.counts.astype(np.float64)
    expected = groups.score_sums
    with np.errstate(divide="ignore", invalid="ignore"):
        var = expected * (1.0 - expected / counts)
    used = (counts > 0) & (var > 0)
    return bool(used.any()) and _hl_cells_ok(counts, expected, used)


@TESTS.register(
    "hosmer-lemeshow",
    label="Hosmer–Lemeshow",
    description="χ² over equal-mass risk groups: Σ (O − E)² / (E(1 − E/n_g)).",
    formula="Hosmer & Lemeshow (1980)",
    kind="classical",
    random=False,
    quadratic=False,
    lenses=BINARY_TEST_LENSES,
    options=("n_groups", "fitted"),
    assumptions="independent rows; at least 1 expected event and non-event in every group "
    "(χ² approximation; refused below)",
)
def _hosmer_lemeshow(p, y, *, lens, rng, n_groups=10, fitted=False) -> CalibrationTestResult:
    s, o = _binary_view(p, y, lens)
    g = check_n_bins(n_groups)
    groups = bin_stats(s, o, binning="equal-mass", n_bins=g)
    counts = groups.counts.astype(np.float64)
    expected, observed = groups.score_sums, groups.label_sums
    with np.errstate(divide="ignore", invalid="ignore"):
        var = expected * (1.0 - expected / counts)
    used = (counts > 0) & (var > 0)
    _check_expected_counts(s, o, counts, expected, used, g)
    stat = float(np.sum((observed[used] - expected[used]) ** 2 / var[used]))
    dof = int(used.sum()) - (2 if fitted else 0)
    if dof < 1:
        raise EstimationError(
            f"Hosmer–Lemeshow needs at least {3 if fitted else 1} groups with variance; "
            f"these scores give {int(used.sum())}. Use more rows or fewer ties."
        )
    pv = float(chi2_sf(stat, dof))
    return make_result(
        "hosmer-lemeshow",
        lens=lens,
        n=s.size,
        statistic=stat,
        pvalue=pv,
        method=f"χ² with {dof} degrees of freedom ({'G − 2, fitted on these data' if fitted else 'G, held-out data'})",
        details={
            "dof": dof,
            "n_groups": int(used.sum()),
            "group_counts": counts,
            "observed": observed,
            "expected": expected,
        },
    )


@TESTS.register(
    "spiegelhalter",
    label="Spiegelhalter's Z",
    description="Z = Σ (y − p)(1 − 2p) / √Σ (1 − 2p)² p(1 − p); two-sided normal p-value.",
    formula="Spiegelhalter (1986)",
    kind="classical",
    random=False,
    quadratic=False,
    lenses=BINARY_TEST_LENSES,
    options=(),
    assumptions="independent rows; normal approximation of a sum (large n)",
)
def _spiegelhalter(p, y, *, lens, rng) -> CalibrationTestResult:
    s, o = _binary_view(p, y, lens)
    w = 1.0 - 2.0 * s
    var = float(np.sum(w * w * s * (1.0 - s)))
    if var <= 0.0:
        raise EstimationError(
            "Spiegelhalter's Z is undefined when every score is 0, ½ or 1 (zero variance)."
        )
    z = float(np.sum((o - s) * w) / np.sqrt(var))
    return make_result(
        "spiegelhalter",
        lens=lens,
        n=s.size,
        statistic=z,
        pvalue=float(2.0 * norm_sf(abs(z))),
        method="two-sided normal approximation",
        details={"variance": var},
    )
