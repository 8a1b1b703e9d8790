"""The bang-bang relay: a Reflect law with no damping (the undamped-spring claim)."""

from __future__ import annotations

import pytest

import controllers
from controllers import check_controller
from opar_sim.core.controller import ReflectContext
from opar_sim.core.types import ControlSignal, Evaluation
from opar_sim.measure.run import analyze
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import apply_changes, with_overrides
from tests.conftest import EXPERIMENTS

EPISODES = 100
CONTINUE, REPLAN, TERMINATE = ControlSignal.CONTINUE, ControlSignal.REPLAN, ControlSignal.TERMINATE


def _reading(delta_task: float) -> Evaluation:
    return Evaluation(delta_task, 1.0, 0.0, delta_task, "critique", ("remaining goal",))


def _ctx(step: int) -> ReflectContext:
    return ReflectContext(step, float(step), 1.0, 1, False, 0)


def test_the_relay_switches_on_the_error_and_stops_only_on_completion():
    law = controllers.make("bang_bang", threshold=0.5, complete=0.9)
    readings = [0.1, 0.5, 0.6, 0.4, 0.89, 0.9]  # errors 0.9, 0.5, 0.4, 0.6, 0.11, 0.1
    signals = [law.decide(_reading(d), _ctx(i)).signal for i, d in enumerate(readings, 1)]
    assert signals == [REPLAN, CONTINUE, CONTINUE, REPLAN, CONTINUE, TERMINATE]


def test_the_delayed_relay_switches_on_the_error_read_delay_reflects_ago():
    law = controllers.make("bang_bang", threshold=0.5, delay=2)
    readings = [0.8, 0.1, 0.1, 0.8, 0.8, 0.1]
    decisions = [law.decide(_reading(d), _ctx(i)) for i, d in enumerate(readings, 1)]
    # delayed errors: 0.2 (only one reading yet), 0.2, 0.2, 0.9, 0.9, 0.2
    assert [d.terms["delayed_error"] for d in decisions] == pytest.approx(
        [0.2, 0.2, 0.2, 0.9, 0.9, 0.2]
    )
    assert [d.signal for d in decisions] == [CONTINUE, CONTINUE, CONTINUE, REPLAN, REPLAN, CONTINUE]
    law.reset()
    assert law.decide(_reading(0.8), _ctx(1)).terms["delayed_error"] == pytest.approx(0.2)


@pytest.mark.parametrize("delay", [-1, 1.5, True])
def test_a_delay_that_is_not_a_count_is_rejected(delay):
    with pytest.raises(
        ValueError, match=r"delay must be a non-negative integer|delay: expected a number, got True"
    ):
        controllers.make("bang_bang", delay=delay)


@pytest.mark.parametrize("params", [{}, {"delay": 2}, {"threshold": 0.1, "complete": 0.99}])
def test_the_relay_conforms(params):
    check_controller(lambda: controllers.make("bang_bang", **params), "bang_bang")


def test_without_damping_the_replans_thrash_but_the_estimate_does_not_swing_more(tmp_path):
    """The direction measured on seed 0 (300 episodes), here on a fresh seed, paired.

    The relay's REPLANs come in runs (thrash) and the swings its estimate makes
    decay far less (median ζ) than the PID's; but it does not swing more
    often: the oscillating share and the trend's sign changes are no higher.
    """
    spec = with_overrides(load_spec(EXPERIMENTS / "flight_booking.toml"), episodes=EPISODES, seed=7)
    pid = spec.controller.model_dump()
    # the relay at the claims' demonstration setting (REPLAN whenever e > 0.5), not its fitted
    # default (0.95, which hardly ever replans)
    relay_params = {"threshold": 0.5, "complete": 0.9}
    spec = apply_changes(
        spec, {"compare": [pid, {"name": "bang_bang", "params": relay_params}]}, "test"
    )
    run_experiment(spec, tmp_path / "run")
    metrics = analyze(tmp_path / "run", keep=0).controllers
    relay, damped = metrics["bang_bang"], metrics["pid"]
    print(
        {
            n: (m.thrash_share, m.damping_ratio, m.oscillating_share, m.sign_changes)
            for n, m in metrics.items()
        }
    )
    assert relay.thrash_share > damped.thrash_share + 0.2
    assert relay.damping_ratio < damped.damping_ratio / 2
    assert relay.oscillating_share <= damped.oscillating_share
    assert relay.sign_changes < damped.sign_changes
