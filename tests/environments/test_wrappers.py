"""Wrappers: each composes with every task under the conformance check, stacks, and is seeded."""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import controllers
import environments
from environments import check_task, wrap, wrapper_names
from environments.wrappers import TaskWrapper
from opar_sim.agents import SimulatedAgent
from opar_sim.agents.orchestrator import bind_sub_agents
from opar_sim.core.limits import Limits
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed, streams
from opar_sim.core.types import Action
from opar_sim.spec.build import parse_spec
from opar_sim.spec.schema import SpecError

TASKS = environments.names()
WRAPPERS = wrapper_names()


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_every_wrapper_composes_with_every_task(task, wrapper):
    check_task(lambda: bind_sub_agents(wrap(environments.make(task), [{"name": wrapper}])))


@pytest.mark.parametrize("task", TASKS)
def test_the_whole_stack_conforms(task):
    check_task(
        lambda: bind_sub_agents(wrap(environments.make(task), [{"name": w} for w in WRAPPERS]))
    )


def trajectory(task_name, stack, seed):
    task = bind_sub_agents(wrap(environments.make(task_name), stack))
    result = run_episode(
        task, SimulatedAgent(), controllers.make("pid"), Limits(max_steps=12), episode_seed(seed, 0)
    )
    return [(r.action, r.result, r.evaluation, r.observation, r.time) for r in result.steps]


stacks = st.lists(st.sampled_from(WRAPPERS), max_size=4).map(lambda ws: [{"name": w} for w in ws])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stack=stacks, task=st.sampled_from(TASKS), seed=st.integers(0, 2**20))
def test_same_seed_same_trajectory_with_any_stack(stack, task, seed):
    assert trajectory(task, stack, seed) == trajectory(task, stack, seed)


def test_a_wrapper_never_draws_from_the_streams_of_the_task_beneath():
    plain = trajectory("flight_booking", [], 5)
    silent = trajectory("flight_booking", [{"name": "noise", "sigma": 0.0}], 5)
    assert plain == silent


def started(task, seed=0):
    env = simpy.Environment()
    s = streams(episode_seed(seed, 0))
    task.reset(env, s.task, s.tools)
    return env


def call(task, env, action):
    proc = env.process(task.execute(action))
    env.run(until=proc)
    return proc.value


QUIET_PLANT = {"noise": 0.0, "disturbance": 0.0, "tools": {"failure_rate": 0.0}}


def test_delay_shows_the_world_k_calls_late():
    task = wrap(environments.make("plant", **QUIET_PLANT), [{"name": "delay", "steps": 2}])
    env = started(task)
    seen, truth = [], []
    for _ in range(6):
        call(task, env, Action.of("actuate", u=2.0))
        seen.append(task.observe().text)
        truth.append(task.unwrapped.observe().text)
    assert seen[2:] == truth[:-2]


def test_heavy_tail_latency_never_waits_past_the_timeout():
    task = wrap(environments.make("weather"), [{"name": "latency", "scale": 1.0, "shape": 1.0}])
    env = started(task)
    results = [call(task, env, Action.of("get_weather", city="Rome")) for _ in range(40)]
    assert max(r.latency for r in results) <= 0.5 + 1e-9
    assert any(r.error == "timeout" for r in results)


def test_parallel_calls_end_with_the_slowest_call_each_under_its_timeout():
    task = wrap(environments.make("research_qa"), [{"name": "parallel", "calls": 3}])
    env = started(task)
    before = env.now
    result = call(task, env, Action.of("search", query="pacer"))
    batch = task.last_batch
    assert 2 <= len(batch) <= 3 and batch[0][0] == Action.of("search", query="pacer")
    assert all(r.latency <= 0.5 + 1e-9 for _, r in batch)
    assert result.latency == pytest.approx(env.now - before)
    assert result.latency == pytest.approx(max(r.latency for _, r in batch))


def test_failures_at_rate_one_never_reach_the_tool():
    task = wrap(environments.make("weather"), [{"name": "failures", "rate": 1.0}])
    env = started(task)
    result = call(task, env, Action.of("get_weather", city="Paris"))
    assert result.error == "failure" and task.unwrapped.budget == 5


def test_dropped_results_still_take_effect():
    task = wrap(environments.make("weather"), [{"name": "drop", "drop_rate": 1.0}])
    env = started(task)
    result = call(task, env, Action.of("get_weather", city="Paris"))
    assert result.error == "dropped" and result.text == ""
    assert task.unwrapped.budget == 4


def test_disturbances_change_the_world_in_simulated_time():
    task = wrap(environments.make("research_qa"), [{"name": "disturbance", "rate": 1.0}])
    env = started(task)
    env.run(until=200.0)
    inner = task.unwrapped
    assert task.changes > 0 and any(d.vanished for d in inner.docs)
    assert inner.feasible


def test_stack_lists_wrappers_from_the_outside_in():
    task = wrap(environments.make("plant"), [{"name": "delay"}, {"name": "noise"}])
    assert isinstance(task, TaskWrapper) and isinstance(task, environments.Task)
    assert task.stack == ["noise", "delay"] and task.name == "plant"


def spec_with(wrappers):
    return {"name": "w", "task": {"name": "weather", "wrappers": wrappers}}


def test_spec_applies_wrappers_and_names_bad_keys():
    parse_spec(spec_with([{"name": "delay", "steps": 2}, {"name": "latency"}]))
    with pytest.raises(SpecError, match=r"wrappers\[1\]\.stepz: unknown key"):
        parse_spec(spec_with([{"name": "noise"}, {"name": "delay", "stepz": 2}]))
    with pytest.raises(SpecError, match=r"wrappers\[0\]\.name: unknown wrapper 'fog'"):
        parse_spec(spec_with([{"name": "fog"}]))
    with pytest.raises(SpecError, match=r"wrappers\[0\]\.rate"):
        parse_spec(spec_with([{"name": "failures", "rate": 2.0}]))


def test_wrapper_streams_differ_by_depth():
    env = simpy.Environment()
    s = streams(episode_seed(0, 0))
    task = wrap(environments.make("weather"), [{"name": "noise"}, {"name": "noise"}])
    task.reset(env, s.task, s.tools)
    inner = task.task
    assert isinstance(inner, TaskWrapper)
    assert not np.array_equal(task.rng.random(4), inner.rng.random(4))
