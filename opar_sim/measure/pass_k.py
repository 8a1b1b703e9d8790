"""τ-bench's pass^k over worlds: the chance that k attempts at a task all succeed.

For a task attempted n times with c successes, the chance that k attempts
drawn without replacement all succeed is C(c, k) / C(n, k); pass^k is its mean
over tasks.  Here a task is one world (an episode index: the task stream it
seeds) and its n attempts are the spec's ``trials`` of that world, each with
fresh agent and tool streams.  With one trial per world, pass^k for k > 1 is
not defined.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def pass_hat_k(attempts: Mapping[Any, Sequence[bool]], k: int) -> float:
    """τ-bench's pass^k: mean over tasks of C(c, k) / C(n, k).

    Tasks with fewer than ``k`` attempts cannot be scored and raise ValueError.

    Args:
        attempts: Task (e.g. a world's episode index) -> the outcome of each attempt at it.
        k: How many attempts must all succeed.

    Returns:
        pass^k, or NaN with no tasks.

    Raises:
        ValueError: when ``k`` < 1 or a task has fewer than ``k`` attempts.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not attempts:
        return math.nan
    scores = []
    for task, outcomes in attempts.items():
        n, c = len(outcomes), sum(bool(o) for o in outcomes)
        if n < k:
            raise ValueError(f"task {task!r} has {n} attempts, fewer than k = {k}")
        scores.append(math.comb(c, k) / math.comb(n, k))
    return float(np.mean(scores))


def complete_worlds(worlds: Mapping[Any, Sequence[bool]], trials: int) -> dict[Any, list[bool]]:
    """The worlds with all ``trials`` outcomes (an interrupted run may leave one short).

    Args:
        worlds: World -> the outcome of each trial run.
        trials: The trials per world the spec asks for.

    Returns:
        The worlds with exactly ``trials`` outcomes, in the order given.
    """
    return {w: list(o) for w, o in worlds.items() if len(o) == trials}


def pass_hat_ks(worlds: Mapping[Any, Sequence[bool]], trials: int) -> dict[int, float]:
    """pass^1 .. pass^trials over the worlds that have all their trials.

    Args:
        worlds: World -> the outcome of each of its trials.
        trials: The trials per world (n of C(c, k) / C(n, k)).

    Returns:
        k -> pass^k for k = 1..``trials`` (NaN with no complete world).
    """
    full = complete_worlds(worlds, trials)
    return {k: pass_hat_k(full, k) for k in range(1, trials + 1)}


def success_histogram(worlds: Mapping[Any, Sequence[bool]], trials: int) -> list[int]:
    """How many worlds had 0, 1, .., ``trials`` successes (complete worlds only).

    Args:
        worlds: World -> the outcome of each of its trials.
        trials: The trials per world.

    Returns:
        A list of ``trials + 1`` counts; entry c is the worlds with c successes.
    """
    counts = [0] * (trials + 1)
    for outcomes in complete_worlds(worlds, trials).values():
        counts[sum(bool(o) for o in outcomes)] += 1
    return counts


WORLD_BOOTSTRAP_SEED = (
    20_240_611  # the world bootstrap's own generator: other intervals keep theirs
)
WORLD_RESAMPLES = 2000


def world_intervals(
    worlds: Mapping[Any, Sequence[bool]],
    trials: int,
    confidence: float = 0.95,
    resamples: int = WORLD_RESAMPLES,
) -> tuple[tuple[float, float], dict[int, tuple[float, float]]]:
    """Success and pass^k intervals that resample worlds, each with all its trials.

    The trials of one world share its task stream, so they are not independent draws:
    a Wilson interval over every trial of every world is too narrow.  Here each bootstrap
    resample draws worlds with replacement and keeps a world's trials together; the
    success rate of a resample is its successes over its attempts, and its pass^k the
    mean of C(c, k) / C(n, k) over its complete worlds.

    Args:
        worlds: World -> the outcome of each of its trials.
        trials: The trials per world the spec asks for.
        confidence: The intervals' level.
        resamples: How many bootstrap resamples.

    Returns:
        The success rate's percentile interval, and k -> pass^k's interval for
        k = 1..``trials`` (NaN bounds with no complete world).
    """
    alpha = (1 - confidence) / 2
    rng = np.random.default_rng(WORLD_BOOTSTRAP_SEED)
    names = list(worlds)
    nan = (math.nan, math.nan)
    if not names:
        return nan, dict.fromkeys(range(1, trials + 1), nan)
    wins = np.array([sum(bool(o) for o in worlds[w]) for w in names], float)
    tries = np.array([len(worlds[w]) for w in names], float)
    draws = rng.integers(0, len(names), size=(resamples, len(names)))
    rates = wins[draws].sum(axis=1) / tries[draws].sum(axis=1)
    success = tuple(float(q) for q in np.quantile(rates, [alpha, 1 - alpha]))
    full = complete_worlds(worlds, trials)
    passes: dict[int, tuple[float, float]] = {}
    if not full:
        return (success[0], success[1]), dict.fromkeys(range(1, trials + 1), nan)
    c = np.array([sum(bool(o) for o in outcomes) for outcomes in full.values()])
    picks = rng.integers(0, len(full), size=(resamples, len(full)))
    for k in range(1, trials + 1):
        per_world = np.array([math.comb(int(x), k) / math.comb(trials, k) for x in c])
        means = per_world[picks].mean(axis=1)
        low, high = np.quantile(means, [alpha, 1 - alpha])
        passes[k] = (float(low), float(high))
    return (success[0], success[1]), passes
