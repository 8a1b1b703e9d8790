"""The replicated shoot-out's standings: every law's tuning replicates and defaults, held out.

Each law was tuned R times (replicate r on the r-th training and sampler seed, the same
for every law) and each replicate's best setting, with the law's shipped defaults, ran
on the same held-out episodes.  Per law: the mean, sample sd and min–max across
replicates of held-out success, tokens and REPLANs per episode, and the defaults' score.

**Comparisons are replicate-level.**  Replicate r of law A against replicate r of law B
(same seeds, same held-out episodes): R paired differences of held-out success, their
mean with a t interval on R − 1 degrees of freedom and a two-sided p, the standard error
also carrying the held-out episodes' sampling noise, which the replicates share
(``opar_sim.measure.replicates``).  The leader is the law with the highest mean success;
every other law is compared with it and the L − 1 p-values are Holm-adjusted.  A law is
*behind* the leader only when its adjusted p < ``ALPHA`` (and its mean is lower).

**Ranks show ties.**  The leader and every law not significantly behind it share rank 1;
the remaining laws are ranked the same way among themselves (their own leader, their own
Holm family), and so on.  "(best)" marks a leader significantly ahead of every other law.
Rows are sorted by rank, then by mean success.  Tuning against the defaults is a second
family: each law's R replicate successes minus its defaults' success (t interval), Holm
over the laws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opar_sim.measure.replicates import (
    ReplicateDiff,
    Spread,
    episode_variance,
    replicate_diff,
    spread,
)
from opar_sim.measure.stats import holm, wilson_interval
from opar_sim.spec.schema import Objective, ParamRange
from opar_sim.studies.contender import Tuned

ALPHA = 0.05


@dataclass
class LawArms:
    """One law's arms on the held-out episodes: R tuned replicates and its defaults."""

    name: str
    space: dict[str, ParamRange]
    trials: int  # per replicate
    replicates: list[Tuned]
    defaults_rows: list[dict[str, Any]]

    def column(self, key: str, objective: Objective) -> list[float]:
        """Each replicate's held-out mean of success, tokens, replans or objective."""
        return [_mean(t.holdout_rows, key, objective) for t in self.replicates]

    def wins(self) -> list[list[float]]:
        """Each replicate's held-out successes (0/1), in episode order."""
        return [_wins(t.holdout_rows) for t in self.replicates]


def _wins(rows: Sequence[Mapping[str, Any]]) -> list[float]:
    ordered = sorted(rows, key=lambda r: int(r["episode"]))
    return [1.0 if r["success"] else 0.0 for r in ordered]


def _mean(rows: Sequence[Mapping[str, Any]], key: str, objective: Objective) -> float:
    if key == "objective":
        return float(np.mean([objective.episode_score(r) for r in rows]))
    return float(np.mean([float(r[key]) for r in rows]))


@dataclass
class LawStanding:
    """One law's held-out results across replicates, its comparisons and rank."""

    name: str
    dimension: int
    trials: int
    success: Spread
    tokens: Spread
    replans: Spread  # REPLANs per episode
    objective: Spread
    defaults: dict[str, Any]  # success, success_ci95, tokens, replans, objective, episodes
    tuning_gain: ReplicateDiff  # replicate success − the defaults' success
    tuning_gain_holm: float
    params: list[dict[str, float]]  # each replicate's tuned setting
    rank: int = 1
    vs_leader: ReplicateDiff | None = None  # this − the leader, replicate by replicate
    vs_leader_holm: float = 1.0
    tier_leader: str = ""  # the law this one was compared with for its rank
    tier_holm: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        """Its numbers as JSON-able data."""
        return {
            "name": self.name,
            "rank": self.rank,
            "dimension": self.dimension,
            "trials_per_replicate": self.trials,
            "holdout_success": self.success.to_dict(),
            "holdout_tokens": self.tokens.to_dict(),
            "holdout_replans_per_episode": self.replans.to_dict(),
            "holdout_objective": self.objective.to_dict(),
            "defaults": self.defaults,
            "tuned_minus_defaults": {
                **self.tuning_gain.to_dict(),
                "p_holm": self.tuning_gain_holm,
            },
            "vs_leader": None
            if self.vs_leader is None
            else {**self.vs_leader.to_dict(), "p_holm": self.vs_leader_holm},
            "rank_compared_with": self.tier_leader,
            "rank_p_holm": self.tier_holm,
            "tuned_params": self.params,
        }


