"""``opar-sim list``: every registered pluggable part, kind by kind."""

from __future__ import annotations

import argparse
import re

from rich.console import Console

from opar_sim.cli.tables import TextTable
from opar_sim.registry import KINDS, catalogue, plugin_failures

NAME = "list"
HELP = "show the registered tasks, controllers, wrappers, agents, backends, guards and studies"

HEADINGS = {
    "tasks": "what it is",
    "controllers": "decision law",
    "wrappers": "what it changes",
    "agents": "what it is",
    "backends": "what it runs",
    "guards": "what it stops or overrides",
    "studies": "what it measures",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Optionally one kind (tasks, controllers, wrappers, ...) to list alone."""
    parser.add_argument("kind", nargs="?", choices=KINDS, help="list only this kind")


def plain(text: str) -> str:
    """A docstring's summary as prose: ``name`` and `name` written 'name'."""
    return re.sub(r"``?([^`]+?)``?", r"'\1'", text)


def run(args: argparse.Namespace, console: Console) -> int:
    """Print one table per kind (tasks and controllers first)."""
    parts = catalogue()
    order = ["tasks", "controllers", *(k for k in KINDS if k not in ("tasks", "controllers"))]
    for kind in [args.kind] if args.kind else order:
        rows = [[name, plain(about)] for name, about in parts[kind]]
        table = TextTable(kind, ["name", HEADINGS.get(kind, "what it is")], rows, [], left=2)
        console.print(table)
    for kind, name, why in plugin_failures():
        console.print(
            f"plugin {name!r} ({kind}) failed to load and is skipped: {why}",
            markup=False,
            highlight=False,
        )
    return 0
