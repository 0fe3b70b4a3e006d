"""Estimators page: every estimator side by side, error against B, the sweep's trace, why they differ."""

from __future__ import annotations

import dataclasses

import streamlit as st

from core.analyses.estimator_comparison import (
    explain_disagreement,
)
from core.analyses.findings import estimators_finding
from dashboard import cache, calls, errors, state, widgets
from dashboard.text import literal

PEER_COLUMNS = {
    "library": st.column_config.TextColumn("library"),
    "function": st.column_config.TextColumn("its call", width="medium"),
    "estimator": st.column_config.TextColumn("estimator"),
    "norm": st.column_config.TextColumn("norm"),
    "binning": st.column_config.TextColumn("binning"),
    "value": st.column_config.NumberColumn("its value"),
    "calibscope": st.column_config.NumberColumn("Calibscope"),
    "difference": st.column_config.NumberColumn("difference"),
    "why": st.column_config.TextColumn("why it differs", width="large"),
}

TABLE_COLUMNS = {
    # widths in pixels: the labels and five significant digits are read whole
    "label": st.column_config.TextColumn("estimator", width=300),
    "lens": st.column_config.TextColumn("lens"),
    "binning": st.column_config.TextColumn("binning"),
    "value": st.column_config.NumberColumn("value", width=80),
    "low": st.column_config.NumberColumn("low", width=80),
    "high": st.column_config.NumberColumn("high", width=80),
    "note": st.column_config.TextColumn("note", width="large"),
    "formula": st.column_config.TextColumn("formula", width="medium"),
    "description": st.column_config.TextColumn("what it computes", width="large"),
}

st.title("Estimators", anchor=False)
st.caption(
    "Every registered calibration-error estimator on the current data, with bootstrap "
    "intervals; how the binned ones move with the number of bins; how the monotone sweep "
    "chooses its bins; and why the numbers differ. Lens, bins, norm and the bootstrap's "
    "resamples, level and seed come from the sidebar."
)

pred = state.require_predictions()
config = state.require_config()
# every estimator runs here, so the headline choice must not split the cache
# (the library table below shows every library's bins; the rest of the page uses Calibscope's)
config = dataclasses.replace(config, estimator="plugin", convention="calibscope")

# ---------------------------------------------------------------- the table
kernel_job = ("estimators-kernel", cache.data_key(pred), config)
experimental_job = ("estimators-experimental", cache.data_key(pred), config)
# binned intervals are quick at any n (exact, or the cell bootstrap of large data); kernel
# intervals re-run every kernel estimator per resample and wait for a click
if config.n_resamples == 0:
    scope = "none"
elif cache.asked(kernel_job):
    scope = "all"
else:
    scope = "binned"

with errors.show_errors(stop=True):
    comparison = calls.estimators(
        pred, config, intervals=scope, experimental=cache.asked(experimental_job)
    )

st.markdown(f"**{literal(estimators_finding(comparison))}**")  # how far they disagree
st.subheader("Every estimator", anchor=False)
norm_symbol = widgets.NORM_SYMBOLS[config.to_dict()["norm"]]
st.markdown(
    f"Binned estimators use the **{widgets.registry_label('lens', config.lens)}** lens, "
    f"**{widgets.registry_label('binning', config.binning).lower()}** bins "
    f"(B = {config.n_bins}) and the **{norm_symbol}** norm. Kernel estimators have no bins "
    "and no norm: the SKCE estimators run on the same lens (each score becomes a two-class "
    "prediction), MMCE always on the top-label confidence (its only lens)"
    + (
        ", and for these multiclass predictions the SKCE estimators also on the **canonical** "
        "lens (the whole probability vector, the quantity they were designed for)."
        if comparison.n_classes > 2
        else "."
    )
    + " The canonical binned ECEs bin the whole probability vector (B equal-width bins per "
    "class, or median-variance bins) and measure a total-variation distance, as Widmann "
    "et al. (2019) do."
)
if scope == "none":
    st.caption("Bootstrap intervals are off (0 resamples in the sidebar).")
else:
    how = (
        "rows"
        if calls.bootstrap_kind(pred, config) == "exact"
        else "cells of rows with equal bins and outcomes (the fast bootstrap of large data)"
    )
    st.caption(
        f"{widgets.interval_words(config.confidence_level, config.bootstrap_interval)} from "
        f"{config.n_resamples:,} resamples of the {how} (seed {config.seed}); every estimator "
        "sees the same resamples. Kernel estimators keep their full-data bandwidth on the "
        "resamples."
    )
if scope == "binned":
    widgets.ask_button(
        st,
        "Compute intervals of the kernel estimators too",
        kernel_job,
        key="estimators_kernel_intervals",
        help="Each resample re-runs every kernel estimator (the quadratic ones cost n² "
        "per resample); this can take minutes. The result is kept for this data and options.",
    )

