"""A light start: ``--help`` and ``list`` import no heavy library; pool workers start bare.

Each check runs in a fresh interpreter (the test process itself has imported
everything).  The worker check runs a script shaped like the ``opar-sim``
console script (``from opar_sim.cli import main``): a spawned worker re-runs
that import, so the CLI's main module must not pull in the commands.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SPEC

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("matplotlib", "ollama", "xllamacpp", "dask", "distributed", "optuna")


def _modules_after(args: list[str]) -> list[str]:
    code = (
        "import sys, contextlib, io\n"
        "from opar_sim.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({args!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    )
    return [m for m in out.stdout.strip().split(",") if m]


@pytest.mark.parametrize("args", [["--help"], ["list"]])
def test_help_and_list_import_no_heavy_library(args: list[str]) -> None:
    assert _modules_after(args) == []


@pytest.mark.parametrize("engine, numba", [("simpy", False), ("batch", True)])
def test_a_simpy_run_loads_no_numba(tmp_path: Path, engine: str, numba: bool) -> None:
    """Numba (0.15 s to import) is the batch engine's alone; the probe sees it there."""
    args = ["run", SPEC, "--episodes", "2", "--engine", engine, "--out", str(tmp_path / "r")]
    code = (
        "import sys, contextlib, io\n"
        "from opar_sim.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main({args!r}) == 0\n"
        "print('numba' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    )
    assert out.stdout.strip() == str(numba)


def test_the_probe_sees_a_heavy_import() -> None:
    """The check can fail: drawing a figure does import matplotlib."""
    code = "import sys\nimport opar_sim.figures.style\nprint('matplotlib' in sys.modules)\n"
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    )
    assert out.stdout.strip() == "True"


@pytest.mark.parametrize("work", ["nothing", "a chunk"])
def test_pool_workers_import_only_what_runs_episodes(tmp_path: Path, work: str) -> None:
    """A spawned worker, bare or after running episodes: no CLI command, plotting or analysis."""
    script = tmp_path / "opar-sim-like"
    submit = (
        "pool.submit(loaded)"
        if work == "nothing"
        else "pool.submit(after_chunk, plan_chunks(spec, parallelism=2)[0])"
    )
    script.write_text(
        "import sys\n"
        "from opar_sim.cli import main\n"
        "if __name__ == '__main__':\n"
        "    from opar_sim.spec.build import load_spec\n"
        "    from opar_sim.running.chunks import plan_chunks\n"
        "    from opar_sim.spec.edit import with_overrides\n"
        "    from opar_sim.running.executors import ExecutorConfig, open_executor\n"
        "    from tests.cli.startup_probe import after_chunk, loaded\n"
        f"    spec = with_overrides(load_spec({str(SPEC)!r}), episodes=4, controller='pid')\n"
        "    with open_executor(ExecutorConfig('process', 2)) as pool:\n"
        f"        print(','.join({submit}.result()))\n",
        encoding="utf-8",
    )
    # a script's own folder heads sys.path, not the cwd: the probe module needs the repository
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(script)], check=True, capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert out.stdout.strip() == ""


def test_the_command_table_agrees_with_each_command_module() -> None:
    """``--help`` lists the table without importing the modules: their NAME and HELP match it."""
    from opar_sim.cli.commands import COMMANDS

    modules = sorted(p.stem for p in (ROOT / "opar_sim" / "cli" / "commands").glob("*_cmd.py"))
    assert sorted(f"{c.name}_cmd" for c in COMMANDS) == modules
    for entry in COMMANDS:
        module = entry.load()
        assert (entry.name, entry.help) == (module.NAME, module.HELP)


def test_help_imports_no_command_module() -> None:
    code = (
        "import sys, contextlib, io\n"
        "from opar_sim.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted(m for m in sys.modules if m.endswith('_cmd') or m in ('numpy', 'rich')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"
