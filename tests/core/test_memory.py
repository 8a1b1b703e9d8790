"""The loop's memory: context compression, Reflexion's long-term memory, and guardrails."""

from __future__ import annotations

import json

import pytest

import controllers
import environments
from opar_sim import Action, Evaluation
from opar_sim.agents import ScriptedAgent, SimulatedAgent
from opar_sim.agents.context import Context
from opar_sim.core.guardrail import Guardrail
from opar_sim.core.limits import Limits
from opar_sim.core.loop import run_episode
from opar_sim.core.reflexion import LongTermMemory, critique_of, run_attempts, success_by_attempt
from opar_sim.core.seeding import episode_seed, streams
from opar_sim.core.types import EpisodeResult
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import parse_spec
from opar_sim.spec.schema import SpecError
from tests.conftest import EXPERIMENTS


def test_compress_folds_older_steps_into_one_cheaper_memory_entry():
    ctx = Context()
    ctx.append("system", 300)
    for _ in range(5):
        ctx.begin_step()
        ctx.append("observation", 50)
        ctx.append("reflection", 100)
    before, after, folded = ctx.compress(keep_steps=2, memory_tokens=120)
    assert (before, folded) == (1050, 3)
    assert after == 300 + 120 + 2 * 150 == ctx.tokens
    ctx.begin_step()
    ctx.append("observation", 50)
    _, again, folded = ctx.compress(keep_steps=2, memory_tokens=120)
    assert folded == 1 and again == 300 + 120 + 150 + 50  # the new summary replaces the old


def long_run(**params):
    task = environments.make("research_qa", n_facts=6, n_docs=30)
    agent = SimulatedAgent(**params)
    controller = controllers.make("pid", settle_count=50)
    limits = Limits(max_steps=20, time_budget=5000.0, token_budget=10**7)
    return run_episode(task, agent, controller, limits, episode_seed(0, 1))


def test_compression_keeps_the_context_bounded_and_is_recorded():
    plain = long_run()
    compressed = long_run(context_max=2000)
    assert max(r.context_tokens for r in plain.steps) > 4000
    assert max(r.context_tokens for r in compressed.steps) < 2000 + 600
    notes = [r.memory for r in compressed.steps if r.memory]
    assert notes and notes[0].startswith("summarised")
    assert all(r.memory is None for r in plain.steps)


def test_compression_is_written_to_steps_jsonl(tmp_path):
    data = {
        "name": "m",
        "episodes": 2,
        "task": {"name": "research_qa", "params": {"n_facts": 6}},
        "agent": {"params": {"context_max": 1500}},
        "controller": {"name": "pid", "params": {"settle_count": 50}},
        "limits": {"max_steps": 15, "token_budget": 10**6},
    }
    run = run_experiment(parse_spec(data), tmp_path / "run")
    rows = [json.loads(x) for x in (run.out / "steps.jsonl").read_text().splitlines()]
    assert any(r["memory"] for r in rows) and all("intercepted" in r for r in rows)


def failed(outcome, steps=()):
    return EpisodeResult(0, 0, "t", "a", "c", outcome, "", 0.0, False, None, list(steps))  # type: ignore[arg-type]


def test_long_term_memory_keeps_at_most_keep_critiques():
    memory = LongTermMemory(2)
    for outcome in ("premature", "truncated:max_steps", "truncated:tokens"):
        memory.add(critique_of(failed(outcome)))
    kept = memory.recall()
    assert len(kept) == 2 and "max_steps" in kept[0] and "tokens" in kept[1]
    assert "believing the goal was met" in critique_of(failed("premature"))


def attempts(keep, seed=0, gain=0.12):
    task = environments.make("research_qa", n_facts=4)
    agent = SimulatedAgent(reflexion_gain=gain)
    return run_attempts(
        task,
        agent,
        controllers.make("pid"),
        Limits(max_steps=12),
        episode_seed(0, seed),
        attempts=5,
        keep=keep,
        episode=seed,
    )


def test_attempts_stop_at_the_first_success_and_are_numbered():
    for seed in range(6):
        tries = attempts(keep=3, seed=seed)
        assert [r.attempt for r in tries] == list(range(1, len(tries) + 1))
        assert all(not r.success for r in tries[:-1])


def test_each_attempt_faces_the_same_seeded_task():
    tries = attempts(keep=3, seed=1)
    first_obs = {r.steps[0].observation for r in tries}
    assert len(first_obs) == 1


def test_streams_do_not_advance_the_seed_they_split():
    seq = episode_seed(3, 4)

    def draws(s):
        return [getattr(s, name).random() for name in ("task", "agent", "tools", "controller")]

    first = draws(streams(seq))
    assert draws(streams(seq)) == first  # the same SeedSequence, the same draws
    assert draws(streams(episode_seed(3, 4))) == first


