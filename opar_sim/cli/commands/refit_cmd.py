"""``opar-sim refit``: re-fit every controller's defaults on the tuning seed, check held out.

The protocol is ``opar_sim.studies.refit``': the two shoot-out tasks, the
tuning seed 100, the same Optuna budget for every controller, the previous
defaults as the first trial, the best rounded to two significant digits and
compared with the previous defaults on held-out seeds.  ``--write`` stores
the record (``docs/defaults-fit.json``) that the shipped signatures must match.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from opar_sim.cli.commands.common import (
    UsageError,
    add_executor_flags,
    executor_config,
    int_at_least,
)
from opar_sim.cli.render import progress_bar
from opar_sim.rundir import write_json
from opar_sim.studies.refit import (
    DEFAULT_BUDGET,
    RECORD,
    SPECS,
    TUNING_SEED,
    RefitBudget,
    RefitPlan,
    fitted_controllers,
    plan_refit,
)
from opar_sim.studies.seeds import HOLDOUT_SEED

NAME = "refit"
HELP = "re-fit every controller's defaults on the tuning seed and check them on held-out seeds"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Controllers, budget, ``--write`` and the executor."""
    parser.add_argument(
        "--controllers",
        help="comma-separated controllers (default: every one with a SPACE, but the oracle)",
    )
    trials, train, held = (
        DEFAULT_BUDGET.trials,
        DEFAULT_BUDGET.train_episodes,
        DEFAULT_BUDGET.holdout_episodes,
    )
    parser.add_argument(
        "--trials", type=int_at_least(1), default=trials, help=f"trials (default {trials})"
    )
    parser.add_argument(
        "--train-episodes",
        type=int_at_least(1),
        default=train,
        help=f"episodes per task and trial, seed {TUNING_SEED} (default {train})",
    )
    parser.add_argument(
        "--holdout-episodes",
        type=int_at_least(1),
        default=held,
        help=f"held-out episodes per task, seed {HOLDOUT_SEED} (default {held})",
    )
    parser.add_argument("--write", type=Path, help=f"write the record here (e.g. {RECORD})")
    add_executor_flags(parser)


def _names(text: str | None) -> list[str]:
    fitted = fitted_controllers()
    if text is None:
        return fitted
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in fitted]
    if unknown or not names:
        raise UsageError(f"--controllers: choose among {', '.join(fitted)}")
    return names


def run(args: argparse.Namespace, console: Console) -> int:
    """Re-fit, print the previous and fitted defaults with the held-out check.

    Returns:
        0; a missing optuna or an unknown controller is a usage error (exit 2).
    """
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise UsageError("optuna is not installed: pip install -e '.[tune]'") from None
    budget = RefitBudget(args.trials, args.train_episodes, args.holdout_episodes)
    plan = plan_refit(SPECS, budget, controllers=_names(args.controllers))
    config = executor_config(args)
    console.print(_header(plan))
    with progress_bar(console, unit="") as bar:
        job = bar.add_task("trials", total=args.trials * len(plan.names))
        result = plan.run(config, lambda: bar.advance(job))
    console.print(result.table())
    if args.write is not None:
        write_json(args.write, result.to_dict())
        console.print(f"record: [green]{args.write}[/]")
    console.print(f"wall time: {result.wall_seconds:.0f} s")
    return 0


def _header(plan: RefitPlan) -> str:
    b = plan.budget
    return (
        f"{len(plan.names)} controllers × {b.trials} trials × {len(plan.specs)} tasks × "
        f"{b.train_episodes} episodes (seed {TUNING_SEED}); held out: "
        f"{b.holdout_episodes} per task (seed {HOLDOUT_SEED})"
    )
