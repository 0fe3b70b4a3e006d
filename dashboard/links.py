"""Values read from the link: a malformed one is dropped before its widget reads it, and said.

A widget bound to the URL (``bind="query-params"``) is seeded from the page's link when first
drawn; :func:`check_url_value` refuses a value it cannot use and shows a warning beside the
widget, naming the parameter, until the widget's value changes; :func:`number_checker` says
which numbers a number input takes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from dashboard.text import literal

#: Session key of the URL values refused this session: widget key → (message, fallback).
_URL_NOTES = "_url_notes"


def check_url_value(
    container: Any,
    key: str,
    *,
    label: str,
    default: Any,
    valid: Callable[[str], bool],
    expected: str,
    default_label: str | None = None,
) -> None:
    """Drop a malformed URL value of a bound widget before the widget reads it, and say so.

    Streamlit seeds a widget bound to the URL (``bind="query-params"``) from the page's
    link when the widget is first drawn; a value it cannot use is dropped silently, and an
    infinite integer (``1e400``) raises. Called just before the widget, this refuses such a
    value itself and shows a warning beside the widget, naming the parameter, until the
    widget's value changes.

    Parameters
    ----------
    container : streamlit container
        Where the widget is drawn (the warning goes there).
    key : str
        Widget key and URL parameter.
    label : str
        The widget's label, for the message.
    default : object
        The widget's default, used instead.
    valid : callable
        Whether a raw URL string is a usable value.
    expected : str
        What a valid value is, in words (e.g. "a whole number from 1 to 1,000").
    default_label : str, optional
        How the control shows ``default`` (its label), for the message.
    """
    raw = st.query_params.get(key)
    notes: dict[str, tuple[str, Any]] = st.session_state.setdefault(_URL_NOTES, {})
    # only a widget not drawn yet in this session reads the link; later the URL holds what
    # the widget wrote (e.g. a model of the file loaded before, which the widget replaces)
    if raw is not None and key not in st.session_state and not valid(raw):
        drop_url_param(key)
        shown = raw if len(raw) <= 40 else raw[:40] + "…"
        notes[key] = (
            f"The link sets {key} = “{shown}”, which is not {expected}; {label} uses its "
            f"default, {default if default_label is None else default_label}, instead.",
            default,
        )
    show_url_note(container, key)


def note_url_value(key: str, message: str, fallback: Any) -> None:
    """Keep a note on a refused URL value of ``key``, shown while the widget holds ``fallback``."""
    st.session_state.setdefault(_URL_NOTES, {})[key] = (message, fallback)


def show_url_note(container: Any, key: str) -> None:
    """Show the note on a refused URL value of ``key`` until the user sets the widget."""
    notes: dict[str, tuple[str, Any]] = st.session_state.setdefault(_URL_NOTES, {})
    if key in notes:
        message, fallback = notes[key]
        if st.session_state.get(key, fallback) == fallback:
            container.warning(literal(message), icon=":material/link_off:")
        else:
            del notes[key]  # the user has set the widget since


def drop_url_param(key: str) -> None:
    """Remove a parameter from the link and from what bound widgets are seeded from."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:  # not inside a script run (bare mode)
        st.query_params.pop(key, None)
        return
    # Streamlit seeds bound widgets from the query string of the page load, a copy that
    # st.query_params does not change: drop the value there too (no public API does)
    with ctx.session_state.query_params() as qp:
        qp.remove_param(key)
        qp.set_initial_query_params_from_current()


def number_checker(
    low: float | None, high: float | None, *, integer: bool
) -> tuple[Callable[[str], bool], str]:
    """Return the check of a numeric URL value and its description, for :func:`check_url_value`.

    Parameters
    ----------
    low, high : float or None
        The widget's bounds (None: unbounded).
    integer : bool
        Whether only whole numbers are allowed.

    Returns
    -------
    (callable, str)
        Whether a raw string is a finite number in range, and those words.
    """

    def valid(raw: str) -> bool:
        try:
            x = float(raw)
        except ValueError:
            return False
        if x != x or x in (float("inf"), float("-inf")):
            return False
        if integer and x != int(x):
            return False
        return (low is None or x >= low) and (high is None or x <= high)

    kind = "a whole number" if integer else "a number"
    if low is not None and high is not None:
        words = f"{kind} from {low:,} to {high:,}"
    elif low is not None:
        words = f"{kind} of at least {low:,}"
    elif high is not None:
        words = f"{kind} of at most {high:,}"
    else:
        words = f"a finite {kind.removeprefix('a ')}"
    return valid, words


def check_url_choice(
    container: Any, key: str, label: str, options: list[str], default: str
) -> None:
    """Refuse, with a warning, a value in the link that is none of a select box's options."""
    allowed = set(options)
    check_url_value(
        container,
        key,
        label=label,
        default=default,
        valid=allowed.__contains__,
        expected="one of " + ", ".join(options),
    )


def url_code(option: Any) -> str:
    """Return how an option is written in the URL: its registry name or number, as text."""
    return str(option)


def url_lookup(
    options: list[Any], format_func: Any, aliases: dict[str, Any] | None = None
) -> dict[str, Any]:
    # codes first; a label is accepted too (links written when controls wrote labels), and
    # the labels older links carry
    lookup = {url_code(o): o for o in options}
    for o in options:
        lookup.setdefault(str(format_func(o)), o)
    for text, o in (aliases or {}).items():
        if o in options:
            lookup.setdefault(text, o)
    return lookup


def expected_options(options: list[Any]) -> str:
    codes = [url_code(o) for o in options]
    shown = ", ".join(codes[:12]) + (", …" if len(codes) > 12 else "")
    return f"one of {shown}"


def write_url(key: str, value: str | list[str] | None) -> None:
    """Set (or, for None, remove) a URL parameter kept by hand, only when it changes."""
    if value is None:
        if key in st.query_params:
            del st.query_params[key]
        return
    current = st.query_params.get_all(key) if isinstance(value, list) else st.query_params.get(key)
    if current != value:
        st.query_params[key] = value
