"""Reliability page: diagram with per-bin intervals and counts, bin table, metrics with intervals."""

from __future__ import annotations

import streamlit as st

from dashboard import state, widgets

st.title("Reliability", anchor=False)
st.caption(
    "Each point is one bin: the mean predicted score of its predictions (x) against the share "
    "that came true (y). A calibrated model sits on the diagonal; points below it are "
    "over-confident. Error bars are per-bin intervals for the observed frequency, the grey "
    "band is where a calibrated model's points would fall, the bars beneath count the "
    "predictions per bin. Options are in the sidebar; the URL keeps them."
)

pred = state.require_predictions()
config = state.require_config()
with state.show_errors(stop=True):
    # the diagram, bins and point estimates first; the bootstrap (the slow part) below
    result = state.analyze(pred, state.without_resamples(config))

interval_slot = widgets.headline(result, config)

interval = f"{config.confidence_level:.0%} {widgets.interval_label(config.interval_method)}"
if config.lens == "classwise":
    st.markdown(f"**Classwise reliability** — one panel per class, per-bin {interval} intervals")
fig = state.reliability_chart(pred, result.config, interval=interval)
widgets.chart(fig, "reliability_chart", filename="reliability")
st.caption(widgets.bin_convention(config))
bands = [c.band for c in result.components if c.band is not None]
if bands:
    outside = int(result.bin_table["outside_band"].fillna(False).astype(bool).sum())
    st.caption(
        ("Band columns of the bin table" if config.lens == "classwise" else "Shaded")
        + f": the {config.confidence_level:.0%} consistency band (Bröcker & Smith 2007). If the "
        "model were calibrated, each label would be y* ~ Bernoulli(s) for its own score s; "
        f"redrawing the labels {bands[0].n_resamples:,} times with the scores and bins fixed "
        f"(seed {config.seed}), the band holds the central {config.confidence_level:.0%} of each bin's "
        f"redrawn observed frequency. A point outside it ({outside} bin(s) here, flagged in "
        "the table) is evidence of miscalibration in that bin — pointwise, one bin at a time, "
        "not for all bins at once."
    )
elif config.consistency_band:
    from core.analysis import CONSISTENCY_BAND_MAX_BINS

    st.caption(
        f"No consistency band: it is drawn for up to {CONSISTENCY_BAND_MAX_BINS:,} bins "
        "(the discrete binning gives one bin per distinct score)."
    )

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
