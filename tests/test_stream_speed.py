"""The stream's overlap (read-ahead, work beside) and its fast paths change no number."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_array_equal

from core.analyses.analysis import AnalysisConfig
from core.base.errors import DataError
from core.data.lint import ValueFacts
from core.data.probabilities import to_probabilities
from core.stats.lenses import top_label
from core.stats.scores import accuracy_rows, log_loss_rows, observed_probs
from core.stream.analysis import analyze_stream
from core.stream.load import LabelMap
from core.stream.threads import ahead, beside


def _threads(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    monkeypatch.setenv("CALIBSCOPE_THREADS", str(n))


# --------------------------------------------------------------------------- ahead, beside


@pytest.mark.parametrize("threads", [1, 2])
def test_ahead_yields_every_item_in_order(monkeypatch, threads):
    _threads(monkeypatch, threads)
    assert list(ahead(iter(range(1000)), depth=2)) == list(range(1000))
    assert list(ahead(iter([]))) == []


@pytest.mark.parametrize("threads", [1, 2])
def test_ahead_raises_where_the_items_failed(monkeypatch, threads):
    _threads(monkeypatch, threads)

    def items():
        yield 1
        yield 2
        raise DataError("part-3 is damaged")

    got = []
    with pytest.raises(DataError, match="part-3"):
        for x in ahead(items()):
            got.append(x)
    assert got == [1, 2]


def test_ahead_stops_its_producer_when_the_consumer_stops(monkeypatch):
    _threads(monkeypatch, 2)
    made = []
    closed = threading.Event()

    def items():
        try:
            for i in range(10_000):
                made.append(i)
                yield i
        finally:
            closed.set()

    reader = ahead(items(), depth=1)
    assert next(reader) == 0
    reader.close()  # as the stream's plan does after its first batch
    assert closed.wait(5)
    assert len(made) <= 4  # one taken, one queued, one being made: bounded by the depth
    assert not any(t.name == "calibscope-read" for t in threading.enumerate())


@pytest.mark.parametrize("threads", [1, 2])
def test_beside_returns_the_value_or_raises(monkeypatch, threads):
    _threads(monkeypatch, threads)
    assert beside(sum, [1, 2, 3]).result() == 6
    if threads == 1:
        with pytest.raises(ZeroDivisionError):
            beside(lambda: 1 / 0)
    else:
        with pytest.raises(ZeroDivisionError):
            beside(lambda: 1 / 0).result()


@pytest.fixture(scope="module")
def models_parquet(tmp_path_factory):
    rng = np.random.default_rng(3)
    n = 9_000
    s = np.round(rng.beta(2, 2, n), 2)  # ties, and exact 0s and 1s
    frame = pd.DataFrame(
        {
            "score": s,
            "label": (rng.random(n) < s).astype(np.int8),
            "model": np.where(rng.random(n) < 0.4, "a", "b"),
        }
    )
    path = tmp_path_factory.mktemp("speed") / "models.parquet"
    frame.to_parquet(path, row_group_size=1_500)
    return path


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_threads_change_no_number(monkeypatch, models_parquet, binning):
    config = AnalysisConfig(binning=binning, n_resamples=50, estimator="label-binned")
    runs = []
    for threads in (1, 2):
        _threads(monkeypatch, threads)
        runs.append(analyze_stream(models_parquet, config, batch_rows=1_100))
    one, two = runs
    assert one.input.digest == two.input.digest
    assert one.input.lint.to_records() == two.input.lint.to_records()
    for (name_a, part_a, a), (name_b, part_b, b) in zip(one.results, two.results, strict=True):
        assert name_a == name_b and part_a.digest == part_b.digest
        pd.testing.assert_frame_equal(a.metrics, b.metrics, check_exact=True)
        for x, y in zip(a.components, b.components, strict=True):
            assert_array_equal(x.bins.score_sums, y.bins.score_sums)


# --------------------------------------------------------------------------- fast paths


def test_two_column_accuracy_is_the_arg_max():
    rng = np.random.default_rng(0)
    s = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0, *rng.random(20)], 5_000)
    p = np.column_stack([1.0 - s, s])
    p[::7] = [0.5, 0.5]  # exact ties go to class 0
    p[::11] = [0.3, 0.3]  # rows that do not sum to 1 are read as they are
    y = rng.integers(0, 2, s.size)
    expected = (p.argmax(axis=1) == y).astype(np.float64)
    assert_array_equal(accuracy_rows(p, y), expected)
    assert_array_equal(accuracy_rows(p, y), (top_label(p)[1] == y).astype(np.float64))


@pytest.mark.parametrize("k", [2, 3])
def test_observed_probs_pick_the_label_entries(k):
    rng = np.random.default_rng(k)
    p = rng.dirichlet(np.ones(k), 2_000)
    y = rng.integers(0, k, 2_000)
    assert_array_equal(observed_probs(p, y), p[np.arange(2_000), y])
    assert_array_equal(log_loss_rows(p, y), -np.log(np.maximum(p[np.arange(2_000), y], 1e-15)))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int64])
def test_label_lookup_by_bit_pattern_equals_the_search(dtype):
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    known = [v for v in (-3, -1, 0, 1, 2, 7, 200, 40_000) if info.min <= v <= info.max]
    values = np.empty(len(known), dtype=object)
    values[:] = known
    classes = np.arange(len(known), dtype=np.int64)[::-1].copy()
    labels_map = LabelMap(values, classes, tuple(map(str, known)), None, ())
    pool = np.array([*known, *(v for v in (5, 9, -128) if info.min <= v <= info.max)])
    arr = rng.choice(pool, 3_000).astype(dtype)
    y, unknown = labels_map.apply(arr)
    at = labels_map._positions(arr)
    assert_array_equal(unknown, at < 0)
    assert_array_equal(y, np.where(at < 0, -1, classes[np.maximum(at, 0)]))
    assert y.dtype == np.int64


def test_label_lookup_of_non_integer_values_is_not_by_bit_pattern():
    values = np.empty(2, dtype=object)
    values[:] = [0.0, 1.0]
    labels_map = LabelMap(values, np.array([0, 1]), ("0", "1"), None, ())
    y, unknown = labels_map.apply(np.array([1, 0, 1], dtype=np.int8))
    assert_array_equal(y, [1, 0, 1]) and not unknown.any()


def _facts_by_masks(probs, y, binary, offset):
    """The saturation counts as every row's masks give them (the reference)."""
    scores = probs[:, 1] if binary else probs.max(axis=1)
    edge = (scores == 0.0) | (scores == 1.0) if binary else scores == 1.0
    wrong = probs[np.arange(y.size), y] == 0.0
    flagged = np.flatnonzero(edge | wrong)
    return (
        int(edge.sum()),
        int(wrong.sum()),
        int(flagged.size),
        tuple(offset + int(i) for i in flagged[:5]),
        int((y == 1).sum()),
    )


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("saturated", [False, True])
def test_value_facts_skip_masks_only_when_nothing_is_saturated(binary, saturated):
    rng = np.random.default_rng(5)
    k = 2 if binary else 3
    probs = rng.dirichlet(np.ones(k), 4_000)
    if saturated:
        probs[[10, 500, 3_999]] = np.eye(k)[[0, 1, 1]]
    y = rng.integers(0, k, 4_000)
    facts = ValueFacts.of(probs, y, binary=binary, offset=100)
    edge, wrong, count, rows, positives = _facts_by_masks(probs, y, binary, 100)
    assert (facts.edge, facts.wrong, facts.saturated, facts.positives) == (
        edge,
        wrong,
        count,
        positives,
    )
    assert facts.saturated_rows == rows[: len(facts.saturated_rows)]
    assert (count > 0) == saturated


def test_range_check_still_clips_and_refuses():
    p = np.array([[0.2], [1.0 + 1e-12], [-1e-12], [0.7]])
    out, notes = to_probabilities(p, ["p"], False, False)
    assert_array_equal(out[:, 0], [0.2, 1.0, 0.0, 0.7])
    assert [n.code for n in notes] == ["clipped"]
    with pytest.raises(DataError, match="outside"):
        to_probabilities(np.array([[0.2], [1.5]]), ["p"], False, False)
    same, notes = to_probabilities(np.array([[0.0], [1.0], [0.5]]), ["p"], False, False)
    assert_array_equal(same[:, 0], [0.0, 1.0, 0.5]) and notes == []
