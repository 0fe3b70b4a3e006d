"""One description per whole-number option (core.base.options), read by the API, the CLI and the sidebar."""

from __future__ import annotations

import argparse

import pytest

from core.analyses.analysis import AnalysisConfig
from core.base.errors import ConfigError
from core.base.options import BATCH_ROWS, N_BINS, N_RESAMPLES, WholeNumber
from core.cli import build_parser


def test_check_takes_whole_numbers_digit_strings_and_integral_floats():
    assert N_BINS.check(15) == N_BINS.check("15") == N_BINS.check(15.0) == 15
    assert N_RESAMPLES.check(0) == 0
    with pytest.raises(ConfigError, match=r"n_bins must be a whole number ≥ 1; got 0\."):
        N_BINS.check(0)
    with pytest.raises(ConfigError, match=r"n_bins must be a whole number ≥ 1; got 2\.5\."):
        N_BINS.check(2.5)
    with pytest.raises(ConfigError, match=r"n_bins must be a whole number ≥ 1; got True\."):
        N_BINS.check(True)
    with pytest.raises(ConfigError, match=r"n_bins must be at most 10,000; got 10,001\."):
        N_BINS.check(10_001)


def test_parse_is_the_command_lines_reading():
    assert N_BINS.parse("1e3") == N_BINS.parse("1_000") == 1000
    with pytest.raises(argparse.ArgumentTypeError, match=r"from 1 to 10,000 \(bins\); got 0"):
        N_BINS.parse("0")
    with pytest.raises(argparse.ArgumentTypeError, match=r"got 'x'"):
        N_BINS.parse("x")


def test_every_surface_reads_one_maximum():
    top = N_BINS.maximum
    assert AnalysisConfig(n_bins=top).n_bins == top
    with pytest.raises(ConfigError):
        AnalysisConfig(n_bins=top + 1)
    args = build_parser().parse_args(["metrics", "f.csv", "--bins", str(top)])
    assert args.bins == top
    assert build_parser().parse_args(["metrics", "f.csv"]).batch_rows == BATCH_ROWS.default
    with pytest.raises(SystemExit):
        build_parser().parse_args(["metrics", "f.csv", "--bins", str(top + 1)])
    # the defaults of the config are the options'
    assert AnalysisConfig().n_bins == N_BINS.default
    assert AnalysisConfig().n_resamples == N_RESAMPLES.default


def test_an_option_is_frozen():
    with pytest.raises(AttributeError):
        N_BINS.maximum = 5  # type: ignore[misc]
    assert isinstance(N_BINS, WholeNumber)
