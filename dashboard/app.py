"""Calibscope dashboard entry point: ``streamlit run dashboard/app.py`` from the repository root.

This script runs on every rerun before the page: it sets up the page, builds the navigation
from :data:`dashboard.pages.PAGES`, reloads a bundled sample named in the URL, writes the loaded
data into the URL (``sample=`` and ``data=``, so a copied link names it on every page) and says
when the link was made on other data, and draws the
sidebar controls shared by every page (so they keep their values across pages). The sidebar
and the page run under :func:`dashboard.errors.show_errors`, so an error no page caught is
still told in words, never as a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAVICON = HERE / "assets" / "favicon.png"
# `streamlit run dashboard/app.py` puts dashboard/ first on sys.path; the repository root is
# needed for `import core` when the project is not installed.
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

import streamlit as st  # noqa: E402

from dashboard import errors, sidebar, state  # noqa: E402
from dashboard.pages import PAGES  # noqa: E402


def _startup_sample() -> str | None:
    """Sample named by ``streamlit run dashboard/app.py -- --sample NAME``, if any."""
    args = sys.argv[1:]
    if "--sample" in args and args.index("--sample") + 1 < len(args):
        return args[args.index("--sample") + 1]
    return None


st.set_page_config(
    page_title="Calibscope",
    # a bundled file: a Material icon as favicon is fetched from a CDN, which fails offline
    page_icon=str(FAVICON),
    layout="wide",
    initial_sidebar_state="expanded",
)

sections: dict[str, list[st.Page]] = {}
landing: st.Page | None = None
for spec in PAGES:
    entry = st.Page(
        HERE / spec.file,
        title=spec.title,
        icon=spec.icon,
        # the landing page is served at "/"; its own name is the hidden alias below
        url_path=f"{spec.url_path}-landing" if spec.default else spec.url_path,
        default=spec.default,
        help=spec.help or None,
    )
    sections.setdefault(spec.section, []).append(entry)
    if spec.default:
        landing = entry


def _to_landing() -> None:
    """``/data`` (the landing page's name) opens the landing page, query parameters kept."""
    params = {key: st.query_params.get_all(key) for key in st.query_params}
    st.switch_page(landing, query_params=params)


alias = next(spec for spec in PAGES if spec.default)
sections[alias.section].append(
    st.Page(_to_landing, title=alias.title, url_path=alias.url_path, visibility="hidden")
)
page = st.navigation(sections, position="sidebar", expanded=True)

with errors.show_errors():
    state.remember_link_data()
    state.load_sample_from_url(default=_startup_sample())
    state.sync_world()
    state.keep_data_in_link()
    state.show_link_data_note()

with st.sidebar:
    with errors.show_errors():
        sidebar.data_badge()
        sidebar.world_truth()
        sidebar.model_picker()
    st.subheader("Analysis options")
    with errors.show_errors():
        sidebar.analysis_controls()

# the last net: what a page did not catch itself is shown as an error below what it drew
with errors.show_errors():
    page.run()
