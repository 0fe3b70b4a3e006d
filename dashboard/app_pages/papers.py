"""Papers page: each paper's key result in one click, the paper's number beside ours."""

from __future__ import annotations

import streamlit as st

from core.analyses.gallery import GALLERY
from dashboard import cache, calls, state, widgets
from dashboard.text import literal

st.title("Papers", anchor=False)
st.caption(
    "For teaching: the key result of each paper Calibscope is built on, recomputed here on "
    "synthetic worlds with a known truth. One click runs an entry in a few seconds with "
    "the sidebar's seed; the table below it sets the paper's number against ours, with "
    "the agreement a Monte Carlo run of this size can promise. To explore a world "
    "yourself, draw it on the Data page (Draw from a ground-truth world): every page then "
    "shows the true calibration error beside its estimates."
)
cache.stopped_notice()
seed = state.analysis_seed()

for entry in GALLERY:
    st.divider()
    st.subheader(f"{entry.paper}, {entry.figure}: {entry.label}", anchor=False)
    st.caption(entry.description)
    if entry.formula:
        st.caption(f"`{entry.formula}`")
    key = ("gallery", entry.name, seed)
    clicked = st.button(
        f"Run ({entry.figure})",
        key=f"run_{entry.name}",
        icon=":material/play_arrow:",
        help=f"Seed {seed} (the sidebar's); sizes small enough for a few seconds.",
    )
    if not clicked and cache.recall(key) is None:
        continue
    result = calls.gallery_entry(key, entry.name, f"{entry.paper}, {entry.figure}", seed)
    if result is None:
        continue
    widgets.chart(calls.gallery_chart(result), f"gallery_{entry.name}")
    # the table spans the page, so every column (the verdict last) is visible without scrolling
    st.markdown("**The paper's numbers beside ours**")
    widgets.table(result.paper_frame(), key=f"gallery_paper_{entry.name}")
    settings = ", ".join(f"{k} = {v}" for k, v in result.settings.items())
    st.caption(f"Run with {literal(settings)}.")
    for note in result.notes:
        st.caption(note)
