"""``opar-sim run SPEC``: run an experiment and write its run directory."""

from __future__ import annotations

import argparse
from contextlib import nullcontext

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.common import (
    add_confirm_flag,
    add_run_flags,
    executor_config,
    out_dir,
    require_backends,
)
from opar_sim.cli.llm_costs import print_llm_costs
from opar_sim.cli.render import is_llm, llm_steps, progress_bar
from opar_sim.cli.tables import outcome_table, summary_table
from opar_sim.rundir import prepare_out_dir, refuse_other_spec
from opar_sim.running.executors import ExecutorConfig, fit_to_size, open_executor
from opar_sim.running.runner import RunResult, run_experiment
from opar_sim.spec.build import build, load_spec
from opar_sim.spec.edit import with_overrides
from opar_sim.spec.schema import ExperimentSpec

NAME = "run"
HELP = "run an experiment spec and write a run directory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run flags, ``--controller`` (replaces the spec's controllers) and ``--agent`` kind."""
    add_run_flags(parser)
    add_confirm_flag(parser)
    parser.add_argument(
        "--controller",
        help="use this registered controller (see `list`), or your own as "
        "path/to/file.py:ClassName",
    )
    parser.add_argument(
        "--agent",
        choices=("simulated", "llm"),
        help="agent kind; llm uses the spec's [agent.backend] (default: embedded llama.cpp)",
    )


def execute(
    spec: ExperimentSpec, args: argparse.Namespace, console: Console, *, tables: bool = True
) -> RunResult:
    """Run ``spec`` with a progress bar and print its tables; shared with ``compare``.

    Writes the run directory and its progress figure (and the learning curve
    with Reflexion); prints the summary and outcome tables, the paths and, for
    LLM runs, the model costs.  ``compare`` passes ``tables=False`` and prints
    its own comparison table.

    Args:
        spec: The spec, overrides applied.
        args: The parsed run flags (``--out``, ``--resume``, executor flags).
        console: Where to print.
        tables: Print the summary and outcome tables.

    Returns:
        The finished run.
    """
    engine = getattr(args, "engine", "simpy")
    if engine == "batch":
        from opar_sim.engines.batch import check_batch  # here: a SimPy run loads no Numba

        check_batch(spec)  # refused in one line before anything is printed or written
    out = out_dir(args, spec.name)
    require_backends(spec)
    if args.resume:
        refuse_other_spec(spec, out)  # before the header and the progress bar
    else:
        prepare_out_dir(out)
    config = executor_config(args)
    llm = is_llm(spec)
    if llm and args.workers is None and not (args.scheduler or args.dask_local):
        config = ExecutorConfig("serial", 1)  # one model in this process, and a live view
    names = [c.name for c in spec.controller_list()]
    from opar_sim.figures.run import FIGURE_EPISODES  # the module imports matplotlib lazily

    config, note = fit_to_size(config, spec.episodes * spec.trials * len(names))
    console.print(
        f"[bold]{spec.name}[/]: task [cyan]{spec.task.name}[/], controllers "
        f"[cyan]{', '.join(names)}[/], {spec.episodes} episodes each"
        + (f" × {spec.trials} trials" if spec.trials > 1 else "")
        + f", seed {spec.seed}"
    )
    if note and getattr(args, "verbose", False):  # how it runs: not before the result
        console.print(note, markup=False, highlight=False)
    for caution in build(spec).cautions:  # a fitted law run outside its fit says so first
        console.print(f"caution: {caution}", markup=False, highlight=False, style="yellow")
    with (
        open_executor(config) as executor,
        progress_bar(console) as bar,
        llm_steps(bar, console) if llm else nullcontext(),
    ):
        job = bar.add_task(spec.name, total=spec.episodes * len(names))
        result = run_experiment(
            spec,
            out,
            executor=executor,
            parallelism=config.parallelism,
            resume=args.resume,
            on_progress=lambda n: bar.advance(job, n),
            on_note=lambda note: console.print(f"resume: {note}", markup=False, highlight=False),
            engine=engine,
            keep_traces=FIGURE_EPISODES,  # the figure's trajectories, collected as it runs
        )
    if tables:
        console.print(summary_table(result.summary, f"{spec.name}: means per episode"))
        outcomes = {name: s["outcomes"] for name, s in result.summary.items()}
        console.print(outcome_table(outcomes))
    console.print(f"run directory: [green]{escape(str(result.out))}[/]")
    from opar_sim.figures.run import write_run_figures  # matplotlib only when drawing

    for figure in write_run_figures(spec, result.out, result.traces):
        console.print(f"figure: [green]{escape(str(figure))}[/]")
    print_llm_costs(result.out, console)
    return result


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the spec with the overrides applied (see ``execute`` for what it prints and writes).

    Returns:
        0.
    """
    spec = with_overrides(
        load_spec(args.spec),
        episodes=args.episodes,
        seed=args.seed,
        controller=args.controller,
        agent=getattr(args, "agent", None),
        confirm=args.confirm,
        trials=args.trials,
    )
    execute(spec, args, console)
    return 0
