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

import functools
from dataclasses import dataclass

import numpy as np
from numpy.random.bit_generator import ISpawnableSeedSequence

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
        The same SeedSequence for the same pair, whatever else the run does.

    Raises:
        ValueError: If ``seed`` or ``episode`` is negative.
    """
    if seed < 0 or episode < 0:
        raise ValueError("seed and episode must be non-negative")
    return np.random.SeedSequence(seed, spawn_key=(episode,))


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
    # the children of ``seq.spawn(4)`` from a fresh copy, i.e. spawn keys (*key, 0..3),
    # computed in Python (see ``ChildSeed``): the same generators, a tenth of the cost
    if isinstance(seq.entropy, int) and seq.spawn_key:
        prefix = _absorb(seq.entropy, tuple(seq.spawn_key), seq.pool_size)
        seeds: list[ChildSeed | np.random.SeedSequence] = [
            ChildSeed(seq, k, prefix) for k in range(len(STREAMS))
        ]
    else:  # no spawn key (a sub-agent's seed): numpy spawns, from a copy
        fresh = np.random.SeedSequence(
            seq.entropy, spawn_key=seq.spawn_key, pool_size=seq.pool_size
        )
        seeds = list(fresh.spawn(len(STREAMS)))
    # PCG64 takes any ISeedSequence (its stub lists only the concrete seeds)
    task, *rest = [np.random.Generator(np.random.PCG64(c)) for c in seeds]  # type: ignore[arg-type]
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
        A PCG64 generator independent of ``rng``'s stream.

    Raises:
        ValueError: If ``rng`` was not seeded from a SeedSequence.
    """
    seq = rng.bit_generator.seed_seq
    if not isinstance(seq, np.random.SeedSequence | ChildSeed):
        raise ValueError("derived() needs a generator seeded from a SeedSequence")
    child = np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, *key))
    return np.random.Generator(np.random.PCG64(child))


# -- SeedSequence's hash in Python ------------------------------------------------
# numpy's SeedSequence costs about 25 µs to build and its PCG64 another 25: with the
# four streams that was 200 µs an episode (~20 µs a loop step).  ``ChildSeed`` computes
# the same pool and ``generate_state`` words with the same uint32 arithmetic (numpy's
# bit_generator.pyx), sharing the hashing of the parent's entropy and spawn key between
# the four children; PCG64 seeds itself from those words as from a SeedSequence, so
# the streams are bit-identical (tests/core/test_seeding.py checks it against numpy).
_MASK32 = 0xFFFFFFFF
_INIT_A = 0x43B0D7E5
_MULT_A = 0x931E8875
_INIT_B = 0x8B51F9DD
_MULT_B = 0x58F38DED
_MIX_MULT_L = 0xCA01F9DD
_MIX_MULT_R = 0x4973F715
_XSHIFT = 16


def _words(value: int) -> list[int]:
    """An integer as little-endian uint32 words (0 is one word), as numpy coerces it."""
    if value < 0:
        raise ValueError("seed entropy and spawn keys must be non-negative")
    if value == 0:
        return [0]
    out = []
    while value:
        out.append(value & _MASK32)
        value >>= 32
    return out


_Mixed = tuple[tuple[int, ...], int]  # the entropy pool so far and the hash constant


def _absorb(entropy: object, spawn_key: tuple[int, ...], pool_size: int) -> _Mixed:
    """SeedSequence.mix_entropy over ``entropy`` and ``spawn_key`` (more words may follow).

    Only for a non-empty ``spawn_key`` (the run entropy is then padded to the pool size,
    so the pool is initialised and cross-mixed before any spawn-key word).
    """
    if not isinstance(entropy, int) or not spawn_key:
        raise ValueError("ChildSeed needs an int entropy and a spawn key")
    mixed, rest = _run_pool(entropy, pool_size)
    return _more(mixed, [*rest, *(w for k in spawn_key for w in _words(k))])


