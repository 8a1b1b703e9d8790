"""``tune``: tuning as an estimate, not a draw: R replicates, a race, a held-out verdict.

The study is ``tune(spec, budget, executor)``, run from the spec's ``[tune]`` table (its
space, objective, trials and episodes) with the budget's overrides:

1. **Replicates.**  R independent searches (``--replicates``, default 5): replicate r
   trains on ``TUNING_SEEDS[S·R + r]`` with sampler seed S·R + r (``S`` the seed offset,
   ``--seed``; ``opar_sim.studies.seeds.replicate_seeds``), each by the protocol of
   ``opar_sim.studies.gains`` (with ``engine="batch"``: screened on the batch engine, its
   finalists re-scored on SimPy).  The spec's own ``seed`` is not a training seed.
2. **The incumbent is an arm.**  The replicates' distinct best settings and the spec's
   current gains race on fresh episodes of ``CONFIRM_SEED`` by successive halving with
   common random numbers (``opar_sim.studies.race``); one tuned setting is left.
3. **Held out.**  Every setting and the incumbent run on the same episodes of the
   ``[tune]`` hold-out seed (default ``RELEASE_HOLDOUT_SEED``); the race's winner is
   recommended only when it beats the incumbent there (its paired objective interval
   below 0), otherwise the answer is "keep your current gains", with the numbers
   (``opar_sim.studies.recommend``).

``plan_tuning`` checks a tuning before any episode runs (the command prints what it will
do, then runs the plan).  With ``out`` every replicate keeps its Optuna journal
(``replicate_R/optuna.journal``), so ``resume`` finishes an interrupted tuning, and
``tune_setup.json``, ``trials.jsonl``, ``best.toml`` (the recommendation, or the
incumbent, with a comment saying which) and ``tune.json`` are written.
"""

from __future__ import annotations

import inspect
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from controllers.registry import CONTROLLERS
from opar_sim.engines.batch import check_batch
from opar_sim.rundir import prepare_out_dir, read_json, write_bytes, write_json, write_jsonl
from opar_sim.running.executors import ExecutorConfig, Reports, open_executor
from opar_sim.running.journal import JOURNAL_FILE, journal_storage
from opar_sim.running.search import apply_params, batch_evaluate, executor_evaluate
from opar_sim.spec.build import load_spec, parse_spec
from opar_sim.spec.schema import ExperimentSpec, ParamRange, SpecError, TuneSpec
from opar_sim.studies.finalists import Trial
from opar_sim.studies.race import distinct_arms, race_cost, successive_halving
from opar_sim.studies.recommend import TuneResult, score_holdout
from opar_sim.studies.result import IN_PROCESS
from opar_sim.studies.seeds import CONFIRM_SEED, replicate_seeds
from opar_sim.studies.tune_pool import ReplicateJob, run_pooled, search

Engine = Literal["simpy", "batch"]
DEFAULT_REPLICATES = 5


@dataclass(frozen=True)
class TuneBudget:
    """What a tuning may spend: the spec's ``[tune]`` table, with these overrides (None: keep).

    ``replicates`` defaults to ``DEFAULT_REPLICATES``; ``confirm_episodes`` (the race's last
    round) to the held-out episodes.
    """

    trials: int | None = None
    train_episodes: int | None = None
    holdout_episodes: int | None = None
    sampler: Literal["tpe", "cmaes"] | None = None
    replicates: int | None = None
    confirm_episodes: int | None = None


DEFAULT_BUDGET = TuneBudget()  # the spec's [tune] table as it is, five replicates


