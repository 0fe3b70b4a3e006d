"""Calibration per subgroup and per time window (core.analyses.subgroups, core.data.groups)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from core.analyses.analysis import AnalysisConfig
from core.analyses.gate import check_calibration
from core.analyses.model_comparison import compare_models
from core.analyses.subgroups import (
    equal_calibration_test,
    subgroup_analysis,
    window_analysis,
    window_codes,
)
from core.base.errors import ConfigError, DataError
from core.base.records import dumps
from core.data import combine_models, load_predictions
from core.data.groups import MISSING, find_groups, group_columns
from core.inference.calibration import calibration_error
from core.inference.resampling import chunks
from core.stats.binned_view import ComponentBins
from core.stats.binning import assign_to_edges, shared_edges


def _frame(n=3000, seed=1, miscalibrated="b"):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    g = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.45, 0.05])
    true = np.where(g == miscalibrated, p**2, p)
    y = (rng.uniform(size=n) < true).astype(int)
    sex = rng.choice(["F", "M"], size=n)
    return pd.DataFrame({"p": p, "y": y, "group": g, "sex": sex})


@pytest.fixture(scope="module")
def frame():
    return _frame()


@pytest.fixture(scope="module")
def pred(frame):
    return load_predictions(frame, keep_columns=["sex"])


BINARY = AnalysisConfig(lens="binary", n_resamples=0)


# ----------------------------------------------------------------------------- kept columns


def test_keep_columns_are_stored_typed_and_hashed():
    df = pd.DataFrame(
        {
            "p": [0.2, 0.7, 0.9, 0.4],
            "y": [0, 1, 1, 0],
            "region": ["n", None, "s", "n"],
            "age": [30, 41, 52, 63],
            "t": pd.date_range("2024-01-01", periods=4),
        }
    )
    plain = load_predictions(df, prob_columns="p")
    kept = load_predictions(df, prob_columns="p", keep_columns="all")
    assert dict(plain.extra) == {}
    assert list(kept.extra) == ["region", "age", "t"]
    assert kept.extra["region"].tolist() == ["n", "", "s", "n"]
    assert kept.extra["age"].dtype == np.int64
    assert kept.extra["t"].dtype == np.dtype("datetime64[ns]")
    assert not kept.extra["age"].flags.writeable
    # the digest is the rows' whatever is kept; the kept columns have their own
    assert kept.digest == plain.digest and plain.kept_digest == ""
    again = load_predictions(df, prob_columns="p", keep_columns="all")
    assert again.kept_digest == kept.kept_digest != ""
    other = load_predictions(
        df.assign(region=["n", None, "s", "s"]), prob_columns="p", keep_columns="all"
    )
    assert other.digest == kept.digest and other.kept_digest != kept.kept_digest
    fewer = load_predictions(df, prob_columns="p", keep_columns=["region", "age"])
    assert fewer.kept_digest not in ("", kept.kept_digest)
    # the dashboard's cache tells them apart (a window analysis reads the kept times)
    from dashboard.cache import data_key

    assert len({data_key(x) for x in (plain, kept, again, other, fewer)}) == 4
    # case-insensitive names; subset carries them
    one = load_predictions(df, prob_columns="p", keep_columns=["REGION"])
    assert list(one.extra) == ["region"]
    assert one.subset([0, 2]).extra["region"].tolist() == ["n", "s"]
    with pytest.raises(DataError, match="No column named 'nope' to keep"):
        load_predictions(df, prob_columns="p", keep_columns=["nope"])


def test_kept_columns_follow_by_model_and_combine():
    df = pd.DataFrame(
        {"model": list("aabb"), "p": [0.2, 0.7, 0.3, 0.6], "y": [0, 1, 0, 1], "k": list("xyzw")}
    )
    pred = load_predictions(df, keep_columns=["k"])
    parts = pred.by_model()
    assert parts["b"].extra["k"].tolist() == ["z", "w"]
    again = combine_models(parts)
    assert again.extra["k"].tolist() == ["x", "y", "z", "w"]


def test_drop_missing_keeps_columns_row_for_row():
    df = pd.DataFrame({"p": [0.2, np.nan, 0.9], "y": [0, 1, 1], "k": ["x", "y", "z"]})
    pred = load_predictions(df, keep_columns=["k"], drop_missing=True)
    assert pred.extra["k"].tolist() == ["x", "z"]


# ----------------------------------------------------------------------------- groups


def test_find_groups_single_and_intersections(frame, pred):
    g = find_groups(pred)
    assert g.names == ("a", "b", "c")
    assert g.counts.tolist() == [int((frame.group == v).sum()) for v in g.names]
    both = find_groups(pred, ["group", "sex"])
    expected = frame.groupby(["group", "sex"]).size()
    assert both.names == tuple(f"group={a} & sex={b}" for a, b in expected.index)
    assert both.counts.tolist() == expected.tolist()
    mask = both.mask("group=b & sex=M")
    assert np.array_equal(mask, (frame.group == "b").to_numpy() & (frame.sex == "M").to_numpy())
    assert group_columns(pred) == ("group", "sex")


def test_missing_group_values_are_one_group_named_missing():
    df = pd.DataFrame({"p": [0.2, 0.7, 0.9, 0.4], "y": [0, 1, 1, 0], "group": ["a", None, "a", ""]})
    g = find_groups(load_predictions(df))
    assert g.names == ("a", MISSING)
    assert g.counts.tolist() == [2, 2]


def test_find_groups_errors(pred):
    with pytest.raises(ConfigError, match="No grouping column 'age'"):
        find_groups(pred, ["age"])
    with pytest.raises(ConfigError, match="twice"):
        find_groups(pred, ["sex", "sex"])
    ids = load_predictions(
        pd.DataFrame({"p": np.linspace(0, 1, 1500), "y": [0, 1] * 750, "id": range(1500)}),
        prob_columns="p",
        keep_columns=["id"],
    )
    with pytest.raises(ConfigError, match="not a grouping column"):
        find_groups(ids, "id")


def test_gate_judges_the_same_groups(pred):
    gate = check_calibration(
        pred, max_error=1.0, config=AnalysisConfig(lens="binary", n_resamples=50)
    )
    groups = find_groups(pred)
    assert [r.group for r in gate.rows[1:]] == list(groups.names)
    assert [r.n for r in gate.rows[1:]] == groups.counts.tolist()


# ----------------------------------------------------------------------------- values


def test_hand_computed_values_and_gap():
    # a: bin [0, .5): s .2 .2 y 0 1 → |.2 − .5| · 2/4; bin [.5, 1]: s .8 .8 y 1 1 → .2 · 2/4
    # b: s .1 y 0 → .1 · 1/2; s .9 y 1 → .1 · 1/2
    # pooled: (.1667 vs .3333) · 3/6 + (.8333 vs 1) · 3/6 = 1/6
    df = pd.DataFrame(
        {
            "p": [0.2, 0.2, 0.8, 0.8, 0.1, 0.9],
            "y": [0, 1, 1, 1, 0, 1],
            "group": ["a", "a", "a", "a", "b", "b"],
        }
    )
    res = subgroup_analysis(
        load_predictions(df), AnalysisConfig(lens="binary", n_bins=2, n_resamples=0), min_rows=1
    )
    assert res.row("a").value == pytest.approx(0.25)
    assert res.row("b").value == pytest.approx(0.1)
    assert res.pooled["value"] == pytest.approx(1 / 6)
    assert res.row("a").gap == pytest.approx(0.25 - 1 / 6)
    assert res.worst == "a"
    assert np.isnan(res.row("a").low)


@pytest.mark.parametrize("estimator", ["plugin@1", "plugin@2", "debiased@2", "label-binned@1"])
def test_equal_width_values_are_calibration_error_on_the_group(frame, pred, estimator):
    name, _, norm = estimator.partition("@")
    res = subgroup_analysis(pred, BINARY, estimator=estimator)
    for g in res.groups:
        m = (frame.group == g).to_numpy()
        want = calibration_error(
            frame.p[m], frame.y[m], lens="binary", estimator=name, norm=float(norm)
        ).value
        assert res.row(g).value == pytest.approx(want, abs=1e-12)
    assert res.pooled["value"] == pytest.approx(
        calibration_error(frame.p, frame.y, lens="binary", estimator=name, norm=float(norm)).value,
        abs=1e-12,
    )


@pytest.mark.parametrize("binning", ["equal-mass", "equal-width"])
@pytest.mark.parametrize("lens", ["top-label", "classwise"])
def test_values_equal_compare_models_with_one_model_per_group(binning, lens):
    rng = np.random.default_rng(3)
    n = 1200
    logits = rng.normal(size=(n, 3)) * 2
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(3, p=row) for row in probs])
    df = pd.DataFrame(probs, columns=["c0", "c1", "c2"]).assign(
        label=y, group=rng.choice(["u", "v"], size=n)
    )
    pred = load_predictions(df)
    config = AnalysisConfig(lens=lens, binning=binning, n_bins=10, n_resamples=0)
    for est in ("plugin@1", "debiased@2", "average@1"):
        res = subgroup_analysis(pred, config, estimator=est)
        parts = find_groups(pred).parts(pred)
        cmp = compare_models(parts, config=config, metrics=[est], n_resamples=0)
        for g in res.groups:
            assert res.row(g).value == pytest.approx(cmp.value(g, est), abs=1e-12)


def test_bootstrap_is_paired_on_pooled_resamples(frame, pred):
    config = AnalysisConfig(lens="binary", n_resamples=40, seed=7)
    res = subgroup_analysis(pred, config)
    n = len(frame)
    rows = next(chunks(np.random.default_rng(7), n, 40, 40))
    p, y, g = frame.p.to_numpy(), frame.y.to_numpy(), frame.group.to_numpy()
    for r in (0, 17, 39):
        pick = rows[r]
        assert res.distributions["(pooled)"][r] == pytest.approx(
            calibration_error(p[pick], y[pick], lens="binary").value, abs=1e-12
        )
        for name in res.groups:
            mine = pick[g[pick] == name]
            want = calibration_error(p[mine], y[mine], lens="binary").value
            assert res.distributions[name][r] == pytest.approx(want, abs=1e-12)
    # the gap's interval is the percentile interval of the per-resample gaps
    gaps = res.distributions["a"] - res.distributions["(pooled)"]
    low, high = np.quantile(gaps, [0.025, 0.975])
    assert (res.row("a").gap_low, res.row("a").gap_high) == pytest.approx((low, high))


def test_paired_gap_is_narrower_than_independent_intervals_imply(frame, pred):
    # a group's rows are rows of the pooled data: the two values move together, so the gap's
    # paired interval is narrower than two independent intervals would make it
    res = subgroup_analysis(pred, AnalysisConfig(lens="binary", n_resamples=300))
    pooled = res.pooled["high"] - res.pooled["low"]
    for name in ("a", "b"):
        row = res.row(name)
        assert (row.gap_high - row.gap_low) < np.hypot(row.high - row.low, pooled)
        corr = np.corrcoef(res.distributions[name], res.distributions["(pooled)"])[0, 1]
        assert corr > 0
    # the miscalibrated group drives the pooled error: strongly correlated
    assert np.corrcoef(res.distributions["b"], res.distributions["(pooled)"])[0, 1] > 0.5
    b = res.row("b")  # the miscalibrated group: clearly worse than all rows
    assert b.significant and b.gap_low > 0
    assert res.worst == "b"
    assert "'b'" in res.worst_sentence and "significant" in res.worst_sentence


def test_small_groups_are_shown_not_judged(frame, pred):
    res = subgroup_analysis(pred, BINARY, min_rows=200)
    c = res.row("c")
    assert c.small and "too small" in c.note
    assert res.small == ("c",)
    assert res.test is not None and res.test.groups == ("a", "b")
    assert any("Too small to judge" in n for n in res.notes)
    # with every group small, none is worst and nothing is tested
    none = subgroup_analysis(pred, BINARY, min_rows=10**6)
    assert none.worst is None and none.test is None


def test_errors(pred):
    with pytest.raises(ConfigError, match="identical bins"):
        subgroup_analysis(pred, BINARY, estimator="sweep@1")
    with pytest.raises(ConfigError, match="lens has none"):
        subgroup_analysis(pred, AnalysisConfig(lens="canonical", estimator="skce-b"))
    with pytest.raises(DataError, match="two or more"):
        subgroup_analysis(pred.subset(pred.group == "a"), BINARY)
    with pytest.raises(ConfigError, match="min_rows"):
        subgroup_analysis(pred, BINARY, min_rows=0)


def test_record_is_json_and_carries_the_table(pred):
    res = subgroup_analysis(
        pred, AnalysisConfig(lens="binary", n_resamples=50), by=["group", "sex"]
    )
    rec = json.loads(dumps(res.to_record()))
    assert rec["by"] == ["group", "sex"]
    assert [g["group"] for g in rec["groups"]] == list(res.groups)
    assert rec["groups"][0]["value"] == pytest.approx(res.table.value.iloc[0])
    assert rec["test"]["pvalue"] == pytest.approx(res.test.pvalue)
    assert "χ²" in rec["test"]["formula"]
    frame = res.to_frame()
    assert frame.group.iloc[0] == "(all rows)" and len(frame) == len(res.groups) + 1


# ----------------------------------------------------------------------------- the test


def _component(s, y, n_bins=15, binning="equal-width"):
    e = shared_edges([s], binning=binning, n_bins=n_bins)
    return ComponentBins("1", s, y, assign_to_edges(s, e), e, binning, "split", n_bins)


def test_statistic_is_the_scaled_one_way_anova_of_residuals():
    # one bin, cells large enough: T = (n − 1) · SSB / SST, and SSB / SSW = F (G − 1) / (n − G)
    rng = np.random.default_rng(5)
    n, groups = 900, 3
    s = rng.uniform(0.3, 0.7, size=n)
    y = (rng.uniform(size=n) < s).astype(np.int64)
    g = rng.integers(0, groups, size=n)
    t = equal_calibration_test([_component(s, y, n_bins=1)], g, range(groups), "abc")
    r = y - s
    f = stats.f_oneway(*(r[g == k] for k in range(groups))).statistic
    x = f * (groups - 1) / (n - groups)
    assert t.statistic == pytest.approx((n - 1) * x / (1 + x), rel=1e-10)
    assert t.df == groups - 1
    assert t.pvalue == pytest.approx(stats.chi2.sf(t.statistic, groups - 1))


def _world_pvalue(rng, n, groups, miscalibrated=False, common=None, binning="equal-width"):
    g = rng.integers(0, groups, size=n)
    s = rng.beta(1.0 + g, 2.0)  # the groups' scores differ in distribution
    c = s if common is None else common(s)
    if miscalibrated:
        c = np.where(g == 0, s**2, c)
    y = (rng.uniform(size=n) < c).astype(np.int64)
    comp = _component(s, y, binning=binning)
    test = equal_calibration_test([comp], g, range(groups), [str(k) for k in range(groups)])
    return np.nan if test is None else test.pvalue  # None: no cell large enough to test


def test_power_when_one_group_is_miscalibrated():
    rng = np.random.default_rng(11)
    pvalues = [_world_pvalue(rng, 2000, 3, miscalibrated=True) for _ in range(20)]
    assert max(pvalues) < 0.01


@pytest.mark.slow
@pytest.mark.parametrize(
    ("n", "groups", "binning", "common"),
    [
        (2000, 3, "equal-width", None),  # calibrated in every group
        (300, 2, "equal-width", None),  # few rows
        (5000, 5, "equal-mass", None),
        (2000, 3, "equal-width", lambda s: s**2),  # equally miscalibrated groups
    ],
)
def test_size_pvalues_are_uniform_under_equal_calibration(n, groups, binning, common):
    rng = np.random.default_rng(2024)
    reps = 1000
    p = np.array(
        [_world_pvalue(rng, n, groups, common=common, binning=binning) for _ in range(reps)]
    )
    p = p[~np.isnan(p)]
    assert p.size > 0.5 * reps
    reps = p.size
    # binomial: 0.05 ± 3 standard errors (0.021), and uniform by Kolmogorov–Smirnov
    assert abs((p < 0.05).mean() - 0.05) < 3 * np.sqrt(0.05 * 0.95 / reps)
    assert stats.kstest(p, "uniform").pvalue > 0.001


# ----------------------------------------------------------------------------- windows


def test_window_codes_days_weeks_and_rows():
    t = pd.to_datetime(
        [
            "2024-01-01 09:00",
            "2024-01-01 23:59",
            "2024-01-02 00:00",
            "2024-01-07 12:00",
            "2024-01-08 00:00",
        ]
    )
    df = pd.DataFrame({"p": [0.2, 0.3, 0.4, 0.5, 0.6], "y": [0, 1, 0, 1, 1], "t": t})
    pred = load_predictions(df, keep_columns=["t"])
    codes, names = window_codes(pred, time="t", every="day")
    assert names == ("2024-01-01", "2024-01-02", "2024-01-07", "2024-01-08")
    assert codes.tolist() == [0, 0, 1, 2, 3]
    codes, names = window_codes(pred, time="t", every="week")  # weeks start on Monday
    assert names == ("2024-01-01", "2024-01-08")
    assert codes.tolist() == [0, 0, 0, 0, 1]
    codes, names = window_codes(pred, time=None, every=2)
    assert codes.tolist() == [0, 0, 1, 1, 2] and names[-1] == "rows 5–5"
    # rows in time order, whatever the file order
    shuffled = load_predictions(df.iloc[[4, 0, 3, 1, 2]], keep_columns=["t"])
    codes, _ = window_codes(shuffled, time="t", every=2)
    assert codes.tolist() == [2, 0, 1, 0, 1]
    # strings are parsed as times
    text = load_predictions(df.assign(t=t.astype(str)), keep_columns=["t"])
    assert window_codes(text, time="t", every="day")[1] == names_day(pred)
    with pytest.raises(ConfigError, match="not a time column"):
        window_codes(
            load_predictions(df.assign(t=list("abcde")), keep_columns=["t"]), time="t", every="day"
        )


def names_day(pred):
    return window_codes(pred, time="t", every="day")[1]


def test_window_analysis_finds_the_first_breaking_window():
    rng = np.random.default_rng(8)
    days = pd.date_range("2024-03-01", periods=6, freq="D")
    n_day = 800
    t = np.repeat(days, n_day)
    p = rng.uniform(size=t.size)
    drift = np.repeat(np.arange(6) >= 4, n_day)  # the model drifts on day 5
    y = (rng.uniform(size=t.size) < np.where(drift, p**3, p)).astype(int)
    pred = load_predictions(pd.DataFrame({"p": p, "y": y, "when": t}), keep_columns=["when"])
    res = window_analysis(
        pred,
        AnalysisConfig(lens="binary", n_resamples=100),
        time="when",
        every="day",
        threshold=0.08,
    )
    assert res.result.groups == tuple(str(d.date()) for d in days)
    assert res.first_breach == "2024-03-05"
    assert res.first_sure_breach == "2024-03-05"
    for day in res.result.groups[:4]:
        assert res.result.row(day).value < 0.08
    mask = drift
    assert res.result.row("2024-03-05").value == pytest.approx(
        calibration_error(p[mask][:n_day], y[mask][:n_day], lens="binary").value, abs=1e-12
    )
    assert "2024-03-05" in res.breach_sentence
    assert json.loads(dumps(res.to_record()))["first_breach"] == "2024-03-05"


def test_group_bins_are_the_groups_own_bin_statistics(frame, pred):
    from core.stats.binning import bin_stats

    res = subgroup_analysis(pred, BINARY)
    for name in res.groups:
        m = (frame.group == name).to_numpy()
        want = bin_stats(frame.p[m], frame.y[m], binning="equal-width", n_bins=15)
        got = res.bins[name][0]
        assert np.array_equal(got.counts, want.counts)
        assert np.allclose(got.score_sums, want.score_sums)
        assert np.allclose(got.label_sums, want.label_sums)
    total = sum(np.asarray(res.bins[g][0].counts) for g in res.groups)
    assert np.array_equal(total, res.pooled_bins[0].counts)


@pytest.mark.parametrize("interval", ["percentile", "basic"])
def test_all_rows_have_the_reliability_pages_interval(interval):
    """One number, one path: the ``(all rows)`` line is the analysis of all rows.

    The bootstrap follows analyze's rule (``"auto"``: the cells above its work threshold), and
    on cells all rows are drawn as the analysis draws them; the gaps pair each group with the
    pooled value of the groups' common draw.
    """
    from core.analyses.analysis import EXACT_BOOTSTRAP_WORK, analyze, bootstrap_mode

    rng = np.random.default_rng(2)
    n = 40_000
    p = rng.beta(2.0, 2.0, n)
    y = (rng.random(n) < np.clip(p + 0.04, 0, 1)).astype(int)
    group = np.where(rng.random(n) < 0.3, "x", "z")
    pred = load_predictions(pd.DataFrame({"p": p, "label": y, "group": group}))
    for bootstrap in ("auto", "cells", "exact"):
        config = AnalysisConfig(
            lens="binary", n_resamples=300, bootstrap=bootstrap, bootstrap_interval=interval
        )
        if bootstrap == "auto":
            assert n * 300 > EXACT_BOOTSTRAP_WORK and bootstrap_mode(config, n, 1) == "cells"
        want = analyze(pred, config).metrics.set_index("metric").loc["plugin"]
        got = subgroup_analysis(pred, config)
        assert got.pooled["low"] == pytest.approx(want.low, rel=1e-12)
        assert got.pooled["high"] == pytest.approx(want.high, rel=1e-12)
        line = got.to_frame().set_index("group").loc["(all rows)"]
        assert (line.low, line.high) == (got.pooled["low"], got.pooled["high"])
        if bootstrap != "exact":  # the gaps: the groups' common draw, not all rows' own
            gap = got.distributions["x"] - got.distributions["(pooled)"]
            lo, hi = np.nanquantile(gap, [0.025, 0.975])
            row = got.table.set_index("group").loc["x"]
            if interval == "percentile":
                assert (row.gap_low, row.gap_high) == pytest.approx((lo, hi), rel=1e-12)
