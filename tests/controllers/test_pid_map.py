"""The cognitive PID's effort → signal map: hysteresis, dwell, integral policy, stop rules."""

from __future__ import annotations

import pytest

import controllers
import environments
from controllers import CognitivePID, ReflectContext
from opar_sim import ControlSignal, Evaluation
from opar_sim.agents import SimulatedAgent
from opar_sim.core.limits import Limits
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed

CONTINUE, REPLAN, TERMINATE = ControlSignal.CONTINUE, ControlSignal.REPLAN, ControlSignal.TERMINATE


def ctx(step: int, dt: float = 10.0, plan_age: int = 5) -> ReflectContext:
    dt = 0.0 if step == 1 else dt
    return ReflectContext(step, step * dt, dt, plan_age, False, 0)


def ev(task: float, conf: float = 0.9) -> Evaluation:
    return Evaluation(task, 1.0, 0.0, conf)


def run(pid: CognitivePID, estimates: list[float]) -> list[tuple[ControlSignal, str]]:
    out = []
    for step, estimate in enumerate(estimates, start=1):
        decision = pid.decide(ev(estimate), ctx(step))
        out.append((decision.signal, decision.reason))
    return out


def test_every_decision_carries_the_pid_terms():
    decision = CognitivePID(1.0, 0.1, 2.0, pace=0.0).decide(ev(0.4), ctx(1))
    assert decision.terms["error"] == pytest.approx(0.6)
    assert decision.terms["p"] == pytest.approx(0.6)
    assert {"p", "i", "d", "effort"} <= set(decision.terms)
    assert decision.terms["effort"] == pytest.approx(sum(decision.terms[k] for k in "pid"))


def test_without_hysteresis_the_relay_fires_whenever_effort_is_high():
    pid = CognitivePID(1.0, 0.0, 0.0, replan_threshold=0.5, pace=0.0)
    assert [s for s, _ in run(pid, [0.4, 0.4, 0.4])] == [REPLAN, REPLAN, REPLAN]


def test_hysteresis_holds_the_relay_until_effort_falls_below_the_release_level():
    pid = CognitivePID(1.0, 0.0, 0.0, replan_threshold=0.5, hysteresis=0.2, pace=0.0)
    # effort = error = 1 − δ_task; the relay fires at 0.5 and re-arms at 0.5 − 0.2 = 0.3
    signals = run(pid, [0.4, 0.45, 0.65, 0.4, 0.75, 0.4])
    assert signals == [
        (REPLAN, "effort above replan threshold"),
        (CONTINUE, "replan held: relay not re-armed"),  # 0.55: still latched
        (CONTINUE, "effort below replan threshold"),  # 0.35: below, but not released
        (CONTINUE, "replan held: relay not re-armed"),  # 0.6
        (CONTINUE, "effort below replan threshold"),  # 0.25 ≤ 0.3: re-armed
        (REPLAN, "effort above replan threshold"),
    ]


def test_minimum_dwell_holds_a_replan_on_a_young_plan():
    pid = CognitivePID(1.0, 0.0, 0.0, replan_threshold=0.5, min_dwell=2, pace=0.0)
    young = pid.decide(ev(0.2), ReflectContext(2, 10, 10, 2, False, 0))
    assert (young.signal, young.reason) == (CONTINUE, "replan held: minimum dwell")


@pytest.mark.parametrize(("policy", "kept"), [("reset", 0.0), ("keep", 1.0), ("scale", 0.25)])
def test_integral_policy_on_replan(policy, kept):
    pid = CognitivePID(
        0.0,
        0.1,
        0.0,
        replan_threshold=0.5,
        integral_on_replan=policy,
        integral_scale=0.25,
        pace=0.0,
    )
    pid.decide(ev(0.0), ctx(1))
    decision = pid.decide(ev(0.0), ctx(2))  # I = 0.1 · 1 · 10 = 1 ≥ 0.5
    assert decision.signal is REPLAN
    assert decision.terms["i"] == pytest.approx(1.0)  # the terms explain the REPLAN
    assert pid.components[1] == pytest.approx(kept)  # what the new plan inherits


def test_settling_needs_k_reflects_in_the_band_and_enough_confidence():
    pid = CognitivePID(settle_band=0.1, settle_count=3, confidence_floor=0.8)
    estimates = [0.95, 0.96, 0.97]
    decisions = [pid.decide(ev(x, conf=0.5), ctx(i)) for i, x in enumerate(estimates, 1)]
    assert all(d.signal is not TERMINATE for d in decisions)  # settled but not confident
    final = pid.decide(ev(0.97, conf=0.85), ctx(4))
    assert (final.signal, final.reason) == (TERMINATE, "settled: error inside band")


def test_give_up_when_error_accumulates_with_no_trend_to_the_goal():
    pid = CognitivePID(replan_threshold=100.0, give_up_after=30.0, give_up_window=3)
    signals = run(pid, [0.3] * 8)  # e = 0.7 every 10 s: Σ e·dt = 0, 7, 14, 21, 28, 35
    assert [s for s, _ in signals[:5]] == [CONTINUE] * 5
    assert signals[5][0] is TERMINATE
    assert signals[5][1].startswith("give up")


