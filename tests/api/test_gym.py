"""The Reflect decision as a Gymnasium environment: check_env, and episodes equal to the loop's."""

from __future__ import annotations

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from opar_sim.core.loop import run_episode  # noqa: E402
from opar_sim.core.seeding import episode_seed  # noqa: E402
from opar_sim.gym import ACTIONS, ENV_ID, ReflectEnv  # noqa: E402
from opar_sim.spec.build import build, load_spec  # noqa: E402
from opar_sim.spec.schema import Objective  # noqa: E402
from tests.conftest import SPEC  # noqa: E402


def test_the_environment_passes_gymnasiums_check_env():
    env = ReflectEnv(SPEC)
    check_env(env, skip_render_check=True)  # raises on any breach of the API
    check_env(gymnasium.make(ENV_ID, task="research_qa").unwrapped, skip_render_check=True)


def test_a_random_policy_episode_ends_with_the_objective_as_reward():
    env = ReflectEnv(SPEC)
    env.action_space.seed(7)
    obs, info = env.reset(seed=11)
    assert env.observation_space.contains(obs) and info == {"episode": 0}
    steps, reward, done = 0, 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs)
        steps += 1
        done = terminated or truncated
        if not done:
            assert reward == 0.0
    row = info["row"]
    assert row["steps"] == steps
    assert reward == pytest.approx(-Objective().episode_score(row))
    assert reward == (0.0 if row["success"] else -1.0)  # default objective: failure only
    assert truncated == info["outcome"].startswith("truncated:")


def test_the_policys_decisions_give_the_loops_episode():
    """A fixed decision sequence through the environment equals the same decisions in the loop."""
    decisions = [0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    env = ReflectEnv(SPEC)
    env.reset(seed=4, options={"episode": 3})
    taken = []
    for action in decisions:
        taken.append(action)
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break

    class Scripted:
        name = "gym"

        def reset(self):
            self.k = 0

        def decide(self, evaluation, ctx):
            from opar_sim import Decision

            signal, give_up = ACTIONS[taken[self.k]]
            self.k += 1
            return Decision(signal, "gym policy", {}, give_up=give_up)

    spec = load_spec(SPEC)
    parts = build(spec)
    direct = run_episode(
        parts.make_task(),
        parts.make_agent(),
        Scripted(),
        parts.limits,
        episode_seed(4, 3),
        episode=3,
        supervisor=parts.make_supervisor(),
    )
    assert info["outcome"] == direct.outcome
    assert info["row"]["tokens"] == direct.cost.tokens
    assert info["row"]["replans"] == direct.cost.replans == taken.count(1)


def test_resets_walk_through_episodes_and_a_seed_restarts_them():
    env = ReflectEnv(SPEC)
    first, _ = env.reset(seed=2)
    second, info = env.reset()
    assert info["episode"] == 1
    again, info = env.reset(seed=2)
    assert info["episode"] == 0
    np.testing.assert_array_equal(first["evaluation"], again["evaluation"])
    assert not np.array_equal(first["evaluation"], second["evaluation"])
    with pytest.raises(ValueError, match="not in Discrete"):
        env.step(7)
