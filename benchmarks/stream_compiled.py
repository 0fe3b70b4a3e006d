"""Reference, compiled: the stream's exact statistics as one fused loop per pass (numba).

The same statistics as the numpy reference of :mod:`benchmarks.bench_scale`
(``_STREAM_FLOOR``), on the same two scans, each pass one compiled loop over a batch's rows
instead of a dozen whole-array numpy operations: per (equal-width bin, label) cell the
count and the sums of s, s², s³, s⁴, of the log loss and its square and of the hits; the
linear SKCE's pair terms; then the label-binned distances. It measures what fused compiled
kernels would cost a stream's statistics, for the decision the stream target needs (numpy
alone cannot meet it; nor can compiled statistics on the engine's load path, measured by
``_LOAD_PATH``: ``docs/benchmarks.md``). numba comes with the bench extra; without it the benchmark
leaves this row out and says so.

``python -m benchmarks.stream_compiled PART ...`` prints the label-binned ECE, the plug-in ECE
and the Brier score, as the numpy reference does. Compiled kernels are cached beside this
file (``__pycache__``), so only a first run compiles.
"""

from __future__ import annotations

import sys

import numpy as np

try:
    import numba
except ImportError:  # the bench extra brings it
    numba = None

#: Equal-width bins and (bin, label) cells.
B, C = 15, 30


def _compiled(func):
    return numba.njit(cache=True, nogil=True)(func) if numba is not None else func


@_compiled
def cells_pass(s, y, sums, n_bins):  # pragma: no cover (compiled)
    n = s.shape[0]
    for i in range(n):
        x = s[i]
        label = y[i]
        k = min(int(x * n_bins), n_bins - 1)
        c = 2 * k + label
        x2 = x * x
        sums[0, c] += 1.0
        sums[1, c] += x
        sums[2, c] += x2
        sums[3, c] += x2 * x
        sums[4, c] += x2 * x * x
        q = max(x if label == 1 else 1.0 - x, 1e-15)
        loss = np.log(q)
        sums[5, c] += loss
        sums[6, c] += loss * loss
        sums[7, c] += 1.0 if (x >= 0.5) == (label == 1) else 0.0
    pairs = 0.0
    for i in range(0, n - 1, 2):
        r = (y[i] - s[i]) * (y[i + 1] - s[i + 1])
        pairs += r * np.exp(-abs(s[i] - s[i + 1]) / 0.1)
    return pairs


@_compiled
def distances_pass(s, means, out, n_bins):  # pragma: no cover (compiled)
    for i in range(s.shape[0]):
        x = s[i]
        k = min(int(x * n_bins), n_bins - 1)
        out[k] += abs(x - means[k])


def run(parts: list[str]) -> tuple[float, float, float]:
    """Return the label-binned ECE, the plug-in ECE and the Brier score of the parts."""
    import pyarrow.dataset as ds

    def batches(columns: list[str]):
        for b in ds.dataset(parts, format="parquet").to_batches(columns=columns):
            yield [b.column(j).to_numpy() for j in range(len(columns))]

    sums, pairs = np.zeros((8, C)), 0.0
    for s, y in batches(["score", "label"]):
        pairs += cells_pass(s, y, sums, B)
    counts = sums[0].reshape(B, 2).sum(1)
    means = sums[0].reshape(B, 2)[:, 1] / np.maximum(counts, 1)
    deviations = np.zeros(B)
    for (s,) in batches(["score"]):
        distances_pass(s, means, deviations, B)
    n, cells = counts.sum(), sums.reshape(8, B, 2)
    brier = cells[2].sum() - 2.0 * cells[1, :, 1].sum() + cells[0, :, 1].sum()
    ece = np.abs(cells[1].sum(1) - cells[0, :, 1]).sum()
    return float(deviations.sum() / n), float(ece / n), float(brier / n)


if __name__ == "__main__":
    if numba is None:
        sys.exit("numba is not installed (pip install -e '.[bench]')")
    print(*run(sys.argv[1:]))