@functools.lru_cache(maxsize=64)
def _run_pool(entropy: int, pool_size: int) -> tuple[_Mixed, tuple[int, ...]]:
    """The pool initialised and cross-mixed from a run entropy (the same for every episode)."""
    run = _words(entropy)
    run += [0] * (pool_size - len(run))
    h = _INIT_A
    mixer = []
    for i in range(pool_size):
        v = run[i] ^ h
        h = (h * _MULT_A) & _MASK32
        v = (v * h) & _MASK32
        mixer.append(v ^ (v >> _XSHIFT))
    for src in range(pool_size):
        for dst in range(pool_size):
            if src != dst:
                v = mixer[src] ^ h
                h = (h * _MULT_A) & _MASK32
                v = (v * h) & _MASK32
                v ^= v >> _XSHIFT
                r = (_MIX_MULT_L * mixer[dst] - _MIX_MULT_R * v) & _MASK32
                mixer[dst] = r ^ (r >> _XSHIFT)
    return (tuple(mixer), h), tuple(run[pool_size:])


def _more(mixed: _Mixed, words: list[int]) -> _Mixed:
    """Mix further entropy words into a pool (the last loop of mix_entropy)."""
    pool, h = mixed
    mixer = list(pool)
    n = len(mixer)
    for word in words:
        for dst in range(n):
            v = word ^ h
            h = (h * _MULT_A) & _MASK32
            v = (v * h) & _MASK32
            v ^= v >> _XSHIFT
            r = (_MIX_MULT_L * mixer[dst] - _MIX_MULT_R * v) & _MASK32
            mixer[dst] = r ^ (r >> _XSHIFT)
    return tuple(mixer), h


@functools.lru_cache(maxsize=8)
def _state_constants(count: int) -> tuple[tuple[int, int], ...]:
    """generate_state's hash constant before and after each word's multiply (data-free)."""
    out = []
    h = _INIT_B
    for _ in range(count):
        after = (h * _MULT_B) & _MASK32
        out.append((h, after))
        h = after
    return tuple(out)


class ChildSeed(ISpawnableSeedSequence):
    """``SeedSequence(parent.entropy, spawn_key=(*parent.spawn_key, index))``, computed cheaply.

    It seeds a PCG64 exactly as that SeedSequence would, spawns real SeedSequences
    (``Generator.spawn`` works as before) and carries ``entropy``, ``spawn_key`` and
    ``pool_size`` for ``derived``.

    Args:
        parent: The episode's SeedSequence (an int entropy and a non-empty spawn key).
        index: The child's index, appended to the parent's spawn key.
        prefix: ``_absorb`` of the parent (shared by its children), or None to compute it.
    """

    __slots__ = ("entropy", "n_children_spawned", "pool", "pool_size", "spawn_key")

    def __init__(
        self, parent: np.random.SeedSequence, index: int, prefix: _Mixed | None = None
    ) -> None:
        self.entropy = parent.entropy
        self.pool_size = parent.pool_size
        self.spawn_key = (*parent.spawn_key, index)
        self.n_children_spawned = 0
        if prefix is None:
            prefix = _absorb(self.entropy, tuple(parent.spawn_key), self.pool_size)
        self.pool = _more(prefix, _words(index))[0]

    def generate_state(  # type: ignore[override]  # numpy's stub spells the dtypes out
        self, n_words: int, dtype: type = np.uint32
    ) -> np.ndarray:
        """The words SeedSequence.generate_state returns for this pool.

        Args:
            n_words: How many words of ``dtype``.
            dtype: ``np.uint32`` or ``np.uint64``.

        Returns:
            The state words, as numpy computes them.
        """
        wide = dtype is np.uint64 or np.dtype(dtype) == np.uint64
        if not wide and dtype is not np.uint32 and np.dtype(dtype) != np.uint32:
            raise TypeError("only support uint32 or uint64")
        pool, n = self.pool, len(self.pool)
        count = 2 * n_words if wide else n_words
        out = []
        for i, (before, after) in enumerate(_state_constants(count)):
            v = ((pool[i % n] ^ before) * after) & _MASK32
            out.append(v ^ (v >> _XSHIFT))
        state = np.array(out, dtype=np.uint32)
        return state.view(np.uint64) if wide else state

    def spawn(  # type: ignore[override]  # real SeedSequences, as numpy's own spawn gives
        self, n_children: int
    ) -> list[np.random.SeedSequence]:
        """Child SeedSequences, as SeedSequence.spawn makes them.

        Args:
            n_children: How many.

        Returns:
            Real SeedSequences keyed (*spawn_key, n) for the next ``n_children`` n.
        """
        start = self.n_children_spawned
        self.n_children_spawned += n_children
        return [
            np.random.SeedSequence(
                self.entropy, spawn_key=(*self.spawn_key, i), pool_size=self.pool_size
            )
            for i in range(start, start + n_children)
        ]
