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
    UsageError,
    add_executor_flags,
    default_out,
    executor_config,
)
from opar_sim.cli.render import progress_bar
from opar_sim.cli.tables import TextTable
from opar_sim.rundir import prepare_out_dir
from opar_sim.running.executors import open_executor
from opar_sim.studies.claims import (
    EPISODES,
    QUICK_EPISODES,
    ClaimResult,
    claims,
    format_value,
    run_claims,
    write_claims,
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


def claims_table(results: list[ClaimResult], title: str) -> TextTable:
    """The claims table: id, claim, value, 95 % interval, verdict."""
    rows = []
    for r in results:
        value, interval = format_value(r)
        p = "" if r.value.p is None else f" (p={r.value.p:.2g})"
        rows.append([r.claim.id, r.claim.sentence, value, interval, r.verdict + p])
    return TextTable(
        title,
        ["id", "claim", "value", "95% CI", "verdict"],
        rows,
        [
            "pts: paired difference in percentage points (bootstrap CI, exact McNemar p); "
            "%: a rate (Wilson CI); other values: paired mean differences (bootstrap CI)"
        ],
        left=2,
    )


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the claims' arms, print the table and write ``claims.json``.

    Returns:
        0; an unknown claim id is a usage error (exit 2).
    """
    started = time.perf_counter()
    chosen = claims()
    if args.only:
        ids = [i.strip() for i in args.only.split(",") if i.strip()]
        known = {c.id for c in chosen}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise UsageError(f"unknown claim(s) {', '.join(unknown)}; known: {', '.join(known)}")
        chosen = [c for c in chosen if c.id in ids]
    seeds, episodes = (QUICK_SEEDS, QUICK_EPISODES) if args.quick else (EVAL_SEEDS, EPISODES)
    out: Path = args.out or default_out("claims")
    prepare_out_dir(out)
    config = executor_config(args)
    with open_executor(config) as executor, progress_bar(console) as bar:
        job = bar.add_task("claims", total=None)
        results = run_claims(
            out,
            root=args.root,
            seeds=seeds,
            episodes=episodes,
            selected=chosen,
            executor=executor,
            parallelism=config.parallelism,
            on_progress=lambda n: bar.advance(job, n),
            on_start=lambda total: bar.update(job, total=total),
        )
    elapsed = time.perf_counter() - started
    write_claims(out / "claims.json", results, seeds, episodes)
    title = f"claims: spec seeds {', '.join(map(str, seeds))}, {episodes} episodes each, pooled"
    console.print(claims_table(results, title).to_rich())
    console.print(f"wall time: {elapsed:.0f} s")
    console.print(f"claims: [green]{escape(str(out / 'claims.json'))}[/]")
    return 0
