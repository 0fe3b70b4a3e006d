"""Browser test: the Report page offers the HTML report, and the download is that document."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlencode

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import Page, expect  # noqa: E402

pytestmark = pytest.mark.e2e
SAMPLE = "breast-cancer (binary)"


def wait_idle(page: Page, initial_wait_ms: int = 250) -> None:
    """Wait until the script has finished running (as Streamlit's own e2e suite does)."""
    page.wait_for_timeout(initial_wait_ms)
    page.locator("[data-testid='stApp'][data-test-connection-state='CONNECTED']").wait_for(
        state="attached"
    )
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(
        state="attached", timeout=60_000
    )


def test_report_page_downloads_the_html_report(page: Page, app_url: str, tmp_path: Path):
    from dashboard.state import sample_catalog

    if SAMPLE not in sample_catalog():
        pytest.skip("the breast-cancer sample is not bundled")
    query = urlencode(
        {"sample": SAMPLE, "lens": "binary", "n_resamples": 50, "report_title": "E2E"}
    )
    page.goto(f"{app_url}/report?{query}")
    expect(page.get_by_role("heading", name="Report", exact=True)).to_be_visible()
    button = page.get_by_role("button", name="Download the report (HTML)")
    button.wait_for(timeout=60_000)
    wait_idle(page)
    expect(page.get_by_role("button", name="Download every number (JSON)")).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("Traceback")).to_have_count(0)
    with page.expect_download(timeout=60_000) as download:
        button.click()
    data = Path(download.value.path()).read_text(encoding="utf-8")
    assert download.value.suggested_filename == "calibscope-report.html"
    assert data.startswith("<!doctype html>") and "<title>E2E</title>" in data
    assert 'class="plotly-graph-div"' in data
    # the file draws its figures with no network at all (plotly.js is inlined)
    requests: list[str] = []
    page.route("http*://**", lambda route: (requests.append(route.request.url), route.abort()))
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    page.goto(saved.resolve().as_uri())
    expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible(timeout=30_000)
    assert page.locator(".js-plotly-plot").count() == data.count('class="plotly-graph-div"')
    assert requests == []
    shots = os.environ.get("CALIBSCOPE_SCREENSHOTS")
    if shots:
        page.screenshot(path=f"{shots}/report.png", full_page=True)
