"""Sections of the Data page: the column mapping of an upload and the lint report."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import state, widgets
from dashboard.text import literal

UPLOAD_TYPES = ("csv", "parquet", "pq", "txt")

SEVERITY_ICONS = {"error": "🛑 error", "warning": "⚠️ warning", "info": "ℹ️ info"}


def _file_columns(uploaded: Any) -> list[str]:
    """Column names of an uploaded table (header only), for the mapping select boxes."""
    import io

    import pandas as pd

    raw = uploaded.getvalue()
    try:
        if uploaded.name.lower().endswith((".parquet", ".pq")):
            import pyarrow.parquet as pq

            return list(pq.read_schema(io.BytesIO(raw)).names)
        return [str(c) for c in pd.read_csv(io.BytesIO(raw), nrows=0).columns]
    except (ValueError, OSError, UnicodeError):
        return []


#: The control of the Data page that sets each loader option a ColumnError asks for.
MAPPING_CONTROLS = {
    "label_column": "Label column (below)",
    "prob_columns": "Probability columns (below)",
    "positive_class": "Positive class (below)",
    "labels": "the labels file (the uploader above)",
}


def column_mapping(uploaded: Any) -> dict[str, Any]:
    """Column-mapping controls, fed to the loader; opened when it cannot infer the columns.

    Returns
    -------
    dict
        Loader options (``label_column``, ``prob_columns``, ``positive_class``,
        ``renormalize``, ``drop_missing``); empty means "infer everything".
    """
    if uploaded is None:
        return {}
    problem = state.column_problem(uploaded)
    columns = list(problem.columns) if problem and problem.columns else _file_columns(uploaded)
    with st.expander("Column mapping", expanded=state.upload_failed(), icon=":material/tune:"):
        if problem is not None and state.upload_failed():
            control = MAPPING_CONTROLS.get(problem.argument, problem.argument)
            st.warning(
                f"Set **{control}**"
                + (
                    f": one of {literal(', '.join(problem.candidates))}."
                    if problem.candidates
                    else "."
                ),
                icon=":material/help:",
            )
        st.caption(
            "Columns are inferred from their names (label / y / target / class …; the other "
            "numeric columns are probabilities). Set them here when inference fails."
        )
        label = st.selectbox(
            "Label column", ["", *columns], format_func=lambda c: c or "(infer)", key="map_label"
        )
        probs = st.multiselect(
            "Probability columns",
            [c for c in columns if c != label],
            key="map_probs",
            placeholder="(infer)",
            help="One column for P(y=1) of a binary problem, or one per class, in class order.",
        )
        if problem is not None and problem.argument == "positive_class" and problem.candidates:
            positive = st.selectbox(
                "Positive class (the value the probability column is the probability of)",
                ["", *problem.candidates],
                format_func=lambda c: c or "(choose)",
                key="map_positive_choice",
            )
        else:
            positive = st.text_input(
                "Positive class (binary labels given as two values)",
                key="map_positive",
                help="The label value that the probability column is the probability of.",
            )
        renormalize = st.checkbox(
            "Renormalise rows that do not sum to 1",
            key="map_renormalize",
            help="Otherwise such rows are refused with an explanation.",
        )
        drop_missing = st.checkbox("Drop rows with missing values", key="map_drop_missing")
    out: dict[str, Any] = {}
    if label:
        out["label_column"] = label
    if probs:
        out["prob_columns"] = list(probs)
    if positive and positive.strip():
        out["positive_class"] = positive.strip()
    if renormalize:
        out["renormalize"] = True
    if drop_missing:
        out["drop_missing"] = True
    return out


def lint_report(report: Any, source: str) -> None:
    """The lint report of the loaded data as a table with severity icons.

    Parameters
    ----------
    report : core.data.LintReport
        The findings.
    source : str
        What the data came from: the report names it, so that it is never read as the
        verdict on another file (e.g. one just refused).
    """
    findings = list(report)
    name = literal(source)
    if not findings:
        st.success(f"The lint found no problems in {name}.", icon=":material/check_circle:")
        return
    n_err = sum(f.severity == "error" for f in findings)
    n_warn = sum(f.severity == "warning" for f in findings)
    n_info = len(findings) - n_err - n_warn
    label = f"Lint report of {name}: {n_err} error(s), {n_warn} warning(s), {n_info} note(s)"
    with st.expander(label, expanded=bool(n_err or n_warn), icon=":material/rule:"):
        frame = report.to_frame("ui")
        frame["severity"] = frame["severity"].map(SEVERITY_ICONS)
        widgets.table(
            frame[["severity", "code", "message", "columns", "rows", "count"]],
            hide_index=True,
            column_config={
                "message": st.column_config.TextColumn("message", width="large"),
                "rows": st.column_config.TextColumn("rows (0-based)"),
            },
            key="lint_table",
        )
