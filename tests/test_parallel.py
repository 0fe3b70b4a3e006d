"""Work shared out over threads gives the same numbers, bit for bit, on any thread count."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from core import _parallel
from core.recalibration import make_recalibrator
from core.recalibration.scaling import START_MIN_COLUMNS


def test_map_ordered_keeps_order_and_runs_nested_calls_inline(monkeypatch):
    monkeypatch.setenv("CALIBSCOPE_THREADS", "3")
    seen = set()

    def inner(i):
        seen.add(threading.current_thread().name)
        return i * i

    def outer(i):
        # a nested call from a pool thread must not wait on the busy pool
        return sum(_parallel.map_ordered(inner, range(i)))

    assert _parallel.map_ordered(outer, range(6)) == [
        sum(j * j for j in range(i)) for i in range(6)
    ]
    assert any(name.startswith("calibscope") for name in seen)


@pytest.mark.parametrize(("env", "expected"), [("1", 1), ("4", 4), ("zero", None), ("", None)])
def test_thread_count_reads_the_environment(monkeypatch, env, expected):
    monkeypatch.setenv("CALIBSCOPE_THREADS", env)
    n = _parallel.thread_count()
    assert n == expected if expected is not None else 1 <= n <= _parallel.MAX_THREADS


def test_even_pieces_cover_the_range_once():
    assert _parallel.even_pieces(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert _parallel.even_pieces(0, 4) == []
    assert _parallel.even_pieces(3, 0) == [(0, 1), (1, 2), (2, 3)]


def _data(n, k, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, (n, k))
    y = rng.integers(0, k, n)
    z[np.arange(n), y] += rng.uniform(0, 5, n)
    return z, y


@pytest.mark.parametrize("name", ["platt", "temperature", "vector", "scaling-binning"])
def test_recalibrators_are_identical_on_one_and_on_several_threads(monkeypatch, name):
    # enough rows for several thread pieces and for Platt's binned start
    from core.recalibration.scaling import CHUNK_ENTRIES, piece_rows

    assert START_MIN_COLUMNS + 3000 > 2 * piece_rows(400, CHUNK_ENTRIES // 400)
    z, y = _data(START_MIN_COLUMNS + 3000, 400)
    out = {}
    for threads in ("1", "3"):
        monkeypatch.setenv("CALIBSCOPE_THREADS", threads)
        r = make_recalibrator(name).fit(z, y, logits=True)
        out[threads] = (r.params_.to_json(), r.predict_proba(z[:500], logits=True))
    assert out["1"][0] == out["3"][0]
    assert np.array_equal(out["1"][1], out["3"][1])
