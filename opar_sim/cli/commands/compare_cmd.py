"""``opar-sim compare SPEC --controllers A,B,...``: controllers side by side on the same seeds."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.common import (
    UsageError,
    add_confirm_flag,
    add_run_flags,
    int_at_least,
)
from opar_sim.cli.commands.run_cmd import execute
from opar_sim.cli.tables import comparison_table, reference_table, response_table, world_table
from opar_sim.measure.diff import against_reference
from opar_sim.measure.run import analyze, write_metrics
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import with_controllers, with_overrides
from opar_sim.spec.schema import ExperimentSpec

NAME = "compare"
HELP = "run several controllers on the same seeds, print one table and write the figures"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run flags, ``--controllers`` (default: the spec's list), ``--detail``, ``--thrash-k``."""
    add_run_flags(parser)
    add_confirm_flag(parser)
    parser.add_argument(
        "--controllers",
        help="comma-separated registered controllers, e.g. pid,threshold,oracle, or your own "
        "as path/to/file.py:ClassName (default: the spec's [[compare]] list)",
    )
    parser.add_argument(
        "--reference",
        metavar="LAW",
        help="the law every other is compared with, paired on the same episodes "
        "(default: the first controller)",
    )
    parser.add_argument(
        "--detail",
        action="store_true",
        help="also print the step-response and oscillation table (rise, settling, gap, ζ) "
        "and the successes per world (how many worlds had 0..trials successes)",
    )
    parser.add_argument(
        "--thrash-k",
        type=int_at_least(1),
        default=2,
        help="a REPLAN within this many steps of the previous one counts as thrash (default 2)",
    )


def reference_of(spec: ExperimentSpec, asked: str | None) -> str:
    """The reference law: ``--reference`` (one of the spec's laws) or the first controller."""
    names = [c.name for c in spec.controller_list()]
    if asked is not None and asked not in names:
        raise UsageError(f"--reference {asked!r} is not one of {', '.join(names)}")
    return asked or names[0]


def parse_names(text: str) -> list[str]:
    """Controller names from ``a,b,c``; an empty list is a usage error."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError("--controllers: give at least one controller name, e.g. pid,threshold")
    return names


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the controllers on the same seeds, then analyse the run directory.

    Prints the run's progress and the comparison table (with ``--detail`` also
    the step-response and oscillation table and the successes per world); writes the run directory,
    ``metrics.json`` and the figures under ``figures/``.

    Returns:
        0.
    """
    spec = with_overrides(
        load_spec(args.spec),
        episodes=args.episodes,
        seed=args.seed,
        confirm=args.confirm,
        trials=args.trials,
    )
    if args.controllers is not None:
        spec = with_controllers(spec, parse_names(args.controllers))
    reference = reference_of(spec, args.reference)
    result = execute(spec, args, console, tables=False)
    analysis = analyze(result.out, thrash_k=args.thrash_k)
    if len(spec.controller_list()) > 1:
        paired = against_reference(result.out, reference)
        console.print(reference_table(paired, reference))
    console.print(comparison_table(analysis))
    if args.detail:
        console.print(response_table(analysis))
        if max(m.trials for m in analysis.controllers.values()) > 1:  # else 0/1 or 1/1
            console.print(world_table(analysis))
    metrics = write_metrics(analysis, result.out / "metrics.json")
    console.print(f"metrics: [green]{escape(str(metrics))}[/]")
    from opar_sim.figures import write_figures  # matplotlib only when drawing

    for figure in write_figures(analysis):
        if figure.endswith(".png"):
            console.print(f"figure: [green]{escape(str(figure))}[/] (and .svg)")
    return 0
