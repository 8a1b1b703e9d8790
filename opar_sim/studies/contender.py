"""One contender tuned on a budget: its search space, its spec data, its search, its held-out rows.

A contender is a registered controller searched over its documented ``SPACE`` (a class
attribute in ``controllers/``) at ``controller.params.*``, plus, for the shoot-out, the
shared stop confirmation ``guards.confirm`` (1..3 consecutive TERMINATE decisions).  Its
search is the project's one Optuna search (``opar_sim.running.search.minimize``) on the
training episodes (``TRAIN_SEED``: common random numbers within and across contenders);
its best assignment is then run on the held-out episodes (``HOLDOUT_SEED``).  With a
screening evaluation (the batch engine) its finalists are re-scored on the engine of
reference (``opar_sim.studies.finalists``).  The shoot-out (``opar_sim.studies.shootout``)
and the defaults' re-fit (``opar_sim.studies.refit``) tune their contenders so.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opar_sim.core.registry import Registry
from opar_sim.running.search import Evaluate, minimize
from opar_sim.spec.schema import Objective, ParamRange
from opar_sim.studies.finalists import Finalist, Trial, confirm_finalists
from opar_sim.studies.seeds import HOLDOUT_SEED, TUNING_SEED

TRAIN_SEED = TUNING_SEED  # training episodes (reports use EVAL_SEEDS)
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
    sampler_seed: int | None = None  # None: the training seed (a tuning replicate sets its own)


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
    evaluated: int = 0  # distinct assignments the trials ran (an integer space repeats some)


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

    sampler_seed = budget.train_seed if budget.sampler_seed is None else budget.sampler_seed
    _, scored = minimize(
        space, score, budget.trials, sampler_seed, sampler=budget.sampler, enqueue=enqueue
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
        evaluated=len(cache),
    )


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
