"""A test too slow for a page says so before it runs: :func:`slow_tests` and ``max_row_work``.

Consistency resampling is drawn in batches on fixed bins and a one-component lens (from
the redrawn cells above a size); on the classwise lens or data-dependent bins it redraws
every resample row by row. Its cost in row draws' worth (:attr:`TestInfo.row_work`) is
what a page's budget (:data:`PAGE_ROW_WORK`) refuses until asked.
"""

from __future__ import annotations

import numpy as np
import pytest

import core
from core.analyses.analysis import AnalysisConfig
from core.analyses.calibration_tests import PAGE_ROW_WORK, TESTS, run_tests, slow_tests
from core.analyses.calibration_tests.classical import CELL_COST, EXACT_NULL_WORK, REBIN_COST


def _data(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), n)
    y = np.minimum((rng.random(n)[:, None] >= p.cumsum(1)).sum(1), k - 1)
    return p, y


def test_row_work_follows_the_path_the_null_is_drawn_on():
    work = TESTS.get("consistency").row_work
    p, y = _data(200, 10)
    # one resample at a time: every row and class of every resample
    assert work(p, y, lens="classwise", n_resamples=50) == 200 * 50 * 10
    # in batches of rows: every row of every resample
    assert work(p, y, lens="top-label", n_resamples=50) == 200 * 50
    # from the redrawn cells: two a bin, above EXACT_NULL_WORK row draws
    r = EXACT_NULL_WORK // 200 + 1
    assert work(p, y, lens="top-label", n_resamples=r) == r * 2 * 15 * CELL_COST
    # the discrete bins are the distinct scores: 200 of them, 10 in the second data set
    assert work(p, y, lens="top-label", binning="discrete", n_resamples=r) == r * 400 * CELL_COST
    q = np.repeat(_data(10, 2)[0], 20, axis=0)
    assert work(q, y % 2, lens="binary", binning="discrete", n_resamples=r) == r * 20 * CELL_COST
    # binned or sorted anew in every resample
    b, z = _data(200, 2)
    assert work(b, z, lens="binary", binning="equal-mass", n_resamples=50) == 200 * 50 * REBIN_COST
    assert work(b, z, lens="binary", estimator="smooth", n_resamples=50) == 200 * 50 * REBIN_COST
    # mcb reads the discrete bins whatever the binning asked: batched, not one at a time
    assert work(b, z, lens="binary", estimator="mcb", binning="equal-mass", n_resamples=50) == (
        200 * 50
    )


def test_the_budget_names_the_fast_settings_and_the_resamples_that_fit():
    data = _data(300, 3)
    config = AnalysisConfig(lens="classwise")
    budget = 300 * 3 * 40
    (reason,) = slow_tests(data, config, n_resamples=1000, max_row_work=budget).values()
    assert "1,000 resamples of 300 rows on the classwise lens with Plug-in" in reason
    assert "estimator=plugin, binning=equal-width, lens=top-label" in reason
    assert "n_resamples=40 fits" in reason and "max_row_work=" in reason
    # the count that fits is the largest one under the budget
    assert not slow_tests(data, config, n_resamples=40, max_row_work=budget)
    assert slow_tests(data, config, n_resamples=41, max_row_work=budget)
    assert not slow_tests(data, config, n_resamples=10**5, max_row_work=None)
    # two classes suggest the binary lens; a row beyond the budget fits no resample
    two = slow_tests(_data(10, 2), AnalysisConfig(binning="equal-mass"), max_row_work=5)
    assert "lens=binary" in two["consistency"] and "not one resample fits" in two["consistency"]


def test_each_surface_names_its_own_controls():
    data, config = _data(300, 3), AnalysisConfig(lens="classwise")
    ui = slow_tests(data, config, max_row_work=1000, surface="ui")["consistency"]
    cli = slow_tests(data, config, max_row_work=1000, surface="cli")["consistency"]
    assert (
        "the sidebar's “Lens” choice (Top-label (confidence))" in ui
        and "press “Run it anyway (slow)”" in ui
    )
    assert "--lens top-label" in cli and "--resamples" in cli and "--estimator plugin" in cli
    assert "\x1e" not in ui + cli  # every marker phrased
    # the page names its choices as its controls show them, and not the budget's units
    assert "“Estimator” choice (Plug-in binned (ECE))" in ui and "row draws" not in ui
    assert "row draws' worth, above 1,000" in cli


