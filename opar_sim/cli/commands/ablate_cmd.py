"""``opar-sim ablate SPEC``: the PID's terms switched off one by one, paired against the full law.

The arms are ``opar_sim.studies.ablation``'s: PID, PI (kd = 0), PD (ki = 0),
P (ki = kd = 0) and I (kp = kd = 0), each with ``settle_count`` 2 and 1, on the
same held-out episodes; each against the full law with settle count 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.common import (
    add_executor_flags,
    default_out,
    executor_config,
    int_at_least,
    require_backends,
)
from opar_sim.cli.progress import stages
from opar_sim.rundir import prepare_out_dir, write_json
from opar_sim.spec.build import load_spec
from opar_sim.studies.ablation import AblationBudget, ablation, ablation_arms
from opar_sim.studies.seeds import HOLDOUT_SEED

NAME = "ablate"
HELP = "switch the PID's terms off one by one (P, PI, PD, I; settle 1 or 2), paired against it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The spec, the held-out episodes and seed, ``--out`` and the executor flags."""
    parser.add_argument("spec", help="experiment spec (TOML); its PID (or the default PID) is used")
    parser.add_argument(
        "--episodes", type=int_at_least(1), default=2000, help="held-out episodes (default 2000)"
    )
    parser.add_argument(
        "--seed",
        type=int_at_least(0),
        default=HOLDOUT_SEED,
        help=f"held-out seed (default {HOLDOUT_SEED})",
    )
    parser.add_argument("--out", type=Path, help="output directory (default: runs/NAME/TIMESTAMP)")
    add_executor_flags(parser)


def run(args: argparse.Namespace, console: Console) -> int:
    """Run every arm on the same episodes; print the table and write ``ablation.json``.

    Returns:
        0; a bad spec is a usage error (exit 2).
    """
    spec = load_spec(args.spec)
    plan = ablation_arms(spec, source=args.spec)  # every arm a valid spec before any episode
    out: Path = args.out or default_out(f"{spec.name}-ablate")
    prepare_out_dir(out)
    config = executor_config(args)
    require_backends(spec)
    result = ablation(
        spec,
        AblationBudget(episodes=args.episodes),
        config,
        seed=args.seed,
        plan=plan,
        stage=stages(console, unit=""),
    )
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "ablation.json", result.to_dict())
    console.print(result.table())
    console.print(f"wall time: {result.wall_seconds:.0f} s")
    console.print(f"ablation directory: [green]{escape(str(out))}[/]")
    return 0
