"""The tail functions of the tests and intervals equal scipy.stats's, and spare its import."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from core.base.tails import chi2_sf, norm_ppf, norm_sf


def test_norm_ppf_is_scipy_stats_to_the_bit():
    rng = np.random.default_rng(11)
    q = np.concatenate([[0.0, 1e-300, 1e-12, 0.025, 0.5, 0.975, 1 - 1e-12, 1.0], rng.random(500)])
    np.testing.assert_array_equal(norm_ppf(q), stats.norm.ppf(q))
    assert norm_ppf(0.975) == pytest.approx(1.959963984540054, rel=1e-15)
    assert np.isnan(norm_ppf(1.5)) and np.isnan(stats.norm.ppf(1.5))


def test_norm_sf_is_scipy_stats_to_the_bit():
    rng = np.random.default_rng(12)
    x = np.concatenate(
        [[-np.inf, -40.0, -1.96, 0.0, 1.96, 8.0, 40.0, np.inf], rng.normal(0, 4, 500)]
    )
    np.testing.assert_array_equal(norm_sf(x), stats.norm.sf(x))
    assert norm_sf(0.0) == 0.5
    assert np.isnan(norm_sf(np.nan))


def test_chi2_sf_is_scipy_stats_to_the_bit_with_its_edges():
    rng = np.random.default_rng(13)
    x = np.concatenate([[-3.0, -0.0, 0.0, 1e-9, 3.84, 50.0, 1e4, np.inf], rng.gamma(2, 5, 300)])
    for df in (0.5, 1, 2, 7, 13, 100, 0, -1):
        want = stats.chi2.sf(x, df)
        got = chi2_sf(x, df)
        np.testing.assert_array_equal(got, want)
    # the 5 % point of χ²(1) and the tail below the support
    assert chi2_sf(3.841458820694124, 1) == pytest.approx(0.05, rel=1e-12)
    assert chi2_sf(-1.0, 3) == 1.0
    assert np.isnan(chi2_sf(np.nan, 3)) and np.isnan(chi2_sf(2.0, 0))


def test_a_metrics_command_does_not_import_scipy_stats(tmp_path):
    rng = np.random.default_rng(14)
    s = rng.random(400)
    y = (rng.random(400) < s).astype(int)
    path = tmp_path / "p.csv"
    np.savetxt(path, np.column_stack([s, y]), delimiter=",", header="score,label", comments="")
    code = (
        "import sys\n"
        "from core.cli import main\n"
        f"rc = main(['metrics', {str(path)!r}, '--json'])\n"
        "assert rc == 0, rc\n"
        "assert 'scipy.stats' not in sys.modules, 'scipy.stats was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"skce-ul"' in done.stdout and '"mcb"' in done.stdout
