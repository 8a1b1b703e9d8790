"""``opar-sim claims [--quick] [--recheck [--cap N]] [--out DIR]``: every number the docs state.

The claims are defined in ``opar_sim.studies.claim_registry`` (sentence, shipped specs and
overrides, measure); this command runs their arms on the evaluation seeds, prints the
claims table (raw and Holm-adjusted p, verdicts on the adjusted p, the exploratory claims
apart) and writes ``claims.json``.  ``--recheck`` runs the confirmatory re-check on the
fresh seeds instead, each claim with the episodes planned for 80 % power at its claimed
effect (``opar_sim.studies.claim_recheck``), and writes ``recheck.json``.
"""

from __future__ import annotations

import argparse
import shlex
import time
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.common import (
    UsageError,
    add_executor_flags,
    default_out,
    executor_config,
    int_at_least,
)
from opar_sim.cli.render import progress_bar
from opar_sim.rundir import write_json
from opar_sim.studies.claim_outdir import open_claims_dir
from opar_sim.studies.claim_recheck import CAP_EPISODES, recheck
from opar_sim.studies.claims import (
    DEFAULT_BUDGET,
    EPISODES,
    QUICK,
    QUICK_EPISODES,
    claims,
    select_claims,
)
from opar_sim.studies.seeds import EVAL_SEEDS, FRESH_SEEDS, QUICK_SEEDS

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
    parser.add_argument(
        "--recheck",
        action="store_true",
        help=f"the confirmatory re-check on fresh seeds {', '.join(map(str, FRESH_SEEDS))}, "
        "each claim with the episodes its test needs for 80 %% power at its claimed effect",
    )
    parser.add_argument(
        "--cap",
        type=int_at_least(1),
        default=None,
        help=f"--recheck: the most episodes one claim runs (default {CAP_EPISODES}; "
        f"--quick: {QUICK_EPISODES * len(FRESH_SEEDS)})",
    )
    parser.add_argument("--only", help="comma-separated claim ids (default: all)")
    parser.add_argument("--root", type=Path, default=Path("."), help="where experiments/ is")
    parser.add_argument(
        "--out", type=Path, help="output directory (default: runs/claims/TIMESTAMP)"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="finish a claims run a kill interrupted in --out (or measure a finished one again)",
    )
    add_executor_flags(parser)


def study(args: argparse.Namespace) -> tuple[Any, str]:
    """The study the flags ask for, with its budget bound, and the JSON file it writes."""
    if args.recheck:
        quick = QUICK_EPISODES * len(FRESH_SEEDS)
        return partial(recheck, cap=args.cap or (quick if args.quick else CAP_EPISODES)), "recheck"
    return partial(claims, budget=QUICK if args.quick else DEFAULT_BUDGET), "claims"


def setup(args: argparse.Namespace, name: str) -> dict[str, Any]:
    """What the run starts with (``claims_setup.json``) and its command, without ``--out``."""
    flags = ["--quick"] * args.quick + ["--recheck"] * args.recheck
    flags += ["--cap", str(args.cap)] if args.cap is not None else []
    flags += ["--only", args.only] if args.only else []
    flags += ["--root", str(args.root)]
    return {
        "study": name,
        "quick": args.quick,
        "cap": args.cap,
        "only": args.only,
        "root": str(args.root.resolve()),
        "command": shlex.join(["opar-sim", "claims", *flags]),
    }


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the claims' arms (or the re-check's), print the tables and write the JSON.

    Returns:
        0; an unknown claim id is a usage error (exit 2).
    """
    started = time.perf_counter()
    only = [i.strip() for i in args.only.split(",") if i.strip()] if args.only else None
    select_claims(only)  # an unknown id: exit 2 before the output directory is made
    job_of, name = study(args)
    if args.resume and args.out is None:
        raise UsageError("--resume needs --out DIR: the claims run to finish")
    out: Path = args.out or default_out("claims")
    resume = open_claims_dir(out, setup(args, name), args.resume)
    with progress_bar(console) as bar:
        job = bar.add_task(name, total=None)
        result = job_of(
            only,
            executor=executor_config(args),
            out=out,
            root=args.root,
            on_progress=lambda n: bar.advance(job, n),
            on_start=lambda total: bar.update(job, total=total),
            resume=resume,
            on_note=lambda note: console.print(f"resume: {note}", markup=False, highlight=False),
        )
    write_json(out / f"{name}.json", result.to_dict())
    for table in (result.table(), getattr(result, "exploratory_table", lambda: None)()):
        if table is not None:
            console.print(table)
    console.print(f"wall time: {time.perf_counter() - started:.0f} s")
    console.print(f"{name}: [green]{escape(str(out / f'{name}.json'))}[/]")
    return 0
