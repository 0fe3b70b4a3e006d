"""Data page: upload predictions or pick a bundled sample; column mapping; lint report; summary."""

from __future__ import annotations

import streamlit as st

from dashboard import calls, sidebar, state, widgets
from dashboard.sections import data as sections
from dashboard.text import literal

st.title("Data", anchor=False)
st.caption(
    "Load a model's predicted probabilities and the true labels: a CSV or Parquet file with one "
    "P(y=1) column (binary) or K probability columns plus a label column, or a headerless "
    "probability matrix with a separate labels file. Logits are detected and converted. "
    "Optional columns `model`, `split` and `group` are recognised. The data stays loaded on "
    "every page of this browser tab."
)

upload_col, sample_col, world_col = st.columns([3, 2, 2], gap="large")

with upload_col:
    st.subheader("Upload", anchor=False)
    several = st.toggle(
        "Several files, one model each",
        key="upload_several",
        help="For a model review: one file per model (each named after its file), all "
        "sharing the labels file below.",
    )
    if several:
        uploaded = st.file_uploader(
            "Predictions, one file per model (CSV or Parquet)",
            type=list(sections.UPLOAD_TYPES),
            key="upload_models",
            accept_multiple_files=True,
            help="Uploads are parsed as data only (never executed or unpickled).",
        )
    else:
        one = st.file_uploader(
            "Predictions (CSV or Parquet)",
            type=list(sections.UPLOAD_TYPES),
            key="upload",
            help="Uploads are parsed as data only (never executed or unpickled).",
        )
        uploaded = [] if one is None else [one]
    labels_file = st.file_uploader(
        "Labels file (optional, for headerless probability matrices)",
        type=list(sections.UPLOAD_TYPES),
        key="upload_labels",
    )
    mapping = sections.column_mapping(uploaded[0] if uploaded else None)
    if uploaded:
        state.load_upload(uploaded, labels_file, **mapping)

with sample_col:
    st.subheader("Or a bundled sample", anchor=False)
    sidebar.sample_picker()

with world_col:
    st.subheader("Or draw from a ground-truth world", anchor=False)
    sidebar.world_picker()

pred = state.all_predictions()
if pred is None:
    st.info(
        "Nothing loaded yet: upload a file, pick a sample or draw from a world.",
        icon=":material/info:",
    )
    st.stop()

st.divider()
current = state.current_predictions()
names = state.model_names()
model = st.session_state.get(state.MODEL) if names else None
title = f"Summary · {literal(state.data_source())}"
if model in names:
    title += f" · model {literal(model)}"
st.subheader(title, anchor=False)
facts = calls.summary(current)
c1, c2, c3, c4 = st.columns(4)
c1.metric("Rows (n)", f"{current.n:,}")
c2.metric("Classes (K)", current.n_classes)
c3.metric("Accuracy", f"{facts.accuracy:.4f}")
c4.metric("Models", len(names) if names else 1)
if names:
    st.caption(
        f"The file holds {len(names)} models ({literal(', '.join(names))}); the model "
        "picker in the sidebar "
        "chooses which rows every page analyses."
    )

sections.lint_report(current.lint, state.data_source() or current.source)

left, right = st.columns(2)
with left:
    st.markdown("**Class balance** — observed share and mean predicted probability per class")
    widgets.chart(calls.class_balance_chart(facts), "class_balance")
with right:
    st.markdown("**Confidence histogram** — top-label confidence, correct vs incorrect")
    log = widgets.log_count_toggle("data_log_counts")
    widgets.chart(calls.confidence_chart(facts, log), "confidence_histogram")
