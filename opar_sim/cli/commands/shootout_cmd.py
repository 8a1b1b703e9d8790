"""``opar-sim shootout SPEC``: every controller tuned with the same budget, ranked on unseen seeds.

The protocol is ``opar_sim.studies.shootout``'s: same sampler, trials and
training seeds for every contender, each searched over its documented
``SPACE`` plus the shared stop confirmation; scored on held-out seeds; paired
differences against the best with exact McNemar, Holm and paired bootstrap
intervals; ties ranked as ties.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from controllers.registry import CONTROLLERS
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
from opar_sim.rundir import prepare_out_dir, write_json
from opar_sim.spec.build import load_spec
from opar_sim.studies.contender import Budget, default_contenders
from opar_sim.studies.shootout import ShootoutPlan, ShootoutResult, plan_shootout

NAME = "shootout"
HELP = "tune every controller with the same budget, rank them on held-out seeds (ties as ties)"
DEFAULT = Budget()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The spec, the contenders, the budget (trials, episodes, sampler), ``--out``, executor."""
    parser.add_argument("spec", help="experiment spec (TOML); its task, agent and limits are used")
    parser.add_argument(
        "--controllers",
        help="comma-separated registered controllers (default: all but the oracle)",
    )
    parser.add_argument(
        "--trials",
        type=int_between(1, MAX_TRIALS),
        default=DEFAULT.trials,
        help=f"Optuna trials per contender (default {DEFAULT.trials}, at most {MAX_TRIALS:,})",
    )
    parser.add_argument(
        "--train-episodes",
        type=int_at_least(1),
        default=DEFAULT.train_episodes,
        help=f"training episodes per trial, seed {DEFAULT.train_seed} "
        f"(default {DEFAULT.train_episodes})",
    )
    parser.add_argument(
        "--holdout-episodes",
        type=int_at_least(1),
        default=DEFAULT.holdout_episodes,
        help=f"held-out episodes, seed {DEFAULT.holdout_seed} (default {DEFAULT.holdout_episodes})",
    )
    parser.add_argument("--sampler", choices=("tpe", "cmaes"), default=DEFAULT.sampler)
    parser.add_argument(
        "--engine",
        choices=("simpy", "batch"),
        default="simpy",
        help="simpy: every trial on the reference engine (default); batch: screen the trials "
        "of each contender on the lockstep batch engine, re-score its --finalists best on "
        "the SimPy engine (same training episodes); a contender the batch engine cannot run "
        "is searched on the SimPy engine; held-out seeds: always SimPy",
    )
    parser.add_argument(
        "--finalists",
        type=int_at_least(1),
        default=5,
        help="with --engine batch: how many screened trials the SimPy engine re-scores (5)",
    )
    parser.add_argument("--out", type=Path, help="output directory (default: runs/NAME/TIMESTAMP)")
    add_executor_flags(parser)


def contenders_of(text: str | None) -> list[str]:
    """The contenders named on the command line (or the default), checked against the registry."""
    known = CONTROLLERS.names()
    if text is None:
        return default_contenders(CONTROLLERS)
    names = [n.strip() for n in text.split(",") if n.strip()]
    if len(names) < 2:
        raise UsageError("--controllers needs at least two controllers, comma-separated")
    if len(set(names)) != len(names):
        raise UsageError(f"--controllers lists a controller twice: {text}")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"unknown controller(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return names


def run(args: argparse.Namespace, console: Console) -> int:
    """Tune each contender, score all on the held-out seeds, print and write the ranking.

    Writes ``shootout.json`` and ``shootout.png`` in ``--out``.

    Returns:
        0; a missing optuna, an unknown controller or a bad spec is a usage error (exit 2).
    """
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise UsageError(f"optuna is not installed: {install_hint('tune')}") from None
    spec = load_spec(args.spec)
    names = contenders_of(args.controllers)
    plan = plan_shootout(
        spec,
        Budget(args.trials, args.train_episodes, args.holdout_episodes, args.sampler),
        controllers=None if args.controllers is None else names,
        engine=args.engine,
        finalists=args.finalists,
        label=args.spec,
        on_skip=lambda name, why: console.print(
            f"skipped {name}: {why}", markup=False, highlight=False
        ),
        on_unscreened=lambda name, why: console.print(
            f"{name}: trials on the SimPy engine ({why})", markup=False
        ),
    )
    out: Path = args.out or default_out(f"{spec.name}-shootout")
    prepare_out_dir(out)
    console.print(_header(plan))
    config = executor_config(args)
    require_backends(spec)
    with progress_bar(console, unit="") as bar:
        job = bar.add_task("trials", total=plan.budget.trials * len(plan.contenders))
        result = plan.run(config, lambda: bar.advance(job))
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "shootout.json", result.to_dict())
    _show(console, out, result, _figure(out, result))
    return 0


def _header(plan: ShootoutPlan) -> str:
    budget, n = plan.budget, len(plan.contenders)
    screened = sum(c.screened for c in plan.contenders)
    return (
        f"[bold]{plan.spec.name}[/]: {n} contenders × {budget.trials} trials "
        f"({budget.sampler}) × {budget.train_episodes} training episodes (seed "
        f"{budget.train_seed}); held out: {budget.holdout_episodes} episodes "
        f"(seed {budget.holdout_seed})"
        + (
            f"; trials screened on the batch engine ({screened} of {n} "
            f"contenders), the {plan.finalists} best re-scored on the SimPy engine"
            if plan.engine == "batch"
            else ""
        )
    )


def _figure(out: Path, result: ShootoutResult) -> list[str]:
    from opar_sim.figures import tuning  # matplotlib only when drawing
    from opar_sim.figures.style import save  # matplotlib only when drawing

    ranked = result.standings
    return save(
        tuning.shootout_figure(
            [s.name for s in ranked],
            [s.success for s in ranked],
            [s.success_ci95 for s in ranked],
            [s.rank for s in ranked],
            f"{result.name}: tuned contenders on held-out seeds",
        ),
        str(out / "shootout"),
    )


def _show(console: Console, out: Path, result: ShootoutResult, figures: list[str]) -> None:
    console.print(result.table().to_rich())
    console.print(result.params_table().to_rich())
    console.print(f"wall time: {result.wall_seconds:.0f} s")
    console.print(f"shoot-out directory: [green]{escape(str(out))}[/]")
    for figure in figures:
        console.print(f"figure: [green]{escape(str(figure))}[/]")
