"""Errors on the page: in the UI's words, never as a traceback.

A :class:`core.base.errors.CalibscopeError` is a message for the user, phrased for the dashboard
(:func:`core.base.errors.phrase` with ``"ui"``); any other exception is shown as one sentence and
its details go to the server log.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from core.base.errors import CalibscopeError, phrase
from dashboard.text import literal

__all__ = ["show_errors", "show_fault"]

_LOG = logging.getLogger("calibscope.dashboard")


@contextmanager
def show_errors(*, stop: bool = False) -> Iterator[None]:
    """Show an error raised in the block with ``st.error``, in words, never as a traceback.

    A :class:`core.base.errors.CalibscopeError` is a message for the user and is shown as it
    is; any other exception is a fault of this program, shown as one sentence naming its
    type (its message and traceback go to the server log only, as Streamlit's
    ``client.showErrorDetails = "none"`` of this app keeps them off the page). Streamlit's own ``st.stop``/``st.rerun`` pass
    through (they are not exceptions of the ``Exception`` kind).

    Parameters
    ----------
    stop : bool, default=False
        Stop the page after showing the error; otherwise the block is abandoned at the
        error and the code after the ``with`` statement runs on.
    """
    try:
        yield
    except CalibscopeError as exc:
        st.error(literal(phrase(exc, "ui")), icon=":material/error:")
        if stop:
            st.stop()
    except Exception as exc:
        show_fault(exc)
        if stop:
            st.stop()


def show_fault(exc: BaseException) -> None:
    """Say in words that a step failed unexpectedly; the details go to the server log."""
    _LOG.error("dashboard step failed", exc_info=exc)
    st.error(
        f"This step failed unexpectedly ({literal(type(exc).__name__)}), so its result is "
        "not shown. Other options or data may work; the details are in the server log.",
        icon=":material/error:",
    )
