"""Browser test: a link copied on any page reopens the same data and options in a new session."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import Browser, Page, expect  # noqa: E402

from tests.e2e.test_e2e import wait_idle  # noqa: E402

pytestmark = pytest.mark.e2e
SAMPLE = "breast-cancer (binary)"


def _headline(page: Page) -> str:
    tile = page.get_by_test_id("stMetric").first
    expect(tile).to_be_visible(timeout=60_000)
    return tile.get_by_test_id("stMetricValue").inner_text()


def _href(page: Page) -> str:
    return page.evaluate("location.href")


def test_a_link_copied_on_another_page_reopens_the_same_data(
    page: Page, app_url: str, browser: Browser
):
    from dashboard.state import sample_catalog

    if SAMPLE not in sample_catalog():
        pytest.skip("the bundled breast-cancer sample is missing")
    # the link names the estimator by its registry name; the control shows its label
    page.goto(f"{app_url}/?n_resamples=0&estimator=sweep")
    wait_idle(page)
    page.get_by_test_id("stMain").get_by_role("combobox", name="Sample").click()
    page.get_by_role("option", name=SAMPLE).click()
    wait_idle(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Reliability").click()
    wait_idle(page)
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_role("combobox", name="Estimator")).to_have_value("ECE_sweep (monotone)")
    value = _headline(page)
    expect(page).to_have_url(re.compile(r"/reliability\?"))
    page.wait_for_function("() => location.href.includes('data=')")
    link = _href(page)
    assert "estimator=sweep" in link  # the registry name, not the label
    assert "sample=" in link and re.search(r"data=[0-9a-f]{12}", link)

    # a colleague opens the link in a fresh session: same data, same options, same number
    other = browser.new_context().new_page()
    try:
        other.goto(link)
        wait_idle(other)
        assert _headline(other) == value
        expect(other.get_by_test_id("stSidebar")).to_contain_text(f"sample: {SAMPLE}")
        expect(other.get_by_text("This link was made on")).to_have_count(0)
        expect(
            other.get_by_test_id("stSidebar").get_by_role("combobox", name="Estimator")
        ).to_have_value("ECE_sweep (monotone)")
    finally:
        other.context.close()


def test_a_link_made_on_other_data_says_so(page: Page, app_url: str):
    query = urlencode({"data": "0123456789ab", "n_resamples": 0, "bias_source": "bogus"})
    page.goto(f"{app_url}/bias?{query}")
    wait_idle(page)
    expect(page.get_by_text("This link was made on an uploaded file")).to_be_visible()
    # a page control's bad link value is said beside it
    expect(page.get_by_text(re.compile("The link sets bias_source"))).to_be_visible()
    page.get_by_role("button", name="Dismiss").click()
    wait_idle(page)
    expect(page.get_by_text("This link was made on")).to_have_count(0)
    expect(page.get_by_test_id("stException")).to_have_count(0)
