"""The convergence guards, the Supervisor that composes them, and the spec's [guards] table."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import controllers
import environments
from controllers import Truth
from opar_sim import Action, ActionResult, ControlSignal, Decision, Evaluation, Observation
from opar_sim.agents import ScriptedAgent, SimulatedAgent
from opar_sim.core.guards import (
    ConfidenceStop,
    ConfirmStop,
    HumanGate,
    MaxIterations,
    NoImprovement,
    RepeatedAction,
    TimeBudget,
    TokenBudget,
    TokenSpike,
)
from opar_sim.core.limits import Limits
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed
from opar_sim.core.supervisor import Supervisor
from opar_sim.core.types import TRUNCATION_REASONS, StepRecord
from opar_sim.spec.build import parse_spec
from opar_sim.spec.guards import GuardsSpec
from opar_sim.spec.schema import SpecError

CONTINUE, REPLAN, TERMINATE = ControlSignal.CONTINUE, ControlSignal.REPLAN, ControlSignal.TERMINATE
GOING = Decision(CONTINUE, "controller", {})
STOPPING = Decision(TERMINATE, "controller", {})
RAIN = Action.of("get_weather", city="Paris")
QUIET = {"tools": {"failure_rate": 0.0, "latency_sigma": 0.0}}


def record(step=1, time=10.0, tokens=1000, task=0.5, conf=0.5, action=RAIN, text="rain"):
    return StepRecord(
        step=step,
        time=time,
        observation=Observation("", 0.0),
        plan_id=1,
        plan_quality=0.5,
        action=action,
        expert=True,
        result=ActionResult(True, text, float(step)),  # latency differs every step
        evaluation=Evaluation(task, 1.0, 0.0, conf),
        decision=None,
        progress=0.5,
        tokens=tokens,
        context_tokens=0,
        answer="",
    )


def fresh(guard):
    guard.reset(np.random.default_rng(0))
    return guard


@pytest.mark.parametrize(
    ("guard", "rec", "reason"),
    [
        (MaxIterations(3), record(step=3), "max_steps"),
        (TimeBudget(30.0), record(time=30.0), "time"),
        (TokenBudget(5000), record(tokens=5000), "tokens"),
    ],
)
def test_budget_guards_truncate_at_their_limit(guard, rec, reason):
    action = fresh(guard).check(rec, GOING)
    assert action is not None and action.truncate and action.reason == reason
    assert fresh(guard).check(rec, STOPPING) is None  # a TERMINATE is left to stand


def test_budget_guards_are_quiet_below_their_limit():
    assert fresh(MaxIterations(3)).check(record(step=2), GOING) is None
    assert fresh(TimeBudget(30.0)).check(record(time=29.9), GOING) is None
    assert fresh(TokenBudget(5000)).check(record(tokens=4999), GOING) is None


def test_token_spike_fires_on_a_step_over_three_times_the_running_mean():
    guard = fresh(TokenSpike(3.0))
    totals = [1000, 2000, 3000]  # 1000 tokens a step
    for step, total in enumerate(totals, 1):
        assert guard.check(record(step=step, tokens=total), GOING) is None
    assert guard.check(record(step=4, tokens=6000), GOING) is None  # 3000 = 3× mean
    spike = guard.check(record(step=5, tokens=6000 + 4501), GOING)  # mean 1500
    assert spike is not None and spike.truncate and spike.reason == "token_spike"


def test_no_improvement_counts_reflects_without_a_better_estimate():
    guard = fresh(NoImprovement(3))
    estimates = [0.3, 0.5, 0.5, 0.4, 0.5]
    results = [guard.check(record(task=x), GOING) for x in estimates]
    assert results[:4] == [None] * 4
    assert results[4] is not None and results[4].reason == "no_progress"


GIVING_UP = Decision(TERMINATE, "controller", {}, give_up=True)


def test_confirm_holds_a_completion_claim_until_k_in_a_row():
    guard = fresh(ConfirmStop(3))
    seen = [guard.check(record(step=t), d) for t, d in enumerate([STOPPING] * 4, 1)]
    assert [(a.signal, a.reason) if a else None for a in seen] == [
        (CONTINUE, "confirm: 1/3"),
        (CONTINUE, "confirm: 2/3"),
        None,  # the third TERMINATE in a row stands
        None,
    ]
    assert not any(a.truncate or a.delay for a in seen[:2] if a)


def test_confirm_resets_on_any_other_signal_and_on_reset():
    guard = fresh(ConfirmStop(2))
    verdicts = []
    for decision in [STOPPING, GOING, STOPPING, Decision(REPLAN, "r", {}), STOPPING, STOPPING]:
        action = guard.check(record(), decision)
        verdicts.append(action.reason if action else None)
    assert verdicts == ["confirm: 1/2", None, "confirm: 1/2", None, "confirm: 1/2", None]
    guard.check(record(), STOPPING)  # a third in a row passes; reset starts the count again
    guard.reset(np.random.default_rng(0))
    assert guard.check(record(), STOPPING).reason == "confirm: 1/2"


def test_confirm_does_not_delay_a_give_up():
    guard = fresh(ConfirmStop(2))
    assert guard.check(record(), GIVING_UP) is None
    assert guard.check(record(), STOPPING).reason == "confirm: 1/2"  # a give-up is no claim
    assert fresh(ConfirmStop(1)).check(record(), STOPPING) is None  # k = 1: no confirmation


def test_confirm_rejects_k_below_one():
    with pytest.raises(ValueError, match="k >= 1"):
        ConfirmStop(0)


def test_threshold_with_confirm_2_needs_two_consecutive_terminate_readings():
    done, half = Evaluation(1.0, 1.0, 0.0, 1.0), Evaluation(0.5, 1.0, 0.0, 0.5)
    agent = ScriptedAgent([RAIN], [done, half, done, done, half])
    task = environments.make("weather", **QUIET)
    supervisor = GuardsSpec(confirm=2).supervisor()
    result = run_episode(
        task,
        agent,
        controllers.make("threshold"),
        Limits(max_steps=10),
        episode_seed(3, 0),
        supervisor=supervisor,
    )
    assert [(r.decision.signal, r.guard) for r in result.steps] == [
        (CONTINUE, "confirm: 1/2"),
        (CONTINUE, None),
        (CONTINUE, "confirm: 1/2"),
        (TERMINATE, None),
    ]
    assert result.steps[0].decision.reason == "guard: confirm: 1/2"
    unconfirmed = run_episode(
        environments.make("weather", **QUIET),
        ScriptedAgent([RAIN], [done, half, done, done, half]),
        controllers.make("threshold"),
        Limits(max_steps=10),
        episode_seed(3, 0),
    )
    assert len(unconfirmed.steps) == 1


def test_confirm_is_reviewed_first_so_it_reads_the_controllers_own_decision():
    spec = GuardsSpec(confirm=2, confidence=0.4, max_iterations=5)
    assert [name for name, _ in spec.enabled()] == ["confirm", "max_iterations", "confidence"]
    assert spec.enabled()[0] == ("confirm", {"k": 2})


def test_confidence_guard_forces_terminate_without_truncating():
    guard = fresh(ConfidenceStop(0.8))
    assert guard.check(record(conf=0.79), GOING) is None
    action = guard.check(record(conf=0.8), GOING)
    assert action is not None and action.signal is TERMINATE and not action.truncate


def test_confirm_holds_a_terminate_until_k_in_a_row_and_resets_on_any_other_signal():
    guard = fresh(ConfirmStop(3))
    replan = Decision(REPLAN, "controller", {})
    held = [guard.check(record(step=s), d) for s, d in enumerate([STOPPING, STOPPING], 1)]
    assert [(a.signal, a.reason, a.truncate) for a in held] == [
        (CONTINUE, "confirm: 1/3", False),
        (CONTINUE, "confirm: 2/3", False),
    ]
    assert guard.check(record(step=3), replan) is None  # resets the count
    assert guard.check(record(step=4), STOPPING).reason == "confirm: 1/3"
    assert guard.check(record(step=5), GOING) is None
    assert [guard.check(record(step=s), STOPPING) for s in (6, 7, 8)][-1] is None  # 3rd stands
    assert fresh(ConfirmStop(1)).check(record(), STOPPING) is None
    fresh(guard)
    assert guard.check(record(), STOPPING).reason == "confirm: 1/3"


def test_confirm_is_a_guards_key_that_builds_the_confirm_guard():
    base = {"name": "c", "episodes": 20, "controller": {"name": "threshold"}}
    once = parse_spec(base)
    twice = parse_spec(base | {"guards": {"confirm": 2}})
    assert twice.guards.supervisor() is not None
    assert [g.name for g in twice.guards.guards()] == ["confirm"]
    assert twice.model_dump()["guards"]["confirm"] == 2
    assert once.guards.confirm is None


def test_repeated_action_and_result_forces_a_replan_then_stops_as_stuck():
    guard = fresh(RepeatedAction(persist=1))
    first = [guard.check(record(step=s), GOING) for s in (1, 2)]
    assert first == [None, None]
    third = guard.check(record(step=3), GOING)
    assert third is not None and third.signal is REPLAN and third.reason == "stuck: change tool"
    fourth = guard.check(record(step=4), GOING)
    assert fourth is not None and fourth.truncate and fourth.reason == "stuck"


def test_a_different_result_breaks_the_repeat():
    guard = fresh(RepeatedAction())
    for step, text in enumerate(["rain", "rain", "sun", "sun"], 1):
        assert guard.check(record(step=step, text=text), GOING) is None


def test_human_gate_knows_the_truth_and_takes_its_time():
    gate = fresh(HumanGate(latency=30.0, error_rate=0.0))
    done, not_done = Truth(1.0, True, True, 0.9), Truth(0.5, False, True, 0.9)
    truth = {"now": done}
    gate.bind_truth(lambda: truth["now"])
    approved = gate.check(record(), STOPPING)
    assert (approved.signal, approved.reason, approved.delay) == (
        TERMINATE,
        "human: approved terminate",
        30.0,
    )
    truth["now"] = not_done
    rejected = gate.check(record(), STOPPING)
    assert (rejected.signal, rejected.reason) == (CONTINUE, "human: rejected terminate")
    bad_plan = Truth(0.5, False, True, 0.2)
    truth["now"] = bad_plan
    assert gate.check(record(), Decision(REPLAN, "", {})).signal is REPLAN
    truth["now"] = not_done
    assert gate.check(record(), Decision(REPLAN, "", {})).signal is CONTINUE
    assert gate.check(record(), GOING) is None  # CONTINUE needs no approval


def test_human_gate_judges_a_plan_by_its_effective_quality_like_the_oracle():
    gate = fresh(HumanGate(latency=0.0, error_rate=0.0, bad_plan=0.5))
    # a well-drawn plan (0.9) that context decay has worn down to 0.3 is bad now
    worn = Truth(0.5, False, True, 0.9, effective_quality=0.3)
    gate.bind_truth(lambda: worn)
    assert gate.check(record(), Decision(REPLAN, "", {})).signal is REPLAN
    fresh_plan = Truth(0.5, False, True, 0.2, effective_quality=0.8)
    gate.bind_truth(lambda: fresh_plan)
    assert gate.check(record(), Decision(REPLAN, "", {})).signal is CONTINUE


def test_human_gate_errs_at_its_error_rate():
    gate = fresh(HumanGate(latency=0.0, error_rate=0.2))
    done = Truth(1.0, True, True, 0.9)
    gate.bind_truth(lambda: done)
    wrong = sum(gate.check(record(), STOPPING).signal is CONTINUE for _ in range(5000))
    assert wrong / 5000 == pytest.approx(0.2, abs=0.02)


def test_supervisor_composes_overrides_and_their_delays():
    supervisor = Supervisor([ConfidenceStop(0.8), HumanGate(latency=12.0, error_rate=0.0)])
    supervisor.reset(np.random.default_rng(0))
    supervisor.bind_truth(lambda: Truth(0.5, False, True, 0.5))
    verdict = supervisor.review(record(conf=0.9), GOING)
    assert verdict is not None
    assert verdict.signal is CONTINUE  # the human rejects the confident but false completion
    assert verdict.reason == "confidence; human: rejected terminate"
    assert verdict.delay == 12.0 and not verdict.truncate


def test_a_truncating_guard_ends_the_review():
    supervisor = Supervisor([MaxIterations(1), HumanGate(latency=5.0)])
    supervisor.reset(np.random.default_rng(0))
    verdict = supervisor.review(record(step=1), Decision(REPLAN, "", {}))
    assert verdict is not None and verdict.truncate and verdict.reason == "max_steps"
    assert verdict.delay == 0.0


# -- in the loop ------------------------------------------------------------------------------


TEN_STEPS = Limits(max_steps=10)


def weather(agent, supervisor, limits=TEN_STEPS):
    task = environments.make("weather", **QUIET)
    law = controllers.make("threshold")
    return run_episode(task, agent, law, limits, episode_seed(3, 0), supervisor=supervisor)


def test_stuck_loop_is_replanned_then_truncated_with_the_best_answer():
    half, better = Evaluation(0.5, 1.0, 0.0, 0.5), Evaluation(0.6, 1.0, 0.0, 0.5)
    agent = ScriptedAgent([RAIN], [half, better, half, half, half])
    result = weather(agent, GuardsSpec(repeat=True).supervisor())
    assert result.outcome == "truncated:stuck"
    assert len(result.steps) == 4
    assert result.steps[2].guard == "stuck: change tool"
    assert result.steps[2].decision.signal is REPLAN
    assert result.steps[2].decision.reason == "guard: stuck: change tool"
    assert result.best_step == 2  # best-of-history: the step the agent rated highest


def test_human_latency_passes_in_simulated_time():
    done = Evaluation(1.0, 1.0, 0.0, 1.0)  # the agent wrongly believes it is done
    plain = weather(ScriptedAgent([RAIN], [done]), None)
    human = GuardsSpec(human={"latency": 40.0, "error_rate": 0.0}).supervisor()
    gated = weather(ScriptedAgent([RAIN], [done]), human)
    assert plain.outcome == "premature"
    assert gated.steps[0].guard == "human: rejected terminate"
    assert gated.steps[0].decision.signal is CONTINUE
    step = gated.steps[0].time  # every step of this scripted run takes the same time
    assert gated.steps[1].time == pytest.approx(step + 40.0 + step)


def test_human_latency_counts_against_the_time_budget():
    done = Evaluation(1.0, 1.0, 0.0, 1.0)
    spec = GuardsSpec(human={"latency": 100.0, "error_rate": 0.0})
    result = weather(ScriptedAgent([RAIN], [done]), spec.supervisor(), Limits(time_budget=250.0))
    assert result.outcome == "truncated:time"
    assert result.cost.sim_seconds == 250.0


def test_human_errors_are_seeded_by_the_episode():
    spec = GuardsSpec(human={"latency": 1.0, "error_rate": 0.5})

    def once(seed):
        task = environments.make("flight_booking")
        law = controllers.make("pid")
        res = run_episode(
            task,
            SimulatedAgent(),
            law,
            Limits(),
            episode_seed(seed, 0),
            supervisor=spec.supervisor(),
        )
        return [(r.guard, r.decision.signal) for r in res.steps]

    assert once(7) == once(7)
    assert any(once(s) != once(7) for s in range(8))


# -- the spec's [guards] table -----------------------------------------------------------------


def test_guards_table_builds_a_supervisor_in_a_fixed_order():
    spec = parse_spec(
        {
            "name": "g",
            "guards": {
                "human": {"latency": 30.0, "error_rate": 0.05},
                "confidence": 0.8,
                "repeat": True,
                "token_spike": 3.0,
                "no_improvement": 3,
                "max_iterations": 8,
                "confirm": 2,
            },
        }
    )
    supervisor = spec.guards.supervisor()
    assert supervisor is not None
    assert [g.name for g in supervisor.guards] == [
        "confirm",
        "max_iterations",
        "token_spike",
        "no_improvement",
        "repeat",
        "confidence",
        "human",
    ]
    assert parse_spec({"name": "bare"}).guards.supervisor() is None


@pytest.mark.parametrize(
    ("guards", "key"),
    [
        ({"colour": 1}, "guards.colour: unknown key"),
        ({"no_improvement": 0}, "guards.no_improvement"),
        ({"confirm": 0}, "guards.confirm"),
        ({"confidence": 1.5}, "guards.confidence"),
        ({"token_spike": 0.5}, "guards.token_spike"),
        ({"time_budget": -1.0}, "guards.time_budget"),
        ({"repeat": "often"}, "guards.repeat"),
        ({"human": {"latency": -5.0}}, "guards.human.latency"),
        ({"human": {"error_rate": 2.0}}, "guards.human.error_rate"),
        ({"human": {"latncy": 5.0}}, "guards.human.latncy: unknown key"),
    ],
)
def test_bad_guard_config_names_the_key(guards, key):
    with pytest.raises(SpecError, match=key.replace(".", r"\.")):
        parse_spec({"name": "g", "guards": guards})


# -- any controller, any guards: the hard limits still hold -----------------------------------

guard_tables = st.fixed_dictionaries(
    {},
    optional={
        "max_iterations": st.integers(1, 30),
        "no_improvement": st.integers(1, 5),
        "confidence": st.floats(0, 1),
        "time_budget": st.floats(1, 500),
        "token_budget": st.integers(1, 300_000),
        "token_spike": st.floats(1.01, 5),
        "repeat": st.booleans(),
        "human": st.fixed_dictionaries(
            {"latency": st.floats(0, 100), "error_rate": st.floats(0, 1)}
        ),
    },
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    guards=guard_tables,
    controller=st.sampled_from(controllers.names()),
    seed=st.integers(0, 2**32 - 1),
    max_steps=st.integers(1, 30),
    time_budget=st.floats(1, 1000),
)
def test_hard_limits_hold_for_every_controller_under_any_guards(
    guards, controller, seed, max_steps, time_budget
):
    limits = Limits(max_steps=max_steps, time_budget=time_budget, token_budget=150_000)
    result = run_episode(
        environments.make("flight_booking"),
        SimulatedAgent(),
        controllers.make(controller),
        limits,
        np.random.SeedSequence(seed),
        supervisor=GuardsSpec.model_validate(guards).supervisor(),
    )
    assert len(result.steps) <= max_steps
    assert result.cost.sim_seconds <= time_budget
    assert result.cost.tokens <= 150_000
    kind, _, reason = result.outcome.partition(":")
    assert kind in {"success", "premature", "gave_up", "truncated", "error"}
    if kind == "truncated":
        assert reason in TRUNCATION_REASONS
