"""Intervals are the same bits whatever the BLAS thread count (``OPENBLAS_NUM_THREADS``).

A threaded BLAS splits a long dot product by its thread count; the cell bootstrap's law
(its moments, the root of its covariance and the draws) runs on one BLAS thread, so a
classwise analysis of 20,000 × 10 rows — which differed in 12 of its numbers before — is the
same with one BLAS thread and with two. Each run is a fresh interpreter, since the thread
count is read when the library loads.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_RUN = """
import hashlib, json
import numpy as np
from core.analyses.analysis import AnalysisConfig, analyze
rng = np.random.default_rng(0)
n, k = 20_000, 10
p = rng.dirichlet(np.ones(k) * 0.3, n)
y = (p.cumsum(axis=1) > rng.uniform(size=(n, 1))).argmax(axis=1)
config = AnalysisConfig(lens="classwise", n_resamples=200, bootstrap="cells")
record = analyze((p, y), config).to_record()
print(hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest())
"""


def _digest(threads: int) -> str:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    done = subprocess.run(
        [sys.executable, "-c", _RUN], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_classwise_cell_intervals_do_not_depend_on_blas_threads():
    assert _digest(1) == _digest(2)
