"""The C allocator's policy for the command line's process (glibc on Linux).

The bootstrap and the pairwise passes allocate and free arrays of megabytes in every chunk.
glibc returns freed memory at the top of its heap to the system at once (and serves large
blocks by ``mmap``), so the next chunk faults the same pages in again, zero-filled by the
kernel: on the 14-network report that was a sixth of the run (system time). The command line
is one short run, so it keeps freed memory for reuse instead; the library itself and the
dashboard (a long-lived server) leave the allocator as it is.

For the same reason the command line asks numpy not to advise transparent huge pages for its
arrays (:func:`small_pages`): each first touch of an advised array then faults in and zeroes
2 MiB at once, which on a virtual machine cost more than the smaller faults it saves.
``calibscope metrics`` on a 10⁷-row file took 9.2–10.0 s with the advice and 7.3–8.9 s
without it (system time 4.0–5.1 s against 1.8–3.2 s), the same at 10⁶ rows.
"""

from __future__ import annotations

import ctypes
import sys

#: ``mallopt`` parameters (glibc's ``malloc.h``).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: Free memory at the top of the heap kept for reuse, up to this many bytes.
KEEP_FREED = 1 << 30
#: Blocks from this size on are still mapped (and unmapped when freed) on their own.
MMAP_FROM = 1 << 28


def keep_freed_memory() -> bool:
    """Ask the C allocator to keep freed memory for reuse (see the module docstring).

    Returns
    -------
    bool
        Whether the allocator took the settings (False off glibc, where nothing changes).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library symbols to reach
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_TRIM_THRESHOLD, KEEP_FREED)) and bool(
        mallopt(M_MMAP_THRESHOLD, MMAP_FROM)
    )


def small_pages() -> bool:
    """Ask numpy not to advise huge pages for new arrays (see the module docstring).

    Returns
    -------
    bool
        Whether numpy took the setting (False where its switch is missing).
    """
    try:
        from numpy._core import multiarray
    except ImportError:  # a numpy without the private module: nothing changes
        return False
    switch = getattr(multiarray, "_set_madvise_hugepage", None)
    if switch is None:
        return False
    switch(False)
    return True
