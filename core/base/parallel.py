"""Independent pieces of one computation run on a small pool of threads.

numpy releases the GIL inside its loops, so row groups of one large array can be
processed on several cores at once without copying anything. Results come back in
the order the pieces were given, and callers split their work into pieces that do
not depend on the number of threads, so every result is the same, bit for bit, on
one core or on many.

``CALIBSCOPE_THREADS`` sets the number of threads (default: the CPUs this process may
use, at most 8; ``1`` runs everything in the calling thread).

Jobs that hold the GIL for long (a whole analysis per model of a report) run in forked
worker processes instead (:class:`ProcessJobs`, :func:`process_count`): the same count,
at most one process per job, and none where ``fork`` is not available. Each job's result
is what it returns in this process, so the numbers do not depend on the process count.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Upper bound of the default thread count: the elementwise passes this serves are
#: limited by memory bandwidth long before eight cores are busy.
MAX_THREADS = 8

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_lock = threading.Lock()
_inside = threading.local()


def thread_count() -> int:
    """Return the number of worker threads to use (``CALIBSCOPE_THREADS`` or the CPU count)."""
    env = os.environ.get("CALIBSCOPE_THREADS", "").strip()
    if env.isdigit() and int(env) >= 1:
        return int(env)
    return max(1, min(_usable_cpus(), MAX_THREADS))


def _usable_cpus() -> int:
    # the CPUs this process may run on (a container's limit), not the machine's count
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not available on every platform
        return os.cpu_count() or 1


def _executor(size: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size != size:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="calibscope")
            _pool_size = size
        return _pool


def _run(fn: Callable[[T], R], item: T) -> R:
    _inside.active = True
    try:
        return fn(item)
    finally:
        _inside.active = False


#: Jobs with fewer matrix entries than this run in the calling thread (hand-off would dominate).
PARALLEL_MIN_ENTRIES = 1 << 20


def _inline(entries: int | None) -> bool:
    """Whether a map runs as a plain loop: one thread, a small job, or a pool thread.

    A nested call from a pool thread would wait on threads that are busy waiting for it.
    """
    small = entries is not None and entries < PARALLEL_MIN_ENTRIES
    return thread_count() <= 1 or small or getattr(_inside, "active", False)


def map_ordered(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    entries: int | None = None,
    done: Callable[[int], Any] | None = None,
) -> list[R]:
    """Return ``[fn(item) for item in items]``, computed on the thread pool.

    ``items`` is consumed lazily, in order, in the calling thread (draws from a shared
    generator made while preparing an item happen in the same order as in a plain
    loop), and at most a few items per thread are in flight, so prepared per-item
    buffers do not pile up. Results come back in order; the first failing item (in
    order) raises its exception. Runs in the calling thread when one thread is
    configured, when the job is smaller than ``PARALLEL_MIN_ENTRIES`` entries, or when
    called from inside a pool thread (a nested call would wait on threads that are busy
    waiting for it).

    Parameters
    ----------
    fn : callable
        Function of one item; must not modify state shared with other items.
    items : iterable
        The pieces of work.
    entries : int, optional
        Size of the whole job (matrix entries), to decide whether threads are worth it.
    done : callable, optional
        ``done(i)`` once item ``i``'s result is in, in order, in the calling thread (a
        progress bar). What it raises stops the map: items not yet started are cancelled.

    Returns
    -------
    list
        ``fn`` of every item, in the order of ``items``.
    """
    results: list[R] = []

    def collect(result: R) -> None:
        results.append(result)
        if done is not None:
            done(len(results) - 1)

    if _inline(entries):
        for item in items:
            collect(fn(item))
        return results
    size = thread_count()
    pool = _executor(size)
    pending: deque[Future[R]] = deque()
    try:
        for item in items:
            pending.append(pool.submit(_run, fn, item))
            if len(pending) >= 4 * size:
                collect(pending.popleft().result())
        while pending:
            collect(pending.popleft().result())
    except BaseException:
        for future in pending:  # a stopped run (or a failed item) starts nothing more
            future.cancel()
        raise
    return results


def map_helped(fn: Callable[[T], R], items: Sequence[T], *, entries: int | None = None) -> list[R]:
    """Return ``[fn(item) for item in items]``, the calling thread working beside the pool.

    Every item is offered to the pool, which takes them from the front; the calling thread
    takes them from the back (each item it takes is one the pool has not started), until
    the two meet. On a busy machine, where the pool's threads wait for a core, the caller
    does the work itself and the call costs about what a plain loop does; on idle cores
    the pool shares it. Each item is computed once, by one thread, so results are those
    of the loop whatever the threads. The conditions of :func:`map_ordered` decide when it
    runs as a plain loop.

    Parameters
    ----------
    fn : callable
        Function of one item; must not modify state shared with other items.
    items : sequence
        The pieces of work (cut independently of the thread count).
    entries : int, optional
        Size of the whole job, to decide whether threads are worth it.

    Returns
    -------
    list
        ``fn`` of every item, in order.
    """
    if len(items) < 2 or _inline(entries):
        return [fn(item) for item in items]
    pool = _executor(thread_count())
    futures = [pool.submit(_run, fn, item) for item in items]
    results: list[Any] = [None] * len(items)
    mine = len(items)
    try:
        while mine > 0 and futures[mine - 1].cancel():  # not started: the caller's
            mine -= 1
            results[mine] = fn(items[mine])
    except BaseException:
        for f in futures:
            f.cancel()
        raise
    # the pool takes items in order: every item before one it started is started too
    for i in range(mine):
        results[i] = futures[i].result()
    return results


def even_pieces(total: int, piece: int) -> list[tuple[int, int]]:
    """Return ``[(start, stop), ...]`` covering ``range(total)`` in pieces of ``piece``.

    The pieces depend only on ``total`` and ``piece``, never on the thread count, so
    reductions over them in order give the same result on any machine.
    """
    piece = max(1, int(piece))
    return [(i, min(i + piece, total)) for i in range(0, total, piece)]


_BLAS_CONTROLLER: list = []


def one_blas_thread() -> AbstractContextManager:
    """Limit BLAS to one thread (when threadpoolctl is installed), else do nothing.

    The products and decompositions this wraps are small (an inner dimension of K, a
    matrix of a few hundred rows), so a second BLAS thread gains little, while thread
    hand-off on a busy machine made them up to 10× slower.
    """
    if not _BLAS_CONTROLLER:
        try:
            from threadpoolctl import ThreadpoolController

            _BLAS_CONTROLLER.append(ThreadpoolController())
        except Exception:  # noqa: BLE001 - optional: any failure means "no control"
            _BLAS_CONTROLLER.append(None)
    ctl = _BLAS_CONTROLLER[0]
    return ctl.limit(limits=1, user_api="blas") if ctl is not None else nullcontext()


# --------------------------------------------------------------------------- processes

#: The functions of the running :class:`ProcessJobs`, by key: forked workers inherit them,
#: so neither the function nor the data it closes over is pickled (only its results are).
_JOBS: dict[int, Callable[[int], Any]] = {}
_in_worker = False


def process_count(jobs: int) -> int:
    """Return the worker processes for ``jobs`` independent jobs (1: run them in this process).

    ``min(thread_count(), jobs)`` on Linux, where processes are forked; 1 for a single
    job, inside a worker, when the program set another start method, and on other systems
    (Windows cannot fork; macOS can, but its system libraries are not safe after a fork).
    """
    if jobs < 2 or _in_worker or not sys.platform.startswith("linux"):
        return 1  # macOS can fork, but its system libraries are not safe to use after it
    if multiprocessing.get_start_method(allow_none=True) not in (None, "fork"):
        return 1  # the program chose another start method: respect it
    return max(1, min(thread_count(), jobs))


def _worker_start() -> None:
    global _pool, _pool_size, _in_worker
    # the parent's threads did not survive the fork, and the processes share the cores
    _pool, _pool_size, _in_worker = None, 0, True
    os.environ["CALIBSCOPE_THREADS"] = "1"


def _call(key: int, i: int) -> Any:
    return _JOBS[key](i)


class ProcessJobs:
    """``fn(0), …, fn(n − 1)`` in forked worker processes, started at once.

    The caller may do other work while they run; :meth:`results` waits for them. With
    ``workers ≤ 1`` the jobs run in this process when :meth:`results` is called.

    Parameters
    ----------
    fn : callable
        ``fn(i)`` for job ``i``; its result must pickle. It may close over anything: the
        workers are forked after it is registered.
    n : int
        Number of jobs.
    workers : int
        Worker processes (:func:`process_count`).
    """

    def __init__(self, fn: Callable[[int], R], n: int, workers: int) -> None:
        self._fn, self._n = fn, n
        self._executor: ProcessPoolExecutor | None = None
        self._futures: list[Future] = []
        if workers > 1 and n > 1:
            self._key = id(self)
            _JOBS[self._key] = fn
            self._executor = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=multiprocessing.get_context("fork"),
                initializer=_worker_start,
            )
            self._futures = [self._executor.submit(_call, self._key, i) for i in range(n)]

    @property
    def running(self) -> bool:
        """Whether the jobs run in worker processes (else in this process, in :meth:`results`)."""
        return self._executor is not None

    def results(self, done: Callable[[int], Any] | None = None) -> list:
        """Return ``[fn(0), …, fn(n − 1)]``; the first failing job (in order) raises its error.

        Without worker processes the jobs run on the thread pool (:func:`map_ordered`).

        Parameters
        ----------
        done : callable, optional
            ``done(i)`` once job ``i``'s result is in, in order (a progress bar); what it
            raises stops the jobs not yet started.

        Returns
        -------
        list
            The jobs' results in order.
        """
        if self._executor is None:
            return map_ordered(self._fn, range(self._n), done=done)
        try:
            out = []
            for i, future in enumerate(self._futures):
                out.append(future.result())
                if done is not None:
                    done(i)
            return out
        except BrokenProcessPool:  # a worker died (killed, out of memory): run them here
            return map_ordered(self._fn, range(self._n), done=done)
        finally:
            self.close()

    def close(self) -> None:
        """Stop the workers (jobs not started are cancelled)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            _JOBS.pop(self._key, None)

    def __enter__(self) -> ProcessJobs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
