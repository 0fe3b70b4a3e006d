"""Browser tests of the words-and-numbers layer: /data opens the Data page, the favicon is
bundled, and the Bias page's "your n" marker stays on the chart at small n."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import Page, expect  # noqa: E402

from tests.e2e.test_e2e import wait_idle  # noqa: E402

pytestmark = pytest.mark.e2e


def test_data_path_opens_the_data_page(page: Page, app_url: str):
    from dashboard.state import sample_catalog

    catalog = sample_catalog()
    first = next(iter(catalog), None)
    query = {"sample": first} if first else {}
    page.goto(f"{app_url}/data?{urlencode(query)}")
    wait_idle(page, 1000)
    expect(page.get_by_text("Page not found")).to_have_count(0)
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="Data")).to_be_visible()
    if first:  # the query parameters survive the alias
        expect(page).to_have_url(re.compile(r"sample="))
        expect(page.get_by_test_id("stSidebar")).to_contain_text(f"sample: {first}")


def test_favicon_is_served_by_the_app(page: Page, app_url: str):
    outside: list[str] = []
    page.on(
        "request",
        lambda r: outside.append(r.url) if not r.url.startswith(("data:", app_url)) else None,
    )
    page.goto(app_url)
    wait_idle(page, 1000)
    href = page.evaluate(
        "() => Array.from(document.querySelectorAll('link[rel~=icon]')).map(l => l.href)"
    )
    assert href and all(h.startswith((app_url, "data:")) for h in href), href
    assert not outside, outside
