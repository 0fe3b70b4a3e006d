"""The CORP reliability diagram (Dimitriadis, Gneiting & Jordan 2021) under an analysis config.

:func:`corp_diagram` draws, for each lens component, the isotonic (PAV) recalibration curve
of the forecasts (:mod:`core.stats.corp`) with its consistency and confidence bands, the
forecasts' histogram and the Brier score's MCB − DSC + UNC decomposition: the ``"corp"``
kind of :data:`core.figures.diagrams.DIAGRAMS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from core.analyses.analysis import check_config
from core.data import as_predictions
from core.stats.corp import (
    BAND_MAX_COMPONENTS,
    BAND_RESAMPLES,
    HISTOGRAM_BINS,
    CorpBand,
    CorpDecomposition,
    band_draws,
    band_resamples,
    combine_terms,
    corp_band,
    corp_groups,
    corp_lens_view,
    decompose_from_stats,
)
from core.stats.lenses import LENSES

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CorpComponent", "CorpDiagram", "corp_diagram"]


@dataclass(frozen=True, eq=False)
class CorpComponent:
    """The CORP curve of one lens component, its bands and its forecast histogram.

    Attributes
    ----------
    name : str
        Component name.
    weight : float
        Its weight in the classwise average.
    x, counts, fitted : numpy.ndarray
        Distinct forecasts, their counts and the CORP estimate (PAV) at each.
    mcb, dsc, unc, score : float
        Its decomposition.
    consistency, confidence : CorpBand or None
        The bands (None when not computed).
    histogram : tuple of numpy.ndarray
        ``(counts, edges)`` of the forecasts on :data:`HISTOGRAM_BINS` equal-width bins.
    """

    name: str
    weight: float
    x: np.ndarray
    counts: np.ndarray
    fitted: np.ndarray
    mcb: float
    dsc: float
    unc: float
    score: float
    consistency: CorpBand | None
    confidence: CorpBand | None
    histogram: tuple[np.ndarray, np.ndarray]

    @property
    def blocks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(x_min, x_max, value)`` of each block of equal CORP estimate."""
        f = self.fitted
        change = np.flatnonzero(f[1:] != f[:-1])
        first = np.concatenate([[0], change + 1])
        last = np.append(change, f.size - 1)
        return self.x[first], self.x[last], f[first]

    def curve(self) -> tuple[np.ndarray, np.ndarray]:
        """Return the drawn curve: each block's ends at its value, joined block to block."""
        lo, hi, v = self.blocks
        two = hi != lo
        xs = np.column_stack([lo, hi]).ravel()[np.column_stack([np.ones_like(two), two]).ravel()]
        return xs, np.repeat(v, 1 + two)


@dataclass(frozen=True, eq=False)
class CorpDiagram:
    """The CORP reliability diagram of one data set (a :data:`core.figures.diagrams.DIAGRAMS` result).

    Attributes
    ----------
    decomposition : CorpDecomposition
        MCB, DSC, UNC and S.
    components : tuple of CorpComponent
        Curve, bands and histogram per lens component.
    lens : str
        The lens.
    n_resamples : int
        Resamples of each band (0: no bands).
    confidence_level : float
        The bands' pointwise level.
    seed : int
        The seed of the bands.
    notes : tuple of str
        What was left out (bands of many components, a lens replaced).
    """

    decomposition: CorpDecomposition
    components: tuple[CorpComponent, ...]
    lens: str
    n_resamples: int
    confidence_level: float
    seed: int
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def summary(self) -> str:
        """One sentence on these data."""
        d = self.decomposition
        steps = sum(c.blocks[0].size for c in self.components)
        where = "per class, averaged" if len(self.components) > 1 else "on the " + self.lens
        text = (
            f"CORP ({where}, n = {d.n:,}): Brier score {d.score:.4g} = MCB {d.mcb:.4g} − "
            f"DSC {d.dsc:.4g} + UNC {d.unc:.4g}; the isotonic (PAV) curve has {steps:,} "
            f"step{'s' if steps != 1 else ''}"
        )
        if self.n_resamples:
            text += f", bands at {self.confidence_level:.0%} from {self.n_resamples:,} resamples"
        return text + "." + "".join(" " + n for n in self.notes)

    def table(self) -> pd.DataFrame:
        """Return the decomposition table (:meth:`CorpDecomposition.table`)."""
        return self.decomposition.table()

    def to_record(self) -> dict[str, Any]:
        """JSON-ready numbers: the decomposition and each component's PAV blocks."""
        comps = []
        for c in self.components:
            lo, hi, v = c.blocks
            comps.append(
                {
                    "name": c.name,
                    "blocks": {"x_min": lo.tolist(), "x_max": hi.tolist(), "value": v.tolist()},
                    "n_distinct": int(c.x.size),
                }
            )
        return {
            "kind": "corp",
            "summary": self.summary,
            "decomposition": self.decomposition.to_record(),
            "n_resamples": self.n_resamples,
            "confidence_level": self.confidence_level,
            "seed": self.seed,
            "components": comps,
        }


