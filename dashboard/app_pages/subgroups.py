"""Subgroups page: calibration per subgroup on identical bins, and per time window."""

from __future__ import annotations

import dataclasses

import streamlit as st

from core.analyses.model_comparison import metric_choices, parse_metric
from core.analyses.subgroups import WINDOW_UNITS
from core.data.groups import MIN_GROUP_ROWS, group_columns
from core.stats.lenses import lens_components
from dashboard import cache, calls, errors, state, widgets
from dashboard.text import literal

ROWS = "rows"  # windows of N rows
_COLUMNS = {
    "group": st.column_config.TextColumn("group"),
    "n": st.column_config.NumberColumn("n", format="%d"),
    "value": st.column_config.NumberColumn("value"),
    "low": st.column_config.NumberColumn("low"),
    "high": st.column_config.NumberColumn("high"),
    "gap": st.column_config.NumberColumn("gap to all rows"),
    "gap_low": st.column_config.NumberColumn("gap low"),
    "gap_high": st.column_config.NumberColumn("gap high"),
    "significant": st.column_config.CheckboxColumn("gap significant"),
    "small": st.column_config.CheckboxColumn("too small"),
    "note": st.column_config.TextColumn("note"),
}

st.title("Subgroups", anchor=False)
st.caption(
    "Calibration per subgroup, as a fairness review asks for it: every group measured on the "
    "**same bins** (those of all rows), with bootstrap intervals, each group's gap to "
    "all rows with a **paired** interval (a resample of all rows holds each group's resampled "
    "rows, so both values come from the same draw), the reliability curves overlaid, and a "
    "stratified χ² test of equal calibration across groups. Group by the `group` column or any "
    "column of the file, and their intersections. **Over time** cuts a time column into "
    "windows. Lens, binning, bins, resamples, level and seed come from the sidebar."
)

pred = state.require_predictions()
config = state.require_binned_lens(state.require_config(), "measure groups on identical bins")

columns = list(group_columns(pred))
if not columns:
    state.point_to_data_page(
        "These predictions have no column to group by: load a file with a `group` column or "
        "any other column (a sex, an age band, a site, a date), e.g. the bundled binary sample."
    )
    st.stop()

choices = [k for k in metric_choices(config.lens) if parse_metric(k).kind == "shared-bins"]
default_metric = parse_metric(config.estimator, default_norm=config.norm).key
if default_metric not in choices:
    default_metric = choices[0]
c1, c2, c3 = st.columns([3, 2, 1])
metric = widgets.choice(
    c2,
    "Estimator",
    choices,
    default=default_metric,
    format_func=lambda k: parse_metric(k).label,
    key="subgroups_metric",
    help="Estimators that read fixed bins (every group is measured on the bins of all rows); "
    "the sidebar's estimator by default.",
)
min_rows = widgets.number_input(
    c3,
    "Minimum group size",
    1,
    10**9,
    MIN_GROUP_ROWS,
    key="subgroups_min_rows",
    step=1,
    help="Groups with fewer rows are shown but not judged: not the worst group, not tested "
    f"({MIN_GROUP_ROWS} by default, as `calibscope check`).",
)
by = widgets.choices(
    c1,
    "Group by",
    columns,
    default=columns[:1],
    key="subgroups_by",
    help="One column, or several: their intersections are the groups (e.g. "
    "“sex=F & age=old”). The `group` column and every other column of the file.",
)
# the sidebar's headline estimator does not enter: the page's own choice does
config = dataclasses.replace(config, estimator="plugin")
tab_groups, tab_time = st.tabs(["Subgroups", "Over time"])


def _bootstrap_config(job: str, n_components: int) -> object:
    """The config with resamples when the bootstrap may run now, else without."""
    if config.n_resamples == 0:
        st.caption("Bootstrap intervals are off (0 resamples in the sidebar).")
        return config
    work = pred.n * config.n_resamples * n_components
    ok = cache.bootstrap_gate(
        (job, cache.data_key(pred), config),
        work,
        what=f"{pred.n:,} rows × {config.n_resamples:,} resamples",
        button_key=f"{job}_bootstrap",
    )
    return config if ok else calls.without_resamples(config)


n_components = lens_components(config.lens, pred.n_classes)

