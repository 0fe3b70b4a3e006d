"""Library conventions reproduce each library's own value (core.stats.conventions).

Every case of ``tests/conventions_reference.py`` is checked twice: against the values the
real libraries gave when ``tests/data/convention_values.json`` was generated (always), and
against the library itself, run here (skipped with the reason where it is not installed).
"""

import importlib.util
import json

import numpy as np
import pytest
from conventions_reference import (
    CASES,
    EDGE_P,
    EDGE_Y,
    FIXTURE,
    case_key,
    datasets,
    fits,
    library_value,
    torch_float64_value,
)

import core
from core.base.errors import ConfigError
from core.stats.conventions import CONVENTIONS, torch_linspace

COMMITTED = json.loads(FIXTURE.read_text())
DATA = datasets()
MODULES = {
    "sklearn": "sklearn",
    "netcal": "netcal",
    "torchmetrics": "torchmetrics",
    "uncertainty-calibration": "calibration",
    "relplot": "relplot",
}
PARAMS = [(d, *c) for d in DATA for c in CASES if fits(d, c[1])]


def ours(data, conv, lens, estimator, norm, binning, B):
    probs, labels = DATA[data]
    return core.calibration_error(
        probs,
        labels,
        estimator=estimator,
        norm=norm,
        binning=binning,
        n_bins=B,
        lens=lens,
        convention=conv,
    )


