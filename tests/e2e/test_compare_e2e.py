"""Browser test: the Compare page draws its overlaid diagram for the bundled sample."""

from __future__ import annotations

import os
import re
from urllib.parse import urlencode

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import Page, expect  # noqa: E402

pytestmark = pytest.mark.e2e
SAMPLE = "breast-cancer (binary)"
MODELS = ["naive-bayes", "random-forest", "adaboost", "logistic-regression"]


def wait_idle(page: Page, initial_wait_ms: int = 250) -> None:
    """Wait until the script has finished running (as Streamlit's own e2e suite does)."""
    page.wait_for_timeout(initial_wait_ms)
    page.locator("[data-testid='stApp'][data-test-connection-state='CONNECTED']").wait_for(
        state="attached"
    )
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(
        state="attached", timeout=60_000
    )


def test_compare_page_draws_the_overlaid_diagram(page: Page, app_url: str):
    from dashboard.state import sample_catalog

    if SAMPLE not in sample_catalog():
        pytest.skip("the breast-cancer sample is not bundled")
    query = urlencode({"sample": SAMPLE, "lens": "binary", "compare_resamples": 200})
    page.goto(f"{app_url}/compare?{query}")
    expect(page.get_by_role("heading", name="Compare")).to_be_visible()
    overlay = page.get_by_test_id("stPlotlyChart").nth(2).locator(".js-plotly-plot")
    overlay.locator(".main-svg").first.wait_for(timeout=60_000)
    wait_idle(page)
    names = page.evaluate(
        "() => document.querySelectorAll('.js-plotly-plot')[2]._fullData.map(t => t.name)"
    )
    assert names[:5] == ["perfect calibration", *MODELS]
    # one drawn curve per model plus the diagonal (scatter traces in the upper panel)
    expect(overlay.locator(".scatterlayer .trace")).to_have_count(5)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("Traceback")).to_have_count(0)
    # a setting change goes into the URL
    page.get_by_test_id("stMain").get_by_role("combobox", name="Reference model").click()
    page.get_by_role("option", name="adaboost").click()
    expect(page).to_have_url(re.compile(r"compare_reference=adaboost"))
    wait_idle(page)
    expect(page.get_by_role("heading", name="Differences to adaboost")).to_be_visible()
    shots = os.environ.get("CALIBSCOPE_SCREENSHOTS")
    if shots:
        page.screenshot(path=f"{shots}/compare.png", full_page=True)
