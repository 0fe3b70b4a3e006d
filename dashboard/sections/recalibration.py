"""Sections of the Recalibration page: the controls of each recalibrator's settings."""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.recalibration import RECALIBRATORS
from dashboard import widgets


def recalibrator_settings(summary: Any) -> dict[str, dict[str, Any]]:
    """Controls of every recalibrator's settings (its registry entry's ``settings``).

    Each control is keyed ``recal_<method>_<option>`` and bound to the URL; a setting that
    applies only with another setting's value (e.g. a target of one mode) is passed only
    then.

    Parameters
    ----------
    summary : core.stats.summary.DataSummary
        The data's summary, for settings that start from the data.

    Returns
    -------
    dict
        Method name → options to pass.
    """

    out: dict[str, dict[str, Any]] = {}
    for info in RECALIBRATORS:
        if not info.settings:
            continue
        st.markdown(f"**{info.label}**")
        cols = st.columns(len(info.settings))
        values: dict[str, Any] = {}
        for col, setting in zip(cols, info.settings, strict=True):
            key = f"recal_{info.name}_{setting.name}"
            start = setting.suggest(summary) if setting.suggest else setting.default
            if start is None:
                start = info.options[setting.name].default
            if setting.choices is not None:
                options = list(setting.choices)
                values[setting.name] = widgets.choice(
                    col,
                    setting.label,
                    options,
                    default=start,
                    format_func=setting.choices.get,
                    key=key,
                    help=setting.help or None,
                )
            else:
                values[setting.name] = widgets.number_input(
                    col,
                    setting.label,
                    min_value=setting.low,
                    max_value=setting.high,
                    value=float(start),
                    step=setting.step,
                    key=key,
                    help=setting.help or None,
                )
        out[info.name] = {s.name: values[s.name] for s in info.settings if s.applies(values)}
    return out
