"""Outputs replace nothing but files: ``-o``, ``--junit`` and ``Report.write`` on every kind of target.

A regular file is replaced whole (its mode kept, a read-only one refused), a symbolic link's
file is written (the link stays), devices and FIFOs are written through, ``-`` is standard
output, and a path that cannot be written is refused before any work, naming the user's path.
Nothing is left for the user to clean: no temporary file after a failure or a ``SIGKILL``.
"""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import core.base.files as files
import core.cli as cli
from core.base.errors import ExportError
from core.base.files import check_writable, write_atomically
from core.cli import main

ROOT = Path(__file__).resolve().parents[1]
ROWS = "p,label\n0.2,0\n0.7,1\n0.4,0\n0.9,1\n"


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(ROWS)
    return path


def _one_error(capsys, *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == cli.EXIT_ERROR, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and ".tmp" not in err
    return lines[0]


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ------------------------------------------------------------------------- regular files


def test_a_file_is_replaced_whole_keeping_its_mode(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    target.chmod(0o640)
    assert write_atomically(target, "new ü") == target
    assert target.read_text(encoding="utf-8") == "new ü"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _names(tmp_path) == ["out.txt"]


def test_a_new_file_gets_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        write_atomically(tmp_path / "new.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640


def test_a_read_only_file_is_refused_and_kept(capsys, data, tmp_path):
    target = tmp_path / "ro.txt"
    target.write_text("precious")
    target.chmod(0o444)
    line = _one_error(capsys, "lint", str(data), "-o", str(target))
    assert (
        line == f"calibscope: error: Cannot write {target}: the file is read-only; make it "
        "writable or write to another file."
    )
    assert target.read_text() == "precious"
    assert stat.S_IMODE(target.stat().st_mode) == 0o444


def test_a_symlink_keeps_pointing_at_the_written_file(capsys, data, tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("precious")
    link = tmp_path / "link.txt"
    link.symlink_to(real.name)
    assert main(["lint", str(data), "-o", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == "real.txt"
    assert "4 rows" in real.read_text()
    assert _names(tmp_path) == ["link.txt", "real.txt", "t.csv"]


# ------------------------------------------------------------------------- devices, FIFOs, -


def test_a_fifo_is_written_through(data, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert main(["lint", str(data), "-o", str(fifo)]) == 0
    reader.join(10)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert b"4 rows" in got[0]


def test_dev_null_stays_a_device(data):
    assert main(["metrics", str(data), "-o", "/dev/null"]) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this platform")
def test_a_full_device_is_one_line_and_stays_a_device(capsys, data):
    line = _one_error(capsys, "metrics", str(data), "-o", "/dev/full")
    assert line == "calibscope: error: Cannot write /dev/full: no space left on device."
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_socket_is_refused(capsys, data, tmp_path):
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        line = _one_error(capsys, "lint", str(data), "-o", str(path))
    finally:
        server.close()
    assert "it is a socket, not a file" in line


def test_dash_is_standard_output(capsys, data, tmp_path):
    assert main(["lint", str(data), "-o", "-"]) == 0
    assert "4 rows" in capsys.readouterr().out
    assert not (Path.cwd() / "-").exists()
    junit = ["check", str(data), "--max-error", "0.9", "--junit", "-", "-o"]
    assert main([*junit, str(tmp_path / "c.txt")]) == 0
    assert capsys.readouterr().out.startswith("<?xml")
    assert (tmp_path / "c.txt").read_text().startswith("PASS:")


# ------------------------------------------------------------------------- errors before work


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "{data}", "--max-error", "0.5", "--junit", "no/such/dir/j.xml"],
        ["report", "{data}", "-o", "no/such/dir/r.html"],
        ["metrics", "{data}", "-o", "no/such/dir/m.txt"],
    ],
)
def test_a_missing_folder_is_refused_before_any_work(capsys, monkeypatch, data, argv):
    def never(*args, **kwargs):
        raise AssertionError("the data were read before the output was checked")

    monkeypatch.setattr(cli, "_load", never)
    monkeypatch.setattr(cli, "_runner", never)
    argv = [a.format(data=data) for a in argv]
    line = _one_error(capsys, *argv)
    where = argv[-1]
    assert line == (
        f"calibscope: error: Cannot write {where}: the folder {os.path.dirname(where)} does "
        "not exist; create it first."
    )


def test_one_file_for_output_and_junit_is_refused(capsys, data, tmp_path):
    out = tmp_path / "x.txt"
    base = ["check", str(data), "--max-error", "0.5"]
    line = _one_error(capsys, *base, "-o", str(out), "--junit", str(out))
    assert "-o and --junit both name" in line
    link = tmp_path / "alias.txt"
    out.write_text("kept")
    link.symlink_to(out)
    assert "both name" in _one_error(capsys, *base, "-o", str(out), "--junit", str(link))
    assert out.read_text() == "kept"
    assert "standard output" in _one_error(capsys, *base, "--junit", "-")


def test_check_writable_names_the_given_path(tmp_path):
    with pytest.raises(ExportError, match=r"^Cannot write nowhere/x.txt: the folder nowhere"):
        check_writable("nowhere/x.txt")
    with pytest.raises(ExportError, match="is a folder"):
        check_writable(tmp_path)
    check_writable(tmp_path / "fine.txt")  # a new file in a writable folder


# ------------------------------------------------------------------------- nothing left behind


@pytest.mark.parametrize("unnamed", [True, False], ids=["O_TMPFILE", "named-temporary"])
def test_a_failed_write_leaves_the_old_file_and_nothing_else(monkeypatch, tmp_path, unnamed):
    if not unnamed:
        monkeypatch.setattr(files, "_write_unnamed", lambda *args: False)
    target = tmp_path / "out.txt"
    target.write_text("earlier")
    real_write = os.write

    def failing(fd, data):
        real_write(fd, bytes(data[:3]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "write", failing)
    with pytest.raises(ExportError, match=r"Cannot write .*out.txt: no space left on device"):
        write_atomically(target, "a longer new text")
    assert target.read_text() == "earlier"
    assert _names(tmp_path) == ["out.txt"]


def test_the_unnamed_temporary_is_used_on_linux(monkeypatch, tmp_path):
    if not hasattr(os, "O_TMPFILE"):
        pytest.skip("no O_TMPFILE on this platform")
    seen: list[str] = []
    real_open = os.open

    def spy(path, flags, *args, **kwargs):
        seen.append(str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(files.os, "open", spy)
    write_atomically(tmp_path / "out.txt", "x")
    # the unnamed file is opened on the folder; no named temporary is created
    assert str(tmp_path) in seen and not any(s.endswith(".tmp") for s in seen)


_SLOW_WRITER = """
import os, sys, time
import core.base.files as files
real = os.write
def slow(fd, data):
    real(fd, bytes(data[:10]))
    sys.stdout.write("writing\\n"); sys.stdout.flush()
    time.sleep(60)
files.os.write = slow
if sys.argv[2] == "named":
    files._write_unnamed = lambda *args: False
files.write_atomically(sys.argv[1], "x" * 100_000)
"""


@pytest.mark.parametrize("mode", ["unnamed", "named"])
def test_a_sigkill_mid_write_leaves_nothing_to_clean(tmp_path, mode):
    target = tmp_path / "out.txt"
    target.write_text("earlier")
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_WRITER, str(target), mode],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline() == "writing\n"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
    assert target.read_text() == "earlier"
    left = [n for n in _names(tmp_path) if n != "out.txt"]
    if mode == "unnamed" and hasattr(os, "O_TMPFILE"):
        assert left == []
    # the next write removes a dead process's temporary
    write_atomically(target, "new")
    assert target.read_text() == "new"
    assert _names(tmp_path) == ["out.txt"]


def test_a_live_process_temporary_is_kept(tmp_path):
    # another running writer's temporary is not touched (this process's parent is alive)
    other = tmp_path / f".out.txt.{os.getppid()}.tmp"
    other.write_text("in progress")
    dead = tmp_path / ".out.txt.999999999.tmp"
    dead.write_text("stale")
    write_atomically(tmp_path / "out.txt", "x")
    assert other.exists() and not dead.exists()


# ------------------------------------------------------------------------- every kind of target


KINDS = ["new", "regular", "read-only", "symlink", "dangling-link", "folder", "missing-folder"]
KINDS += ["dev-null", "fifo", "socket"]


def _target(folder: Path, kind: str) -> tuple[Path, object]:
    """Make an output target of ``kind``; return it and what must hold of it afterwards."""
    path = folder / "out.txt"
    if kind == "regular":
        path.write_text("old")
        path.chmod(0o640)
    elif kind == "read-only":
        path.write_text("old")
        path.chmod(0o444)
    elif kind == "symlink":
        (folder / "real.txt").write_text("old")
        path.symlink_to("real.txt")
    elif kind == "dangling-link":
        path.symlink_to("made.txt")
    elif kind == "folder":
        path.mkdir()
    elif kind == "missing-folder":
        path = folder / "no" / "out.txt"
    elif kind == "dev-null":
        path = Path("/dev/null")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        return path, server
    return path, None


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", ["lint", "metrics"])
def test_every_kind_of_target_is_written_or_refused_whole(capsys, data, tmp_path, kind, command):
    path, held = _target(tmp_path, kind)
    got: list[bytes] = []
    reader = None
    if kind == "fifo":
        reader = threading.Thread(target=lambda: got.append(path.read_bytes()))
        reader.start()
    argv = [command, str(data), "-o", str(path)] + (
        ["--resamples", "0"] if command == "metrics" else []
    )
    try:
        code = main(argv)
    finally:
        if held is not None:
            held.close()
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err and ".tmp" not in err
    if kind in ("read-only", "folder", "missing-folder", "socket"):
        assert code == 2 and err.count("\n") == 1 and str(path) in err
        if kind == "read-only":
            assert path.read_text() == "old" and stat.S_IMODE(path.stat().st_mode) == 0o444
        return
    assert code == 0, err
    if reader is not None:
        reader.join(10)
        assert stat.S_ISFIFO(path.stat().st_mode) and b"t.csv" in got[0]
    elif kind == "dev-null":
        assert stat.S_ISCHR(path.stat().st_mode)
    elif kind in ("symlink", "dangling-link"):
        assert path.is_symlink() and "t.csv" in path.read_text()
    else:
        assert path.is_file() and "t.csv" in path.read_text()
        if kind == "regular":
            assert stat.S_IMODE(path.stat().st_mode) == 0o640
    names = [p.name for p in tmp_path.iterdir()]
    assert not any(n.endswith(".tmp") for n in names)
