"""Names in a line of text: a model's, a column's or a class's, cut to a readable length."""

from __future__ import annotations

from typing import Any

__all__ = ["SHOWN_NAME_CHARS", "quoted"]

#: Characters of a name shown in a line of text (a message, the CLI's output) at most.
SHOWN_NAME_CHARS = 80


def quoted(name: Any, limit: int = SHOWN_NAME_CHARS) -> str:
    """Return ``repr(name)`` for a line of text, cut after ``limit`` characters.

    A longer name shows its start and its length (``'mmmm…' (1,000 characters)``), so one
    long model or column name cannot fill the screen.

    Examples
    --------
    >>> quoted("resnet")
    "'resnet'"
    >>> quoted("m" * 100, limit=4)
    "'mmmm…' (100 characters)"
    """
    text = str(name)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit] + '…'!r} ({len(text):,} characters)"