def test_run_tests_skips_exactly_what_slow_tests_names_and_runs_it_unbudgeted():
    p, y = _data(300, 3)
    config = AnalysisConfig(lens="classwise")
    tests = ("skce-ul-asymptotic", "consistency", "spiegelhalter")
    budget = 300 * 3 * 50
    suite = run_tests((p, y), config, tests=tests, n_resamples=200, max_row_work=budget)
    assert list(suite.skipped) == ["consistency"]
    assert suite.skipped == slow_tests((p, y), config, tests, 200, budget)
    assert [r.test for r in suite.results] == ["skce-ul-asymptotic", "spiegelhalter"]
    full = run_tests((p, y), config, tests=tests, n_resamples=200)
    assert not full.skipped
    want = core.calibration_test(
        p, y, test="consistency", lens="classwise", n_resamples=200, seed=config.seed
    )
    got = full.get("consistency")
    assert got.pvalue == want.pvalue and got.statistic == want.statistic
    # the others are the same numbers with or without the budget
    assert suite.get("skce-ul-asymptotic").pvalue == full.get("skce-ul-asymptotic").pvalue


def test_the_page_budget_passes_the_defaults_and_stops_the_cliffs_at_a_million_rows():
    rng = np.random.default_rng(1)
    s = rng.beta(2.0, 1.0, 10**6)
    binary = (s, (rng.random(s.size) < s).astype(np.int64))
    config = AnalysisConfig(lens="binary")
    assert not slow_tests(binary, config, max_row_work=PAGE_ROW_WORK)  # the cells: fast
    for slow in ("label-binned", "sweep", "mcb"):  # batched rows, resorted, 2·10⁶ cells
        cfg = AnalysisConfig(lens="binary", estimator=slow)
        assert "consistency" in slow_tests(binary, cfg, max_row_work=PAGE_ROW_WORK), slow
    cfg = AnalysisConfig(lens="binary", binning="equal-mass")
    assert "about 4 min" in slow_tests(binary, cfg, max_row_work=PAGE_ROW_WORK)["consistency"]


def test_the_suite_reports_its_progress_test_by_test_and_within_consistency():
    p, y = _data(300, 3)
    config = AnalysisConfig(lens="classwise")
    seen: list[tuple[float, str]] = []
    with_bar = run_tests((p, y), config, n_resamples=200, progress=lambda f, m: seen.append((f, m)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    inner = [m for _, m in seen if "Consistency resampling, " in m]
    assert inner[-1].endswith("Consistency resampling, 200 of 200 resamples")
    assert len(inner) == 100  # every 1 % of the resamples drawn one at a time
    # the numbers do not depend on the bar
    plain = run_tests((p, y), config, n_resamples=200)
    assert [r.pvalue for r in with_bar.results] == [r.pvalue for r in plain.results]


def test_a_tests_share_of_the_bar_is_its_cost(monkeypatch):
    # the bar's time left extrapolates the pace so far: a long test must fill the bar as it
    # takes the time. Two quick tests of weight 1 beside consistency's 300 × 3 × 200 =
    # 180,000 row draws: halfway through its resamples the suite is
    # (1 + 90,000) / (180,000 + 2) done
    from core.analyses.calibration_tests import suite

    monkeypatch.setattr(suite, "QUICK_TEST_WORK", 1.0)
    seen: dict[str, float] = {}
    run_tests(
        _data(300, 3),
        AnalysisConfig(lens="classwise"),
        tests=("spiegelhalter", "consistency", "skce-ul-asymptotic"),
        n_resamples=200,
        progress=lambda f, m: seen.setdefault(m, f),
    )
    half = seen["test 2 of 3: Consistency resampling, 100 of 200 resamples"]
    assert half == pytest.approx((1 + 90_000) / (180_000 + 2), rel=1e-12)
    assert seen["test 3 of 3: Asymptotic test (SKCE_ul)"] == pytest.approx(
        (1 + 180_000) / (180_000 + 2), rel=1e-12
    )
