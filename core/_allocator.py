"""The C allocator's policy for the command line's process (glibc on Linux).

The bootstrap and the pairwise passes allocate and free arrays of megabytes in every chunk.
glibc returns freed memory at the top of its heap to the system at once (and serves large
blocks by ``mmap``), so the next chunk faults the same pages in again, zero-filled by the
kernel: on the 14-network report that was a sixth of the run (system time). The command line
is one short run, so it keeps freed memory for reuse instead; the library itself and the
dashboard (a long-lived server) leave the allocator as it is.
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
