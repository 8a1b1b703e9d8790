"""``opar-sim calibrate RUNDIR``: fit the simulated agent to a record, checked on held-out tasks.

Two kinds of record go through it:

- a run recorded by opar-sim (an ``--agent llm`` run, or a simulated one): its
  steps give the agent's knobs directly (``calibration.direct.fit``; bias and
  noise refined by simulated moments unless ``--direct``), checked in sample
  against the record's success rate and mean steps;
- any record of runs per task, e.g. one imported with ``opar-sim traces
  import``: only outcomes, tool calls and task features, fitted on a model spec
  (``--model``, by default ``experiments/tau_airline_model.toml``).

Both then fit the task heterogeneity (``calibration.heterogeneity``: a per-task
random effect on plan quality, its mean by a task feature; with ``--task-length``,
or a model whose task has ``extra_reads_mean`` > 0, also a latent task length) by
simulated maximum likelihood, and check it by cross-validation over task folds; "fits"
is printed only when the held-out checks pass.  Writes
``RUNDIR/calibrated.toml`` (an ``[agent]`` section to paste into a spec) and
``RUNDIR/calibration.json``.  The protocol is ``opar_sim.calibration.calibrate``'s.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from opar_sim.calibration.calibrate import CalibrationBudget, calibrate
from opar_sim.cli.commands.common import (
    MAX_CELL_EPISODES,
    MAX_FOLDS,
    int_at_least,
    int_between,
)
from opar_sim.cli.progress import stages
from opar_sim.rundir import write_bytes, write_json
from opar_sim.traces.runs import calibration_limits

NAME = "calibrate"
HELP = "fit the simulated agent to a record (LLM run or imported) and check it on held-out tasks"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run directory to fit, the model, the folds and the simulation sizes.

    ``--direct`` keeps the direct estimates of bias and noise of an opar-sim
    record instead of refining them by simulated moments.
    """
    parser.add_argument("rundir", help="a run directory (an --agent llm run, or imported)")
    parser.add_argument(
        "--model",
        help="the model spec (simulated agent) to fit; default: for an opar-sim record its own "
        "spec with the calibrated agent, else experiments/tau_airline_model.toml",
    )
    parser.add_argument(
        "--folds",
        type=int_between(2, MAX_FOLDS),
        default=5,
        help=f"task folds held out (default 5, at most {MAX_FOLDS:,})",
    )
    parser.add_argument(
        "--cell-episodes",
        type=int_between(4, MAX_CELL_EPISODES),
        default=48,
        help="simulated episodes per (feature, shift) cell of the table (default 48, at most "
        f"{MAX_CELL_EPISODES:,})",
    )
    parser.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="PATH=V1,V2,...",
        help="also try these values of a model setting (e.g. "
        "task.params.wrong_write_share=0.3,0.5,0.7); each fit keeps the likeliest, "
        "chosen on its training tasks only (repeatable: every combination)",
    )
    parser.add_argument(
        "--shape",
        metavar="FEATURE",
        help="also match each task's length: the model's task is stretched to the recorded "
        "task's value of this feature (tool_chain: actions, the ground-truth action count); "
        "the table then has a cell per (write count, length) of the record",
    )
    parser.add_argument(
        "--task-length",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="fit a latent task length: each world needs r more lookups, r per world from a "
        "negative binomial whose mean and size are fitted (tool_chain's extra_reads_*); "
        "default: on when the model's task has extra_reads_mean > 0",
    )
    parser.add_argument(
        "--length-slope",
        action="store_true",
        help="with the task length, also fit its mean's dependence on the feature, "
        "m * exp(c * x) (tool_chain's extra_reads_slope; default: on when the model's is not 0)",
    )
    parser.add_argument(
        "--homogeneous",
        action="store_true",
        help="fit a model without task heterogeneity (one shift for every task)",
    )
    parser.add_argument(
        "--episodes",
        type=int_at_least(1),
        default=1000,
        help="simulated episodes for the in-sample check of an opar-sim record (default 1000)",
    )
    parser.add_argument("--seed", type=int_at_least(0), default=0, help="seed of the checks")
    parser.add_argument(
        "--direct",
        action="store_true",
        help="keep the direct estimates of bias and noise (no simulated-moments refinement)",
    )


def run(args: argparse.Namespace, console: Console) -> int:
    """Fit the record, check the fit on held-out task folds, and report it.

    Returns:
        0 whatever the verdict (it is printed); a directory that is not a run, or a
        model that cannot reproduce the record's features, exits 2 through ``SpecError``.
    """
    for line in calibration_limits(args.rundir):  # an imported record: what it can't give
        console.print(line, highlight=False)
    result = calibrate(
        args.rundir,
        CalibrationBudget(args.folds, args.cell_episodes, args.episodes),
        model=args.model,
        vary=args.vary,
        shape=args.shape,
        task_length=args.task_length,
        length_slope=args.length_slope,
        homogeneous=args.homogeneous,
        seed=args.seed,
        direct=args.direct,
        note=lambda line: console.print(line, highlight=False),
        stage=stages(console),
    )
    write_bytes(result.path / "calibrated.toml", result.snippet.encode())
    write_json(result.path / "calibration.json", result.to_dict())
    console.print(result.snippet, highlight=False, markup=False)
    console.print(result.table())
    console.print(result.verdict(), highlight=False)
    console.print(f"wrote {result.path / 'calibrated.toml'}", highlight=False)
    return 0
