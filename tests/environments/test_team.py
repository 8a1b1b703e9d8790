"""Nested OPAR (Algorithm 3): an orchestrator delegating to sub-agents with their own loops."""

from __future__ import annotations

import json

import numpy as np
import pytest
import simpy

import controllers
import environments
from opar_sim.agents import SimulatedAgent
from opar_sim.agents.orchestrator import bind_sub_agents
from opar_sim.core.limits import Limits
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed
from opar_sim.core.types import Action
from opar_sim.rundir import episode_lines


def fresh_team(**params):
    task = bind_sub_agents(environments.make("team", **params))
    task.reset(simpy.Environment(), np.random.default_rng(1), np.random.default_rng(2))
    return task


def call(task, action):
    proc = task.env.process(task.execute(action))
    task.env.run(until=proc)
    return proc.value


def test_delegate_runs_a_full_sub_episode_in_the_same_clock():
    task = fresh_team(subtasks=["weather"])
    result = call(task, Action.of("delegate", subtask="weather"))
    sub = task.sub_episodes[0]
    assert result.ok and sub.agent == "sub:weather"
    assert len(sub.steps) >= 1
    assert task.env.now == pytest.approx(sub.cost.sim_seconds)  # the caller blocked on it
    assert task.done["weather"] == sub.complete


def test_delegate_all_waits_for_the_slowest_sub_agent_not_the_sum():
    task = fresh_team(subtasks=["weather", "flight_booking"])
    call(task, Action.of("delegate_all"))
    durations = [s.cost.sim_seconds for s in task.sub_episodes]
    assert len(durations) == 2
    assert task.env.now == pytest.approx(max(durations))
    assert task.env.now < sum(durations)


def test_only_truly_finished_subtasks_count_toward_progress():
    task = fresh_team(subtasks=["weather", "flight_booking"])
    task.claimed = {"weather": True, "flight_booking": True}  # both sub-agents said done
    task.done = {"weather": True, "flight_booking": False}  # but one stopped prematurely
    assert task.observe().visible_progress == pytest.approx(0.8)
    assert task.progress == pytest.approx(0.4)
    assert task.expert_action() == Action.of("delegate", subtask="flight_booking")


def test_a_team_episode_writes_sub_agents_steps_under_their_own_names():
    task = bind_sub_agents(environments.make("team"))
    result = run_episode(
        task,
        SimulatedAgent(),
        controllers.make("pid"),
        Limits(max_steps=10),
        episode_seed(0, 3),
        episode=3,
    )
    assert result.sub_episodes, "the orchestrator delegated nothing"
    episode_line, step_lines = episode_lines(result)
    rows = [json.loads(line) for line in step_lines.splitlines()]
    own = [r for r in rows if r["agent"] == "simulated"]
    subs = [r for r in rows if r["agent"] != "simulated"]
    assert len(own) == len(result.steps)
    assert {r["agent"] for r in subs} <= {"sub:weather", "sub:flight_booking"}
    assert all(r["parent"] == "simulated" and r["episode"] == 3 for r in subs)
    assert all(r["controller"] == "pid" and r["sub_controller"] == "threshold" for r in subs)
    assert rows[: len(own)] == own  # the parent's steps first, then each sub-agent's
    assert json.loads(episode_line)["sub_tokens"] == sum(s.cost.tokens for s in result.sub_episodes)


@pytest.mark.parametrize(
    ("subtasks", "message"),
    [
        (["team"], "cannot have a team"),
        (["mars"], "unknown task 'mars'"),
        (["weather"] * 2, "distinct"),
    ],
)
def test_bad_subtasks_are_rejected(subtasks, message):
    with pytest.raises(ValueError, match=message):
        bind_sub_agents(environments.make("team", subtasks=subtasks))


class _GivingUp:
    """A sub-agent runner whose sub-agents all give up (TERMINATE with give_up)."""

    def run(self, env, task, **kwargs):
        yield env.timeout(1.0)
        from types import SimpleNamespace

        return SimpleNamespace(outcome="abandoned", complete=False, answer="")


def test_a_sub_agent_that_gives_up_is_reported_not_done_and_blocks_combine():
    task = environments.make("team", subtasks=["weather"])
    task.bind_sub_agents(_GivingUp())
    task.reset(simpy.Environment(), np.random.default_rng(1), np.random.default_rng(2))
    result = call(task, Action.of("delegate", subtask="weather"))
    assert result.text == "weather: gave up ()"
    assert task.claimed == {"weather": False} and task.gave_up == {"weather": True}
    assert not call(task, Action.of("combine")).ok
