"""The gate decides as the simulator's loop decides, on the same sequence of evaluations."""

from __future__ import annotations

import json

import pytest

from opar_sim import ControlSignal
from opar_sim.api import run
from opar_sim.core.types import Evaluation
from opar_sim.runtime import Gate, HostStep, LawError, NeedsEvaluation, ToolCall
from opar_sim.traces.replay import evaluation_of
from opar_sim.traces.stopping import load_costs, parse_law


def _rows(out):
    episodes = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    steps = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    by = {}
    for row in steps:
        by.setdefault(row["episode"], []).append(row)
    return episodes, by


@pytest.fixture(scope="module")
def pid_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pid") / "run"
    run("experiments/flight_booking.toml", episodes=40, out=out, figures=False)
    return out


def _host(row, previous_tokens):
    calls = []
    if row["tool"] is not None:  # the simulator's action, identified by its label
        calls = [ToolCall(row["tool"], {"label": row["action"]}, row["tool_error"])]
    return HostStep(
        calls=calls,
        tokens=row["tokens"] - previous_tokens,
        elapsed=row["time"],
        plan_exhausted=row["plan_exhausted"],
    )


def test_the_pid_through_the_gate_makes_the_loops_decisions(pid_run):
    spec = json.loads((pid_run / "spec.json").read_text())
    assert spec["controller"]["name"] == "pid"
    episodes, by = _rows(pid_run)
    rows_seen = {"continue": 0, "replan": 0, "terminate": 0}

    def scripted(host, history):  # the evaluations the simulated agent made, in order
        return scripted.queue.pop(0)

    gate = Gate("pid", spec["controller"]["params"], time_unit="seconds", evaluator=scripted)
    for episode in episodes:
        rows = by[episode["episode"]]
        scripted.queue = [evaluation_of(r) for r in rows]
        gate.begin(episode["episode"])
        tokens = 0
        for row in rows:
            verdict = gate.step(_host(row, tokens))
            tokens = row["tokens"]
            assert (verdict.signal.value, verdict.reason, verdict.give_up) == (
                row["signal"],
                row["reason"],
                row["give_up"],
            )
            assert verdict.terms == pytest.approx(row["terms"], abs=0, rel=0)
            assert (gate.plan_age, gate.replans) == (row["plan_age"], row["replans"])
            rows_seen[row["signal"]] += 1
    assert all(n > 0 for n in rows_seen.values())  # all three signals were replayed


@pytest.mark.parametrize(
    "law", ["calls:4", "repeat:2", "errors:1", "calls:6+repeat:2", "tokens:9000"]
)
def test_a_trace_law_through_the_gate_stops_where_the_replay_does(pid_run, law):
    episodes, by = _rows(pid_run)
    costs = {c.task: c for c in load_costs(pid_run)}
    rule = parse_law(law)
    fired = 0
    gate = Gate(law)
    for episode in episodes:
        rows = by[episode["episode"]]
        gate.begin(episode["episode"])
        tokens = 0
        stop = None
        for row in rows:
            verdict = gate.step(_host(row, tokens))
            tokens = row["tokens"]
            if verdict.signal is ControlSignal.TERMINATE:
                assert verdict.give_up
                stop = verdict.step
                break
            assert verdict.signal is ControlSignal.CONTINUE
        expected = rule.stop(costs[episode["episode"]])
        cost = costs[episode["episode"]]
        # the replay's stop at the last turn is "never fired" unless the count reached k there
        if stop is None:
            assert expected == cost.steps
        else:
            assert stop == expected
            fired += 1
    assert fired > 0


def test_a_law_that_reads_the_hidden_state_is_refused():
    with pytest.raises(LawError, match="hidden state"):
        Gate("oracle")
    from controllers import Oracle

    with pytest.raises(LawError, match="hidden state"):
        Gate(Oracle())


def test_bad_units_and_replan_meanings_are_refused():
    with pytest.raises(LawError, match="time_unit"):
        Gate("pid", time_unit="minutes")
    with pytest.raises(LawError, match="replan"):
        Gate("pid", replan="restart")
    with pytest.raises(LawError, match="unknown controller"):
        Gate("pidd")
    with pytest.raises(LawError, match="takes no parameters"):
        Gate("calls:3", {"k": 1})


def test_a_law_reading_an_evaluation_needs_one():
    gate = Gate("threshold")
    assert gate.needs_evaluation and not Gate("repeat:3").needs_evaluation
    with pytest.raises(NeedsEvaluation, match="self-evaluation"):
        gate.step(HostStep())


def test_the_step_unit_gives_dt_of_step_seconds():
    seen = []

    class Spy:
        name = "spy"

        def reset(self):
            pass

        def decide(self, evaluation, ctx):
            seen.append((ctx.step, ctx.now, ctx.dt, ctx.plan_age, ctx.replans))
            signal = ControlSignal.REPLAN if ctx.step == 2 else ControlSignal.CONTINUE
            from opar_sim.core.types import Decision

            return Decision(signal, "spy")

    gate = Gate(Spy(), step_seconds=2.5)
    ev = Evaluation(0.1, 0.5, 0.0, 0.5)
    for _ in range(3):
        verdict = gate.step(HostStep(evaluation=ev))
    assert seen == [(1, 2.5, 0.0, 1, 0), (2, 5.0, 2.5, 2, 0), (3, 7.5, 2.5, 1, 1)]
    assert verdict.signal is ControlSignal.CONTINUE
    assert not verdict.fresh_context


def test_episodes_are_numbered_from_zero_and_begin_resets_the_law():
    gate = Gate("calls:2")
    gate.begin()
    assert gate.episode == 0
    gate.step(HostStep([ToolCall("a")]))
    assert gate.step(HostStep([ToolCall("a")])).signal is ControlSignal.TERMINATE
    with pytest.raises(LawError, match="begin"):
        gate.step(HostStep())
    gate.begin()
    assert (
        gate.episode == 1 and gate.step(HostStep([ToolCall("a")])).signal is ControlSignal.CONTINUE
    )
    gate.begin(7)
    assert gate.episode == 7 and gate.counts.counts["calls"] == 0
