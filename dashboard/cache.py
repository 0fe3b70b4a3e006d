"""The dashboard's one cache of core calls, keyed on the data's exact digest.

Every page computes through :func:`compute` (or :func:`run_with_progress` for long
simulations with a Stop button). A call is keyed on the core function, the digest of the
predictions it reads (:attr:`core.data.Predictions.digest`, never Streamlit's sampled
hashing of arrays) with their source, column mapping and lint, and its hashable options (frozen configs, tuples, numbers, strings).
Results are frozen core objects, so the cache hands out the object itself
(``st.cache_resource``): no copy, no pickling of a 10⁶-row analysis on every rerun, and
every session reading the same data with the same options shares one computation.

:func:`bootstrap_gate` is the one rule for slow bootstraps: they run at once when cheap or
already computed, and otherwise wait for a click.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from threading import Lock
from typing import Any

import streamlit as st

from core.base.numbers import format_duration, time_left
from dashboard.errors import show_errors

#: Cached results kept (oldest dropped first).
MAX_ENTRIES = 64

#: Bootstrap work (rows × resamples × components) run without asking; larger jobs wait for a
#: click. 10^7 is about two seconds for the top-label lens on two cores.
AUTO_BOOTSTRAP_BUDGET = 10_000_000

#: Bootstrap work run at once behind a progress bar with a Stop button (larger jobs wait for
#: a click): a comparison's exact bootstrap runs about 2·10⁷ row-resamples a second on two
#: cores with the default metrics and test (14 CIFAR-10 networks × 10⁴ rows × 1,000
#: resamples, 1.4·10⁸, take about 7 s), so this is about 15 s.
PROGRESS_BOOTSTRAP_BUDGET = 300_000_000

#: Session key of the bootstrap jobs asked for (or already run) in this session.
_ASKED = "_bootstraps_asked"

#: Session key of the long runs stopped in this session (they wait for a click to run again).
_STOPPED = "_runs_stopped"


class _Store:
    """An LRU dict of results shared by every session, safe across script threads."""

    def __init__(self) -> None:
        self.items: OrderedDict[Hashable, Any] = OrderedDict()
        self.lock = Lock()

    def get(self, key: Hashable) -> Any:
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        return None

    def put(self, key: Hashable, value: Any) -> None:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > MAX_ENTRIES:
                self.items.popitem(last=False)


@st.cache_resource(show_spinner=False)
def _store() -> _Store:
    return _Store()


def data_key(data: Any) -> Hashable:
    """Return the hashable identity of what a core call reads.

    Predictions by their digest and provenance (see :func:`_provenance`); a mapping of
    name → predictions (several models) by its names and keys; anything else (a world, a
    number) as it is.
    """
    if hasattr(data, "digest"):
        return ("digest", data.digest, _provenance(data))
    if isinstance(data, Mapping):
        return tuple((str(k), data_key(v)) for k, v in data.items())
    return data


def _provenance(data: Any) -> str:
    """Return a hash of what predictions carry besides their rows: source, mapping, lint and
    the kept columns (their own digest).

    The digest covers the rows only, and the cache is shared by every session: two uploads
    of the same rows under different file names must not hand one session the other's file
    name, column names or lint findings inside a cached result (a report's title, a
    model's ``source``).
    """
    import hashlib

    parts = (
        getattr(data, "source", None),
        getattr(data, "columns", None),
        getattr(data, "lint", None),
        getattr(data, "kept_digest", None),
    )
    return hashlib.blake2b(repr(parts).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def key_of(func: Callable[..., Any], data: Any, args: tuple, kwargs: Mapping[str, Any]) -> Hashable:
    """Return the cache key of ``func(data, *args, **kwargs)``."""
    frozen = tuple(sorted((k, _hashable(v)) for k, v in kwargs.items()))
    return (func.__module__, func.__qualname__, data_key(data), _hashable(args), frozen)


def _hashable(value: Any) -> Hashable:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    if hasattr(value, "digest"):
        return data_key(value)
    hash(value)  # a TypeError here means an option that cannot key a cache
    return value


def cached(func: Callable[..., Any], data: Any, *args: Any, **kwargs: Any) -> Any:
    """Return a result if this exact call was computed before (by any session), else None."""
    return _store().get(key_of(func, data, args, kwargs))


def compute(
    func: Callable[..., Any],
    data: Any,
    *args: Any,
    spinner: str | None = None,
    **kwargs: Any,
) -> Any:
    """Return ``func(data, *args, **kwargs)``, computed once per distinct call.

    Parameters
    ----------
    func : callable
        A core function (its module and name are part of the key).
    data : Predictions, mapping of Predictions, or hashable
        What it reads; predictions are keyed by their digest.
    *args, **kwargs
        Its other arguments: hashable (frozen configs, tuples, numbers, strings, None).
    spinner : str, optional
        Text of a spinner shown while it computes.

    Returns
    -------
    Any
        The (shared, immutable) result. Errors are raised, not cached.
    """
    key = key_of(func, data, args, kwargs)
    store = _store()
    found = store.get(key)
    if found is not None:
        return found
    if spinner:
        with st.spinner(spinner, show_time=True):
            result = func(data, *args, **kwargs)
    else:
        result = func(data, *args, **kwargs)
    store.put(key, result)
    return result


def remember(key: Hashable, value: Any) -> None:
    """Store a result computed outside :func:`compute` (e.g. with progress) under ``key``."""
    _store().put(key, value)


def recall(key: Hashable) -> Any:
    """Return what :func:`remember` stored under ``key`` (None when absent or dropped)."""
    return _store().get(key)


# ---------------------------------------------------------------- long runs

_RUNNING = "_cache_running"


def run_with_progress(key: Hashable, label: str, compute_: Callable[[Any], Any]) -> Any:
    """Run ``compute_(progress)`` with a progress bar and a Stop button, and keep the result.

    ``progress(fraction, message)`` updates the bar, which adds the time left (estimated
    from the time so far, once a second has passed). Any click reruns the script, which
    interrupts the computation at its next report; :func:`stopped_notice` then says that
    nothing was kept.

    Parameters
    ----------
    key : hashable
        Where the result is kept (include the data's :func:`data_key`).
    label : str
        What is running, shown in the status box.
    compute_ : callable
        The computation, given the progress callback.

    Returns
    -------
    Any
        The result, or None when it failed (the error is shown).
    """
    found = recall(key)
    if found is not None:
        return found
    st.session_state[_RUNNING] = key
    with st.status(label, expanded=True) as status:
        st.button("Stop", key="stop_running", icon=":material/stop_circle:")
        bar = st.progress(0.0, text="starting…")
        started = time.perf_counter()

        def progress(frac: float, message: str) -> None:
            frac = min(max(frac, 0.0), 1.0)
            left = time_left(time.perf_counter() - started, frac)
            if left is not None:
                message += f" — about {format_duration(left)} left"
            bar.progress(frac, text=message)

        with show_errors():
            result = compute_(progress)
            remember(key, result)
            status.update(label=f"{label} — done", state="complete", expanded=False)
            st.session_state.pop(_RUNNING, None)
            return result
    status.update(label=f"{label} — failed", state="error")
    st.session_state.pop(_RUNNING, None)
    return None


def stopped_notice() -> None:
    """Say so when the last run of this session was stopped before it finished.

    A stopped run that started without a click then waits for one
    (:func:`bootstrap_gate`).
    """
    key = st.session_state.pop(_RUNNING, None)
    if key is not None and recall(key) is None:
        st.session_state.setdefault(_STOPPED, set()).add(key)
        st.session_state.get(_ASKED, set()).discard(key)
        st.warning(
            "The last computation was stopped before it finished; nothing was kept. "
            "Press its button to start again.",
            icon=":material/stop_circle:",
        )


# ---------------------------------------------------------------- the bootstrap gate


def asked(job: Hashable) -> bool:
    """Whether this session asked for (or already ran) a gated computation."""
    return job in st.session_state.get(_ASKED, set())


def was_stopped(job: Hashable) -> bool:
    """Whether a run of ``job`` was stopped in this session and not asked for again."""
    return job in st.session_state.get(_STOPPED, set())


def ask(job: Hashable) -> None:
    """Record that this session asks for a gated computation (a button's callback)."""
    st.session_state.setdefault(_ASKED, set()).add(job)
    st.session_state.get(_STOPPED, set()).discard(job)


def bootstrap_gate(
    job: Hashable,
    work: int,
    *,
    what: str,
    button_key: str,
    budget: int | None = None,
) -> bool:
    """Decide whether a bootstrap may run now: the one rule every page follows.

    It runs at once when its work (rows × resamples × components) is at most ``budget``
    (and it was not stopped in this session) or this session already asked for it;
    otherwise the page shows its point estimates, an explanation and a button, and the
    bootstrap runs after the click (the result is kept for this data and these options).

    Parameters
    ----------
    job : hashable
        Identity of the bootstrap (data key and options).
    work : int
        Rows × resamples × components.
    what : str
        The size of the job in words (e.g. ``"2,276 rows × 1,000 resamples"``).
    button_key : str
        Widget key of the button.
    budget : int, optional
        The largest work run without a click: :data:`AUTO_BOOTSTRAP_BUDGET` (the default) where the
        page waits for the result, :data:`PROGRESS_BOOTSTRAP_BUDGET` where it runs with a
        progress bar and a Stop button (:func:`run_with_progress`).

    Returns
    -------
    bool
        Whether to compute the intervals in this run.
    """
    budget = AUTO_BOOTSTRAP_BUDGET if budget is None else budget
    stopped = was_stopped(job)
    if (work <= budget and not stopped) or asked(job):
        ask(job)
        return True
    st.info(
        (
            f"The bootstrap intervals on {what} were stopped; the point estimates are shown. "
            "Lower the resamples, or compute the intervals again"
            if stopped
            else f"Bootstrap intervals on {what} take a while; the point estimates are "
            "shown. Lower the resamples, or compute the intervals now"
        )
        + " (the result is kept for this data and these options).",
        icon=":material/hourglass:",
    )
    st.button(
        "Compute bootstrap intervals",
        key=button_key,
        on_click=ask,
        args=(job,),
        icon=":material/play_arrow:",
    )
    return False
