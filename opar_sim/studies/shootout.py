"""A fair shoot-out: every controller tuned with the same budget, scored on unseen seeds.

The protocol (``opar-sim shootout SPEC``):

1. **Same budget.**  Every contender is searched by the project's one Optuna
   search (``opar_sim.running.search.minimize``) with the same sampler and sampler
   seed, the same number of trials and the same training episodes
   (``TRAIN_SEED``, episodes 0 .. train_episodes − 1: common random numbers
   within and across contenders).  The space is the controller's documented
   ``SPACE`` (a class attribute in ``controllers/``) plus the shared stop
   confirmation ``guards.confirm`` (1..3 consecutive TERMINATE decisions), so
   no law is denied the confirmation another one has built in.
2. **Unseen seeds.**  The best assignment of each contender (lowest training
   objective) is scored on ``HOLDOUT_SEED``, which no default, no report and
   no tuning trial has used; every contender sees the same held-out worlds.
3. **Paired statistics.**  Against the best contender (highest held-out
   success, then lowest objective): the success difference with the exact
   McNemar p-value, the objective and token differences with paired bootstrap
   95 % intervals.  McNemar p-values of *all* pairs of contenders are
   Holm-adjusted as one family.
4. **Ties as ties.**  A contender's rank is 1 + the number of contenders that
   beat it significantly (higher success, Holm-adjusted p < ``ALPHA``); so
   every contender not significantly worse than the best shares rank 1.

The objective is the spec's ``[tune.objective]`` (``experiment.spec.Objective``:
failure + weighted tokens + replan rate), or failure alone without one.

**Screening** (``shootout --engine batch``): a contender has its trials scored on the
lockstep batch engine (through its array twin, or its scalar law row by row); its
``finalists`` best distinct trials are re-scored on the SimPy engine on the same
training episodes, the lowest SimPy objective wins (``opar_sim.studies.finalists``,
as ``tune --engine batch``), and the held-out seeds are always scored on the SimPy
engine.  A contender the batch engine cannot run is searched on the SimPy engine with
the same trials and episodes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from opar_sim.core.registry import Registry
from opar_sim.measure.paired import paired_against, paired_columns
from opar_sim.measure.stats import Estimate, discordant, holm, mcnemar_exact
from opar_sim.running.search import Evaluate, minimize
from opar_sim.spec.schema import Objective, ParamRange
from opar_sim.studies.finalists import Finalist, Trial, confirm_finalists
from opar_sim.studies.seeds import HOLDOUT_SEED, TUNING_SEED

TRAIN_SEED = TUNING_SEED  # training episodes (reports use EVAL_SEEDS)
ALPHA = 0.05
CONFIRM_PATH = "guards.confirm"
CONFIRM_RANGE = ParamRange(low=1, high=3, integer=True)
EXCLUDED = ("oracle",)  # reads the hidden state: a reference, not a contender


@dataclass(frozen=True)
class Budget:
    """What every contender gets: the same sampler, trials and seeds."""

    trials: int = 40
    train_episodes: int = 300
    holdout_episodes: int = 2000
    sampler: str = "tpe"
    train_seed: int = TRAIN_SEED
    holdout_seed: int = HOLDOUT_SEED


@dataclass
class Tuned:
    """One contender after tuning: its best assignment and its held-out episode rows."""

    name: str
    space: dict[str, ParamRange]
    best_params: dict[str, float]
    train_score: float
    trial_scores: list[float]
    holdout_rows: list[dict[str, Any]] = field(default_factory=list)
    # with a screening engine: the trials the reference engine re-scored (else empty)
    finalists: list[Finalist] = field(default_factory=list)
    screened: str = "simpy"  # the engine the trials were scored on


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


def controller_space(factory: Any) -> dict[str, tuple[float, float]]:
    """A registered controller's documented ``SPACE`` (empty when it declares none).

    Args:
        factory: The registered factory (a controller class).

    Returns:
        Parameter name -> (low, high); integer bounds mean an integer search.
    """
    space = getattr(factory, "SPACE", None)
    return dict(space) if isinstance(space, Mapping) else {}


def contender_space(factory: Any, confirm: bool = True) -> dict[str, ParamRange]:
    """The search space of a contender: its ``SPACE`` at ``controller.params.*`` + confirm.

    Args:
        factory: The registered factory (a controller class).
        confirm: Add the shared stop confirmation ``guards.confirm`` (1..3).

    Returns:
        Dotted spec path -> its ParamRange.
    """
    space = {
        f"controller.params.{name}": ParamRange(
            low=low, high=high, integer=isinstance(low, int) and isinstance(high, int)
        )
        for name, (low, high) in controller_space(factory).items()
    }
    if confirm:
        space[CONFIRM_PATH] = CONFIRM_RANGE
    return space


def default_contenders(registry: Registry[Any]) -> list[str]:
    """Every registered controller except the oracle, sorted."""
    return [n for n in registry.names() if n not in EXCLUDED]


def check_space(name: str, factory: Any) -> None:
    """Fail (ValueError) when a ``SPACE`` names a parameter the factory does not take."""
    try:
        accepted = set(inspect.signature(factory).parameters)
    except (TypeError, ValueError):
        return
    unknown = sorted(set(controller_space(factory)) - accepted)
    if unknown:
        raise ValueError(f"controller {name!r}: SPACE names unknown parameters {unknown}")


def tune_contender(
    name: str,
    space: dict[str, ParamRange],
    evaluate: Evaluate,
    objective: Objective,
    budget: Budget,
    on_trial: Callable[[], None] | None = None,
    enqueue: Sequence[Mapping[str, float]] = (),
    finalize: Callable[[dict[str, float]], dict[str, float]] | None = None,
    screen: Evaluate | None = None,
    finalists: int = 5,
) -> Tuned:
    """Search one contender's space on the training seeds, then run its best on held-out seeds.

    Args:
        name: The controller's registered name.
        space: Dotted path -> range (``contender_space``).
        evaluate: ``evaluate(params, episodes, seed)`` for this contender's base spec
            (the engine of reference: it scores the held-out seeds).
        objective: The per-episode objective to minimise.
        budget: Trials, episodes, sampler and seeds (the same for every contender).
        on_trial: Called after each trial.
        enqueue: Assignments scored first (e.g. the shipped defaults).
        finalize: Turns the best assignment into the one scored held out (e.g. rounded).
        screen: An evaluation that scores the trials instead (the batch engine); the
            ``finalists`` best distinct trials are then re-scored with ``evaluate`` on
            the training seed and the lowest of those wins.
        finalists: How many screened trials ``evaluate`` re-scores.

    Returns:
        The best assignment (lowest training objective, first on ties; finalized)
        with its held-out rows.
    """
    cache: dict[tuple[tuple[str, float], ...], tuple[float, float]] = {}
    trial_engine = evaluate if screen is None else screen

    def score(params: dict[str, float]) -> float:
        key = tuple(sorted(params.items()))
        if key not in cache:  # integer-only spaces revisit points: run each once
            rows = trial_engine(params, budget.train_episodes, budget.train_seed)
            mean = float(np.mean([objective.episode_score(r) for r in rows]))
            cache[key] = (mean, float(np.mean([bool(r.get("success")) for r in rows])))
        if on_trial is not None:
            on_trial()
        return cache[key][0]

    _, scored = minimize(
        space, score, budget.trials, budget.train_seed, sampler=budget.sampler, enqueue=enqueue
    )
    confirmed: list[Finalist] = []
    if screen is None:
        best_index = min(range(len(scored)), key=lambda i: (scored[i][1], i))
        best, train_score = scored[best_index]
    else:
        trials = [
            Trial(k, params, value, cache[tuple(sorted(params.items()))][1])
            for k, (params, value) in enumerate(scored)
        ]
        confirmed = confirm_finalists(
            objective, budget.train_episodes, trials, evaluate, budget.train_seed, finalists
        )
        winner = min(confirmed, key=lambda f: (f.score, f.number))
        best, train_score = winner.params, winner.score
    if finalize is not None:
        best = finalize(best)
    rows = evaluate(best, budget.holdout_episodes, budget.holdout_seed)
    return Tuned(
        name=name,
        space=space,
        best_params=best,
        train_score=train_score,
        trial_scores=[s for _, s in scored],
        holdout_rows=sorted(rows, key=lambda r: int(r["episode"])),
        finalists=confirmed,
        screened="simpy" if screen is None else "batch",
    )


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


def contender_data(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Spec data that runs controller ``name`` alone.

    The spec's own parameters for that controller (its ``[controller]`` or a
    ``[[compare]]`` entry) are kept as the starting point; the search overrides
    the ones in the space.  ``compare``, ``sweep`` and ``tune`` are dropped.

    Args:
        data: The spec's data (``spec.model_dump()``).
        name: A registered controller.

    Returns:
        A new data dict with ``controller = {name, params}`` and nothing to compare.
    """
    listed = [data.get("controller") or {}, *(data.get("compare") or [])]
    params: dict[str, Any] = {}
    for entry in listed:
        if entry.get("name") == name:
            params = dict(entry.get("params") or {})
            break
    out = {k: v for k, v in data.items() if k not in ("compare", "sweep", "tune")}
    out["controller"] = {"name": name, "params": params}
    return out


def corners(space: Mapping[str, ParamRange]) -> list[dict[str, float]]:
    """The low and the high corner of a space (to validate before any episode runs)."""
    return [
        {p: int(getattr(r, side)) if r.integer else getattr(r, side) for p, r in space.items()}
        for side in ("low", "high")
    ]


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
