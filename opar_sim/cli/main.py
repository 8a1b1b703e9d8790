"""The ``opar-sim`` command line.

Bad input exits with status 2 and one line on stderr, never a traceback; see ``main``.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import re
import shlex
import sys
import tempfile
import textwrap
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from rich.console import Console

# The commands are imported when the parser is built, not with this module: the
# console script imports it, and so does every spawned pool worker, which re-runs the
# script's imports; a worker needs none of the commands (nor what they draw with).


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        from opar_sim.cli.commands.common import UsageError

        raise UsageError(message + suggestion(self, message))


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string of ``parser`` and of its sub-commands' parsers (those built)."""
    flags: list[str] = []
    for action in parser._actions:
        flags += action.option_strings
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                flags += _flags(child)
    return sorted(set(flags))


def suggestion(parser: argparse.ArgumentParser, message: str) -> str:
    """`` (did you mean '--episodes'?)`` for a misspelt flag or choice in argparse's message.

    Args:
        parser: The parser that failed (the top one, for flags it did not recognise).
        message: argparse's message.

    Returns:
        The suggestion with a leading space, or an empty string.
    """
    from opar_sim.core.errors import did_you_mean

    unknown = re.match(r"unrecognized arguments: (.*)", message)
    if unknown:
        flags = [w.split("=")[0] for w in unknown.group(1).split() if w.startswith("-")]
        if not flags:
            return ""
        # a flag another command has (not this one) is not a misspelling of itself
        return did_you_mean(flags[0], [f for f in _flags(parser) if f != flags[0]])
    choice = re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)", message)
    if choice:
        return did_you_mean(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)))
    return ""


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


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``opar-sim`` parser: one sub-command per entry of ``COMMANDS``.

    Only ``command``'s module is imported, for its flags; the others get their
    name and help line, which is all ``opar-sim --help`` shows (so it imports no
    command, and nothing a command draws or computes with).  Its errors raise
    ``UsageError`` instead of exiting, so ``main`` reports them like any other
    bad input.

    Args:
        command: The sub-command about to run (``"*"``: every one, with its flags).

    Returns:
        The parser.
    """
    from opar_sim.cli.commands import COMMANDS, GROUPS, Command

    width = max(len(c.name) for c in COMMANDS) + 2

    def line(c: Command) -> str:  # one command, its help wrapped under itself at 100 columns
        return textwrap.fill(
            c.help, 100, initial_indent=f"  {c.name:<{width}}", subsequent_indent=" " * (width + 2)
        )

    listing = "\n\n".join(
        f"{group}:\n" + "\n".join(line(c) for c in COMMANDS if c.group == group) for group in GROUPS
    )
    parser = _Parser(
        prog="opar-sim",
        description="Simulate agent loops (Observe-Plan-Act-Reflect) and tune their controllers."
        f"\n\ncommands:\n\n{listing}",
        epilog="start with: opar-sim run experiments/flight_booking.toml\n"
        "opar-sim COMMAND -h shows a command's flags; opar-sim glossary explains the words",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", "-V", action=_Version)
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, metavar="COMMAND"
    )
    for entry in COMMANDS:
        child = sub.add_parser(entry.name, description=entry.help)  # listed by group above
        if command in (entry.name, "*"):
            entry.load().add_arguments(child)
            _add_wide(child)
    return parser


def _add_wide(parser: argparse.ArgumentParser, nested: bool = False) -> None:
    """``--wide`` on a command's parser and on its own sub-commands' (``traces compare``)."""
    parser.add_argument(
        "--wide",
        action="store_true",
        # a sub-command's default must not overwrite a --wide given before it
        default=argparse.SUPPRESS if nested else False,
        help=f"print every table column, however wide (default: fit the terminal, "
        f"{PIPED_WIDTH} columns when piped)",
    )
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _add_wide(child, nested=True)


def _command_in(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` names: its first word that is not a flag."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``opar-sim``; returns the exit status.

    Bad input (``InputError``: specs, run directories, flags, the environment)
    exits 2 with one line; a file that cannot be written (a full disk, an
    unwritable path) exits 1 with one line; anything unexpected exits 70 with
    one line, its traceback written to ``error.log`` in the run directory (a
    temporary file when there is none), never to the terminal.
    """
    from opar_sim.cli.commands import COMMANDS

    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # a bare call: what the commands are, not one line of error
        build_parser().print_help(sys.stderr)
        return 2
    args: argparse.Namespace | None = None
    try:
        args = build_parser(_command_in(argv)).parse_args(argv)
        command = next(c for c in COMMANDS if args.command == c.name).load()
        console = _console(getattr(args, "wide", False))
        with _batch_notice(args, console):
            status: int = command.run(args, console)
        return status
    except _Done:
        return 0
    except KeyboardInterrupt:
        resumable = args is not None and hasattr(args, "resume")  # run, sweep, compare, tune
        _say(f"interrupted; episodes kept: {_resume_hint(args)}" if resumable else "interrupted")
        return 130
    except Exception as exc:
        return _failed(exc, args)


