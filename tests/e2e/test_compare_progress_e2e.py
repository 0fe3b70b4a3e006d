"""Browser test: a review of many models bootstraps at once behind a progress bar, and stops."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("playwright")
from playwright.sync_api import Page, expect  # noqa: E402
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402
from test_e2e import wait_idle  # noqa: E402  (the suite's helper; same folder on sys.path)

pytestmark = pytest.mark.e2e

MODELS = 10
ROWS = 10_000


def _review_csv(folder: Path, seed: int) -> Path:
    """Ten 10-class models on the same 10,000 rows (``id, model, label, p_0 … p_9``).

    10 × 10⁴ rows × 1,000 resamples is 10⁸ row-resamples: above the quick budget, within
    the one run behind a progress bar, and seconds of work (the exact bootstrap: 10⁴ rows ×
    1,000 resamples per model is its largest).
    """
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.full(10, 0.5), ROWS)
    labels = np.minimum((rng.random(ROWS)[:, None] >= truth.cumsum(1)).sum(1), 9)
    frames = []
    for m in range(MODELS):
        sharp = truth ** (1.0 + 0.1 * m)
        probs = sharp / sharp.sum(1, keepdims=True)
        frame = pd.DataFrame(probs.round(6), columns=[f"p_{c}" for c in range(10)])
        frame.insert(0, "label", labels)
        frame.insert(0, "model", f"net{m}")
        frame.insert(0, "id", np.arange(ROWS))
        frames.append(frame)
    path = folder / "review.csv"
    pd.concat(frames).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def review_csv(tmp_path_factory) -> Path:
    return _review_csv(tmp_path_factory.mktemp("review"), seed=11)


@pytest.fixture(scope="module")
def report_csv(tmp_path_factory) -> Path:
    # other rows than the Compare test's: the server's memo of its bootstraps (shared by
    # every session) would make this report too quick to stop
    return _review_csv(tmp_path_factory.mktemp("report"), seed=12)


def _open_with_upload(page: Page, app_url: str, csv: Path, name: str) -> None:
    """Upload ``csv`` on the Data page, then open page ``name`` from the sidebar.

    The upload puts the data's code into the link, a rerun that can swallow a click made
    at that moment: the click is repeated until the page's heading shows.
    """
    page.goto(f"{app_url}/?n_resamples=0")
    page.get_by_test_id("stFileUploaderDropzoneInput").first.set_input_files(csv)
    wait_idle(page)
    heading = page.get_by_role("heading", name=name, level=1)
    for _ in range(3):
        page.get_by_test_id("stSidebarNav").get_by_role("link", name=name).click()
        try:
            heading.wait_for(timeout=10_000)
            return
        except PlaywrightTimeout:
            wait_idle(page)
    expect(heading).to_be_visible()


def test_many_models_bootstrap_at_once_with_a_bar_and_stop_leaves_the_estimates(
    page: Page, app_url: str, review_csv: Path
):
    _open_with_upload(page, app_url, review_csv, "Compare")
    main = page.get_by_test_id("stMain")
    # no button first: the bootstrap starts and says how far it is
    expect(main.get_by_text("Bootstrap of model", exact=False).first).to_be_visible(timeout=60_000)
    expect(main.get_by_role("button", name="Compute bootstrap intervals")).to_have_count(0)
    main.get_by_role("button", name="Stop").click()
    wait_idle(page)
    expect(main.get_by_text("stopped before it finished")).to_be_visible()
    # stopped, it does not start again by itself: the point estimates and a button
    expect(main.get_by_text("were stopped", exact=False)).to_be_visible()
    expect(main.get_by_text("no intervals (0 resamples)", exact=False)).to_be_visible()
    button = main.get_by_role("button", name="Compute bootstrap intervals")
    expect(button).to_be_visible()
    button.click()
    wait_idle(page)
    expect(
        main.get_by_text(f"Comparing {MODELS} models with 1,000 resamples — done")
    ).to_be_visible()
    expect(main.get_by_text("from 1,000 resamples", exact=False)).to_be_visible()
    expect(main.get_by_text("were stopped", exact=False)).to_have_count(0)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("Traceback")).to_have_count(0)


def test_the_report_of_many_models_shows_its_progress_and_stops(
    page: Page, app_url: str, report_csv: Path
):
    _open_with_upload(page, app_url, report_csv, "Report")
    main = page.get_by_test_id("stMain")
    expect(main.get_by_text("Analysed model", exact=False).first).to_be_visible(timeout=60_000)
    main.get_by_role("button", name="Stop").click()
    wait_idle(page)
    expect(main.get_by_text("stopped before it finished")).to_be_visible()
    download = main.get_by_role("button", name="Download the report (HTML)")
    expect(download).to_have_count(0)
    # stopped, it waits for a click rather than starting again; the click builds it
    main.get_by_role("button", name="Build the report").click()
    expect(download).to_be_visible(timeout=120_000)
    expect(main.get_by_role("button", name="Build the report")).to_have_count(0)
    expect(page.get_by_test_id("stException")).to_have_count(0)
