"""Browser test: a calibration test too slow for the page waits for a click, then runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("playwright")
from playwright.sync_api import Page, expect  # noqa: E402

pytestmark = pytest.mark.e2e


def wait_idle(page: Page, initial_wait_ms: int = 250) -> None:
    """Wait until the script has finished running."""
    page.wait_for_timeout(initial_wait_ms)
    page.locator("[data-testid='stApp'][data-test-connection-state='CONNECTED']").wait_for(
        state="attached"
    )
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(
        state="attached", timeout=60_000
    )


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory) -> Path:
    # 4,000 rows × 10 classes × 1,000 resamples on the classwise lens: 4·10⁷ row draws,
    # above the page's budget of 3·10⁷
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.full(10, 0.5), 4_000)
    y = np.minimum((rng.random(4_000)[:, None] >= p.cumsum(1)).sum(1), 9)
    frame = pd.DataFrame(p.round(8), columns=[f"p_{c}" for c in range(10)])
    frame["label"] = y
    path = tmp_path_factory.mktemp("wait") / "preds.csv"
    frame.to_csv(path, index=False)
    return path


def test_consistency_waits_on_the_classwise_lens_and_runs_when_asked(
    page: Page, app_url: str, csv_file: Path
):
    page.goto(f"{app_url}/?n_resamples=0&lens=classwise")
    page.get_by_test_id("stFileUploaderDropzoneInput").first.set_input_files(csv_file)
    wait_idle(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Tests").click()
    wait_idle(page)
    main = page.get_by_test_id("stMain")
    warning = main.get_by_text("waits for you")
    expect(warning).to_be_visible()
    expect(main.get_by_text("the sidebar's “Lens” choice (top-label)")).to_be_visible()
    table = main.get_by_test_id("stDataFrame").first
    expect(table).to_be_visible()
    _open_null_choice(page)
    expect(page.get_by_role("option", name="Bootstrap test (SKCE_uq)")).to_be_visible()
    expect(page.get_by_role("option", name="Consistency resampling")).to_have_count(0)
    page.keyboard.press("Escape")
    main.get_by_role("button", name="Run it anyway (slow)").click()
    wait_idle(page)
    expect(warning).to_have_count(0)
    expect(main.get_by_text("Running the calibration tests — done")).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("Traceback")).to_have_count(0)
    # the consistency test now has its null distribution to show
    _open_null_choice(page)
    expect(page.get_by_role("option", name="Consistency resampling")).to_be_visible()


def _open_null_choice(page: Page) -> None:
    box = page.get_by_test_id("stMain").get_by_role("combobox", name="Resampling test")
    box.scroll_into_view_if_needed()
    box.click()


@pytest.fixture(scope="module")
def long_csv(tmp_path_factory) -> Path:
    # 30,000 rows × 10 classes: consistency resampling on the classwise lens takes seconds
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.full(10, 0.5), 30_000)
    y = np.minimum((rng.random(30_000)[:, None] >= p.cumsum(1)).sum(1), 9)
    frame = pd.DataFrame(p.round(6), columns=[f"p_{c}" for c in range(10)])
    frame["label"] = y
    path = tmp_path_factory.mktemp("long") / "long.csv"
    frame.to_csv(path, index=False)
    return path


def test_the_long_run_shows_its_progress_and_stops_leaving_the_page_as_it_was(
    page: Page, app_url: str, long_csv: Path
):
    page.goto(f"{app_url}/?n_resamples=0&lens=classwise")
    page.get_by_test_id("stFileUploaderDropzoneInput").first.set_input_files(long_csv)
    wait_idle(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Tests").click()
    wait_idle(page)
    main = page.get_by_test_id("stMain")
    expect(main.get_by_text("waits for you")).to_be_visible()
    main.get_by_role("button", name="Run it anyway (slow)").click()
    # the bar names the running test and how far it is
    expect(main.get_by_text("Consistency resampling,", exact=False).first).to_be_visible(
        timeout=60_000
    )
    main.get_by_role("button", name="Stop").click()
    wait_idle(page)
    expect(main.get_by_text("stopped before it finished")).to_be_visible()
    expect(main.get_by_text("waits for you")).to_be_visible()  # as it was: the test waits
    expect(main.get_by_role("button", name="Run it anyway (slow)")).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
