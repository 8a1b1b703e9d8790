"""``tune``: search a spec's gains with Optuna on its training seed, score them held out.

The study is ``tune(spec, budget, executor)``: the spec's ``[tune]`` table (its space,
objective, trials and seeds) with the budget's overrides, run by the protocol of
``opar_sim.studies.gains`` (every trial on the same training episodes; the best gains
and the spec's own on the held-out seed, paired).  ``plan_tuning`` checks a tuning
before any episode runs (the command prints what it will do, then runs the plan).  With
``out`` it keeps its Optuna journal there, so ``resume`` finishes an interrupted tuning,
and writes ``tune_setup.json``, ``trials.jsonl``, ``best.toml`` and ``tune.json``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from opar_sim.engines.batch import check_batch
from opar_sim.rundir import prepare_out_dir, read_json, write_bytes, write_json, write_jsonl
from opar_sim.running.executors import ExecutorConfig, open_executor
from opar_sim.running.search import (
    JOURNAL_FILE,
    apply_params,
    batch_evaluate,
    executor_evaluate,
    journal_storage,
)
from opar_sim.spec.build import load_spec, parse_spec
from opar_sim.spec.schema import ExperimentSpec, SpecError, TuneSpec
from opar_sim.studies.finalists import Trial
from opar_sim.studies.gains import TuneResult, toml_snippet, tune_gains
from opar_sim.studies.result import IN_PROCESS

Engine = Literal["simpy", "batch"]


@dataclass(frozen=True)
class TuneBudget:
    """What a tuning may spend: the spec's ``[tune]`` table, with these overrides (None: keep)."""

    trials: int | None = None
    train_episodes: int | None = None
    holdout_episodes: int | None = None
    sampler: Literal["tpe", "cmaes"] | None = None


DEFAULT_BUDGET = TuneBudget()  # the spec's [tune] table as it is


@dataclass(frozen=True)
class TunePlan:
    """A tuning checked before any episode runs: the spec and its ``[tune]`` table as run."""

    spec: ExperimentSpec
    settings: TuneSpec  # the spec's [tune] table with the budget applied
    engine: Engine = "simpy"
    finalists: int = 5

    @property
    def data(self) -> dict[str, Any]:
        """The spec's data every trial edits (no ``[tune]``, no ``[sweep]``)."""
        return self.spec.model_dump(exclude={"tune", "sweep"})

    @property
    def holdout_total(self) -> int:
        """The held-out episodes scored after the trials (the defaults and the best)."""
        return 2 * self.settings.holdout_episodes * len(self.spec.controller_list())

    def setup(self) -> dict[str, object]:
        """What the tuning was started with (``tune_setup.json``): resuming must match it."""
        setup: dict[str, object] = {
            "spec": self.data,
            "tune": self.settings.model_dump(mode="json"),
        }
        if self.engine == "batch":  # a batch tuning resumes only as one (SimPy's is unchanged)
            setup["engine"] = {"screen": "batch", "finalists": self.finalists}
        return setup

    def run(
        self,
        executor: ExecutorConfig,
        *,
        storage: Any = None,
        resume: bool = False,
        on_trial: Callable[[Trial], None] | None = None,
        on_episodes: Callable[[int], None] | None = None,
    ) -> TuneResult:
        """Run the trials (screened on the batch engine with ``engine="batch"``) and score.

        Args:
            executor: Where the SimPy engine's episodes run.
            storage: The Optuna storage keeping the trials (``journal_storage``).
            resume: Finish the search kept in ``storage``.
            on_trial: Called with each finished trial.
            on_episodes: Called with the episodes each finished SimPy chunk adds.

        Returns:
            The best gains, every trial and the held-out comparison.
        """
        data = self.data
        batch = self.engine == "batch"
        with open_executor(executor) as pool:
            reference = executor_evaluate(data, pool, executor.parallelism, parse_spec, on_episodes)
            return tune_gains(
                self.settings,
                batch_evaluate(data, parse_spec) if batch else reference,
                self.spec.seed,
                on_trial=on_trial,
                storage=storage,
                resume=resume,
                confirm=reference if batch else None,
                finalists=self.finalists,
            )


