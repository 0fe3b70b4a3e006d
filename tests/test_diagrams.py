"""The registry of reliability diagrams: the binned one is the analysis; kinds are checked."""

from __future__ import annotations

import numpy as np
import pytest

from core import AnalysisConfig, ConfigError, analyze
from core.figures.diagrams import DIAGRAMS, diagram_figure, reliability_diagram


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    p = rng.uniform(size=400)
    return p, (rng.uniform(size=400) < p**1.3).astype(int)


def test_binned_diagram_is_the_analysis() -> None:
    config = AnalysisConfig(lens="binary", n_resamples=0)
    drawn = reliability_diagram(_data(), config, kind="binned")
    direct = analyze(_data(), config)
    assert drawn.headline.value == direct.headline.value
    assert drawn.bin_table.equals(direct.bin_table)
    fig = diagram_figure("binned", drawn, interval_label="95% Wilson")
    assert len(fig.data) > 0


def test_unknown_kind_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match="binned"):
        reliability_diagram(_data(), kind="hexagonal")


def test_exactly_one_diagram_is_the_analysis() -> None:
    assert DIAGRAMS.names(from_analysis=True) == ["binned"]
    for info in DIAGRAMS:
        import core.figures

        assert callable(info.figure), info.name
        assert getattr(core.figures, info.figure.__name__) is info.figure, info.name
