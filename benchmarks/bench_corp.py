"""CORP: the PAV and the MCB/DSC/UNC decomposition against scikit-learn's IsotonicRegression.

Floor: one ``numpy.sort`` of the binary scores (the PAV itself is linear after it). Rows:
:func:`core.stats.corp.corp_decomposition` (tie groups by one key sort, a weighted PAV over the
distinct scores, the decomposition from the groups' sums), scikit-learn's
``IsotonicRegression().fit(p, y).predict(p)`` plus the three mean Brier scores (the same
numbers, checked here to 1e-12), the ``mcb`` estimator's bootstrap through the registry
(1,000 resamples on the discrete bins) and the CORP diagram with both bands.

Run: ``python -m benchmarks.run --only corp`` (``--quick`` for small sizes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.common import median_of, peer_module, row


def _data(n: int, digits: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    p = rng.beta(2.0, 3.0, size=n)
    if digits is not None:
        p = np.round(p, digits)
    return p, (rng.uniform(size=n) < p**0.8).astype(np.int64)


def run(quick: bool) -> list[dict[str, Any]]:
    """Time the CORP decomposition, its bootstrap and diagram; return benchmark rows."""
    from core import AnalysisConfig
    from core.analyses.corp_diagram import corp_diagram
    from core.inference.bootstrap import bootstrap_interval
    from core.stats.corp import corp_decomposition

    rows: list[dict[str, Any]] = []
    n = 20_000 if quick else 1_000_000
    for digits, what in ((None, "continuous"), (2, "2 decimals")):
        p, y = _data(n, digits)
        floor = median_of(lambda p=p: np.sort(p))
        rows.append(row(f"corp floor: sort n={n:,} ({what})", floor, floor))
        ours = median_of(lambda p=p, y=y: corp_decomposition(p, y))
        rows.append(row(f"corp decomposition n={n:,} ({what})", ours, floor))
        sk = peer_module("sklearn")
        if sk is not None:
            from sklearn.isotonic import IsotonicRegression

            def sk_corp(p: np.ndarray = p, y: np.ndarray = y) -> tuple[float, ...]:
                fit = IsotonicRegression(out_of_bounds="clip").fit(p, y).predict(p)
                s, s_fit = np.mean((p - y) ** 2), np.mean((fit - y) ** 2)
                unc = np.mean((y.mean() - y) ** 2)
                return s - s_fit, unc - s_fit, unc, s

            t_sk = median_of(sk_corp, warmup=1)
            d = corp_decomposition(p, y)
            agree = np.allclose([d.mcb, d.dsc, d.unc, d.score], sk_corp(), rtol=0, atol=1e-12)
            rows.append(
                row(
                    f"sklearn IsotonicRegression + Brier n={n:,} ({what})",
                    t_sk,
                    floor,
                    f"ours / sklearn = {ours / t_sk:.2f}; equal to 1e-12: {agree}",
                )
            )
    n_boot = 20_000 if quick else 100_000
    p, y = _data(n_boot)
    floor = median_of(lambda: np.sort(p))
    rows.append(row(f"corp floor: sort n={n_boot:,}", floor, floor))
    r = 100 if quick else 1000
    boot = median_of(
        lambda: bootstrap_interval(p, y, statistic="mcb", lens="binary", n_resamples=r),
        warmup=0,
    )
    rows.append(row(f"mcb bootstrap R={r:,} n={n_boot:,}", boot, floor, "fixed discrete bins"))
    config = AnalysisConfig(lens="binary")
    diagram = median_of(lambda: corp_diagram((p, y), config), warmup=0)
    rows.append(row(f"corp diagram with both bands n={n_boot:,}", diagram, floor))
    return rows
