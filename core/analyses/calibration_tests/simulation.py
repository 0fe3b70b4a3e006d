"""Empirical type-I and type-II errors of tests on simulated data (the teaching mode)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core.analyses.calibration_tests.base import TESTS
from core.analyses.calibration_tests.run import calibration_test
from core.base.errors import EstimationError
from core.base.validation import check_rng


@dataclass(frozen=True, eq=False)
class TestErrorSimulation:
    """Empirical test error against the significance level on simulated data sets.

    Attributes
    ----------
    pvalues : dict of str to numpy.ndarray
        p-values (or bounds) of each test over the simulated data sets.
    alphas : numpy.ndarray
        Significance levels of the curves.
    calibrated : bool
        True when the generator is calibrated: the curves are type-I errors
        ``P[p ≤ α]``; otherwise type-II errors ``P[p > α]``.
    n : int
        Rows per data set.
    n_resamples : int
        Number of data sets.
    not_applicable : dict of str to int
        Data sets on which a test refused to run (its p-value is NaN there), e.g.
        Hosmer–Lemeshow with too few expected counts; the curves use the others.
    """

    __test__ = False  # not a pytest test class

    pvalues: dict[str, np.ndarray]
    alphas: np.ndarray
    calibrated: bool
    n: int
    n_resamples: int
    not_applicable: dict[str, int] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """Return a long DataFrame ``test, alpha, error`` (one row per test and level)."""
        rows = []
        for name, pv in self.pvalues.items():
            pv = pv[np.isfinite(pv)]  # data sets the test could not run on are left out
            if pv.size == 0:
                continue
            below = (pv[None, :] <= self.alphas[:, None]).mean(axis=1)
            err = below if self.calibrated else 1.0 - below
            rows.append(pd.DataFrame({"test": name, "alpha": self.alphas, "error": err}))
        return pd.concat(rows, ignore_index=True)


def simulate_test_errors(
    tests: Sequence[str],
    sampler: Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray]],
    *,
    n: int = 250,
    n_resamples: int = 200,
    calibrated: bool = True,
    seed: int | np.random.Generator | None = None,
    alphas: ArrayLike | None = None,
    test_options: dict[str, dict[str, Any]] | None = None,
) -> TestErrorSimulation:
    """Run tests on many simulated data sets (the paper's Figure 2).

    Parameters
    ----------
    tests : sequence of str
        Names in :data:`TESTS`.
    sampler : callable
        ``sampler(n, rng) -> (probs, labels)``, e.g. ``DirichletWorld(...).sample``.
    n : int
        Rows per data set.
    n_resamples : int
        Number of data sets.
    calibrated : bool
        Whether the sampler is calibrated (type-I vs type-II curves).
    seed : int, Generator or None
        Seed of the whole simulation.
    alphas : array_like, optional
        Levels; default ``0, 0.01, …, 1``.
    test_options : dict, optional
        Per-test options, e.g. ``{"skce-uq-bootstrap": {"n_resamples": 200}}``.

    Returns
    -------
    TestErrorSimulation
        p-values and error curves.
    """
    for name in tests:
        TESTS.get(name)
    gen = check_rng(seed)
    opts = test_options or {}
    out = {name: np.empty(int(n_resamples)) for name in tests}
    for i in range(int(n_resamples)):
        probs, labels = sampler(int(n), gen)
        for name in tests:
            try:
                out[name][i] = calibration_test(
                    probs, labels, test=name, seed=gen, **opts.get(name, {})
                ).pvalue
            except EstimationError:  # e.g. too few expected counts: not applicable here
                out[name][i] = np.nan
    grid = np.round(np.linspace(0, 1, 101), 2) if alphas is None else np.asarray(alphas, float)
    missing = {name: int(np.isnan(pv).sum()) for name, pv in out.items()}
    return TestErrorSimulation(
        out,
        grid,
        bool(calibrated),
        int(n),
        int(n_resamples),
        {k: v for k, v in missing.items() if v},
    )
