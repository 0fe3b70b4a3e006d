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


def test_your_n_marker_is_drawn_at_n_between_its_ticks(page: Page, app_url: str):
    # the bundled binary sample: 569 rows per model, between the 400 and 800 ticks
    page.goto(f"{app_url}/bias?{urlencode({'sample': 'breast-cancer (binary)'})}")
    wait_idle(page, 1000)
    page.get_by_role("button", name="Run simulation").click()
    wait_idle(page, 1000)
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(
        state="attached", timeout=300_000
    )
    page.wait_for_selector(".js-plotly-plot .shapelayer path", state="attached", timeout=120_000)
    where = page.evaluate(
        """() => {
          const plot = document.querySelector('.js-plotly-plot');
          const x = t => Array.from(plot.querySelectorAll('.xtick text'))
              .find(e => e.textContent === t).getBoundingClientRect();
          // the vertical shape (the bias chart also draws a horizontal line at 0)
          const line = Array.from(plot.querySelectorAll('.shapelayer path'))
              .map(e => e.getBoundingClientRect()).find(r => r.height > 50 && r.width < 5);
          const note = Array.from(plot.querySelectorAll('.annotation-text'))
              .find(e => e.textContent.startsWith('your n')).getBoundingClientRect();
          const mid = r => r.left + r.width / 2;
          return {line: mid(line), note: mid(note), t400: mid(x('400')), t800: mid(x('800')),
                  range: plot._fullLayout.xaxis.range};
        }"""
    )
    assert where["t400"] < where["line"] < where["t800"], where
    assert abs(where["note"] - where["line"]) < 5, where  # the label sits on its line
    # the axis spans the simulated sizes (log10 units), not down to a misplaced marker
    assert 2.0 < where["range"][0] < 2.3 and where["range"][1] < 4.3, where
