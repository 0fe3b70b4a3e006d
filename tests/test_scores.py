import numpy as np
import pytest
from sklearn import metrics

from core.base.errors import ConfigError, DataError
from core.stats.scores import (
    SCORES,
    accuracy,
    brier_decomposition,
    brier_score,
    log_loss,
)


def _random_multiclass(n=500, k=4, seed=1):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=n)
    y = rng.integers(0, k, size=n)
    return p, y


# --- hand-computed small cases -------------------------------------------------------


def test_accuracy_by_hand_with_argmax_tie_to_lowest_index():
    p = [[0.7, 0.3], [0.4, 0.6], [0.5, 0.5], [0.2, 0.8]]
    # predictions 0, 1, 0 (tie -> lowest index), 1
    assert accuracy(p, [0, 0, 0, 1]) == pytest.approx(3 / 4, abs=0)
    assert accuracy(p, [1, 1, 1, 0]) == pytest.approx(1 / 4, abs=0)


def test_accuracy_binary_vector_threshold():
    # 1-D input predicts class 1 only when p > 0.5
    assert accuracy([0.5, 0.51, 0.2], [0, 1, 0]) == 1.0
    assert accuracy([0.5], [1]) == 0.0


def test_brier_binary_by_hand():
    # (0.9-1)^2 = 0.01, (0.2-1)^2 = 0.64, (0.3-0)^2 = 0.09 -> mean 0.74/3
    assert brier_score([0.9, 0.2, 0.3], [1, 1, 0]) == pytest.approx(0.74 / 3, rel=1e-15)


def test_brier_multiclass_by_hand():
    p = [[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]]
    y = [0, 1]
    # row 1: 0.16 + 0.09 + 0.01 = 0.26; row 2: 0.04 + 0.64 + 0.36 = 1.04
    assert brier_score(p, y) == pytest.approx((0.26 + 1.04) / 2, rel=1e-14)


def test_brier_two_columns_is_twice_binary():
    p1 = np.array([0.9, 0.2, 0.3, 0.65])
    y = np.array([1, 1, 0, 0])
    p2 = np.column_stack([1 - p1, p1])
    assert brier_score(p2, y) == pytest.approx(2 * brier_score(p1, y), rel=1e-14)


def test_log_loss_by_hand():
    p = [[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]
    y = [1, 2]
    assert log_loss(p, y) == pytest.approx(-(np.log(0.25) + np.log(0.8)) / 2, rel=1e-15)
    assert log_loss([0.5, 0.5], [0, 1]) == pytest.approx(np.log(2), rel=1e-15)


def test_log_loss_clips_zero_probability_of_true_class():
    assert log_loss([[1.0, 0.0]], [1]) == pytest.approx(-np.log(1e-15), rel=1e-15)
    assert log_loss([[1.0, 0.0]], [1], eps=1e-6) == pytest.approx(-np.log(1e-6), rel=1e-15)
    # a probability of 1 on the true class costs nothing
    assert log_loss([[1.0, 0.0]], [0]) == 0.0


# --- agreement with scikit-learn ----------------------------------------------------


def test_brier_binary_matches_sklearn():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=1000)
    y = (rng.uniform(size=1000) < p).astype(int)
    assert brier_score(p, y) == pytest.approx(metrics.brier_score_loss(y, p), rel=1e-13)


def test_brier_multiclass_matches_sklearn_unscaled():
    p, y = _random_multiclass()
    ref = metrics.brier_score_loss(y, p, labels=np.arange(4), scale_by_half=False)
    assert brier_score(p, y) == pytest.approx(ref, rel=1e-13)


def test_log_loss_matches_sklearn():
    p, y = _random_multiclass()
    assert log_loss(p, y) == pytest.approx(metrics.log_loss(y, p, labels=np.arange(4)), rel=1e-12)
    rng = np.random.default_rng(3)
    q = rng.uniform(0.01, 0.99, size=300)
    z = rng.integers(0, 2, size=300)
    assert log_loss(q, z) == pytest.approx(metrics.log_loss(z, q), rel=1e-12)


