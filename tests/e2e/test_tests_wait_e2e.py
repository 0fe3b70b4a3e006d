"""Browser test: a calibration test too slow for the page waits for a click, then runs or stops."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("playwright")
from playwright.sync_api import Locator, Page, expect  # noqa: E402
from test_e2e import wait_idle  # noqa: E402  (the suite's helper; same folder on sys.path)

pytestmark = pytest.mark.e2e


def _ten_class_csv(folder: Path, n: int, seed: int, digits: int) -> Path:
    """Dirichlet(0.5) predictions of 10 classes with labels drawn from them, as a CSV."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(10, 0.5), n)
    y = np.minimum((rng.random(n)[:, None] >= p.cumsum(1)).sum(1), 9)
    frame = pd.DataFrame(p.round(digits), columns=[f"p_{c}" for c in range(10)])
    frame["label"] = y
    path = folder / "preds.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory) -> Path:
    # 4,000 rows × 10 classes × 1,000 resamples on the classwise lens: 4·10⁷ row draws,
    # above the page's budget of 3·10⁷
    return _ten_class_csv(tmp_path_factory.mktemp("wait"), 4_000, seed=3, digits=8)


@pytest.fixture(scope="module")
def long_csv(tmp_path_factory) -> Path:
    # 30,000 rows × 10 classes: consistency resampling on the classwise lens takes seconds
    return _ten_class_csv(tmp_path_factory.mktemp("long"), 30_000, seed=4, digits=6)


def _tests_page(page: Page, app_url: str, csv: Path) -> Locator:
    """Upload ``csv`` on the classwise lens, open the Tests page; return its main area."""
    page.goto(f"{app_url}/?n_resamples=0&lens=classwise")
    page.get_by_test_id("stFileUploaderDropzoneInput").first.set_input_files(csv)
    wait_idle(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Tests").click()
    wait_idle(page)
    main = page.get_by_test_id("stMain")
    expect(main.get_by_text("waits for you")).to_be_visible()
    return main


def _open_null_choice(page: Page) -> None:
    box = page.get_by_test_id("stMain").get_by_role("combobox", name="Resampling test")
    box.scroll_into_view_if_needed()
    box.click()


def test_consistency_waits_on_the_classwise_lens_and_runs_when_asked(
    page: Page, app_url: str, csv_file: Path
):
    main = _tests_page(page, app_url, csv_file)
    warning = main.get_by_text("waits for you")
    expect(main.get_by_text("the sidebar's “Lens” choice (Top-label (confidence))")).to_be_visible()
    expect(main.get_by_test_id("stDataFrame").first).to_be_visible()
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


def test_the_long_run_shows_its_progress_and_stops_leaving_the_page_as_it_was(
    page: Page, app_url: str, long_csv: Path
):
    main = _tests_page(page, app_url, long_csv)
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
