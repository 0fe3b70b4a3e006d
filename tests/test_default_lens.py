"""One default-lens rule: every entry point asks the estimator's entry for its default lens."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import core
from core.analyses.calibration_tests import TESTS, calibration_test
from core.cli import main
from core.estimators import ESTIMATORS
from core.inference.bootstrap import bootstrap_interval

DIGITS = Path(__file__).resolve().parents[1] / "sample_data" / "multiclass_digits.csv"


def _data(n=300, k=4, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.6), n)
    y = rng.integers(0, k, n)  # not calibrated: the lenses give clearly different numbers
    return p, y


def test_declared_default_lenses():
    for info in ESTIMATORS:
        assert info.default_lens in info.lenses
        if info.binned:
            assert info.default_lens == "top-label"
    assert ESTIMATORS.get("mmce").default_lens == "top-label"  # its definition
    for name in ("skce-b", "skce-uq", "skce-ul", "skce-block", "kde"):
        assert ESTIMATORS.get(name).default_lens == "canonical"


@pytest.mark.parametrize("name", ESTIMATORS.names())
def test_calibration_error_without_lens_uses_the_entry_default(name):
    p, y = _data(120)
    got = core.calibration_error(p, y, estimator=name)
    info = ESTIMATORS.get(name)
    assert got.lens == info.default_lens
    explicit = core.calibration_error(p, y, estimator=name, lens=info.default_lens)
    assert got.value == explicit.value


def test_skce_estimate_and_its_test_agree_by_default():
    # the issue: skce-b defaulted to top-label while its test defaulted to canonical
    p, y = _data()
    est = core.calibration_error(p, y, estimator="skce-b")
    res = calibration_test(p, y, test="skce-bound-b")
    assert res.lens == est.lens == "canonical" == TESTS.get("skce-bound-b").default_lens
    assert res.statistic == pytest.approx(est.value, rel=1e-12)
    top = core.calibration_error(p, y, estimator="skce-b", lens="top-label").value
    assert abs(top - est.value) > 0.1 * est.value  # the lenses do differ on this data


def test_bootstrap_interval_follows_the_same_rule():
    p, y = _data(150)
    est = core.calibration_error(p, y, estimator="skce-uq")
    boot = bootstrap_interval(p, y, statistic="skce-uq", n_resamples=5, seed=1)
    assert boot.value == pytest.approx(est.value, rel=1e-12)


def test_cli_kernel_headline_takes_its_default_lens(capsys):
    code = main(["metrics", str(DIGITS), "--estimator", "skce-b", "--resamples", "0", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    record = json.loads(out)
    pred = core.load_predictions(DIGITS)
    parts = dict(pred.by_model())
    for result in record["results"]:
        head = result["headline"]
        assert head["lens"] == "canonical"
        part = parts[result["model"]]
        want = core.calibration_error(part.probs, part.labels, estimator="skce-b").value
        assert head["value"] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("k", [2, 3, 7])
def test_every_lens_declares_the_components_it_gives(k):
    """``lens_components`` (the registry's ``per_class``) equals the components of the view."""
    from core.stats.lenses import LENSES, lens_components, lens_view

    rng = np.random.default_rng(k)
    p = rng.dirichlet(np.ones(k), size=50)
    y = rng.integers(0, k, 50)
    for name in LENSES.names():
        if LENSES.get(name).kernel_only or (name == "binary" and k != 2):
            continue
        view = lens_view(p, y, name)
        assert lens_components(name, k) == len(view.names), name


@pytest.mark.parametrize("lens", ["binary", "top-label", "classwise"])
def test_figures_title_the_score_axis_in_the_lens_words(lens):
    """The overlay of models and the subgroups' diagram read ``lens_axis`` (the registry)."""
    import pandas as pd

    from core.analyses.analysis import AnalysisConfig
    from core.analyses.model_comparison import compare_models
    from core.analyses.subgroups import subgroup_analysis
    from core.data import load_predictions
    from core.figures import reliability_overlay_figure, subgroup_reliability_figure
    from core.stats.lenses import lens_axis

    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(2), size=400)
    y = (rng.uniform(size=400) < p[:, 1]).astype(int)
    frame = pd.DataFrame({"p0": p[:, 0], "p1": p[:, 1], "y": y, "group": ["a", "b"] * 200})
    pred = load_predictions(frame)
    config = AnalysisConfig(lens=lens, n_bins=5, n_resamples=0)
    want = lens_axis(lens, pred.class_names[-1] if lens == "classwise" else "")
    component = 1 if lens == "classwise" else 0
    models = {"m1": pred, "m2": pred}
    overlay = reliability_overlay_figure(compare_models(models, config=config), component=component)
    sub = subgroup_reliability_figure(
        subgroup_analysis(pred, config, min_rows=100), component=component
    )
    for fig in (overlay, sub):
        titles = [ax.title.text for ax in (fig.layout.xaxis, fig.layout.xaxis2) if ax.title.text]
        assert any(t.startswith(want) for t in titles), (lens, titles)
    assert {lens_axis("binary", "x"), lens_axis("top-label", "x")} == {
        "P(y = 1)",
        "top-label confidence",
    }
    assert lens_axis("classwise", "cat") == "classwise score (cat)"


