"""``opar-sim calibrate RUNDIR``: fit the simulated agent to a recorded (LLM) run.

Prints and writes ``RUNDIR/calibrated.toml`` (an ``[agent]`` section to paste
into a spec) and ``RUNDIR/calibration.json``, after checking that the
calibrated agent's success rate and mean steps fall within the recorded
run's 95 % intervals.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from opar_sim.analysis.calibration import check, fit, refine
from opar_sim.analysis.recorded import load_run
from opar_sim.cli.commands.common import int_at_least
from opar_sim.experiment.rundir import write_bytes, write_json

NAME = "calibrate"
HELP = "fit the simulated agent's knobs to a recorded run and write a spec snippet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run directory to fit, and the check's episodes and seed.

    ``--direct`` keeps the direct estimates of bias and noise instead of
    refining them by simulated moments.
    """
    parser.add_argument("rundir", help="a run directory (e.g. of an --agent llm run)")
    parser.add_argument(
        "--episodes",
        type=int_at_least(1),
        default=1000,
        help="simulated episodes for the check (default 1000)",
    )
    parser.add_argument("--seed", type=int_at_least(0), default=0, help="seed of the check")
    parser.add_argument(
        "--direct",
        action="store_true",
        help="keep the direct estimates of bias and noise (no simulated-moments refinement)",
    )


def run(args: argparse.Namespace, console: Console) -> int:
    """Fit the recorded run, check the fit by simulation, and report it.

    Writes ``RUNDIR/calibrated.toml`` and ``RUNDIR/calibration.json``; prints the
    ``[agent]`` snippet, then the recorded and simulated success rates and mean
    steps, each marked within or OUTSIDE the recorded 95 % interval.

    Returns:
        0; a directory that is not a run exits 2 through ``SpecError``.
    """
    recorded = load_run(args.rundir, need_steps=True)
    calibration = fit(recorded)
    if not args.direct:
        calibration = refine(recorded, calibration)
    snippet = calibration.to_toml(str(recorded.path))
    result = check(recorded, calibration, args.episodes, args.seed)
    write_bytes(recorded.path / "calibrated.toml", snippet.encode())
    report = {"params": calibration.params, "evidence": calibration.evidence}
    report["check"] = result.to_dict()
    write_json(recorded.path / "calibration.json", report)
    console.print(snippet, highlight=False, markup=False)
    r = result
    lo, hi = r.recorded_success_ci
    slo, shi = r.recorded_steps_ci
    console.print(
        f"recorded ({len(recorded.episodes)} episodes): success {r.recorded_success:.1%} "
        f"[{lo:.1%}, {hi:.1%}], mean steps {r.recorded_steps:.2f} [{slo:.2f}, {shi:.2f}]",
        highlight=False,
    )
    console.print(
        f"calibrated simulation ({r.episodes} episodes): success {r.simulated_success:.1%} "
        f"({'within' if r.success_within else 'OUTSIDE'}), mean steps "
        f"{r.simulated_steps:.2f} ({'within' if r.steps_within else 'OUTSIDE'})",
        highlight=False,
    )
    console.print(f"wrote {recorded.path / 'calibrated.toml'}", highlight=False)
    return 0
