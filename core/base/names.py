r"""Names as text shows them: cut to a readable length, their direction controls written out.

A name read from the data (a model, a group, a class) may hold Unicode's bidirectional
controls: a model named ``"\u202eexe.fdp\u202c"`` would show as "pdf.exe" and reorder the
sentence around it. :func:`visible` writes them out as ``\u202e``; the loaders apply it to
every model, split, group and class name, so pages, figures, the report, CSV and JSON show
the name as stored, as its bytes read.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BIDI_CONTROLS", "SHOWN_NAME_CHARS", "quoted", "visible"]

#: Unicode's embedding, override and isolate controls (U+202A–U+202E, U+2066–U+2069).
BIDI_CONTROLS = frozenset(chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)])
_WRITTEN_OUT = str.maketrans({c: f"\\u{ord(c):04x}" for c in BIDI_CONTROLS})


def visible(name: str) -> str:
    r"""Return ``name`` with its bidirectional controls written out (``\u202e``).

    Examples
    --------
    >>> visible("\u202eexe.fdp\u202c")
    '\\u202eexe.fdp\\u202c'
    """
    return name.translate(_WRITTEN_OUT)


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
    if len(text) > limit:
        return f"{_repr(text[:limit] + '…')} ({len(text):,} characters)"
    return _repr(text)


def _repr(text: str) -> str:
    # a written-out control (visible) shows as \u202e, not with repr's doubled backslash
    return repr(text).replace("\\\\u", "\\u")
