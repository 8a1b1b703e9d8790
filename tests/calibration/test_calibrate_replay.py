"""Sim-to-real tools on recorded runs: calibrate fits the simulated agent, replay re-decides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from opar_sim.calibration.direct import check, fit, refine
from opar_sim.cli.main import main
from opar_sim.spec.schema import ControllerSpec
from opar_sim.traces.recorded import load_run
from opar_sim.traces.replay import replay
from tests.conftest import SPEC


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A run of a simulated agent with known knobs, standing in for an LLM's record."""
    spec = tmp_path_factory.mktemp("spec") / "biased.toml"
    text = (
        Path(SPEC)
        .read_text()
        .replace(
            '[agent]\nkind = "simulated"',
            '[agent]\nkind = "simulated"\n[agent.params]\nbias = 0.2\nnoise = 0.05\n'
            "invalid_format_rate = 0.2",
        )
    )
    spec.write_text(text)
    out = tmp_path_factory.mktemp("runs") / "biased"
    assert main(["run", str(spec), "--episodes", "150", "--out", str(out)]) == 0
    return out


def test_calibration_recovers_a_known_bias_and_invalid_rate(recorded):
    params = fit(load_run(recorded)).params
    assert params["bias"] == pytest.approx(0.2, abs=0.07)
    assert params["invalid_format_rate"] == pytest.approx(0.2, abs=0.08)
    assert params["plan_alpha"] > 0 and params["plan_beta"] > 0


def test_calibrate_writes_a_spec_snippet_that_matches_the_record(recorded, capsys):
    # the record comes from a simulated agent, so the direct estimates hold without refinement
    assert main(["calibrate", str(recorded), "--episodes", "600", "--direct"]) == 0
    snippet = (recorded / "calibrated.toml").read_text()
    assert '[agent]\nkind = "simulated"' in snippet and "[agent.params]" in snippet
    check = json.loads((recorded / "calibration.json").read_text())["check"]
    assert check["success_within"] and check["steps_within"]
    assert "calibrated simulation" in capsys.readouterr().out


def test_refinement_matches_a_self_assessment_that_ignores_progress(recorded):
    """A model that always reports δ_task = 0.5 never trips a 0.9 threshold: neither may the fit."""
    run = load_run(recorded)
    for row in run.steps:
        row["delta_task"] = 0.5
    run.spec = run.spec.model_copy(
        update={"controller": ControllerSpec(name="threshold"), "compare": []}
    )
    for row in run.episodes:
        row["controller"] = "threshold"
        row["success"], row["steps"] = False, 20
    direct = fit(run)
    refined = refine(run, direct, episodes=40)
    assert refined.params["bias"] < direct.params["bias"]
    before, after = check(run, direct, episodes=200), check(run, refined, episodes=200)
    assert after.simulated_success < before.simulated_success
    assert before.simulated_steps < after.simulated_steps  # closer to the recorded 20


def test_replay_under_the_recorded_controller_changes_nothing(recorded):
    import controllers

    run = load_run(recorded)
    replayed = replay(run, lambda: controllers.make("pid"))  # the recorded run's law
    assert {r.verdict for r in replayed} == {"same"}
    assert [r.outcome for r in replayed] == [e["outcome"] for e in run.episodes]


def test_replay_under_another_controller_reports_where_it_departs(recorded, capsys):
    assert main(["replay", str(recorded), "--controller", "threshold"]) == 0
    rows = [json.loads(x) for x in (recorded / "replay_threshold.jsonl").read_text().splitlines()]
    assert len(rows) == 150
    assert {r["verdict"] for r in rows} <= {"same", "stop", "replan", "continue"}
    for r in rows:
        if r["verdict"] == "stop":
            assert r["outcome"] in ("success", "premature", "gave_up", "abandoned")
            assert r["at_step"] >= 1
        if r["verdict"] in ("replan", "continue"):
            assert r["outcome"] is None
    out = capsys.readouterr().out
    assert "verdict" in out
    checkable = sum(r["verdict"] in ("same", "stop") for r in rows)
    assert f"checkable (outcome known): {checkable}, " in out
    assert f"uncheckable (diverged, outcome unknown): {150 - checkable}" in out


def test_a_record_without_what_the_controller_read_exits_2(recorded, tmp_path, capsys):
    """Steps written before ``missing`` and the context were recorded cannot be replayed."""
    old = tmp_path / "old"
    old.mkdir()
    for name in ("spec.json", "episodes.jsonl"):
        (old / name).write_text((recorded / name).read_text())
    lines = [json.loads(x) for x in (recorded / "steps.jsonl").read_text().splitlines()]
    for row in lines:
        del row["missing"], row["plan_exhausted"]
    (old / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert main(["replay", str(old), "--controller", "threshold"]) == 2
    err = capsys.readouterr().err
    assert "lacks missing, plan_exhausted" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["calibrate", "no/such/run"], "not a run directory"),
        (["replay", "no/such/run", "--controller", "pid"], "not a run directory"),
    ],
)
def test_bad_run_directories_exit_2_in_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_an_unknown_controller_exits_2(recorded, capsys):
    assert main(["replay", str(recorded), "--controller", "nope"]) == 2
    assert "unknown controller" in capsys.readouterr().err


class _StopAtOnce:
    """TERMINATE at the first Reflect, claiming completion or giving up."""

    name = "stop_at_once"

    def __init__(self, give_up: bool) -> None:
        self.give_up = give_up

    def reset(self) -> None:
        """Stateless."""

    def decide(self, evaluation, ctx):
        """TERMINATE with the scripted claim."""
        from opar_sim import ControlSignal, Decision

        return Decision(ControlSignal.TERMINATE, "scripted", give_up=self.give_up)


@pytest.mark.parametrize(
    ("give_up", "feasible", "progress", "outcome"),
    [
        (False, True, 0.5, "premature"),
        (False, False, 0.5, "premature"),  # a false completion claim, whatever the feasibility
        (True, False, 0.5, "gave_up"),
        (True, True, 0.5, "abandoned"),
        (True, True, 1.0, "success"),  # judged from the world first, as the loop does
        (False, True, 1.0, "success"),
    ],
)
def test_a_replayed_stop_is_judged_like_the_loop(give_up, feasible, progress, outcome):
    from opar_sim.traces.replay import replay_episode

    row = {
        "plan_id": 1,
        "step": 1,
        "time": 3.0,
        "progress": progress,
        "plan_quality": 0.8,
        "delta_task": 0.4,
        "delta_act": 1.0,
        "delta_plan": 0.0,
        "confidence": 0.4,
        "critique": "",
        "missing": [],
        "memory": None,
        "signal": "continue",
        "give_up": False,
        "plan_age": 1,
        "plan_exhausted": False,
        "replans": 0,
        "complete": progress >= 1.0,
        "feasible": feasible,  # the truth the loop judges a stop by, recorded at each step
    }
    episode = {"episode": 0, "controller": "threshold", "outcome": "truncated:max_steps"}
    replayed = replay_episode([row], episode | {"feasible": feasible}, _StopAtOnce(give_up))
    assert (replayed.verdict, replayed.at_step, replayed.outcome) == ("stop", 1, outcome)


def test_episodes_record_feasibility_and_steps_the_give_up_claim(recorded):
    run = load_run(recorded)
    assert all(isinstance(e["feasible"], bool) for e in run.episodes)
    steps = [row for rows in run.episode_steps().values() for row in rows]
    assert {row["give_up"] for row in steps} == {False}  # the PID's give-up rule is off
