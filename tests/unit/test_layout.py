"""The package stays a house a newcomer can find their way in: small modules, short
functions (unrolled timed loops excepted, each saying so), a docstring on every subpackage,
no import cycles, and a worker that imports only what it measures with."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = ROOT / "gpuoverhead"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@cache
def _tree(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once for the tests that walk it (the package's
    ~0.4 CPU-s a parse)."""
    return ast.parse(path.read_text())


@pytest.fixture(scope="module")
def trees() -> dict[Path, ast.Module]:
    """The package's modules' trees (the tests that walk them share this module's worker,
    conftest.py: shared_groups)."""
    return {path: _tree(path) for path in _modules()}


@pytest.fixture(scope="module")
def graph(trees) -> dict[str, set[str]]:
    return import_graph()


def test_no_module_over_the_limit():
    long = {p.relative_to(ROOT): n for p in _modules()
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, long


def test_no_function_over_the_limit_unless_it_says_it_is_unrolled(trees):
    long = []
    for path, tree in trees.items():
        lines = path.read_text().splitlines()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = node.end_lineno - node.lineno + 1
                above = " ".join(lines[max(0, node.lineno - 3):node.lineno - 1]).lower()
                if size > MAX_FUNCTION_LINES and "unrolled" not in above:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} {size}")
    assert not long, long


def test_every_subpackage_says_its_job():
    for init in PACKAGE.rglob("__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and doc.splitlines()[0].strip(), init


def import_graph(root: Path = ROOT, lazy: bool = True) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (the package `gpuoverhead` under `root`):
    at its top, and (with `lazy`) inside functions too, since an import deferred to run time
    still ties the two modules."""
    graph: dict[str, set[str]] = {}
    for path in sorted((root / "gpuoverhead").rglob("*.py")):
        name = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        graph[name] = set()
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("gpuoverhead") and (lazy or node.col_offset == 0):
                graph[name] |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import) and (lazy or node.col_offset == 0):
                graph[name] |= {a.name for a in node.names if a.name.startswith("gpuoverhead")}
    return {k: {d for d in v if d in graph and d != k} for k, v in graph.items()}


def test_the_cycle_check_finds_a_cycle_made_of_lazy_imports(tmp_path):
    package = tmp_path / "gpuoverhead"
    package.mkdir()
    (package / "a.py").write_text("def f():\n    from gpuoverhead.b import g\n")
    (package / "b.py").write_text("def g():\n    from gpuoverhead import a\n")
    assert _cycle(import_graph(tmp_path, lazy=False)) is None
    assert _cycle(import_graph(tmp_path)) == ["gpuoverhead.a", "gpuoverhead.b", "gpuoverhead.a"]


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of `graph` as the modules along it, or None."""
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> list[str] | None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return [*trail, node, dep][[*trail, node].index(dep):]
            if dep not in state and (found := visit(dep, [*trail, node])):
                return found
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node, [])):
            return found
    return None


def test_imports_have_no_cycles_even_through_lazy_imports(graph):
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


#: The floors of the house, top to bottom (docs/layout.md). A module imports only its own
#: folder and floors below it; the ground floor is every top-level module but the CLI.
FLOORS = ("cli", "run", "present", "results", "suite", "drivers", "methods", "workloads",
          "browser", "gpu", "analysis")


def _floor(module: str) -> tuple[int, str]:
    parts = module.split(".")[1:] or ["__init__"]
    name = "cli" if parts[0] == "__main__" else parts[0]
    if name in FLOORS:
        return FLOORS.index(name), name
    assert len(parts) == 1, f"{module}: a folder missing from FLOORS"
    return len(FLOORS), "ground"


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return [f"{m} -> {d}" for m, deps in sorted(graph.items()) for d in sorted(deps)
            if _floor(d) != _floor(m) and _floor(d)[0] <= _floor(m)[0]]


def test_every_import_runs_down_the_house(graph):
    upward = _upward(graph)
    assert not upward, upward


def test_the_floor_check_sees_an_import_up_the_house():
    graph = {"gpuoverhead.workloads.work": {"gpuoverhead.methods.fusion", "gpuoverhead.cases"},
             "gpuoverhead.cases": {"gpuoverhead.records", "gpuoverhead.gpu.wait"},
             "gpuoverhead.run.plan": {"gpuoverhead.run.budget", "gpuoverhead.suite.expand"}}
    assert _upward(graph) == ["gpuoverhead.cases -> gpuoverhead.gpu.wait",
                              "gpuoverhead.workloads.work -> gpuoverhead.methods.fusion"]


