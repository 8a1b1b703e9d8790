"""The ``opar-sim`` command line.

Bad input exits with status 2 and one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from rich.console import Console

import controllers
import environments
from opar_sim.display import outcome_table, progress_bar, summary_table
from opar_sim.runner import prepare_out_dir, run_experiment
from opar_sim.spec import SpecError, load_spec, with_overrides


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="opar-sim",
        description="Simulate agent loops (Observe-Plan-Act-Reflect) and tune their controllers.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run an experiment spec and write a run directory")
    run.add_argument("spec", help="experiment spec (TOML), e.g. experiments/flight_booking.toml")
    run.add_argument("--episodes", type=_positive, help="override the spec's episode count")
    run.add_argument("--seed", type=_non_negative, help="override the spec's seed")
    run.add_argument("--controller", help="use this registered controller (see `list`)")
    run.add_argument("--out", type=Path, help="run directory (default: runs/NAME/TIMESTAMP)")

    sub.add_parser("list", help="show the registered tasks and controllers")
    return parser


def _cmd_run(args: argparse.Namespace, console: Console) -> int:
    spec = load_spec(args.spec)
    spec = with_overrides(spec, episodes=args.episodes, seed=args.seed, controller=args.controller)
    out: Path = args.out or Path("runs") / spec.name / time.strftime("%Y%m%d-%H%M%S")
    prepare_out_dir(out)
    console.print(
        f"[bold]{spec.name}[/]: task [cyan]{spec.task.name}[/], controller "
        f"[cyan]{spec.controller.name}[/], {spec.episodes} episodes, seed {spec.seed}"
    )
    with progress_bar(console) as bar:
        job = bar.add_task(spec.controller.name, total=spec.episodes)
        result = run_experiment(spec, out, on_episode=lambda _r: bar.advance(job))
    console.print(summary_table(result.summary, f"{spec.name}: means per episode"))
    console.print(outcome_table(result.summary))
    console.print(f"run directory: [green]{result.out}[/]")
    for figure in result.figures:
        console.print(f"figure: [green]{figure}[/]")
    return 0


def _cmd_list(console: Console) -> int:
    from rich.table import Table

    tasks = Table(title="tasks", title_justify="left")
    tasks.add_column("name", style="bold")
    tasks.add_column("what it is")
    for name in environments.names():
        tasks.add_row(name, environments.describe(name))
    ctrls = Table(title="controllers", title_justify="left")
    ctrls.add_column("name", style="bold")
    ctrls.add_column("decision law")
    for name in controllers.names():
        ctrls.add_row(name, controllers.describe(name))
    console.print(tasks)
    console.print(ctrls)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``opar-sim``; returns the exit status."""
    console = Console()
    try:
        args = build_parser().parse_args(argv)
        if args.command == "run":
            return _cmd_run(args, console)
        return _cmd_list(console)
    except (UsageError, SpecError) as exc:
        print(f"opar-sim: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("opar-sim: interrupted; finished episodes are kept on disk", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
