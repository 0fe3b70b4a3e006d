"""Sections of the Reliability page: the diagram, the headline and the bootstrap's gate.

Each lays out a result of :mod:`dashboard.calls` (no calculation, no figure building here).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import streamlit as st

from core.analyses.analysis import CONSISTENCY_BAND_MAX_BINS
from core.base.numbers import COLUMN_LABELS, format_interval, format_number
from core.estimators import ESTIMATORS
from core.figures.diagrams import DIAGRAMS
from core.stats.intervals import (
    level_words,
    with_outside_note,
)
from dashboard import cache, calls, errors, links, widgets
from dashboard.text import literal


def diagram_choice() -> str:
    """Render the Reliability page's choice of diagram; return its registry name.

    The control shows the diagrams' labels and the URL key ``diagram`` holds their names
    (a bound widget would write the labels into the link), so the link is kept by hand.
    """

    options = DIAGRAMS.names()
    links.check_url_choice(st, "diagram", "Diagram", options, options[0])
    raw = st.query_params.get("diagram")
    if "diagram" not in st.session_state and raw in options:
        st.session_state["diagram"] = raw
    labels = widgets.registry_labels(DIAGRAMS)
    choice = st.segmented_control(
        "Diagram",
        options,
        default=None if "diagram" in st.session_state else options[0],
        required=True,
        format_func=labels.get,
        key="diagram",
        on_change=_diagram_to_url,
        args=(options[0],),
        help="\n".join(f"- **{e.label}**: {e.description}" for e in DIAGRAMS),
    )
    return choice if choice in options else options[0]


def _diagram_to_url(default: str) -> None:
    chosen = st.session_state.get("diagram")
    if chosen in (None, default):
        st.query_params.pop("diagram", None)
    else:
        st.query_params["diagram"] = chosen


def binned_diagram(pred: Any, result: Any, config: Any) -> None:
    """Lay out the binned reliability diagram of an analysis with its captions."""
    interval = f"{config.confidence_level:.0%} {widgets.interval_label(config.interval_method)}"
    if config.lens == "classwise":
        st.markdown(
            f"**Classwise reliability** — one panel per class, per-bin {interval} intervals"
        )
    # the classwise grid has no count panel
    log = config.lens != "classwise" and widgets.log_count_toggle("reliability_log_counts")
    fig = calls.reliability_chart(pred, result.config, interval=interval, log=log)
    widgets.chart(fig, "reliability_chart", filename="reliability")
    st.caption(widgets.bin_convention(config))
    bands = [c.band for c in result.components if c.band is not None]
    if bands:
        outside = int(result.bin_table["outside_band"].fillna(False).astype(bool).sum())
        st.caption(
            ("Band columns of the bin table" if config.lens == "classwise" else "Shaded")
            + f": the {config.confidence_level:.0%} consistency band (Bröcker & Smith 2007). If "
            "the model were calibrated, each label would be y* ~ Bernoulli(s) for its own score "
            f"s; redrawing the labels {bands[0].n_resamples:,} times with the scores and bins "
            f"fixed (seed {config.seed}), the band holds the central "
            f"{config.confidence_level:.0%} of each bin's redrawn observed frequency. A point "
            f"outside it ({outside} bin(s) here, flagged in the table) is evidence of "
            "miscalibration in that bin — pointwise, one bin at a time, not for all bins at once."
        )
    elif config.consistency_band:
        st.caption(
            f"No consistency band: it is drawn for up to {CONSISTENCY_BAND_MAX_BINS:,} bins "
            "(the discrete binning gives one bin per distinct score)."
        )


def diagram(pred: Any, config: Any, kind: str) -> None:
    """Lay out a reliability diagram of another kind: figure, one-sentence summary, table."""
    with errors.show_errors():
        drawn = calls.diagram(pred, config, kind)
        widgets.chart(calls.diagram_chart(pred, config, kind), f"{kind}_chart", filename=kind)
        st.caption(literal(drawn.summary))
        frame = drawn.table()
        if frame is not None:
            widgets.table(frame, hide_index=True, key=f"{kind}_table")


BIN_COLUMNS = {
    "count": st.column_config.NumberColumn("count", format="%d"),
    **{
        name: st.column_config.NumberColumn(COLUMN_LABELS[name])
        for name in ("lower", "upper", "mean_score", "mean_label", "gap", "low", "high")
        + ("band_low", "band_high")
    },
    "outside_band": st.column_config.CheckboxColumn(
        COLUMN_LABELS["outside_band"],
        help="Observed frequency outside the consistency band (pointwise).",
    ),
}

METRIC_COLUMNS = {
    "metric": None,  # the registry code: the label says it in words
    "label": st.column_config.TextColumn(COLUMN_LABELS["label"]),
    "value": st.column_config.NumberColumn("value"),
    "low": st.column_config.NumberColumn(COLUMN_LABELS["low"]),
    "high": st.column_config.NumberColumn(COLUMN_LABELS["high"]),
    "note": st.column_config.TextColumn("note", width="medium"),
}


def headline(result: Any, config: Any) -> Any:
    """Metric tiles: the headline estimate, n, bins and the seed.

    Returns
    -------
    streamlit.delta_generator.DeltaGenerator
        An empty slot under the estimate for its bootstrap interval.
    """

    c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
    c1.metric(
        f"{ESTIMATORS.get(config.estimator).label} · {widgets.NORM_SYMBOLS[widgets.norm_choice(config.norm)]}",
        format_number(result.headline.value),
    )
    slot = c1.empty()
    c2.metric("Rows (n)", f"{result.n:,}")
    c3.metric("Bins", ", ".join(sorted({str(c.bins.n_bins) for c in result.components})) or "—")
    c4.metric("Seed", config.seed)
    return slot


def headline_interval(slot: Any, result: Any, config: Any) -> None:
    """Fill the headline tile's caption with its bootstrap interval."""
    boot = result.headline_interval
    if boot is None:
        return

    ci = boot.confidence_interval
    text = (
        f"{level_words(config.confidence_level, boot.method)} bootstrap interval "
        f"{format_interval(ci.low, ci.high)} "
        f"({config.n_resamples:,} resamples, seed {config.seed})"
    )
    slot.caption(with_outside_note(text, result.headline.value, ci.low, ci.high, boot.method))


