"""Reliability page: diagram with per-bin intervals and counts, bin table, metrics with intervals."""

from __future__ import annotations

import streamlit as st

from dashboard import state, widgets

st.title("Reliability", anchor=False)
st.caption(
    "Each point is one bin: the mean predicted score of its predictions (x) against the share "
    "that came true (y). A calibrated model sits on the diagonal; points below it are "
    "over-confident. Error bars are per-bin intervals for the observed frequency, the bars "
    "beneath count the predictions per bin. Options are in the sidebar; the URL keeps them."
)

pred = state.require_predictions()
config = state.analysis_config()
if config is None:
    st.stop()
with state.show_errors(stop=True):
    # the diagram, bins and point estimates first; the bootstrap (the slow part) below
    result = state.analyze(pred, state.without_resamples(config))

interval_slot = widgets.headline(result, config)

interval = f"{config.level:.0%} {widgets.interval_label(config.interval_method)}"
if config.lens == "classwise":
    st.markdown(f"**Classwise reliability** — one panel per class, per-bin {interval} intervals")
fig = state.reliability_chart(pred, result, interval=interval)
st.plotly_chart(
    fig,
    theme=None,
    key="reliability_chart",
    config={
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "scale": 2, "filename": "reliability"},
    },
)
st.caption(widgets.bin_convention(config))

st.subheader("Bins", anchor=False)
st.dataframe(
    result.bin_table,
    hide_index=True,
    key="bin_table",
    column_config=widgets.BIN_COLUMNS,
)

st.subheader("Metrics", anchor=False)
full = widgets.bootstrap_gate(pred, config)
if full is not None:
    result = full
    widgets.headline_interval(interval_slot, full, config)
metrics = result.metrics
if metrics[["low", "high"]].isna().all().all():
    metrics = metrics.drop(columns=["low", "high"])  # no intervals computed
st.dataframe(metrics, hide_index=True, key="metrics_table", column_config=widgets.METRIC_COLUMNS)

widgets.explain_estimator(config)
