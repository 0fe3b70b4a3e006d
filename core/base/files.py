"""Writing output files: whole or not at all.

Every file the command line and :meth:`core.report.Report.write` write goes through
:func:`write_atomically`, so that a run that fails or is interrupted midway leaves the earlier
file (or none), never a half-written one.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder.

    Parameters
    ----------
    path : str or path-like
        The target; its folder must exist.
    text : str
        The content, written as UTF-8.

    Returns
    -------
    pathlib.Path
        The written path.

    Notes
    -----
    The temporary file is renamed over the target (:func:`os.replace`, atomic on one file
    system), so readers see the old content or the new, and an error leaves the old file.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