def bootstrap_gate(pred: Any, config: Any) -> Any:
    """Return the analysis with bootstrap intervals, and offer the exact bootstrap at large n.

    The analysis's own rule (:func:`core.analyses.analysis.bootstrap_mode`) bootstraps rows while
    that is quick and cells beyond (the fast scheme of :mod:`core.inference.cells`); then a button runs
    the exact bootstrap of every metric, with a progress bar, and keeps it.

    Returns
    -------
    ReliabilityAnalysis or None
        The analysis with intervals, or None when they were not computed.
    """

    if config.n_resamples == 0:
        st.caption("Bootstrap intervals are off (0 resamples in the sidebar).")
        return None
    shared = (
        f"{widgets.interval_words(config.confidence_level, config.bootstrap_interval)} from "
        f"{config.n_resamples:,} resamples shared by all metrics (seed {config.seed})"
    )
    if calls.bootstrap_kind(pred, config) == "exact":
        st.caption(f"Every estimator on the same bins, with {shared}.")
        with errors.show_errors():
            return calls.analyze(pred, config)
        return None
    exact = dataclasses.replace(config, bootstrap="exact")
    job = ("exact-bootstrap", cache.data_key(pred), exact)
    if cache.asked(job):
        st.caption(f"Every estimator on the same bins, with {shared}: the exact bootstrap.")
        with errors.show_errors():
            return calls.exact_analysis(job, pred, exact)
        return None
    st.caption(
        f"Every estimator on the same bins, with {shared} of the **cells** of rows with equal "
        "bins and outcomes (the fast bootstrap for large data: exact counts, a normal term for "
        "the scores within a cell). Estimators that need the rows of each bin show no interval "
        "here."
    )
    widgets.ask_button(
        st,
        "Exact bootstrap of every metric",
        job,
        key="run_bootstrap",
        help="Resamples the rows themselves, with a progress bar; the result is kept for this "
        "data and these options.",
    )
    with errors.show_errors():
        return calls.analyze(pred, config)
    return None


def explain_estimator(config: Any) -> None:
    """What the headline estimator computes, its formula and the papers behind it."""

    entry = ESTIMATORS.get(config.estimator)
    with st.expander("What is computed, and which formula", icon=":material/functions:"):
        st.markdown(
            f"**{entry.label}** ({entry.name}). {entry.description}\n\n"
            + (f"Formula: {entry.formula}\n\n" if entry.formula else "")
            + "With bins b = 1…B holding n_b predictions, mean score s̄_b and observed "
            "frequency ȳ_b, the plug-in ℓp calibration error is "
            "(Σ_b (n_b/n)·|ȳ_b − s̄_b|^p)^(1/p); ℓ∞ is the largest gap over non-empty bins. "
            "The classwise lens computes it per class and combines the classes with their "
            "weights as (Σ_k w_k CE_k^p)^(1/p)."
        )
        st.markdown(
            "Sources: "
            + "; ".join(f"[{title}]({url})" for title, url in widgets.PAPERS.values())
            + ". Per-bin intervals: Wilson score or Clopper–Pearson exact binomial intervals "
            "for ȳ_b."
        )
