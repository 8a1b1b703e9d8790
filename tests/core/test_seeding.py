"""Per-episode streams: trial 1 is the episode's own streams; later trials share only the task."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.random.bit_generator import ISeedSequence

import controllers
import environments
from opar_sim.agents import SimulatedAgent
from opar_sim.core.limits import Limits
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import (
    STREAMS,
    TRIAL_STREAM,
    ChildSeed,
    derived,
    episode_seed,
    streams,
)


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
# The reference is what the streams were before the Python hash: numpy's own
# SeedSequence spawned from a copy, each child seeding a PCG64.


def _numpy_streams(seq, trial=1):
    fresh = np.random.SeedSequence(seq.entropy, spawn_key=seq.spawn_key, pool_size=seq.pool_size)
    children = fresh.spawn(4)
    if trial > 1:  # the agent, tools and controller streams of a later trial
        children[1:] = [
            np.random.SeedSequence(c.entropy, spawn_key=(*c.spawn_key, TRIAL_STREAM, trial))
            for c in children[1:]
        ]
    return [np.random.Generator(np.random.PCG64(c)) for c in children]


def _numpy_generator(entropy, key, pool_size=4):
    seed = np.random.SeedSequence(entropy, spawn_key=tuple(key), pool_size=pool_size)
    return np.random.Generator(np.random.PCG64(seed))


def _mixed_draws(rng: np.random.Generator) -> list[float]:
    """Several kinds of draw, in a fixed order (each kind consumes the stream differently)."""
    return [
        *rng.random(3).tolist(),
        *rng.integers(0, 1000, size=3).tolist(),
        *rng.integers(0, 2**63, size=2).tolist(),
        *rng.standard_normal(3).tolist(),
        float(rng.beta(2.0, 3.0)),
        *rng.uniform(-1.0, 1.0, size=4).tolist(),
        float(rng.random()),
        int(rng.integers(7)),
    ]


def _named(s) -> list[np.random.Generator]:
    return [getattr(s, name) for name in STREAMS]


@settings(max_examples=150, deadline=None)
@given(
    seed=st.one_of(st.integers(0, 2**32), st.integers(0, 2**130)),
    episode=st.one_of(st.integers(0, 200), st.integers(0, 2**70)),
    trial=st.integers(1, 5),
    key=st.lists(st.integers(0, 2**40), min_size=1, max_size=2),
)
def test_every_stream_draws_exactly_what_numpy_seeded_generators_draw(seed, episode, trial, key):
    ours = _named(streams(episode_seed(seed, episode), trial))
    theirs = _numpy_streams(episode_seed(seed, episode), trial)
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.bit_generator.state == reference.bit_generator.state
        seq, ref_seq = mine.bit_generator.seed_seq, reference.bit_generator.seed_seq
        assert (seq.entropy, tuple(seq.spawn_key)) == (ref_seq.entropy, tuple(ref_seq.spawn_key))
        assert _mixed_draws(mine) == _mixed_draws(reference)
        # what reads the stream's seed gets the same children: derived streams and spawns
        assert _mixed_draws(derived(mine, *key)) == _mixed_draws(
            _numpy_generator(seed, (*ref_seq.spawn_key, *key))
        )
        spawned = mine.spawn(2) + mine.spawn(1)
        assert [_mixed_draws(g) for g in spawned] == [_mixed_draws(g) for g in reference.spawn(3)]


@settings(max_examples=150, deadline=None)
@given(
    entropy=st.integers(0, 2**200),
    key=st.lists(st.integers(0, 2**70), min_size=0, max_size=3),
    pool_size=st.sampled_from([4, 5, 8]),
)
def test_any_int_seed_splits_as_numpy_splits_it(entropy, key, pool_size):
    # a sub-agent's seed has no spawn key; long entropies overflow the pool
    seq = np.random.SeedSequence(entropy, spawn_key=tuple(key), pool_size=pool_size)
    for mine, reference in zip(_named(streams(seq)), _numpy_streams(seq), strict=True):
        assert mine.bit_generator.state == reference.bit_generator.state
        ref_seq = reference.bit_generator.seed_seq
        assert mine.bit_generator.seed_seq.pool == tuple(int(w) for w in ref_seq.pool)
        for dtype in (np.uint32, np.uint64):  # after the PCG64 took its words
            mine_words = mine.bit_generator.seed_seq.generate_state(6, dtype)
            assert mine_words.dtype == np.dtype(dtype)
            assert mine_words.tolist() == ref_seq.generate_state(6, dtype).tolist()
        assert _mixed_draws(mine) == _mixed_draws(reference)
        # derived keeps numpy's default pool size, whatever the parent's
        assert _mixed_draws(derived(mine, 3)) == _mixed_draws(
            _numpy_generator(entropy, (*ref_seq.spawn_key, 3))
        )


@settings(max_examples=200, deadline=None)
@given(
    entropy=st.integers(0, 2**130),
    key=st.lists(st.integers(0, 2**70), min_size=0, max_size=3),
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


@pytest.mark.parametrize(
    "seq",
    [
        np.random.SeedSequence([3, 2**40]),  # a list entropy
        np.random.SeedSequence(5, spawn_key=(np.int64(2),)),  # a numpy-integer key
    ],
)
def test_seeds_the_python_hash_does_not_take_are_split_by_numpy(seq):
    for mine, reference in zip(_named(streams(seq, 2)), _numpy_streams(seq, 2), strict=True):
        assert _mixed_draws(mine) == _mixed_draws(reference)


def test_a_derived_stream_is_numpys_child_of_the_longer_key():
    parent = streams(episode_seed(9, 4)).agent
    for last in (2**32 - 1, 2**32, 2**45 + 3):
        assert _mixed_draws(derived(parent, 7, last)) == _mixed_draws(
            _numpy_generator(9, (4, 1, 7, last))
        )
    with pytest.raises(ValueError, match="seeded from a SeedSequence"):
        derived(np.random.Generator(np.random.PCG64(_FixedWords())), 1)


class _FixedWords(ISeedSequence):
    """A seed sequence that is not a SeedSequence (no entropy, no spawn key)."""

    def generate_state(self, n_words, dtype=np.uint32):
        return np.ones(n_words, dtype=dtype)


@pytest.mark.parametrize("trial", [1, 2])
def test_a_stream_pickles_and_its_state_round_trips(trial):
    tools = streams(episode_seed(2, 3), trial).tools
    tools.random(3)
    copy = pickle.loads(pickle.dumps(tools))
    state = tools.bit_generator.state
    ahead = _mixed_draws(tools)
    assert _mixed_draws(copy) == ahead
    tools.bit_generator.state = state
    assert _mixed_draws(tools) == ahead
    seq, original = copy.bit_generator.seed_seq, tools.bit_generator.seed_seq
    key = (3, 2) if trial == 1 else (3, 2, TRIAL_STREAM, 2)
    assert (seq.entropy, tuple(seq.spawn_key)) == (2, key)
    assert list(seq.pool) == list(original.pool)
    assert _mixed_draws(derived(copy, 1)) == _mixed_draws(_numpy_generator(2, (*key, 1)))


def test_streams_of_one_seed_are_new_objects_every_time():
    # nothing is reused across episodes: an earlier episode's generators never move
    seq = episode_seed(1, 1)
    first, again = streams(seq), streams(seq)
    before = first.task.bit_generator.state
    again.task.random(10)
    assert first.task.bit_generator.state == before
    assert {id(g) for g in _named(first)}.isdisjoint(id(g) for g in _named(again))


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**130), episode=st.integers(0, 2**70), spawned=st.integers(0, 3))
def test_an_episode_seed_is_numpys_seed_sequence_in_everything_it_shows(seed, episode, spawned):
    ours, theirs = episode_seed(seed, episode), np.random.SeedSequence(seed, spawn_key=(episode,))
    assert isinstance(ours, np.random.SeedSequence)
    assert [c.state for c in ours.spawn(spawned)] == [c.state for c in theirs.spawn(spawned)]
    assert ours.state == theirs.state
    assert (ours.entropy, ours.spawn_key, ours.pool_size, ours.n_children_spawned) == (
        theirs.entropy,
        theirs.spawn_key,
        theirs.pool_size,
        theirs.n_children_spawned,
    )
    assert ours.pool.dtype == theirs.pool.dtype
    assert ours.pool.tolist() == theirs.pool.tolist()
    for dtype in (np.uint32, np.uint64):
        assert ours.generate_state(5, dtype).tolist() == theirs.generate_state(5, dtype).tolist()
        assert ours.generate_state(2, dtype).dtype == np.dtype(dtype)
    assert repr(ours).replace("EpisodeSeed", "SeedSequence") == repr(theirs)
    assert _mixed_draws(np.random.default_rng(ours)) == _mixed_draws(np.random.default_rng(theirs))
    for again in (pickle.loads(pickle.dumps(ours)), copy.deepcopy(ours)):
        assert type(again) is type(ours)
        assert again.state == ours.state  # the copy goes on from where ``ours`` was
        reference = np.random.SeedSequence(
            seed, spawn_key=(episode,), n_children_spawned=ours.n_children_spawned
        )
        assert [c.state for c in again.spawn(2)] == [c.state for c in reference.spawn(2)]
    with pytest.raises(TypeError):
        ours.generate_state(1, np.float32)


def test_a_child_seed_refuses_what_numpy_would_not_seed_this_way():
    with pytest.raises(ValueError, match="int entropy"):
        ChildSeed(np.random.SeedSequence([1, 2]), 0)
    with pytest.raises(TypeError):
        ChildSeed(np.random.SeedSequence(1, spawn_key=(2,)), 0).generate_state(2, np.float64)
