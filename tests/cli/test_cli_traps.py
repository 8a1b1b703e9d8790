"""The traps a newcomer fell into (issue 16), each pinned by a test that failed before its fix."""

from __future__ import annotations

import json
import socket
import tomllib
import warnings
from pathlib import Path

import pytest

from opar_sim.cli.main import main
from opar_sim.measure.oscillation import replan_rhythm
from opar_sim.measure.run import analyze
from opar_sim.spec.schema import Objective, ParamRange
from opar_sim.studies.gains import Replicate
from opar_sim.studies.race import Race, Round, distinct_arms
from opar_sim.studies.recommend import TuneResult, score_holdout
from tests.conftest import EXPERIMENTS, SPEC


# -- one definition of every reported quantity ----------------------------------------
def test_compare_and_summary_json_report_the_same_means(tmp_path, capsys):
    # seed 3, 30 episodes: threshold's REPLANs were 2.90 in compare and 2.80 in run and
    # summary.json (compare also counted a REPLAN decided at the last step, never enacted)
    out = tmp_path / "c"
    spec = str(EXPERIMENTS / "flight_booking_infeasible.toml")
    argv = ["compare", spec, "--episodes", "30", "--seed", "3", "--out", str(out)]
    assert main([*argv, "--workers", "1"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    analysis = analyze(out)
    assert list(analysis.controllers) == list(summary)
    for name, m in analysis.controllers.items():
        s = summary[name]
        assert m.replans.mean == pytest.approx(s["mean_replans"], abs=1e-12), name
        assert m.steps.mean == pytest.approx(s["mean_steps"], abs=1e-12), name
        assert m.tokens.mean == pytest.approx(s["mean_tokens"], abs=1e-12), name
        assert m.sim_seconds.mean == pytest.approx(s["mean_sim_seconds"], abs=1e-9), name
        assert m.success.rate == s["success_rate"], name
    printed = capsys.readouterr().out
    table = printed[printed.index("controllers compared") :]  # after the paired differences
    row = next(line for line in table.splitlines() if line.startswith("│ threshold"))
    assert f"{summary['threshold']['mean_replans']:.2f}" in row  # the table prints the same


def test_a_replan_at_the_last_step_is_not_counted_when_it_made_no_plan():
    signals = ["continue", "replan", "replan", "continue", "replan"]
    every = replan_rhythm(signals, k=2)
    assert (every.replans, every.thrash, every.mean_dwell) == (3, 2, 1.5)
    enacted = replan_rhythm(signals, k=2, enacted=2)  # the episode stopped after step 5
    assert (enacted.replans, enacted.thrash, enacted.mean_dwell) == (2, 1, 1.0)
    with pytest.raises(ValueError, match="one fewer"):
        replan_rhythm(signals, enacted=1)


# -- an LLM run checks its backend first ---------------------------------------------
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_backend_stops_the_run_with_the_doctor_message(tmp_path, capsys):
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f"""name = "unreachable"
episodes = 2
[task]
name = "weather"
[agent]
kind = "llm"
[agent.backend]
backend = "ollama"
model = "qwen2.5:0.5b"
host = "http://127.0.0.1:{_closed_port()}"
"""
    )
    out = tmp_path / "run"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status = main(["run", str(spec), "--out", str(out)])
    assert status == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "unreachable" in err and "ollama serve" in err and "opar-sim doctor" in err
    assert not (out / "episodes.jsonl").exists()
    assert not caught  # no matplotlib (or any) warning
    # compare goes through the same check
    assert main(["compare", str(spec), "--out", str(tmp_path / "c")]) == 2


# -- relay writes TOML that parses ------------------------------------------------------
def test_relay_gains_file_is_valid_toml_with_the_best_gains_active(tmp_path):
    out = tmp_path / "relay"
    spec = str(EXPERIMENTS / "plant_relay.toml")
    assert main(["relay", spec, "--trials", "3", "--holdout", "6", "--out", str(out)]) == 0
    gains = tomllib.loads((out / "gains.toml").read_text())
    report = json.loads((out / "relay.json").read_text())
    best = min(report["contenders"], key=lambda c: c["holdout_iae"])
    assert set(gains) == {"controller"}
    assert gains["controller"]["params"] == pytest.approx(best["gains"], rel=1e-5)
    text = (out / "gains.toml").read_text()
    for c in report["contenders"]:
        assert f"# {c['name']}: held-out IAE" in text


# -- plot --episode ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def pid_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("plot") / "run"
    argv = ["run", SPEC, "--episodes", "4", "--controller", "pid", "--out", str(out)]
    assert main([*argv, "--workers", "1"]) == 0
    return out


def test_plot_of_an_episode_the_run_lacks_is_an_error(pid_run, tmp_path, capsys):
    assert main(["plot", str(pid_run), "--episode", "99999", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--episode 99999 is not in this run (its episodes: 0..3)" in err
    assert not list(tmp_path.iterdir())  # nothing drawn
    assert main(["plot", str(pid_run), "--episode", "2", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "pid_terms.png").is_file()


def test_plot_of_an_episode_without_pid_terms_is_an_error(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["run", SPEC, "--episodes", "2", "--controller", "threshold", "--out", str(out)]
    assert main([*argv, "--workers", "1"]) == 0
    capsys.readouterr()
    assert main(["plot", str(out), "--episode", "1", "--out", str(tmp_path / "f")]) == 2
    assert "records its terms" in capsys.readouterr().err


# -- tune says what the held-out seeds said ----------------------------------------------
def _result(incumbent: list[bool], tuned: list[bool]) -> TuneResult:
    """A one-replicate tuning whose setting and the incumbent solved these held-out episodes."""
    kp = "controller.params.kp"
    replicate = Replicate(0, 100, 0, {kp: 2.0}, 0.1)
    arms = distinct_arms([replicate.best_params])
    race = Race(5, 10, arms, [Round(10, {"incumbent": 0.5, "r0": 0.4}, {}, ["r0"])])
    rows = [
        [
            {"episode": i, "success": w, "tokens": 100, "replans": 0, "steps": 5}
            for i, w in enumerate(x)
        ]
        for x in (incumbent, tuned)
    ]
    holdout = score_holdout(arms, rows, Objective(), 7)
    space = {kp: ParamRange(low=0.5, high=3.0)}
    return TuneResult("t", "pid", space, Objective(), {kp: 1.0}, [replicate], race, holdout, 7)


def test_tune_does_not_recommend_gains_that_lost_on_held_out_seeds():
    n = 200
    worse = _result([i < 120 for i in range(n)], [i < 90 for i in range(n)])
    assert not worse.recommended and "keep your current gains" in worse.verdict()
    assert "worse than them" in worse.verdict() and "0 of 1 replicates" in worse.verdict()
    assert worse.best_toml().startswith("# keep your current gains")
    assert "kp = 1" in worse.best_toml()  # the incumbent's value, not the tuned 2.0
    unclear = _result([i < 120 for i in range(n)], [2 <= i < 123 for i in range(n)])
    assert not unclear.recommended and "not distinguishable from them" in unclear.verdict()
    better = _result([i < 90 for i in range(n)], [i < 120 for i in range(n)])
    assert better.recommended and better.verdict().startswith("use the tuned gains")
    assert "kp = 2" in better.best_toml() and better.best_toml().startswith("# recommended")


# -- the command itself --------------------------------------------------------------
def test_version(capsys):
    from opar_sim import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"opar-sim {__version__}"


def test_a_bare_call_prints_the_usage_with_every_command(capsys):
    from opar_sim.cli.commands import COMMANDS

    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: opar-sim")
    assert all(f"\n  {c.name} " in err for c in COMMANDS)  # listed by group


def test_a_directory_given_as_spec_is_named_a_directory(capsys):
    assert main(["run", str(EXPERIMENTS)]) == 2
    err = capsys.readouterr().err
    assert "is a directory, not a spec file" in err and "flight_booking" in err
    assert "not found" not in err


# -- live progress and readable output ----------------------------------------------
def test_the_studies_print_a_table_and_keep_the_json_in_a_file(tmp_path, capsys):
    spec = str(EXPERIMENTS / "reflexion.toml")
    argv = ["study", "learning", spec, "--episodes", "6", "--out", str(tmp_path / "s")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "study learning" in out and "success by" in out and "attempt 1" in out
    assert "12/12 episodes" in out  # one bar over both arms
    assert not any(line.lstrip().startswith(("{", '"')) for line in out.splitlines())
    numbers = json.loads((tmp_path / "s" / "learning.json").read_text())
    assert main([*argv[:-1], str(tmp_path / "j"), "--json"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed[printed.index("\n{") : printed.rindex("}") + 1]) == numbers


def test_tune_shows_a_bar_for_its_held_out_scoring(tmp_path, capsys):
    text = (EXPERIMENTS / "tune_pid.toml").read_text()
    text = text.replace("holdout_episodes = 2000", "holdout_episodes = 15")
    text = text.replace("train_episodes = 300", "train_episodes = 5")
    spec = tmp_path / "tune.toml"
    spec.write_text(text)
    out_dir = tmp_path / "t"
    argv = ["tune", str(spec), "--trials", "2", "--replicates", "2", "--out", str(out_dir)]
    assert main([*argv, "--workers", "1"]) == 0
    out = capsys.readouterr().out
    arms = len(json.loads((out_dir / "tune.json").read_text())["holdout_arms"])
    line = next(x for x in out.splitlines() if x.startswith("held-out scoring"))
    assert f"{15 * arms}/{15 * arms}" in line  # the incumbent and every setting, 15 each
    assert next(x for x in out.splitlines() if x.startswith("race"))


def test_a_capitalised_law_name_gets_did_you_mean(capsys):
    from opar_sim.cli import main

    assert main(["run", str(SPEC), "--controller", "PID", "--episodes", "1"]) == 2
    assert "unknown controller 'PID' (did you mean 'pid'?)" in capsys.readouterr().err
