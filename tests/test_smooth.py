"""The smooth ECE and the smooth reliability diagram against relplot 1.0.3.

The committed values below are ``relplot.smECE(f, y, return_width=True)`` and
``relplot.smECE_sigma(f, y, σ)`` of the fixtures built here (relplot 1.0.3, its default
reflected Gaussian kernel); the float32 fixture's value is relplot's on the float32 arrays
(its own float32 arithmetic differs from the float64 value by about 1e-7, relative). They
are checked without relplot; with relplot installed the live values are compared too.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import core
from core import AnalysisConfig, ConfigError, analyze, calibration_error
from core.estimators import ESTIMATORS
from core.estimators.smooth import SmoothSample, grid_size, reflected_smooth, smooth_ece
from core.figures.diagrams import DIAGRAMS, diagram_figure, reliability_diagram
from core.inference.bootstrap import bootstrap_interval

RTOL = 1e-6


def binary_fixtures() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Edge-heavy binary problems: exact 0/1, ties, n = 1..3, rounded scores, float32."""
    rng = np.random.default_rng(20231)
    out = {}
    f = rng.choice([0.0, 1.0], size=40)
    out["exact-0-1"] = (f, np.where(rng.uniform(size=40) < 0.8, f, 1 - f))
    f = rng.choice([0.1, 0.3, 0.7, 0.9], size=200)
    out["ties"] = (f, (rng.uniform(size=200) < f**1.5).astype(float))
    out["n1"] = (np.array([0.3]), np.array([1.0]))
    out["n1-exact"] = (np.array([1.0]), np.array([1.0]))
    out["n2"] = (np.array([0.2, 0.9]), np.array([0.0, 1.0]))
    out["n3"] = (np.array([0.0, 0.5, 1.0]), np.array([0.0, 1.0, 1.0]))
    f = np.round(rng.uniform(size=500), 2)
    out["rounded"] = (f, (rng.uniform(size=500) < f).astype(float))
    f = rng.beta(2, 2, size=300).astype(np.float32)
    out["float32"] = (f, (rng.uniform(size=300) < f).astype(np.float32))
    f = rng.uniform(size=20000)
    out["calibrated-large"] = (f, (rng.uniform(size=20000) < f).astype(float))
    f = rng.uniform(size=1000)
    out["miscalibrated"] = (f, (rng.uniform(size=1000) < f**3).astype(float))
    return out


def multiclass_fixture() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20232)
    p = rng.dirichlet([0.6, 0.6, 0.6, 0.6], size=600)
    y = np.array([rng.choice(4, p=row**1.5 / (row**1.5).sum()) for row in p])
    return p, y


#: relplot.smECE(f, y, return_width=True) of each binary fixture: (value, bandwidth).
AUTO = {
    "exact-0-1": (0.19999899247212116, 0.2001953125),
    "ties": (0.1407071911069661, 0.1416015625),
    "n1": (0.6998666415097478, 0.7001953125),
    "n1-exact": (0.0, 0.001953125),
    "n2": (0.14741267093548047, 0.1484375),
    "n3": (0.24936540798347412, 0.25),
    "rounded": (0.030795279329486492, 0.03125),
    "float32": (0.029755897406480405, 0.0302734375),
    "calibrated-large": (0.012718940398672579, 0.013671875),
    "miscalibrated": (0.2507856969037836, 0.2509765625),
}
#: relplot.smECE_sigma(f, y, σ).
FIXED = {
    ("rounded", 0.05): 0.016731589698774637,
    ("calibrated-large", 0.002): 0.02751863408353605,
    ("n3", 0.1): 0.24750657193828443,
    ("ties", 0.3): 0.14092277743221138,
    # σ = 0.003: an even grid (M = 3334), where relplot's window is half a step off centre
    ("calibrated-large", 0.003): 0.0239860102663637,
    ("rounded", 0.003): 0.12823579073301683,
}
#: relplot.smECE of the multiclass fixture's confidences (top-label lens).
TOP_LABEL = (0.09023817922971415, 0.0908203125)

FIXTURES = binary_fixtures()


def _relplot():
    return pytest.importorskip("relplot", reason="relplot is not installed (test extra)")


@pytest.mark.parametrize("name", list(AUTO))
def test_auto_bandwidth_pins_relplot(name):
    f, y = FIXTURES[name]
    value, sigma = AUTO[name]
    got = calibration_error(f, y.astype(int), estimator="smooth", lens="binary")
    np.testing.assert_allclose(got.value, value, rtol=RTOL, atol=1e-15)
    assert got.details["bandwidth"] == sigma  # a multiple of 2⁻¹⁰: exact
    r = smooth_ece(f, y)
    assert (r.value, r.bandwidth) == pytest.approx((value, sigma), rel=RTOL, abs=1e-15)


