"""``opar-sim glossary [TERM]``: what each word the outputs use means."""

from __future__ import annotations

import argparse

from rich.console import Console

from opar_sim.cli.commands.common import UsageError
from opar_sim.cli.glossary import GLOSSARY
from opar_sim.measure.table import TextTable

NAME = "glossary"
HELP = "what each word the outputs use means (δ_task, pace, confirm, pass^k, ...)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """An optional word to look up."""
    parser.add_argument("term", nargs="?", help="a word to look up (part of it is enough)")


def run(args: argparse.Namespace, console: Console) -> int:
    """Print every term with its meaning, or the terms that contain ``term``.

    Returns:
        0; a word found nowhere is a usage error naming the terms (exit 2).
    """
    wanted = (args.term or "").lower()
    rows = [[term, text] for term, text in GLOSSARY.items() if wanted in term.lower()]
    if not rows:
        raise UsageError(f"glossary: no term contains {args.term!r}; terms: {', '.join(GLOSSARY)}")
    console.print(TextTable("glossary", ["term", "meaning"], rows, [], left=2))
    return 0
