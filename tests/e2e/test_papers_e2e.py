"""Browser tests for teachers: the Papers page runs an entry; a world link draws rows and
reproduces them; another page shows the world's true calibration error."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import Browser, Page, expect  # noqa: E402
from test_e2e import wait_idle  # noqa: E402  (the suite's helper; same folder on sys.path)

from core.worlds import true_error  # noqa: E402

pytestmark = pytest.mark.e2e


def _idle(page: Page, timeout: int = 180_000) -> None:
    """Wait for the script to finish, allowing a gallery run on a busy machine."""
    wait_idle(page)
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(
        state="attached", timeout=timeout
    )


def _trace_names(page: Page) -> list[list[str]]:
    return page.evaluate(
        "() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
        ".map(el => (el._fullData || []).map(t => t.name || ''))"
    )


def test_papers_page_runs_an_entry(page: Page, app_url: str, tmp_path):
    page.goto(f"{app_url}/papers")
    _idle(page)
    expect(page.get_by_role("heading", name="Papers", exact=True)).to_be_visible()
    expect(page.locator(".js-plotly-plot")).to_have_count(0)
    page.get_by_role("button", name="Run (Fig. 3, App. E(A))").click()
    _idle(page)
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
    names = [n for names in _trace_names(page) for n in names]
    assert "histogram-umd" in names and "scaling-binning" in names, names
    # the paper-vs-ours table is drawn beside the figure
    expect(page.get_by_text("The paper's numbers beside ours")).to_be_visible()
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("Traceback")).to_have_count(0)
    page.get_by_text("The paper's numbers beside ours").scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "papers.png"), full_page=True)


def _reliability_fingerprint(page: Page) -> list:
    """The Reliability page's plotted values: they depend on every drawn row."""
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Reliability").click()
    _idle(page)
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    return page.evaluate(
        "() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
        ".map(el => (el._fullData || []).map(t => [t.name || '', Array.from(t.y || [])]))"
    )


def test_world_link_draws_rows_and_pages_show_the_truth(page: Page, app_url: str, tmp_path):
    query = {"world": "kumar-platt", "n": 800, "seed": 4}
    page.goto(f"{app_url}/?{urlencode(query)}")
    _idle(page)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("kumar-platt", exact=False).first).to_be_visible()
    first = _reliability_fingerprint(page)
    assert first and any(traces for traces in first), first
    # another page shows the world's true calibration error beside its estimates
    truths = {true_error("kumar-platt", lens="binary", norm=p).text for p in (1, 2)}
    info = page.get_by_test_id("stSidebar").get_by_text("True calibration error")
    expect(info).to_be_visible()
    text = page.get_by_test_id("stSidebar").inner_text()
    assert any(t in text for t in truths), (truths, text)
    page.screenshot(path=str(tmp_path / "world-reliability.png"), full_page=True)


def test_world_link_reproduces_the_rows(browser: Browser, app_url: str):
    def fingerprint(seed: int) -> list:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            page = context.new_page()
            query = {"world": "kumar-platt", "n": 800, "seed": seed}
            page.goto(f"{app_url}/?{urlencode(query)}")
            _idle(page)
            return _reliability_fingerprint(page)
        finally:
            context.close()

    a, b, other = fingerprint(4), fingerprint(4), fingerprint(5)
    # a fresh session opening the same link draws the same rows: the same plotted values
    assert a == b
    assert a != other
