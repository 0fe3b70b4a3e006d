"""Names holding Unicode's direction controls show as stored: written out, never live.

A model named ``"\u202eexe.fdp\u202c"`` would show as "pdf.exe" and reorder the sentence
around it. Every model, group and class name is written out (``\\u202e``) where it is read,
so the CLI, the report, figures, tables and JSON never carry a live control.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import core
from core.analyses.analysis import AnalysisConfig
from core.analyses.model_comparison import compare_models
from core.base.names import BIDI_CONTROLS, visible
from core.cli import main
from core.figures import reliability_overlay_figure
from core.report import build_report
from core.stream.analysis import analyze_stream

TRICK = "\u202eexe.fdp\u202c"
LIVE = re.compile("[" + "".join(sorted(BIDI_CONTROLS)) + "]")


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    n = 400
    p = rng.uniform(size=n)
    frame = pd.DataFrame(
        {
            "p": p,
            "label": (rng.uniform(size=n) < p).astype(int),
            "model": np.where(np.arange(n) % 2 == 0, TRICK, "plain"),
            "group": np.where(np.arange(n) % 4 < 2, "\u2066g\u2069", "h"),
        }
    )
    path = tmp_path / "bidi.csv"
    frame.to_csv(path, index=False)
    return path


def test_every_control_is_written_out():
    assert len(BIDI_CONTROLS) == 9
    for c in BIDI_CONTROLS:
        assert visible(f"a{c}b") == f"a\\u{ord(c):04x}b"
    assert visible(visible(TRICK)) == visible(TRICK)  # written out once


def test_loaded_names_hold_no_live_control(data):
    pred = core.load_predictions(data)
    assert set(pred.models) == {visible(TRICK), "plain"}
    assert not LIVE.search("".join(map(str, pred.group)))
    stream = analyze_stream(str(data), AnalysisConfig(n_resamples=0))
    assert {name for name, _, _ in stream.results} == {visible(TRICK), "plain"}


def test_class_names_from_labels_are_written_out(tmp_path):
    path = tmp_path / "words.csv"
    labels = ["\u202ecat", "dog"] * 50
    rows = ["\u202ecat,dog,label"] + [f"0.3,0.7,{y}" for y in labels]
    path.write_text("\n".join(rows) + "\n")
    pred = core.load_predictions(path)
    assert pred.class_names == ("\\u202ecat", "dog")


def test_no_surface_carries_a_live_control(capsys, data, tmp_path):
    pred = core.load_predictions(data)
    for argv in (["lint", str(data)], ["compare", str(data), "--resamples", "50"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert not LIVE.search(out) and "\\u202eexe.fdp\\u202c" in out
    report = build_report(pred, config=AnalysisConfig(lens="binary", n_resamples=50))
    assert not LIVE.search(report.to_html()) and not LIVE.search(report.to_json())
    comparison = compare_models(pred.by_model(), config=AnalysisConfig(n_resamples=50))
    figure = reliability_overlay_figure(comparison)
    assert not LIVE.search(figure.to_json())
    assert not LIVE.search(comparison.table.to_csv())
