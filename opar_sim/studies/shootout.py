"""A fair shoot-out, replicated: every law tuned R times on equal terms, scored on unseen seeds.

The protocol (``opar-sim shootout SPEC``):

1. **Replicates.**  Tuning is a random procedure, so every law is tuned R times
   (``replicates``, default 5): replicate r trains on the ledger's tuning seed S·R + r
   with sampler seed S·R + r (``opar_sim.studies.seeds.replicate_seeds``), the same seeds
   for every law (common random numbers within and across laws).
2. **Equal search.**  Each replicate searches the law's documented ``SPACE`` plus the
   shared stop confirmation ``guards.confirm`` (``opar_sim.studies.contender``) with the
   project's one Optuna search; the budget is counted in simulated episodes and scales
   with the space: trials = k × d (``trials_per_dim`` k, d the dimension including the
   confirmation), each trial ``train_episodes`` episodes.  What a law brings fitted outside
   this budget (``bayes``'s chain, ``sprt``'s tables) is disclosed in the printed protocol.
3. **Defaults beside the tuned arms.**  Every replicate's best setting and every law's
   shipped defaults run on the same held-out episodes (``RELEASE_HOLDOUT_SEED``).
4. **Replicate-level comparisons, ties as ties** (``opar_sim.studies.replicated``): per
   law the mean, sd and min–max across replicates of held-out success, tokens and
   REPLANs; replicate r of a law against replicate r of the leader (R paired differences,
   t interval with R − 1 df), Holm over the comparisons to the leader; a law is behind
   only when that adjusted comparison says so; ranks share ties, and "(best)" marks only a
   leader significantly ahead of every other law.

The objective each search minimises is the spec's ``[tune.objective]`` (failure +
weighted tokens + replan rate), or failure alone without one.

**Screening** (``shootout --engine batch``): a law's trials are scored on the lockstep batch
engine (its array twin, or its scalar law row by row); its ``finalists`` best distinct
trials are re-scored on the SimPy engine on the same training episodes and the lowest wins
(``opar_sim.studies.finalists``); held-out episodes always run on SimPy.  A law the batch
engine cannot run is searched on SimPy with the same trials and episodes.

The study is ``shootout(spec, budget, executor)``; ``plan_shootout`` checks every law
before any episode runs (the command prints what it found, then runs the plan).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controllers.registry import CONTROLLERS
from opar_sim.engines.batch import batch_unsupported
from opar_sim.rundir import prepare_out_dir, write_json
from opar_sim.running.executors import ExecutorConfig, Reports, open_executor
from opar_sim.running.search import apply_params
from opar_sim.spec.build import build, load_spec, parse_spec
from opar_sim.spec.schema import ExperimentSpec, Objective, ParamRange, SpecError
from opar_sim.studies.contender import (
    Budget,
    check_space,
    contender_data,
    contender_space,
    controller_space,
    corners,
    default_contenders,
)
from opar_sim.studies.replicated import LawArms, rank_laws
from opar_sim.studies.result import IN_PROCESS
from opar_sim.studies.shootout_pool import ReplicateJob, run_here, run_pooled
from opar_sim.studies.shootout_report import Engine, ShootoutBudget, ShootoutResult

DEFAULT_BUDGET = ShootoutBudget()  # 5 replicates, 5 × d trials × 300 episodes, 2000 held out

__all__ = [
    "DEFAULT_BUDGET",
    "ShootoutBudget",
    "ShootoutPlan",
    "ShootoutResult",
    "controller_space",
    "shootout",
]


@dataclass(frozen=True)
class Contender:
    """A law checked before the shoot-out: its spec data, its space, its trials' engine."""

    name: str
    data: dict[str, Any]  # the spec running this controller alone (``contender_data``)
    space: dict[str, ParamRange]
    screened: bool = False  # its trials are scored on the batch engine


@dataclass(frozen=True)
class ShootoutPlan:
    """A shoot-out checked before any episode runs: the laws that can run the spec."""

    spec: ExperimentSpec
    budget: ShootoutBudget
    contenders: list[Contender]
    engine: Engine = "simpy"
    finalists: int = 5
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def objective(self) -> Objective:
        """The spec's ``[tune.objective]``, or failure alone without one."""
        return self.spec.tune.objective if self.spec.tune is not None else Objective()

    @property
    def total_trials(self) -> int:
        """Every trial of every replicate of every law."""
        b = self.budget
        return sum(b.replicates * b.trials(len(c.space)) for c in self.contenders)

    def run(
        self, executor: ExecutorConfig, on_trial: Callable[[], None] | None = None
    ) -> ShootoutResult:
        """Tune every law R times, score every setting and the defaults held out, rank.

        Args:
            executor: Where the SimPy engine's episodes run.
            on_trial: Called after each trial of each replicate of each law.

        Returns:
            The ranking with its budget and what each law spent.
        """
        started = time.perf_counter()
        b = self.budget
        jobs = [
            [
                ReplicateJob(
                    c.name,
                    c.data,
                    c.space,
                    c.screened,
                    self.objective,
                    Budget(
                        b.trials(len(c.space)),
                        b.train_episodes,
                        b.holdout_episodes,
                        b.sampler,
                        train_seed,
                        b.holdout_seed,
                        sampler_seed,
                    ),
                    self.finalists,
                    executor.parallelism,
                )
                for train_seed, sampler_seed in b.seeds
            ]
            for c in self.contenders
        ]
        pooled = executor.kind == "process" and executor.parallelism > 1
        reports = Reports.create() if pooled else None
        with open_executor(executor, reports) as pool:
            if reports is not None:  # each replicate a job of the pool (``shootout_pool``)
                tuned, defaults = run_pooled(jobs, pool, reports, on_trial)
            else:
                tuned, defaults = run_here(jobs, pool, on_trial)
        laws, spent = [], {}
        for c, replicates, rows in zip(self.contenders, tuned, defaults, strict=True):
            trials = b.trials(len(c.space))
            laws.append(LawArms(c.name, c.space, trials, replicates, rows))
            evaluated = sum(t.evaluated for t in replicates) * b.train_episodes
            refits = sum(len(t.finalists) for t in replicates) * b.train_episodes
            spent[c.name] = {
                "training_episodes": evaluated,
                "training_engine": "batch" if c.screened else "simpy",
                "finalist_episodes_simpy": refits,
                "holdout_episodes": (b.replicates + 1) * b.holdout_episodes,
            }
        objective = self.objective
        return ShootoutResult(
            self.spec.name,
            b,
            objective,
            rank_laws(laws, objective),
            self.engine,
            self.finalists,
            {c.name: c.screened for c in self.contenders},
            spent,
            dict(self.skipped),
            time.perf_counter() - started,
            tuple(line for c in self.contenders for line in build(parse_spec(c.data)).cautions),
        )


