"""Browser tests: the real app in Chromium (upload, pages, URL settings, errors)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("playwright")
from playwright.sync_api import Page, expect  # noqa: E402

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def wait_idle(page: Page, initial_wait_ms: int = 250) -> None:
    """Wait until the script has finished running (as Streamlit's own e2e suite does)."""
    page.wait_for_timeout(initial_wait_ms)
    page.locator("[data-testid='stApp'][data-test-connection-state='CONNECTED']").wait_for(
        state="attached"
    )
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(
        state="attached", timeout=30_000
    )


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory) -> Path:
    rng = np.random.default_rng(11)
    n = 2000
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**1.4).astype(int)
    path = tmp_path_factory.mktemp("data") / "preds.csv"
    pd.DataFrame({"p": p.round(6), "label": y}).to_csv(path, index=False)
    return path


def upload(page: Page, path: Path) -> None:
    page.get_by_test_id("stFileUploaderDropzoneInput").first.set_input_files(path)
    wait_idle(page)


def metric(page: Page, label: str):
    return page.get_by_test_id("stMetric").filter(has_text=label).get_by_test_id("stMetricValue")


def plot_counts(page: Page) -> list[float]:
    """Heights of the count bars of the reliability diagram, read from the drawn figure."""
    page.wait_for_selector(".js-plotly-plot .main-svg")
    return page.evaluate(
        # _fullData holds the decoded arrays (data keeps plotly's base64 typed-array form)
        "() => Array.from(document.querySelector('.js-plotly-plot')._fullData[2].y)"
    )


def test_upload_then_switch_pages_keeps_data(page: Page, app_url: str, csv_file: Path):
    page.goto(f"{app_url}/?n_resamples=0")
    expect(page.get_by_role("heading", name="Data")).to_be_visible()
    upload(page, csv_file)
    expect(metric(page, "Rows (n)")).to_have_text("2,000")
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Reliability").click()
    expect(page).to_have_url(re.compile(r"/reliability"))
    page.wait_for_selector(".js-plotly-plot .main-svg")
    wait_idle(page)
    assert sum(plot_counts(page)) == 2000
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Data").click()
    wait_idle(page)
    expect(metric(page, "Rows (n)")).to_have_text("2,000")


def test_changing_binning_changes_the_diagram(page: Page, app_url: str, csv_file: Path):
    page.goto(f"{app_url}/?n_resamples=0&n_bins=10")
    upload(page, csv_file)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Reliability").click()
    wait_idle(page)
    before = plot_counts(page)
    assert len(before) == 10 and len(set(before)) > 1  # equal-width: uneven counts
    page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(
        has_text="Binning"
    ).click()
    page.get_by_role("option", name="Equal mass").click()  # the label; the link keeps the name
    expect(page).to_have_url(re.compile(r"binning=equal-mass"))
    wait_idle(page)
    page.wait_for_function(
        "() => new Set(document.querySelector('.js-plotly-plot')._fullData[2].y).size === 1"
    )
    assert plot_counts(page) == [200] * 10  # equal-mass: 2000 rows in 10 bins of 200


def test_shared_url_restores_settings(page: Page, app_url: str):
    page.goto(f"{app_url}/reliability?binning=equal-mass&n_bins=7&norm=2&seed=42")
    wait_idle(page)
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_role("combobox", name="Binning")).to_have_value("Equal mass")
    expect(sidebar.get_by_role("combobox", name="Norm")).to_have_value("ℓ2 (RMS CE)")
    expect(sidebar.get_by_role("spinbutton", name="Number of bins")).to_have_value("7")
    expect(sidebar.get_by_role("spinbutton", name="Seed")).to_have_value("42")
    # no data in a fresh session: the page says how to load some
    expect(page.get_by_text("No predictions are loaded yet")).to_be_visible()


def test_sample_from_url_loads_data(page: Page, app_url: str):
    from dashboard.state import sample_catalog

    catalog = sample_catalog()
    if not catalog:
        pytest.skip("no bundled samples in this checkout")
    first, *others = catalog
    page.goto(f"{app_url}/reliability?{urlencode({'sample': first, 'n_resamples': 0})}")
    page.wait_for_selector(".js-plotly-plot .main-svg")
    wait_idle(page)
    expect(page.get_by_test_id("stSidebar")).to_contain_text(f"sample: {first}")
    if not others:
        return
    # picking another sample on the Data page loads it and puts it in the URL
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Data").click()
    wait_idle(page)
    page.get_by_test_id("stMain").get_by_role("combobox", name="Sample").click()
    page.get_by_role("option", name=others[0]).click()
    wait_idle(page)
    expect(page.get_by_test_id("stSidebar")).to_contain_text(f"sample: {others[0]}")
    expect(page).to_have_url(re.compile(r"sample=" + re.escape(urlencode({"": others[0]})[1:])))


def test_broken_upload_shows_a_clear_message(page: Page, app_url: str, tmp_path: Path):
    broken = tmp_path / "broken.csv"
    broken.write_bytes(b"\x00\x01\x02 not a table \xff\xfe\n\x00")
    page.goto(app_url)
    upload(page, broken)
    alert = page.get_by_test_id("stAlert").filter(has_text="broken.csv")
    expect(alert).to_be_visible()
    expect(page.get_by_text("Traceback")).to_have_count(0)
    expect(page.get_by_test_id("stException")).to_have_count(0)