def _binary(n=2000, seed=1):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    return p, (rng.uniform(size=n) < p**1.3).astype(int)


def test_binary_data_mean_the_binary_lens_on_every_surface(tmp_path, capsys):
    # the issue: calibration_error and analyze used top-label (0.0632), the CLI, the
    # dashboard and every peer the binary lens (0.0614)
    p, y = _binary()
    binary = core.calibration_error(p, y, lens="binary").value
    assert core.calibration_error(p, y).value == binary
    assert core.calibration_error(np.column_stack([1 - p, p]), y).lens == "binary"
    assert core.calibration_error(p[:, None], y).lens == "binary"
    assert core.analyze((p, y)).headline.value == binary
    assert core.analyze((p, y)).config.lens == "binary"
    assert core.calibration_error(p, y, lens="top-label").value != binary
    path = tmp_path / "b.csv"
    path.write_text("p,label\n" + "".join(f"{float(a)!r},{b}\n" for a, b in zip(p, y, strict=True)))
    assert main(["metrics", str(path), "--resamples", "0", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["config"]["lens"] == "binary"
    assert record["results"][0]["headline"]["value"] == binary
    boot = bootstrap_interval(p, y, n_resamples=50)
    assert (
        boot.confidence_interval
        == bootstrap_interval(p, y, n_resamples=50, lens="binary").confidence_interval
    )


def test_the_rule_keeps_other_defaults():
    p, y = _binary(300)
    assert core.calibration_error(p, y, estimator="smooth").lens == "binary"
    assert core.calibration_error(p, y, estimator="mmce").lens == "top-label"  # its definition
    for name in ("skce-b", "skce-uq", "kde"):
        assert ESTIMATORS.get(name).lens_for(2) == "canonical"
    assert ESTIMATORS.get("plugin").lens_for(3) == "top-label"
    assert ESTIMATORS.get("plugin").lens_for(2, "classwise") == "classwise"
    pm, ym = _data()
    assert core.calibration_error(pm, ym).lens == "top-label"


def test_analyze_takes_two_arrays_as_calibration_error_does():
    p, y = _binary(500)
    config = core.AnalysisConfig(lens="top-label", n_resamples=20)

    def same(a, b):
        return json.dumps(a.to_record(), default=str) == json.dumps(b.to_record(), default=str)

    assert same(core.analyze(p, y), core.analyze((p, y)))
    assert same(core.analyze(p, y, config), core.analyze((p, y), config))
    with pytest.raises(core.ConfigError, match="config must be an AnalysisConfig"):
        core.analyze((p, y), {"lens": "binary"})
    with pytest.raises(core.ConfigError, match="Give the config once"):
        core.analyze((p, y), config, config)
