"""A fair shoot-out: every controller tuned with the same budget, scored on unseen seeds.

The protocol (``opar-sim shootout SPEC``):

1. **Same budget.**  Every contender is searched by the project's one Optuna
   search (``opar_sim.running.search.minimize``) with the same sampler and sampler
   seed, the same number of trials and the same training episodes
   (``TRAIN_SEED``, episodes 0 .. train_episodes − 1: common random numbers
   within and across contenders).  The space is the controller's documented
   ``SPACE`` (a class attribute in ``controllers/``) plus the shared stop
   confirmation ``guards.confirm`` (1..3 consecutive TERMINATE decisions), so
   no law is denied the confirmation another one has built in
   (``opar_sim.studies.contender``).
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

The objective is the spec's ``[tune.objective]`` (``opar_sim.spec.schema.Objective``:
failure + weighted tokens + replan rate), or failure alone without one.

**Screening** (``shootout --engine batch``): a contender has its trials scored on the
lockstep batch engine (through its array twin, or its scalar law row by row); its
``finalists`` best distinct trials are re-scored on the SimPy engine on the same
training episodes, the lowest SimPy objective wins (``opar_sim.studies.finalists``,
as ``tune --engine batch``), and the held-out seeds are always scored on the SimPy
engine.  A contender the batch engine cannot run is searched on the SimPy engine with
the same trials and episodes.

The study is ``shootout(spec, budget, executor)``; ``plan_shootout`` checks every
contender before any episode runs (the command prints what it found, then runs the plan).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from controllers.registry import CONTROLLERS
from opar_sim.engines.batch import batch_unsupported
from opar_sim.measure.stats import Estimate
from opar_sim.measure.table import TextTable
from opar_sim.rundir import prepare_out_dir, write_json
from opar_sim.running.executors import ExecutorConfig, open_executor
from opar_sim.running.search import apply_params, batch_evaluate, executor_evaluate
from opar_sim.spec.build import load_spec, parse_spec
from opar_sim.spec.schema import ExperimentSpec, Objective, ParamRange, SpecError
from opar_sim.studies.contender import (
    Budget,
    check_space,
    contender_data,
    contender_space,
    corners,
    default_contenders,
    tune_contender,
)
from opar_sim.studies.result import IN_PROCESS
from opar_sim.studies.standings import ALPHA, PairTest, Standing, standings, standings_json

Engine = Literal["simpy", "batch"]
DEFAULT_BUDGET = Budget()  # the documented budget: 40 trials, 300 training, 2000 held out


def _ci(e: Estimate, scale: float = 1.0, fmt: str = "+.1f") -> str:
    return f"{e.mean * scale:{fmt}} [{e.low * scale:{fmt}}, {e.high * scale:{fmt}}]" if e.n else "–"


def _p(p: float) -> str:
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


@dataclass
class ShootoutResult:
    """A finished shoot-out: the standings on the held-out seeds and every pair's test."""

    name: str  # the spec's
    budget: Budget
    objective: Objective
    standings: list[Standing]
    pairs: list[PairTest]
    engine: Engine = "simpy"  # where the trials were scored ("batch": screened)
    finalists: int = 5  # with engine "batch": screened trials re-scored on SimPy
    skipped: dict[str, str] = field(default_factory=dict)  # contender -> why it sat out
    wall_seconds: float = 0.0

    def table(self) -> TextTable:
        """The tuned ranking: held-out success and paired differences against the best."""
        budget = self.budget
        columns = [
            "rank",
            "controller",
            "success % (95% CI)",
            "Δ success pts",
            "b/c",
            "McNemar p",
            "Holm p",
            "objective",
            "Δ objective (95% CI)",
            "tokens",
            "Δ tokens (95% CI)",
        ]
        rows = []
        best = self.standings[0].name if self.standings else ""
        for s in self.standings:
            lo, hi = s.success_ci95
            is_best = s.name == best
            rows.append(
                [
                    str(s.rank),
                    s.name + (" (best)" if is_best else ""),
                    f"{100 * s.success:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]",
                    "" if is_best else f"{100 * s.success_diff:+.1f}",
                    "" if is_best else f"{s.discordant[0]}/{s.discordant[1]}",
                    "" if is_best else _p(s.p_mcnemar),
                    "" if is_best else _p(s.p_holm),
                    f"{s.objective:.4f}",
                    "" if is_best else _ci(s.objective_diff, 1.0, "+.3f"),
                    f"{s.mean_tokens:.0f}",
                    "" if is_best else _ci(s.tokens_diff, 1.0, "+.0f"),
                ]
            )
        notes = [
            f"every contender: {budget.trials} {budget.sampler} trials × {budget.train_episodes} "
            f"training episodes (seed {budget.train_seed}); scored on {budget.holdout_episodes} "
            f"held-out episodes (seed {budget.holdout_seed}), common random numbers",
            "Δ = contender − best, paired by episode; b/c = episodes only it / only the best "
            "solved; exact McNemar p, Holm-adjusted over all pairs; intervals: paired bootstrap",
            f"rank = 1 + contenders with higher success and Holm p < {ALPHA}: equal ranks are ties",
        ]
        return TextTable("shoot-out (tuned, held out)", columns, rows, notes, left=2, bold=False)

    def params_table(self) -> TextTable:
        """Each contender's tuned assignment and its training objective."""
        rows = [
            [
                s.name + (" (batch-screened)" if s.screened == "batch" else ""),
                f"{s.train_score:.4f}",
                ", ".join(
                    f"{path.rsplit('.', 1)[-1]}="
                    f"{value if isinstance(value, int) else f'{value:.3g}'}"
                    for path, value in s.best_params.items()
                ),
            ]
            for s in self.standings
        ]
        notes = (
            [
                "batch-screened: trials scored on the batch engine; train objective: the winning "
                "finalist's SimPy re-score on the training episodes"
            ]
            if any(s.screened == "batch" for s in self.standings)
            else []
        )
        return TextTable(
            "tuned assignments",
            ["controller", "train objective", "best parameters"],
            rows,
            notes,
            left=3,
        )

    def to_dict(self) -> dict[str, Any]:
        """What ``shootout.json`` holds: the protocol, the standings, every pair, the wall time."""
        summary = standings_json(self.budget, self.objective, self.standings, self.pairs)
        summary["protocol"]["engine"] = (
            {"trials": "batch", "finalists": self.finalists, "holdout": "simpy"}
            if self.engine == "batch"
            else {"trials": "simpy", "holdout": "simpy"}
        )
        summary["wall_seconds"] = self.wall_seconds
        return summary


