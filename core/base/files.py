"""Writing output files: whole or not at all, and onto nothing but files.

Every file the command line and :meth:`core.report.Report.write` write goes through
:func:`write_atomically`, so that a run that fails or is interrupted midway leaves the earlier
file (or none), never a half-written one:

- a regular file (or a new one) is replaced atomically: the text is written to an unnamed
  temporary file in the same folder (Linux's ``O_TMPFILE``; elsewhere a named
  ``.NAME.PID.tmp``), which is given its name only once it is whole and then renamed over
  the target. The target keeps its permission bits; a read-only file is refused;
- a symbolic link is followed: the file it points to is replaced, the link stays a link;
- a device or a FIFO (``/dev/stdout``, ``/dev/null``, a named pipe) is written through:
  replacing it would put a regular file where the device was.

:func:`check_writable` says before any work whether a path can be written, naming the user's
path (not a temporary one). Temporary files of processes that died (a ``SIGKILL`` during the
final write, where no unnamed temporary is available) are removed by the next write.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from core.base.errors import ExportError

__all__ = ["check_writable", "write_atomically"]

#: Permission bits of a new file before the umask, as ``open(path, "w")`` gives.
_NEW_MODE = 0o666


def check_writable(path: str | os.PathLike[str]) -> None:
    """Raise unless ``path`` can be written by :func:`write_atomically`.

    Parameters
    ----------
    path : str or path-like
        The target as the user gave it.

    Raises
    ------
    ExportError
        For a folder, a missing or read-only folder, a read-only file or a socket, naming
        ``path``.
    """
    _checked(os.fspath(path))


def _checked(given: str) -> tuple[Path, os.stat_result | None]:
    """Return the resolved target and its status (None: a new file) once it is writable."""
    target = Path(os.path.realpath(given))
    try:
        st = os.stat(target)
    except FileNotFoundError:
        folder = target.parent
        if not folder.is_dir():
            where = os.path.dirname(given) or "."
            raise ExportError(
                f"Cannot write {given}: the folder {where} does not exist; create it first."
            ) from None
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ExportError(f"Cannot write {given}: its folder is not writable.") from None
        return target, None
    except OSError as exc:
        raise ExportError(f"Cannot write {given}: {_reason(exc)}.") from None
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise ExportError(f"{given} is a folder; give the name of the file to write.")
    if stat.S_ISSOCK(mode):
        raise ExportError(f"Cannot write {given}: it is a socket, not a file.")
    if not stat.S_ISREG(mode):  # a device or a FIFO: written through
        if not os.access(target, os.W_OK):
            raise ExportError(f"Cannot write {given}: permission denied.")
        return target, st
    # the write bits, not only access(): root may write any file, but a file made
    # read-only says it is not to be replaced
    if not mode & 0o222 or not os.access(target, os.W_OK):
        raise ExportError(
            f"Cannot write {given}: the file is read-only; make it writable or write to "
            "another file."
        )
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise ExportError(
            f"Cannot write {given}: its folder is not writable, so the file cannot be "
            "replaced whole."
        )
    return target, st


def write_atomically(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path``: a file whole or not at all, a device through.

    Parameters
    ----------
    path : str or path-like
        The target; its folder must exist. A symbolic link is followed.
    text : str
        The content, written as UTF-8.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ExportError
        When the target cannot be written (see :func:`check_writable`) or the write fails
        (a full disk), naming ``path``; a file is then left as it was.

    Notes
    -----
    The temporary file is renamed over the target (:func:`os.replace`, atomic on one file
    system), so readers see the old content or the new.
    """
    given = os.fspath(path)
    target, st = _checked(given)
    data = text.encode("utf-8")
    try:
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(target, "wb") as out:  # a device or a FIFO
                out.write(data)
        else:
            _replace(target, data, st)
    except OSError as exc:
        raise ExportError(f"Cannot write {given}: {_reason(exc)}.") from None
    return Path(given)


def _reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).rstrip(".").lower() if exc.errno else str(exc)


def _replace(target: Path, data: bytes, st: os.stat_result | None) -> None:
    """Write ``data`` to a temporary file beside ``target`` and rename it over ``target``."""
    folder = target.parent
    tmp = folder / f".{target.name}.{os.getpid()}.tmp"
    _remove_stale(folder, target.name)
    try:
        if not _write_unnamed(folder, tmp, data, st):
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _NEW_MODE)
            try:
                _fill(fd, data, st)
            finally:
                os.close(fd)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _fill(fd: int, data: bytes, st: os.stat_result | None) -> None:
    """Write ``data``; give the file the target's permission bits (and owner, where allowed)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    if st is not None:
        os.fchmod(fd, stat.S_IMODE(st.st_mode))
        if st.st_uid != os.geteuid() or st.st_gid != os.getegid():
            try:
                os.fchown(fd, st.st_uid, st.st_gid)
            except OSError:
                pass


def _write_unnamed(folder: Path, tmp: Path, data: bytes, st: os.stat_result | None) -> bool:
    """Write ``data`` to an unnamed file in ``folder`` and name it ``tmp`` once whole.

    Linux's ``O_TMPFILE``: a run killed while writing leaves nothing behind. False where
    the platform or the file system has no unnamed files (nothing was written).
    """
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):
        return False
    try:
        fd = os.open(folder, flag | os.O_WRONLY, _NEW_MODE)
    except OSError as exc:  # a file system without it
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return False
        raise
    try:
        _fill(fd, data, st)
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            # a destination folder descriptor makes os.link call linkat with
            # AT_SYMLINK_FOLLOW, which links the open file itself, not the /proc entry
            os.link(f"/proc/self/fd/{fd}", tmp.name, dst_dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.EXDEV, errno.EPERM, errno.ENOENT, errno.EOPNOTSUPP):
                return False
            raise
        finally:
            os.close(dir_fd)
    finally:
        os.close(fd)
    return True


def _remove_stale(folder: Path, name: str) -> None:
    """Remove ``.NAME.PID.tmp`` files of ``name`` left by processes that no longer run."""
    prefix, suffix = f".{name}.", ".tmp"
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        pid = entry[len(prefix) : -len(suffix)]
        if not (entry.startswith(prefix) and entry.endswith(suffix) and pid.isdigit()):
            continue
        if int(pid) == os.getpid() or _alive(int(pid)):
            continue
        try:
            (folder / entry).unlink()
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
