"""numpy's SeedSequence hash in Python, for the episode seeds and their four streams.

numpy's ``SeedSequence`` hashes its entropy and spawn key into a pool with uint32
arithmetic (numpy/random/bit_generator.pyx); this module does the same arithmetic, so
the seeds it makes draw bit for bit what numpy's do, where that is cheaper than numpy:
``EpisodeSeed`` (an episode's seed that hashes only when asked) and ``children`` (the
four streams of an episode hashed together).  ``opar_sim.core.seeding`` is the API;
tests/core/test_seeding.py checks every piece against numpy with hypothesis.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.random.bit_generator import ISpawnableSeedSequence

# numpy's SeedSequence costs about 8 µs to build, and a PCG64 seeded from a Python seed
# sequence calls back into its ``generate_state``: hashed word by word in Python, the
# four streams cost about 60 µs an episode.  ``children`` computes the same pools and
# state words with the same uint32 arithmetic (numpy's bit_generator.pyx), hashing the
# parent's entropy and spawn key once for all children and the children together (in
# lanes, below), and hands each PCG64 its four words from one ndarray through its
# ``ChildSeed`` (a fresh PCG64 so seeded costs about 1.3 µs; setting a state dict into a
# reused one costs 2.5 µs, and a reused generator would move under whatever still holds
# it: a nested sub-episode splits its own seed in the middle of its parent's episode).
# ``EpisodeSeed`` skips numpy's hashing of the episode seed itself, which ``streams``
# never reads.  Everything is bit-identical to numpy (tests/core/test_seeding.py).
_MASK32 = 0xFFFFFFFF
_INIT_A = 0x43B0D7E5
_MULT_A = 0x931E8875
_INIT_B = 0x8B51F9DD
_MULT_B = 0x58F38DED
_MIX_MULT_L = 0xCA01F9DD
_MIX_MULT_R = 0x4973F715
_XSHIFT = 16
_POOL_SIZE = 4  # numpy's DEFAULT_POOL_SIZE
_PCG64_WORDS = 4  # the uint64 words PCG64 asks its seed sequence for


def int_key(spawn_key: Sequence[int]) -> bool:
    """Whether a spawn key is Python ints (maybe none), as the Python hash needs them."""
    return all(isinstance(k, int) for k in spawn_key)


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

    numpy pads the run entropy with zeros to the pool size only when a spawn key
    follows, but without one it hashes zeros for the missing words: the same pool,
    so the run entropy's part is shared by every key (``_run_pool``).
    """
    if not isinstance(entropy, int) or not int_key(spawn_key):
        raise ValueError("ChildSeed needs an int entropy and a spawn key of ints")
    mixed, rest = _run_pool(entropy, pool_size)
    if not spawn_key and not rest:
        return mixed
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


def _generated(pool: tuple[int, ...], n_words: int, dtype: type) -> np.ndarray:
    """SeedSequence.generate_state(n_words, dtype) for ``pool`` (uint32 or uint64 words)."""
    wide = dtype is np.uint64 or np.dtype(dtype) == np.uint64
    if not wide and dtype is not np.uint32 and np.dtype(dtype) != np.uint32:
        raise TypeError("only support uint32 or uint64")
    words = np.array(_state_words(pool, 2 * n_words if wide else n_words), np.uint32)
    return words.astype("<u4").view("<u8").astype(np.uint64) if wide else words


def _state_words(pool: tuple[int, ...], count: int) -> list[int]:
    """The first ``count`` uint32 words SeedSequence.generate_state makes from ``pool``."""
    n = len(pool)
    out = []
    for i, (before, after) in enumerate(_state_constants(count)):
        v = ((pool[i % n] ^ before) * after) & _MASK32
        out.append(v ^ (v >> _XSHIFT))
    return out


# ``children`` hashes all the children of one parent at once, one child per 256-bit lane
# of a Python int ("SIMD within a register"): each lane holds a uint32 word, a product
# by a uint32 constant stays inside its lane, and every shift is masked back to 32 bits
# before anything multiplies it.  That does the children's ~450 uint32 operations in ~90
# big-int ones (about 9 µs instead of 50 for four streams); the lanes are laid out so
# that child k's four uint64 PCG64 words are bytes 32k..32k+31 of the result.
_LANE = 256  # bits per lane: four uint64 words, so the lanes are the children's seeds


@functools.lru_cache(maxsize=64)
def _lanes(count: int) -> tuple[int, int]:
    """(one in every lane, a uint32 mask in every lane) for ``count`` lanes."""
    ones = sum(1 << (_LANE * k) for k in range(count))
    return ones, _MASK32 * ones


