"""Memos of work that depends only on array contents: exact digests and a bounded store.

Pages call :func:`core.analyze` several times on the same rows (without intervals, then with
them; again after each change of an option). Work that depends only on the values of one
array — a sort order — is kept here under an exact content digest, so it is done once per
data set rather than once per call, and a memo never answers for other values.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np


def array_digest(*arrays: np.ndarray) -> str:
    """Return an exact content digest (blake2b) of arrays: shapes, dtypes and bytes.

    Parameters
    ----------
    *arrays : numpy.ndarray
        The arrays.

    Returns
    -------
    str
        32 hex digits.
    """
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.shape, a.dtype.str)).encode())
        h.update(memoryview(a).cast("B"))
    return h.hexdigest()


class ArrayMemo:
    """A thread-safe least-recently-used store of arrays, bounded by their total bytes.

    Parameters
    ----------
    max_bytes : int
        Largest total size of the stored arrays; the least recently used go first.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # dashboard sessions run in threads

    def get(self, key: tuple, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """Return the array stored under ``key``, computing and storing it when absent.

        The array is returned read-only, so no caller can change what another reads.
        """
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        value = compute()
        value.setflags(write=False)
        if value.nbytes > self.max_bytes:
            return value
        with self._lock:
            if key not in self._items:
                self._items[key] = value
                self._bytes += value.nbytes
            while self._bytes > self.max_bytes:
                _, old = self._items.popitem(last=False)
                self._bytes -= old.nbytes
        return value

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._items.clear()
            self._bytes = 0


#: Stable argsorts of score arrays, by digest (:func:`stable_order`).
ORDERS = ArrayMemo(max_bytes=256 * 2**20)


def stable_order(scores: np.ndarray) -> np.ndarray:
    """Return the stable ascending argsort of ``scores``, computed once per distinct array.

    Parameters
    ----------
    scores : numpy.ndarray
        1-D scores.

    Returns
    -------
    numpy.ndarray
        The order (read-only).
    """
    return ORDERS.get((array_digest(scores),), lambda: np.argsort(scores, kind="stable"))
