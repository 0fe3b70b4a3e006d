"""Browser test: a figure downloads as PNG and SVG, drawn by kaleido with the same plotly.js."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlencode

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import Page, expect  # noqa: E402

from core.figures.export import export_problem  # noqa: E402

pytestmark = pytest.mark.e2e
SAMPLE = "breast-cancer (binary)"


def test_reliability_diagram_downloads_as_png_and_svg(page: Page, app_url: str):
    problem = export_problem()
    if problem is not None:
        pytest.skip(problem)
    query = urlencode({"sample": SAMPLE, "lens": "binary", "n_resamples": 0})
    page.goto(f"{app_url}/reliability?{query}")
    expect(page.get_by_role("heading", name="Reliability", exact=True)).to_be_visible()
    expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=60_000)
    page.get_by_role("button", name="Download figure").first.click()
    for fmt, magic in (("PNG", b"\x89PNG\r\n\x1a\n"), ("SVG", b"<svg")):
        with page.expect_download(timeout=120_000) as download:
            page.get_by_role("button", name=fmt, exact=True).click()
        data = Path(download.value.path()).read_bytes()
        assert download.value.suggested_filename == f"reliability.{fmt.lower()}"
        assert data.startswith(magic), data[:20]
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_a_table_downloads_as_csv(page: Page, app_url: str):
    query = urlencode({"sample": SAMPLE, "lens": "binary", "n_resamples": 0})
    page.goto(f"{app_url}/reliability?{query}")
    expect(page.get_by_role("heading", name="Bins", exact=True)).to_be_visible()
    with page.expect_download(timeout=60_000) as download:
        page.locator(".st-key-bin_table_csv").get_by_role("button").click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    assert download.value.suggested_filename == "bin_table.csv"
    assert text.splitlines()[0].startswith("component,bin,")


def test_the_diagram_choice_round_trips_through_the_link(page: Page, app_url: str):
    query = urlencode({"sample": SAMPLE, "lens": "binary", "n_resamples": 0, "diagram": "smooth"})
    page.goto(f"{app_url}/reliability?{query}")
    control = page.get_by_role("radiogroup", name="Diagram")
    expect(control.get_by_role("radio", name="Smooth", exact=True)).to_be_checked(timeout=60_000)
    expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=60_000)
    control.get_by_role("radio", name="CORP (isotonic)").click()
    expect(page).to_have_url(re.compile(r"diagram=corp"), timeout=60_000)
    expect(page.get_by_test_id("stException")).to_have_count(0)