def test_every_attempt_sees_the_same_hidden_world():
    """Reflexion retries the same seeded task: the same flights, fares and points balance."""
    worlds = []
    task = environments.make("flight_booking")
    reset = task._reset_world

    def snapshot() -> None:
        reset()
        worlds.append(([(f.price, f.hour) for f in task.flights], task.balance))

    task._reset_world = snapshot  # type: ignore[method-assign]
    tries = run_attempts(
        task,
        SimulatedAgent(),
        controllers.make("open_loop"),  # stops short: most seeds need several attempts
        Limits(max_steps=8),
        episode_seed(0, 0),
        attempts=4,
        keep=3,
        episode=0,
    )
    assert len(tries) >= 2
    assert all(world == worlds[0] for world in worlds)


def test_memory_raises_success_over_attempts():
    rows_mem, rows_plain = [], []
    for seed in range(40):
        rows_mem += [(seed, r.attempt, r.success) for r in attempts(keep=3, seed=seed)]
        rows_plain += [(seed, r.attempt, r.success) for r in attempts(keep=0, seed=seed)]
    mem, plain = success_by_attempt(rows_mem, 5), success_by_attempt(rows_plain, 5)
    assert mem[0] == plain[0]  # attempt 1 has no memory yet
    assert mem[-1] >= plain[-1] + 0.05
    assert mem == sorted(mem)


def test_success_by_attempt_counts_first_successes():
    rows = [(0, 1, False), (0, 2, True), (1, 1, True), (2, 1, False), (2, 2, False)]
    assert success_by_attempt(rows, 3) == pytest.approx([1 / 3, 2 / 3, 2 / 3])


def test_spec_rejects_a_bad_reflexion_key():
    with pytest.raises(SpecError, match=r"reflexion\.tries: unknown key"):
        parse_spec({"name": "x", "reflexion": {"tries": 3}})


QUIET = {"empty_rate": 0.0, "fare_change_rate": 0.0, "tools": {"failure_rate": 0.0}}
UNSURE = Evaluation(0.3, 1.0, 0.0, 0.2)
SURE = Evaluation(0.6, 1.0, 0.0, 0.9)


def booking_run(agent, guardrail):
    task = environments.make("flight_booking", **QUIET, n_flights=4, page_size=4)
    result = run_episode(
        task,
        agent,
        controllers.make("threshold"),
        Limits(max_steps=3),
        episode_seed(0, 0),
        guardrail=guardrail,
    )
    return task, result


SEARCH = Action.of("search_flights", range="next_week")


def test_a_low_confidence_booking_is_intercepted_before_it_runs():
    book = Action.of("book_flight", flight_id=0, payment="cash")
    agent = ScriptedAgent([SEARCH, book], [UNSURE])
    task, result = booking_run(agent, Guardrail(min_confidence=0.5))
    step = result.steps[1]
    assert step.intercepted is not None and step.intercepted.startswith("low confidence")
    assert step.result.error == "intercepted" and task.booking is None
    assert result.cost.tool_calls == 1


def test_a_confident_booking_against_a_constraint_is_intercepted():
    probe, _ = booking_run(ScriptedAgent([SEARCH], [SURE]), None)
    bad = next(f.flight_id for f in probe.flights if not probe._valid(f))
    agent = ScriptedAgent([SEARCH, Action.of("book_flight", flight_id=bad, payment="cash")], [SURE])
    task, result = booking_run(agent, Guardrail(min_confidence=0.5))
    assert "constraint" in (result.steps[1].intercepted or "")
    assert task.booking is None


def test_without_a_guardrail_the_same_booking_runs():
    book = Action.of("book_flight", flight_id=0, payment="cash")
    task, result = booking_run(ScriptedAgent([SEARCH, book], [UNSURE]), None)
    assert result.steps[1].intercepted is None and task.booking is not None


def test_spec_guardrail_table_builds_a_guardrail():
    from opar_sim.spec.build import build

    parts = build(parse_spec({"name": "g", "guardrail": {"min_confidence": 0.7}}))
    assert parts.guardrail == Guardrail(min_confidence=0.7, constraints=True)
    assert build(parse_spec({"name": "g"})).guardrail is None
    with pytest.raises(SpecError, match=r"guardrail\.min_confidence"):
        parse_spec({"name": "g", "guardrail": {"min_confidence": 2}})


def test_guardrail_leaves_low_risk_calls_alone():
    task = environments.make("flight_booking")
    assert Guardrail(min_confidence=1.0).review(task, SEARCH, 0.0) is None


def test_studies_write_their_numbers_and_figures(tmp_path):
    from opar_sim.cli import main

    spec = str(EXPERIMENTS / "context_rebound.toml")
    assert main(["study", "rebound", spec, "--out", str(tmp_path / "r"), "--episodes", "4"]) == 0
    numbers = json.loads((tmp_path / "r" / "rebound.json").read_text())
    assert set(numbers) == {"no compression", "compression (C_max=2000)"}
    assert (tmp_path / "r" / "rebound.png").is_file()
    spec = str(EXPERIMENTS / "reflexion.toml")
    assert main(["study", "learning", spec, "--out", str(tmp_path / "l"), "--episodes", "4"]) == 0
    curves = json.loads((tmp_path / "l" / "learning.json").read_text())
    assert all(len(v["success_by_attempt"]) == 5 for v in curves.values())
    assert main(["study", "learning", "nope.toml", "--out", str(tmp_path / "x")]) == 2
