"""core.analyses.estimator_comparison and core.figures.estimators: values equal direct calls."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from core.analyses.analysis import AnalysisConfig
from core.analyses.estimator_comparison import (
    CURVE_COLUMNS,
    CURVE_ESTIMATORS,
    TABLE_COLUMNS,
    compare_estimators,
    curve_estimators,
    error_versus_bins,
    explain_disagreement,
)
from core.base.errors import ConfigError
from core.data import as_predictions
from core.estimators import ESTIMATORS
from core.figures import (
    error_versus_bins_figure,
    estimator_intervals_figure,
    sweep_trace_figure,
)
from core.inference.bootstrap import bootstrap_many
from core.inference.calibration import calibration_error


def _binary(n: int = 400, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**1.4).astype(np.int64)
    return p, y


def _multiclass(n: int = 300, k: int = 3, seed: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 0.8, size=n)
    y = (rng.uniform(size=n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return p, np.minimum(y, k - 1).astype(np.int64)


def _direct(p, y, row, config, class_names=None):
    opts = {
        "norm": config.norm,
        "n_bins": config.n_bins,
        "tie_policy": config.tie_policy,
        "class_weights": config.class_weights,
        "class_names": class_names,
        "lens": row.lens,
    }
    if row.group == "binned":
        opts["binning"] = row.binning
    return calibration_error(p, y, estimator=row.estimator, seed=config.seed, **opts)


@pytest.mark.parametrize(
    ("data", "config"),
    [
        (_binary(), AnalysisConfig(lens="binary", n_bins=10, n_resamples=0)),
        (_binary(), AnalysisConfig(lens="top-label", norm=2, binning="equal-mass", n_resamples=0)),
        (_multiclass(), AnalysisConfig(lens="classwise", n_bins=8, seed=3, n_resamples=0)),
    ],
)
def test_table_values_equal_direct_calls(data, config):
    p, y = data
    names = tuple(f"c{i}" for i in range(np.shape(p)[1] if np.ndim(p) == 2 else 2))
    comp = compare_estimators(as_predictions((p, y), class_names=names), config)
    table = comp.table
    assert table.columns.tolist() == TABLE_COLUMNS
    assert table.key.is_unique
    assert set(table.estimator) == set(ESTIMATORS.names())  # every registered estimator
    computed = table[table.value.notna()]
    assert len(computed) >= 8
    for row in computed.itertuples():
        expected = _direct(p, y, row, config, names)
        assert_allclose(row.value, expected.value, rtol=1e-12, atol=1e-15, err_msg=row.key)
        assert_allclose(comp.value(row.key), expected.value, rtol=1e-12, atol=1e-15)
        assert row.description == ESTIMATORS.get(row.estimator).description
        assert row.formula == ESTIMATORS.get(row.estimator).formula
    assert table[["low", "high"]].isna().all().all()  # no resamples, no intervals
    # binned rows on the sidebar's lens; kernel rows on the lens they support
    assert (table[table.group == "binned"].lens == config.lens).all()
    assert table.set_index("key").loc["mmce", "lens"] == "top-label"
    # the SKCE estimators add a canonical row for multiclass data; the joint-binned
    # estimators, defined on the canonical lens only, have their one row there always
    canonical = table[(table.lens == "canonical") & (table.group != "joint-binned")]
    assert (len(canonical) > 0) == (np.ndim(p) == 2 and np.shape(p)[1] > 2)
    joint = table[table.group == "joint-binned"]
    assert len(joint) == 2 and (joint.lens == "canonical").all()


def test_intervals_equal_bootstrap_many_on_the_same_resamples():
    p, y = _binary(300)
    config = AnalysisConfig(lens="binary", n_bins=10, n_resamples=60, seed=5, confidence_level=0.9)
    comp = compare_estimators((p, y), config)
    table = comp.table.set_index("key")
    opts = {
        "lens": "binary",
        "binning": "equal-width",
        "n_bins": 10,
        "norm": 1.0,
        "tie_policy": "split",
        "class_weights": None,
        "class_names": ("0", "1"),
    }
    direct = bootstrap_many(
        p,
        y,
        {name: (name, opts) for name in ("plugin", "label-binned", "debiased", "sweep")},
        n_resamples=60,
        confidence_level=0.9,
        seed=5,
    )
    for name, boot in direct.items():
        assert_allclose(table.loc[name, "low"], boot.confidence_interval.low, rtol=1e-12)
        assert_allclose(table.loc[name, "high"], boot.confidence_interval.high, rtol=1e-12)
    # kernel estimators were bootstrapped too (n is small), each low ≤ high
    kernel = table[(table.group == "kernel") & table.value.notna()]
    assert kernel.low.notna().all() and (kernel.low <= kernel.high).all()
    assert comp.interval_scope == "all"


def test_binned_scope_leaves_kernel_rows_without_intervals():
    p, y = _binary(300)
    comp = compare_estimators(
        (p, y), AnalysisConfig(lens="binary", n_resamples=30), intervals="binned"
    )
    t = comp.table
    assert t[t.group == "binned"].low.notna().all()
    assert t[t.group == "kernel"].low.isna().all()
    with pytest.raises(ConfigError, match="intervals must be one of"):
        compare_estimators((p, y), AnalysisConfig(lens="binary"), intervals="some")


def test_quadratic_size_limits_are_notes_not_runs():
    p, y = _binary(300)
    config = AnalysisConfig(lens="binary", n_resamples=20)
    comp = compare_estimators(
        (p, y), config, quadratic_interval_max_n=100, max_exact_n=200, experimental=True
    )
    t = comp.table.set_index("key")
    for name in ESTIMATORS.names(quadratic=True):
        assert math.isnan(t.loc[name, "value"]), name
        assert "exceeds max_exact_n = 200" in t.loc[name, "note"]
        assert name not in comp.results
    assert t.loc["skce-ul", "value"] == pytest.approx(
        calibration_error(p, y, estimator="skce-ul", lens="binary").value, rel=1e-12
    )
    comp = compare_estimators((p, y), config, quadratic_interval_max_n=100)
    t = comp.table.set_index("key")
    assert np.isfinite(t.loc["skce-b", "value"]) and math.isnan(t.loc["skce-b", "low"])
    assert "no interval: quadratic cost at n > 100" in t.loc["skce-b", "note"]
    assert np.isfinite(t.loc["skce-ul", "low"])


def test_norm_inf_and_discrete_binning_rows():
    p, y = _binary(300)
    comp = compare_estimators(
        (p, y), AnalysisConfig(lens="binary", norm="inf", binning="discrete", n_resamples=0)
    )
    t = comp.table.set_index("key")
    assert math.isnan(t.loc["debiased", "value"])
    assert "not defined for the ℓ∞ norm" in t.loc["debiased", "note"]
    assert t.loc["sweep", "binning"] == "equal-mass"  # the sweep cannot use discrete bins
    assert "shown with equal-mass" in t.loc["sweep", "note"]
    # the curve's estimators come from the registry: binned on fixed bins, reading B
    assert CURVE_ESTIMATORS == tuple(
        e.name for e in ESTIMATORS if e.binned and e.from_bins and e.reads_n_bins
    )
    assert {"plugin", "label-binned", "debiased"} <= set(CURVE_ESTIMATORS)
    assert not {"sweep", "mcb", "smooth"} & set(CURVE_ESTIMATORS)  # no free number of bins
    assert "debiased" not in curve_estimators("inf")
    for norm in (1, 2, "inf"):
        assert curve_estimators(norm) == tuple(
            n for n in CURVE_ESTIMATORS if ESTIMATORS.get(n).supports(norm=float(norm))
        )


def test_lens_that_does_not_fit_the_data_is_one_error():
    p, y = _multiclass()
    with pytest.raises(ConfigError, match="binary lens needs two classes"):
        compare_estimators((p, y), AnalysisConfig(lens="binary", n_resamples=0))


def test_error_versus_bins_matches_direct_calls():
    p, y = _multiclass(400)
    curve = error_versus_bins(
        (p, y),
        AnalysisConfig(lens="classwise", norm=2, seed=4, tie_policy="keep"),
        n_bins_range=(2, 12),
    )
    assert curve.columns.tolist() == CURVE_COLUMNS
    assert len(curve) == len(CURVE_ESTIMATORS) * 2 * 11
    # every estimator of the curve (the registry's), on both binnings, against direct calls
    checked = [
        (name, binning, b)
        for name in CURVE_ESTIMATORS
        for binning, b in (("equal-width", 2), ("equal-mass", 7), ("equal-width", 12))
    ]
    assert {name for name, _, _ in checked} >= {"plugin", "label-binned", "debiased"}
    for name, binning, b in checked:
        row = curve[(curve.estimator == name) & (curve.binning == binning) & (curve.n_bins == b)]
        expected = calibration_error(
            p,
            y,
            estimator=name,
            binning=binning,
            n_bins=b,
            norm=2,
            lens="classwise",
            tie_policy="keep",
            seed=4,
        )
        assert_allclose(row.value.iloc[0], expected.value, rtol=1e-12, atol=1e-15)
        assert row.rows_per_bin.iloc[0] == pytest.approx(400 / b)
    # label-binned ≥ plug-in on every partition (Jensen)
    wide = curve.pivot_table(index=["binning", "n_bins"], columns="estimator", values="value")
    assert (wide["label-binned"] >= wide["plugin"] - 1e-12).all()


def test_error_versus_bins_hand_checked_tiny_case():
    p, y = [0.6, 0.7, 0.8, 0.9], [0, 0, 1, 1]
    curve = error_versus_bins(
        (p, y),
        AnalysisConfig(lens="binary"),
        estimators=["plugin", "label-binned"],
        binnings=["equal-width"],
        n_bins_range=(2, 4),
    )
    value = curve.set_index(["estimator", "n_bins"]).value
    # B = 2: every score in [0.5, 1]: |0.75 − 0.5| = 0.25
    assert value["plugin", 2] == pytest.approx(0.25)
    # B = 4: bins [0.5, 0.75) = {0.6, 0.7}, mean 0.65, label 0; [0.75, 1] = {0.8, 0.9}, label 1
    assert value["plugin", 4] == pytest.approx(0.5 * 0.65 + 0.5 * 0.15)
    # label-binned with B = 2: (|0.6−.5| + |0.7−.5| + |0.8−.5| + |0.9−.5|)/4
    assert value["label-binned", 2] == pytest.approx((0.1 + 0.2 + 0.3 + 0.4) / 4)
    assert value["label-binned", 4] == pytest.approx((0.6 + 0.7 + 0.2 + 0.1) / 4)
    with pytest.raises(ConfigError, match="free number of bins"):
        error_versus_bins((p, y), AnalysisConfig(lens="binary"), estimators=["sweep"])
    with pytest.raises(ConfigError, match="does not support"):
        error_versus_bins(
            (p, y), AnalysisConfig(lens="binary", norm="inf"), estimators=["debiased"]
        )
    with pytest.raises(ConfigError, match="n_bins_range"):
        error_versus_bins((p, y), AnalysisConfig(lens="binary"), n_bins_range=(5, 2))


@pytest.mark.parametrize("lens", ["top-label", "classwise"])
def test_sweep_traces_are_consistent(lens):
    p, y = _multiclass(500, seed=7)
    comp = compare_estimators((p, y), AnalysisConfig(lens=lens, n_resamples=0))
    assert set(comp.sweeps) == {"equal-width", "equal-mass"}
    traces, choices = comp.sweep_traces, comp.sweep_choices
    assert traces.columns.tolist() == ["binning", "component", "b", "monotone", "chosen"]
    for (binning, component), trace in traces.groupby(["binning", "component"]):
        res = comp.sweeps[binning]
        b_star = choices[(choices.binning == binning) & (choices.component == component)]
        b_star = int(b_star.b_star.iloc[0])
        # candidates 2, 3, … in order; all monotone but a last failing one; b* marked once
        assert trace.b.tolist() == list(range(2, 2 + len(trace)))
        assert trace.monotone.iloc[:-1].all()
        assert trace.chosen.sum() == (1 if b_star >= 2 else 0)
        if not trace.monotone.iloc[-1]:
            assert trace.b.iloc[-1] == b_star + 1
        # the sweep's value is the plug-in with b* bins of that component
        idx = list(res.components).index(component)
        plug = calibration_error(
            p, y, estimator="plugin", binning=binning, n_bins=b_star, lens=lens
        ).component_values[idx]
        assert_allclose(res.component_values[idx], plug, rtol=1e-12)
    # the table's sweep row is the sweep with the sidebar's binning
    row = comp.table.set_index("key").loc["sweep"]
    assert row.value == pytest.approx(comp.sweeps["equal-width"].value, rel=1e-12)


def test_explanation_uses_the_numbers():
    p, y = _binary(500)
    config = AnalysisConfig(lens="binary", norm=2, n_resamples=0)
    comp = compare_estimators((p, y), config)
    curve = error_versus_bins((p, y), AnalysisConfig(lens="binary", norm=2), n_bins_range=(2, 20))
    text = explain_disagreement(comp, curve)
    joined = "\n".join(text)
    assert f"{comp.value('plugin'):.4f}" in joined
    assert f"{comp.value('debiased'):.4f}" in joined
    assert f"{comp.value('label-binned'):.4f}" in joined
    assert "b* = " in joined
    assert len(explain_disagreement(comp)) < len(text)  # no curve: fewer effects
    (other,) = [t for t in text if t.startswith("**Read apart from the binned errors**")]
    off = comp.table[~comp.table.lp_scale & comp.table.value.notna()]
    assert len(off) >= 2  # SKCE and MMCE on the binary lens
    listed = other.split(" lens) — ")[1].split(". Compare")[0]
    groups = dict(part.split(": ", 1) for part in listed.split("; "))
    for r in off.itertuples():  # every off-scale value, under its registry entry's words
        assert (
            f"{r.label} ({r.lens}) = {r.value:.3g}" in groups[ESTIMATORS.get(r.estimator).quantity]
        )
    assert len(groups) == len({ESTIMATORS.get(e).quantity for e in off.estimator})
    for r in comp.table[comp.table.lp_scale & comp.table.value.notna()].itertuples():
        assert f"{r.label} ({r.lens})" not in other


def test_explanation_words_the_experimental_kde_by_its_own_quantity():
    # the KDE estimate is of the kernel family but an ℓp error: it is not called a kernel
    # distance (SKCE or MMCE)
    p, y = _binary(200)
    comp = compare_estimators(
        (p, y), AnalysisConfig(lens="binary", n_resamples=0), experimental=True
    )
    kde = comp.table[comp.table.estimator == "kde"]
    assert len(kde) and kde.value.notna().all()
    (other,) = [
        t
        for t in explain_disagreement(comp)
        if t.startswith("**Read apart from the binned errors**")
    ]
    r = next(kde.itertuples())
    words = f"{ESTIMATORS.get('kde').quantity}: {r.label} ({r.lens}) = {r.value:.3g}"
    assert words in other and other.count(ESTIMATORS.get("kde").quantity) == 1


def test_figures_draw_the_tables():
    p, y = _binary(300)
    comp = compare_estimators((p, y), AnalysisConfig(lens="binary", n_resamples=20))
    curve = error_versus_bins((p, y), AnalysisConfig(lens="binary"), n_bins_range=(2, 10))
    fig = error_versus_bins_figure(curve, comp.sweep_choices)
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert len(lines) == 2 * len(CURVE_ESTIMATORS)
    stars = [t for t in fig.data if t.name and t.name.startswith("ECE_sweep")]
    assert [int(t.x[0]) for t in stars] == comp.sweep_choices.b_star.tolist()
    first = curve[(curve.estimator == "plugin") & (curve.binning == "equal-width")]
    (plug,) = [t for t in lines if t.name == "Plug-in binned (ECE) · equal-width"]
    assert_allclose(plug.y, first.value.to_numpy())
    assert_allclose(plug.x, np.arange(2, 11))
    trace_fig = sweep_trace_figure(comp.sweep_traces)
    chosen = [t for t in trace_fig.data if t.name == "b* (chosen)"]
    assert len(chosen) == 2
    assert sum(len(t.x) for t in trace_fig.data if t.name != "b* (chosen)") == len(
        comp.sweep_traces
    )
    bars = estimator_intervals_figure(comp.table)
    # the estimates on the ℓp scale, as the registry declares them (binned and smooth); one
    # panel per quantity: the ℓp errors, then the Brier-scale MCB on its own axis
    drawn = {label.split(" · ")[0] for t in bars.data for label in t.y}  # "label · lens"
    on_scale = {ESTIMATORS.get(n).label for n in ESTIMATORS.names() if ESTIMATORS.get(n).lp_scale}
    computed = set(comp.table.label[comp.table.value.notna()])
    assert drawn == on_scale & computed and ESTIMATORS.get("smooth").label in drawn
    assert len(bars.data) == 2 and len(bars.data[-1].x) == 1
    assert isinstance(comp.table, pd.DataFrame)


def test_experimental_estimators_run_only_when_asked_for():
    from core.analyses.estimator_comparison import NOT_ASKED

    p, y = _binary(400)
    config = AnalysisConfig(lens="binary", n_resamples=0)
    row = compare_estimators((p, y), config).table.set_index("key").loc["kde"]
    assert np.isnan(row.value) and NOT_ASKED in row.note
    asked = compare_estimators((p, y), config, experimental=True).table.set_index("key")
    want = calibration_error(p, y, estimator="kde", lens=asked.loc["kde", "lens"])
    assert_allclose(asked.loc["kde", "value"], want.value, rtol=1e-12)
