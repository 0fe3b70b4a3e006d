"""What each library would report on a data set, beside Calibscope's value, and why.

:func:`peer_table` runs every library function of every convention
(:data:`core.stats.conventions.CONVENTIONS`) on the library's own bins and Calibscope's estimator
on Calibscope's bins, and says in one sentence per row why the two differ (the Estimators
page's "What each library would report on your data").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from core.analyses.analysis import AnalysisConfig, check_config
from core.base.errors import ConfigError
from core.base.validation import norm_key, norm_text
from core.data import as_predictions
from core.inference.calibration import EstimatorCall
from core.stats.binned_view import BinnedViews
from core.stats.conventions import CONVENTIONS, ConventionInfo

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PEER_COLUMNS", "PeerTable", "explain", "peer_table"]

PEER_COLUMNS = [
    "library",
    "function",
    "estimator",
    "norm",
    "binning",
    "value",
    "calibscope",
    "difference",
    "why",
]


@dataclass(frozen=True, eq=False)
class PeerTable:
    """What each library would report on one data set, beside Calibscope's value.

    Attributes
    ----------
    rows : tuple of dict
        One per (library, function): the columns of :data:`PEER_COLUMNS`.
    lens : str
        The lens of the comparison.
    n_bins : int
        The number of bins every library was given.
    notes : tuple of str
        Libraries left out, and why (e.g. no such lens).
    """

    rows: tuple[dict[str, Any], ...]
    lens: str
    n_bins: int
    notes: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """Return the table (columns :data:`PEER_COLUMNS`; the norm written ``ℓ1``, ``ℓ2``, ``ℓ∞``)."""
        import pandas as pd

        rows = [{**r, "norm": norm_text(r["norm"])} for r in self.rows]
        return pd.DataFrame(rows, columns=PEER_COLUMNS)

    def to_record(self) -> dict[str, Any]:
        """Return a JSON-ready record."""
        rows = [{**r, "norm": norm_key(r["norm"])} for r in self.rows]
        return {"lens": self.lens, "n_bins": self.n_bins, "rows": rows, "notes": list(self.notes)}


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def explain(
    conv: ConventionInfo,
    scores: np.ndarray,
    native_index: np.ndarray,
    index: np.ndarray,
    binning: str,
    lens: str,
    n_bins: int,
    same_value: bool,
) -> str:
    """One sentence: why a library's bins (and so its value) differ from Calibscope's."""
    parts = []
    if lens in conv.float32_lenses:
        cast = int(np.count_nonzero(scores != scores.astype(np.float32)))
        if cast:
            parts.append(f"float32 casting changes {_count(cast, 'score')}")
    if conv.clip:
        clipped = int(np.count_nonzero((scores <= 0.0) | (scores >= 1.0)))
        if clipped:
            parts.append(f"clipping to [ε, 1 − ε] moves {_count(clipped, 'score')} at 0 or 1")
    extra = index >= n_bins if conv.extra_bin else np.zeros(index.shape, dtype=bool)
    n_extra = int(np.count_nonzero(extra))
    if n_extra:
        parts.append(f"an extra bin {n_bins + 1} holds {_count(n_extra, 'row')} at exactly 1.0")
    rule = conv.mass_rule if binning == "equal-mass" else conv.edge_rule
    if binning == "discrete":
        moved = 0
    else:
        moved = int(np.count_nonzero((index != native_index) & ~extra))
    if moved:
        if binning == "equal-width":
            lower = int(np.count_nonzero((index < native_index) & ~extra))
            where = f"{_count(moved, 'row')} on bin edges fall in another bin"
            if lower == moved:
                where = f"{_count(moved, 'row')} on bin edges fall one bin lower"
            parts.append(f"{where} ({rule})")
        else:
            parts.append(f"{_count(moved, 'row')} fall in another bin ({rule})")
    if not parts:
        return "Same bins as Calibscope." + ("" if same_value else " Only rounding differs.")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def peer_table(data: Any, config: AnalysisConfig | None = None) -> PeerTable:
    """Return what each library would report on the data, and why it differs.

    Every library function of every convention (:data:`CONVENTIONS`) on the config's lens
    and number of bins runs on the library's own bins; Calibscope's value is the same
    estimator, norm and binning on Calibscope's bins (the config's tie policy).

    Parameters
    ----------
    data : Predictions or (probs, labels)
        The predictions.
    config : AnalysisConfig, optional
        Lens and number of bins (default ``AnalysisConfig()``).

    Returns
    -------
    PeerTable
        One row per library function; libraries without the lens are named in ``notes``.
    """
    config = check_config(config)
    pred = as_predictions(data)
    names = tuple(pred.class_names)
    views = BinnedViews(pred.probs, pred.labels, names, config.class_weights)
    lens, n_bins = config.lens, config.n_bins
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for name in CONVENTIONS.names(native=False):
        conv = CONVENTIONS.get(name)
        if lens not in conv.lenses:
            notes.append(f"{conv.library} has no {lens} lens (it has {', '.join(conv.lenses)}).")
            continue
        for f in conv.functions:
            opts = {
                "binning": f.binning,
                "n_bins": n_bins,
                "norm": f.norm,
                "lens": lens,
                "tie_policy": config.tie_policy,
                "class_names": names,
            }
            ours = EstimatorCall.make(f.estimator, **opts)
            theirs = EstimatorCall.make(f.estimator, convention=name, **opts)
            try:
                value = float(theirs.run_on(views, config.seed).value)
            except ConfigError as err:  # e.g. netcal's two-label rule
                notes.append(f"{conv.library} {f.call}: {err}")
                continue
            own = float(ours.run_on(views, config.seed).value)
            native = views.binned(lens, f.binning, n_bins, config.tie_policy)
            mine = views.binned(lens, f.binning, n_bins, config.tie_policy, convention=name)
            why = [
                explain(
                    conv,
                    a.scores,
                    a.index,
                    b.index,
                    f.binning,
                    lens,
                    n_bins,
                    value == own,
                )
                for a, b in zip(native.components, mine.components, strict=True)
            ]
            reason = why[0] if len(why) == 1 else " ".join(dict.fromkeys(why))
            rows.append(
                {
                    "library": conv.library,
                    "function": f.call.format(B=n_bins),
                    "estimator": f.estimator,
                    "norm": f.norm,
                    "binning": f.binning,
                    "value": value,
                    "calibscope": own,
                    "difference": value - own,
                    "why": reason,
                }
            )
    return PeerTable(tuple(rows), lens, n_bins, tuple(notes))
