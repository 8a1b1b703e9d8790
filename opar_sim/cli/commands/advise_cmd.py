"""``opar-sim advise RUNDIR``: which cap keeps my successes, and does restarting pay?

Reads an imported or a simulated run (``opar_sim.traces.advise``): for every turn,
tool-call and token cap from 1 to the longest run, the success kept and the cost saved
(exact: a cap only cuts a recorded prefix), the smallest cap keeping ``--share`` of the
successes, and restarting at a cutoff against continuing (a model of fresh attempts,
from each task's recorded trials).  Writes ``RUNDIR/advise.json`` with every cap.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from opar_sim.cli.commands.common import int_between
from opar_sim.rundir import write_json
from opar_sim.traces.advise import MAX_BUDGET, advise

NAME = "advise"
HELP = "the cap that keeps a share of the successes, and whether restarting beats continuing"


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share in (0, 1], got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a share in (0, 1], got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run directory, ``--share``, ``--budget`` and ``--of``."""
    parser.add_argument("rundir", help="a run directory (simulated, or imported by traces)")
    parser.add_argument(
        "--share",
        type=_share,
        default=0.99,
        help="the share of recorded successes the cap must keep (default 0.99)",
    )
    parser.add_argument(
        "--budget",
        type=int_between(2, MAX_BUDGET),
        help="turns allowed per task in the restart study (default: the longest run; at most "
        f"{MAX_BUDGET:,})",
    )
    parser.add_argument("--of", metavar="CONTROLLER", help="whose runs (a run of several)")


def run(args: argparse.Namespace, console: Console) -> int:
    """Print the cap tables, the smallest caps and the restart verdict; write advise.json.

    Returns:
        0; a directory that is not a run exits 2.
    """
    advice = advise(args.rundir, share=args.share, budget=args.budget, of=args.of)
    for table in advice.tables():
        console.print(table.to_rich())
    path = Path(args.rundir) / "advise.json"
    write_json(path, advice.to_dict())
    console.print(f"wrote {path}", highlight=False)
    return 0
