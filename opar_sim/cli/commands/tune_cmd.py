"""``opar-sim tune SPEC``: R tuning replicates, raced against the spec's gains, judged held out."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.common import (
    MAX_REPLICATES,
    MAX_TRIALS,
    UsageError,
    add_executor_flags,
    default_out,
    executor_config,
    int_at_least,
    int_between,
    require_backends,
)
from opar_sim.cli.render import progress_bar
from opar_sim.extras import install_hint
from opar_sim.spec.build import load_spec
from opar_sim.spec.schema import ExperimentSpec
from opar_sim.studies.recommend import TuneResult
from opar_sim.studies.tune import (
    DEFAULT_REPLICATES,
    TuneBudget,
    TunePlan,
    open_tuning_dir,
    plan_tuning,
    replicate_storages,
    write_tuning,
)

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

NAME = "tune"
HELP = (
    "tune controller gains in R replicates, race them against the spec's own and recommend "
    "new gains only when they beat them held out"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """A spec with a ``[tune]`` table, overrides of its trials and sampler, replicates, ``--out``.

    Also the executor flags: the trials' episodes run there.
    """
    parser.add_argument("spec", help="experiment spec (TOML) with a [tune] table")
    parser.add_argument(
        "--trials",
        type=int_between(1, MAX_TRIALS),
        help=f"override [tune] trials (at most {MAX_TRIALS:,})",
    )
    parser.add_argument("--sampler", choices=("tpe", "cmaes"), help="override [tune] sampler")
    parser.add_argument(
        "--replicates",
        type=int_between(1, MAX_REPLICATES),
        default=DEFAULT_REPLICATES,
        help=f"independent tuning replicates (default {DEFAULT_REPLICATES})",
    )
    parser.add_argument(
        "--seed",
        type=int_at_least(0),
        default=0,
        help="seed offset S: replicate r trains on the ledger's tuning seed S·R + r with "
        "sampler seed S·R + r (default 0: tuning seeds 100..; the spec's seed is not used)",
    )
    parser.add_argument("--out", type=Path, help="output directory (default: runs/NAME/TIMESTAMP)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="finish an interrupted tuning in --out (its replicates' Optuna journals)",
    )
    parser.add_argument(
        "--engine",
        choices=("simpy", "batch"),
        default="simpy",
        help="simpy: every trial on the reference engine (default); batch: screen the trials "
        "on the lockstep batch engine, then re-score the --finalists best on the SimPy engine "
        "(same training seed); the race and the held-out seeds run on SimPy (docs/batch.md)",
    )
    parser.add_argument(
        "--finalists",
        type=int_at_least(1),
        default=5,
        help="with --engine batch: how many screened trials the SimPy engine re-scores (5)",
    )
    add_executor_flags(parser)


def run(args: argparse.Namespace, console: Console) -> int:
    """Tune in replicates, race, score held out; print the recommendation and write the files.

    Writes ``trials.jsonl``, ``best.toml`` (the recommendation or the incumbent),
    ``tune.json`` and the history (and, with two or more gains, landscape) figures.

    Returns:
        0; a missing optuna or ``[tune]`` table is a usage error (exit 2).
    """
    _require_optuna()
    spec = _tunable(args.spec)
    if args.resume and args.out is None:
        raise UsageError("--resume needs --out DIR: the tuning directory to finish")
    out: Path = args.out or default_out(f"{spec.name}-tune")
    config = executor_config(args)
    require_backends(spec)
    budget = TuneBudget(trials=args.trials, sampler=args.sampler, replicates=args.replicates)
    plan = plan_tuning(
        spec,
        budget,
        engine=args.engine,
        finalists=args.finalists,
        seed_offset=args.seed,
        label=args.spec,
    )
    console.print(_header(plan))
    resume = open_tuning_dir(out, plan.setup(), args.resume)
    storages = replicate_storages(out, plan, args.resume, _note(console))
    if args.resume and not resume:
        _note(console)(f"{out} holds no Optuna journal: the tuning starts from its first trial")
    with progress_bar(console, unit="") as bar:
        result = plan.run(config, storages=storages, resume=resume, **_progress(bar, plan))
    write_tuning(out, result)
    _show(console, out, result, _figures(out, plan, result))
    return 0


def _tunable(path: str) -> ExperimentSpec:
    """The spec at ``path``, refused in one line when it has no ``[tune]`` table."""
    spec = load_spec(path)
    if spec.tune is None:
        raise UsageError(
            f"{path}: no [tune] table: nothing to tune; start from "
            "experiments/tune_pid.toml (the PID's gains on flight_booking) or copy its [tune] "
            "table into this spec"
        )
    return spec


def _note(console: Console) -> Callable[[str], None]:
    """Print one ``resume:`` line as plain text (paths are shown, never parsed as markup)."""
    return lambda note: console.print(f"resume: {note}", markup=False, highlight=False)


def _require_optuna() -> None:
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise UsageError(f"optuna is not installed: {install_hint('tune')}") from None


def _progress(bar: Progress, plan: TunePlan) -> dict[str, Callable[..., None]]:
    """The trials' bar; then one bar for the race and one for the held-out scoring."""
    job = bar.add_task("trials", total=plan.settings.trials * plan.replicates)
    stage: list[TaskID] = []

    def on_stage(name: str, total: int) -> None:
        stage.append(bar.add_task(name, total=total))

    def on_chunk(episodes: int) -> None:
        if stage:
            bar.advance(stage[-1], episodes)

    def on_trial(_trial: Any) -> None:
        bar.advance(job)

    return {"on_trial": on_trial, "on_episodes": on_chunk, "on_stage": on_stage}


