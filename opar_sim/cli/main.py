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


class _Done(Exception):
    """Raised by ``--version`` once it has printed: ``main`` returns 0."""


class _Version(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, *args: object, **kwargs: object) -> NoReturn:
        print(f"opar-sim {version()}")
        raise _Done


def version() -> str:
    """The installed opar-sim's version (the package's own when not installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("opar-sim")
    except PackageNotFoundError:
        from opar_sim import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    """The ``opar-sim`` parser, one sub-command per module of ``COMMANDS``.

    Its errors raise ``UsageError`` instead of exiting, so ``main`` reports them
    like any other bad input.
    """
    from opar_sim.cli.commands import COMMANDS

    parser = _Parser(
        prog="opar-sim",
        description="Simulate agent loops (Observe-Plan-Act-Reflect) and tune their controllers.",
        epilog="start with: opar-sim run experiments/flight_booking.toml; "
        "opar-sim COMMAND -h shows a command's flags",
    )
    parser.add_argument("--version", "-V", action=_Version)
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, metavar="COMMAND"
    )
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
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # a bare call: what the commands are, not one line of error
        build_parser().print_help(sys.stderr)
        return 2
    try:
        args = build_parser().parse_args(argv)
        command = next(c for c in COMMANDS if args.command == c.NAME)
        status: int = command.run(args, console)
        return status
    except (UsageError, SpecError, ExecutorError) as exc:
        print(f"opar-sim: error: {exc}", file=sys.stderr)
        return 2
    except _Done:
        return 0
    except KeyboardInterrupt:
        print(
            "opar-sim: interrupted; finished episodes are kept: rerun with --resume --out DIR",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
