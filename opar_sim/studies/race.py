"""Successive halving: the replicates' settings raced against the incumbent on fresh episodes.

``tune`` ends with R settings (one per replicate) and the spec's current gains, the
incumbent.  Before any of them meets the hold-out seed, one challenger is chosen on
fresh episodes of ``CONFIRM_SEED`` by successive halving with common random numbers:

* round j scores every surviving arm on episodes 0 .. n_j − 1 of the confirmation seed
  (the same episodes for every arm; an arm that survives is only run on the episodes it
  has not run yet), with n_j doubling up to the race's ``episodes`` in the last round;
* after each round the better half of the challengers (lowest mean objective, rounded up)
  goes on; after the last round one is left: the race's winner;
* the incumbent runs every round and is never eliminated: each round's table shows every
  challenger against it on the same episodes.

With m distinct challengers there are max(1, ⌈log₂ m⌉) rounds.  The hold-out seed is not
used here, so choosing the winner does not bias its held-out comparison.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opar_sim.running.search import Evaluate, evaluate_range
from opar_sim.spec.schema import Objective
from opar_sim.studies.finalists import mean_score, success_rate

INCUMBENT = "incumbent"


@dataclass(frozen=True)
class Arm:
    """A setting in the race: the incumbent (``params`` None) or a replicates' best."""

    label: str  # "incumbent", or the replicates that found it: "r0", "r1+r3"
    params: dict[str, float] | None
    replicates: tuple[int, ...] = ()


def distinct_arms(settings: Sequence[Mapping[str, float]]) -> list[Arm]:
    """The incumbent and one arm per distinct setting (replicates that agree share one).

    Args:
        settings: Replicate r's best setting at place r.

    Returns:
        The incumbent first, then the settings in order of their first replicate.
    """
    arms: list[tuple[dict[str, float], list[int]]] = []
    for r, params in enumerate(settings):
        for seen, who in arms:
            if seen == dict(params):
                who.append(r)
                break
        else:
            arms.append((dict(params), [r]))
    return [Arm(INCUMBENT, None)] + [
        Arm("+".join(f"r{r}" for r in who), params, tuple(who)) for params, who in arms
    ]


@dataclass
class Round:
    """One round: the episodes every arm in it was scored on, and the scores."""

    episodes: int  # episodes 0 .. episodes − 1 of the confirmation seed
    objective: dict[str, float]  # arm label -> mean objective
    success: dict[str, float]  # arm label -> success rate
    kept: list[str]  # the challengers that go on (after the last round: the winner)


@dataclass
class Race:
    """A finished race: its seed, its rounds and its winner."""

    seed: int
    episodes: int  # of the last round
    arms: list[Arm]
    rounds: list[Round] = field(default_factory=list)

    @property
    def winner(self) -> Arm:
        """The challenger left after the last round."""
        (label,) = self.rounds[-1].kept
        return next(a for a in self.arms if a.label == label)

    def to_dict(self) -> dict[str, Any]:
        """The protocol, each round's scores and the winner."""
        return {
            "method": "successive halving, common random numbers, incumbent in every round",
            "seed": self.seed,
            "episodes": self.episodes,
            "arms": [
                {"label": a.label, "params": a.params, "replicates": list(a.replicates)}
                for a in self.arms
            ],
            "rounds": [
                {
                    "episodes": r.episodes,
                    "objective": r.objective,
                    "success": r.success,
                    "kept": r.kept,
                }
                for r in self.rounds
            ],
            "winner": self.winner.label,
        }


def round_sizes(challengers: int, episodes: int) -> list[int]:
    """The episodes of each round: doubling, the last one ``episodes``."""
    rounds = max(1, math.ceil(math.log2(max(1, challengers))))
    return [max(1, episodes >> (rounds - 1 - j)) for j in range(rounds)]


def race_cost(challengers: int, episodes: int) -> int:
    """How many episodes a race of ``challengers`` and the incumbent runs."""
    total, done, alive = 0, 0, challengers
    for n in round_sizes(challengers, episodes):
        total += (1 + alive) * (n - done)  # every arm in the round catches up to n
        done, alive = n, math.ceil(alive / 2)
    return total


def successive_halving(
    arms: Sequence[Arm],
    evaluate: Evaluate,
    objective: Objective,
    seed: int,
    episodes: int,
    on_round: Callable[[Round], None] | None = None,
) -> Race:
    """Race the challengers against the incumbent on episodes of ``seed``.

    Args:
        arms: The incumbent (params None) and at least one challenger.
        evaluate: ``evaluate(params, episodes, seed)`` (the engine of reference).
        objective: The per-episode objective (lower is better).
        seed: The confirmation seed (``CONFIRM_SEED``).
        episodes: The episodes of the last round.
        on_round: Called with each finished round.

    Returns:
        The race with every round and its winner.

    Raises:
        ValueError: without an incumbent or without a challenger.
    """
    incumbents = [a for a in arms if a.params is None]
    alive = [a for a in arms if a.params is not None]
    if len(incumbents) != 1 or not alive:
        raise ValueError("a race needs one incumbent and at least one challenger")
    race = Race(seed, episodes, list(arms))
    rows: dict[str, list[dict[str, Any]]] = {a.label: [] for a in arms}
    sizes = round_sizes(len(alive), episodes)
    for j, n in enumerate(sizes):
        for arm in [incumbents[0], *alive]:
            have = len(rows[arm.label])
            if have < n:
                more = evaluate_range(evaluate, arm.params, have, n, seed)
                rows[arm.label] += sorted(more, key=lambda r: int(r["episode"]))
        scored = {a.label: rows[a.label][:n] for a in [incumbents[0], *alive]}
        means = {label: mean_score(objective, r) for label, r in scored.items()}
        keep = math.ceil(len(alive) / 2) if j < len(sizes) - 1 else 1
        order = {a.label: k for k, a in enumerate(arms)}
        alive = sorted(alive, key=lambda a: (means[a.label], order[a.label]))[:keep]
        done = Round(
            n, means, {k: success_rate(v) for k, v in scored.items()}, [a.label for a in alive]
        )
        race.rounds.append(done)
        if on_round is not None:
            on_round(done)
    return race
