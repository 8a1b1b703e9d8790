"""Task heterogeneity of the simulated agent: a per-world shift of plan quality (issue 13)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import simpy

import environments
from opar_sim.agents.simulated import SimulatedAgent, SimulatedAgentParams, shifted
from opar_sim.core.seeding import episode_seed, streams
from opar_sim.core.types import Cost


def _shift(agent: SimulatedAgent, task, world: int, trial: int = 1) -> float:
    rngs = streams(episode_seed(0, world), trial)
    task.reset(simpy.Environment(), rngs.task, rngs.tools)
    agent.reset(task, rngs.agent, Cost())
    return agent._shift


def test_off_by_default():
    assert not SimulatedAgentParams().heterogeneous
    agent, task = SimulatedAgent(), environments.make("tool_chain")
    assert _shift(agent, task, 3) == 0.0


def test_every_trial_of_a_world_shares_its_shift_and_worlds_differ():
    agent = SimulatedAgent(task_effect_sd=1.0)
    task = environments.make("tool_chain")
    for world in range(5):
        shifts = {_shift(agent, task, world, trial) for trial in (1, 2, 3, 4)}
        assert len(shifts) == 1
    assert len({_shift(agent, task, w) for w in range(20)}) == 20


def test_the_mean_follows_the_feature_exactly_without_spread():
    agent = SimulatedAgent(task_effect_mean=0.5, task_effect_slope=-0.75)
    task = environments.make("tool_chain", write_weights=[1, 1, 1, 1])
    for world in range(12):
        shift = _shift(agent, task, world)
        assert shift == pytest.approx(0.5 - 0.75 * task.features["write_actions"])


def test_the_spread_is_a_standard_normal_scaled():
    agent = SimulatedAgent(task_effect_mean=0.5, task_effect_sd=1.5)
    task = environments.make("tool_chain")
    shifts = np.array([_shift(agent, task, w) for w in range(3000)])
    # standard errors 1.5/√3000 ≈ 0.027 for the mean, ≈ 0.019 for the sd
    assert shifts.mean() == pytest.approx(0.5, abs=0.1)
    assert shifts.std() == pytest.approx(1.5, abs=0.08)


def test_shifted_moves_the_logit():
    assert shifted(0.5, math.log(3.0)) == pytest.approx(0.75)
    assert shifted(0.2, 0.0) == pytest.approx(0.2)
    assert shifted(0.9, -math.log(9.0)) == pytest.approx(0.5)


def test_a_harder_world_plans_worse():
    """Plan quality is the Beta draw moved by the world's shift: same draws, lower quality."""
    task = environments.make("tool_chain")
    qualities = {}
    for mean in (-2.0, 2.0):
        agent = SimulatedAgent(task_effect_mean=mean)
        rngs = streams(episode_seed(0, 7))
        task.reset(simpy.Environment(), rngs.task, rngs.tools)
        agent.reset(task, rngs.agent, Cost())
        env = simpy.Environment()
        proc = env.process(agent.plan(env, 1, True, ""))
        env.run()
        qualities[mean] = proc.value.quality
    assert qualities[-2.0] < 0.5 < qualities[2.0]


def test_tool_chain_records_its_features_and_a_wrong_write_is_fatal():
    from opar_sim.core.types import Action

    task = environments.make("tool_chain", write_weights=[0, 0, 1], reads=2, reads_per_write=1)
    rngs = streams(episode_seed(0, 0))
    task.reset(simpy.Environment(), rngs.task, rngs.tools)
    assert task.features == {"write_actions": 2, "actions": 6}
    assert task.feasible
    task._apply(Action.of("write", key="wrong 0"))
    assert not task.feasible and not task.complete
    assert task.observe().visible_progress == pytest.approx(1 / 6)  # it looks like a step done


def test_tool_chain_stretched_to_a_recorded_action_count():
    """``actions``: leading lookups make up what the writes lack of it; reads come on top."""
    rngs = streams(episode_seed(0, 0))
    # 2 writes of 1 lookup + 1 write each: 4 actions; stretched to 9, plus 2 reads on top
    task = environments.make(
        "tool_chain", write_weights=[0, 0, 1], reads=2, reads_per_write=1, actions=9
    )
    task.reset(simpy.Environment(), rngs.task, rngs.tools)
    assert task.features == {"write_actions": 2, "actions": 2 + 5 + 4}
    # a count the writes already exceed adds nothing
    short = environments.make(
        "tool_chain", write_weights=[0, 0, 1], reads=2, reads_per_write=1, actions=3
    )
    short.reset(simpy.Environment(), rngs.task, rngs.tools)
    assert short.features == {"write_actions": 2, "actions": 6}


def test_tool_chain_stretching_draws_nothing_more():
    """``actions`` = 0 adds no lookup and no draw: the worlds are those without it."""
    plain = environments.make("tool_chain", reads=0, reads_max=3)
    unset = environments.make("tool_chain", reads=0, reads_max=3, actions=0)
    for i in range(20):
        for task in (plain, unset):
            rngs = streams(episode_seed(5, i))
            task.reset(simpy.Environment(), rngs.task, rngs.tools)
        assert plain.features == unset.features