@dataclass
class Ranking:
    """The standings, sorted by rank then mean success, and whether the leader is alone."""

    standings: list[LawStanding] = field(default_factory=list)
    leader: str = ""
    alone: bool = False  # the leader is significantly ahead of every other law


def _defaults(rows: Sequence[Mapping[str, Any]], objective: Objective) -> dict[str, Any]:
    wins = sum(bool(r["success"]) for r in rows)
    return {
        "episodes": len(rows),
        "success": wins / len(rows),
        "success_ci95": list(wilson_interval(wins, len(rows))),
        "tokens": _mean(rows, "tokens", objective),
        "replans": _mean(rows, "replans", objective),
        "objective": _mean(rows, "objective", objective),
    }


def _check_same_episodes(laws: Sequence[LawArms]) -> None:
    def key(rows: Sequence[Mapping[str, Any]]) -> list[int]:
        return sorted(int(r["episode"]) for r in rows)

    first = key(laws[0].defaults_rows)
    for law in laws:
        for rows in [law.defaults_rows, *(t.holdout_rows for t in law.replicates)]:
            if key(rows) != first:
                raise ValueError(f"{law.name!r} was not run on the same held-out episodes")


def rank_laws(laws: Sequence[LawArms], objective: Objective) -> Ranking:
    """Replicate-level comparisons with the leader, Holm-adjusted, and ranks with ties.

    Args:
        laws: Every law with the same number of replicates, on the same held-out episodes.
        objective: The per-episode objective.

    Returns:
        The ranking.

    Raises:
        ValueError: no laws, unequal replicate counts, or different held-out episodes.
    """
    if not laws:
        raise ValueError("no laws")
    if len({len(law.replicates) for law in laws}) != 1:
        raise ValueError("every law needs the same number of replicates")
    _check_same_episodes(laws)
    rates = {law.name: law.column("success", objective) for law in laws}
    wins = {law.name: law.wins() for law in laws}

    def compare(a: str, b: str) -> ReplicateDiff:  # replicate-level, with the episodes' noise
        return replicate_diff(rates[a], rates[b], episode_var=episode_variance(wins[a], wins[b]))

    standings = {}
    for law in laws:
        defaults = _defaults(law.defaults_rows, objective)
        flat = [defaults["success"]] * len(law.replicates)
        noise = episode_variance(wins[law.name], [_wins(law.defaults_rows)])
        standings[law.name] = LawStanding(
            name=law.name,
            dimension=len(law.space),
            trials=law.trials,
            success=spread(rates[law.name]),
            tokens=spread(law.column("tokens", objective)),
            replans=spread(law.column("replans", objective)),
            objective=spread(law.column("objective", objective)),
            defaults=defaults,
            tuning_gain=replicate_diff(rates[law.name], flat, episode_var=noise),
            tuning_gain_holm=1.0,
            params=[t.best_params for t in law.replicates],
        )
    gains = holm([s.tuning_gain.p for s in standings.values()])
    for s, q in zip(standings.values(), gains, strict=True):
        s.tuning_gain_holm = q

    def order(names: Sequence[str]) -> list[str]:
        return sorted(
            names, key=lambda n: (-standings[n].success.mean, standings[n].objective.mean, n)
        )

    remaining, placed, first = order(list(standings)), 0, True
    alone = False
    while remaining:
        leader, others = remaining[0], remaining[1:]
        diffs = [compare(n, leader) for n in others]
        adjusted = holm([d.p for d in diffs]) if diffs else []
        behind = {
            n for n, d, q in zip(others, diffs, adjusted, strict=True) if q < ALPHA and d.mean < 0
        }
        tier = [leader] + [n for n in others if n not in behind]
        for n, d, q in zip(others, diffs, adjusted, strict=True):
            standings[n].tier_leader, standings[n].tier_holm = leader, q
            if first:
                standings[n].vs_leader, standings[n].vs_leader_holm = d, q
        if first:
            alone = len(others) > 0 and len(behind) == len(others)
            first = False
        for n in tier:
            standings[n].rank = placed + 1
        placed += len(tier)
        remaining = [n for n in others if n in behind]
    ranked = sorted(standings.values(), key=lambda s: (s.rank, -s.success.mean, s.name))
    return Ranking(ranked, order(list(standings))[0], alone)
