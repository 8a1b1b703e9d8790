"""`run --controller NAME` works for every controller; `list` shows them; guards via the CLI."""

from __future__ import annotations

import json

import pytest

import controllers
from opar_sim.cli.main import main
from tests.conftest import SPEC


@pytest.mark.parametrize("name", controllers.names())
def test_run_with_every_controller(name, tmp_path):
    out = tmp_path / name
    argv = ["run", SPEC, "--episodes", "4", "--controller", name, "--workers", "1"]
    assert main([*argv, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary) == [name]
    assert summary[name]["episodes"] == 4
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert all(s["reason"] and isinstance(s["terms"], dict) for s in steps)


def test_list_shows_every_controller_with_its_law(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in controllers.names():
        assert name in out
    assert "Magentic" not in out  # the law, not the history: first docstring lines only
    assert "REPLAN" in out


def test_guards_from_the_spec_truncate_runs(tmp_path):
    spec = tmp_path / "guarded.toml"
    spec.write_text('name = "guarded"\nepisodes = 6\n[guards]\nmax_iterations = 2\n')
    out = tmp_path / "run"
    assert main(["run", str(spec), "--workers", "1", "--out", str(out)]) == 0
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert all(e["steps"] <= 2 for e in episodes)
    assert any(e["outcome"] == "truncated:max_steps" for e in episodes)
    assert json.loads((out / "spec.json").read_text())["guards"]["max_iterations"] == 2


@pytest.mark.parametrize("command", ["run", "compare"])
def test_confirm_flag_sets_the_shared_stop_confirmation(command, tmp_path):
    out = tmp_path / command
    argv = [command, SPEC, "--episodes", "4", "--workers", "1", "--confirm", "2"]
    if command == "compare":
        argv += ["--controllers", "threshold,stall_counter"]
    else:
        argv += ["--controller", "threshold"]
    assert main([*argv, "--out", str(out)]) == 0
    assert json.loads((out / "spec.json").read_text())["guards"]["confirm"] == 2
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    held = [s for s in steps if s["guard"] == "confirm: 1/2"]
    assert held and all(s["signal"] == "continue" for s in held)
    stops = [s for s in steps if s["signal"] == "terminate" and not s["give_up"]]
    for stop in stops:  # every completion claim that stood was the second in a row
        before = next(
            s
            for s in steps
            if s["controller"] == stop["controller"]
            and s["episode"] == stop["episode"]
            and s["step"] == stop["step"] - 1
        )
        assert before["guard"] == "confirm: 1/2"


def test_confirm_below_one_exits_2(tmp_path, capsys):
    assert main(["run", SPEC, "--confirm", "0", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "--confirm: must be >= 1" in err and len(err.strip().splitlines()) == 1


def test_a_bad_guard_exits_2_naming_the_key(tmp_path, capsys):
    spec = tmp_path / "bad.toml"
    spec.write_text('name = "x"\n[guards]\nhuman = {latency = -1.0}\n')
    assert main(["run", str(spec), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "guards.human.latency" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_infinite_parameters_survive_the_trip_to_the_workers(tmp_path):
    spec = tmp_path / "inf.toml"
    spec.write_text(
        'name = "inf"\nepisodes = 3\n[controller]\nname = "pid"\n[controller.params]\n'
        "give_up_after = inf\noutput_limits = [-inf, 2.0]\n"
    )
    out = tmp_path / "run"
    assert main(["run", str(spec), "--workers", "1", "--out", str(out)]) == 0
    assert main(["run", str(spec), "--workers", "1", "--out", str(out), "--resume"]) == 0
    params = json.loads((out / "spec.json").read_text())["controller"]["params"]
    assert params == {"give_up_after": float("inf"), "output_limits": [float("-inf"), 2.0]}