def test_no_give_up_while_the_error_keeps_falling():
    pid = CognitivePID(replan_threshold=100.0, give_up_after=5.0, give_up_window=2)
    signals = run(pid, [0.1 * k for k in range(8)])
    assert all(s is CONTINUE for s, _ in signals)


def test_give_up_on_an_infeasible_task_is_scored_gave_up():
    task = environments.make("flight_booking", infeasible_rate=1.0)
    pid = controllers.make("pid", give_up_after=100.0, give_up_window=3)
    result = run_episode(task, SimulatedAgent(), pid, Limits(), episode_seed(0, 1))
    assert result.outcome == "gave_up"
    assert result.steps[-1].decision.reason.startswith("give up")


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"integral_on_replan": "halve"}, "integral_on_replan must be"),
        ({"hysteresis": -0.1}, "hysteresis must be >= 0"),
        ({"give_up_window": 0}, "give_up_window must be >= 1"),
        ({"integral_scale": 1.5}, "integral_scale must be in"),
    ],
)
def test_bad_map_options_are_rejected_naming_the_option(bad, message):
    with pytest.raises(ValueError, match=message):
        controllers.make("pid", **bad)


@pytest.mark.parametrize("n", [0, 1, 2, 4])
def test_min_dwell_n_holds_the_first_n_steps_of_a_plan(n):
    # plan_age counts the step just taken: 1 at a plan's first Reflect; min_dwell = n
    # keeps a plan through its first n steps, so 0 is no dwell and 1 is not a no-op
    verdicts = []
    for age in range(1, 7):
        pid = CognitivePID(1.0, 0.0, 0.0, replan_threshold=0.5, min_dwell=n, pace=0.0)
        verdicts.append(pid.decide(ev(0.2), ReflectContext(age, 10, 10, age, False, 0)).signal)
    assert verdicts == [CONTINUE] * n + [REPLAN] * (6 - n)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_confidence_min_dwell_n_holds_the_first_n_steps_of_a_plan(n):
    law = controllers.make("confidence", min_dwell=n)
    stalled = Evaluation(0.3, 0.1, 0.0, 0.3, "", ("fare",))
    verdicts = [
        law.decide(stalled, ReflectContext(a, 10, 10, a, False, 0)).signal for a in range(1, 6)
    ]
    assert verdicts == [CONTINUE] * n + [REPLAN] * (5 - n)


def test_min_dwell_below_zero_is_rejected():
    for name in ("pid", "confidence"):
        with pytest.raises(ValueError, match="min_dwell must be >= 0"):
            controllers.make(name, min_dwell=-1)


@pytest.mark.parametrize("dwell", [0, 1, 3])
def test_in_the_loop_no_plan_is_replanned_within_its_first_min_dwell_steps(dwell):
    ages = []
    for episode in range(20):
        law = controllers.make(
            "pid", kp=10.0, ki=0.0, kd=0.0, replan_threshold=1.0, min_dwell=dwell
        )
        result = run_episode(
            environments.make("flight_booking"),
            SimulatedAgent(),
            law,
            Limits(max_steps=20),
            episode_seed(5, episode),
        )
        age = 0
        for prev, rec in zip([None, *result.steps], result.steps, strict=False):
            age = 1 if prev is None or rec.plan_id != prev.plan_id else age + 1
            if rec.decision.signal is REPLAN:
                ages.append(age)
    assert min(ages) == dwell + 1  # reached: the dwell binds, and is never broken


def test_pace_drives_the_relay_by_the_plan_s_shortfall_against_the_expected_pace():
    # pace 0.2 per step, P only: lag = 0.2 · plan_age − (δ_task − δ_task at the plan's start)
    pid = CognitivePID(1.0, 0.0, 0.0, replan_threshold=0.3, pace=0.2)
    first = pid.decide(ev(0.1), ReflectContext(1, 10, 10, 1, False, 0))
    assert first.signal is CONTINUE and first.terms["lag"] == pytest.approx(0.1)
    second = pid.decide(ev(0.1), ReflectContext(2, 20, 10, 2, False, 0))
    assert second.signal is REPLAN and second.terms["lag"] == pytest.approx(0.3)
    # the new plan starts from δ_task 0.1: it gained 0.05 of the 0.2 expected
    third = pid.decide(ev(0.15), ReflectContext(3, 30, 10, 1, False, 1))
    assert third.signal is CONTINUE and third.terms["lag"] == pytest.approx(0.15)
    assert third.terms["error"] == pytest.approx(0.85)  # settling still reads the task error


def test_a_plan_on_pace_has_no_effort_however_far_the_goal_is():
    pid = CognitivePID(10.0, 0.0, 0.0, replan_threshold=0.5, pace=0.1)
    for age in range(1, 6):
        decision = pid.decide(ev(0.1 * age), ReflectContext(age, 10 * age, 10, age, False, 0))
        assert decision.signal is CONTINUE
        assert decision.terms["lag"] == 0.0 and decision.terms["effort"] == 0.0
    # without pace the same readings (error ≥ 0.5) replan at once
    plain = CognitivePID(10.0, 0.0, 0.0, replan_threshold=0.5, pace=0.0)
    assert plain.decide(ev(0.1), ReflectContext(1, 10, 10, 1, False, 0)).signal is REPLAN


def test_pace_outside_the_unit_interval_is_rejected():
    with pytest.raises(ValueError, match="pace"):
        CognitivePID(pace=1.5)
