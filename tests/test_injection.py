"""User strings stay data: digests, cache keys, CSV cells, figure text and dashboard Markdown.

Model names, class names, file names and the report title come from whoever made the file
or the link. None of them may turn into a link, an image, a formula, a restyled figure or
another session's cached result.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.data import load_predictions

pytest.importorskip("streamlit")


def _frame(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n)
    return pd.DataFrame({"p": p.round(6), "label": (rng.uniform(size=n) < p).astype(int)})


# ----------------------------------------------------------------------------- cache keys


def test_cache_keys_tell_equal_rows_of_different_files_apart():
    from dashboard import cache

    raw = _frame().to_csv(index=False).encode()
    a = load_predictions(raw, name="a.csv")
    b = load_predictions(raw, name="b.csv")
    assert a.digest == b.digest  # the same rows
    # ... but a cached result (a report's title, a model's source) names its file
    assert cache.data_key(a) != cache.data_key(b)
    assert cache.data_key(a) == cache.data_key(load_predictions(raw, name="a.csv"))