@dataclass(frozen=True)
class TunePlan:
    """A tuning checked before any episode runs: the spec and its ``[tune]`` table as run."""

    spec: ExperimentSpec
    settings: TuneSpec  # the spec's [tune] table with the budget applied
    engine: Engine = "simpy"
    finalists: int = 5
    replicates: int = DEFAULT_REPLICATES
    confirm_episodes: int = 0  # 0: the held-out episodes
    seed_offset: int = 0

    @property
    def data(self) -> dict[str, Any]:
        """The spec's data every trial edits (no ``[tune]``, no ``[sweep]``)."""
        return self.spec.model_dump(exclude={"tune", "sweep"})

    @property
    def seeds(self) -> list[tuple[int, int]]:
        """(training seed, sampler seed) of each replicate, from the ledger."""
        return replicate_seeds(self.replicates, self.seed_offset)

    @property
    def race_episodes(self) -> int:
        """The episodes of the race's last round."""
        return self.confirm_episodes or self.settings.holdout_episodes

    def setup(self) -> dict[str, object]:
        """What the tuning was started with (``tune_setup.json``): resuming must match it."""
        setup: dict[str, object] = {
            "spec": self.data,
            "tune": self.settings.model_dump(mode="json"),
            "replicates": self.replicates,
            "seed_offset": self.seed_offset,
            "confirm_episodes": self.race_episodes,
        }
        if self.engine == "batch":  # a batch tuning resumes only as one (SimPy's is unchanged)
            setup["engine"] = {"screen": "batch", "finalists": self.finalists}
        return setup

    def run(
        self,
        executor: ExecutorConfig,
        *,
        storages: Sequence[Any] | None = None,
        resume: bool = False,
        on_trial: Callable[[Trial], None] | None = None,
        on_episodes: Callable[[int], None] | None = None,
        on_stage: Callable[[str, int], None] | None = None,
    ) -> TuneResult:
        """Run the replicates, the race and the held-out scoring.

        Args:
            executor: Where the SimPy engine's episodes run.
            storages: One Optuna storage per replicate (``replicate_storages``).
            resume: Finish the searches kept in ``storages``.
            on_trial: Called with each finished trial of every replicate.
            on_episodes: Called with the episodes each finished SimPy chunk adds.
            on_stage: Called with "race" and "held-out scoring" and their episodes, as each
                starts.

        Returns:
            The replicates, the race, the held-out scores and the recommendation.
        """
        settings, batch = self.settings, self.engine == "batch"
        objective, holdout = settings.objective, settings.holdout_seed
        # screened on a process pool: each replicate one job (``tune_pool``); else the
        # trials run here, their SimPy episodes on the executor
        pooled = batch and executor.kind == "process" and executor.parallelism > 1
        reports = Reports.create() if pooled else None
        with open_executor(executor, reports) as pool:
            reference = executor_evaluate(
                self.data, pool, executor.parallelism, parse_spec, on_episodes
            )
            jobs = [
                ReplicateJob(
                    self.data,
                    settings,
                    r,
                    train_seed,
                    sampler_seed,
                    None if storages is None else storages[r],
                    resume,
                    self.finalists,
                    executor.parallelism,
                )
                for r, (train_seed, sampler_seed) in enumerate(self.seeds)
            ]
            if reports is not None:
                replicates = run_pooled(jobs, pool, reports, on_trial)
            else:
                screen = batch_evaluate(self.data, parse_spec) if batch else reference
                confirm = reference if batch else None
                replicates = [search(job, screen, confirm, on_trial) for job in jobs]
            arms = distinct_arms([rep.best_params for rep in replicates])
            if on_stage is not None:
                on_stage("race", race_cost(len(arms) - 1, self.race_episodes))
            race = successive_halving(arms, reference, objective, CONFIRM_SEED, self.race_episodes)
            if on_stage is not None:
                on_stage("held-out scoring", len(arms) * settings.holdout_episodes)
            rows = [reference(a.params, settings.holdout_episodes, holdout) for a in arms]
        return TuneResult(
            name=self.spec.name,
            law=self.spec.controller.name,
            space=dict(settings.space),
            objective=objective,
            incumbent=current_values(self.spec, settings.space),
            replicates=replicates,
            race=race,
            holdout=score_holdout(arms, rows, objective, holdout),
            holdout_seed=holdout,
            engine=self.engine,
            finalists=self.finalists,
            seed_offset=self.seed_offset,
        )