def plan_shootout(
    spec: ExperimentSpec,
    budget: ShootoutBudget = DEFAULT_BUDGET,
    *,
    controllers: Sequence[str] | None = None,
    engine: Engine = "simpy",
    finalists: int = 5,
    label: str | None = None,
    on_skip: Callable[[str, str], None] | None = None,
    on_unscreened: Callable[[str, str], None] | None = None,
) -> ShootoutPlan:
    """Check every contender's space and both its corners before any episode runs.

    Args:
        spec: The spec whose task, agent and limits every contender runs.
        budget: The budget rule, episodes, replicates and seeds (the same for every law).
        controllers: The contenders (registered names); default every one but the oracle,
            and then a law that cannot run the spec sits out instead of failing.
        engine: ``batch``: screen each contender's trials on the batch engine where it can.
        finalists: With ``engine="batch"``: screened trials the SimPy engine re-scores.
        label: How messages name the spec (default: its name).
        on_skip: Called with a default contender that sits out and why.
        on_unscreened: Called with a contender the batch engine cannot screen and why.

    Returns:
        The plan.

    Raises:
        SpecError: an unknown controller, a ``SPACE`` naming an unknown parameter, a
            named contender whose space corner is no valid spec, fewer than two left, or
            more replicates than the ledger has tuning seeds at that offset.
    """
    label = label or spec.name
    try:
        budget.seeds  # noqa: B018 - the ledger must hold every replicate's seeds
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    known = CONTROLLERS.names()
    names = list(controllers) if controllers is not None else default_contenders(CONTROLLERS)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SpecError(f"unknown controller(s) {', '.join(unknown)}; known: {', '.join(known)}")
    data, contenders, skipped = spec.model_dump(), [], {}
    for name in names:
        factory = CONTROLLERS.factories[name]
        try:
            check_space(name, factory)
        except ValueError as exc:
            raise SpecError(str(exc)) from None
        base, space = contender_data(data, name), contender_space(factory)
        try:
            checked = [  # every trial must be a valid spec
                parse_spec(apply_params(base, corner), f"{label}: {name} space corner")
                for corner in corners(space)
            ]
        except SpecError as exc:
            if controllers is not None:  # asked for by name: the user must know
                raise
            skipped[name] = str(exc)  # by default, a law that cannot run this spec sits out
            if on_skip is not None:
                on_skip(name, str(exc))
            continue
        problem = (
            next(filter(None, map(batch_unsupported, checked)), None) if engine == "batch" else None
        )
        if problem is not None and on_unscreened is not None:
            on_unscreened(name, problem)  # searched on the SimPy engine, same trials and episodes
        screened = engine == "batch" and problem is None
        contenders.append(Contender(name, base, space, screened))
    if len(contenders) < 2:
        raise SpecError("fewer than two controllers can run this spec")
    return ShootoutPlan(spec, budget, contenders, engine, finalists, skipped)


def shootout(
    spec: ExperimentSpec | str | os.PathLike[str],
    budget: ShootoutBudget = DEFAULT_BUDGET,
    executor: ExecutorConfig = IN_PROCESS,
    *,
    controllers: Sequence[str] | None = None,
    engine: Engine = "simpy",
    finalists: int = 5,
    out: str | os.PathLike[str] | None = None,
    on_trial: Callable[[], None] | None = None,
) -> ShootoutResult:
    """Tune every law R times on equal terms, rank them held out by replicates, ties as ties.

    Args:
        spec: The spec (or its TOML file) whose task, agent and limits every contender runs.
        budget: The budget rule (trials = k × d), episodes, replicates, sampler and seeds.
        executor: Where the SimPy engine's episodes run (default: in this process).
        controllers: The contenders (default: every registered one but the oracle).
        engine: ``batch``: screen the trials on the lockstep batch engine, re-score the
            ``finalists`` best on the SimPy engine; the held-out seed is always SimPy's.
        finalists: How many screened trials the SimPy engine re-scores.
        out: A directory to write ``shootout.json`` (``to_dict()``) in.
        on_trial: Called after each trial.

    Returns:
        The ranking (``.table()``, ``.defaults_table()``, ``.comparisons_table()``,
        ``.params_table()``, ``.to_dict()``).

    Raises:
        SpecError: see ``plan_shootout``.
    """
    resolved = spec if isinstance(spec, ExperimentSpec) else load_spec(Path(spec))
    plan = plan_shootout(
        resolved, budget, controllers=controllers, engine=engine, finalists=finalists
    )
    if out is not None:
        prepare_out_dir(Path(out))
    result = plan.run(executor, on_trial)
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        write_json(Path(out) / "shootout.json", result.to_dict())
    return result