def plan_tuning(
    spec: ExperimentSpec,
    budget: TuneBudget = DEFAULT_BUDGET,
    *,
    engine: Engine = "simpy",
    finalists: int = 5,
    label: str | None = None,
) -> TunePlan:
    """Check a tuning before it runs: the ``[tune]`` table, both corners of its space.

    Args:
        spec: The spec with a ``[tune]`` table (its seed is the training seed).
        budget: Overrides of the table's trials, episodes and sampler.
        engine: ``batch``: screen the trials on the batch engine (each corner must run there).
        finalists: With ``engine="batch"``: how many screened trials the SimPy engine re-scores.
        label: How messages name the spec (default: its name).

    Returns:
        The plan.

    Raises:
        SpecError: no ``[tune]`` table, or a corner of the space that is no valid spec.
    """
    label = label or spec.name
    if spec.tune is None:
        raise SpecError(f"{label}: no [tune] table: nothing to tune")
    overrides = (
        ("trials", budget.trials),
        ("sampler", budget.sampler),
        ("train_episodes", budget.train_episodes),
        ("holdout_episodes", budget.holdout_episodes),
    )
    settings = spec.tune.model_copy(update={k: v for k, v in overrides if v})
    plan = TunePlan(spec, settings, engine, finalists)
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


def open_tuning_dir(out: Path, setup: dict[str, object], resume: bool) -> bool:
    """Make the tuning directory; True when there is a tuning in it to resume.

    ``tune_setup.json`` keeps what the tuning was started with; resuming
    checks it, so a changed spec or ``--trials`` is refused instead of mixed in.
    """
    setup_file = out / "tune_setup.json"
    wanted = json.loads(json.dumps(setup))
    if resume and setup_file.is_file():
        if read_json(setup_file) != wanted:
            raise SpecError(f"--resume: the spec differs from the one that started {out}")
        return (out / JOURNAL_FILE).is_file()
    if out.exists() and not out.is_dir():
        raise SpecError(f"--out {out} exists and is not a directory")
    if not resume and (setup_file.exists() or (out / JOURNAL_FILE).exists()):
        raise SpecError(
            f"--out {out} already holds a tuning; use --resume to finish it, or another directory"
        )
    if not resume:
        prepare_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    if (out / JOURNAL_FILE).exists():  # a journal without its setup: not ours to continue
        raise SpecError(f"--resume: {out / JOURNAL_FILE} has no tune_setup.json beside it")
    write_json(setup_file, wanted)
    return False


def write_tuning(out: Path, result: TuneResult) -> None:
    """Write ``trials.jsonl``, ``best.toml`` and ``tune.json`` (``result.to_dict()``)."""
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "trials.jsonl", (asdict(t) for t in result.trials))
    write_bytes(out / "best.toml", toml_snippet(result.best_params).encode())
    write_json(out / "tune.json", result.to_dict())


def tune(
    spec: ExperimentSpec | str | os.PathLike[str],
    budget: TuneBudget = DEFAULT_BUDGET,
    executor: ExecutorConfig = IN_PROCESS,
    *,
    engine: Engine = "simpy",
    finalists: int = 5,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    on_trial: Callable[[Trial], None] | None = None,
) -> TuneResult:
    """Tune a spec's gains on its training seed and score the best on its held-out seed.

    Args:
        spec: A spec with a ``[tune]`` table, or its TOML file.
        budget: Overrides of the table's trials, episodes and sampler.
        executor: Where the SimPy engine's episodes run (default: in this process).
        engine: ``batch``: screen the trials on the lockstep batch engine and re-score the
            ``finalists`` best on the SimPy engine; the held-out seed is scored on SimPy.
        finalists: How many screened trials the SimPy engine re-scores.
        out: A tuning directory: keeps the Optuna journal and writes the result's files.
        resume: Finish the interrupted tuning in ``out``.
        on_trial: Called with each finished trial.

    Returns:
        The best gains, every trial and the held-out comparison (``.table()``, ``.to_dict()``).

    Raises:
        SpecError: no ``[tune]`` table, a space corner that is no valid spec, or an ``out``
            that holds another tuning.
    """
    resolved = spec if isinstance(spec, ExperimentSpec) else load_spec(Path(spec))
    plan = plan_tuning(resolved, budget, engine=engine, finalists=finalists)
    if out is None:
        return plan.run(executor, on_trial=on_trial)
    where = Path(out)
    resumed = open_tuning_dir(where, plan.setup(), resume)
    storage = journal_storage(where / JOURNAL_FILE, resume=resumed)
    result = plan.run(executor, storage=storage, resume=resumed, on_trial=on_trial)
    write_tuning(where, result)
    return result