def test_no_module_outside_the_drivers_names_an_implementation(trees):
    """Only drivers/ (and browser/, the chromium driver's machinery, whose launcher looks for
    a `chromium` executable) knows which implementations exist: elsewhere no string is one of
    their names, and no name such as CHROMIUM or TORCH stands for one (issue 24). The one
    exception is `torch_forms.py`, the ground-floor declaration of the PyTorch forms that the
    torch driver and the workloads' PyTorch builds share."""
    from gpuoverhead import torch_forms
    from gpuoverhead.drivers import registry, webgpu

    names = {*registry.names(), *webgpu.IMPLEMENTATIONS, torch_forms.EAGER, torch_forms.GRAPH,
             torch_forms.COMPILE}
    found = []
    for path, tree in trees.items():
        if {"drivers", "browser"} & set(path.relative_to(PACKAGE).parts) or \
                path == PACKAGE / "torch_forms.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    (node.value in names or node.value.startswith("torch-")):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
            elif isinstance(node, ast.Name) and node.id in ("CHROMIUM", "TORCH"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.id}")
    assert not found, found


#: A script or suite under benchmarks/ as a text names it (not `COMMIT:benchmarks/...`, the
#: file as a commit held it).
BENCHMARK_PATH = re.compile(r"(?<![\w:/.-])benchmarks/[\w/.-]*\w\.(?:py|sh|c|yaml)\b")


def test_every_benchmarks_path_the_tree_names_is_there():
    """benchmarks/ is sorted by kind (benchmarks/README.md): each script and suite that the
    documents, the package, the tests, CI and the scripts themselves name is where they say.
    CHANGELOG.md's entries and configs/' comments are left as written: history, and a
    shipped suite's bytes are the sha256 its committed runs recorded."""
    scripts = (p for p in (ROOT / "benchmarks").rglob("*") if p.suffix in (".py", ".sh", ".c"))
    texts = [ROOT / "README.md", ROOT / "results" / "README.md", ROOT / ".ci" / "run",
             *(ROOT / "docs").glob("*.md"), *PACKAGE.rglob("*.py"),
             *(ROOT / "tests").rglob("*.py"), *scripts, *(ROOT / ".github").rglob("*.y*ml")]
    named = {(p.relative_to(ROOT), n) for p in texts
             for n in BENCHMARK_PATH.findall(p.read_text("utf-8"))}
    assert len(named) > 40
    assert sorted(f"{p}: {n}" for p, n in named if not (ROOT / n).is_file()) == []


def test_a_worker_starts_without_pandas_or_the_drivers_and_workloads_it_does_not_use():
    """A worker's imports stay light (every run starts one per process; pandas with pyarrow
    is ~0.35 CPU-s of it): the analysis stack is the parent's, a type hint is no reason.
    A wgpu-native worker measuring a kernel imports its own driver alone, and no workload
    (the browser's, PyTorch's and the CPU's drivers and the workloads were ~0.15 CPU-s); its
    medians (each round's loop reading, the warm-up window, the clock's cost, each precision
    check's median_ci) import no numpy.ma, as np.median's does (10-20 ms)."""
    code = ("import sys, numpy as np, gpuoverhead.run.worker\n"
            "from gpuoverhead.analysis.stats import median_ci\n"
            "from gpuoverhead.drivers import registry\n"
            "from gpuoverhead.run import rounds\n"
            "from gpuoverhead.workloads.registry import WORKLOADS\n"
            "registry.get('webgpu')\n"
            "median_ci(np.arange(9.0)), rounds.python_step_ns(), rounds.timer_cost_ns(100)\n"
            "rounds._settled(list(range(30)))\n"
            "lazy = ('pandas', 'pyarrow', 'scipy', 'numpy.ma', 'gpuoverhead.browser', 'torch', *(\n"
            "    f'gpuoverhead.{m}' for m in ('drivers.chromium', 'drivers.pytorch',\n"
            "    'drivers.host', 'workloads.torch_ops', 'workloads.read_floor',\n"
            "    'workloads.decode_model',\n"
            "    *(f'workloads.{w}' for w in WORKLOADS))))\n"
            "print(sorted(m for m in sys.modules if m in lazy or m.startswith(\n"
            "    tuple(f'{n}.' for n in lazy))))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert found == "[]"


def _imports_scipy_stats_at_top(module: str) -> bool:
    path = ROOT / Path(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import) and any(a.name.startswith("scipy.stats")
                                                for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module.startswith("scipy.stats") or
                (node.module == "scipy" and any(a.name == "stats" for a in node.names))):
            return True
    return False


def test_a_self_test_measures_before_it_imports_scipy_stats():
    """scipy.stats is ~1 CPU-s of imports: the self-test's parent imports present.compare
    and present.allowance before it measures (cli.selftest), so nothing it imports before
    measuring may import it at its top (an interrupted self-test never compares)."""
    graph, seen = import_graph(lazy=False), set()
    todo = ["gpuoverhead.cli", "gpuoverhead.run.runner", "gpuoverhead.present.compare",
            "gpuoverhead.present.allowance", "gpuoverhead.results.read"]
    while todo:
        if (module := todo.pop()) not in seen:
            seen.add(module)
            todo.extend(graph[module])
    assert len(seen) > 10
    assert sorted(m for m in seen if _imports_scipy_stats_at_top(m)) == []
