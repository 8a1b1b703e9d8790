"""The import graph of the shipped packages: no circles, and every import respects the layers.

The layers, bottom to top (docs/design.md §4): the kernel ``opar_sim.core`` imports
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
    "opar_sim.spec": 3,  # the spec's only owner: schema (the [guards] table too), build, edit,
    # grid, plugins
    "opar_sim.rundir": 4,  # the run directory's only owner: files, rows, manifest, resume,
    # and the rows as pandas frames (``.to_frame()``, for the run directory and measurement)
    "opar_sim.engines": 5,  # the lockstep array engine
    "opar_sim.measure": 5,  # reads a run directory, never simulates
    "opar_sim.metrics": 5,  # the contract's import path of the step-response metrics
    "opar_sim.analysis": 5,  # the contract's re-export shim of the run analysis
    "opar_sim.running": 6,  # runner, chunks, executors, sweep, the tuning search
    "opar_sim.traces": 6,  # recorded runs in and out: formats, import, replay, advise, OTLP
    "opar_sim.calibration": 7,  # fitting the simulated agent to recorded runs
    "opar_sim.studies": 7,  # one protocol per module
    "opar_sim.runtime": 7,  # the gate of a tuned law in a real agent, and its adapters
    "opar_sim.figures": 8,
    "opar_sim.registry": 8,  # the catalogue of every pluggable kind, for the command line
    "opar_sim.api": 9,  # the Python API: run, compare, load_run, every study
    "opar_sim.gym": 9,  # the Gymnasium environment of the Reflect decision
    "opar_sim.cli": 10,
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

# The root package names the Python API for type checkers only (``if TYPE_CHECKING``) and
# loads it lazily on first use (``opar_sim.__getattr__``): that is no import of the API at
# run time, which ``test_the_root_package_loads_the_api_lazily`` checks.
LAZY = {"opar_sim.api"}
GRAPH["opar_sim"] -= LAZY

# A package whose __init__ imports nothing (a docstring) carries no dependency: importing
# ``opar_sim.studies.seeds`` runs ``opar_sim/studies/__init__.py``, which loads nothing, so
# the seed ledger (a leaf of constants) may be read from any layer.
INERT = {m for m, p in MODULES.items() if p.name == "__init__.py" and not GRAPH[m]}
# modules that import nothing of the project: the seed ledger, and the install advice for a
# missing optional extra (``opar_sim.extras``, read from the run directory up to the command line)
LEAVES = {"opar_sim.studies.seeds", "opar_sim.extras"}
for _module, _targets in GRAPH.items():
    _targets -= {t for t in INERT if t != _module and not _module.startswith(t + ".")}


def _rank(module: str) -> int:
    if module in LEAVES:
        return 0
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


def test_the_root_package_loads_the_api_lazily():
    import subprocess
    import sys

    code = (
        "import sys, opar_sim; before = 'opar_sim.api' in sys.modules; "
        "opar_sim.run; print(before, 'opar_sim.api' in sys.modules, opar_sim.run.__module__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.split() == ["False", "True", "opar_sim.api"]


def test_the_leaves_import_nothing_of_the_project():
    assert {m: sorted(GRAPH[m]) for m in LEAVES} == {m: [] for m in LEAVES}


# Each module owns one concept and stays small (docs/design.md §4: about 400 lines). Over
# 500 lines only with a reason here; a module that grows past its entry fails too.
MAX_LINES = 500
LONG_MODULES: dict[str, tuple[int, str]] = {}


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_is_over_500_lines_outside_the_allow_list():
    over = {m: _lines(p) for m, p in MODULES.items() if _lines(p) > MAX_LINES}
    unexplained = {m: n for m, n in over.items() if m not in LONG_MODULES}
    grown = {m: n for m, n in over.items() if m in LONG_MODULES and n > LONG_MODULES[m][0]}
    assert unexplained == {} and grown == {}


def test_the_size_check_finds_a_long_module(tmp_path):
    long = tmp_path / "long.py"
    long.write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    assert _lines(long) > MAX_LINES


# The seed ledger (opar_sim/studies/seeds.py) is the only place the shipped code names the
# tuning, hold-out and evaluation seeds; these are the literals it replaced.
SEED_LITERALS = (
    r"1_?000_?003|500_?009|20_?261_?203",
    r"(TRAIN|TUNING|HOLDOUT|EVALUATION|HELD_OUT|CONFIRM|DEVELOPMENT)_SEEDS?\s*(:[^=]*)?=\s*\d",
    r"(EVAL|QUICK|FRESH|TUNING)_SEEDS\s*(:[^=]*)?=\s*\(",
    r"seed\w*\s*(:\s*int\s*)?=\s*100\b",
)


def test_the_seeds_are_named_only_in_the_ledger():
    import re

    found = []
    for module, path in MODULES.items():
        if module == "opar_sim.studies.seeds":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#")[0]
            if any(re.search(rx, code) for rx in SEED_LITERALS):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []


def test_the_seed_check_finds_a_literal():
    import re

    lines = ["HOLDOUT_SEED = 1_000_003", "TUNING_SEED = 100", "seed: int = 100", "x = 1000003"]
    assert all(any(re.search(rx, line) for rx in SEED_LITERALS) for line in lines)


# Commands are thin: parse, call a study or a measurement, render (issue 25). Their main
# functions (``run`` and ``run_*`` of each command, ``main`` of the command line) stay short.
MAX_COMMAND_LINES = 40


def _command_mains() -> dict[str, int]:
    found = {}
    for module, path in MODULES.items():
        if not module.startswith("opar_sim.cli"):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and (
                node.name in ("run", "main") or node.name.startswith("run_")
            ):
                found[f"{module}.{node.name}"] = (node.end_lineno or 0) - node.lineno + 1
    return found


def test_no_command_main_is_over_40_lines():
    mains = _command_mains()
    assert "opar_sim.cli.commands.shootout_cmd.run" in mains
    assert {m: n for m, n in mains.items() if n > MAX_COMMAND_LINES} == {}
