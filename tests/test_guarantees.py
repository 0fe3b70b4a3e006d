import math

import numpy as np
import pytest

from core.base.errors import ConfigError
from core.stats.guarantees import guarantee_epsilon, largest_bins


def test_epsilon_matches_equation_8_by_hand():
    # n = 1000, B = 5: floor(n/B) - 1 = 199; sqrt(log(2*5/0.1) / (2*199))
    assert guarantee_epsilon(1000, 5) == pytest.approx(math.sqrt(math.log(100) / 398), rel=1e-15)


def test_epsilon_reference_values():
    # Gupta & Ramdas (2021) Eq. (8), values in reference digest 004 §3.8
    np.testing.assert_allclose(
        [
            guarantee_epsilon(1000, 5),
            guarantee_epsilon(5000, 10),
            guarantee_epsilon(20000, 22),
        ],
        [0.1076, 0.0729, 0.0579],
        atol=5e-5,
    )


def test_no_guarantee_below_two_points_per_bin():
    assert guarantee_epsilon(30, 20) == math.inf
    assert largest_bins(1, max_bins=1000) is None


def test_largest_bins_table():
    # reference digest 004 §3.7: largest B with epsilon <= 0.1 (and 0.05), alpha = 0.1
    ns = [500, 1_000, 2_000, 3_000, 5_000, 7_000, 10_000, 20_000]
    assert [largest_bins(n, max_bins=1000) for n in ns] == [2, 4, 7, 11, 17, 22, 30, 56]
    assert [largest_bins(n, 0.05, max_bins=1000) for n in ns] == [None, 1, 2, 3, 5, 7, 9, 17]


def test_largest_bins_agrees_with_a_scan():
    for n in (50, 333, 4_321):
        scan = [b for b in range(1, n // 2 + 1) if guarantee_epsilon(n, b) <= 0.2]
        assert largest_bins(n, 0.2, max_bins=1000) == (max(scan) if scan else None)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1])
def test_bad_alpha(alpha):
    with pytest.raises(ConfigError, match="failure probability"):
        guarantee_epsilon(100, 2, alpha)
