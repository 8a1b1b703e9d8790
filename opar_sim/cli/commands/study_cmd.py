"""``opar-sim study rebound|learning SPEC``: the two-arm studies of the loop's memory."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.common import int_at_least
from opar_sim.cli.render import progress_bar
from opar_sim.cli.tables import TextTable
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import with_overrides
from opar_sim.studies.memory import STUDIES, StudyResult

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
    total = 2 * spec.episodes * len(spec.controller_list())  # two arms
    with progress_bar(console) as bar:
        job = bar.add_task(f"study {args.study}", total=total)
        result = STUDIES.make(
            args.study, spec=spec, out=args.out, on_progress=lambda n: bar.advance(job, n)
        )
    if args.json:
        console.print_json(json.dumps(result.numbers))
    else:
        console.print(study_table(args.study, result).to_rich())
    console.print(f"numbers: [green]{result.out / f'{args.study}.json'}[/]")
    for figure in _figure(args.study, result, spec.name, spec.episodes):
        console.print(f"figure: [green]{escape(str(figure))}[/]")
    return 0


SHORT_LIST = 10  # lists up to this long become columns; longer ones (per-round curves) stay in JSON


def study_table(study: str, result: StudyResult) -> TextTable:
    """One row per arm: every number of the study, short lists one column per entry."""
    columns: list[str] = []
    rows: list[list[str]] = []
    long: list[str] = []
    for values in result.numbers.values():
        for key, value in values.items():
            if isinstance(value, list) and len(value) > SHORT_LIST:
                long += [key] if key not in long else []
                continue
            names = (
                [f"{key} {i + 1}" for i in range(len(value))] if isinstance(value, list) else [key]
            )
            columns += [n for n in names if n not in columns]
    for values in result.numbers.values():
        cells: dict[str, str] = {}
        for key, value in values.items():
            if isinstance(value, list):
                cells |= {f"{key} {i + 1}": _cell(v) for i, v in enumerate(value)}
            else:
                cells[key] = _cell(value)
        rows.append([cells.get(c, "") for c in columns])
    arms = list(result.numbers)
    notes = [f"{study}.json also holds {', '.join(long)}"] if long else []
    return TextTable(
        f"study {study}",
        ["arm", *(_label(c) for c in columns)],
        [[arm, *row] for arm, row in zip(arms, rows, strict=True)],
        notes,
    )


def _label(key: str) -> str:
    """``error_rounds_5_8`` -> ``error rounds 5–8``."""
    return re.sub(r"(\d+)_(\d+)$", r"\1–\2", key).replace("_", " ")


def _cell(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


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
