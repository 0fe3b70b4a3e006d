"""CORP: the isotonic reliability diagram, its bands and the MCB/DSC/UNC decomposition.

Checked against hand-computed cases, the worked example of Dimitriadis, Gneiting & Jordan
(2021) as printed by the R package ``reliabilitydiag`` (Niamey 2016, EMOS forecast) and an
independent PAV (scikit-learn's ``IsotonicRegression``, which also pools tied forecasts).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from core import AnalysisConfig, ConfigError, analyze, calibration_error
from core.analyses.corp_diagram import CorpDiagram, corp_diagram
from core.estimators import ESTIMATORS
from core.figures.diagrams import DIAGRAMS, diagram_figure, reliability_diagram
from core.inference.bootstrap import bootstrap_interval
from core.stats.corp import (
    corp_band,
    corp_decomposition,
    corp_groups,
    decompose_from_stats,
    mcb_from_stats,
)
from core.stats.pav import weighted_pav
from core.stats.scores import brier_score

NIAMEY = Path(__file__).parent / "data" / "precip_niamey_2016.csv"


def _niamey() -> dict[str, np.ndarray]:
    table = np.genfromtxt(NIAMEY, delimiter=",", names=True)
    return {name: np.asarray(table[name], dtype=np.float64) for name in table.dtype.names}


def _sklearn_decomposition(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    fit = IsotonicRegression(out_of_bounds="clip").fit(x, y).predict(x)
    s, s_fit = np.mean((x - y) ** 2), np.mean((fit - y) ** 2)
    r = y.mean()
    unc = np.mean((r - y) ** 2)
    return s - s_fit, unc - s_fit, unc, s


def _sample(n: int = 2000, seed: int = 0, digits: int | None = None) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 3.0, size=n)
    if digits is not None:
        p = np.round(p, digits)
    y = (rng.uniform(size=n) < np.clip(p**0.8 + 0.05, 0, 1)).astype(int)
    return p, y


# --------------------------------------------------------------------------- numbers


def test_hand_computed_two_groups() -> None:
    # groups 0.2 (ȳ = 1/2) and 0.8 (ȳ = 1): already monotone, x̂ = (1/2, 1)
    # S(x) = (0.04 + 0.64 + 0.04 + 0.04)/4 = 0.19, S(x̂) = 0.125, r = 3/4
    d = corp_decomposition([0.2, 0.2, 0.8, 0.8], [0, 1, 1, 1])
    assert d.score == pytest.approx(0.19, abs=1e-15)
    assert d.mcb == pytest.approx(0.065, abs=1e-15)
    assert d.dsc == pytest.approx(0.0625, abs=1e-15)
    assert d.unc == pytest.approx(0.1875, abs=1e-15)


def test_hand_computed_violation_pools_everything() -> None:
    # ȳ = (1, 0, 0) decreases: PAV pools all three at 1/3, so DSC = 0
    x, y = np.array([0.1, 0.4, 0.7]), np.array([1, 0, 0])
    d = corp_decomposition(x, y)
    s = (0.81 + 0.16 + 0.49) / 3
    assert d.score == pytest.approx(s, abs=1e-15)
    assert d.unc == pytest.approx(2 / 9, abs=1e-15)
    assert d.dsc == pytest.approx(0.0, abs=1e-15)
    assert d.mcb == pytest.approx(s - 2 / 9, abs=1e-15)


def test_niamey_reproduces_the_package_and_the_paper() -> None:
    """``reliabilitydiag(EMOS = X, y = Y)`` prints 0.232, 0.0183, 0.0305, 0.244 (README)."""
    data = _niamey()
    y = data["obs"].astype(int)
    d = corp_decomposition(data["EMOS"], y)
    assert round(d.score, 3) == 0.232
    assert round(d.mcb, 4) == 0.0183
    assert round(d.dsc, 4) == 0.0305
    assert round(d.unc, 3) == 0.244
    for name in ("Logistic", "EMOS", "ENS", "EPC"):
        got = corp_decomposition(data[name], y)
        want = _sklearn_decomposition(data[name], y.astype(float))
        np.testing.assert_allclose([got.mcb, got.dsc, got.unc, got.score], want, atol=1e-14)
    # the paper's ranking: ENS is by far the worst calibrated, Logistic discriminates best
    mcb = {k: corp_decomposition(data[k], y).mcb for k in ("Logistic", "EMOS", "ENS", "EPC")}
    dsc = {k: corp_decomposition(data[k], y).dsc for k in ("Logistic", "EMOS", "ENS", "EPC")}
    assert max(mcb, key=mcb.get) == "ENS" and max(dsc, key=dsc.get) == "Logistic"


@pytest.mark.parametrize("digits", [None, 2, 1])
def test_agrees_with_sklearn_isotonic_regression(digits: int | None) -> None:
    p, y = _sample(3000, seed=digits or 7, digits=digits)
    got = corp_decomposition(p, y)
    want = _sklearn_decomposition(p, y.astype(float))
    np.testing.assert_allclose([got.mcb, got.dsc, got.unc, got.score], want, atol=1e-13)
    x, counts, _ = corp_groups(p, y)
    fitted = corp_diagram((p, y), AnalysisConfig(lens="binary", consistency_band=False))
    sk = IsotonicRegression().fit(p, y).predict(x)
    np.testing.assert_allclose(fitted.components[0].fitted, sk, atol=1e-13)
    np.testing.assert_array_equal(fitted.components[0].counts, counts)


def test_identity_signs_and_the_brier_score() -> None:
    p, y = _sample(1500, seed=3)
    d = corp_decomposition(p, y)
    assert d.score == pytest.approx(d.mcb - d.dsc + d.unc, abs=1e-14)
    assert d.score == pytest.approx(brier_score(p, y), abs=1e-14)
    assert d.mcb >= 0 and d.dsc >= 0


def test_edge_cases() -> None:
    # all outcomes equal: UNC = DSC = 0, MCB = S
    d = corp_decomposition([0.1, 0.5, 0.9], [1, 1, 1])
    assert (d.unc, d.dsc) == (0.0, 0.0)
    assert d.mcb == pytest.approx(d.score, abs=1e-15)
    # one distinct forecast: x̂ = r, DSC = 0 and MCB = (x − r)²
    d = corp_decomposition([0.3] * 4, [0, 1, 1, 1])
    assert d.dsc == pytest.approx(0.0, abs=1e-15)
    assert d.mcb == pytest.approx((0.3 - 0.75) ** 2, abs=1e-15)
    # forecasts exactly 0 and 1, perfectly right: every term is 0
    d = corp_decomposition([0.0, 0.0, 1.0], [0, 0, 1])
    assert (d.mcb, d.score) == (0.0, 0.0)
    assert d.dsc == pytest.approx(d.unc, abs=1e-15)


def test_lenses_top_label_and_classwise() -> None:
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(800, 3)) * 2
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(3, p=row) for row in probs])
    top = corp_decomposition(probs, labels, lens="top-label")
    conf = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(float)
    np.testing.assert_allclose(
        [top.mcb, top.dsc, top.unc, top.score], _sklearn_decomposition(conf, correct), atol=1e-13
    )
    cw = corp_decomposition(probs, labels, lens="classwise")
    per = [_sklearn_decomposition(probs[:, k], (labels == k).astype(float)) for k in range(3)]
    np.testing.assert_allclose([cw.mcb, cw.dsc, cw.unc, cw.score], np.mean(per, axis=0), atol=1e-13)
    assert cw.score == pytest.approx(brier_score(probs, labels) / 3, abs=1e-13)
    assert list(cw.table().component) == ["0", "1", "2", "total"]
    with pytest.raises(ConfigError, match="1-D"):
        corp_decomposition(probs, labels, lens="canonical")


# --------------------------------------------------------------------------- the estimator


def test_mcb_is_one_registry_entry_with_its_own_bins() -> None:
    info = ESTIMATORS.get("mcb")
    assert info.binned and info.own_binning == "discrete" and info.norms is None
    assert "Brier scale" in info.description
    p, y = _sample(1000, seed=2)
    want = corp_decomposition(p, y).mcb
    for binning in ("equal-width", "equal-mass", "discrete"):
        got = calibration_error(p, y, estimator="mcb", lens="binary", binning=binning, norm=2)
        assert got.binning == "discrete"
        assert got.value == pytest.approx(want, abs=1e-14)
    probs = np.column_stack([1 - p, p])
    cw = calibration_error(probs, y, estimator="mcb", lens="classwise")
    assert cw.value == pytest.approx(corp_decomposition(probs, y, lens="classwise").mcb, abs=1e-14)


def test_batched_kernel_equals_one_call_per_row() -> None:
    p, y = _sample(300, seed=4, digits=2)
    x, c, pos = corp_groups(p, y)
    rng = np.random.default_rng(0)
    counts = rng.multinomial(c.sum().astype(int), c / c.sum(), size=5).astype(float)
    positives = rng.binomial(counts.astype(int), x).astype(float)
    batch = mcb_from_stats(counts, counts * x, positives)
    for i in range(5):
        assert batch[i] == pytest.approx(
            decompose_from_stats(counts[i], counts[i] * x, positives[i])[0], abs=1e-15
        )


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_batched_kernel_is_the_formula_to_the_bit(dtype) -> None:
    # computed in place, integer counts not copied to floats: Σ c·((x − ȳ)² − (fit − ȳ)²)/n
    # with each operation as written, resamples with absent forecasts included
    rng = np.random.default_rng(8)
    counts = rng.integers(0, 4, (12, 60))
    counts[2] = 0
    x = rng.random(60)
    positives = np.minimum(rng.binomial(counts, x), counts).astype(float)
    got = mcb_from_stats(counts.astype(dtype), counts * x, positives)
    for i in range(12):
        keep = counts[i] > 0
        if not keep.any():
            assert np.isnan(got[i])
            continue
        c, lab = counts[i, keep].astype(float), positives[i, keep]
        ybar = lab / c
        gap = (counts[i] * x)[keep] / c - ybar
        fit = weighted_pav(ybar, c)
        assert got[i] == np.sum(c * (gap * gap - (fit - ybar) ** 2)) / c.sum()


def test_bootstrap_fast_path_equals_recomputing_each_resample() -> None:
    p, y = _sample(400, seed=6)
    fast = bootstrap_interval(p, y, statistic="mcb", lens="binary", n_resamples=40, seed=9)

    def mcb(pp: np.ndarray, yy: np.ndarray) -> float:
        return corp_decomposition(pp, yy).mcb

    slow = bootstrap_interval(p, y, statistic=mcb, n_resamples=40, seed=9, resample_order="rows")
    assert fast.path != "generic"
    np.testing.assert_allclose(fast.distribution, slow.distribution, atol=1e-13)


def test_mcb_in_the_metrics_table_with_an_interval() -> None:
    p, y = _sample(600, seed=8)
    a = analyze((p, y), AnalysisConfig(lens="binary", n_resamples=100, binning="equal-mass"))
    row = a.metrics.set_index("metric").loc["mcb"]
    assert row.value == pytest.approx(corp_decomposition(p, y).mcb, abs=1e-14)
    assert row.low <= row.value <= row.high
    assert "Brier scale" in row.note


# --------------------------------------------------------------------------- bands, diagram


def test_bands_are_seeded_and_cover_the_truth_of_a_calibrated_model() -> None:
    p, _ = _sample(3000, seed=11)
    y = (np.random.default_rng(12).uniform(size=p.size) < p).astype(int)
    x, c, pos = corp_groups(p, y)
    fitted = decompose_from_stats(c, c * x, pos)[4]
    one = corp_band(x, c, x, kind="consistency", n_resamples=200, seed=1)
    two = corp_band(x, c, x, kind="consistency", n_resamples=200, seed=1)
    np.testing.assert_array_equal(one.lower, two.lower)
    assert np.all(one.lower <= one.upper)
    # the consistency band holds the diagonal; the calibrated model's curve stays mostly inside
    assert (
        np.all((one.lower <= one.x + 1e-12) | (one.x < 0.02))
        or np.mean((one.lower <= one.x) & (one.x <= one.upper)) > 0.95
    )
    inside = np.interp(one.x, x, fitted)
    assert np.mean((one.lower <= inside) & (inside <= one.upper)) > 0.8
    conf = corp_band(x, c, fitted, kind="confidence", n_resamples=200, seed=2, fitted=fitted)
    assert np.mean((conf.lower <= inside + 1e-12) & (inside <= conf.upper + 1e-12)) > 0.9


def test_corp_diagram_entry_result_and_figure() -> None:
    assert "corp" in DIAGRAMS.names() and not DIAGRAMS.get("corp").from_analysis
    p, y = _sample(500, seed=13)
    config = AnalysisConfig(lens="binary", seed=4, confidence_level=0.9)
    r = reliability_diagram((p, y), config, kind="corp")
    assert isinstance(r, CorpDiagram)
    d = corp_decomposition(p, y)
    assert r.decomposition.mcb == pytest.approx(d.mcb, abs=1e-15)
    assert "MCB" in r.summary and "90%" in r.summary
    assert list(r.table().columns) == ["component", "weight", "score", "mcb", "dsc", "unc"]
    record = json.loads(json.dumps(r.to_record()))
    assert record["decomposition"]["mcb"] == pytest.approx(d.mcb)
    blocks = record["components"][0]["blocks"]
    assert np.all(np.diff(blocks["value"]) > 0)  # one value per block, increasing
    again = reliability_diagram((p, y), config, kind="corp")
    np.testing.assert_array_equal(
        r.components[0].consistency.upper, again.components[0].consistency.upper
    )
    fig = diagram_figure("corp", r)
    names = [t.name for t in fig.data]
    assert names[:4] == [
        "perfect calibration",
        "confidence band (90%)",
        "consistency band (90%)",
        "CORP (isotonic fit)",
    ]
    assert any("MCB" in a.text for a in fig.layout.annotations)


def test_corp_diagram_on_a_lens_without_components_and_without_bands() -> None:
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(3), size=300)
    labels = rng.integers(0, 3, size=300)
    r = corp_diagram(
        (probs, labels),
        AnalysisConfig(lens="canonical", estimator="skce-ul", consistency_band=False),
    )
    assert r.lens == "top-label" and "top-label" in r.summary
    assert r.components[0].consistency is None and r.n_resamples == 0


def test_corp_pools_exact_ties_where_sklearn_pools_within_float_resolution():
    # the documented difference: two forecasts one ulp apart are two groups for CORP, one
    # for scikit-learn's IsotonicRegression (docs/formulas.md, CORP)
    s = np.array([0.57, np.nextafter(0.57, 1.0), 0.2, 0.9])
    y = np.array([0, 1, 0, 1])
    ours = calibration_error(s, y, estimator="mcb", lens="binary").value
    assert ours == pytest.approx(0.13995, abs=1e-12)  # by hand: the PAV fit is y itself
    fit = IsotonicRegression(out_of_bounds="clip").fit(s, y).predict(s)
    sk = np.mean((s - y) ** 2) - np.mean((fit - y) ** 2)  # the binary Brier convention
    assert sk == pytest.approx(0.01495, abs=1e-12)
