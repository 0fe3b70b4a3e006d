"""End-to-end fixtures: one ``streamlit run`` server per session, driven by Debian's Chromium.

The browser tests skip when Chromium is missing, unless ``CALIBSCOPE_REQUIRE_BROWSER=1``
(set by CI), in which case they fail with a message saying how to install it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

try:  # a first render on a busy 2-core machine can take longer than Playwright's 5 s
    from playwright.sync_api import expect

    expect.set_options(timeout=30_000)
except ImportError:  # the browser tests skip without Playwright
    pass
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
REQUIRE_BROWSER = os.environ.get("CALIBSCOPE_REQUIRE_BROWSER") == "1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pytest_collection_modifyitems(config, items):
    if Path(CHROMIUM).exists():
        return
    if REQUIRE_BROWSER:
        # fail loudly in CI rather than silently skipping the browser tests
        return
    skip = pytest.mark.skip(reason=f"{CHROMIUM} not installed (apt-get install chromium)")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def xdg_env(tmp_path_factory) -> dict[str, str]:
    # Chromium otherwise writes ~/.config/chromium and ~/.cache/dconf
    xdg = tmp_path_factory.mktemp("xdg")
    return {
        **os.environ,
        "XDG_CONFIG_HOME": str(xdg / "config"),
        "XDG_CACHE_HOME": str(xdg / "cache"),
    }


@pytest.fixture(scope="session")
def app_url(xdg_env, tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "streamlit.log"  # a file: an unread pipe can block
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(ROOT / "dashboard" / "app.py"),
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
    ]
    with log.open("wb") as log_fh:
        # cwd = repository root so .streamlit/config.toml applies
        proc = subprocess.Popen(cmd, cwd=ROOT, env=xdg_env, stdout=log_fh, stderr=subprocess.STDOUT)
        url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.25)
        else:
            proc.kill()
            raise RuntimeError("streamlit did not become healthy:\n" + log.read_text())
        yield url
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args, xdg_env):
    if not Path(CHROMIUM).exists():
        message = (
            f"{CHROMIUM} is not installed; run `apt-get install chromium` (or `make browser`)."
        )
        if REQUIRE_BROWSER:
            pytest.fail("CALIBSCOPE_REQUIRE_BROWSER=1 but " + message, pytrace=False)
        pytest.skip(message)
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "env": xdg_env,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
        ],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1400, "height": 1000}}