def current_values(spec: ExperimentSpec, space: dict[str, ParamRange]) -> dict[str, float | None]:
    """The incumbent: the spec's value at each path of the space, else the law's default.

    Args:
        spec: The spec.
        space: Dotted path -> range.

    Returns:
        Path -> the value the spec runs with (None when neither the spec nor the
        registered law's signature names one).
    """
    data = spec.model_dump()
    out: dict[str, float | None] = {}
    for path in space:
        node: Any = data
        for key in path.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, int | float) and not isinstance(node, bool):
            out[path] = node
        elif path.startswith("controller.params."):
            out[path] = _law_default(spec.controller.name, path.rsplit(".", 1)[-1])
        else:
            out[path] = None
    return out


def _law_default(name: str, parameter: str) -> float | None:
    factory = CONTROLLERS.factories.get(name)
    try:
        found = inspect.signature(factory).parameters.get(parameter) if factory else None
    except (TypeError, ValueError):
        return None
    default = None if found is None else found.default
    return default if isinstance(default, int | float) and not isinstance(default, bool) else None


def plan_tuning(
    spec: ExperimentSpec,
    budget: TuneBudget = DEFAULT_BUDGET,
    *,
    engine: Engine = "simpy",
    finalists: int = 5,
    seed_offset: int = 0,
    label: str | None = None,
) -> TunePlan:
    """Check a tuning before it runs: the ``[tune]`` table, both corners, the seeds.

    Args:
        spec: The spec with a ``[tune]`` table.
        budget: Overrides of the table's trials, episodes and sampler; the replicates.
        engine: ``batch``: screen the trials on the batch engine (each corner must run there).
        finalists: With ``engine="batch"``: how many screened trials the SimPy engine re-scores.
        seed_offset: S: replicate r trains on ``TUNING_SEEDS[S·R + r]``.
        label: How messages name the spec (default: its name).

    Returns:
        The plan.

    Raises:
        SpecError: no ``[tune]`` table, a corner of the space that is no valid spec, or
            more replicates than the ledger has tuning seeds at that offset.
    """
    label = label or spec.name
    if spec.tune is None:
        raise SpecError(
            f"{label}: no [tune] table: nothing to tune; start from "
            "experiments/tune_pid.toml (the PID's gains on flight_booking) or copy its [tune] "
            "table into this spec"
        )
    overrides = (
        ("trials", budget.trials),
        ("sampler", budget.sampler),
        ("train_episodes", budget.train_episodes),
        ("holdout_episodes", budget.holdout_episodes),
    )
    settings = spec.tune.model_copy(update={k: v for k, v in overrides if v})
    replicates = budget.replicates or DEFAULT_REPLICATES
    try:
        replicate_seeds(replicates, seed_offset)
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    plan = TunePlan(
        spec, settings, engine, finalists, replicates, budget.confirm_episodes or 0, seed_offset
    )
    for corner in ("low", "high"):  # every trial must be a valid spec: check the corners
        params = {
            p: (math.ceil(r.low) if corner == "low" else math.floor(r.high))
            if r.integer
            else getattr(r, corner)
            for p, r in settings.space.items()
        }
        checked = parse_spec(apply_params(plan.data, params), f"{label} [tune.space] at {corner}")
        if engine == "batch":
            check_batch(checked)
    return plan


def replicate_journal(out: Path, replicate: int) -> Path:
    """Replicate r's Optuna journal: ``OUT/replicate_r/optuna.journal``."""
    return out / f"replicate_{replicate}" / JOURNAL_FILE


def replicate_storages(
    out: Path,
    plan: TunePlan,
    resume: bool,
    on_note: Callable[[str], None] | None = None,
) -> list[Any]:
    """One Optuna journal storage per replicate of ``plan``, each in its own directory.

    Args:
        out: The tuning directory.
        plan: The tuning: its replicates, and the search space every journal must hold.
        resume: ``--resume`` was given: a stale lock goes (``on_note`` says so) and a torn
            last line is cut; without it a stale lock is refused.
        on_note: Called with one line for each thing ``--resume`` repaired.

    Returns:
        The storages, in replicate order.
    """
    storages = []
    for r in range(plan.replicates):
        journal = replicate_journal(out, r)
        journal.parent.mkdir(parents=True, exist_ok=True)
        storages.append(
            journal_storage(journal, resume=resume, space=plan.settings.space, on_note=on_note)
        )
    return storages


