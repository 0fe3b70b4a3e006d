"""Text columns by distinct value: the values of ``astype(str)``, one ``str`` per distinct value."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.base.errors import DataError
from core.data.text import MAX_NAME_CHARS, role_values, rows_in, text_codes, text_values


def _reference(values: np.ndarray) -> np.ndarray:
    # what the loaders made before: missing as "", every value through str
    return np.where(pd.isna(values), "", values).astype(str).astype(object)


@pytest.mark.parametrize(
    "values",
    [
        np.array(["b", "a", "b", None, "a", np.nan, 1, "1", 1.5, True], dtype=object),
        np.array([], dtype=object),
        np.array(["x"] * 5, dtype=object),
    ],
)
def test_values_are_those_of_astype_str(values):
    got = text_values(values)
    assert got.dtype == object and got.tolist() == _reference(values).tolist()
    codes, names = text_codes(values)
    assert names[codes].tolist() == got.tolist()
    # codes in order of first appearance, one per distinct printed value
    assert names.tolist() == list(dict.fromkeys(got.tolist()))


def test_rows_sharing_a_string_share_it_after():
    long = "m" * 100_000
    values = np.empty(1_000, dtype=object)
    values[:] = long
    got = text_values(values)
    assert all(v is got[0] for v in got)  # one string, not a thousand copies


def test_rows_in_and_the_name_limit():
    values = np.array(["a", "b", "c", "a"], dtype=object)
    assert rows_in(values, ("a", "c")).tolist() == [True, False, True, True]
    ok = np.array(["x" * MAX_NAME_CHARS], dtype=object)
    assert role_values(ok, "model", str).tolist() == ok.tolist()
    long = np.array(["a", "y" * (MAX_NAME_CHARS + 1)], dtype=object)
    with pytest.raises(DataError, match=r"^row 1: a value of the group column is 1,025 characters"):
        role_values(long, "group", lambda i: f"row {i}")