def _batch_notice(
    args: argparse.Namespace, console: Console
) -> contextlib.AbstractContextManager[None]:
    """With ``--engine batch``: one line when the engine's row loops are compiled, not loaded.

    Else nothing (a SimPy command does not import Numba for it).
    """
    if getattr(args, "engine", None) != "batch":
        return contextlib.nullcontext()
    from opar_sim.engines.batch import compile_notice

    return compile_notice(lambda line: console.print(line, markup=False, highlight=False))


def _failed(exc: Exception, args: argparse.Namespace | None) -> int:
    """Report a command's failure in one line and return its exit status (2, 1 or 70).

    Called from ``main``'s handler, so ``--help`` imports neither the error
    types (pydantic) nor the executors (multiprocessing).
    """
    from opar_sim.core.errors import InputError
    from opar_sim.running.executors import ExecutorError

    if isinstance(exc, (InputError, ExecutorError)):
        _say(f"error: {exc}")
        return 2
    if isinstance(exc, OSError):
        _say(f"error: {describe_os_error(exc, _resume_hint(args))}")
        return 1
    # the last resort: one line, the traceback to a log file
    log = write_crash_log(getattr(args, "out", None))
    where = f"; traceback in {log}" if log else ""
    _say(f"internal error: {type(exc).__name__}: {_one_line(str(exc))}{where}")
    return 70


PIPED_WIDTH = 100  # the width of output that is not a terminal (logs, CI, a pipe to less)
WIDE = 1_000  # --wide: room for every column of every table


def _console(wide: bool = False) -> Console:
    """The console commands print to (rich is imported once a command runs, not for --help).

    Tables are fitted to its width (``TextTable.fit``): a terminal's own, ``PIPED_WIDTH``
    when piped; ``--wide`` gives them all the room they need.  Piped, a line of text is
    never wrapped (a log keeps each message, path and command on one line).
    """
    from opar_sim.cli.console import SafeConsole

    if wide:
        return SafeConsole(width=WIDE, soft_wrap=not sys.stdout.isatty())
    if sys.stdout.isatty():
        return SafeConsole()
    return SafeConsole(width=PIPED_WIDTH, soft_wrap=True)


def _say(text: str) -> None:
    from opar_sim.measure.table import printable  # control characters from a file: escaped

    with contextlib.suppress(OSError):  # stderr itself may be gone
        print(f"opar-sim: {printable(text)}", file=sys.stderr)


def _one_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 200 else first[:197] + "..."


def _resume_hint(args: argparse.Namespace | None) -> str:
    """What finishes an interrupted run: its command again with ``--resume`` and its ``--out``."""
    out = getattr(args, "out", None)  # the directory the run chose (``common.out_dir``)
    where = shlex.quote(str(out)) if out is not None else "DIR"
    return f"rerun with --resume --out {where}"


def describe_os_error(exc: OSError, resume: str = "rerun with --resume --out DIR") -> str:
    """One line for a file that could not be read or written, with what to do about it.

    Args:
        exc: The error (its ``filename`` names the file when known).
        resume: What finishes the run when the disk is full (``_resume_hint``).

    Returns:
        The line, without the ``opar-sim: error:`` prefix.
    """
    name = f"{exc.filename}" if exc.filename is not None else "a file"
    if len(name) > 120:
        name = name[:60] + "..." + name[-57:]
    reason = exc.strerror or type(exc).__name__
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"cannot write {name}: {reason}; finished episodes are kept: free space and {resume}"
    return f"cannot write {name}: {reason}"


def write_crash_log(out: object) -> Path | None:
    """Write the current exception's traceback to ``OUT/error.log``, else to a temporary file.

    Args:
        out: The command's ``--out`` (a run directory), or None.

    Returns:
        The log's path, or None when no log could be written.
    """
    text = traceback.format_exc()
    if isinstance(out, Path):
        with contextlib.suppress(OSError):  # an unwritable run directory: the temp log below
            if out.is_dir():
                log = out / "error.log"
                with open(log, "a", encoding="utf-8") as f:
                    f.write(text)
                return log
    try:
        fd, name = tempfile.mkstemp(prefix="opar-sim-error-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return Path(name)
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(main())
