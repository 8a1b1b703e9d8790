"""``opar-sim tune SPEC``: search controller gains with Optuna, scored on held-out seeds."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.common import (
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
from opar_sim.running.search import JOURNAL_FILE, journal_storage
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import with_overrides
from opar_sim.studies.finalists import Trial
from opar_sim.studies.gains import TuneResult, holdout_verdict, toml_snippet
from opar_sim.studies.tune import TuneBudget, TunePlan, open_tuning_dir, plan_tuning, write_tuning

if TYPE_CHECKING:
    from rich.progress import Progress

NAME = "tune"
HELP = "tune controller gains with Optuna; report train and held-out scores"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """A spec with a ``[tune]`` table, overrides of its trials and sampler, seed, ``--out``.

    Also the executor flags: the trials' episodes run there.
    """
    parser.add_argument("spec", help="experiment spec (TOML) with a [tune] table")
    parser.add_argument(
        "--trials",
        type=int_between(1, MAX_TRIALS),
        help=f"override [tune] trials (at most {MAX_TRIALS:,})",
    )
    parser.add_argument("--sampler", choices=("tpe", "cmaes"), help="override [tune] sampler")
    parser.add_argument("--seed", type=int_at_least(0), help="training seed (default: the spec's)")
    parser.add_argument("--out", type=Path, help="output directory (default: runs/NAME/TIMESTAMP)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="finish an interrupted tuning in --out (its Optuna journal, optuna.journal)",
    )
    parser.add_argument(
        "--engine",
        choices=("simpy", "batch"),
        default="simpy",
        help="simpy: every trial on the reference engine (default); batch: screen the trials "
        "on the lockstep batch engine, then re-score the --finalists best on the SimPy engine "
        "(same training seed) and score the held-out seeds there (see docs/batch.md)",
    )
    parser.add_argument(
        "--finalists",
        type=int_at_least(1),
        default=5,
        help="with --engine batch: how many screened trials the SimPy engine re-scores (5)",
    )
    add_executor_flags(parser)


def run(args: argparse.Namespace, console: Console) -> int:
    """Tune the gains and report the best against the spec's own on held-out seeds.

    Writes ``trials.jsonl``, ``best.toml``, ``tune.json`` and the history (and,
    with two or more gains, landscape) figures; prints the result table and the
    best gains as TOML.

    Returns:
        0; a missing optuna or ``[tune]`` table is a usage error (exit 2).
    """
    _require_optuna()
    spec = with_overrides(load_spec(args.spec), seed=args.seed)
    if spec.tune is None:
        raise UsageError(f"{args.spec}: no [tune] table: nothing to tune")
    if args.resume and args.out is None:
        raise UsageError("--resume needs --out DIR: the tuning directory to finish")
    out: Path = args.out or default_out(f"{spec.name}-tune")
    config = executor_config(args)
    require_backends(spec)
    budget = TuneBudget(trials=args.trials, sampler=args.sampler)
    plan = plan_tuning(spec, budget, engine=args.engine, finalists=args.finalists, label=args.spec)
    console.print(_header(plan))
    resume = open_tuning_dir(out, plan.setup(), args.resume)
    storage = journal_storage(out / JOURNAL_FILE, resume=resume)
    with progress_bar(console, unit="") as bar:
        on_trial, on_chunk = _progress(bar, plan)
        result = plan.run(
            config, storage=storage, resume=resume, on_trial=on_trial, on_episodes=on_chunk
        )
    write_tuning(out, result)
    _show(console, out, result, _figures(out, plan, result))
    return 0


def _require_optuna() -> None:
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise UsageError(f"optuna is not installed: {install_hint('tune')}") from None


def _progress(
    bar: Progress, plan: TunePlan
) -> tuple[Callable[[Trial], None], Callable[[int], None]]:
    """The trials' bar; after the trials, the held-out scoring's (the defaults and the best)."""
    job = bar.add_task("trials", total=plan.settings.trials)
    scoring = bar.add_task("held-out scoring", total=plan.holdout_total, visible=False)

    def on_chunk(episodes: int) -> None:
        if bar.tasks[job].finished:
            bar.update(scoring, advance=episodes, visible=True)

    return (lambda _trial: bar.advance(job)), on_chunk


def _header(plan: TunePlan) -> str:
    settings = plan.settings
    return (
        f"[bold]{plan.spec.name}[/]: {settings.trials} trials ({settings.sampler}) × "
        f"{settings.train_episodes} training episodes, held out: {settings.holdout_episodes}"
        + (
            f"; trials screened on the batch engine, the {plan.finalists} best re-scored "
            "on the SimPy engine"
            if plan.engine == "batch"
            else ""
        )
    )


def _show(console: Console, out: Path, result: TuneResult, figures: list[str]) -> None:
    if result.finalists:
        console.print(result.finalist_table().to_rich())
    console.print(result.table().to_rich())
    console.print(holdout_verdict(result), highlight=False)
    console.print(toml_snippet(result.best_params), markup=False)
    console.print(f"tune directory: [green]{escape(str(out))}[/]")
    for figure in figures:
        console.print(f"figure: [green]{escape(str(figure))}[/]")


def _figures(out: Path, plan: TunePlan, result: TuneResult) -> list[str]:
    from opar_sim.figures import tuning  # matplotlib only when drawing
    from opar_sim.figures.style import save  # matplotlib only when drawing

    name = plan.spec.name
    numbers = [t.number for t in result.trials]
    scores = [t.score for t in result.trials]
    figures = save(
        tuning.tune_history(numbers, scores, f"{name}: optimisation history"), str(out / "history")
    )
    ranked = sorted(plan.settings.space, key=lambda p: -result.importances.get(p, 0.0))
    if len(ranked) >= 2:
        a, b = ranked[0], ranked[1]
        fig = tuning.tune_landscape(
            [t.params[a] for t in result.trials],
            [t.params[b] for t in result.trials],
            scores,
            (a, b),
            (result.best_params[a], result.best_params[b]),
            f"{name}: objective over the two most important gains",
        )
        figures += save(fig, str(out / "landscape"))
    return figures
