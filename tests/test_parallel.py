"""Work shared out over threads gives the same numbers, bit for bit, on any thread count."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from core.base import parallel
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
        return sum(parallel.map_ordered(inner, range(i)))

    assert parallel.map_ordered(outer, range(6)) == [sum(j * j for j in range(i)) for i in range(6)]
    assert any(name.startswith("calibscope") for name in seen)


@pytest.mark.parametrize("threads", ["1", "2"])
def test_map_ordered_reports_each_result_in_order_and_a_raise_stops_the_rest(monkeypatch, threads):
    monkeypatch.setenv("CALIBSCOPE_THREADS", threads)
    reported, started = [], []

    def work(i):
        started.append(i)
        time.sleep(0.01)
        return -i

    assert parallel.map_ordered(work, range(5), done=reported.append) == [0, -1, -2, -3, -4]
    assert reported == [0, 1, 2, 3, 4]
    started.clear()

    class Stop(Exception):
        pass

    def stop_after_two(i):
        if i == 1:
            raise Stop  # a progress bar's Stop: the items not started never run

    with pytest.raises(Stop):
        parallel.map_ordered(work, range(100), done=stop_after_two)
    time.sleep(0.1)  # what the pool had started finishes; nothing more starts
    assert 2 <= len(started) <= 2 + 4 * int(threads) + 1


@pytest.mark.parametrize(("env", "expected"), [("1", 1), ("4", 4), ("zero", None), ("", None)])
def test_thread_count_reads_the_environment(monkeypatch, env, expected):
    monkeypatch.setenv("CALIBSCOPE_THREADS", env)
    n = parallel.thread_count()
    assert n == expected if expected is not None else 1 <= n <= parallel.MAX_THREADS


def test_even_pieces_cover_the_range_once():
    assert parallel.even_pieces(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert parallel.even_pieces(0, 4) == []
    assert parallel.even_pieces(3, 0) == [(0, 1), (1, 2), (2, 3)]


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


@pytest.mark.parametrize("binning", ["equal-mass", "equal-width"])
def test_components_binned_on_threads_are_those_binned_one_by_one(monkeypatch, binning):
    """The classwise lens's components are binned and counted one per thread: same bins."""
    from core.stats.binned_view import bin_view
    from core.stats.binning import batch_bin_sums
    from core.stats.lenses import lens_view

    monkeypatch.setattr(parallel, "PARALLEL_MIN_ENTRIES", 0)
    rng = np.random.default_rng(8)
    p = rng.dirichlet(np.full(7, 0.4), size=3000)
    p[::9, 2] = p[::9, 2].round(2)  # ties at equal-mass boundaries
    p /= p.sum(axis=1, keepdims=True)
    y = rng.integers(0, 7, 3000)
    view = lens_view(p, y, "classwise")
    monkeypatch.setenv("CALIBSCOPE_THREADS", "1")
    one = bin_view(view, binning, 12)
    monkeypatch.setenv("CALIBSCOPE_THREADS", "3")
    several = bin_view(view, binning, 12)
    for a, b in zip(one.components, several.components, strict=True):
        assert np.array_equal(a.index, b.index) and np.array_equal(a.edges, b.edges)
        sums = batch_bin_sums(a.index[None], a.scores[None], a.outcomes[None], a.n_bins)
        for counted in (a.stats, b.stats):  # counted in bin_view: as a batch counts them
            assert np.array_equal(counted.counts, sums[0][0])
            assert np.array_equal(counted.score_sums, sums[1][0])
            assert np.array_equal(counted.label_sums, sums[2][0])
        assert all(np.array_equal(u, v) for u, v in zip(b.batch._sums, sums, strict=True))