with tab_groups:
    if not by:
        st.info("Pick at least one column to group by.", icon=":material/info:")
    else:
        run_config = _bootstrap_config("subgroups", n_components)
        with errors.show_errors():
            result = calls.subgroups(
                pred, run_config, by=tuple(by), min_rows=int(min_rows), estimator=metric
            )
            worst = result.worst_sentence
            if result.worst is not None and result.row(result.worst).significant:
                st.warning(literal(worst), icon=":material/warning:")
            else:
                st.info(literal(worst), icon=":material/info:")
            test_text = result.test_sentence
            st.markdown(
                literal(test_text)
                + " — H₀: within each bin the mean residual y − s is the same in every group "
                "(one calibration curve for all groups); `T = Σ_b (n_b − 1) · Σ_g n_gb (r̄_gb − "
                "r̄_b)² / Σ_{i∈b} (r_i − r̄_b)²`, χ² with `Σ_b (G_b − 1)` degrees of freedom "
                "(docs/formulas.md, “Subgroups”)."
            )
            if result.small:
                shown = ", ".join(result.small[:10]) + (" …" if len(result.small) > 10 else "")
                st.warning(
                    f"Too small to judge: {len(result.small)} group(s) with fewer than "
                    f"{result.min_rows} rows ({literal(shown)}). They are shown, but "
                    "neither ranked nor tested; their intervals say little.",
                    icon=":material/groups:",
                )
            frame = result.to_frame()
            widgets.table(
                frame,
                hide_index=True,
                key="subgroups_table",
                signed=("gap", "gap_low", "gap_high"),
                column_config=_COLUMNS,
            )
            component = 0
            if len(result.component_names) > 1:
                component = widgets.choice(
                    st,
                    "Class",
                    range(len(result.component_names)),
                    format_func=lambda c: result.component_names[c],
                    key="subgroups_component",
                )
            overlay, forest = calls.subgroup_charts(result, int(component))
            left, right = st.columns([3, 2])
            with left:
                st.markdown("**Reliability per group** — on the bins of all rows")
                widgets.chart(overlay, "subgroups_overlay", container=left)
            with right:
                st.markdown(f"**{literal(result.metric.label)}** per group")
                widgets.chart(forest, "subgroups_forest", container=right)
            with st.expander("What the numbers rest on"):
                for note in result.notes:
                    st.markdown(f"- {literal(note)}")

with tab_time:
    t1, t2, t3, t4 = st.columns([2, 2, 1, 1])
    time_choices = ["(file order)"] + [c for c in getattr(pred, "extra", {})]
    time_column = widgets.choice(
        t1,
        "Time column",
        time_choices,
        key="windows_time",
        help="A column of dates or timestamps (or any column to order the rows by, for "
        "windows of N rows); “(file order)” takes the rows as they come.",
    )
    units = [*WINDOW_UNITS, ROWS]
    unit = widgets.choice(
        t2,
        "Windows",
        units,
        default=units[2] if time_column == "(file order)" else units[0],
        format_func={"day": "one day", "week": "one week (from Monday)", ROWS: "N rows"}.get,
        key="windows_unit",
    )
    every_rows = widgets.number_input(
        t3, "N rows", 10, 10**9, max(10, pred.n // 10), key="windows_rows", step=1
    )
    threshold = widgets.number_input(
        t4,
        "Threshold",
        0.0,
        1.0,
        0.05,
        key="windows_threshold",
        step=0.01,
        format="%.3f",
        help="The largest acceptable error: the first window over it is named.",
    )
    run_config = _bootstrap_config("windows", n_components)
    with errors.show_errors():
        win = calls.windows(
            pred,
            run_config,
            time=None if time_column == "(file order)" else time_column,
            every=int(every_rows) if unit == ROWS else unit,
            threshold=float(threshold),
            min_rows=int(min_rows),
            estimator=metric,
        )
        if win.first_breach is not None:
            st.warning(literal(win.breach_sentence), icon=":material/warning:")
        else:
            st.success(literal(win.breach_sentence), icon=":material/check_circle:")
        widgets.chart(calls.window_chart(win), "windows_chart")
        widgets.table(
            win.result.to_frame(), hide_index=True, key="windows_table", column_config=_COLUMNS
        )
