"""Controllers: Algorithm 2 and the PID's effort → signal map, through the registry."""

from __future__ import annotations

import pytest

import controllers
from controllers import ReflectContext
from opar_sim import ControlSignal, Evaluation


def ctx(step: int = 1, dt: float = 5.0, plan_age: int = 1) -> ReflectContext:
    return ReflectContext(step, step * dt, dt, plan_age, False, 0)


def ev(task: float, act: float = 1.0, plan: float = 0.0, conf: float = 0.5) -> Evaluation:
    return Evaluation(task, act, plan, conf)


@pytest.mark.parametrize(
    ("evaluation", "signal"),
    [
        (ev(0.95), ControlSignal.TERMINATE),
        (ev(0.9, act=0.0, plan=1.0), ControlSignal.TERMINATE),  # completion is checked first
        (ev(0.5, plan=0.7), ControlSignal.REPLAN),
        (ev(0.5, act=0.2), ControlSignal.REPLAN),
        (ev(0.5, act=0.3, plan=0.6), ControlSignal.CONTINUE),  # both thresholds are strict
    ],
)
def test_threshold_is_algorithm_2(evaluation, signal):
    # Algorithm 2's thresholds as the OPAR document gives them (the defaults are re-fitted)
    law = controllers.make(
        "threshold", threshold_complete=0.9, threshold_drift=0.6, threshold_valid=0.3
    )
    decision = law.decide(evaluation, ctx())
    assert decision.signal is signal
    assert decision.terms["delta_task"] == evaluation.delta_task


def test_pid_replans_when_the_error_grows():
    pid = controllers.make("pid", kp=1.0, ki=0.0, kd=5.0, replan_threshold=0.85, pace=0.0)
    assert pid.decide(ev(0.5), ctx(1)).signal is ControlSignal.CONTINUE
    decision = pid.decide(ev(0.3), ctx(2))  # e: 0.5 → 0.7, D = 5 * 0.2 / 5 = 0.2
    assert decision.signal is ControlSignal.REPLAN
    assert decision.terms["effort"] == pytest.approx(0.7 + 0.2)


def test_pid_terminates_after_settling_for_k_reflects():
    pid = controllers.make("pid", settle_band=0.1, settle_count=2)
    assert pid.decide(ev(0.95), ctx(1)).signal is not ControlSignal.TERMINATE
    assert pid.decide(ev(0.96), ctx(2)).signal is ControlSignal.TERMINATE


def test_pid_respects_the_minimum_dwell():
    pid = controllers.make(
        "pid", kp=10.0, ki=0.0, kd=0.0, replan_threshold=1.0, min_dwell=2, pace=0.0
    )
    assert pid.decide(ev(0.2), ctx(2, plan_age=2)).signal is ControlSignal.CONTINUE
    assert pid.decide(ev(0.2), ctx(3, plan_age=3)).signal is ControlSignal.REPLAN


def test_registry_names_and_errors():
    assert {"pid", "threshold"} <= set(controllers.names())
    with pytest.raises(ValueError, match="unknown controller 'nope'"):
        controllers.make("nope")
    with pytest.raises(ValueError, match="unexpected keyword argument 'kq'"):
        controllers.make("pid", kq=1.0)
    with pytest.raises(ValueError, match="kp must be >= 0"):
        controllers.make("pid", kp=-1.0)
