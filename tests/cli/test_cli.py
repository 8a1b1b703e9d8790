"""The command line: a run writes its directory reproducibly; bad input exits 2 in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from opar_sim.cli.main import main
from tests.conftest import SPEC


def test_run_writes_the_run_directory(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", SPEC, "--episodes", "20", "--seed", "5", "--out", str(out)]) == 0
    for name in ("spec.json", "episodes.jsonl", "steps.jsonl", "summary.json", "progress.png"):
        assert (out / name).is_file(), name
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert [e["episode"] for e in episodes] == list(range(20))
    assert sum(e["steps"] for e in episodes) == len(steps)
    assert {s["agent"] for s in steps} == {"simulated"}
    summary = json.loads((out / "summary.json").read_text())
    pid = summary["pid"]
    assert pid["episodes"] == 20
    assert sum(pid["outcomes"].values()) == 20
    assert pid["success_rate"] == sum(e["success"] for e in episodes) / 20
    assert pid["mean_tokens"] == pytest.approx(sum(e["tokens"] for e in episodes) / 20)
    assert json.loads((out / "spec.json").read_text())["seed"] == 5
    printed = capsys.readouterr().out
    assert "success (95% CI)" in printed and "outcomes" in printed


def test_same_spec_and_seed_give_identical_bytes(tmp_path):
    for name in ("a", "b"):
        assert main(["run", SPEC, "--episodes", "25", "--out", str(tmp_path / name)]) == 0
    for name in ("episodes.jsonl", "steps.jsonl", "summary.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_controller_override(tmp_path):
    out = tmp_path / "t"
    argv = ["run", SPEC, "--episodes", "5", "--controller", "threshold", "--out", str(out)]
    assert main(argv) == 0
    assert list(json.loads((out / "summary.json").read_text())) == ["threshold"]


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return str(path)


BAD = {
    "missing spec": (["run", "no/such/spec.toml"], "spec not found"),
    "unknown controller": (["run", SPEC, "--controller", "bangbang"], "unknown controller"),
    "negative episodes": (["run", SPEC, "--episodes", "-3"], "must be >= 1"),
    "unknown command": (["fly"], "invalid choice"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_arguments_exit_2_with_one_line(case, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv, message = BAD[case]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


BAD_SPECS = {
    "malformed": ("name = [", "not valid TOML"),
    "unknown key": ('name = "x"\ncolour = 1\n', "colour: unknown key"),
    "unknown task": ('name = "x"\n[task]\nname = "mars"\n', "unknown task 'mars'"),
    "negative budget": ('name = "x"\n[limits]\ntoken_budget = -1\n', "limits.token_budget"),
    "negative gain": ('name = "x"\n[controller.params]\nkd = -2.0\n', "kd must be >= 0"),
    "bad agent knob": ('name = "x"\n[agent.params]\nnoise = 3\n', "agent.params.noise"),
    "bad task param": ('name = "x"\n[task.params]\nempty_rate = 2\n', "empty_rate"),
}


@pytest.mark.parametrize("case", list(BAD_SPECS))
def test_bad_specs_exit_2_naming_the_problem_and_write_nothing(case, tmp_path, capsys):
    text, message = BAD_SPECS[case]
    out = tmp_path / "out"
    assert main(["run", write(tmp_path, text), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_an_existing_run_is_never_overwritten(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", SPEC, "--episodes", "3", "--out", str(out)]) == 0
    before = (out / "episodes.jsonl").read_bytes()
    assert main(["run", SPEC, "--episodes", "3", "--out", str(out)]) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert (out / "episodes.jsonl").read_bytes() == before


def test_the_installed_command_reports_errors_without_a_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "opar_sim.cli", "run", str(tmp_path / "nope.toml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("opar-sim: error: spec not found")


def test_list_shows_tasks_and_controllers(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("weather", "flight_booking", "pid", "threshold"):
        assert name in out
