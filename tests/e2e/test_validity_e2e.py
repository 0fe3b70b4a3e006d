"""Browser test: the Validity page draws its validity plot in Chromium, settings in the URL."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import Page, expect  # noqa: E402
from test_e2e import wait_idle  # noqa: E402  (the suite's helper; same folder on sys.path)

pytestmark = pytest.mark.e2e
SAMPLE = "breast-cancer (binary)"


def test_validity_page_draws_the_validity_plot(page: Page, app_url: str):
    query = {"sample": SAMPLE, "lens": "binary", "n_bins": 10, "validity_runs": 20}
    page.goto(f"{app_url}/validity?{urlencode(query)}")
    wait_idle(page)
    expect(page.get_by_role("heading", name="Validity", exact=True)).to_be_visible()
    charts = page.locator(".js-plotly-plot")
    expect(charts).to_have_count(3, timeout=60_000)
    page.wait_for_selector(".js-plotly-plot .main-svg")
    names = page.evaluate(
        "() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
        ".map(el => el._fullData.map(t => t.name || ''))"
    )
    validity = next(n for n in names if any(x.startswith("Marginal V̂") for x in n))
    assert "Theory, marginal" in validity and "Theory, conditional" in validity
    assert any("mean of 20 runs" in x for x in validity)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("Traceback")).to_have_count(0)
    # a calculator setting goes into the URL
    bins = page.get_by_test_id("stNumberInput").filter(has_text="Bins B").locator("input")
    bins.fill("20")
    bins.press("Enter")
    wait_idle(page)
    expect(page).to_have_url(re.compile(r"validity_bins=20"))
    expect(page.get_by_test_id("stException")).to_have_count(0)
    # another page and back: the setting is still there
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Reliability").click()
    wait_idle(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Validity").click()
    wait_idle(page)
    bins = page.get_by_test_id("stNumberInput").filter(has_text="Bins B").locator("input")
    expect(bins).to_have_value("20")
