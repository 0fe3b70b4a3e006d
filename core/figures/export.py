"""Figures as PNG and SVG files: Plotly's kaleido (≥ 1) driving a Chrome or Chromium browser.

kaleido is an optional dependency (``pip install 'calibscope[figures]'``); it finds a
browser on the ``PATH`` (Debian's ``/usr/bin/chromium`` included) or at ``BROWSER_PATH``.
Without either, :func:`figure_bytes` and :func:`write_figures` raise
:class:`core.base.errors.ExportError` with what to install; :func:`export_available` asks first.
Each image is drawn by the same plotly.js as the page, so it is the figure on the screen.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.base.errors import ExportError

#: Image formats a figure is written in.
FORMATS: tuple[str, ...] = ("png", "svg")
#: Browser names kaleido's launcher looks for on the PATH.
_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
#: Pixel scale of PNG images (2: sharp on high-density screens and in slides).
PNG_SCALE = 2

_HOW = (
    "PNG and SVG figures need the kaleido package (pip install 'calibscope[figures]') and a "
    "Chrome or Chromium browser (e.g. apt install chromium, or set BROWSER_PATH)"
)


def export_problem() -> str | None:
    """Say why figures cannot be exported here (None when they can)."""
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return f"{_HOW}; kaleido is not installed."
    given = os.environ.get("BROWSER_PATH")
    if given and Path(given).is_file():
        return None
    if not any(shutil.which(name) for name in _BROWSERS):
        return f"{_HOW}; no browser was found."
    return None


def export_available() -> bool:
    """Whether :func:`figure_bytes` can run here (kaleido and a browser are present)."""
    return export_problem() is None


def _check(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ExportError(f"Unknown image format {fmt!r}; choose one of: {', '.join(FORMATS)}.")
    problem = export_problem()
    if problem is not None:
        raise ExportError(problem)


def _options(fmt: str) -> dict[str, Any]:
    return {"scale": PNG_SCALE} if fmt == "png" else {}


def figure_bytes(fig: Any, fmt: str = "png") -> bytes:
    """Return one figure as a PNG or SVG image.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        A figure of :mod:`core.figures`.
    fmt : {"png", "svg"}
        The format.

    Returns
    -------
    bytes
        The image.

    Raises
    ------
    ExportError
        When kaleido or a browser is missing, or the browser fails.
    """
    import plotly.io as pio

    _check(fmt)
    try:
        return pio.to_image(fig, format=fmt, **_options(fmt))
    except Exception as exc:  # kaleido and its browser raise many types
        raise ExportError(f"The figure could not be drawn as {fmt.upper()}: {exc}") from None


def slug(text: str) -> str:
    """Return a file-name-safe version of a caption (letters, digits, ``-``)."""
    out = re.sub(r"[^0-9A-Za-z]+", "-", text).strip("-").lower()
    return out[:80] or "figure"


def write_figures(
    figures: Sequence[tuple[str, Any]], folder: str | Path, formats: Sequence[str] = FORMATS
) -> list[Path]:
    """Write captioned figures as image files, one browser session for all of them.

    Parameters
    ----------
    figures : sequence of (caption, Figure)
        The figures; each file is named after its caption (:func:`slug`, numbered when two
        captions give the same name).
    folder : str or Path
        Created if missing.
    formats : sequence of str
        Some of :data:`FORMATS`.

    Returns
    -------
    list of Path
        The files written, in order (figure by figure, format by format).

    Raises
    ------
    ExportError
        When kaleido or a browser is missing, the folder cannot be written, or the
        browser fails.
    """
    import plotly.io as pio

    for fmt in formats:
        _check(fmt)
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"The folder {folder} cannot be created: {exc.strerror}.") from None
    names: dict[str, int] = {}
    paths, figs = [], []
    for caption, fig in figures:
        base = slug(caption)
        names[base] = names.get(base, 0) + 1
        stem = base if names[base] == 1 else f"{base}-{names[base]}"
        for fmt in formats:
            paths.append(folder / f"{stem}.{fmt}")
            figs.append(fig)
    if not figs:
        return []
    try:
        pio.write_images(
            figs,
            paths,
            format=[p.suffix[1:] for p in paths],
            scale=[_options(p.suffix[1:]).get("scale") for p in paths],
        )
    except Exception as exc:  # kaleido and its browser raise many types
        raise ExportError(f"The figures could not be written: {exc}") from None
    # a busy browser can drop an image of the batch without an error: write those again,
    # one by one, and never return a path that holds no image
    for path, fig in zip(paths, figs, strict=True):
        if not path.is_file() or path.stat().st_size == 0:
            try:
                path.write_bytes(figure_bytes(fig, path.suffix[1:]))
            except OSError as exc:
                raise ExportError(f"{path} cannot be written: {exc.strerror}.") from None
    return paths
