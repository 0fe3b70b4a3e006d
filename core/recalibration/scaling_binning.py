"""Scaling-binning (Kumar, Liang & Ma 2019): Platt, then bins of the scaled outputs.

Per lens component:

1. fit Platt ``g`` (log-loss on ``logit(p)``; see :mod:`core.recalibration.scaling`);
2. cut ``B`` uniform-mass bins of ``g``'s outputs (``numpy.array_split`` chunk sizes,
   boundaries at midpoints between chunks, bins right-closed, as Kumar et al.'s
   library);
3. each bin outputs the mean of the **scaled values** ``g(z)`` that fall in it (not
   of the labels: that is what lowers the variance compared with histogram binning).

Classwise, the rows are partitioned once for all classes.

``mode="three-splits"`` uses three disjoint seeded parts for steps 1, 2 and 3 (the
theory, Thm 4.1); ``mode="same-data"`` uses all rows for every step (what the paper's
experiments and the library do). An empty bin in step 3 outputs its midpoint and is
reported. Multiclass rows are renormalised as described in
:mod:`core.recalibration.base`.
"""

from __future__ import annotations

import numpy as np
from numpy.random import Generator

from core.base.errors import ConfigError, FitError
from core.base.numeric import count_edges
from core.base.parallel import map_ordered
from core.recalibration.base import (
    Component,
    ComponentFit,
    OneDimRecalibrator,
    Setting,
    check_both_outcomes,
    chunk_sizes,
    component_arrays,
    register,
)
from core.recalibration.histogram import bin_means
from core.recalibration.scaling import affine_sigmoid, check_targets, fit_logistic_rows
from core.stats.binning import check_n_bins

MODES = ("same-data", "three-splits")


def equal_mass_edges(v: np.ndarray, n_bins: int) -> np.ndarray:
    """Upper bin edges of ``numpy.array_split`` chunks of the sorted values (last edge 1).

    Parameters
    ----------
    v : numpy.ndarray
        Values in [0, 1].
    n_bins : int
        Number of chunks (capped at ``len(v)``).

    Returns
    -------
    numpy.ndarray
        Sorted distinct upper edges; ties can merge chunks, giving fewer bins.

    Examples
    --------
    >>> equal_mass_edges(np.array([0.3, 0.5, 0.2, 0.3, 0.5, 0.7]), 3).tolist()
    [0.3, 0.5, 1.0]
    """
    s = np.sort(v)
    return _upper_edges(s, _chunk_ends(s.size, n_bins))


def _chunk_ends(m: int, n_bins: int) -> np.ndarray:
    """End positions of all but the last of ``min(n_bins, m)`` ``array_split`` chunks of ``m``."""
    return np.cumsum(chunk_sizes(m, min(n_bins, m)))[:-1]


