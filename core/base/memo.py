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
from collections.abc import Callable, Hashable
from typing import Any

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


class Memo:
    """A thread-safe least-recently-used store, bounded by the total cost of its values.

    Parameters
    ----------
    limit : int
        Largest total cost; the least recently used values go first.
    cost : callable, default counts values
        ``cost(value)``: each value's share of ``limit`` (e.g. an array's bytes).
    """

    def __init__(self, limit: int, cost: Callable[[Any], int] = lambda value: 1) -> None:
        self.limit = int(limit)
        self.cost = cost
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()  # dashboard sessions run in threads

    def get(self, key: Hashable) -> Any:
        """Return the value stored under ``key`` (now the most recently used), or None."""
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return hit

    def put(self, key: Hashable, value: Any) -> None:
        """Store a value; one costlier than the whole limit is not kept."""
        cost = self.cost(value)
        if cost > self.limit:
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = value
            self._total += cost
            while self._total > self.limit:
                _, old = self._items.popitem(last=False)
                self._total -= self.cost(old)

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """Return the value under ``key``, computing and storing it when absent."""
        hit = self.get(key)
        if hit is None:
            hit = compute()
            self.put(key, hit)
        return hit

    def values(self) -> list[Any]:
        """Return the stored values, least recently used first."""
        with self._lock:
            return list(self._items.values())

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._items.clear()
            self._total = 0


def _read_only(order: np.ndarray) -> np.ndarray:
    # no caller may change what another reads from the memo
    order.setflags(write=False)
    return order


#: Stable argsorts of score arrays, by digest (:func:`stable_order`).
ORDERS = Memo(256 * 2**20, cost=lambda order: order.nbytes)


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
    return ORDERS.get_or_compute(array_digest(scores), lambda: _read_only(_argsort(scores)))


#: Bit pattern of +inf: float64s at or below it, read as uint64, order as the floats do.
_INF_BITS = np.float64(np.inf).view(np.uint64)


def _argsort(scores: np.ndarray) -> np.ndarray:
    """Return the stable argsort of ``scores``.

    Of nonnegative floats, that of their bit patterns: the same order, about 20 % faster at
    10⁷ rows (integers compare without the NaN rules).
    """
    a = np.asarray(scores)
    if a.dtype == np.float64 and a.ndim == 1 and a.size:
        bits = a.view(np.uint64)
        if bits.max() <= _INF_BITS:  # no sign bit (not even -0.0), no NaN
            return np.argsort(bits, kind="stable")
    return np.argsort(a, kind="stable")
