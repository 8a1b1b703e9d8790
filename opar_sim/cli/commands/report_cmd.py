"""``opar-sim report RUNDIR``: one self-contained HTML page of a run."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.plot_cmd import add_episode_flags, check_episode_flags, load_analysis

NAME = "report"
HELP = "write one self-contained HTML page (figures, tables, spec) for a run directory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run directory, ``--out`` for the HTML file, and the PID-terms figure's episode."""
    parser.add_argument("rundir", type=Path, help="a run directory written by run or compare")
    parser.add_argument("--out", type=Path, help="the HTML file (default RUNDIR/report.html)")
    add_episode_flags(parser)


def run(args: argparse.Namespace, console: Console) -> int:
    """Analyse the run directory and write its HTML report, printing the file's path.

    Returns:
        0.
    """
    if (args.rundir / "source.json").is_file() and not (args.rundir / "spec.json").is_file():
        from opar_sim.cli.record_report import write_record_report  # an imported record

        out = write_record_report(args.rundir, args.out or args.rundir / "report.html")
        console.print(f"report: [green]{escape(str(out))}[/]")
        return 0
    analysis = load_analysis(args.rundir)
    check_episode_flags(analysis, args)
    out = args.out or args.rundir / "report.html"
    from opar_sim.cli.report import write_report  # matplotlib only when drawing

    write_report(analysis, out, controller=args.controller, episode=args.episode)
    console.print(f"report: [green]{escape(str(out))}[/]")
    return 0