@pytest.mark.parametrize(("name", "sigma"), list(FIXED))
def test_fixed_bandwidth_pins_relplot(name, sigma):
    f, y = FIXTURES[name]
    got = calibration_error(f, y.astype(int), estimator="smooth", lens="binary", bandwidth=sigma)
    np.testing.assert_allclose(got.value, FIXED[name, sigma], rtol=RTOL)
    assert got.details["bandwidth"] == sigma and got.details["bandwidth_rule"] == "fixed"


def test_top_label_pins_relplot():
    p, y = multiclass_fixture()
    got = calibration_error(p, y, estimator="smooth", lens="top-label")
    np.testing.assert_allclose(got.value, TOP_LABEL[0], rtol=RTOL)
    assert got.details["bandwidth"] == TOP_LABEL[1]


@pytest.mark.parametrize("name", list(AUTO))
def test_live_relplot_agrees(name):
    relplot = _relplot()
    f, y = FIXTURES[name]
    value, sigma = relplot.smECE(f, y, return_width=True)
    r = smooth_ece(f, y)
    assert (r.value, r.bandwidth) == pytest.approx((value, sigma), rel=RTOL, abs=1e-15)
    # our float64 evaluation equals relplot's on the same numbers in float64 to rounding
    f64, y64 = f.astype(np.float64), y.astype(np.float64)
    assert smooth_ece(f, y).value == pytest.approx(relplot.smECE(f64, y64), rel=1e-12, abs=1e-15)


def test_live_relplot_agrees_on_random_problems_and_bandwidths():
    relplot = _relplot()
    from relplot.metrics import multiclass_logits_to_confidences

    rng = np.random.default_rng(5)
    for n in (4, 37, 800, 5000):
        f = rng.beta(0.7, 0.7, size=n)
        y = (rng.uniform(size=n) < f**1.2).astype(float)
        r = smooth_ece(f, y)
        want_pair = relplot.smECE(f, y, return_width=True)
        assert (r.value, r.bandwidth) == pytest.approx(want_pair, rel=1e-9)
        for sigma in (0.003, 0.004, 0.03, 0.2, 1.0):
            want = relplot.smECE_sigma(f, y, sigma)
            assert smooth_ece(f, y, bandwidth=sigma).value == pytest.approx(want, rel=1e-9)
    p, y = multiclass_fixture()
    c, ok = multiclass_logits_to_confidences(p, y, probs=True)
    got = calibration_error(p, y, estimator="smooth", lens="top-label").value
    assert got == pytest.approx(relplot.smECE(c, ok), rel=1e-12)


def test_reflection_at_the_boundaries_by_hand():
    # the grid extended by its mirror images about 0 and 1, convolved directly
    # (relplot's ReflectedGaussianKernel.convolve), odd grids (DCT) and even ones (FFT)
    rng = np.random.default_rng(0)
    for m, sigma in ((1001, 0.07), (1668, 0.006), (3414, 0.003)):
        values = rng.uniform(size=(2, m))
        t = np.linspace(0, 1, m)
        ker = np.exp(-((t - 0.5) ** 2) / (2 * sigma**2)) / (np.sqrt(2 * np.pi) * sigma)
        for row in range(2):
            ext = np.concatenate([values[row, :0:-1], values[row], values[row, -2::-1]])
            want = np.convolve(ext, ker, "valid")[m // 2 : m // 2 + m]
            got = reflected_smooth(values, sigma)[row]
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * want.max())
    assert grid_size(0.05) == 1001 and grid_size(0.002) == 5001
    assert grid_size(3 / 1024) == 3414  # an even grid: relplot's window is half a step off


def test_one_point_closed_form():
    # one row: the residual is constant, so smECE_σ = |r|·ΣD/(ΣD + E·10⁻⁴)
    s, o = 0.3, 1.0
    r = smooth_ece([s], [o], bandwidth=0.1)
    value, sigma = r.value, r.bandwidth
    sample = SmoothSample(np.array([s]), np.array([o]))
    t = np.linspace(0, 1, 200)
    from core.estimators.smooth import interpolate

    d = interpolate(t, reflected_smooth(sample.grid(1001), 0.1))[0]
    assert value == pytest.approx(0.7 * d.sum() / (d.sum() + 200 * 1e-4), rel=1e-12)
    assert sigma == 0.1


