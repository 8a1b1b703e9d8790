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
from opar_sim.measure.table import wrap
from opar_sim.rundir import write_json
from opar_sim.traces.advise import MAX_BUDGET, Advice, advise

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
    parser.add_argument(
        "--detail",
        action="store_true",
        help="also print every cap table and the restart study behind the answer",
    )


WORDS = {"steps": "turns", "calls": "tool calls", "tokens": "tokens"}


def answer(advice: Advice) -> list[str]:
    """The answer in a few lines: the smallest cap of each kind, and whether to restart."""
    share = f"{advice.share:.0%}"
    if advice.note:  # no recorded success: nothing to keep, no restart to judge
        return [f"{advice.runs} runs of {advice.tasks} tasks: {advice.note}"]
    lines = [
        f"{advice.runs} runs of {advice.tasks} tasks: the smallest caps keeping {share} of "
        "the recorded successes"
    ]
    for signal, best in advice.best.items():
        what = WORDS.get(signal, signal)
        if best is None:
            lines.append(f"  {what}: no cap keeps {share}")
            continue
        s = best.saved
        lines.append(
            f"  {what} ≤ {best.cap:,} per run: keeps {100 * best.kept_share.mean:.1f} % of "
            f"successes, saves {100 * s.mean:.1f} % [{100 * s.low:.1f}, {100 * s.high:.1f}] "
            f"of {what}"
        )
    lines.append(f"restarts: {advice.restarts.verdict()}")
    return lines


def run(args: argparse.Namespace, console: Console) -> int:
    """Print the answer (with ``--detail`` every table behind it); write advise.json.

    Returns:
        0; a directory that is not a run exits 2.
    """
    advice = advise(args.rundir, share=args.share, budget=args.budget, of=args.of)
    for line in answer(advice):  # wrapped between words, never inside an interval
        console.print(wrap(line, console.width), highlight=False, markup=False)
    if args.detail:
        for table in advice.tables():
            console.print(table)
    path = Path(args.rundir) / "advise.json"
    write_json(path, advice.to_dict())
    more = "" if args.detail else "; --detail prints every cap and the restart study"
    console.print(f"every cap in {path}{more}", highlight=False, markup=False)
    return 0
