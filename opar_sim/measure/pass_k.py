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
