"""CORP: the isotonic fit, the MCB/DSC/UNC decomposition of the Brier score and the bands.

Dimitriadis, Gneiting & Jordan (2021), "Stable reliability diagrams for probabilistic
classifiers", PNAS 118(8) e2016191118; R package ``reliabilitydiag``. CORP (Consistent,
Optimally binned, Reproducible, PAV-based): the reliability diagram is the graph of the
isotonic (pool-adjacent-violators) recalibration of the forecasts, with no binning
choice. For one lens component with forecasts ``x_i`` and outcomes ``y_i ∈ {0, 1}``:

- tied forecasts are pooled: the distinct forecasts ``x_(1) < … < x_(m)`` are groups with
  counts ``n_k`` and mean outcomes ``ȳ_k``; the CORP estimate ``x̂_k`` is the weighted PAV
  fit of ``ȳ`` with weights ``n`` (:func:`core.stats.pav.weighted_pav`), a non-decreasing step
  function of the forecast;
- with ``S`` the mean Brier score and ``r`` the base rate (mean outcome),
  ``MCB = S(x) − S(x̂)``, ``DSC = S(r) − S(x̂)``, ``UNC = S(r) = r(1 − r)``, so
  ``S(x) = MCB − DSC + UNC``. From the groups' sums (what :func:`decompose_from_stats`
  reads, and the ``mcb`` estimator's kernel on the discrete bins):
  ``MCB = (1/n) Σ_k n_k [(x_k − ȳ_k)² − (x̂_k − ȳ_k)²]`` and
  ``DSC = (1/n) Σ_k n_k [(r − ȳ_k)² − (x̂_k − ȳ_k)²]``; both are ≥ 0 (``x`` and the
  constant ``r`` are non-decreasing in ``k``, and ``x̂`` is the projection onto those).

Bands (the package's ``region.method = "resampling"``): each of ``n_resamples`` resamples
draws ``n`` forecasts with replacement and redraws outcomes ``y* ~ Bernoulli(p₀(x))``,
fits PAV to it and reads the fit at the sample's distinct forecasts (a forecast missing
from the resample takes the fit of the nearest smaller one present, else of the nearest
larger: the package's ``fill(downup)``); the band is the pointwise ``[(1 − level)/2,
(1 + level)/2]`` quantiles (linear, R's type 7). ``p₀(x) = x`` gives the *consistency
band* around the diagonal (where a calibrated forecast's CORP curve falls), ``p₀ = x̂``
the *confidence band* around the estimate, where estimates at 0 or 1 away from the
extreme forecasts are replaced by linear interpolation (the package's
``bound_correction``). The package's asymptotic bands for large ``n`` are not
implemented; the resampling is vectorised (drawn counts per distinct forecast, a
multinomial when forecasts repeat a lot, else rows) and the bands are read at up to
:data:`BAND_POINTS` distinct forecasts.

Lenses: the paper is binary; the top-label lens is the binary problem "top label
correct" with the confidence as forecast; the classwise lens is one binary problem per
class, its MCB, DSC, UNC and S averaged with the class weights (uniform by default,
so S is the multiclass Brier score divided by K).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from core.base.errors import ConfigError
from core.base.validation import check_count, check_probs_labels, check_rng
from core.data import as_predictions
from core.stats.lenses import LENSES, LensView, lens_view
from core.stats.pav import tie_groups, weighted_pav

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BAND_POINTS",
    "BAND_RESAMPLES",
    "HISTOGRAM_BINS",
    "CorpBand",
    "CorpDecomposition",
    "band_draws",
    "band_resamples",
    "combine_terms",
    "corp_band",
    "corp_decomposition",
    "corp_groups",
    "corp_lens_view",
    "decompose_from_stats",
    "mcb_from_stats",
]

#: Resamples of each band (fixed, like the binned diagram's consistency band, so that the
#: page's fast pass without a bootstrap draws the same band; the package's default is 100).
BAND_RESAMPLES = 1000
#: Draws × resamples a band may cost (a resample draws ``n`` rows, or one count per distinct
#: forecast when forecasts repeat, and runs a PAV over the distinct forecasts): above, fewer
#: resamples, at least :data:`BAND_MIN_RESAMPLES` (the package's default).
BAND_WORK = 5_000_000
BAND_MIN_RESAMPLES = 100
#: Most distinct forecasts a band is read at (evenly spaced in rank, ends included).
BAND_POINTS = 400
#: Most lens components with bands (classwise with many classes: curves only).
BAND_MAX_COMPONENTS = 10
#: Drawn row indices held at once by the band's resampling.
_CHUNK_ELEMENTS = 2**22
#: Bins of the forecast histogram under the diagram.
HISTOGRAM_BINS = 50


# --------------------------------------------------------------------------- the groups


def corp_groups(scores: np.ndarray, outcomes: np.ndarray) -> tuple[np.ndarray, ...]:
    """Return the distinct forecasts with their counts and numbers of positive outcomes.

    Parameters
    ----------
    scores : numpy.ndarray
        ``(n,)`` forecasts in [0, 1].
    outcomes : numpy.ndarray
        ``(n,)`` 0/1 outcomes (booleans or numbers).

    Returns
    -------
    x, counts, positives : numpy.ndarray
        Distinct forecasts ascending, their counts (float64) and positive counts (float64).
    """
    s = np.asarray(scores, dtype=np.float64)  # a matrix's column is read in place
    t = np.asarray(outcomes)
    tb = t if t.dtype == bool else t.astype(bool)
    got = tie_groups(s, tb) if s.size else None
    if got is None:  # -0.0 or an empty input: numpy.unique
        x, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
        pos = np.bincount(inverse.reshape(-1), weights=tb.astype(np.float64), minlength=x.size)
        return x + 0.0, counts.astype(np.float64), pos
    x, counts, pos = got
    return x, counts.astype(np.float64), pos


def _fit(counts: np.ndarray, positives: np.ndarray) -> np.ndarray:
    """Return the CORP estimate of each group (PAV of the mean outcomes, weighted by count)."""
    return weighted_pav(positives / counts, counts)


def decompose_from_stats(
    counts: np.ndarray, score_sums: np.ndarray, label_sums: np.ndarray
) -> tuple[float, float, float, float, np.ndarray]:
    """Return MCB, DSC, UNC and the mean Brier score of one component from its tie groups.

    Parameters
    ----------
    counts, score_sums, label_sums : numpy.ndarray
        ``(m,)`` statistics of the distinct forecasts in ascending order (the discrete
        bins: empty ones are ignored).

    Returns
    -------
    mcb, dsc, unc, score : float
        The decomposition (``score = mcb − dsc + unc`` up to rounding).
    fitted : numpy.ndarray
        The CORP estimate of each non-empty group.

    Examples
    --------
    >>> out = decompose_from_stats(np.array([2.0, 2.0]), np.array([0.4, 1.6]), np.array([1.0, 1.0]))
    >>> [round(v, 12) for v in out[:4]]
    [0.09, 0.0, 0.25, 0.34]
    """
    c = np.asarray(counts, dtype=np.float64)
    lab = np.asarray(label_sums, dtype=np.float64)
    x = np.asarray(score_sums, dtype=np.float64)
    keep = c > 0
    if not keep.all():  # empty bins (the groups of corp_groups have none)
        c, lab, x = c[keep], lab[keep], x[keep]
    n = c.sum()
    if n == 0:
        raise ConfigError("The CORP decomposition needs at least one forecast.")
    x = x / c
    ybar = lab / c
    fitted = weighted_pav(ybar, c)  # _fit's fit of lab / c, without dividing again
    r = lab.sum() / n
    # the terms below in place, a few arrays of m at a time: the same operations (and
    # bits) as c·(fit − ȳ)², c·(x − ȳ)² − resid, c·(r − ȳ)² − resid, c·((x − ȳ)² + ȳ(1 − ȳ))
    resid = fitted - ybar
    resid *= resid
    resid *= c
    x -= ybar
    x *= x
    term = c * x
    term -= resid
    mcb = float(np.sum(term) / n)
    np.subtract(r, ybar, out=term)
    term *= term
    term *= c
    term -= resid
    dsc = float(np.sum(term) / n)
    unc = float(r * (1.0 - r))
    np.subtract(1.0, ybar, out=term)
    term *= ybar
    x += term
    x *= c
    score = float(np.sum(x) / n)
    return mcb, dsc, unc, score, fitted


def mcb_from_stats(
    counts: np.ndarray, score_sums: np.ndarray, label_sums: np.ndarray
) -> np.ndarray:
    """Return the CORP miscalibration of each row of a batch of discrete-bin statistics.

    Parameters
    ----------
    counts, score_sums, label_sums : numpy.ndarray
        ``(R, m)`` statistics of the distinct forecasts (ascending; a resample's absent
        forecasts have count 0 and no weight).

    Returns
    -------
    numpy.ndarray
        ``(R,)`` MCB values (one PAV per row, each ``O(m)``).
    """
    c = np.atleast_2d(np.asarray(counts))
    if c.dtype.kind not in "iu":  # integer counts divide as their floats do: no copy
        c = c.astype(np.float64, copy=False)
    s = np.atleast_2d(np.asarray(score_sums, dtype=np.float64))
    lab = np.atleast_2d(np.asarray(label_sums, dtype=np.float64))
    out = np.empty(c.shape[0])
    for i in range(c.shape[0]):
        ci, li, si = c[i], lab[i], s[i]
        keep = ci > 0
        if not keep.all():  # a resample's absent forecasts (the full sample has none)
            ci, li, si = ci[keep], li[keep], si[keep]
        n = ci.sum()
        if n == 0:
            out[i] = np.nan
            continue
        # Σ c·((x − ȳ)² − (fit − ȳ)²) / n, in place: a few arrays of m at a time, not ten
        ybar = li / ci
        fitted = weighted_pav(ybar, ci)  # _fit's fit of li / ci, without dividing again
        fitted -= ybar
        fitted *= fitted
        gap = si / ci
        gap -= ybar
        gap *= gap
        gap -= fitted
        gap *= ci
        out[i] = np.sum(gap) / n
    return out


# --------------------------------------------------------------------------- decomposition


@dataclass(frozen=True, eq=False)
class CorpDecomposition:
    """The CORP decomposition of the mean Brier score, ``score = mcb − dsc + unc``.

    Attributes
    ----------
    mcb, dsc, unc, score : float
        Miscalibration, discrimination, uncertainty and the mean Brier score of the
        lens's forecasts (class-weighted averages over the components of the classwise
        lens).
    lens : str
        The lens.
    components : tuple of str
        Component names.
    component_values : tuple of tuple of float
        ``(mcb, dsc, unc, score)`` of each component.
    weights : tuple of float
        Component weights.
    n : int
        Rows.
    """

    mcb: float
    dsc: float
    unc: float
    score: float
    lens: str
    components: tuple[str, ...]
    component_values: tuple[tuple[float, float, float, float], ...]
    weights: tuple[float, ...]
    n: int

    def table(self) -> pd.DataFrame:
        """One row per component (and a ``total`` row when there are several).

        Returns
        -------
        pandas.DataFrame
            Columns ``component, weight, score, mcb, dsc, unc``.
        """
        import pandas as pd

        rows = [
            {"component": name, "weight": w, "score": v[3], "mcb": v[0], "dsc": v[1], "unc": v[2]}
            for name, w, v in zip(self.components, self.weights, self.component_values, strict=True)
        ]
        if len(rows) > 1:
            rows.append(
                {
                    "component": "total",
                    "weight": 1.0,
                    "score": self.score,
                    "mcb": self.mcb,
                    "dsc": self.dsc,
                    "unc": self.unc,
                }
            )
        return pd.DataFrame(rows, columns=["component", "weight", "score", "mcb", "dsc", "unc"])

    def to_record(self) -> dict[str, Any]:
        """JSON-ready numbers."""
        return {
            "lens": self.lens,
            "n": self.n,
            "score": self.score,
            "mcb": self.mcb,
            "dsc": self.dsc,
            "unc": self.unc,
            "components": [
                {"name": name, "weight": w, "mcb": v[0], "dsc": v[1], "unc": v[2], "score": v[3]}
                for name, w, v in zip(
                    self.components, self.weights, self.component_values, strict=True
                )
            ],
        }


def corp_lens_view(data: Any, lens: str, class_weights: Any = None) -> tuple[int, LensView]:
    """Return the rows of predictions and their lens view, refusing a lens without 1-D components.

    A ``(probs, labels)`` pair is validated as :func:`core.data.as_predictions` validates
    it, without making a :class:`core.data.Predictions`: its copies and binary
    ``[1 − p, p]`` matrix cost a fifth of the decomposition of 10⁶ binary rows (the lens
    reads P(y=1) as it is).
    """
    if isinstance(data, tuple) and len(data) == 2:
        probs, labels = check_probs_labels(*data, matrix=False)
        names = None
    else:
        pred = as_predictions(data)
        probs, labels, names = pred.probs, pred.labels, tuple(pred.class_names)
    if LENSES.get(lens).kernel_only:
        raise ConfigError(
            f"The {lens!r} lens has no 1-D components; the CORP decomposition needs "
            "'binary', 'top-label' or 'classwise'."
        )
    view = lens_view(probs, labels, lens, class_names=names, class_weights=class_weights)
    return int(labels.size), view


def combine_terms(values: list[tuple[float, ...]], weights: np.ndarray) -> tuple[float, ...]:
    """Average the components' terms (MCB, DSC, UNC, S) with the lens's weights."""
    arr = np.asarray(values, dtype=np.float64)
    return tuple(float(v) for v in weights @ arr)


def corp_decomposition(
    data: Any, labels: Any = None, *, lens: str = "binary", class_weights: Any = None
) -> CorpDecomposition:
    """Decompose the mean Brier score as ``S = MCB − DSC + UNC`` (CORP).

    Parameters
    ----------
    data : Predictions, (probs, labels) or array_like
        Predictions, or ``probs`` with ``labels`` given separately.
    labels : array_like, optional
        Class indices when ``data`` is ``probs``.
    lens : {"binary", "top-label", "classwise"}, default "binary"
        How predictions become binary problems.
    class_weights : array_like, optional
        Classwise weights (default uniform).

    Returns
    -------
    CorpDecomposition
        MCB, DSC, UNC and S (and per component).

    Raises
    ------
    DataError
        For invalid predictions.
    ConfigError
        For a lens without 1-D components.

    Examples
    --------
    >>> d = corp_decomposition([0.2, 0.2, 0.8, 0.8], [0, 1, 1, 1])
    >>> round(d.mcb, 12), round(d.dsc, 12), round(d.unc, 12), round(d.score, 12)
    (0.065, 0.0625, 0.1875, 0.19)
    """
    pair = data if labels is None else (data, labels)
    n, view = corp_lens_view(pair, lens, class_weights)
    values = []
    for s, o in zip(view.scores, view.outcomes, strict=True):
        x, c, pos = corp_groups(s, o)
        mcb, dsc, unc, score, _ = decompose_from_stats(c, c * x, pos)
        values.append((mcb, dsc, unc, score))
    w = np.asarray(view.weights, dtype=np.float64)
    mcb, dsc, unc, score = combine_terms(values, w)
    return CorpDecomposition(
        mcb=mcb,
        dsc=dsc,
        unc=unc,
        score=score,
        lens=lens,
        components=tuple(view.names),
        component_values=tuple(values),
        weights=tuple(float(v) for v in w),
        n=n,
    )


# --------------------------------------------------------------------------- bands


@dataclass(frozen=True, eq=False)
class CorpBand:
    """A pointwise band of CORP curves at some distinct forecasts.

    Attributes
    ----------
    kind : {"consistency", "confidence"}
        Around the diagonal (outcomes redrawn from the forecast) or around the estimate
        (outcomes redrawn from the CORP estimate).
    x, lower, upper : numpy.ndarray
        Forecasts and the band's limits there.
    n_resamples : int
        Resamples.
    confidence_level : float
        Pointwise level.
    """

    kind: str
    x: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    n_resamples: int
    confidence_level: float


def _rows_drawn(counts: np.ndarray) -> bool:
    """Whether a band draws rows (most forecasts distinct) rather than a count per forecast."""
    return 8 * counts.size > counts.sum()


def band_draws(counts: np.ndarray) -> int:
    """Draws per resample of a band: ``n`` rows, or one count per distinct forecast."""
    return int(counts.sum()) if _rows_drawn(counts) else counts.size


def band_resamples(draws: int) -> int:
    """Return the resamples of a band whose resamples cost ``draws`` draws each.

    :data:`BAND_RESAMPLES` within :data:`BAND_WORK`, else ``BAND_WORK // draws`` but at
    least :data:`BAND_MIN_RESAMPLES`.
    """
    return max(BAND_MIN_RESAMPLES, min(BAND_RESAMPLES, BAND_WORK // max(draws, 1)))


def band_points(m: int, most: int = BAND_POINTS) -> np.ndarray:
    """Return the distinct forecasts a band is read at: all, or ``most`` evenly in rank."""
    if m <= most:
        return np.arange(m)
    return np.unique(np.round(np.linspace(0, m - 1, most)).astype(np.intp))


def _draw_counts(
    counts: np.ndarray, r: int, rng: np.random.Generator, group_of_row: np.ndarray | None
) -> np.ndarray:
    """``(r, m)`` counts of each distinct forecast in ``r`` resamples of the ``n`` rows."""
    n = int(counts.sum())
    m = counts.size
    if group_of_row is None:  # forecasts repeat: a multinomial over the groups
        return rng.multinomial(n, counts / n, size=r).astype(np.float64)
    rows = rng.integers(0, n, size=(r, n))
    g = np.take(group_of_row, rows)
    g += (np.arange(r, dtype=np.intp) * m)[:, None]
    return np.bincount(g.ravel(), minlength=r * m).reshape(r, m).astype(np.float64)


def corp_band(
    x: np.ndarray,
    counts: np.ndarray,
    center: np.ndarray,
    *,
    kind: str,
    n_resamples: int = BAND_RESAMPLES,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    points: np.ndarray | None = None,
    fitted: np.ndarray | None = None,
) -> CorpBand:
    """Return a resampling band of the CORP curve (see the module docstring).

    Parameters
    ----------
    x : numpy.ndarray
        ``(m,)`` distinct forecasts, ascending.
    counts : numpy.ndarray
        ``(m,)`` their counts.
    center : numpy.ndarray
        ``(m,)`` the probability the outcomes are redrawn from: ``x`` (consistency band)
        or the CORP estimate (confidence band).
    kind : {"consistency", "confidence"}
        Which band (the confidence band gets the bound correction).
    n_resamples : int
        Resamples.
    confidence_level : float
        Pointwise level in (0, 1).
    seed : int, Generator or None
        Randomness.
    points : numpy.ndarray, optional
        Indices of ``x`` the band is read at (default :func:`band_points`).
    fitted : numpy.ndarray, optional
        The CORP estimate (for the confidence band's bound correction; default ``center``).

    Returns
    -------
    CorpBand
        The band at ``x[points]``.
    """
    rng = check_rng(seed)
    r_total = check_count("n_resamples", n_resamples)
    x = np.asarray(x, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    center = np.clip(np.asarray(center, dtype=np.float64), 0.0, 1.0)
    m = x.size
    n = int(counts.sum())
    idx = band_points(m) if points is None else np.asarray(points, dtype=np.intp)
    # rows when most forecasts are distinct (one count each), else a multinomial per resample
    group_of_row = None
    if _rows_drawn(counts):
        group_of_row = np.repeat(np.arange(m, dtype=np.intp), counts.astype(np.intp))
    per_chunk = max(1, _CHUNK_ELEMENTS // max(n if group_of_row is not None else m, 1))
    values = np.empty((r_total, idx.size))
    done = 0
    while done < r_total:
        r = min(per_chunk, r_total - done)
        drawn = _draw_counts(counts, r, rng, group_of_row)
        positives = rng.binomial(drawn.astype(np.int64), center).astype(np.float64)
        for i in range(r):
            present = drawn[i] > 0
            fit = _fit(drawn[i, present], positives[i, present])
            # the fit of the nearest smaller forecast present, else of the nearest larger
            j = np.cumsum(present)[idx] - 1
            values[done + i] = fit[np.maximum(j, 0)]
        done += r
    q = np.quantile(values, [0.5 - confidence_level / 2, 0.5 + confidence_level / 2], axis=0)
    lower, upper = q[0], q[1]
    xs = x[idx]
    if kind == "confidence":
        est = (center if fitted is None else np.asarray(fitted, dtype=np.float64))[idx]
        bad = ((est == 0.0) | (est == 1.0)) & (xs != x[0]) & (xs != x[-1])
        if bad.any() and (~bad).any():
            lower = np.where(bad, np.interp(xs, xs[~bad], lower[~bad]), lower)
            upper = np.where(bad, np.interp(xs, xs[~bad], upper[~bad]), upper)
    return CorpBand(kind, xs, lower, upper, r_total, float(confidence_level))
