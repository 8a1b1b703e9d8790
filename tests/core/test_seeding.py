"""Per-episode streams: trial 1 is the episode's own streams; later trials share only the task."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import controllers
import environments
from opar_sim.agents import SimulatedAgent
from opar_sim.core.limits import Limits
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import ChildSeed, derived, episode_seed, streams


def _draws(seed: int, episode: int, trial: int | None) -> dict[str, list[float]]:
    seq = episode_seed(seed, episode)
    s = streams(seq) if trial is None else streams(seq, trial)
    return {name: getattr(s, name).random(5).tolist() for name in s.__slots__}


def test_trial_1_is_exactly_the_streams_of_an_episode_without_trials():
    assert _draws(3, 7, 1) == _draws(3, 7, None)


def test_every_trial_shares_the_task_stream_and_gets_fresh_others():
    trials = [_draws(3, 7, t) for t in range(1, 5)]
    assert all(d["task"] == trials[0]["task"] for d in trials)
    for name in ("agent", "tools", "controller"):
        assert len({tuple(d[name]) for d in trials}) == 4  # four different streams
    assert _draws(3, 8, 1)["task"] != trials[0]["task"]  # another episode, another world


def test_trials_of_one_world_see_the_same_flights_but_act_differently():
    def once(trial: int) -> tuple[list[tuple[float, int]], list[str | None]]:
        task = environments.make("flight_booking", fare_change_rate=0.0)
        limits = Limits()
        result = run_episode(
            task,
            SimulatedAgent(),
            controllers.make("pid"),
            limits,
            episode_seed(11, 4),
            trial=trial,
        )
        world = [(f.price, f.hour) for f in task.flights]
        return world, [r.action.label() if r.action else None for r in result.steps]

    runs = [once(t) for t in range(1, 5)]
    assert all(world == runs[0][0] for world, _ in runs)
    assert len({tuple(actions) for _, actions in runs}) > 1


def test_a_trial_below_1_is_refused():
    with pytest.raises(ValueError, match="trial must be >= 1"):
        streams(episode_seed(0, 0), 0)


# -- the cheap seeding is numpy's SeedSequence, bit for bit --------------------------


def _numpy_streams(seq):
    fresh = np.random.SeedSequence(seq.entropy, spawn_key=seq.spawn_key, pool_size=seq.pool_size)
    return [np.random.Generator(np.random.PCG64(c)) for c in fresh.spawn(4)]


@settings(max_examples=200, deadline=None)
@given(
    entropy=st.integers(0, 2**130),
    key=st.lists(st.integers(0, 2**70), min_size=1, max_size=3),
    index=st.integers(0, 2**40),
    pool_size=st.sampled_from([4, 5, 8]),
)
def test_a_child_seed_is_numpys_seed_sequence_bit_for_bit(entropy, key, index, pool_size):
    parent = np.random.SeedSequence(entropy, spawn_key=tuple(key), pool_size=pool_size)
    reference = np.random.SeedSequence(entropy, spawn_key=(*key, index), pool_size=pool_size)
    child = ChildSeed(parent, index)
    assert child.pool == tuple(int(w) for w in reference.pool)
    for dtype in (np.uint32, np.uint64):
        mine, theirs = child.generate_state(5, dtype), reference.generate_state(5, dtype)
        assert mine.tolist() == theirs.tolist()
        assert child.generate_state(3, dtype).dtype == np.dtype(dtype)
    spawned = [s.generate_state(2).tolist() for s in child.spawn(2) + child.spawn(1)]
    assert spawned == [s.generate_state(2).tolist() for s in reference.spawn(3)]


@pytest.mark.parametrize(("seed", "episode"), [(0, 0), (0, 17), (12345, 3), (2**40, 2**33)])
def test_streams_draw_what_numpy_seeded_generators_draw(seed, episode):
    seq = episode_seed(seed, episode)
    # a seed without a spawn key (a sub-agent's) is split by numpy itself: the same draws
    plain = np.random.SeedSequence(seed + episode)
    split = streams(plain)
    generators = (split.task, split.agent, split.tools, split.controller)
    for mine, theirs in zip(generators, _numpy_streams(plain), strict=True):
        assert mine.random(3).tolist() == theirs.random(3).tolist()
    ours = streams(seq)
    for mine, theirs in zip(
        (ours.task, ours.agent, ours.tools, ours.controller), _numpy_streams(seq), strict=True
    ):
        assert mine.bit_generator.state == theirs.bit_generator.state
        assert mine.random(5).tolist() == theirs.random(5).tolist()
    # what reads the seed of a stream sees the episode's child: derived streams and spawns
    reference = np.random.SeedSequence(seed, spawn_key=(episode, 1))
    expected = np.random.Generator(
        np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(episode, 1, 7)))
    )
    assert derived(ours.agent, 7).random(3).tolist() == expected.random(3).tolist()
    spawned = ours.controller.spawn(1)[0]
    grandchild = np.random.SeedSequence(seed, spawn_key=(episode, 3, 0))
    assert (
        spawned.random(3).tolist()
        == np.random.Generator(np.random.PCG64(grandchild)).random(3).tolist()
    )
    assert reference.entropy == ours.agent.bit_generator.seed_seq.entropy


def test_a_child_seed_refuses_what_numpy_would_not_seed_this_way():
    with pytest.raises(ValueError, match="spawn key"):
        ChildSeed(np.random.SeedSequence(1), 0)
    with pytest.raises(TypeError):
        ChildSeed(np.random.SeedSequence(1, spawn_key=(2,)), 0).generate_state(2, np.float64)
