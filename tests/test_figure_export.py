"""PNG and SVG figures: kaleido with the system's Chromium, or a clear message without them."""

from __future__ import annotations

import sys
from pathlib import Path

import plotly.graph_objects as go
import pytest

from core.base.errors import ExportError
from core.cli import main
from core.figures.export import export_problem, figure_bytes, slug, write_figures

ROOT = Path(__file__).resolve().parents[1]
BREAST = ROOT / "sample_data" / "binary_breast_cancer.csv"
needs_export = pytest.mark.skipif(
    export_problem() is not None, reason=f"no figure export here: {export_problem()}"
)


def _fig(y: float = 1.0) -> go.Figure:
    return go.Figure(go.Scatter(x=[0, 1], y=[0, y]))


@needs_export
def test_png_and_svg_are_images_of_the_figure():
    png = figure_bytes(_fig(), "png")
    svg = figure_bytes(_fig(), "svg").decode()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    # width and height of the PNG header: twice the figure's size (scale 2)
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1400, 1000)
    assert svg.startswith("<svg") and "scatterlayer" in svg


@needs_export
def test_cli_report_writes_every_figure(tmp_path):
    folder = tmp_path / "figs"
    args = [str(BREAST), "--resamples", "20", "-o", str(tmp_path / "r.html")]
    assert main(["report", *args, "--figures", str(folder), "--figure-format", "svg"]) == 0
    names = sorted(p.name for p in folder.iterdir())
    assert "reliability-diagram-adaboost.svg" in names
    assert "metrics-with-intervals.svg" in names
    assert "reliability-per-subgroup-adaboost.svg" in names  # the sample's group column
    assert all(n.endswith(".svg") for n in names) and len(names) == 3 * 4 + 2


def test_names_follow_captions_and_repeat_with_a_number():
    assert slug("Reliability diagram — <b>m/1</b>") == "reliability-diagram-b-m-1-b"
    assert slug("…") == "figure"


def test_without_kaleido_the_message_says_what_to_install(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "kaleido", None)  # import kaleido raises ImportError
    assert "pip install 'calibscope[figures]'" in export_problem()
    with pytest.raises(ExportError, match="kaleido is not installed"):
        figure_bytes(_fig(), "png")
    with pytest.raises(ExportError, match="kaleido is not installed"):
        write_figures([("a", _fig())], tmp_path / "f")
    args = [str(BREAST), "--resamples", "0", "-o", str(tmp_path / "r.html")]
    assert main(["report", *args, "--figures", str(tmp_path / "f")]) == 2
    assert "kaleido is not installed" in capsys.readouterr().err


def test_without_a_browser_the_message_says_so(monkeypatch):
    pytest.importorskip("kaleido")
    monkeypatch.delenv("BROWSER_PATH", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert export_problem().endswith("no browser was found.")


def test_unknown_format_is_refused():
    with pytest.raises(ExportError, match="png, svg"):
        figure_bytes(_fig(), "gif")


@needs_export
def test_two_figures_with_one_caption_get_two_files(tmp_path):
    paths = write_figures([("Same", _fig(1)), ("Same", _fig(2))], tmp_path, ("png",))
    assert [p.name for p in paths] == ["same.png", "same-2.png"]
    assert paths[0].read_bytes() != paths[1].read_bytes()


@needs_export
def test_an_image_the_browser_drops_is_written_again(tmp_path, monkeypatch):
    import plotly.io as pio

    real = pio.write_images

    def drops_the_last(figs, paths, **kwargs):  # a busy browser, as seen under load
        real(figs[:-1], paths[:-1], **{k: v[:-1] for k, v in kwargs.items()})

    monkeypatch.setattr(pio, "write_images", drops_the_last)
    paths = write_figures([("one", _fig()), ("two", _fig())], tmp_path, ("svg",))
    assert [p.name for p in paths] == ["one.svg", "two.svg"]
    assert all(p.read_bytes().startswith(b"<svg") for p in paths)
