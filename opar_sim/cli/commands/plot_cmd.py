"""``opar-sim plot RUNDIR``: rebuild every figure of a run directory without rerunning."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.common import UsageError, int_at_least
from opar_sim.measure.run import RunAnalysis, analyze
from opar_sim.rundir import RunDirError

NAME = "plot"
HELP = "rebuild the figures of a run directory (PNG and SVG) without rerunning"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run directory, ``--out`` for the figures, and the PID-terms figure's episode."""
    parser.add_argument("rundir", type=Path, help="a run directory written by run or compare")
    parser.add_argument(
        "--out", type=Path, help="where to write the figures (default RUNDIR/figures)"
    )
    add_episode_flags(parser)


def add_episode_flags(parser: argparse.ArgumentParser) -> None:
    """Which episode the PID-terms figure shows."""
    parser.add_argument("--controller", help="controller of the PID-terms figure")
    parser.add_argument(
        "--episode",
        type=int_at_least(0),
        help="episode of the PID-terms figure (default: the one that replanned most)",
    )


def load_analysis(path: Path) -> RunAnalysis:
    """The analysis of a run directory; a path that is not one is a usage error."""
    try:
        analysis = analyze(path)
    except RunDirError as exc:
        raise UsageError(str(exc)) from None
    if not analysis.controllers:
        raise UsageError(f"{path}: the run directory holds no finished episode")
    return analysis


def check_episode_flags(analysis: RunAnalysis, args: argparse.Namespace) -> None:
    """Reject a ``--controller`` the run does not have, naming the ones it has."""
    if args.controller is not None and args.controller not in analysis.controllers:
        known = ", ".join(analysis.controllers)
        raise UsageError(f"--controller {args.controller!r} is not in this run (it has: {known})")
    if args.episode is None:
        return
    names = [args.controller] if args.controller is not None else list(analysis.controllers)
    numbers = sorted({e.episode for e in analysis.episodes if e.controller in names})
    if args.episode not in numbers:
        span = f"{numbers[0]}..{numbers[-1]}" if numbers else "none"
        raise UsageError(f"--episode {args.episode} is not in this run (its episodes: {span})")
    if not any("effort" in t.terms for name in names for t in analysis.traces.get(name, [])):
        raise UsageError(
            f"--episode {args.episode}: the PID-terms figure needs a controller that records "
            "its terms (pid, pid_map), and "
            + (f"{args.controller!r} does not" if args.controller else "this run has none")
        )


def run(args: argparse.Namespace, console: Console) -> int:
    """Analyse the run directory and redraw its figures as PNG and SVG, printing each path.

    Returns:
        0; a path that is not a run directory is a usage error (exit 2).
    """
    analysis = load_analysis(args.rundir)
    check_episode_flags(analysis, args)
    from opar_sim.figures import write_figures  # matplotlib only when drawing

    paths = write_figures(analysis, args.out, controller=args.controller, episode=args.episode)
    for path in paths:
        console.print(f"figure: [green]{escape(str(path))}[/]")
    return 0
