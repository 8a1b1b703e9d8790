"""``opar-sim init NAME --kind task|controller``: a working module and its test to start from."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.common import UsageError
from opar_sim.cli.scaffold import class_name, scaffold

NAME = "init"
HELP = "write a new task or controller module with its test (NAME.py, test_NAME.py)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """NAME, ``--kind`` and ``--dir``."""
    parser.add_argument("name", help="module name, e.g. my_law (lower case, digits, _)")
    parser.add_argument(
        "--kind", choices=("task", "controller"), default="controller", help="what to scaffold"
    )
    parser.add_argument("--dir", type=Path, default=Path("."), help="where to write (default .)")


def run(args: argparse.Namespace, console: Console) -> int:
    """Write the two files and say how to use them.

    Returns:
        0.
    """
    try:
        written = scaffold(args.name, args.kind, args.dir)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for path in written:
        console.print(f"wrote [green]{escape(str(path))}[/]", soft_wrap=True)
    module, test = written
    ref = f"{module}:{class_name(args.name)}"
    if args.kind == "controller":
        use = f"opar-sim run SPEC --controller {ref}"
    else:
        use = f'in a spec: [task] name = "{ref}", then opar-sim run SPEC'
    python = Path(sys.executable)  # the interpreter opar-sim runs in: it has what the test needs
    # commands to copy: one line each, never wrapped at the terminal's width
    test_it = f"test it: [cyan]{escape(f'{python} {test}')}[/] (or pytest {escape(str(test))})"
    console.print(test_it, soft_wrap=True)
    console.print(f"use it: [cyan]{escape(use)}[/]", soft_wrap=True)
    return 0