if not cache.asked(experimental_job):
    widgets.ask_button(
        st,
        "Compute the experimental estimators too",
        experimental_job,
        key="estimators_experimental",
        help="The KDE-ECE (experimental) searches its bandwidth by leave-one-out likelihood "
        "on the kernel subsample; with many classes this takes tens of seconds. The result "
        "is kept for this data and options.",
        icon=":material/science:",
    )

table = comparison.table
shown = table.drop(columns=["key", "estimator", "group", "lp_scale"])
if shown[["low", "high"]].isna().all().all():
    shown = shown.drop(columns=["low", "high"])
widgets.table(
    widgets.with_labels(shown[[c for c in TABLE_COLUMNS if c in shown.columns]]),
    hide_index=True,
    key="estimators_table",
    column_config=TABLE_COLUMNS,
    height=36 * (len(shown) + 1) + 3,  # every estimator visible without scrolling
)

# estimates of the ℓp calibration error on the left; other quantities (kernel distances,
# the whole-vector ECE) on the right, each on its own axis
binned_rows = table[table.lp_scale & table.value.notna()]
other_rows = table[~table.lp_scale & table.value.notna()]
if len(binned_rows) or len(other_rows):
    left, right = st.columns(2)
    with left:
        st.markdown(
            f"**Binned and smooth estimates** ({norm_symbol}, "
            f"{widgets.registry_label('lens', config.lens)} lens)"
        )
        widgets.chart(
            calls.estimator_chart(comparison, lp_scale=True),
            "estimators_binned_chart",
        )
    if len(other_rows):
        with right:
            st.markdown(
                "**Kernel and whole-vector estimates** (other quantities, each on its own axis)"
            )
            widgets.chart(
                calls.estimator_chart(comparison, lp_scale=False),
                "estimators_kernel_chart",
            )

# ---------------------------------------------------------------- the libraries
st.subheader("What each library would report on your data", anchor=False)
st.caption(
    "Each library's own calibration error on these predictions "
    f"({widgets.registry_label('lens', config.lens)} lens, "
    f"B = {config.n_bins}), beside Calibscope's value for the same estimator, norm and "
    "binning, and why they differ: libraries put scores on bin edges in different bins, "
    "cast to float32, clip 0 and 1, or keep a bin for a confidence of exactly 1.0. The "
    "sidebar's *Bins as in* reproduces any of them throughout the app."
)
with errors.show_errors():
    peers = calls.peers(pred, config)
    widgets.table(
        widgets.with_labels(peers.to_frame()),
        hide_index=True,
        key="estimators_peer_table",
        column_config=PEER_COLUMNS,
    )
    for note in peers.notes:
        st.caption(literal(note))

# ---------------------------------------------------------------- error against B
st.subheader("Calibration error against the number of bins", anchor=False)
n_bins_range = widgets.range_slider(
    st,
    "Numbers of bins B",
    min_value=1,
    max_value=200,
    value=(2, 50),
    key="estimators_bins_range",
    help="The range of B drawn; every B is one call of each estimator per binning.",
)
curve = None
with errors.show_errors():
    curve = calls.bins_curve(pred, config, (int(n_bins_range[0]), int(n_bins_range[1])))
    widgets.chart(calls.bins_chart(curve, comparison, norm_symbol), "estimators_bins_chart")
    dropped = "" if "debiased" in set(curve.estimator) else " (debiased has no ℓ∞ version)"
    st.caption(
        "Solid lines: equal-width bins; dotted: equal-mass bins; the wide pale lines are "
        "label-binned (a plug-in line on top of one means the two coincide). Stars: the "
        f"monotone sweep's choice b* and its estimate ECE_sweep for each binning{dropped}."
    )

# ---------------------------------------------------------------- the sweep's trace
st.subheader("The sweep's trace", anchor=False)
traces = comparison.sweep_traces
if len(traces):
    choices = comparison.sweep_choices
    st.caption(
        "The sweep tries b = 2, 3, … bins and stops at the first b whose bin accuracies "
        "decrease somewhere; b* is the last monotone b. "
        + "; ".join(
            f"{binning}: b* = {', '.join(map(str, group.b_star))}"
            for binning, group in choices.groupby("binning", sort=False)
        )
        + "."
    )
    widgets.chart(calls.sweep_chart(comparison), "estimators_sweep_chart")
else:
    st.caption("The sweep could not run on this data (too few rows).")

# ---------------------------------------------------------------- why they disagree
st.subheader("Why the estimators disagree", anchor=False)
for sentence in explain_disagreement(comparison, curve):
    st.markdown(f"- {sentence}")
with st.expander("Sources", icon=":material/menu_book:"):
    st.markdown(
        "; ".join(f"[{title}]({url})" for title, url in widgets.PAPERS.values())
        + ". Formula references per estimator are in the table's last column."
    )