def corp_diagram(data: Any, config: Any = None) -> CorpDiagram:
    """Compute the CORP reliability diagram under an analysis config.

    The config gives the lens (a lens without 1-D components becomes binary for binary
    predictions, else top-label, with a note), the class weights, the seed and the
    confidence level of the bands; the bands use :data:`BAND_RESAMPLES` resamples each
    (none when ``config.consistency_band`` is off).

    Parameters
    ----------
    data : Predictions or (probs, labels)
        The predictions.
    config : AnalysisConfig, optional
        The options (default ``AnalysisConfig()``).

    Returns
    -------
    CorpDiagram
        Curves, bands, histograms and the decomposition.
    """
    config = check_config(config)
    pred = as_predictions(data)
    lens = config.lens
    notes = []
    if LENSES.get(lens).kernel_only:
        lens = "binary" if pred.binary else "top-label"
        notes.append(f"The {config.lens} lens has no 1-D components: shown on the {lens} lens.")
    _, view = corp_lens_view(pred, lens, config.class_weights)
    banded = config.consistency_band and len(view.names) <= BAND_MAX_COMPONENTS
    if config.consistency_band and not banded:
        notes.append(f"No bands above {BAND_MAX_COMPONENTS} components.")
    groups = [corp_groups(s, o) for s, o in zip(view.scores, view.outcomes, strict=True)]
    r = band_resamples(max(band_draws(g[1]) for g in groups)) if banded else 0
    if 0 < r < BAND_RESAMPLES:
        notes.append(
            f"Fewer resamples than {BAND_RESAMPLES:,} at this size (each draws the rows and "
            "runs a PAV over every distinct forecast)."
        )
    rng = np.random.default_rng(config.seed)
    comps, values = [], []
    edges = np.linspace(0.0, 1.0, HISTOGRAM_BINS + 1)
    for name, w, s, (x, c, pos) in zip(view.names, view.weights, view.scores, groups, strict=True):
        mcb, dsc, unc, score, fitted = decompose_from_stats(c, c * x, pos)
        values.append((mcb, dsc, unc, score))
        cons = conf = None
        if r:
            kw = {"n_resamples": r, "confidence_level": config.confidence_level, "seed": rng}
            cons = corp_band(x, c, x, kind="consistency", **kw)
            conf = corp_band(x, c, fitted, kind="confidence", fitted=fitted, **kw)
        hist = np.histogram(s, bins=edges)[0]
        comps.append(
            CorpComponent(
                str(name), float(w), x, c, fitted, mcb, dsc, unc, score, cons, conf, (hist, edges)
            )
        )
    w = np.asarray(view.weights, dtype=np.float64)
    mcb, dsc, unc, score = combine_terms(values, w)
    decomposition = CorpDecomposition(
        mcb, dsc, unc, score, lens, tuple(view.names), tuple(values), tuple(map(float, w)), pred.n
    )
    return CorpDiagram(
        decomposition, tuple(comps), lens, r, float(config.confidence_level), config.seed,
        tuple(notes),
    )  # fmt: skip
