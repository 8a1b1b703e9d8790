"""The import graph of the shipped packages: no circles, and every import respects the layers.

The layers, bottom to top (DESIGN.md §4): the kernel ``opar_sim.core`` imports
nothing else of the project; ``controllers`` and ``environments`` import only
the kernel; the agents and the LLM backends build on those; experiment
running and analysis on them; figures on analysis; the command line on
everything, and nothing imports the command line.  Imports inside functions
count: a circle hidden in a function is still a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("opar_sim", "controllers", "environments")

# rank of each part; a module may import only modules of its own rank or below.  The root
# package ``opar_sim`` (its __init__ re-exports the kernel's types) runs whenever any
# submodule is imported, so it counts as part of the kernel.
RANKS = {
    "opar_sim": 0,  # the package's __init__: re-exports the kernel's types
    "opar_sim.core": 0,
    "controllers": 1,
    "environments": 1,
    "opar_sim.agents": 2,
    "opar_sim.llm": 2,
    "opar_sim.experiment": 3,
    "opar_sim.analysis": 3,
    "opar_sim.traces": 3,  # recorded runs in: parsers and the importer
    "opar_sim.metrics": 3,  # the contract's import path of the analysis metrics
    "opar_sim.figures": 4,
    "opar_sim.registry": 4,  # the catalogue of every pluggable kind, for the command line
    "opar_sim.cli": 5,
}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    """Every project module ``module`` imports, with the packages whose __init__ that runs."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for name in names:
            if name.split(".")[0] not in PACKAGES:
                continue
            resolved = _resolve(name)
            while resolved:  # importing a.b.c runs a/__init__ and a/b/__init__ too
                if resolved != module and not module.startswith(resolved + "."):
                    targets.add(resolved)
                resolved = _resolve(resolved.rpartition(".")[0])
    return targets


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def _rank(module: str) -> int:
    best = max((p for p in RANKS if module == p or module.startswith(p + ".")), key=len)
    return RANKS[best]


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_every_package():
    assert {"opar_sim.core.loop", "controllers.pid", "environments.team"} <= set(MODULES)
    assert "opar_sim.core.types" in GRAPH["opar_sim.core.loop"]
    assert all(_rank(m) >= 0 for m in MODULES)  # every module has a layer


def test_no_import_circles():
    assert _cycles() == []


def test_the_checker_finds_a_circle(monkeypatch):
    monkeypatch.setitem(
        GRAPH, "opar_sim.core.types", GRAPH["opar_sim.core.types"] | {"opar_sim.core.loop"}
    )
    assert any({"opar_sim.core.loop", "opar_sim.core.types"} <= set(c) for c in _cycles())


def _violations(rule) -> list[str]:
    return sorted(
        f"{m} imports {t}" for m, targets in GRAPH.items() for t in targets if not rule(m, t)
    )


def test_the_kernel_imports_nothing_else_of_the_project():
    def rule(m: str, t: str) -> bool:
        return not m.startswith("opar_sim.core") or t.startswith("opar_sim.core") or t == "opar_sim"

    assert _violations(rule) == []


@pytest.mark.parametrize("package", ["controllers", "environments"])
def test_controllers_and_environments_import_only_the_kernel(package):
    def rule(m: str, t: str) -> bool:
        inside = m == package or m.startswith(package + ".")
        # importing the kernel runs opar_sim/__init__, which itself imports only the kernel
        return not inside or t.startswith((package, "opar_sim.core")) or t == "opar_sim"

    assert _violations(rule) == []


def test_nothing_below_the_command_line_imports_it():
    def rule(m: str, t: str) -> bool:
        return m.startswith("opar_sim.cli") or not t.startswith("opar_sim.cli")

    assert _violations(rule) == []


def test_every_import_goes_down_the_layers():
    assert _violations(lambda m, t: _rank(t) <= _rank(m)) == []
