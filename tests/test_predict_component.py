"""``predict_component``: the lens's column of ``predict_proba``, to the bit, without the matrix."""

from __future__ import annotations

import numpy as np
import pytest

from core.base.errors import ConfigError
from core.recalibration import RECALIBRATORS
from core.recalibration.base import OneDimRecalibrator

ONE_DIMENSIONAL = [
    name
    for name in RECALIBRATORS.names()
    if issubclass(RECALIBRATORS.get(name).func, OneDimRecalibrator)
]


def _data(k: int, n: int = 3000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.6), n)
    y = np.minimum(
        (rng.random(n)[:, None] >= (p**1.3 / (p**1.3).sum(1, keepdims=True)).cumsum(1)).sum(1),
        k - 1,
    )
    return p, y


def test_the_one_dimensional_recalibrators_are_there():
    assert {"isotonic", "histogram-umd", "scaling-binning", "platt"} <= set(ONE_DIMENSIONAL)


@pytest.mark.parametrize("name", ONE_DIMENSIONAL)
@pytest.mark.parametrize(("lens", "k"), [("binary", 2), ("top-label", 4)])
def test_predict_component_is_the_lens_column_of_predict_proba(name, lens, k):
    p, y = _data(k)
    rec = RECALIBRATORS.get(name).func(lens=lens).fit(p[:2000], y[:2000])
    test = p[2000:]
    column = 1 if lens == "binary" else test.argmax(axis=1)
    want = rec.predict_proba(test)[np.arange(test.shape[0]), column]
    np.testing.assert_array_equal(rec.predict_component(test), want)


def test_the_classwise_lens_has_no_one_component():
    p, y = _data(3)
    rec = RECALIBRATORS.get("histogram-umd").func(lens="classwise").fit(p, y)
    with pytest.raises(ConfigError, match="predict_proba"):
        rec.predict_component(p)
