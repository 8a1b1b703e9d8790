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

import numpy as np
from rich.console import Console

from opar_sim.cli.commands.common import UsageError, int_at_least
from opar_sim.cli.tables import TextTable
from opar_sim.measure.stats import Estimate
from opar_sim.rundir import write_json
from opar_sim.traces.advise import (
    CAP_SIGNALS,
    CapRow,
    cap_table,
    restarts,
    smallest_cap,
    time_to_success,
)
from opar_sim.traces.stopping import load_costs

NAME = "advise"
HELP = "the cap that keeps a share of the successes, and whether restarting beats continuing"
SHOWN_ROWS = 16  # rows of each printed cap table (advise.json has every cap)


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
        type=int_at_least(2),
        help="turns allowed per task in the restart study (default: the longest run)",
    )
    parser.add_argument("--of", metavar="CONTROLLER", help="whose runs (a run of several)")


def _cell(e: Estimate) -> str:
    return f"{e.mean:.3f} [{e.low:.3f}, {e.high:.3f}]"


def _shown(rows: list[CapRow], best: CapRow | None) -> list[CapRow]:
    """Every row of a short table; else an even thinning, with the recommended cap kept."""
    if len(rows) <= SHOWN_ROWS + 14:
        return rows
    picks = set(np.linspace(0, len(rows) - 1, SHOWN_ROWS).round().astype(int).tolist())
    if best is not None:
        picks.add(rows.index(best))
    return [rows[k] for k in sorted(picks)]


def run(args: argparse.Namespace, console: Console) -> int:
    """Print the cap tables, the smallest caps and the restart verdict; write advise.json.

    Returns:
        0; a directory that is not a run exits 2.
    """
    runs = load_costs(args.rundir, args.of)
    if not any(r.success for r in runs):
        raise UsageError(f"{args.rundir}: no recorded success, so no cap can keep one")
    tasks = len({r.task for r in runs})
    out: dict[str, object] = {"runs": len(runs), "tasks": tasks, "share": args.share}
    smallest: list[list[str]] = []
    for signal in CAP_SIGNALS:
        rows = cap_table(runs, signal)
        best = smallest_cap(rows, args.share)
        out[signal] = [r.to_dict() for r in rows]
        table = [
            [
                str(r.cap) + (" *" if r is best else ""),
                _cell(r.success_rate),
                _cell(r.kept_share),
                _cell(r.saved),
                _cell(r.saved_failures),
            ]
            for r in _shown(rows, best)
        ]
        columns = [f"{signal} cap", "success rate", "successes kept", "saved (all)", "saved (fail)"]
        notes = [f"* the smallest cap keeping {args.share:.0%} of the successes"]
        if len(table) < len(rows):
            notes.append(f"{len(table)} of {len(rows)} caps shown; every cap in advise.json")
        console.print(TextTable(f"{signal} caps", columns, table, notes).to_rich())
        if best is not None:
            smallest.append([signal, str(best.cap), _cell(best.kept_share), _cell(best.saved)])
    console.print(
        TextTable(
            f"smallest caps keeping {args.share:.0%} of the successes",
            ["signal", "cap", "successes kept", "saved (all runs)"],
            smallest,
            [
                f"{len(runs)} runs of {tasks} tasks; exact replay of each cap on the recorded "
                "runs; 95 % intervals from a bootstrap over tasks"
            ],
        ).to_rich()
    )
    study = restarts(runs, args.budget)
    pick = sorted(
        {1, 2, 3, 5, 8, 10, 12, 15, 20, 25, study.budget - 1} & set(range(1, study.budget))
    )
    table = [
        [str(r.cutoff), _cell(r.success), _cell(r.gain)]
        for r in study.rows
        if r.cutoff in pick or r is study.best
    ]
    table.append(["continue", _cell(study.continuing), "0"])
    how = (
        "the worlds pooled as draws of one task (one trial each)"
        if study.pooled
        else f"each attempt a fresh draw from its own task's recorded trials ({study.tasks} tasks)"
    )
    notes = [
        f"restart: an attempt still running at the cutoff is killed and a fresh one started, "
        f"within {study.budget} turns in all; an attempt that ends by itself stands",
        f"estimated from the time-to-success distribution: {how}, independent given the task",
        study.verdict(),
    ]
    console.print(
        TextTable(
            f"restart at a cutoff vs continue (budget {study.budget} turns)",
            ["cutoff", "success within budget", "gain vs continue"],
            table,
            notes,
        ).to_rich()
    )
    out["time_to_success"] = time_to_success(runs)
    out["restarts"] = {
        "budget": study.budget,
        "pooled": study.pooled,
        "continue": study.continuing.to_dict(),
        "cutoffs": [
            {"cutoff": r.cutoff, "success": r.success.to_dict(), "gain": r.gain.to_dict()}
            for r in study.rows
        ],
        "verdict": study.verdict(),
    }
    path = Path(args.rundir) / "advise.json"
    write_json(path, out)
    console.print(f"wrote {path}", highlight=False)
    return 0
