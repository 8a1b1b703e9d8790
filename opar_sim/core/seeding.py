"""Per-episode randomness: one SeedSequence per episode, split into named streams.

Episode ``i`` of a run with seed ``s`` always gets the same streams, whatever the
controller, executor or worker count, so controllers are compared on common
random numbers and reruns are byte-identical.

A spec with ``trials`` > 1 runs each episode (a world) several times:
``streams(seq, trial)`` keeps the ``task`` stream of every trial (the same
world) and derives fresh ``agent``, ``tools`` and ``controller`` streams for
each trial after the first; trial 1 gets exactly the streams of ``streams(seq)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from opar_sim.core.seedhash import ChildSeed, EpisodeSeed, children, int_key

__all__ = ["STREAMS", "TRIAL_STREAM", "ChildSeed", "Streams", "derived", "episode_seed", "streams"]

STREAMS = ("task", "agent", "tools", "controller")
TRIAL_STREAM = 0x54  # the key tag of a repeated trial's agent, tools and controller streams ("T")


@dataclass(frozen=True, slots=True)
class Streams:
    """Independent generators for the parts of one episode."""

    task: np.random.Generator
    agent: np.random.Generator
    tools: np.random.Generator
    controller: np.random.Generator


def episode_seed(seed: int, episode: int) -> np.random.SeedSequence:
    """The SeedSequence of episode ``episode`` in a run seeded with ``seed``.

    Args:
        seed: The run seed (non-negative).
        episode: The episode number (non-negative), used as the spawn key.

    Returns:
        ``SeedSequence(seed, spawn_key=(episode,))``: the same for the same pair, whatever
        else the run does (an ``EpisodeSeed``, which hashes only when asked to).

    Raises:
        ValueError: If ``seed`` or ``episode`` is negative.
    """
    if seed < 0 or episode < 0:
        raise ValueError("seed and episode must be non-negative")
    return EpisodeSeed(seed, episode)


def streams(seq: np.random.SeedSequence, trial: int = 1) -> Streams:
    """Split an episode's SeedSequence into the named generators, in a fixed order.

    The streams are a pure function of ``seq``'s entropy and spawn key: ``seq``
    itself is not advanced (its children are spawned from a copy), so the same
    SeedSequence gives the same streams however often it is split — Reflexion's
    attempts at one seeded task see the same world.

    Args:
        seq: The episode's SeedSequence.
        trial: Which repeated trial of the episode's world this is (1 = the first).
            Every trial gets the same ``task`` stream; a trial after the first
            gets ``agent``, ``tools`` and ``controller`` streams derived from the
            first trial's with the key (``TRIAL_STREAM``, ``trial``).

    Returns:
        PCG64 generators for the task, agent, tools and controller, in that order.

    Raises:
        ValueError: If ``trial`` < 1.
    """
    if trial < 1:
        raise ValueError(f"trial must be >= 1, got {trial}")
    # the children of ``seq.spawn(4)`` from a fresh copy, i.e. spawn keys (*key, 0..3)
    entropy = seq.entropy
    if isinstance(entropy, int) and int_key(seq.spawn_key):
        # computed in Python (see ``children``): the same generators at half the cost
        task, *rest = children(entropy, tuple(seq.spawn_key), seq.pool_size, len(STREAMS))
    else:  # a list entropy or a numpy-integer key: numpy spawns, from a copy
        fresh = np.random.SeedSequence(
            seq.entropy, spawn_key=seq.spawn_key, pool_size=seq.pool_size
        )
        task, *rest = [np.random.Generator(np.random.PCG64(c)) for c in fresh.spawn(len(STREAMS))]
    if trial > 1:
        rest = [derived(g, TRIAL_STREAM, trial) for g in rest]
    return Streams(task, *rest)


def derived(rng: np.random.Generator, *key: int) -> np.random.Generator:
    """A child generator keyed by ``key``, derived from ``rng``'s seed without drawing from it.

    Wrappers and repeated attempts take their own stream this way: the parent
    stream's draws are untouched, so adding a wrapper never shifts the random
    numbers of the task beneath it, and the same seed and key give the same child.

    Args:
        rng: A generator seeded from a SeedSequence (as ``streams`` makes them).
        *key: Integers appended to the parent's spawn key.

    Returns:
        A PCG64 generator independent of ``rng``'s stream, seeded as
        ``SeedSequence(entropy, spawn_key=(*parent_key, *key))`` (pool size 4).

    Raises:
        ValueError: If ``rng`` was not seeded from a SeedSequence.
    """
    seq = rng.bit_generator.seed_seq
    if not isinstance(seq, np.random.SeedSequence | ChildSeed):
        raise ValueError("derived() needs a generator seeded from a SeedSequence")
    # numpy's own hash here: for one child with a longer key it is as cheap as ours
    child = np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, *key))
    return np.random.Generator(np.random.PCG64(child))
