"""The held-out standings of tuned contenders: paired tests against the best, ranks with ties.

Against the best contender (highest held-out success, then lowest objective): the
success difference with the exact McNemar p-value, the objective and token differences
with paired bootstrap 95 % intervals.  McNemar p-values of *all* pairs of contenders are
Holm-adjusted as one family.  A contender's rank is 1 + the number of contenders that
beat it significantly (higher success, Holm-adjusted p < ``ALPHA``); so every contender
not significantly worse than the best shares rank 1.  ``opar_sim.studies.shootout``
ranks its contenders so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from opar_sim.measure.paired import paired_against, paired_columns
from opar_sim.measure.stats import Estimate, discordant, holm, mcnemar_exact
from opar_sim.spec.schema import Objective
from opar_sim.studies.contender import Budget, Tuned
from opar_sim.studies.finalists import Finalist
from opar_sim.studies.seeds import HOLDOUT_SEED

ALPHA = 0.05


@dataclass
class Standing:
    """One contender's held-out result, its paired differences against the best, its rank."""

    name: str
    best_params: dict[str, float]
    train_score: float
    n: int
    success: float
    success_ci95: tuple[float, float]
    objective: float
    mean_tokens: float
    rank: int
    success_diff: float  # this − best
    discordant: tuple[int, int]  # (only this succeeded, only the best succeeded)
    p_mcnemar: float
    p_holm: float
    objective_diff: Estimate  # this − best
    tokens_diff: Estimate  # this − best
    screened: str = "simpy"  # the engine its trials were scored on
    finalists: list[Finalist] = field(default_factory=list)  # re-scored on SimPy


@dataclass
class PairTest:
    """The McNemar test of one pair of contenders (the family Holm corrects)."""

    a: str
    b: str
    only_a: int
    only_b: int
    p: float
    p_holm: float


def tie_ranks(successes: Sequence[float], pairs: Mapping[tuple[int, int], float]) -> list[int]:
    """Ranks that show ties as ties: 1 + how many contenders are significantly better.

    Args:
        successes: Each contender's success rate.
        pairs: (i, j) with i < j -> the Holm-adjusted p of their comparison.

    Returns:
        One rank per contender; contenders not significantly beaten share rank 1.
    """
    ranks = []
    for i, rate in enumerate(successes):
        better = sum(
            1
            for j, other in enumerate(successes)
            if j != i and other > rate and pairs[(min(i, j), max(i, j))] < ALPHA
        )
        ranks.append(1 + better)
    return ranks


def standings(
    tuned: Sequence[Tuned], objective: Objective, seed: int = HOLDOUT_SEED
) -> tuple[list[Standing], list[PairTest]]:
    """Paired held-out statistics of every contender against the best, and the ranking.

    Args:
        tuned: The contenders, each with rows on the same held-out episodes.
        objective: The per-episode objective.
        seed: The bootstrap generator's seed.

    Returns:
        The standings sorted by rank, then success (best first), and every pair's test.

    Raises:
        ValueError: when the contenders were not run on the same episodes.
    """
    if not tuned:
        raise ValueError("no contenders")
    try:
        cols = paired_columns([t.holdout_rows for t in tuned], [t.name for t in tuned], objective)
    except ValueError as exc:
        raise ValueError(f"contender {exc}") from None
    wins = cols.wins
    rates = [cols.rate(i) for i in range(len(tuned))]
    means = [cols.objective(i) for i in range(len(tuned))]
    best = min(range(len(tuned)), key=lambda i: (-rates[i], means[i], i))

    index = list(combinations(range(len(tuned)), 2))
    counts = [discordant(wins[i], wins[j]) for i, j in index]
    raw = [mcnemar_exact(*c) for c in counts]
    adjusted = holm(raw)
    holm_of = dict(zip(index, adjusted, strict=True))
    raw_of = dict(zip(index, raw, strict=True))
    ranks = tie_ranks(rates, holm_of)
    pair_tests = [
        PairTest(tuned[i].name, tuned[j].name, b, c, p, q)
        for (i, j), (b, c), p, q in zip(index, counts, raw, adjusted, strict=True)
    ]
    out = []
    for i, t in enumerate(tuned):
        key = (min(i, best), max(i, best))
        out.append(
            Standing(
                name=t.name,
                best_params=t.best_params,
                train_score=t.train_score,
                rank=ranks[i],
                p_mcnemar=1.0 if i == best else raw_of[key],
                p_holm=1.0 if i == best else holm_of[key],
                **paired_against(cols, i, best, seed).as_fields(),
                screened=t.screened,
                finalists=t.finalists,
            )
        )
    out.sort(key=lambda s: (s.rank, -s.success, s.objective, s.name))
    return out, pair_tests


def standings_json(
    budget: Budget, objective: Objective, ranked: Sequence[Standing], pairs: Sequence[PairTest]
) -> dict[str, Any]:
    """shootout.json: the protocol, each contender's standing and every pair's test."""
    return {
        "protocol": {
            "trials": budget.trials,
            "sampler": budget.sampler,
            "sampler_seed": budget.train_seed,
            "train_seed": budget.train_seed,
            "train_episodes": budget.train_episodes,
            "holdout_seed": budget.holdout_seed,
            "holdout_episodes": budget.holdout_episodes,
            "objective": objective.model_dump(),
            "alpha": ALPHA,
            "ranking": "1 + contenders with higher success and Holm-adjusted McNemar p < alpha",
        },
        "contenders": [
            {
                "name": s.name,
                "rank": s.rank,
                "best_params": s.best_params,
                "train_objective": s.train_score,
                "trials_engine": s.screened,
                "finalists": [
                    {
                        "trial": f.number,
                        "params": f.params,
                        "batch_objective": f.screen_score,
                        "simpy_objective": f.score,
                        "simpy_success": f.success_rate,
                    }
                    for f in s.finalists
                ],
                "holdout": {
                    "episodes": s.n,
                    "success": s.success,
                    "success_ci95": list(s.success_ci95),
                    "objective": s.objective,
                    "mean_tokens": s.mean_tokens,
                },
                "vs_best": {
                    "success_diff": s.success_diff,
                    "only_this": s.discordant[0],
                    "only_best": s.discordant[1],
                    "p_mcnemar": s.p_mcnemar,
                    "p_holm": s.p_holm,
                    "objective_diff": s.objective_diff.to_dict(),
                    "tokens_diff": s.tokens_diff.to_dict(),
                },
            }
            for s in ranked
        ],
        "pairs": [
            {
                "a": p.a,
                "b": p.b,
                "only_a": p.only_a,
                "only_b": p.only_b,
                "p": p.p,
                "p_holm": p.p_holm,
            }
            for p in pairs
        ],
    }