def _header(plan: TunePlan) -> str:
    settings = plan.settings
    seeds = plan.seeds
    return (
        f"[bold]{plan.spec.name}[/]: {plan.replicates} replicates × {settings.trials} trials "
        f"({settings.sampler}) × {settings.train_episodes} training episodes (tuning seeds "
        f"{seeds[0][0]}–{seeds[-1][0]}, sampler seeds {seeds[0][1]}–{seeds[-1][1]}); race on "
        f"{plan.race_episodes} episodes; held out: {settings.holdout_episodes} episodes (seed "
        f"{settings.holdout_seed})"
        + (
            f"; trials screened on the batch engine, the {plan.finalists} best re-scored "
            "on the SimPy engine"
            if plan.engine == "batch"
            else ""
        )
    )


def _show(console: Console, out: Path, result: TuneResult, figures: list[str]) -> None:
    console.print(result.replicates_table())
    console.print(result.race_table())
    console.print(result.arms_table())
    console.print(result.table())
    console.print(result.best_toml(), markup=False, highlight=False)
    console.print(f"tune directory: [green]{escape(str(out))}[/]")
    for figure in figures:
        console.print(f"figure: [green]{escape(str(figure))}[/]")


def _figures(out: Path, plan: TunePlan, result: TuneResult) -> list[str]:
    """The search history and landscape of the replicate that found the race's winner."""
    from opar_sim.figures import tuning  # matplotlib only when drawing
    from opar_sim.figures.style import save  # matplotlib only when drawing

    found = result.race.winner.replicates
    rep = result.replicates[found[0] if found else 0]
    name = f"{plan.spec.name}, replicate r{rep.index} (tuning seed {rep.train_seed})"
    numbers = [t.number for t in rep.trials]
    scores = [t.score for t in rep.trials]
    inc = result.incumbent_score
    current = (inc.objective, f"{inc.n} held-out episodes, seed {result.holdout_seed}")
    history = tuning.tune_history(numbers, scores, f"{name}: optimisation history", current)
    figures = save(history, str(out / "history"))
    ranked = sorted(plan.settings.space, key=lambda p: -rep.importances.get(p, 0.0))
    if len(ranked) >= 2:
        a, b = ranked[0], ranked[1]
        fig = tuning.tune_landscape(
            [t.params[a] for t in rep.trials],
            [t.params[b] for t in rep.trials],
            scores,
            (a, b),
            (rep.best_params[a], rep.best_params[b]),
            f"{name}: objective over the two most important gains",
            (plan.settings.space[a].log, plan.settings.space[b].log),
        )
        figures += save(fig, str(out / "landscape"))
    return figures
