"""``opar-sim claims [--quick] [--out DIR]``: every number the docs state, regenerated.

The claims are defined in ``opar_sim.studies.claims`` (sentence, shipped
specs and overrides, seeds, measure); this command runs their arms on the
evaluation seeds, prints the claims table and writes ``claims.json``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.common import (
    add_executor_flags,
    default_out,
    executor_config,
)
from opar_sim.cli.render import progress_bar
from opar_sim.rundir import prepare_out_dir, write_json
from opar_sim.studies.claims import (
    DEFAULT_BUDGET,
    EPISODES,
    QUICK,
    QUICK_EPISODES,
    claims,
    select_claims,
)
from opar_sim.studies.seeds import EVAL_SEEDS, QUICK_SEEDS

NAME = "claims"
HELP = "regenerate every number the docs state (docs/results.md), with intervals and verdicts"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--quick``, ``--only``, ``--out`` and the executor flags."""
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"seed {QUICK_SEEDS[0]}, {QUICK_EPISODES} episodes per arm (a smoke test; "
        f"default: seeds {EVAL_SEEDS[0]}..{EVAL_SEEDS[-1]}, {EPISODES} episodes each)",
    )
    parser.add_argument("--only", help="comma-separated claim ids (default: all)")
    parser.add_argument("--root", type=Path, default=Path("."), help="where experiments/ is")
    parser.add_argument(
        "--out", type=Path, help="output directory (default: runs/claims/TIMESTAMP)"
    )
    add_executor_flags(parser)


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the claims' arms, print the table and write ``claims.json``.

    Returns:
        0; an unknown claim id is a usage error (exit 2).
    """
    started = time.perf_counter()
    only = [i.strip() for i in args.only.split(",") if i.strip()] if args.only else None
    select_claims(only)  # an unknown id: exit 2 before the output directory is made
    budget = QUICK if args.quick else DEFAULT_BUDGET
    out: Path = args.out or default_out("claims")
    prepare_out_dir(out)
    config = executor_config(args)
    with progress_bar(console) as bar:
        job = bar.add_task("claims", total=None)
        result = claims(
            only,
            budget,
            config,
            out=out,
            root=args.root,
            on_progress=lambda n: bar.advance(job, n),
            on_start=lambda total: bar.update(job, total=total),
        )
    elapsed = time.perf_counter() - started
    write_json(out / "claims.json", result.to_dict())
    console.print(result.table().to_rich())
    console.print(f"wall time: {elapsed:.0f} s")
    console.print(f"claims: [green]{escape(str(out / 'claims.json'))}[/]")
    return 0
