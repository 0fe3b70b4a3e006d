"""Numbers for people (core.base.numbers): hand-written cases of every rule."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from core.base.export import safe_csv
from core.base.numbers import (
    format_duration,
    format_frame,
    format_interval,
    format_number,
    format_percent,
    format_pvalue,
    people_table,
    tidy_floats,
    time_left,
)


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (0.000004034, "4.034e-6"),  # never ".000004034" nor "0.0000"
        (0.0001, "0.0001"),
        (0.041234, "0.04123"),
        (0.5, "0.5"),
        (0.99999, "1"),
        (9.99996, "10"),
        (123.456, "123.5"),
        (999999.6, "1e6"),
        (1234567.0, "1.235e6"),
        (-1.001e-15, "0"),  # floating noise
        (-0.0, "0"),
        (-0.000001, "-1e-6"),
        (-0.25, "-0.25"),
        (12000, "12,000"),
        (np.int64(7), "7"),
        (None, ""),
        (float("nan"), ""),
        (pd.NA, ""),
        (math.inf, "∞"),
        (True, "True"),
    ],
)
def test_format_number(x, text):
    assert format_number(x) == text


def test_significant_digits_and_sign():
    assert format_number(math.pi, 2) == "3.1"
    assert format_number(math.pi, 6) == "3.14159"
    assert format_number(0.031, signed=True) == "+0.031"
    assert format_number(-0.031, signed=True) == "-0.031"
    assert format_number(1e-13, signed=True) == "0"
    assert format_number(3e-13, zero_below=0) == "3e-13"


@pytest.mark.parametrize(
    ("p", "text"),
    [
        (0.0, "< 1e-16"),
        (2e-22, "< 1e-16"),
        (2.04e-10, "2e-10"),
        (3.4e-7, "3.4e-7"),
        (0.00123, "0.0012"),
        (0.04123, "0.041"),
        (0.8412, "0.84"),
        (1.0, "1"),
        (None, ""),
    ],
)
def test_format_pvalue(p, text):
    assert format_pvalue(p) == text


def test_interval_and_percent():
    assert format_interval(0.0371, 0.04612) == "[0.0371, 0.04612]"
    assert format_interval(float("nan"), 0.3) == ""
    assert format_percent(0.04123) == "4.1 %"
    assert format_percent(0.0) == "0 %"


def test_tidy_floats_removes_binary_noise_only():
    assert tidy_floats(0.1 + 0.2) == 0.3
    assert 0.1 + 0.2 != 0.3
    a = np.array([1 / 3, -2.5e-300, 0.0, np.nan, np.inf, 123456.789012345678])
    out = tidy_floats(a)
    assert out[0] == float("0.333333333333333")
    assert out[1] == -2.5e-300 and out[2] == 0
    assert np.isnan(out[3]) and out[4] == np.inf
    assert out[5] == 123456.789012346
    # values that already have 15 digits or fewer are unchanged
    rng = np.random.default_rng(3)
    exact = np.round(rng.uniform(size=100), 6)
    assert np.array_equal(tidy_floats(exact), exact)


def test_csv_is_full_precision_without_noise():
    frame = pd.DataFrame({"model": ["a", "b"], "value": [0.1 + 0.2, 4.034e-6], "n": [3, 4]})
    lines = safe_csv(frame).splitlines()
    assert lines == ["model,value,n", "a,0.3,3", "b,4.034e-06,4"]


def test_format_frame_and_people_table():
    frame = pd.DataFrame(
        {
            "metric": ["plugin", "skce-uq"],
            "label": ["Plug-in binned (ECE)", "SKCE (unbiased, quadratic)"],
            "value": [0.0412345, -1e-17],
            "low": [0.03, np.nan],
            "test p-value": [2e-22, 0.5],
        }
    )
    shown = people_table(frame)
    assert list(shown.columns) == ["metric", "value", "interval low", "test p-value"]
    assert "plugin" not in shown.to_string()
    fmts = format_frame(shown)
    cells = [[fmts[c](v) for c, v in row.items()] for _, row in shown.iterrows()]
    assert cells[0] == ["Plug-in binned (ECE)", "0.04123", "0.03", "< 1e-16"]
    assert cells[1] == ["SKCE (unbiased, quadratic)", "0", "", "0.5"]
    assert format_frame(frame, signed=["value"])["value"](0.5) == "+0.5"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.2, "1 s"), (1.4, "1 s"), (67.4, "67 s"), (89.6, "90 s"), (90, "2 min"), (250, "4 min"),
     (5399, "90 min"), (5400, "1.5 h"), (33_000, "9.2 h")],
)  # fmt: skip
def test_durations_are_rounded_to_the_unit_a_page_says(seconds, text):
    assert format_duration(seconds) == text


def test_the_time_left_assumes_the_pace_so_far():
    # a quarter done in 10 s: three quarters more at 40 s for the whole, 30 s left
    assert time_left(10.0, 0.25) == 30.0
    assert time_left(4.0, 0.8) == pytest.approx(1.0)
    # too early to tell, not started, or done
    assert time_left(0.9, 0.5) is None
    assert time_left(5.0, 0.0) is None and time_left(5.0, 1.0) is None
