"""AppTest: what a large upload does on first render of the pages whose work grows with n."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
N = 250_000


@pytest.fixture(scope="module")
def big_csv() -> bytes:
    rng = np.random.default_rng(12)
    p = rng.uniform(size=N)
    y = (rng.uniform(size=N) < p**1.2).astype(int)
    return pd.DataFrame({"p": p.round(6), "label": y}).to_csv(index=False).encode()


def _uploaded(big_csv: bytes, page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.file_uploader(key="upload").set_value(("big.csv", big_csv, "text/csv"))
    at.run()
    assert not at.exception, at.exception
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_the_world_fit_waits_for_a_click_above_the_auto_rows(big_csv: bytes) -> None:
    at = _uploaded(big_csv, "app_pages/bias.py")
    assert not any("aic" in df.value.columns for df in at.dataframe)
    assert any(f"{N:,} rows" in i.value for i in at.info)
    at.button(key="bias_fit_button").click().run()
    assert not at.exception, at.exception
    glm = next(df.value for df in at.dataframe if "aic" in df.value.columns)
    assert len(glm) == 12


def test_validity_runs_fewer_default_splits_on_many_rows(big_csv: bytes) -> None:
    at = _uploaded(big_csv, "app_pages/validity.py")
    assert at.number_input(key="validity_runs").value == 10_000_000 // N
