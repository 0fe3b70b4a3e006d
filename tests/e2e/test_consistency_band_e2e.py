"""Browser test: the Reliability page's consistency band and its URL-bound toggle."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("playwright")
from playwright.sync_api import Page, expect  # noqa: E402

pytestmark = pytest.mark.e2e

BAND = "consistency band (95%)"


def wait_idle(page: Page, initial_wait_ms: int = 250) -> None:
    """Wait until the script has finished running."""
    page.wait_for_timeout(initial_wait_ms)
    page.locator("[data-testid='stApp'][data-test-connection-state='CONNECTED']").wait_for(
        state="attached"
    )
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(
        state="attached", timeout=30_000
    )


def trace_names(page: Page) -> list[str]:
    page.wait_for_selector(".js-plotly-plot .main-svg")
    return page.evaluate(
        "() => document.querySelector('.js-plotly-plot')._fullData.map(t => t.name)"
    )


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory) -> Path:
    rng = np.random.default_rng(12)
    p = rng.uniform(size=1500)
    y = (rng.uniform(size=1500) < p**1.4).astype(int)
    path = tmp_path_factory.mktemp("band") / "preds.csv"
    pd.DataFrame({"p": p.round(6), "label": y}).to_csv(path, index=False)
    return path


def test_band_is_drawn_and_the_toggle_goes_to_the_url(page: Page, app_url: str, csv_file: Path):
    page.goto(f"{app_url}/?n_resamples=0&lens=binary")
    page.get_by_test_id("stFileUploaderDropzoneInput").first.set_input_files(csv_file)
    wait_idle(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Reliability").click()
    wait_idle(page)
    assert trace_names(page)[-1] == BAND
    expect(page.get_by_test_id("stException")).to_have_count(0)
    page.get_by_test_id("stSidebar").get_by_text("Consistency band", exact=True).click()
    expect(page).to_have_url(re.compile(r"consistency_band=false", re.I))
    wait_idle(page)
    page.wait_for_function(
        f"() => !document.querySelector('.js-plotly-plot')._fullData.some(t => t.name === '{BAND}')"
    )
    expect(page.get_by_test_id("stException")).to_have_count(0)
