"""The package stays a house a newcomer can find their way in: small modules, short
functions (unrolled timed loops excepted, each saying so), a docstring on every subpackage,
and no import cycles."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "gpuoverhead"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_over_the_limit():
    long = {p.relative_to(ROOT): n for p in _modules()
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, long


def test_no_function_over_the_limit_unless_it_says_it_is_unrolled():
    long = []
    for path in _modules():
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
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


def test_imports_have_no_cycles():
    graph: dict[str, set[str]] = {}
    for path in _modules():
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        graph[name] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("gpuoverhead") and node.col_offset == 0:
                graph[name] |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    graph = {k: {d for d in v if d in graph and d != k} for k, v in graph.items()}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for dep in graph[node]:
            assert state.get(dep) != 1, " -> ".join([*trail, node, dep])
            if dep not in state:
                visit(dep, [*trail, node])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])
