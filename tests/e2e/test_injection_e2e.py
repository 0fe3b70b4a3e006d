"""Browser test: hostile model, class and file names stay text in the dashboard and the report.

A name that is Markdown (an image, a link) or Plotly rich text (``<a href>``, ``<span
style>``) must be drawn as the characters it holds: no element of the page may point at the
address it names, and the browser must never fetch it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("playwright")
from playwright.sync_api import Page, expect  # noqa: E402

pytestmark = pytest.mark.e2e

MODELS = (
    "![px](https://evil.example/pixel.png)",
    "[Verify your account](https://evil.example/verify)",
    '<a href="https://evil.example/plotly">click</a> <span style="font-size:90px">BIG</span>',
)
CLASSES = ("![k0](https://evil.example/k0.png)", '<a href="https://evil.example/k1">k1</a>', "k2")
FILE_NAME = "[file](https:evil.example) __x__.csv"

#: Elements (HTML or SVG) that link to or load the hostile address (text attributes such as
#: an input's value or Plotly's data-unformatted copy may hold it), and the count of Plotly
#: texts drawn at the injected font size.
_PROBE = """() => {
  const active = ['href', 'xlink:href', 'src', 'srcset', 'action', 'formaction', 'style'];
  const hits = [];
  for (const el of document.querySelectorAll('*')) {
    for (const attr of el.attributes) {
      if (active.includes(attr.name) && attr.value.includes('evil.example')) {
        hits.push(el.tagName + ' ' + attr.name + '=' + attr.value.slice(0, 80));
      }
    }
  }
  const big = Array.from(document.querySelectorAll('.js-plotly-plot text, .js-plotly-plot tspan'))
    .filter((t) => (t.getAttribute('style') || '').includes('90px')).length;
  return {hits, big};
}"""


def wait_idle(page: Page, initial_wait_ms: int = 250) -> None:
    """Wait until the script has finished running (as Streamlit's own e2e suite does)."""
    page.wait_for_timeout(initial_wait_ms)
    page.locator("[data-testid='stApp'][data-test-connection-state='CONNECTED']").wait_for(
        state="attached"
    )
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(
        state="attached", timeout=60_000
    )


def _csv(n: int = 150, seed: int = 2) -> bytes:
    rng = np.random.default_rng(seed)
    frames = []
    for i, model in enumerate(MODELS):
        probs = rng.dirichlet(np.ones(3) * (0.8 + i), size=n)
        frame = pd.DataFrame(probs, columns=list(CLASSES))
        frame["label"] = [CLASSES[rng.choice(3, p=row)] for row in probs]
        frame["model"] = model
        frames.append(frame)
    return pd.concat(frames).to_csv(index=False, float_format="%.10f").encode()


def _fetched(page: Page) -> list[str]:
    requests: list[str] = []
    page.route(
        "**/*evil.example*/**",
        lambda route: (requests.append(route.request.url), route.abort()),
    )
    page.on(
        "request",
        lambda request: requests.append(request.url) if "evil.example" in request.url else None,
    )
    return requests


def _visible_text(locator) -> str:
    return locator.inner_text().replace("\u2060", "")


def _assert_inert(page: Page, where: str) -> None:
    found = page.evaluate(_PROBE)
    assert found["hits"] == [], (where, found["hits"])
    assert found["big"] == 0, where
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_dashboard_draws_hostile_names_as_text(page: Page, app_url: str):
    requests = _fetched(page)
    page.goto(f"{app_url}/?n_resamples=20")
    wait_idle(page)
    page.get_by_test_id("stFileUploaderDropzoneInput").first.set_input_files(
        files=[{"name": FILE_NAME, "mimeType": "text/csv", "buffer": _csv()}]
    )
    wait_idle(page)
    expect(page.get_by_test_id("stSidebar")).to_contain_text("450 rows")
    expect(page.get_by_test_id("stMain")).to_contain_text("The file holds 3 models")
    # the names read exactly as they are (an invisible word joiner before "https:" keeps
    # Markdown from linking a bare address)
    assert FILE_NAME in _visible_text(page.get_by_test_id("stSidebar"))
    assert MODELS[1] in _visible_text(page.get_by_test_id("stMain"))
    _assert_inert(page, "data")
    for title in ("Reliability", "Compare"):
        page.get_by_test_id("stSidebarNav").get_by_role("link", name=title).click()
        wait_idle(page)
        page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=60_000)
        _assert_inert(page, title)
    # Plotly draws the names in the legend as the characters they hold
    legend = " ".join(page.locator(".js-plotly-plot .legendtext").all_text_contents())
    assert MODELS[2] in legend
    assert requests == []


def test_report_draws_hostile_names_as_text(page: Page, tmp_path: Path):
    from core.analyses.analysis import AnalysisConfig
    from core.data import load_predictions
    from core.report import build_report

    pred = load_predictions(_csv(n=120), name="hostile.csv")
    report = build_report(
        pred,
        config=AnalysisConfig(lens="classwise", n_resamples=20),
        title=MODELS[2],
        test=None,
    )
    path = tmp_path / "report.html"
    path.write_text(report.to_html(), encoding="utf-8")
    requests = _fetched(page)
    page.goto(path.resolve().as_uri())
    page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=30_000)
    page.wait_for_timeout(500)
    _assert_inert(page, "report")
    expect(page.locator("h1")).to_have_text(MODELS[2])
    legend = " ".join(page.locator(".js-plotly-plot .legendtext").all_text_contents())
    assert MODELS[2] in legend
    assert requests == []


def test_a_malformed_link_value_warns_instead_of_failing(page: Page, app_url: str):
    page.goto(f"{app_url}/reliability?seed=1e400&n_bins=-3&sample=breast-cancer%20(binary)")
    wait_idle(page)
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_test_id("stAlert").filter(has_text="seed = “1e400”")).to_be_visible()
    expect(sidebar.get_by_test_id("stAlert").filter(has_text="n_bins = “-3”")).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("Traceback")).to_have_count(0)
    # the link no longer carries the refused values
    assert "seed=" not in page.url and "n_bins=" not in page.url


def test_the_models_of_a_new_file_replace_the_picked_one_without_a_warning(
    page: Page, app_url: str
):
    def upload(models: tuple[str, ...], name: str) -> None:
        rng = np.random.default_rng(0)
        frame = pd.concat(
            pd.DataFrame(
                {"p": rng.uniform(size=80).round(4), "label": rng.integers(0, 2, 80)}
            ).assign(model=m)
            for m in models
        )
        page.get_by_test_id("stFileUploaderDropzoneInput").first.set_input_files(
            files=[
                {"name": name, "mimeType": "text/csv", "buffer": frame.to_csv(index=False).encode()}
            ]
        )
        wait_idle(page)

    page.goto(app_url)
    wait_idle(page)
    upload(("alpha", "beta"), "a.csv")
    picker = page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(has_text="Model")
    picker.click()
    page.get_by_role("option", name="beta").click()
    wait_idle(page)
    assert "model=beta" in page.url
    upload(("x", "y"), "b.csv")
    expect(page.get_by_test_id("stSidebar")).to_contain_text("b.csv")
    expect(page.get_by_test_id("stAlert").filter(has_text="The link sets")).to_have_count(0)
    expect(page.get_by_test_id("stException")).to_have_count(0)