def test_accuracy_matches_sklearn():
    p, y = _random_multiclass()
    assert accuracy(p, y) == pytest.approx(metrics.accuracy_score(y, p.argmax(1)), abs=0)


# --- registry and validation --------------------------------------------------------


def test_scores_registry_row_values_average_to_the_score():
    from core.base.validation import check_probs_labels

    p, y = _random_multiclass()
    P, Y = check_probs_labels(p, y)
    for entry in SCORES:
        rows = entry.row_values(P, Y, binary=False)
        assert rows.shape == (P.shape[0],)
        assert rows.mean() == pytest.approx(entry.func(p, y), rel=1e-14)


def test_bad_inputs_raise_typed_errors():
    with pytest.raises(DataError, match="sum to 1"):
        brier_score([[0.5, 0.6]], [0])
    with pytest.raises(DataError, match="0..1"):
        accuracy([[0.5, 0.5]], [2])
    with pytest.raises(ConfigError, match="eps"):
        log_loss([0.5], [1], eps=0.0)


# --- Brier decomposition ------------------------------------------------------------


def test_brier_decomposition_by_hand_discrete_bins():
    # scores 0.2 (labels 0, 1) and 0.8 (labels 1, 1); binary: class-1 problem only
    d = brier_decomposition([0.2, 0.2, 0.8, 0.8], [0, 1, 1, 1], binning="discrete")
    assert d.reliability == pytest.approx(0.5 * 0.3**2 + 0.5 * 0.2**2, rel=1e-14)
    assert d.resolution == pytest.approx(0.5 * 0.25**2 + 0.5 * 0.25**2, rel=1e-14)
    assert d.uncertainty == pytest.approx(0.75 * 0.25, rel=1e-14)
    assert d.within_bin_variance == 0.0
    assert d.within_bin_covariance == 0.0
    assert d.brier == pytest.approx(brier_score([0.2, 0.2, 0.8, 0.8], [0, 1, 1, 1]), rel=1e-15)
    assert d.reliability - d.resolution + d.uncertainty == pytest.approx(d.brier, abs=1e-15)


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_brier_decomposition_identity_with_within_bin_terms(binning):
    p, y = _random_multiclass(n=2000, k=3, seed=5)
    d = brier_decomposition(p, y, binning=binning, n_bins=10)
    total = (
        d.reliability
        - d.resolution
        + d.uncertainty
        + d.within_bin_variance
        + d.within_bin_covariance
    )
    assert total == pytest.approx(d.brier, abs=1e-12)
    assert d.brier == pytest.approx(brier_score(p, y), rel=1e-14)
    # continuous scores: Murphy's three terms alone are not the Brier score
    assert abs(d.reliability - d.resolution + d.uncertainty - d.brier) > 1e-6
    assert d.within_bin_variance > 0


def test_brier_decomposition_binary_uncertainty_is_label_variance():
    rng = np.random.default_rng(2)
    p = rng.uniform(size=400)
    y = (rng.uniform(size=400) < p).astype(int)
    d = brier_decomposition(p, y, n_bins=5)
    assert d.uncertainty == pytest.approx(y.mean() * (1 - y.mean()), rel=1e-14)


def test_score_rows_options_and_errors():
    from core.stats.scores import score_rows

    p = np.array([[0.0, 1.0], [0.5, 0.5]])
    y = np.array([0, 1])
    np.testing.assert_allclose(score_rows("log-loss", p, y, eps=1e-3), [-np.log(1e-3), np.log(2)])
    # binary convention follows the input shape
    np.testing.assert_allclose(score_rows("brier", [0.9, 0.2], [1, 1]), [0.01, 0.64])
    np.testing.assert_allclose(score_rows("brier", [[0.1, 0.9], [0.8, 0.2]], [1, 1]), [0.02, 1.28])
    with pytest.raises(ConfigError, match="no option"):
        score_rows("accuracy", p, y, eps=0.1)
    with pytest.raises(ConfigError, match="eps"):
        score_rows("log-loss", p, y, eps=2.0)
    with pytest.raises(ConfigError, match="Unknown score 'auc'"):
        score_rows("auc", p, y)
