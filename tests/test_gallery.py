"""The paper gallery: every entry against the paper's numbers, its figure, and the Papers page."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.analyses.gallery import GALLERY, GR_FIG2_CAPTION, run_entry
from core.stats.guarantees import guarantee_epsilon


@pytest.fixture(scope="module")
def results():
    return {name: run_entry(name, seed=0) for name in GALLERY.names()}


def test_every_entry_agrees_with_the_paper(results):
    for name, result in results.items():
        assert result.paper_rows, name
        frame = result.paper_frame()
        assert frame["agrees"].all(), (name, frame.to_string())


def test_gupta_ramdas_fig2_grid():
    # the digest's Theorem 3 grid at α = 0.1 (§3.6): a closed form, four decimals
    grid = {(500, 2): 0.0861, (1000, 10): 0.1636, (5000, 50): 0.1868, (20000, 22): 0.0579}
    table = run_entry("gupta-ramdas-fig2", ns=(500, 1000, 5000, 20000)).table
    for (n, b), eps in grid.items():
        row = table[(table.n == n) & (table.n_bins == b)]
        assert float(row["epsilon"].iloc[0]) == pytest.approx(eps, abs=5e-5)
    for n, (b, eps) in GR_FIG2_CAPTION.items():
        assert guarantee_epsilon(n, b, 0.1) == pytest.approx(eps, abs=5e-5)


def test_tolerances_tell_the_cases_apart(results):
    # the Monte Carlo tolerances are narrower than the differences the paper is about, so
    # a wrong model, size or estimator would fail the comparison
    rows = {r.quantity: r for res in results.values() for r in res.paper_rows}
    m2, m3 = rows["mean skce-uq, M2"], rows["mean skce-uq, M3"]
    assert m2.tolerance + m3.tolerance < abs(m2.paper - m3.paper)
    b1, b2 = rows["mean skce-b, M1"], rows["mean skce-uq, M1"]
    assert b1.tolerance + b2.tolerance < abs(b1.paper - b2.paper)  # SKCE_b's bias shows
    small, large = rows["mean b*, calibrated, n = 200"], rows["mean b*, calibrated, n = 3,200"]
    assert small.tolerance + large.tolerance < abs(small.paper - large.paper)
    e1, e2 = (
        rows["mean ECE_sweep %, calibrated, n = 800"],
        rows["mean ECE_sweep %, calibrated, n = 3,200"],
    )
    assert e1.tolerance + e2.tolerance < abs(e1.paper - e2.paper)


def test_widmann_skce_b_identity(results):
    # SKCE_b is biased upwards by about E‖e_Y − G‖²/n under M1 (paper: 0.0018)
    t = results["widmann-fig1"].table
    b = t[(t.model == "widmann-m1") & (t.estimator == "skce-b")]["value"]
    uq = t[(t.model == "widmann-m1") & (t.estimator == "skce-uq")]["value"]
    assert (b.to_numpy() > uq.to_numpy()).all()
    # SKCE_ul spreads far more than SKCE_uq under M1 (paper: 16 times)
    ul = t[(t.model == "widmann-m1") & (t.estimator == "skce-ul")]["value"]
    assert 8 < ul.std() / uq.std() < 32


def test_roelofs_fig14_bstar_grows_with_n(results):
    t = results["roelofs-fig14"].table
    means = t[t.world == "calibrated"].groupby("n")["b_star"].mean().to_numpy()
    assert np.all(np.diff(means) > 0)


def test_validity_overlay_has_theory_and_every_method(results):
    r = results["gupta-ramdas-validity"]
    assert set(r.table["method"]) == set(r.extra["results"])
    assert r.extra["results"]["histogram-umd"].theory_marginal is not None


def test_progress_and_seed():
    calls = []
    a = run_entry(
        "roelofs-fig14", ns=(100,), n_resamples=20, seed=3, progress=lambda f, m: calls.append(f)
    )
    b = run_entry("roelofs-fig14", ns=(100,), n_resamples=20, seed=3)
    assert calls and calls[-1] == pytest.approx(1.0)
    assert a.table.equals(b.table)


def test_figures(results):
    from core.figures import gallery_figure

    for name, result in results.items():
        fig = gallery_figure(result)
        assert fig.data, name
        assert fig.layout.xaxis.title.text, name


def test_papers_page_runs_every_entry():
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    app = str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py")
    at = AppTest.from_file(app, default_timeout=240).run()
    at.switch_page("app_pages/papers.py").run()
    assert not at.exception, at.exception
    for name in GALLERY.names():
        at.button(key=f"run_{name}").click().run()
        assert not at.exception, at.exception
    charts = [c.proto.id for c in at.get("plotly_chart")]
    for name in GALLERY.names():
        assert any(f"gallery_{name}" in c for c in charts), (name, charts)
    assert len(at.dataframe) >= len(GALLERY.names())


# ---------------------------------------------------------------- Kumar et al., Figs. 2 and 3


def test_grouped_error_hand_computed():
    from core.analyses.gallery import grouped_calibration_error, population_binned_error

    out = np.array([0.2, 0.2, 0.6, 0.6])
    mu = np.array([0.1, 0.3, 0.5, 0.9])
    # groups {0.2: mean μ 0.2, gap 0}, {0.6: mean μ 0.7, gap 0.1}: CE² = ½·0.01
    assert grouped_calibration_error(out, mu) == pytest.approx(np.sqrt(0.005), abs=1e-15)
    assert grouped_calibration_error(out, mu, 1) == pytest.approx(0.05, abs=1e-15)
    # injective outputs: the pointwise form
    out2 = np.array([0.1, 0.2, 0.3, 0.4])
    assert grouped_calibration_error(out2, mu) == pytest.approx(
        np.sqrt(np.mean((out2 - mu) ** 2)), abs=1e-15
    )
    # two equal-mass bins of out2: {0.1, 0.2} against μ {0.1, 0.3}, {0.3, 0.4} against {0.5, 0.9}
    assert population_binned_error(out2, mu, 2) == pytest.approx(
        np.sqrt(0.5 * (0.15 - 0.2) ** 2 + 0.5 * (0.35 - 0.7) ** 2), abs=1e-15
    )


@pytest.mark.parametrize("world", ["kumar-platt", "kumar-sine", "kumar-noisy-platt"])
def test_population_grid_matches_the_world_integral(world):
    from core.analyses.gallery import grouped_calibration_error, population_grid
    from core.worlds import world_named

    w = world_named(world)
    z, mu = population_grid(w, 400_000)
    # the identity model g(z) = z: the grid's error is the world's true error (quadrature)
    assert grouped_calibration_error(z, mu) == pytest.approx(w.true_calibration_error(2), rel=1e-4)
    assert grouped_calibration_error(mu, mu) == pytest.approx(0.0, abs=1e-12)


def test_population_grid_refuses_other_scores():
    from core.analyses.gallery import population_grid
    from core.base.errors import ConfigError
    from core.worlds import world_named

    with pytest.raises(ConfigError, match="uniform scores"):
        population_grid(world_named("roelofs-fig1"), 100)


def test_kumar_fig2_binning_underestimates(results):
    t = results["kumar-fig2"].table
    truth = t[t.estimator == "true"]["value"].to_numpy()
    pop = t[t.estimator == "population binned"].sort_values("n_bins")["value"].to_numpy()
    # Prop. 3.3: nested equal-mass bins (B = 2, 4, …) give a non-decreasing lower bound
    assert np.all(pop <= truth + 1e-12)
    assert np.all(np.diff(pop) >= -1e-9)
    # the ±0.02 wiggle is invisible to every B ≤ 512: the truth is far above the binned error
    assert truth[0] > 1.5 * pop[-1]
    plug = t[t.estimator == "plugin"].sort_values("n_bins")
    # the raw plug-in rises with B well past the population value (its bias ≈ B/n)
    assert plug["value"].iloc[-1] > 2 * pop[-1]
    assert (plug["low"] <= plug["mid"]).all() and (plug["mid"] <= plug["high"]).all()


def test_kumar_fig3_orderings(results):
    r = results["kumar-fig3"]
    t = r.table
    m = t.groupby(["method", "n_bins"])["ce2"].mean()
    # the digest's CI-safe asserts (§3.3): histogram grows with B, scaling-binning does not
    assert m["histogram-umd"][40] > 2.5 * m["histogram-umd"][10]
    assert m["scaling-binning"][80] < 1.3 * m["scaling-binning"][10]
    assert (m["scaling-binning"] < m["histogram-umd"]).loc[[10, 20, 40, 80]].all()
    rows = {row.quantity: row for row in r.paper_rows}
    h10, h40 = rows["true CE², histogram-umd, B = 10"], rows["true CE², histogram-umd, B = 40"]
    assert h10.tolerance + h40.tolerance < abs(h10.paper - h40.paper)
    s10 = rows["true CE², scaling-binning, B = 10"]
    assert h10.tolerance + s10.tolerance < abs(h10.paper - s10.paper)


def test_one_sided_paper_rows():
    from core.analyses.gallery import PaperRow

    assert PaperRow("q", 2.0, 1.9, 0.2, "s", "≥").agrees
    assert not PaperRow("q", 2.0, 1.7, 0.2, "s", "≥").agrees
    assert PaperRow("q", 2.0, 9.0, 0.0, "s", "≥").agrees
    assert not PaperRow("q", 2.0, 9.0, 0.0, "s").agrees
    assert PaperRow("q", 2.0, -9.0, 0.0, "s", "≤").agrees


def test_metacal_table1_controls(results):
    r = results["metacal-table1"]
    t = r.table
    mean = t.groupby("method").mean(numeric_only=True)
    # miscoverage control: E[F0] = ⌊(n₁ + 1)α⌋/(n₁ + 1) ≈ 0.0497 at n₁ ≈ 346; the run-to-run
    # sd is ≈ 0.011 (Beta law, digest S1), so 12 runs put the mean within ±0.013 (4 se)
    assert abs(mean.loc["meta-cal miscoverage", "miscoverage"] - 0.0497) < 0.013
    # coverage-accuracy control is conservative: mean accuracy in [β, β + 0.04]
    assert 0.8 <= mean.loc["meta-cal coverage-accuracy", "coverage_accuracy"] < 0.84
    # rejecting costs coverage; temperature scaling and the uncalibrated model accept all
    assert mean.loc["temperature", "coverage"] == 1.0
    assert (
        mean.loc["meta-cal coverage-accuracy", "coverage"]
        < mean.loc["meta-cal miscoverage", "coverage"]
        < 1.0
    )
    # temperature scaling helps but cannot fix the mixture of difficulties (digest: 0.062 → 0.044)
    assert 0.035 < mean.loc["temperature", "ece"] < mean.loc["uncalibrated", "ece"]
    # the ECE is over every test row; rejected rows (uniform, calibrated on average) dilute
    # it, so the accepted rows alone have the higher ECE; without rejection the two agree
    for method in ("meta-cal miscoverage", "meta-cal coverage-accuracy"):
        assert mean.loc[method, "ece"] < mean.loc[method, "ece_accepted"]
    assert mean.loc["temperature", "ece"] == mean.loc["temperature", "ece_accepted"]
    rows = {row.quantity: row for row in r.paper_rows}
    u, ts = rows["mean ece, uncalibrated"], rows["mean ece, temperature"]
    assert u.tolerance + ts.tolerance < abs(u.paper - ts.paper)
