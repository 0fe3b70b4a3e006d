"""core.stats.summary.summarize: hand-checked counts of a tiny input."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from core.base.errors import DataError
from core.data import as_predictions
from core.stats.scores import accuracy
from core.stats.summary import summarize

# rows: predicted class (argmax), confidence, label, correct?
# 0: [.6 .3 .1] -> 0, .6, 0, yes
# 1: [.2 .7 .1] -> 1, .7, 1, yes
# 2: [.1 .1 .8] -> 2, .8, 1, no
# 3: [.5 .5 .0] -> 0 (tie to the lowest index), .5, 1, no
# 4: [.3 .3 .4] -> 2, .4, 2, yes
P = np.array(
    [
        [0.6, 0.3, 0.1],
        [0.2, 0.7, 0.1],
        [0.1, 0.1, 0.8],
        [0.5, 0.5, 0.0],
        [0.3, 0.3, 0.4],
    ]
)
Y = np.array([0, 1, 1, 1, 2])


def test_counts_of_a_tiny_input():
    s = summarize((P, Y), n_bins=5, class_names=["a", "b", "c"])
    assert s.n == 5 and s.class_names == ("a", "b", "c")
    assert s.accuracy == pytest.approx(3 / 5)
    assert_array_equal(s.label_counts, [1, 3, 1])
    assert_allclose(s.label_shares, [0.2, 0.6, 0.2])
    assert_array_equal(s.predicted_counts, [2, 1, 2])
    assert_allclose(s.mean_probs, [0.34, 0.38, 0.28])
    # bins [0, .2), [.2, .4), [.4, .6), [.6, .8), [.8, 1]: an edge belongs to the upper bin
    assert_allclose(s.confidence_edges, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert_array_equal(s.confidence_counts, [0, 0, 2, 2, 1])  # .4 .5 | .6 .7 | .8
    assert_array_equal(s.correct_counts, [0, 0, 1, 2, 0])


def test_binary_vector_without_labels():
    s = summarize(([0.3, 1.0, 0.6], None), n_bins=10)
    # P(y=1) -> top-label confidence max(p, 1 - p) = .7, 1.0, .6; predicted 0, 1, 1
    assert s.accuracy is None and s.label_counts is None and s.correct_counts is None
    assert s.label_shares is None
    assert_array_equal(s.predicted_counts, [1, 2])
    assert_array_equal(np.flatnonzero(s.confidence_counts), [6, 7, 9])
    assert s.class_names == ("0", "1")


def test_predictions_and_pairs_agree():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4), size=200)
    y = rng.integers(0, 4, size=200)
    pred = as_predictions((p, y), class_names=list("wxyz"))
    a, b = summarize(pred), summarize((p, y), class_names=list("wxyz"))
    assert a.accuracy == b.accuracy == accuracy(p, y)
    assert a.class_names == ("w", "x", "y", "z")
    assert a.confidence_counts.sum() == 200 and len(a.confidence_edges) == 21
    for field in ("label_counts", "predicted_counts", "confidence_counts", "correct_counts"):
        assert_array_equal(getattr(a, field), getattr(b, field))


def test_invalid_input_is_refused():
    with pytest.raises(DataError, match="probabilities"):
        summarize(([[1.5, -0.5]], [0]))
    with pytest.raises(DataError, match="class names"):
        summarize(([0.2, 0.9], None), class_names=["only one"])