def _journals(out: Path) -> list[Path]:
    return sorted(out.glob(f"replicate_*/{JOURNAL_FILE}")) + [
        p for p in (out / JOURNAL_FILE,) if p.exists()
    ]


def open_tuning_dir(out: Path, setup: dict[str, object], resume: bool) -> bool:
    """Make the tuning directory; True when there is a tuning in it to resume.

    ``tune_setup.json`` keeps what the tuning was started with; resuming
    checks it, so a changed spec, ``--trials`` or ``--replicates`` is refused
    instead of mixed in.
    """
    setup_file = out / "tune_setup.json"
    wanted = json.loads(json.dumps(setup))
    if resume and setup_file.is_file():
        if read_json(setup_file) != wanted:
            raise SpecError(f"--resume: the spec differs from the one that started {out}")
        return any(p.is_file() for p in _journals(out))
    if out.exists() and not out.is_dir():
        raise SpecError(f"--out {out} exists and is not a directory")
    if not resume and (setup_file.exists() or _journals(out)):
        raise SpecError(
            f"--out {out} already holds a tuning; use --resume to finish it, or another directory"
        )
    if not resume:
        prepare_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    if _journals(out):  # a journal without its setup: not ours to continue
        raise SpecError(f"--resume: {_journals(out)[0]} has no tune_setup.json beside it")
    write_json(setup_file, wanted)
    return False


def write_tuning(out: Path, result: TuneResult) -> None:
    """Write ``trials.jsonl`` (every replicate's), ``best.toml`` and ``tune.json``."""
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(
        out / "trials.jsonl",
        ({"replicate": r.index, **asdict(t)} for r in result.replicates for t in r.trials),
    )
    write_bytes(out / "best.toml", result.best_toml().encode())
    write_json(out / "tune.json", result.to_dict())


def tune(
    spec: ExperimentSpec | str | os.PathLike[str],
    budget: TuneBudget = DEFAULT_BUDGET,
    executor: ExecutorConfig = IN_PROCESS,
    *,
    engine: Engine = "simpy",
    finalists: int = 5,
    seed_offset: int = 0,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    on_trial: Callable[[Trial], None] | None = None,
) -> TuneResult:
    """Tune a spec's gains in R replicates, race them against its own, answer held out.

    Args:
        spec: A spec with a ``[tune]`` table, or its TOML file.
        budget: Overrides of the table's trials, episodes and sampler; the replicates.
        executor: Where the SimPy engine's episodes run (default: in this process).
        engine: ``batch``: screen the trials on the lockstep batch engine and re-score the
            ``finalists`` best on the SimPy engine; the race and the held-out seed run on
            SimPy.
        finalists: How many screened trials the SimPy engine re-scores.
        seed_offset: S: replicate r trains on ``TUNING_SEEDS[S·R + r]``, sampler seed S·R + r.
        out: A tuning directory: keeps the replicates' Optuna journals and writes the files.
        resume: Finish the interrupted tuning in ``out``.
        on_trial: Called with each finished trial.

    Returns:
        The replicates, the race, the held-out scores and the recommendation
        (``.table()``, ``.to_dict()``).

    Raises:
        SpecError: no ``[tune]`` table, a space corner that is no valid spec, too many
            replicates for the ledger, or an ``out`` that holds another tuning.
    """
    resolved = spec if isinstance(spec, ExperimentSpec) else load_spec(Path(spec))
    plan = plan_tuning(
        resolved, budget, engine=engine, finalists=finalists, seed_offset=seed_offset
    )
    if out is None:
        return plan.run(executor, on_trial=on_trial)
    where = Path(out)
    resumed = open_tuning_dir(where, plan.setup(), resume)
    storages = replicate_storages(where, plan, resume)
    result = plan.run(executor, storages=storages, resume=resumed, on_trial=on_trial)
    write_tuning(where, result)
    return result
