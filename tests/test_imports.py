"""Layering of core: plotly only in core/figures/ and what draws figures, streamlit nowhere."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core"
FIGURES = CORE / "figures"


def _below_figures() -> tuple[str, ...]:
    """The modules of the import contract that must not reach plotly (pyproject.toml)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = (
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c["type"] == "forbidden" and c["forbidden_modules"] == ["plotly"]
    )
    return tuple(contract["source_modules"])


def _outside_figures() -> list[Path]:
    return sorted(p for p in CORE.rglob("*.py") if FIGURES not in p.parents)


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_every_module_below_the_figures_is_in_the_plotly_contract():
    # diagrams, report and cli draw figures; everything else of core lies below them
    drawing = {"core", "core.figures.diagrams", "core.report", "core.cli"}
    below = _below_figures()
    for path in _outside_figures():
        name = _module(path)
        if name not in drawing:
            assert any(name == m or name.startswith(m + ".") for m in below), name


def _imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_plotly_and_streamlit_are_not_imported_outside_the_figures_package():
    # every import statement, those inside functions too
    found = {
        str(p.relative_to(ROOT)): sorted(_imported(p) & {"plotly", "streamlit"})
        for p in _outside_figures()
    }
    assert {k: v for k, v in found.items() if v} == {}
    assert "plotly" in _imported(FIGURES / "style.py")  # the check does see imports


def test_importing_core_modules_below_the_figures_does_not_load_plotly():
    below = _below_figures()
    modules = [
        name
        for name in map(_module, _outside_figures())
        if any(name == m or name.startswith(m + ".") for m in below)
    ]
    assert len(modules) > 100
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('plotly', 'streamlit')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_core_and_its_array_paths_do_not_load_pandas_or_pyarrow():
    # pandas (and pyarrow, which pandas loads) cost ~0.2 s: only DataFrames and files need them
    code = (
        "import sys\n"
        "import numpy as np\n"
        "import core\n"
        "heavy = lambda: sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules)\n"
        "print(heavy())\n"
        "p = np.linspace(0.01, 0.99, 200); y = (p > 0.4).astype(int)\n"
        "core.calibration_error(p, y, lens='binary', binning='equal-mass')\n"
        "core.calibration_error(np.column_stack([1 - p, p]), y, lens='classwise')\n"
        "core.calibration_error(p, y, estimator='skce-ul')\n"
        "core.as_predictions((p, y)).digest\n"
        "core.bin_stats(p, y)\n"
        "print(heavy())\n"
        "core.calibration_error(p, y, lens='binary').bin_table\n"
        "print(heavy())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    lines = out.stdout.strip().splitlines()
    assert lines[:2] == ["[]", "[]"], out.stdout
    assert "pandas" in lines[2]  # a DataFrame still comes back when asked for
