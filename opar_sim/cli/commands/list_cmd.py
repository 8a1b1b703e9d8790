"""``opar-sim list``: the registered tasks and controllers."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

import controllers
import environments

NAME = "list"
HELP = "show the registered tasks and controllers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments."""


def run(args: argparse.Namespace, console: Console) -> int:
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
