"""``opar-sim replay RUNDIR --controller NAME``: another controller on a recorded run.

No model is called: the recorded evaluations are re-decided (see
``opar_sim.analysis.replay``).  Writes ``RUNDIR/replay_NAME.jsonl``, one line per episode.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

import controllers
from opar_sim.analysis.recorded import load_run
from opar_sim.analysis.replay import replay, tally
from opar_sim.cli.commands.common import UsageError
from opar_sim.experiment.rundir import to_line

NAME = "replay"
HELP = "re-decide a recorded run under another controller, without calling the model"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rundir", help="a run directory")
    parser.add_argument("--controller", required=True, help="a registered controller (see list)")


def run(args: argparse.Namespace, console: Console) -> int:
    recorded = load_run(args.rundir)
    try:
        controllers.make(args.controller)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    replayed = replay(recorded, lambda: controllers.make(args.controller))
    out = recorded.path / f"replay_{args.controller}.jsonl"
    out.write_text("".join(to_line(r.to_dict()) for r in replayed), encoding="utf-8")
    counts = tally(replayed)
    table = Table(title=f"replayed under {args.controller}", title_justify="left")
    table.add_column("verdict", style="bold")
    table.add_column("episodes", justify="right")
    for verdict, n in sorted(counts["verdicts"].items()):
        table.add_row(verdict, str(n))
    console.print(table)
    outcomes = Table(title="outcomes", title_justify="left")
    outcomes.add_column("outcome", style="bold")
    outcomes.add_column("recorded", justify="right")
    outcomes.add_column(args.controller, justify="right")
    for name in sorted(set(counts["recorded"]) | set(counts["outcomes"])):
        outcomes.add_row(name, str(counts["recorded"][name]), str(counts["outcomes"][name]))
    console.print(outcomes)
    console.print(f"wrote {out}", highlight=False)
    return 0