@functools.lru_cache(maxsize=64)
def _index_terms(h: int, count: int, pool_size: int) -> tuple[int, ...]:
    """Per pool word, the children's index words hashed and times -MIX_MULT_R, in lanes.

    The hash constant after a parent's prefix is fixed, so mixing child index ``i``
    (one uint32 word) into pool word ``d`` is ``mix(pool[d], t)`` with a data-free
    ``t``: this is ``-MIX_MULT_R * t mod 2**32`` for each child, one lane each.
    """
    terms = [0] * pool_size
    for index in range(count):
        g = h
        for d in range(pool_size):
            v = index ^ g
            g = (g * _MULT_A) & _MASK32
            v = (v * g) & _MASK32
            v ^= v >> _XSHIFT
            terms[d] |= (-_MIX_MULT_R * v & _MASK32) << (_LANE * index)
    return tuple(terms)


def children(
    entropy: int, spawn_key: tuple[int, ...], pool_size: int, count: int
) -> list[np.random.Generator]:
    """PCG64 generators of the seeds (entropy, (*spawn_key, i)) for i in 0..count-1.

    Bit for bit ``Generator(PCG64(SeedSequence(entropy, spawn_key=(*spawn_key, i),
    pool_size=pool_size)))``, each carrying a ``ChildSeed`` as its ``seed_seq``.
    """
    pool, h = _absorb(entropy, spawn_key, pool_size)
    ones, mask = _lanes(count)
    terms = _index_terms(h, count, pool_size)
    pools = []  # the children's pool word d, one child per lane
    for word, term in zip(pool, terms, strict=True):
        r = (((_MIX_MULT_L * word) & _MASK32) * ones + term) & mask
        pools.append((r ^ (r >> _XSHIFT)) & mask)
    # generate_state(4, uint64): 8 uint32 words, paired little-endian (numpy's '<u8' view)
    seeds = 0
    lo = 0
    for i, (before, after) in enumerate(_state_constants(2 * _PCG64_WORDS)):
        v = ((pools[i % pool_size] ^ before * ones) * after) & mask
        v = (v ^ (v >> _XSHIFT)) & mask
        if i % 2:
            seeds |= (lo | v << 32) << (32 * (i - 1))  # uint64 word i // 2 of every lane
        else:
            lo = v
    state = np.frombuffer(seeds.to_bytes(count * _LANE // 8, "little"), "<u8")
    state = state.astype(np.uint64, copy=False)  # native order (a no-op on little-endian)
    out = []
    for k in range(count):
        seed = ChildSeed.__new__(ChildSeed)
        seed.entropy = entropy
        seed.spawn_key = (*spawn_key, k)
        seed.pool_size = pool_size
        seed.n_children_spawned = 0
        seed._pools, seed._lane = pools, k  # its pool, unpacked only if asked for
        seed._pcg64 = state[k * _PCG64_WORDS : (k + 1) * _PCG64_WORDS]
        # PCG64 takes any ISeedSequence (its stub lists only the concrete seeds)
        out.append(np.random.Generator(np.random.PCG64(seed)))  # type: ignore[arg-type]
    return out


class _HashedSeed:
    """What ``ChildSeed`` and ``EpisodeSeed`` share: state words and children, as numpy's.

    A subclass gives its pool's uint32 words (``_pool_words``) and carries ``entropy``,
    ``spawn_key``, ``pool_size`` and ``n_children_spawned``.
    """

    __slots__ = ()
    entropy: Any
    spawn_key: tuple[int, ...]
    pool_size: int
    n_children_spawned: int
    _pool_words: Callable[[], tuple[int, ...]]  # the subclass's pool, as uint32 words

    def generate_state(self, n_words: int, dtype: type = np.uint32) -> np.ndarray:
        """The words SeedSequence.generate_state returns for this seed.

        Args:
            n_words: How many words of ``dtype``.
            dtype: ``np.uint32`` or ``np.uint64``.

        Returns:
            The state words, as numpy computes them.
        """
        return _generated(self._pool_words(), n_words, dtype)

    def spawn(self, n_children: int) -> list[np.random.SeedSequence]:
        """Child SeedSequences, as SeedSequence.spawn makes them (advancing the count).

        Args:
            n_children: How many.

        Returns:
            Real SeedSequences keyed (*spawn_key, n) for the next ``n_children`` n.
        """
        start = self.n_children_spawned
        self.n_children_spawned += n_children  # type: ignore[misc]  # a subclass's slot
        return [
            np.random.SeedSequence(
                self.entropy, spawn_key=(*self.spawn_key, i), pool_size=self.pool_size
            )
            for i in range(start, start + n_children)
        ]


class ChildSeed(_HashedSeed, ISpawnableSeedSequence):  # type: ignore[misc]  # numpy's stubs
    """``SeedSequence(parent.entropy, spawn_key=(*parent.spawn_key, index))``, computed cheaply.

    It seeds a PCG64 exactly as that SeedSequence would, spawns real SeedSequences
    (``Generator.spawn`` works as before) and carries ``entropy``, ``spawn_key`` and
    ``pool_size`` for ``derived``.

    Args:
        parent: A SeedSequence with an int entropy (and a spawn key of ints, maybe empty).
        index: The child's index, appended to the parent's spawn key.
    """

    __slots__ = (
        "_lane",
        "_pcg64",
        "_pools",
        "entropy",
        "n_children_spawned",
        "pool_size",
        "spawn_key",
    )

    def __init__(self, parent: np.random.SeedSequence, index: int) -> None:
        self.entropy = parent.entropy
        self.pool_size = parent.pool_size
        self.spawn_key = (*parent.spawn_key, index)
        self.n_children_spawned = 0
        prefix = _absorb(self.entropy, tuple(parent.spawn_key), self.pool_size)
        self._pools: list[int] | tuple[int, ...] = _more(prefix, _words(index))[0]
        self._lane = 0
        self._pcg64: np.ndarray | None = None

    @property
    def pool(self) -> tuple[int, ...]:
        """The entropy pool, as SeedSequence.pool holds it (uint32 words)."""
        return self._pool_words()

    def _pool_words(self) -> tuple[int, ...]:
        shift = _LANE * self._lane
        return tuple((w >> shift) & _MASK32 for w in self._pools)

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
        if self._pcg64 is not None and n_words == _PCG64_WORDS and dtype is np.uint64:
            # the words ``children`` computed for the PCG64 being built, handed over once
            state, self._pcg64 = self._pcg64, None
            return state
        return super().generate_state(n_words, dtype)


class EpisodeSeed(_HashedSeed, np.random.SeedSequence):  # type: ignore[misc]  # numpy's stubs
    """``SeedSequence(seed, spawn_key=(episode,))`` that hashes only when asked to.

    numpy's constructor hashes the entropy into the pool at once (about 10 µs);
    ``streams`` never needs that pool (it hashes the children itself), so this
    SeedSequence keeps the entropy and spawn key and computes the pool, its state
    words and its children, bit for bit numpy's, only if something asks for them.
    It is a SeedSequence (``isinstance`` holds, numpy's bit generators take it);
    numpy's own read-only fields are shadowed by these slots and stay unused.

    Args:
        seed: The run seed (a non-negative int).
        episode: The episode number (a non-negative int), the spawn key.
    """

    # the public ones have the names of numpy's read-only fields: these slots shadow them
    __slots__ = ("_episode", "_seed", "entropy", "n_children_spawned", "pool_size", "spawn_key")

    def __init__(self, seed: int, episode: int) -> None:  # not numpy's: that would hash
        self._seed, self._episode = seed, episode  # typed ints, for what follows
        self.entropy = seed
        self.spawn_key = (episode,)
        self.pool_size = _POOL_SIZE
        self.n_children_spawned = 0

    @property
    def pool(self) -> np.ndarray:  # type: ignore[override]  # numpy's is a read-only field
        """The entropy pool (uint32 words), as SeedSequence.pool holds it."""
        return np.array(self._pool_words(), dtype=np.uint32)

    @property
    def state(self) -> dict[str, Any]:  # type: ignore[override]  # numpy's stub: a TypedDict
        """The SeedSequence's parameters, as SeedSequence.state gives them."""
        return {
            "entropy": self.entropy,
            "spawn_key": self.spawn_key,
            "pool_size": self.pool_size,
            "n_children_spawned": self.n_children_spawned,
        }

    def _pool_words(self) -> tuple[int, ...]:
        return _absorb(self._seed, (self._episode,), self.pool_size)[0]

    def __repr__(self) -> str:
        """The repr of numpy's SeedSequence (defaults left out)."""
        lines = [f"{type(self).__name__}(", f"    entropy={self.entropy!r},"]
        lines.append(f"    spawn_key={self.spawn_key!r},")
        if self.n_children_spawned:
            lines.append(f"    n_children_spawned={self.n_children_spawned!r},")
        return "\n".join([*lines, ")"])

    def __reduce__(self) -> tuple[type, tuple[int, int], int]:
        """Pickle as the pair and the count of children spawned (numpy's would read its fields)."""
        return type(self), (self._seed, self._episode), self.n_children_spawned

    def __setstate__(self, n_children_spawned: int) -> None:
        """Restore the count of children spawned (see ``__reduce__``)."""
        self.n_children_spawned = n_children_spawned
