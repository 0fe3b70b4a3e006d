"""Report page: a self-contained HTML report and JSON of every number, for download."""

from __future__ import annotations

import streamlit as st

from core.figures.diagrams import DIAGRAMS
from core.report import DEFAULT_TEST
from dashboard import cache, calls, state, widgets
from dashboard.text import literal

st.title("Report", anchor=False)
st.caption(
    "One HTML file to circulate: the reliability diagram, bin table and metrics with bootstrap "
    "intervals of every model, a calibration test, the model comparison for a file with "
    "several models, and every parameter (options, seed, data digest, lint findings, "
    "versions). Plotly is inlined, so the file opens offline. The JSON holds every number, "
    "as `calibscope report FILE -o report.json` writes it. The options are the sidebar's."
)

state.require_predictions()
config = state.require_config()
every = state.all_predictions()
picked = state.current_predictions()
only_picked = (
    widgets.toggle(
        st,
        "Only the model picked in the sidebar",
        key="report_one_model",
        help="By default the report covers every model of the file and compares them.",
    )
    if len(state.model_names()) > 1
    else False
)
pred = picked if only_picked else every

c1, c2 = st.columns([3, 2])
title = c1.text_input(
    "Title",
    value="",
    placeholder=f"Calibration report: {pred.source}",
    key="report_title",
    bind="query-params",
    help="Heading of the report; empty for the default.",
)
test = widgets.test_picker(c2, key="report_test", default=DEFAULT_TEST)
others = DIAGRAMS.names(from_analysis=False)
diagrams = st.pills(
    "Also draw, for every model",
    others,
    selection_mode="multi",
    format_func=lambda k: f"{DIAGRAMS.get(k).label} reliability diagram",
    key="report_diagrams",
    help="Reliability diagrams besides the binned one (as `calibscope report --diagram KIND`).",
)

cache.stopped_notice()
job = calls.report_key(pred, config, title, test, tuple(diagrams or ()))
if cache.was_stopped(job):  # stopped, it waits for a click rather than starting again
    st.button(
        "Build the report", key="report_build", on_click=cache.ask, args=(job,),
        icon=":material/play_arrow:",
    )  # fmt: skip
    st.stop()
built = calls.report_files(pred, config, title, test, tuple(diagrams or ()))
if built is None:
    st.stop()  # the error is shown
html_text, json_text, summary = built

st.subheader(literal(summary["title"]), anchor=False)
rows = [
    {
        "model": "all rows" if name is None else name,
        "n": n,
        f"{widgets.registry_label('estimator', config.estimator)} "
        f"({widgets.registry_label('lens', config.lens)} lens)": value,
        "test p-value": pvalue,
    }
    for name, n, value, pvalue in summary["models"]
]
widgets.table(rows, hide_index=True, key="report_summary")
if summary["comparison"]:
    st.caption("With several models the report also compares them on identical bins.")
stem = "calibscope-report"
files = (
    ("Download the report (HTML)", html_text, "html", ":material/description:"),
    ("Download every number (JSON)", json_text, "json", ":material/data_object:"),
)
for column, (label, text, kind, icon) in zip(st.columns(2), files, strict=True):
    widgets.download(
        column, label, text.encode("utf-8"), file_name=f"{stem}.{kind}", key=f"report_{kind}",
        icon=icon,
    )  # fmt: skip
st.caption(
    f"HTML {len(html_text) / 1e6:.1f} MB (most of it the inlined plotly.js), "
    f"JSON {len(json_text) / 1e3:.0f} kB. PNG figures: each figure's camera button in the "
    "report, or `calibscope report FILE --figures DIR` for PNG and SVG files."
)
