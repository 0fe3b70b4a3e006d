"""Each file of a stream once: a symlink loop, a symlinked folder or a repeated path read once."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pandas as pd
import pytest

from core.analyses.analysis import AnalysisConfig, analyze
from core.data import load_predictions
from core.stream.analysis import analyze_stream
from core.stream.sources import resolve_parts

pytest.importorskip("pyarrow")

CONFIG = AnalysisConfig(lens="binary", n_resamples=0)


@pytest.fixture()
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(21)
    p = rng.uniform(size=400)
    return pd.DataFrame({"p": p, "label": (rng.uniform(size=400) < p).astype(int)})


def _write(folder, frame, parts=2):
    folder.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), parts)):
        frame.iloc[rows].to_parquet(folder / f"part-{i}.parquet", index=False)


def _repeated(result):
    return [f for f in result.input.lint.findings if f.code == "repeated-parts"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
def test_a_symlink_loop_is_read_once_and_said(tmp_path, frame):
    data = tmp_path / "data"
    _write(data, frame)
    os.symlink(data, data / "loop")  # data/loop/loop/... : the recursive glob follows it
    pattern = str(data / "**" / "*.parquet")
    parts = resolve_parts(pattern)
    assert [os.path.basename(p.path) for p in parts] == ["part-0.parquet", "part-1.parquet"]
    assert len(parts.repeated) >= 2  # each part reached again through the loop
    got = analyze_stream(pattern, CONFIG)
    want = analyze(load_predictions(frame), CONFIG)
    assert got.input.n == len(frame)
    assert got.analysis.headline.value == pytest.approx(want.headline.value, rel=1e-12, abs=0)
    (finding,) = _repeated(got)
    assert finding.severity == "warning" and finding.count == len(parts.repeated)
    assert "read once" in finding.message


def test_a_path_given_twice_is_read_once(tmp_path, frame):
    _write(tmp_path, frame, parts=1)
    path = str(tmp_path / "part-0.parquet")
    got = analyze_stream([path, path], CONFIG)
    assert got.input.n == len(frame)
    assert _repeated(got)[0].count == 1
    # one file named once: no finding
    assert not _repeated(analyze_stream(path, CONFIG))


def test_the_parts_keep_their_repeats_through_pickling(tmp_path, frame):
    # the Dask engine ships parts to its workers
    _write(tmp_path, frame, parts=1)
    path = str(tmp_path / "part-0.parquet")
    parts = resolve_parts([path, path])
    again = pickle.loads(pickle.dumps(parts))
    assert tuple(again) == tuple(parts) and again.repeated == (path,)
