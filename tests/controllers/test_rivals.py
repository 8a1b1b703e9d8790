"""The rival decision laws: ReAct confidence, open loop, fixed interval, stall counter, oracle."""

from __future__ import annotations

import pytest

import controllers
import environments
from controllers import ReflectContext, Truth, TruthReader
from opar_sim import ControlSignal, Evaluation
from opar_sim.agents import SimulatedAgent
from opar_sim.core.limits import Limits
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed

CONTINUE, REPLAN, TERMINATE = ControlSignal.CONTINUE, ControlSignal.REPLAN, ControlSignal.TERMINATE


def ctx(step: int = 2, plan_age: int = 1, exhausted: bool = False):
    return ReflectContext(step, 10.0 * step, 10.0, plan_age, exhausted, 0)


def ev(task=0.5, act=1.0, conf=0.5, missing=("remaining goal",)) -> Evaluation:
    return Evaluation(task, act, 0.0, conf, "", missing)


@pytest.mark.parametrize(
    ("evaluation", "signal"),
    [
        (ev(conf=0.8), TERMINATE),  # confident: stop, whatever else
        (ev(conf=0.79, act=0.6), REPLAN),  # missing information and the step made no progress
        (ev(conf=0.5, act=1.0), CONTINUE),  # missing, but the step moved forward
        (ev(conf=0.5, act=0.1, missing=()), CONTINUE),  # no progress, but nothing missing
    ],
)
def test_confidence_is_react_self_reflection(evaluation, signal):
    # the ReAct document's values (the defaults are re-fitted on tuning seeds)
    law = controllers.make("confidence", threshold=0.8, progress_act=0.8, min_dwell=0)
    assert law.decide(evaluation, ctx()).signal is signal


def test_open_loop_follows_the_plan_and_stops_when_it_is_used_up():
    law = controllers.make("open_loop")
    assert law.decide(ev(task=0.0, act=0.0), ctx(exhausted=False)).signal is CONTINUE
    stop = law.decide(ev(task=0.0), ctx(exhausted=True))
    assert (stop.signal, stop.reason) == (TERMINATE, "plan exhausted")


def test_open_loop_never_replans_in_an_episode():
    task = environments.make("flight_booking")
    result = run_episode(
        task, SimulatedAgent(), controllers.make("open_loop"), Limits(), episode_seed(0, 0)
    )
    assert result.cost.replans == 0
    assert len(result.steps) == len(task.plan_template())


def test_fixed_interval_replans_every_n_steps_regardless():
    law = controllers.make("fixed_interval", interval=2, complete=0.9)
    signals = [law.decide(ev(act=1.0), ctx(plan_age=age)).signal for age in (1, 2, 1, 2)]
    assert signals == [CONTINUE, REPLAN, CONTINUE, REPLAN]
    assert law.decide(ev(task=0.9), ctx(plan_age=2)).signal is TERMINATE


def test_stall_counter_is_magentic_ones_ledger():
    law = controllers.make("stall_counter", max_stalls=2, max_replans=1)
    stalled, moving = ev(act=0.6), ev(act=1.0)
    seq = [stalled, moving, stalled, stalled, stalled, stalled]
    # stalls: 1, 0 (progress takes one off), 1, 2 → REPLAN (restart at 0), 1, 2 → give up
    decisions = [law.decide(e, ctx()) for e in seq]
    assert [d.signal for d in decisions] == [
        CONTINUE,
        CONTINUE,
        CONTINUE,
        REPLAN,
        CONTINUE,
        TERMINATE,
    ]
    assert decisions[-1].reason.startswith("give up")
    assert decisions[3].terms["stalls"] == 2.0
    assert law.decide(ev(task=0.95, act=0.1), ctx()).signal is TERMINATE  # request satisfied


@pytest.mark.parametrize(
    ("truth", "signal", "reason"),
    [
        (Truth(1.0, True, True, 0.1), TERMINATE, "task complete (truth)"),
        (Truth(0.3, False, False, 0.9), TERMINATE, "give up: task infeasible (truth)"),
        (Truth(0.5, False, True, 0.54), REPLAN, "plan is bad (truth)"),
        (Truth(0.5, False, True, 0.55), CONTINUE, "plan is good (truth)"),
        # the effective quality (context decay included) is read when the probe has it
        (Truth(0.5, False, True, 0.9, 0.54), REPLAN, "plan is bad (truth)"),
        (Truth(0.5, False, True, 0.3, 0.55), CONTINUE, "plan is good (truth)"),
    ],
)
def test_oracle_reads_the_hidden_state_not_the_evaluation(truth, signal, reason):
    misleading = ev(task=1.0, act=0.0, conf=1.0)
    law = controllers.make("oracle")
    assert isinstance(law, TruthReader)  # declared to read the hidden state, through a probe
    law.bind_truth(lambda: truth)
    decision = law.decide(misleading, ctx())
    assert (decision.signal, decision.reason) == (signal, reason)


def test_the_probe_reads_the_simulated_agents_effective_quality():
    """Past the context knee the effective quality is q·(1 − decay·excess/knee), recorded."""
    agent = SimulatedAgent(context_knee=1000, context_decay=0.5, quality_floor=0.05)
    law = controllers.make("oracle")
    result = run_episode(
        environments.make("flight_booking"), agent, law, Limits(), episode_seed(0, 3)
    )
    decayed = 0
    for rec in result.steps:
        excess = rec.context_tokens - 1000
        expected = rec.plan_quality
        if excess > 0:
            expected = max(0.05, rec.plan_quality * (1.0 - 0.5 * excess / 1000))
        assert rec.effective_quality == expected
        assert rec.decision.terms["plan_quality"] == rec.effective_quality
        decayed += rec.effective_quality < rec.plan_quality
    assert decayed > 0


def test_an_agent_that_cannot_report_it_leaves_the_drawn_quality():
    from opar_sim.core.loop import _effective_quality
    from opar_sim.core.types import Plan

    plan = Plan(1, (), 0.42, 1)
    assert _effective_quality(object(), plan) == 0.42  # type: ignore[arg-type]
    agent = SimulatedAgent()
    assert _effective_quality(agent, plan) == 0.42  # a short context: no decay yet


def test_oracle_gives_up_on_an_infeasible_task_at_the_first_reflect():
    task = environments.make("flight_booking", infeasible_rate=1.0)
    law = controllers.make("oracle")
    result = run_episode(task, SimulatedAgent(), law, Limits(), episode_seed(0, 0))
    assert result.outcome == "gave_up"
    assert len(result.steps) == 1


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("confidence", {"threshold": 1.2}, "threshold must be in"),
        ("fixed_interval", {"interval": 0}, "interval must be >= 1"),
        ("stall_counter", {"max_stalls": 0}, "max_stalls must be >= 1"),
        ("stall_counter", {"max_replans": -1}, "max_replans must be >= 0"),
        ("oracle", {"plan_quality": -0.1}, "plan_quality must be in"),
        ("open_loop", {"interval": 3}, "unexpected keyword argument 'interval'"),
    ],
)
def test_bad_parameters_are_rejected_naming_them(name, params, message):
    with pytest.raises(ValueError, match=message):
        controllers.make(name, **params)
