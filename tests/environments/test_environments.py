"""Every registered task passes the conformance check; the registry reports bad input."""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

import environments
from environments.checker import TaskCheckError, check_task
from opar_sim.agents.orchestrator import bind_sub_agents
from opar_sim.core.types import Action


@pytest.mark.parametrize("name", environments.names())
def test_every_registered_task_conforms(name):
    # a task that delegates (team) is given its orchestrator, as experiment.build does
    check_task(lambda: bind_sub_agents(environments.make(name)))


def test_checker_catches_a_nondeterministic_task():
    class Leaky(environments.Weather):
        calls = 0

        def _apply(self, action):
            Leaky.calls += 1  # state that survives reset: rollouts differ
            result = super()._apply(action)
            return type(result)(result.ok, f"{result.text} #{Leaky.calls}", 0.0)

    with pytest.raises(TaskCheckError, match="same seed"):
        check_task(Leaky)


def test_unknown_task_and_bad_parameter():
    with pytest.raises(ValueError, match="unknown task 'mars'"):
        environments.make("mars")
    with pytest.raises(ValueError, match="max_price"):
        environments.make("flight_booking", max_price=-5)
    with pytest.raises(ValueError, match="colour"):
        environments.make("weather", colour="red")


def run_tool(task, action):
    env = task.env
    proc = env.process(task.execute(action))
    env.run(until=proc)
    return proc.value


def fresh(name="flight_booking", seed=0, **params):
    task = environments.make(name, **params)
    task.reset(simpy.Environment(), np.random.default_rng(seed), np.random.default_rng(seed))
    return task


def test_empty_search_must_be_widened():
    quiet = {"empty_rate": 1.0, "tools": {"failure_rate": 0.0, "latency_sigma": 0.0}}
    task = fresh(**quiet)
    assert "no flights" in run_tool(task, Action.of("search_flights", range="next_week")).text
    assert task.expert_action() == Action.of("search_flights", range="widened")
    assert run_tool(task, Action.of("search_flights", range="widened")).text.startswith("page 1")
    assert task.progress >= 0.2


def test_booking_a_flight_that_breaks_a_constraint_costs_progress():
    quiet = {"empty_rate": 0.0, "fare_change_rate": 0.0, "tools": {"failure_rate": 0.0}}
    task = fresh(**quiet, n_flights=4, page_size=4)
    run_tool(task, Action.of("search_flights", range="next_week"))
    before = task.progress
    bad = next(f for f in task.flights if not task._valid(f))
    run_tool(task, Action.of("book_flight", flight_id=bad.flight_id, payment="cash"))
    assert task.progress == pytest.approx(max(0.0, before - 0.2))
    assert task.expert_action() == Action.of("cancel_booking")


def test_invalid_arguments_are_never_executed():
    task = fresh()
    result = run_tool(task, Action.of("book_flight", flight_id=-1, payment="cash"))
    assert result.error == "invalid_action" and task.booking is None
    assert run_tool(task, Action.of("teleport")).error == "invalid_action"


def test_weather_expert_solves_the_toy_in_two_steps():
    task = fresh("weather", tools={"failure_rate": 0.0})
    run_tool(task, task.expert_action())
    assert task.progress == 0.5
    run_tool(task, task.expert_action())
    assert task.complete and task.progress == 1.0


@settings(max_examples=500, deadline=None)
@given(st.floats(0.0, 1e9, allow_nan=False) | st.integers(0, 10**6).map(lambda k: k + 0.5))
def test_flight_booking_whole_is_round_to_zero_digits(price: float) -> None:
    """``_whole`` is ``round(x, 0)`` bit for bit (ties to even included) on fares."""
    from environments.flight_booking import _whole

    assert repr(_whole(price)) == repr(round(price, 0))
