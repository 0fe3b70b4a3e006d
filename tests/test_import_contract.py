"""The import contract: layers that import downward only, no cycle, every module alone.

``lint-imports`` (import-linter, configured in ``pyproject.toml``) checks the layers and the
forbidden imports; these tests add what a layers contract cannot see: a cycle inside one
tier, a module that fails to import on its own in a fresh interpreter, and an import made
inside a function to dodge a cycle.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Where an import inside a function is by design: the command line parses its arguments
#: before it loads the analysis a command needs.
LAZY = {ROOT / "core" / "cli.py"}


def _modules(package: str) -> list[str]:
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        out.append(".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"))
    return out


def _cycles(graph: grimp.ImportGraph, modules: list[str]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in modules:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in modules:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def test_lint_imports_keeps_every_contract():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    out = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "0 broken" in out.stdout


def test_no_cycle_counting_imports_inside_functions():
    graph = grimp.build_graph("core", "dashboard", include_external_packages=False)
    modules = [m for m in graph.modules if m.split(".")[0] in ("core", "dashboard")]
    assert len(modules) > 120
    assert _cycles(graph, modules) == []


def test_the_cycle_search_finds_a_cycle():
    graph = grimp.ImportGraph()
    for m in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(m)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.z", imported="a.x")
    assert _cycles(graph, ["a.x", "a.y", "a.z"]) == [["a.x", "a.y"]]


def _late_imports(path: Path) -> list[str]:
    """Imports of core or dashboard modules made inside a function of ``path``."""
    late = []
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.ImportFrom):
                top = (node.module or "").split(".")[0]
                if node.level or top in ("core", "dashboard"):
                    late.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.Import):
                if any(a.name.split(".")[0] in ("core", "dashboard") for a in node.names):
                    late.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return late


def test_modules_import_each_other_at_the_top():
    # an import inside a function only for an optional heavy dependency (dask, kaleido, ...)
    paths = [p for pkg in ("core", "dashboard") for p in sorted((ROOT / pkg).rglob("*.py"))]
    late = [hit for p in paths if p not in LAZY for hit in _late_imports(p)]
    assert late == []
    assert _late_imports(ROOT / "core" / "cli.py")  # the check does see them


#: Run in a fresh interpreter: the third-party libraries are loaded once, then each module
#: of core is imported in a forked child that has loaded nothing of core.
_EACH_ALONE = """
import importlib, os, sys, traceback
import numpy, scipy.special, scipy.optimize, pandas, pyarrow, pyarrow.parquet, plotly.graph_objects
failed = []
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            importlib.import_module(name)
        except BaseException:
            traceback.print_exc()
            code = 1
        os._exit(code)
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]):
        failed.append(name)
print(repr(failed))
"""


def _import_alone(modules: list[str]) -> tuple[list[str], str]:
    out = subprocess.run(
        [sys.executable, "-c", _EACH_ALONE, *modules], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return ast.literal_eval(out.stdout.strip().splitlines()[-1]), out.stderr[-3000:]


def test_every_core_module_imports_alone_in_a_fresh_interpreter():
    modules = _modules("core")
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_import_alone, [modules[0::2], modules[1::2]]))
    assert [m for failed, _ in results for m in failed] == [], "".join(e for _, e in results)


def test_the_fresh_import_check_sees_a_failing_module():
    failed, err = _import_alone(["core.base.errors", "core.no_such_module"])
    assert failed == ["core.no_such_module"]
    assert "ModuleNotFoundError" in err


@pytest.mark.parametrize(
    "statement",
    [
        "from core.stats.corp import corp_decomposition",
        "from core.analyses.corp_diagram import corp_diagram",
        "from core.analyses.smooth import smooth_diagram",
        "from core.inference.bootstrap import bootstrap_many",
        "from core.analyses.peers import peer_table",
        "from core.figures.diagrams import DIAGRAMS; assert DIAGRAMS.names() == ['binned', 'smooth', 'corp']",
    ],
)
def test_entry_points_import_first_in_a_fresh_interpreter(statement):
    out = subprocess.run(
        [sys.executable, "-c", statement], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-1000:]


_REGISTRY_ORDER = """
import importlib, sys
importlib.import_module(sys.argv[1])
from core.figures.diagrams import DIAGRAMS
from core.estimators import ESTIMATORS
from core.analyses.calibration_tests import TESTS
from core.recalibration import RECALIBRATORS
print([r.names() for r in (ESTIMATORS, DIAGRAMS, TESTS, RECALIBRATORS)])
"""


def test_registries_keep_their_order_whatever_is_imported_first():
    # the order of the pages' tables and of the JSON is the registries' order
    firsts = [
        "core.estimators.smooth",
        "core.stats.corp",
        "core.figures.diagrams",
        "core.stream.analysis",
    ]
    seen = set()
    for first in firsts:
        out = subprocess.run(
            [sys.executable, "-c", _REGISTRY_ORDER, first], cwd=ROOT, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr[-1000:]
        seen.add(out.stdout.strip())
    assert len(seen) == 1
    estimators, diagrams = ast.literal_eval(seen.pop())[:2]
    assert diagrams == ["binned", "smooth", "corp"]
    assert estimators.index("average") + 1 == estimators.index("smooth") < estimators.index("mcb")


#: The cache's calls that compute: only dashboard.calls makes them.
CACHE_CALLS = {"compute", "run_with_progress"}


def _cache_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno} cache.{node.func.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "cache"
        and node.func.attr in CACHE_CALLS
    ]


def test_pages_reach_core_through_the_cached_calls():
    # pages, sections, the sidebar and the widgets call dashboard.calls; the cache's computing
    # calls are made there (and in the session state, which loads the data)
    dashboard = ROOT / "dashboard"
    files = [
        *sorted((dashboard / "app_pages").glob("*.py")),
        *sorted((dashboard / "sections").glob("*.py")),
        dashboard / "sidebar.py",
        dashboard / "widgets.py",
        dashboard / "app.py",
    ]
    found = [hit for path in files for hit in _cache_calls(path)]
    assert not found, found
    # and the check sees one
    assert _cache_calls(dashboard / "calls.py")
