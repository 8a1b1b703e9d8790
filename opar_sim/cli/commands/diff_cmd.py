"""``opar-sim diff RUNDIR RUNDIR``: two runs compared per controller, paired on common episodes."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from rich.console import Console

from opar_sim.cli.commands.common import UsageError
from opar_sim.cli.tables import TextTable, paired_rows
from opar_sim.measure.diff import RunDiff, diff_runs
from opar_sim.measure.stats import Estimate
from opar_sim.rundir import RunDirError

NAME = "diff"
HELP = "compare two run directories per controller (B - A, paired on the episodes both hold)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The two run directories and ``--json``."""
    parser.add_argument("a", type=Path, help="the baseline run directory (A)")
    parser.add_argument("b", type=Path, help="the run directory compared with it (B)")
    parser.add_argument("--json", action="store_true", help="print the differences as JSON")


def diff_table(d: RunDiff) -> TextTable:
    """The table of ``diff``: each run's success and B − A with 95 % intervals.

    Args:
        d: The comparison.

    Returns:
        One row per controller both runs hold.
    """
    measures = ("success", "steps", "tokens", "replans")
    rows = [r for c in d.controllers for r in paired_rows(c, c.controller, measures)]
    worlds = (
        "same seed and task: episode i is the same world in both runs (common random numbers)"
        if d.same_worlds
        else "UNPAIRED: seed or task differ, so episode i is not the same world in A and B; "
        "the Δ columns match episode numbers only and their intervals and p are not valid"
    )
    notes = [
        f"A = {d.a}, B = {d.b}; B − A per episode over the episodes both hold; {worlds}",
        "success in points (pp); steps, tokens and REPLANs per episode; [a, b]: paired "
        "bootstrap 95% CI; p: exact McNemar",
    ]
    if d.only_a or d.only_b:
        only_a, only_b = ", ".join(d.only_a) or "none", ", ".join(d.only_b) or "none"
        notes.append(f"only in A: {only_a}; only in B: {only_b}")
    return TextTable(
        "diff: B − A per controller" + ("" if d.same_worlds else " (UNPAIRED)"),
        ["controller", "measure", "A", "B", "B − A", "p"],
        rows,
        notes,
        left=2,
    )


def _as_json(d: RunDiff) -> dict[str, object]:
    def est(e: Estimate) -> dict[str, float | None]:
        return {k: (None if math.isnan(v) else v) for k, v in e.to_dict().items()}

    return {
        "a": str(d.a),
        "b": str(d.b),
        "same_worlds": d.same_worlds,
        "only_a": d.only_a,
        "only_b": d.only_b,
        "controllers": {
            c.controller: {
                "n_a": c.n_a,
                "n_b": c.n_b,
                "common": c.common,
                "success_a": c.success_a.rate,
                "success_b": c.success_b.rate,
                "success_diff": est(c.success_diff),
                "mcnemar_p": c.mcnemar_p,
                **{f"{q}_diff": est(e) for q, e in c.diffs.items()},
                **{f"{q}_a": v for q, v in c.means_a.items()},
                **{f"{q}_b": v for q, v in c.means_b.items()},
            }
            for c in d.controllers
        },
    }


def run(args: argparse.Namespace, console: Console) -> int:
    """Print the per-controller differences of run B against run A.

    Returns:
        0.
    """
    try:
        d = diff_runs(args.a, args.b)
    except RunDirError as exc:
        raise UsageError(str(exc)) from None
    if not d.controllers:
        raise UsageError(
            f"diff: {args.a} and {args.b} share no controller "
            f"(A: {', '.join(d.only_a)}; B: {', '.join(d.only_b)})"
        )
    if args.json:
        console.print_json(json.dumps(_as_json(d)))
    else:
        console.print(diff_table(d))
    return 0
