"""Reviews of many models: the 14 CIFAR-10 networks of ``../shared/data`` (10,000 × 10 each).

Three rows, each the median of five calls (``benchmarks.common.round_robin``, in turn with the
floor), against the target of issue 29 (< 10 s each):

- the Compare page's core work: ``compare_models`` of the 14 networks with the page's defaults
  (the default metrics, 1,000 resamples, the SKCE block test), memos cleared first;
- the Report page's: ``build_report`` in the dashboard's one process (``workers=1``: threads);
- ``calibscope report`` on the 14 files, a fresh process (imports, reading, the HTML file).

Floor: the one-pass top-label equal-width statistics (argmax, take, three ``bincount``) of the
14 matrices. Without the data folder the module returns one row saying so.

Run: ``python -m benchmarks.run --only reviews``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.bench_pages import _clear_kernel_memos, _top_label_floor
from benchmarks.common import round_robin, row
from core.analyses.analysis import AnalysisConfig
from core.analyses.model_comparison import compare_models
from core.data import load_models
from core.report import DEFAULT_TEST, build_report

#: The 14 networks' predictions and their labels (outside the project; never copied into it).
CIFAR = Path(__file__).resolve().parents[2] / "shared" / "data" / "cifar10-14-networks"


def model_files(folder: Path = CIFAR) -> list[str]:
    """Return the networks' prediction files (every CSV but the labels), sorted."""
    return sorted(str(f) for f in folder.glob("*.csv") if f.name != "labels.csv")


def _cli_report(files: list[str], out: Path) -> None:
    labels = str(CIFAR / "labels.csv")
    command = [sys.executable, "-m", "core.cli", "report", *files, "--labels", labels]
    subprocess.run([*command, "-o", str(out)], check=True, capture_output=True)


def run(quick: bool) -> list[dict[str, Any]]:
    """Time the Compare page, the Report page and ``calibscope report`` on the 14 networks."""
    files = model_files()
    if not files:
        return [row("reviews of 14 networks", float("nan"), None, f"no data at {CIFAR}")]
    if quick:
        files = files[:3]
    pred = load_models(files, labels=str(CIFAR / "labels.csv"))
    models = pred.by_model()
    config = AnalysisConfig()

    def floor() -> None:
        for m in models.values():
            _top_label_floor(m.probs, m.labels)

    def compare_page() -> None:
        _clear_kernel_memos()
        compare_models(models, config=config, n_resamples=1000, test=DEFAULT_TEST)

    def report_page() -> None:
        _clear_kernel_memos()
        build_report(pred, config=config, workers=1)

    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "report.html"
        t_floor, t_compare, t_page, t_cli = round_robin(
            [floor, compare_page, report_page, lambda: _cli_report(files, out)]
        )
    n = len(files)
    return [
        row(f"floor {n} networks: one-pass top-label EW", t_floor, t_floor),
        row(
            f"Compare page, {n} networks",
            t_compare,
            t_floor,
            "compare_models: default metrics, 1,000 resamples, SKCE block test",
            target="reviews",
        ),
        row(
            f"Report page, {n} networks",
            t_page,
            t_floor,
            "build_report, one process (threads)",
            target="reviews",
        ),
        row(
            f"calibscope report, {n} files",
            t_cli,
            t_floor,
            "fresh process: imports, reading, HTML; workers: process_count",
            target="reviews",
        ),
    ]
