"""The ``opar-sim`` command line.

Bad input exits with status 2 and one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

# The commands are imported when the parser is built, not with this module: the
# console script imports it, and so does every spawned pool worker, which re-runs the
# script's imports; a worker needs none of the commands (nor what they draw with).


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        from opar_sim.cli.commands.common import UsageError

        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The ``opar-sim`` parser, one sub-command per module of ``COMMANDS``.

    Its errors raise ``UsageError`` instead of exiting, so ``main`` reports them
    like any other bad input.
    """
    from opar_sim.cli.commands import COMMANDS

    parser = _Parser(
        prog="opar-sim",
        description="Simulate agent loops (Observe-Plan-Act-Reflect) and tune their controllers.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        command.add_arguments(sub.add_parser(command.NAME, help=command.HELP))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``opar-sim``; returns the exit status."""
    from rich.console import Console

    from opar_sim.cli.commands import COMMANDS
    from opar_sim.cli.commands.common import UsageError
    from opar_sim.experiment.executors import ExecutorError
    from opar_sim.experiment.spec import SpecError

    # a terminal sets its own width; piped output (logs, CI) gets room for the wide tables
    console = Console() if sys.stdout.isatty() else Console(width=160)
    try:
        args = build_parser().parse_args(argv)
        command = next(c for c in COMMANDS if args.command == c.NAME)
        status: int = command.run(args, console)
        return status
    except (UsageError, SpecError, ExecutorError) as exc:
        print(f"opar-sim: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "opar-sim: interrupted; finished episodes are kept: rerun with --resume --out DIR",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