def test_classwise_is_the_weighted_mean_of_classes():
    p, y = multiclass_fixture()
    got = calibration_error(p, y, estimator="smooth", lens="classwise")
    per_class = [smooth_ece(p[:, k], (y == k).astype(float)).value for k in range(4)]
    assert got.component_values == pytest.approx(per_class, rel=1e-12)
    assert got.value == pytest.approx(np.mean(per_class), rel=1e-12)
    weighted = calibration_error(
        p, y, estimator="smooth", lens="classwise", class_weights=[1, 0, 0, 3]
    )
    assert weighted.value == pytest.approx(0.25 * per_class[0] + 0.75 * per_class[3], rel=1e-12)


def test_registry_entry_and_options():
    info = ESTIMATORS.get("smooth")
    assert info.family == "smooth" and info.norms == (1.0,) and info.lp_scale
    assert not info.binned and not info.quadratic and info.resample is not None
    assert "smooth" in ESTIMATORS.lp_for(lens="top-label", norm=1.0, binning="equal-mass")
    assert "smooth" not in ESTIMATORS.lp_for(lens="top-label", norm=2.0, binning="equal-mass")
    with pytest.raises(ConfigError, match="norm"):
        calibration_error([0.2, 0.8], [0, 1], estimator="smooth", lens="binary", norm=2)
    with pytest.raises(ConfigError, match="canonical"):
        calibration_error([0.2, 0.8], [0, 1], estimator="smooth", lens="canonical")
    for bad in (0, -0.1, 1e-6, "wide", np.nan, True):
        with pytest.raises(ConfigError, match="bandwidth"):
            calibration_error([0.2, 0.8], [0, 1], estimator="smooth", bandwidth=bad)
    assert calibration_error([0.2, 0.8], [0, 1], estimator="smooth", bandwidth="0.1").value > 0


def test_bootstrap_batch_equals_the_estimator_on_each_resample():
    p, y = multiclass_fixture()
    for lens in ("top-label", "classwise"):
        batched = bootstrap_interval(p, y, statistic="smooth", lens=lens, n_resamples=30, seed=4)
        assert batched.path == "rows-batch"

        def one(pp, yy, lens=lens):
            return calibration_error(pp, yy, estimator="smooth", lens=lens).value

        generic = bootstrap_interval(p, y, statistic=one, n_resamples=30, seed=4)
        np.testing.assert_allclose(batched.distribution, generic.distribution, rtol=1e-10)
        assert batched.value == pytest.approx(generic.value, rel=1e-12)


def test_analysis_metrics_hold_the_smooth_ece_with_an_interval():
    p, y = multiclass_fixture()
    a = analyze((p, y), AnalysisConfig(n_resamples=50, seed=2))
    row = a.metrics.set_index("metric").loc["smooth"]
    assert row.value == pytest.approx(TOP_LABEL[0], rel=RTOL)
    want = bootstrap_interval(p, y, statistic="smooth", n_resamples=50, seed=2)
    assert (row.low, row.high) == pytest.approx(tuple(want.confidence_interval), rel=1e-12)
    assert "bandwidth σ = 0.09082" in row.note
    headline = analyze((p, y), AnalysisConfig(n_resamples=0, estimator="smooth")).headline
    assert headline.value == pytest.approx(TOP_LABEL[0], rel=RTOL)


# ----------------------------------------------------------------- the diagram


def test_diagram_curve_and_density_match_relplot():
    relplot = _relplot()
    from relplot.estimators import KernelSmoother
    from relplot.kernels import ReflectedGaussianKernel

    f, y = FIXTURES["miscalibrated"]
    config = AnalysisConfig(lens="binary", n_resamples=0)
    drawn = reliability_diagram((f, y.astype(int)), config, kind="smooth")
    comp = drawn.components[0]
    assert comp.bandwidth == relplot.smECE(f, y, return_width=True)[1]
    kernel = ReflectedGaussianKernel(comp.bandwidth)
    np.testing.assert_allclose(comp.density, kernel.kde(f, comp.mesh), rtol=1e-10, atol=1e-14)
    smoother = KernelSmoother(kernel).fit(f.reshape(-1, 1), y)
    want = smoother.predict(comp.mesh.reshape(-1, 1))
    np.testing.assert_allclose(comp.curve, want, rtol=1e-10, atol=1e-14)
    assert drawn.bootstrap is None and comp.lower is None


