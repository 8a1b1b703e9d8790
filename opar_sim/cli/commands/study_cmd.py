"""``opar-sim study rebound|learning SPEC``: the two-arm studies of the loop's memory."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.common import int_at_least
from opar_sim.cli.progress import stages
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import with_overrides
from opar_sim.studies.memory import STUDIES, MemoryBudget, MemoryResult

NAME = "study"
HELP = "run a two-arm memory study: rebound (compression) or learning (Reflexion)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The study's name, its spec and the common run flags."""
    parser.add_argument("study", choices=STUDIES.names(), help="which study")
    parser.add_argument("spec", help="experiment spec (TOML)")
    parser.add_argument("--out", type=Path, required=True, help="the study's directory")
    parser.add_argument("--episodes", type=int_at_least(1), help="episodes per arm")
    parser.add_argument("--seed", type=int_at_least(0), help="override the spec's seed")
    parser.add_argument(
        "--json", action="store_true", help="print the numbers as JSON instead of a table"
    )


def run(args: argparse.Namespace, console: Console) -> int:
    """Run both arms with a progress bar, print a table of the numbers, draw the figure.

    The numbers, per-round curves included, are written to ``OUT/STUDY.json``;
    ``--json`` prints that JSON instead of the table.
    """
    spec = with_overrides(load_spec(args.spec), episodes=args.episodes, seed=args.seed)
    result = STUDIES.make(
        args.study,
        spec=spec,
        budget=MemoryBudget(spec.episodes),
        out=args.out,
        stage=stages(console),
    )
    if args.json:
        console.print_json(json.dumps(result.to_dict()))
    else:
        console.print(result.table())
    console.print(f"numbers: [green]{result.out / f'{args.study}.json'}[/]")
    for figure in _figure(args.study, result, spec.name, spec.episodes):
        console.print(f"figure: [green]{escape(str(figure))}[/]")
    return 0


def _figure(study: str, result: MemoryResult, name: str, episodes: int) -> list[str]:
    # matplotlib is imported only when drawing
    from opar_sim.figures.memory import learning_curve_figure, rebound_figure
    from opar_sim.figures.style import save

    if study == "rebound":
        title = f"{name}: error per round, {episodes} episodes per arm"
        fig = rebound_figure(result.curves, result.context, result.knee, title)
        return save(fig, str(result.out / "rebound"))
    title = f"{name}: success by attempt, {episodes} seeded tasks per arm"
    return save(learning_curve_figure(result.curves, title), str(result.out / "learning"))
