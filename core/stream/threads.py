"""Overlap in a stream: the next batch is read while this one is summed, and hashed beside it.

pyarrow releases the GIL while it decodes a Parquet row group, and :mod:`hashlib` while it
hashes more than a few kilobytes, so on a machine with a second core both run beside the
numpy work of the batch in hand:

- :func:`ahead` runs an iterator (reading and checking the batches of a pass) in a thread,
  at most ``depth`` items ahead of the consumer, so memory stays bounded by the batch size;
- :func:`beside` starts a function (a batch's digest) in a thread and returns a handle whose
  :meth:`Beside.result` waits for it.

Neither changes what is computed or in which order the results are combined: the items come
out in order, every exception is raised where the consumer would have met it, and each
function runs exactly once. With ``CALIBSCOPE_THREADS=1`` (:func:`core.base.parallel.thread_count`)
both run in the calling thread.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from core.base.parallel import thread_count

T = TypeVar("T")

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()

#: Seconds between checks of a stopped consumer while the producer waits for room.
_POLL = 0.1


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="calibscope-stream")
        return _pool


class _Done:
    """The end of the producer's items (or the exception that ended them)."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


def ahead(items: Iterator[T], depth: int = 1) -> Iterator[T]:
    """Yield ``items`` in order, produced by a thread at most ``depth`` items ahead.

    Parameters
    ----------
    items : iterator
        Consumed in the producer thread only (a generator that reads files, say).
    depth : int, default=1
        Items produced and not yet taken, at most (besides the one being produced).

    Yields
    ------
    object
        The items of ``items``, in order. An exception raised by ``items`` is raised here,
        after the items before it. Closing this generator early stops the producer.
    """
    if thread_count() <= 1:
        yield from items
        return
    box: queue.Queue[Any] = queue.Queue(maxsize=max(1, int(depth)))
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                box.put(item, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            put(_Done(exc))
            return
        finally:
            close = getattr(items, "close", None)
            if stop.is_set() and close is not None:
                close()
        put(_Done())

    worker = threading.Thread(target=produce, name="calibscope-read", daemon=True)
    worker.start()
    try:
        while True:
            item = box.get()
            if isinstance(item, _Done):
                if item.error is not None:
                    raise item.error
                return
            yield item
    finally:
        stop.set()
        worker.join()


class Beside:
    """A function running in a thread beside the caller (:func:`beside`)."""

    def __init__(self, future: Future | None, value: Any = None) -> None:
        self._future = future
        self._value = value

    def result(self) -> Any:
        """Wait for the function and return its value (or raise its exception)."""
        return self._value if self._future is None else self._future.result()


def beside(fn: Callable[..., Any], *args: Any) -> Beside:
    """Start ``fn(*args)`` in a thread (in the caller with one thread configured).

    The caller must not change what ``fn`` reads until :meth:`Beside.result` returned.
    """
    if thread_count() <= 1:
        return Beside(None, fn(*args))
    return Beside(_executor().submit(fn, *args))
