"""Screen on a fast engine, confirm on the reference: the trials, the finalists, their scores.

A search that screens (``tune --engine batch``, ``shootout --engine batch``) scores
its trials on the lockstep batch engine; the ``count`` best distinct trials are then
re-scored on the engine of reference (the SimPy engine) on the same training
episodes, and the lowest of those wins.  ``opar_sim.studies.tune`` and
``opar_sim.studies.shootout`` both pick their winner so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from opar_sim.running.search import Evaluate
from opar_sim.spec.schema import Objective


@dataclass
class Trial:
    """One scored assignment: its number, parameters, training score and success rate."""

    number: int
    params: dict[str, float]
    score: float
    success_rate: float


@dataclass
class Finalist:
    """A screened trial re-scored on the confirming engine, the same training seed."""

    number: int
    params: dict[str, float]
    screen_score: float  # on the screening engine (the trial's own score)
    score: float  # on the confirming engine
    success_rate: float  # on the confirming engine


def confirm_finalists(
    objective: Objective,
    train_episodes: int,
    trials: Sequence[Trial],
    confirm: Evaluate,
    seed: int,
    count: int,
) -> list[Finalist]:
    """Re-score the ``count`` best distinct screened trials with ``confirm``, training seed.

    Args:
        objective: The per-episode objective.
        train_episodes: Episodes of each re-score (the screening's training episodes).
        trials: The screened trials.
        confirm: The evaluation of reference.
        seed: The training seed.
        count: How many finalists (at least 1).

    Returns:
        The finalists in screening order (best screened first).
    """
    ranked = sorted(trials, key=lambda t: (t.score, t.number))
    chosen: list[Trial] = []
    for trial in ranked:  # a repeated assignment (an enqueued one sampled again) counts once
        if all(trial.params != c.params for c in chosen):
            chosen.append(trial)
        if len(chosen) == max(1, count):
            break
    out = []
    for trial in chosen:
        rows = confirm(trial.params, train_episodes, seed)
        score = mean_score(objective, rows)
        out.append(Finalist(trial.number, trial.params, trial.score, score, success_rate(rows)))
    return out


def mean_score(objective: Objective, rows: Sequence[Mapping[str, Any]]) -> float:
    """The objective averaged over episode rows."""
    return float(np.mean([objective.episode_score(r) for r in rows]))


def success_rate(rows: Sequence[Mapping[str, Any]]) -> float:
    """The share of episode rows that succeeded."""
    return float(np.mean([bool(r["success"]) for r in rows]))
