"""``opar-sim replay RUNDIR --controller NAME``: another controller on a recorded run.

No model is called: the recorded evaluations are re-decided (see
``opar_sim.analysis.replay``).  Writes ``RUNDIR/replay_NAME.jsonl``, one line per episode.
"""

from __future__ import annotations

import argparse

from rich.console import Console

import controllers
from opar_sim.analysis.recorded import load_run
from opar_sim.analysis.replay import exactness, replay, tally
from opar_sim.cli.commands.common import UsageError
from opar_sim.cli.tables import TextTable
from opar_sim.experiment.rundir import to_line

NAME = "replay"
HELP = "re-decide a recorded run under another controller, without calling the model"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The recorded run directory and ``--controller``, the registered controller to replay."""
    parser.add_argument("rundir", help="a run directory")
    parser.add_argument("--controller", required=True, help="a registered controller (see list)")


def run(args: argparse.Namespace, console: Console) -> int:
    """Replay every recorded episode under the controller and tabulate the verdicts.

    Writes ``RUNDIR/replay_NAME.jsonl`` (one line per episode) and prints the
    count of each verdict, how many are checkable (``same`` and ``stop``, whose outcome is
    known) and uncheckable (``replan`` and ``continue``), and the outcomes, recorded
    against replayed.  A run whose verdicts cannot be exact (guards, Reflexion) is named.

    Returns:
        0; an unknown controller is a usage error (exit 2).
    """
    recorded = load_run(args.rundir, need_steps=True)
    try:
        controllers.make(args.controller)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    replayed = replay(recorded, lambda: controllers.make(args.controller))
    out = recorded.path / f"replay_{args.controller}.jsonl"
    out.write_text("".join(to_line(r.to_dict()) for r in replayed), encoding="utf-8")
    counts = tally(replayed)
    verdicts = [[verdict, str(n)] for verdict, n in sorted(counts["verdicts"].items())]
    title = f"replayed under {args.controller}"
    console.print(TextTable(title, ["verdict", "episodes"], verdicts, []).to_rich())
    checkable = counts["checkable"]
    console.print(
        f"checkable (outcome known): {checkable['checkable']}, "
        f"uncheckable (diverged, outcome unknown): {checkable['uncheckable']}",
        highlight=False,
    )
    inexact = exactness(recorded.spec)
    if inexact is not None:
        console.print(f"note: verdicts are not exact: {inexact}", highlight=False)
    names = sorted(set(counts["recorded"]) | set(counts["outcomes"]))
    rows = [[n, str(counts["recorded"][n]), str(counts["outcomes"][n])] for n in names]
    columns = ["outcome", "recorded", args.controller]
    console.print(TextTable("outcomes", columns, rows, []).to_rich())
    console.print(f"wrote {out}", highlight=False)
    return 0
