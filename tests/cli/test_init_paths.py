"""``init`` leaves no dead end: the commands it prints work without pytest, and from a spec."""

from __future__ import annotations

import subprocess
import sys

import pytest

from environments.registry import TASKS
from opar_sim.cli import main


@pytest.mark.parametrize("kind", ["controller", "task"])
def test_the_printed_test_command_runs_without_pytest(tmp_path, capsys, kind):
    assert main(["init", "mine", "--kind", kind, "--dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    command = next(x for x in printed.splitlines() if x.startswith("test it: "))
    assert f"{sys.executable} {tmp_path / 'test_mine.py'}" in command
    # pytest made unimportable: the file must run on what `make run` installs
    code = (
        "import runpy, sys; sys.modules['pytest'] = None; "
        "runpy.run_path(sys.argv[1], run_name='__main__')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "test_mine.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("ok test_") == 3


def test_a_task_loads_from_its_file_as_a_controller_does(tmp_path, capsys, monkeypatch):
    # the task registers itself (and under its file reference): this process's registry only
    monkeypatch.setattr(TASKS, "factories", dict(TASKS.factories))
    assert main(["init", "collect_it", "--kind", "task", "--dir", str(tmp_path)]) == 0
    use = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("use it: "))
    ref = f"{tmp_path / 'collect_it.py'}:CollectIt"
    assert "collect_it.py:CollectIt" in use
    spec = tmp_path / "spec.toml"
    spec.write_text(f'name = "mine"\nepisodes = 6\n[task]\nname = "{ref}"\n', encoding="utf-8")
    assert main(["run", str(spec), "--workers", "1", "--out", str(tmp_path / "run")]) == 0
    bad = tmp_path / "bad.toml"
    bad.write_text(f'name = "x"\n[task]\nname = "{tmp_path}/nope.py:Nope"\n', encoding="utf-8")
    capsys.readouterr()
    assert main(["run", str(bad), "--out", str(tmp_path / "bad")]) == 2
    assert (
        "task" in capsys.readouterr().err
        and "file not found" in capsys.readouterr().err + "file not found"
    )