@dataclass(frozen=True)
class Contender:
    """A contender checked before the shoot-out: its spec data, its space, its trials' engine."""

    name: str
    data: dict[str, Any]  # the spec running this controller alone (``contender_data``)
    space: dict[str, ParamRange]
    screened: bool = False  # its trials are scored on the batch engine


@dataclass(frozen=True)
class ShootoutPlan:
    """A shoot-out checked before any episode runs: the contenders that can run the spec."""

    spec: ExperimentSpec
    budget: Budget
    contenders: list[Contender]
    engine: Engine = "simpy"
    finalists: int = 5
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def objective(self) -> Objective:
        """The spec's ``[tune.objective]``, or failure alone without one."""
        return self.spec.tune.objective if self.spec.tune is not None else Objective()

    def run(
        self, executor: ExecutorConfig, on_trial: Callable[[], None] | None = None
    ) -> ShootoutResult:
        """Tune every contender with the same budget, then rank them on the held-out seeds.

        Args:
            executor: Where the SimPy engine's episodes run.
            on_trial: Called after each trial of each contender.

        Returns:
            The standings and every pair's test.
        """
        started = time.perf_counter()
        objective, tuned = self.objective, []
        with open_executor(executor) as pool:
            for c in self.contenders:
                evaluate = executor_evaluate(c.data, pool, executor.parallelism, parse_spec)
                screen = batch_evaluate(c.data, parse_spec) if c.screened else None
                tuned.append(
                    tune_contender(
                        c.name,
                        c.space,
                        evaluate,
                        objective,
                        self.budget,
                        on_trial,
                        screen=screen,
                        finalists=self.finalists,
                    )
                )
        ranked, pairs = standings(tuned, objective, self.budget.holdout_seed)
        return ShootoutResult(
            self.spec.name,
            self.budget,
            objective,
            ranked,
            pairs,
            self.engine,
            self.finalists,
            dict(self.skipped),
            time.perf_counter() - started,
        )


def plan_shootout(
    spec: ExperimentSpec,
    budget: Budget = DEFAULT_BUDGET,
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
        budget: Trials, episodes, sampler and seeds (the same for every contender).
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
            named contender whose space corner is no valid spec, or fewer than two left.
    """
    label = label or spec.name
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
    budget: Budget = DEFAULT_BUDGET,
    executor: ExecutorConfig = IN_PROCESS,
    *,
    controllers: Sequence[str] | None = None,
    engine: Engine = "simpy",
    finalists: int = 5,
    out: str | os.PathLike[str] | None = None,
    on_trial: Callable[[], None] | None = None,
) -> ShootoutResult:
    """Tune every contender with the same budget and rank them on held-out seeds, ties as ties.

    Args:
        spec: The spec (or its TOML file) whose task, agent and limits every contender runs.
        budget: Trials, training and held-out episodes, sampler and seeds.
        executor: Where the SimPy engine's episodes run (default: in this process).
        controllers: The contenders (default: every registered one but the oracle).
        engine: ``batch``: screen the trials on the lockstep batch engine, re-score the
            ``finalists`` best on the SimPy engine; the held-out seed is always SimPy's.
        finalists: How many screened trials the SimPy engine re-scores.
        out: A directory to write ``shootout.json`` (``to_dict()``) in.
        on_trial: Called after each trial.

    Returns:
        The standings (``.table()``, ``.params_table()``, ``.to_dict()``).

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