def test_diagram_band_and_interval_are_seeded_and_match_the_bootstrap():
    f, y = FIXTURES["rounded"]
    data = (f, y.astype(int))
    config = AnalysisConfig(lens="binary", n_resamples=80, seed=9, confidence_level=0.9)
    drawn = reliability_diagram(data, config, kind="smooth")
    again = reliability_diagram(data, config, kind="smooth")
    comp = drawn.components[0]
    np.testing.assert_array_equal(comp.lower, again.components[0].lower)
    assert np.all(comp.lower <= comp.upper)
    # the band is the pointwise percentile of the curve over the resamples at fixed σ
    rng = np.random.default_rng(9)
    idx = rng.integers(0, f.size, size=(80, f.size))
    curves = SmoothSample(f, y, idx).curve(comp.bandwidth, comp.mesh)[0]
    np.testing.assert_allclose(comp.lower, np.quantile(curves, 0.05, axis=0), rtol=1e-10)
    np.testing.assert_allclose(comp.upper, np.quantile(curves, 0.95, axis=0), rtol=1e-10)
    want = bootstrap_interval(
        *data, statistic="smooth", lens="binary", n_resamples=80, seed=9, confidence_level=0.9
    )
    assert tuple(drawn.bootstrap.confidence_interval) == pytest.approx(
        tuple(want.confidence_interval), rel=1e-12
    )
    assert drawn.value == pytest.approx(AUTO["rounded"][0], rel=RTOL)
    assert "Smooth ECE 0.0308" in drawn.summary and "seed 9" in drawn.summary
    table = drawn.table()
    assert table.smooth_ece.tolist() == pytest.approx([AUTO["rounded"][0]], rel=RTOL)
    record = json.loads(json.dumps(drawn.to_record(), allow_nan=False))
    assert record["kind"] == "smooth" and len(record["components"][0]["curve"]) == 200


def test_diagram_entry_figure_and_lenses():
    assert "smooth" in DIAGRAMS.names(from_analysis=False)
    p, y = multiclass_fixture()
    drawn = reliability_diagram(
        (p, y), AnalysisConfig(lens="classwise", n_resamples=20), kind="smooth"
    )
    assert [c.name for c in drawn.components] == ["0", "1", "2", "3"]
    fig = diagram_figure("smooth", drawn)
    names = {t.name for t in fig.data}
    assert "0" in names and "density" in names
    with pytest.raises(ConfigError, match="smooth diagram"):
        reliability_diagram(
            (p, y), AnalysisConfig(lens="canonical", estimator="skce-b"), kind="smooth"
        )


def test_report_and_cli_draw_the_smooth_diagram(tmp_path):
    from core.cli import main

    p, y = multiclass_fixture()
    data = core.as_predictions((p, y))
    report = core.build_report(
        data, config=AnalysisConfig(n_resamples=20), diagrams=("smooth",), compare=False
    )
    record = report.to_record()
    text = json.dumps(record)
    assert '"kind": "smooth"' in text
    assert "Smooth reliability diagram" in report.to_html()
    csv = tmp_path / "preds.csv"
    import pandas as pd

    frame = pd.DataFrame(p, columns=[f"p{k}" for k in range(4)]).assign(label=y)
    frame.to_csv(csv, index=False)
    out = tmp_path / "report.html"
    code = main(["report", str(csv), "--diagram", "smooth", "-o", str(out)])
    assert code == 0
    assert "Smooth reliability diagram" in out.read_text()


def test_diagram_caps_its_bootstrap_work(monkeypatch):
    import core.analyses.smooth

    monkeypatch.setattr(core.analyses.smooth, "MAX_BAND_WORK", 500 * 120)
    monkeypatch.setattr(core.analyses.smooth, "MIN_BAND_RESAMPLES", 20)
    f, y = FIXTURES["rounded"]  # 500 rows: 120 resamples fit the cap
    drawn = reliability_diagram(
        (f, y.astype(int)), AnalysisConfig(lens="binary", n_resamples=400), kind="smooth"
    )
    assert drawn.n_resamples == 120 and drawn.requested_resamples == 400
    assert drawn.bootstrap.n_resamples == 120 and "capped" in drawn.summary


def test_smooth_ece_returns_a_result_object():
    r = core.smooth_ece([0.2, 0.8, 0.6], [0, 1, 1])
    assert isinstance(r, core.SmoothECEResult) and r.automatic and r.n == 3
    fixed = core.smooth_ece([0.2, 0.8, 0.6], [0, 1, 1], bandwidth=0.1)
    assert not fixed.automatic and fixed.bandwidth == 0.1
    assert repr(fixed).startswith("SmoothECEResult(value=") and "(given)" in repr(fixed)