def check_sklearn(res, expected):
    # calibration_curve's non-empty bins, bin by bin; the ECE weights them by their counts
    st = res.bins[0]
    full = st.counts > 0
    np.testing.assert_allclose(st.mean_label[full], expected["prob_true"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(st.mean_score[full], expected["prob_pred"], rtol=0, atol=1e-12)
    gap = np.abs(np.asarray(expected["prob_true"]) - expected["prob_pred"])
    np.testing.assert_allclose(res.value, gap @ (st.counts[full] / st.n), rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", PARAMS, ids=lambda c: case_key(*c))
def test_committed_library_values(case):
    expected = COMMITTED[case_key(*case)]
    if "error" in expected:
        pytest.skip(f"the library refuses this input ({expected['error']})")
    res = ours(*case)
    conv, lens = case[1], case[2]
    if conv == "sklearn":
        check_sklearn(res, expected)
    elif conv == "torchmetrics" and lens == "top-label":
        # its sums run in float32: our float64 sums of the same bins match its binning
        # exactly and its float32 arithmetic to float32 precision (1e-6 on 2,000 rows)
        np.testing.assert_allclose(res.value, expected["float64_sums"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(res.value, expected["value"], rtol=0, atol=1e-6)
    else:
        np.testing.assert_allclose(res.value, expected["value"], rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", PARAMS, ids=lambda c: case_key(*c))
def test_real_library_values(case):
    conv = case[1]
    if importlib.util.find_spec(MODULES[conv]) is None:
        pytest.skip(f"{conv} is not installed (pip install 'calibscope[bench]')")
    probs, labels = DATA[case[0]]
    expected = COMMITTED[case_key(*case)]
    try:
        got = library_value(*case[1:], probs, labels)
    except Exception as err:
        assert expected.get("error") == type(err).__name__
        return
    res = ours(*case)
    if conv == "sklearn":
        check_sklearn(res, {"prob_true": got[0], "prob_pred": got[1]})
    elif conv == "torchmetrics" and case[2] == "top-label":
        want = torch_float64_value(case[4], case[6], probs, labels)
        np.testing.assert_allclose(res.value, want, rtol=0, atol=1e-12)
        np.testing.assert_allclose(res.value, got, rtol=0, atol=1e-6)
    else:
        np.testing.assert_allclose(res.value, got, rtol=0, atol=1e-12)


def test_torch_linspace_is_torchs():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    for B in [*range(1, 300), 1000, 4999, 10_000]:
        for f32, dtype in ((False, torch.float64), (True, torch.float32)):
            want = torch.linspace(0, 1, B + 1, dtype=dtype).numpy().astype(np.float64)
            np.testing.assert_array_equal(torch_linspace(B, float32=f32), want)


def test_edge_fixture_bins_by_hand():
    # peers.md §e.1: which bin 0.0, 0.1, 0.3, 0.7, 1.0 join with 10 bins
    p = np.array([0.0, 0.1, 0.2, 0.3, 0.5, 0.6, 0.7, 0.9, 1.0])
    y = np.zeros_like(p, dtype=int)
    expected = {
        "calibscope": [0, 1, 2, 3, 5, 6, 7, 9, 9],
        "netcal": [0, 1, 2, 2, 5, 5, 6, 9, 9],
        "sklearn": [0, 0, 1, 2, 4, 5, 6, 8, 9],
        # torch.linspace's 0.6 and 0.7 are the doubles nearest 0.6 and 0.7 (numpy.linspace's
        # are one ulp above), so only 0.3 moves down (peers.md §e.1 emulated numpy's edges)
        "torchmetrics": [0, 1, 2, 2, 5, 6, 7, 9, 10],
        "uncertainty-calibration": [0, 0, 1, 2, 4, 5, 6, 8, 9],
        "relplot": [0, 1, 2, 2, 5, 5, 6, 9, 10],
    }
    for conv, bins in expected.items():
        res = core.calibration_error(p, y, lens="binary", n_bins=10, convention=conv)
        counts = np.bincount(bins, minlength=res.bins[0].n_bins)
        np.testing.assert_array_equal(res.bins[0].counts, counts, err_msg=conv)


def test_edge_fixture_values_by_hand():
    # 10 bins, binary lens: the four values of peers.md TL;DR item 3
    got = {
        c: core.calibration_error(EDGE_P, EDGE_Y, lens="binary", n_bins=10, convention=c).value
        for c in CONVENTIONS.names()
    }
    # calibscope: bins {0,0.05}:0.025/0, {0.1,0.1}:0.1/0.5, {0.2}:0.2/0, {0.3,0.3}:.3/.5,
    # {0.7,0.7}:0.7/1, {0.95,1,1}:0.98333/0.66667 → (0.05+0.8+0.2+0.4+0.6+0.95)/12
    assert got["calibscope"] == pytest.approx(3.0 / 12, abs=1e-12)
    assert got["torchmetrics"] == pytest.approx(got["relplot"], abs=1e-15)
    assert got["sklearn"] == pytest.approx(got["uncertainty-calibration"], abs=1e-15)
    assert len({round(v, 12) for v in got.values()}) == 4


def test_extra_bin_holds_exact_ones():
    p = np.array([0.2, 0.99, 1.0, 1.0])
    y = np.array([0, 1, 1, 0])
    res = core.calibration_error(p, y, lens="binary", n_bins=5, convention="torchmetrics")
    st = res.bins[0]
    assert st.n_bins == 6 and st.counts[-1] == 2 and st.edges[-2] == st.edges[-1] == 1.0
    # 0.2 in [0.2, 0.4): gap 0.2; 0.99: gap 0.01; the pair at 1.0: gap 0.5
    assert res.value == pytest.approx((0.2 + 0.01 + 2 * 0.5) / 4, abs=1e-15)


def test_convention_refuses_what_the_library_lacks():
    p, y = DATA["binary"]
    with pytest.raises(ConfigError, match="torchmetrics.*offers"):
        core.calibration_error(p, y, lens="binary", binning="equal-mass", convention="torchmetrics")
    with pytest.raises(ConfigError, match="netcal.*debiased"):
        core.calibration_error(
            p, y, lens="binary", estimator="debiased", norm=2, convention="netcal"
        )
    with pytest.raises(ConfigError, match="Unknown convention"):
        core.calibration_error(p, y, convention="scipy")


def test_analysis_follows_the_convention():
    p, y = DATA["binary"]
    config = core.AnalysisConfig(
        lens="binary", n_bins=10, convention="torchmetrics", n_resamples=50
    )
    a = core.analyze((np.r_[p, 1.0], np.r_[y, 1]), config)
    want = core.calibration_error(
        np.r_[p, 1.0], np.r_[y, 1], lens="binary", n_bins=10, convention="torchmetrics"
    ).value
    assert a.headline.value == want
    assert a.components[0].bins.n_bins == 11  # the extra bin, in the bin table too
    assert set(a.metrics.metric) >= {"plugin"} and "debiased" not in set(a.metrics.metric)
    assert a.config.to_dict()["convention"] == "torchmetrics"
    low, high = a.headline_interval.confidence_interval
    assert low <= high
    with pytest.raises(ConfigError, match="offers"):
        core.AnalysisConfig(binning="equal-mass", convention="torchmetrics")


def test_bootstrap_on_library_bins_equals_recomputing():
    p, y = DATA["multiclass"]
    for conv, binning in (("netcal", "equal-width"), ("uncertainty-calibration", "equal-mass")):
        res = core.bootstrap_interval(
            p,
            y,
            statistic="plugin",
            n_resamples=20,
            seed=3,
            lens="top-label",
            binning=binning,
            n_bins=10,
            convention=conv,
        )
        rng = np.random.default_rng(3)
        idx = rng.integers(0, len(y), size=(20, len(y)))
        direct = [
            core.calibration_error(
                p[i], y[i], lens="top-label", binning=binning, n_bins=10, convention=conv
            ).value
            for i in np.sort(idx, axis=1)
        ]
        np.testing.assert_allclose(np.sort(res.distribution), np.sort(direct), atol=1e-12)


def test_uncertainty_calibration_clips_each_class():
    # marginal debiased ℓ2 averages each class's max(·, 0); Calibscope clips the sum once
    p, y = DATA["multiclass-rounded"]
    kw = {
        "estimator": "debiased",
        "norm": 2,
        "lens": "classwise",
        "binning": "equal-mass",
        "n_bins": 15,
    }
    uc = core.calibration_error(p, y, convention="uncertainty-calibration", **kw)
    per = np.asarray(uc.component_values)
    assert uc.value == pytest.approx(np.sqrt(np.mean(np.maximum(per, 0.0))), abs=1e-15) or (
        uc.value == pytest.approx(np.sqrt(np.mean(np.maximum(per, 0.0) ** 2)), abs=1e-15)
    )


def test_peer_table_explains_the_differences():
    p = np.r_[EDGE_P, 1.0, 0.3]
    y = np.r_[EDGE_Y, 1, 0]
    table = core.peer_table((p, y), core.AnalysisConfig(lens="binary", n_bins=10))
    frame = table.to_frame()
    assert set(frame.library) == {
        "scikit-learn",
        "netcal",
        "torchmetrics",
        "uncertainty-calibration",
        "relplot",
    }
    tm = frame[(frame.library == "torchmetrics") & (frame.norm == "ℓ1")].iloc[0]
    assert "extra bin 11 holds 3 rows at exactly 1.0" in tm.why
    assert "3 rows on bin edges fall one bin lower" in tm.why  # the three 0.3s
    assert tm.value == pytest.approx(
        core.calibration_error(p, y, lens="binary", n_bins=10, convention="torchmetrics").value
    )
    sk = frame[(frame.library == "scikit-learn") & (frame.binning == "equal-width")].iloc[0]
    assert "right-closed" in sk.why
    nc = frame[(frame.library == "netcal") & (frame.binning == "equal-width")].iloc[0]
    assert nc.why.startswith("Clipping to [ε, 1 − ε] moves 4 scores")
    assert (frame.difference == frame.value - frame.calibscope).all()
    rec = table.to_record()
    assert rec["rows"][0]["norm"] in ("1", "2", "inf")


def test_estimators_page_shows_the_library_table():
    from pathlib import Path

    import pandas as pd

    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    app = str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py")
    p, y = DATA["binary"]
    csv = pd.DataFrame({"p": np.r_[p[:300], 1.0, 0.3], "label": np.r_[y[:300], 1, 0]})
    at = AppTest.from_file(app, default_timeout=120)
    for k, v in {
        "lens": "binary",
        "n_bins": "10",
        "n_resamples": "0",
        "convention": "netcal",
    }.items():
        at.query_params[k] = v
    at.run()
    at.file_uploader(key="upload").set_value(
        ("p.csv", csv.to_csv(index=False).encode(), "text/csv")
    )
    at.run()
    assert at.session_state["convention"] == "netcal"  # from the URL, in the sidebar
    at.switch_page("app_pages/estimators.py").run()
    assert not at.exception, at.exception
    assert "What each library would report on your data" in [h.value for h in at.subheader]
    peers = next(d.value for d in at.dataframe if "why" in d.value.columns)
    assert {"netcal", "torchmetrics", "scikit-learn"} <= set(peers.library)
    assert peers.why.str.contains("extra bin 11 holds 1 row at exactly 1.0").any()
    pred = at.session_state["predictions"]
    tm = peers[(peers.library == "torchmetrics") & (peers.norm == "ℓ1")].iloc[0]
    want = core.calibration_error(
        pred.probs, pred.labels, lens="binary", n_bins=10, convention="torchmetrics"
    ).value
    assert tm["value"] == pytest.approx(want, abs=1e-12)


def test_cli_convention_gives_the_library_value(tmp_path, capsys):
    from core.cli import main

    path = tmp_path / "edge.csv"
    path.write_text(
        "p,label\n"
        + "".join(f"{float(p)!r},{int(y)}\n" for p, y in zip(EDGE_P, EDGE_Y, strict=True))
    )
    for name in ("sklearn", "torchmetrics"):
        args = ["metrics", str(path), "--bins", "10", "--resamples", "0", "--json"]
        assert main([*args, "--convention", name]) == 0
        record = json.loads(capsys.readouterr().out)
        expected = core.calibration_error(EDGE_P, EDGE_Y, lens="binary", n_bins=10, convention=name)
        assert record["results"][0]["headline"]["value"] == expected.value
        assert record["config"]["convention"] == name
    assert (
        main(["metrics", str(path), "--convention", "torchmetrics", "--binning", "equal-mass"]) == 2
    )
    assert "torchmetrics" in capsys.readouterr().err


def test_uncertainty_calibration_discrete_bins_merge_as_the_library_does():
    # get_discrete_bins' midpoint of two scores one ulp apart rounds onto the larger one,
    # so bisect_left puts both in one bin: 0.07 by hand, where Calibscope keeps two (0.5)
    s = np.array([0.57, np.nextafter(0.57, 1.0)])
    y = np.array([1, 0])
    kw = {"binning": "discrete", "lens": "binary"}
    uc = core.calibration_error(s, y, convention="uncertainty-calibration", **kw)
    assert uc.value == pytest.approx(abs(s.mean() - 0.5), abs=1e-15)
    assert core.calibration_error(s, y, **kw).value == pytest.approx(0.5)
    # the top-label scores of binary input make such pairs (1 − 0.43 is one ulp off 0.57)
    rng = np.random.default_rng(4)
    p = np.round(rng.uniform(size=400), 2)
    labels = (rng.uniform(size=400) < p).astype(int)
    ours = core.calibration_error(
        p, labels, convention="uncertainty-calibration", binning="discrete", lens="top-label"
    ).value
    if importlib.util.find_spec("calibration") is None:
        pytest.skip("uncertainty-calibration is not installed")
    import calibration

    matrix = np.column_stack([1 - p, p])
    lib = calibration.get_binning_ce(matrix, labels, p=1, debias=False, mode="top-label")
    assert ours == pytest.approx(lib, abs=1e-12)
    assert calibration.get_binning_ce(list(s), list(y), p=1, debias=False) == pytest.approx(
        uc.value, abs=1e-12
    )


def test_torchmetrics_bins_float32_binary_input_on_float32_edges():
    # the library bins binary input in its dtype. Float32 edges: 0.7f is on the edge 0.7f
    # (bin [0.7, 0.8)), 0.65f in [0.6, 0.7): |0.7 − 1|·½ + |0.65 − 0|·½ = 0.475. Float64
    # edges: 0.7f (0.69999998…) is below the edge 0.7, one bin: |0.675 − 0.5| = 0.175
    p32 = np.array([0.7, 0.65], dtype=np.float32)
    y = np.array([1, 0])
    kw = {"convention": "torchmetrics", "n_bins": 10, "lens": "binary"}
    assert core.calibration_error(p32, y, **kw).value == pytest.approx(0.475, abs=1e-7)
    as64 = core.calibration_error(p32.astype(np.float64), y, **kw).value
    assert as64 == pytest.approx(0.175, abs=1e-7)
    # Calibscope's own bins read every input as float64
    assert core.calibration_error(p32, y, n_bins=10, lens="binary").value == pytest.approx(as64)
    boot = core.bootstrap_interval(p32, y, n_resamples=20, **kw)
    assert boot.value == pytest.approx(0.475, abs=1e-7)
