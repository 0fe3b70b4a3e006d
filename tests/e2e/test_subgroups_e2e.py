"""Browser test: the Subgroups page draws the overlaid curves per group for the bundled sample."""

from __future__ import annotations

import re
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


def test_subgroups_page_draws_curves_per_group(page: Page, app_url: str):
    from dashboard.state import sample_catalog

    if SAMPLE not in sample_catalog():
        pytest.skip("the breast-cancer sample is not bundled")
    query = urlencode(
        {"sample": SAMPLE, "lens": "binary", "n_resamples": 200, "model": "logistic-regression"}
    )
    page.goto(f"{app_url}/subgroups?{query}")
    expect(page.get_by_role("heading", name="Subgroups")).to_be_visible()
    overlay = page.get_by_test_id("stPlotlyChart").first.locator(".js-plotly-plot")
    overlay.locator(".main-svg").first.wait_for(timeout=60_000)
    wait_idle(page)
    names = page.evaluate(
        "() => document.querySelectorAll('.js-plotly-plot')[0]._fullData.map(t => t.name)"
    )
    assert names[:4] == ["perfect calibration", "all rows", "large", "small"]
    # the diagonal, all rows and one curve per group in the upper panel
    expect(overlay.locator(".scatterlayer .trace")).to_have_count(4)
    expect(page.get_by_text(re.compile("Worst group"))).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("Traceback")).to_have_count(0)
    # a setting change goes into the URL
    size = page.get_by_test_id("stMain").get_by_role("spinbutton", name="Minimum group size")
    size.fill("500")
    size.press("Enter")
    expect(page).to_have_url(re.compile(r"subgroups_min_rows=500"))
    wait_idle(page)
    expect(page.get_by_text(re.compile("Too small to judge")).first).to_be_visible()
