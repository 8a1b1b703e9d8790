"""Every controller's shipped defaults, re-fitted on tuning seeds that no report uses.

The protocol (``opar-sim refit``), the same for every controller:

* **Tasks**: the two shoot-out tasks, ``experiments/flight_booking.toml`` and
  ``experiments/research_qa_faults.toml``, weighted equally (the same number
  of episodes from each): defaults are one set per controller for every task.
* **Seeds**: the tuning seed ``TUNING_SEED`` (100, the shoot-out's training
  seed); reports quote spec seeds 0-3, the claims tests seeds 11 and 12, the
  held-out checks seed 1,000,003.  No default is fitted on a seed a report uses.
* **Search**: the project's one Optuna search (``opar_sim.running.search.minimize``)
  over the controller's documented ``SPACE``, with the same sampler, sampler
  seed, trials and episodes for every controller; the previous defaults are
  the first trial, so a fit can only improve the training objective.
* **Objective**: ``OBJECTIVE`` = 1 − success + 3·10⁻⁶ · tokens per episode
  (failures first; the token term, about 0.01 per 3,000 tokens, breaks ties
  in favour of cheaper laws).  The shared stop confirmation
  (``guards.confirm``) is a guard, not a controller parameter: it stays 1
  here and is searched by the shoot-out.
* **Rounding**: the best assignment is rounded to two significant digits
  (integers stay integers) for readable defaults; the rounded values are what
  ships, and what the held-out check scores.
* **Check**: the rounded fit and the previous defaults on held-out episodes
  (``HOLDOUT_SEED``) of both tasks, paired: the success difference with exact
  McNemar, the objective difference with a paired bootstrap interval.

The record (``docs/defaults-fit.json``) is what the controllers' signatures
must equal; ``tests/studies/test_refit.py`` checks that.  The study is
``refit(specs, budget, executor)``; its result's ``to_dict()`` is the record.
"""

from __future__ import annotations

import inspect
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from controllers.registry import CONTROLLERS
from opar_sim.measure.paired import paired_against, paired_columns
from opar_sim.measure.stats import Estimate, mcnemar_exact
from opar_sim.measure.table import TextTable
from opar_sim.running.executors import ExecutorConfig, open_executor
from opar_sim.running.search import Evaluate, executor_evaluate
from opar_sim.spec.build import load_spec, parse_spec
from opar_sim.spec.schema import ExperimentSpec, Objective, ParamRange, SpecError
from opar_sim.studies.contender import (
    EXCLUDED,
    TRAIN_SEED,
    Budget,
    contender_data,
    contender_space,
    tune_contender,
)
from opar_sim.studies.result import IN_PROCESS
from opar_sim.studies.seeds import HOLDOUT_SEED

TUNING_SEED = TRAIN_SEED
SPECS = ("experiments/flight_booking.toml", "experiments/research_qa_faults.toml")
OBJECTIVE = Objective(failure=1.0, tokens=3e-6)
RECORD = "docs/defaults-fit.json"


def significant(value: float, digits: int = 2) -> float:
    """``value`` rounded to ``digits`` significant digits (0 stays 0).

    Args:
        value: The number to round.
        digits: Significant digits to keep.

    Returns:
        The rounded number.
    """
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


def rounded(params: Mapping[str, float], space: Mapping[str, ParamRange]) -> dict[str, float]:
    """A fitted assignment made readable: integers stay integers, the rest 2 digits.

    Args:
        params: Dotted path -> fitted value.
        space: The space it was searched in (which parameters are integers).

    Returns:
        The rounded assignment, clipped to the space.
    """
    out: dict[str, float] = {}
    for path, value in params.items():
        r = space[path]
        if r.integer:
            out[path] = round(value)
        else:
            out[path] = min(max(significant(float(value)), r.low), r.high)
    return out


def shipped_defaults(factory: Any) -> dict[str, float]:
    """The defaults a controller ships for the parameters of its ``SPACE``.

    Args:
        factory: A registered controller class.

    Returns:
        ``controller.params.NAME`` -> the signature's default.
    """
    signature = inspect.signature(factory)
    space = contender_space(factory, confirm=False)
    return {
        path: signature.parameters[path.rsplit(".", 1)[1]].default
        for path in space
        if path.rsplit(".", 1)[1] in signature.parameters
    }


def pooled(evaluates: Sequence[Evaluate]) -> Evaluate:
    """One ``Evaluate`` over several specs: each runs the same episodes, rows concatenated."""

    def evaluate(params: dict[str, float] | None, episodes: int, seed: int) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for spec_index, run in enumerate(evaluates):
            rows += [r | {"spec": spec_index} for r in run(params, episodes, seed)]
        return rows

    return evaluate


