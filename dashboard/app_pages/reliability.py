"""Reliability page: the chosen diagram (binned, or another kind of :data:`core.figures.diagrams.DIAGRAMS`), bin table, metrics."""

from __future__ import annotations

import streamlit as st

from core.analyses.analysis import brier_caption
from core.analyses.findings import reliability_finding
from core.figures.diagrams import DIAGRAMS
from dashboard import calls, errors, state, widgets
from dashboard.sections import reliability as sections
from dashboard.text import literal

st.title("Reliability", anchor=False)
finding = st.empty()  # what the analysis found, in one sentence (core.analyses.findings)
st.expander("Details", icon=":material/info:").caption(
    "The observed frequency of the outcome (y) against the predicted score (x): a calibrated "
    "model sits on the diagonal; below it, it is over-confident. The binned diagram draws one "
    "point per bin with per-bin intervals, the grey band where a calibrated model's points would "
    "fall and the count of each bin beneath; the smooth diagram a kernel-smoothed curve; the "
    "CORP diagram the isotonic (PAV) fit with its bands. Options are in the sidebar; the URL "
    "keeps them."
)

pred = state.require_predictions()
config = state.require_config()
with errors.show_errors(stop=True):
    # the diagram, bins and point estimates first; the bootstrap (the slow part) below
    result = calls.analyze(pred, calls.without_resamples(config))

finding.markdown(f"**{literal(reliability_finding(result))}**")
interval_slot = sections.headline(result, config)

kind = sections.diagram_choice()
if DIAGRAMS.get(kind).from_analysis:
    sections.binned_diagram(pred, result, config)
else:
    sections.diagram(pred, config, kind)

st.subheader("Bins", anchor=False)
widgets.table(
    result.bin_table,
    hide_index=True,
    key="bin_table",
    column_config=sections.BIN_COLUMNS,
)

st.subheader("Metrics", anchor=False)
full = sections.bootstrap_gate(pred, config)
if full is not None:
    result = full
    sections.headline_interval(interval_slot, full, config)
    finding.markdown(f"**{literal(reliability_finding(full))}**")
metrics = result.metrics
if metrics[["low", "high"]].isna().all().all():
    metrics = metrics.drop(columns=["low", "high"])  # no intervals computed
widgets.table(metrics, hide_index=True, key="metrics_table", column_config=sections.METRIC_COLUMNS)

if result.brier_decomposition is not None:
    st.subheader("Brier score decomposition", anchor=False)
    st.caption(brier_caption(result))
    widgets.table(
        result.brier_decomposition.to_frame(),
        hide_index=True,
        key="brier_table",
        column_config={"value": st.column_config.NumberColumn()},
    )

sections.explain_estimator(config)
