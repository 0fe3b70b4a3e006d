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


# ----------------------------------------------------------------------------- CSV cells


def test_safe_csv_neutralizes_formula_cells_and_keeps_numbers():
    import csv
    import io

    from core.export import safe_csv

    frame = pd.DataFrame(
        {
            "model": ['=HYPERLINK("https://evil.example","x")', "+1+1", "-2+3", "@SUM(A1:A2)"],
            "note": ["\tTAB", "\rCR", "ok\r=1+1", None],
            "gap": [-0.25, 0.5, -1.0, 2.0],  # numbers stay numbers, negative ones too
            "n": [-3, 1, 2, 3],
            "=cmd|' /C calc'!A0": ["a", "b", "c", "d"],  # a header from a user's column
        }
    )
    frame["kind"] = pd.Categorical(["=a", "b", "=a", "b"])
    text = safe_csv(frame)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == ["model", "note", "gap", "n", "'=cmd|' /C calc'!A0", "kind"]
    body = {name: [r[i] for r in rows[1:]] for i, name in enumerate(rows[0])}
    assert body["model"] == ["'" + v for v in frame.model]
    assert len(rows) == 1 + len(frame)  # a line break inside a cell is quoted, not a new row
    assert body["note"] == ["'\tTAB", "'\rCR", "ok\r=1+1", ""]
    assert body["gap"] == ["-0.25", "0.5", "-1.0", "2.0"]
    assert body["n"] == ["-3", "1", "2", "3"]
    assert body["kind"] == ["'=a", "b", "'=a", "b"]
    for cells in body.values():
        assert not any(c.startswith(("=", "+", "@", "\t", "\r")) for c in cells)
    # the frame itself is left alone
    assert frame.model.iloc[0].startswith("=")
    with_index = safe_csv(frame.set_index("model")[["gap"]], index=True)
    assert with_index.splitlines()[1].startswith("\"'=HYPERLINK")


def test_every_csv_download_goes_through_safe_csv():
    # a DataFrame written with to_csv skips the neutralization: only core.export may call it
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    offenders = [
        str(p.relative_to(root))
        for p in [*root.joinpath("dashboard").rglob("*.py"), *root.joinpath("core").rglob("*.py")]
        if p.name != "export.py" and re.search(r"\.to_csv\(", p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    pages = root / "dashboard" / "app_pages"
    csv_pages = [p for p in pages.glob("*.py") if '"text/csv"' in p.read_text(encoding="utf-8")]
    assert len(csv_pages) >= 4
    for page in csv_pages:
        assert "safe_csv(" in page.read_text(encoding="utf-8"), page.name
