"""``opar-sim sweep SPEC``: run the spec's [sweep] grid, every point on the same seeds."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.common import add_run_flags, executor_config, out_dir, require_backends
from opar_sim.cli.render import progress_bar
from opar_sim.running.executors import open_executor
from opar_sim.running.sweep import SweepResult, run_sweep
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import sweep_points, with_overrides
from opar_sim.spec.schema import ExperimentSpec

NAME = "sweep"
HELP = "run a parameter grid ([sweep] table) on common random numbers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run flags only: the grid comes from the spec's ``[sweep]`` table."""
    add_run_flags(parser)


def run(args: argparse.Namespace, console: Console) -> int:
    """Run every grid point into one sweep directory and summarise it.

    Writes ``sweep.json``, one run directory per point, ``sweep_summary.json``
    and the sweep figure; prints a table of success and cost per point and
    controller.

    Returns:
        0.
    """
    spec = with_overrides(load_spec(args.spec), episodes=args.episodes, seed=args.seed)
    points = sweep_points(spec, args.spec)
    out = out_dir(args, spec.name)
    config = executor_config(args)
    require_backends(spec)
    per_point = spec.episodes * len(spec.controller_list())
    console.print(
        f"[bold]{spec.name}[/]: {len(points)} points × {per_point} episodes, seed {spec.seed}, "
        f"{config.kind} executor with {config.parallelism} worker(s)"
    )
    with open_executor(config) as executor, progress_bar(console, unit="") as bar:
        point_job = bar.add_task("points", total=len(points))
        episode_job = bar.add_task("episodes", total=len(points) * per_point)
        result = run_sweep(
            spec,
            out,
            executor=executor,
            parallelism=config.parallelism,
            resume=args.resume,
            on_point=lambda point: bar.update(point_job, completed=point.index),
            on_progress=lambda n: bar.advance(episode_job, n),
            points=points,
            on_note=lambda note: console.print(f"resume: {note}", markup=False, highlight=False),
            engine=args.engine,
        )
        bar.update(point_job, completed=len(points))
    console.print(result.table())
    console.print(f"sweep directory: [green]{escape(str(result.out))}[/]")
    _figure(console, spec, result)
    return 0


def _figure(console: Console, spec: ExperimentSpec, result: SweepResult) -> None:
    from opar_sim.figures.style import save  # matplotlib only when drawing
    from opar_sim.figures.tuning import sweep_figure  # matplotlib only when drawing

    title = f"{spec.name}: sweep over {', '.join(spec.sweep)}"
    for figure in save(sweep_figure(result.rows, title), str(result.out / "sweep")):
        console.print(f"figure: [green]{escape(str(figure))}[/]")