@dataclass
class Refit:
    """One controller's re-fit: previous and fitted defaults, and the held-out check."""

    name: str
    previous: dict[str, float]
    fitted: dict[str, float]  # rounded: what ships
    train_previous: float
    train_fitted: float
    holdout_episodes: int
    success_previous: float
    success_fitted: float
    discordant: tuple[int, int]  # (only the fit succeeded, only the previous did)
    p_mcnemar: float
    objective_diff: Estimate  # fitted − previous, held out

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the record's entry for this controller)."""
        return {
            "name": self.name,
            "previous": self.previous,
            "fitted": self.fitted,
            "train_objective": {"previous": self.train_previous, "fitted": self.train_fitted},
            "holdout": {
                "episodes": self.holdout_episodes,
                "success_previous": self.success_previous,
                "success_fitted": self.success_fitted,
                "only_fitted": self.discordant[0],
                "only_previous": self.discordant[1],
                "p_mcnemar": self.p_mcnemar,
                "objective_diff": self.objective_diff.to_dict(),
            },
        }


def refit_controller(
    name: str,
    factory: Any,
    evaluate: Evaluate,
    trials: int,
    train_episodes: int,
    holdout_episodes: int,
    on_trial: Callable[[], None] | None = None,
) -> Refit:
    """Re-fit one controller's defaults on the tuning seed and check them held out.

    Args:
        name: The controller's registered name.
        factory: Its class (``SPACE`` and signature defaults are read).
        evaluate: Runs the pooled specs (``pooled``) with given parameters.
        trials: Optuna trials.
        train_episodes: Episodes per spec and trial on ``TUNING_SEED``.
        holdout_episodes: Episodes per spec on ``HOLDOUT_SEED``.
        on_trial: Called after each trial.

    Returns:
        The previous and the fitted (rounded) defaults with their held-out comparison.
    """
    space = contender_space(factory, confirm=False)
    previous = shipped_defaults(factory)
    budget = Budget(trials, train_episodes, holdout_episodes, "tpe", TUNING_SEED, HOLDOUT_SEED)
    tuned = tune_contender(
        name,
        space,
        evaluate,
        OBJECTIVE,
        budget,
        on_trial,
        enqueue=[previous],
        finalize=lambda best: rounded(best, space),
    )
    fitted = tuned.best_params
    old_rows = evaluate(previous, holdout_episodes, HOLDOUT_SEED)
    try:  # pooled rows pair by (spec, episode)
        cols = paired_columns([tuned.holdout_rows, old_rows], ["fitted", "previous"], OBJECTIVE)
    except ValueError:
        raise ValueError(f"{name}: the held-out runs do not pair") from None
    pair = paired_against(cols, 0, 1, HOLDOUT_SEED)
    refit_rows = evaluate(fitted, train_episodes, TUNING_SEED)  # rounded: maybe no trial's
    return Refit(
        name=name,
        previous=previous,
        fitted=fitted,
        train_previous=tuned.trial_scores[0],
        train_fitted=float(np.mean([OBJECTIVE.episode_score(r) for r in refit_rows])),
        holdout_episodes=pair.n,
        success_previous=cols.rate(1),
        success_fitted=cols.rate(0),
        discordant=pair.discordant,
        p_mcnemar=mcnemar_exact(*pair.discordant),
        objective_diff=pair.objective_diff,
    )


@dataclass(frozen=True)
class RefitBudget:
    """What every controller's re-fit may spend (episodes per task; the same for each)."""

    trials: int = 40
    train_episodes: int = 300  # per task and trial, on TUNING_SEED
    holdout_episodes: int = 1000  # per task, on HOLDOUT_SEED


DEFAULT_BUDGET = RefitBudget()  # the budget docs/defaults-fit.json was fitted with


def _params(params: dict[str, float]) -> str:
    return " ".join(f"{k.rsplit('.', 1)[1]}={v:g}" for k, v in params.items())