def _upper_edges(s: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Distinct midpoints between the order statistics ``s`` on either side of ``ends``, and 1.

    ``s`` only needs the sorted values at the positions ``ends - 1`` and ``ends``.
    """
    mids = (s[ends - 1] + s[ends]) / 2.0
    return np.unique(np.concatenate([mids, [1.0]]))


def equal_mass_edges_rows(v: np.ndarray, n_bins: int) -> list[np.ndarray]:
    """:func:`equal_mass_edges` of every row of ``v``, by one partial sort.

    Only the order statistics on either side of each chunk boundary are needed, so
    a ``numpy.partition`` of each row at those positions (linear time) replaces a full
    sort; the edges are the same numbers.

    Parameters
    ----------
    v : numpy.ndarray
        ``(C, m)`` values in [0, 1].
    n_bins : int
        Number of chunks (capped at ``m``).

    Returns
    -------
    list of numpy.ndarray
        The upper edges of each row.
    """
    ends = _chunk_ends(v.shape[1], n_bins)
    if ends.size == 0:
        return [np.array([1.0]) for _ in range(v.shape[0])]
    kth = np.unique(np.concatenate([ends - 1, ends]))

    def row_edges(row: np.ndarray) -> np.ndarray:
        # one row at a time: a row-sized partition buffer instead of a matrix
        return _upper_edges(np.partition(row, kth), ends)

    return map_ordered(row_edges, v, entries=v.size)


@register(
    "scaling-binning",
    label="Scaling-binning",
    description="Platt scaling, then uniform-mass bins of the scaled outputs; each bin outputs the "
    "mean scaled value. Three disjoint splits (theory) or the same data (practice).",
    formula="Kumar, Liang & Ma 2019 §4.1 (Thm 4.1)",
    family="binning",
    discrete_output=True,
    settings=(
        Setting(
            "mode",
            "Scaling-binning splits",
            choices={
                "same-data": "same data for all steps (practice)",
                "three-splits": "three disjoint splits (theory)",
            },
        ),
    ),
)
class ScalingBinning(OneDimRecalibrator):
    """Kumar et al.'s scaling-binning calibrator.

    Parameters
    ----------
    n_bins : int, default 10
        Number of bins.
    mode : {"same-data", "three-splits"}
        Use all rows for every step, or three disjoint seeded parts.
    split_fractions : tuple of float, default (1/3, 1/3, 1/3)
        Shares of the three parts (``three-splits`` only); normalised to sum 1.
    lens : {"auto", "binary", "top-label", "classwise"}
        ``auto`` is ``binary`` for two classes, else ``classwise``.
    targets : {"platt", "hard"}
        Targets of the Platt step (see :class:`~core.recalibration.scaling.PlattScaling`).
    seed : int or None
        Seed of the three-way split; None means 0.
    """

    def __init__(
        self,
        *,
        n_bins: int = 10,
        mode: str = "same-data",
        split_fractions: tuple[float, float, float] = (1 / 3, 1 / 3, 1 / 3),
        lens: str = "auto",
        targets: str = "platt",
        seed: int | None = 0,
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}; got {mode!r}.")
        fr = np.asarray(split_fractions, dtype=np.float64)
        if fr.shape != (3,) or (fr <= 0).any() or not np.isfinite(fr).all():
            raise ConfigError(
                f"split_fractions must be three positive numbers; got {split_fractions!r}."
            )
        self.n_bins = check_n_bins(n_bins)
        self.mode = mode
        self.split_fractions = tuple(float(f) for f in fr / fr.sum())
        self.lens = self._check_lens(lens)
        self.targets = check_targets(targets)
        self.seed = seed

    def _parts(self, n: int, rng: Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.mode == "same-data":
            every = np.arange(n)
            return every, every, every
        perm = rng.permutation(n)
        c1, c2 = np.round(np.cumsum(self.split_fractions)[:2] * n).astype(int)
        return perm[:c1], perm[c1:c2], perm[c2:]

    def _fit_components(
        self, scores: np.ndarray, log_odds: np.ndarray, outcomes: np.ndarray, rng: Generator
    ) -> list[ComponentFit]:
        # one partition of the rows for every component, so the Platt step runs batched
        n = scores.shape[1]
        p1, p2, p3 = self._parts(n, rng)
        nb = self.n_bins
        if min(p2.size, p3.size) < nb or p1.size < 2:
            raise FitError(
                f"Scaling-binning ({self.mode}) needs at least B = {nb} rows in the binning and "
                f"averaging parts; got {p2.size} and {p3.size} of {n} rows."
            )
        same = self.mode == "same-data"
        t1 = outcomes if same else outcomes[:, p1]
        check_both_outcomes(t1.sum(axis=1), t1.shape[1], "The Platt step of scaling-binning")
        x1 = log_odds if same else log_odds[:, p1]
        slopes, intercepts, _ = fit_logistic_rows(x1, t1, smooth=self.targets == "platt")
        del x1
        g2 = affine_sigmoid(log_odds if same else log_odds[:, p2], slopes, intercepts)
        edges_all = equal_mass_edges_rows(g2, nb)
        g3 = g2 if same else affine_sigmoid(log_odds[:, p3], slopes, intercepts)
        return map_ordered(
            lambda j: self._bin_component(
                float(slopes[j]), float(intercepts[j]), edges_all[j], g3[j]
            ),
            range(len(edges_all)),
            entries=g3.size,
        )

    @property
    def _uses_scores(self) -> bool:
        return False

    def _apply_components(
        self, comps: list[Component], scores: np.ndarray, log_odds: np.ndarray, rng: Generator
    ) -> np.ndarray:
        a, c = component_arrays(comps, "a", "c")
        g = affine_sigmoid(log_odds, a, c, out=log_odds)  # the log-odds are a fresh matrix

        def bin_row(j: int) -> None:  # each row is written by one thread only
            edges = np.atleast_1d(comps[j]["edges"])
            idx = np.minimum(count_edges(edges, g[j], "left"), edges.size - 1)
            g[j] = np.atleast_1d(comps[j]["values"])[idx]

        map_ordered(bin_row, range(len(comps)), entries=g.size)
        return g

    def _bin_component(self, a: float, c: float, edges: np.ndarray, g3: np.ndarray) -> ComponentFit:
        nb = self.n_bins
        idx = count_edges(edges, g3, "left")
        m = edges.size
        counts = np.bincount(idx, minlength=m)
        sums = np.bincount(idx, weights=g3, minlength=m)
        lower = np.concatenate([[0.0], edges[:-1]])
        values, n_empty = bin_means(sums, counts, (lower + edges) / 2.0)
        notes = []
        if m < nb:
            notes.append(f"Tied scaled values merged bins: {m} bins instead of {nb}.")
        if n_empty:
            notes.append(f"{n_empty} bin(s) got no averaging rows; they output their midpoint.")
        return {"a": a, "c": c, "edges": edges, "values": values, "counts": counts}, notes
