"""``opar-sim study rebound|learning SPEC``: the two-arm studies of the loop's memory."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from opar_sim.analysis.studies import STUDIES, StudyResult
from opar_sim.cli.commands.common import int_at_least
from opar_sim.experiment.build import load_spec
from opar_sim.experiment.edit import with_overrides

NAME = "study"
HELP = "run a two-arm memory study: rebound (compression) or learning (Reflexion)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The study's name, its spec and the common run flags."""
    parser.add_argument("study", choices=STUDIES.names(), help="which study")
    parser.add_argument("spec", help="experiment spec (TOML)")
    parser.add_argument("--out", type=Path, required=True, help="the study's directory")
    parser.add_argument("--episodes", type=int_at_least(1), help="episodes per arm")
    parser.add_argument("--seed", type=int_at_least(0), help="override the spec's seed")


def run(args: argparse.Namespace, console: Console) -> int:
    """Run both arms, write the numbers as JSON and draw the study's figure."""
    spec = with_overrides(load_spec(args.spec), episodes=args.episodes, seed=args.seed)
    result = STUDIES.make(args.study, spec=spec, out=args.out)
    console.print_json(json.dumps(result.numbers))
    for figure in _figure(args.study, result, spec.name, spec.episodes):
        console.print(f"figure: [green]{figure}[/]")
    return 0


def _figure(study: str, result: StudyResult, name: str, episodes: int) -> list[str]:
    # matplotlib is imported only when drawing
    from opar_sim.figures.memory import learning_curve_figure, rebound_figure
    from opar_sim.figures.style import save

    if study == "rebound":
        title = f"{name}: error per round, {episodes} episodes per arm"
        fig = rebound_figure(result.curves, result.context, result.knee, title)
        return save(fig, str(result.out / "rebound"))
    title = f"{name}: success by attempt, {episodes} seeded tasks per arm"
    return save(learning_curve_figure(result.curves, title), str(result.out / "learning"))