@dataclass
class RefitResult:
    """Every controller's re-fit: the record the shipped signatures must match."""

    specs: list[str]  # the tasks' spec files, pooled
    budget: RefitBudget
    controllers: list[Refit]
    wall_seconds: float = field(default=0.0, compare=False)

    def table(self) -> TextTable:
        """Previous and fitted defaults, training objectives and the paired held-out check."""
        rows = []
        for r in self.controllers:
            e = r.objective_diff
            rows.append(
                [
                    r.name,
                    _params(r.previous),
                    _params(r.fitted),
                    f"{r.train_previous:.4f} → {r.train_fitted:.4f}",
                    f"{100 * r.success_previous:.1f} → {100 * r.success_fitted:.1f}",
                    f"{r.discordant[0]}/{r.discordant[1]}",
                    f"{r.p_mcnemar:.3f}",
                    f"{e.mean:+.4f} [{e.low:+.4f}, {e.high:+.4f}]",
                ]
            )
        return TextTable(
            "defaults re-fitted on the tuning seed",
            [
                "controller",
                "previous",
                "fitted (ships)",
                "train objective",
                "held-out success %",
                "b/c",
                "McNemar p",
                "Δ objective held out (95% CI)",
            ],
            rows,
            [
                "objective: 1 − success + 3e-6·tokens, pooled over flight_booking and "
                "research_qa_faults; b/c: held-out episodes only the fit / only the previous "
                "defaults solved; Δ < 0: the fit is better"
            ],
            left=3,
        )

    def to_dict(self) -> dict[str, Any]:
        """The record (``docs/defaults-fit.json``): the protocol and every controller's fit."""
        return {
            "protocol": {
                "specs": list(self.specs),
                "tuning_seed": TUNING_SEED,
                "holdout_seed": HOLDOUT_SEED,
                "trials": self.budget.trials,
                "sampler": "tpe",
                "train_episodes_per_task": self.budget.train_episodes,
                "holdout_episodes_per_task": self.budget.holdout_episodes,
                "objective": OBJECTIVE.model_dump(),
                "rounding": "two significant digits; integers stay integers",
            },
            "controllers": [r.to_dict() for r in self.controllers],
        }


def fitted_controllers() -> list[str]:
    """The controllers a re-fit covers: every registered one with a ``SPACE``, but the oracle."""
    return [
        n
        for n in CONTROLLERS.names()
        if n not in EXCLUDED and getattr(CONTROLLERS.factories[n], "SPACE", None)
    ]


@dataclass(frozen=True)
class RefitPlan:
    """A re-fit checked before any episode runs: the controllers, the tasks' specs, the budget."""

    names: list[str]
    paths: list[str]
    specs: list[ExperimentSpec]
    budget: RefitBudget = DEFAULT_BUDGET

    def run(
        self, executor: ExecutorConfig, on_trial: Callable[[], None] | None = None
    ) -> RefitResult:
        """Re-fit each controller on the pooled tasks and check it on the held-out seed.

        Args:
            executor: Where the episodes run.
            on_trial: Called after each trial of each controller.

        Returns:
            Every controller's re-fit.
        """
        started, b = time.perf_counter(), self.budget
        results: list[Refit] = []
        with open_executor(executor) as pool:
            for name in self.names:
                evaluate = pooled(
                    [
                        executor_evaluate(
                            contender_data(s.model_dump(), name) | {"controller": {"name": name}},
                            pool,
                            executor.parallelism,
                            parse_spec,
                        )
                        for s in self.specs
                    ]
                )
                factory = CONTROLLERS.factories[name]
                results.append(
                    refit_controller(
                        name,
                        factory,
                        evaluate,
                        b.trials,
                        b.train_episodes,
                        b.holdout_episodes,
                        on_trial,
                    )
                )
        return RefitResult(self.paths, b, results, time.perf_counter() - started)


def plan_refit(
    specs: Sequence[str | os.PathLike[str]] = SPECS,
    budget: RefitBudget = DEFAULT_BUDGET,
    *,
    controllers: Sequence[str] | None = None,
) -> RefitPlan:
    """Load the tasks' specs and check the controllers before any episode runs.

    Args:
        specs: The tasks' spec files, pooled with equal weight.
        budget: Trials and episodes per task.
        controllers: The controllers to re-fit (default: ``fitted_controllers()``).

    Returns:
        The plan.

    Raises:
        SpecError: a spec that does not load, or a controller with no ``SPACE`` to fit.
    """
    fitted = fitted_controllers()
    names = list(controllers) if controllers is not None else fitted
    if not names or any(n not in fitted for n in names):
        raise SpecError(f"controllers: choose among {', '.join(fitted)}")
    return RefitPlan(names, [str(p) for p in specs], [load_spec(Path(p)) for p in specs], budget)


def refit(
    specs: Sequence[str | os.PathLike[str]] = SPECS,
    budget: RefitBudget = DEFAULT_BUDGET,
    executor: ExecutorConfig = IN_PROCESS,
    *,
    controllers: Sequence[str] | None = None,
    on_trial: Callable[[], None] | None = None,
) -> RefitResult:
    """Re-fit controllers' defaults on the tuning seed and check them on the held-out seed.

    Args:
        specs: The tasks' spec files (default: the two shoot-out tasks), pooled.
        budget: Trials and episodes per task.
        executor: Where the episodes run (default: in this process).
        controllers: The controllers (default: every one with a ``SPACE``, but the oracle).
        on_trial: Called after each trial.

    Returns:
        Every controller's previous and fitted defaults (``.table()``, ``.to_dict()``: the
        record ``docs/defaults-fit.json`` holds).
    """
    return plan_refit(specs, budget, controllers=controllers).run(executor, on_trial)
