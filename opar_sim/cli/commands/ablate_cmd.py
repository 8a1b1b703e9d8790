"""``opar-sim ablate SPEC``: the PID's terms switched off one by one, paired against the full law.

The arms are ``opar_sim.studies.ablation``'s: PID, PI (kd = 0), PD (ki = 0),
P (ki = kd = 0) and I (kp = kd = 0), each with ``settle_count`` 2 and 1, on the
same held-out episodes; each against the full law with settle count 2.
"""

from __future__ import annotations

import argparse
import inspect
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from controllers.registry import CONTROLLERS
from opar_sim.cli.commands.common import (
    add_executor_flags,
    default_out,
    executor_config,
    int_at_least,
    require_backends,
)
from opar_sim.cli.render import progress_bar
from opar_sim.cli.tables import TextTable
from opar_sim.rundir import prepare_out_dir, write_json
from opar_sim.running.executors import open_executor
from opar_sim.running.search import apply_params, executor_evaluate
from opar_sim.spec.build import load_spec, parse_spec
from opar_sim.spec.schema import Objective
from opar_sim.studies.ablation import (
    HOLDOUT_SEED,
    ArmResult,
    ablation_json,
    arms,
    gains_of,
    pid_data,
    score_arms,
)

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
    started = time.perf_counter()
    spec = load_spec(args.spec)
    objective = spec.tune.objective if spec.tune is not None else Objective()
    base = pid_data(spec.model_dump())
    signature = inspect.signature(CONTROLLERS.factories["pid"]).parameters
    defaults = {g: float(signature[g].default) for g in ("kp", "ki", "kd")}
    own = base["controller"]["params"]
    plan = arms(
        int(own.get("settle_count", signature["settle_count"].default)),
        float(own.get("pace", signature["pace"].default)),
    )
    for arm in plan:  # every arm must be a valid spec before any episode runs
        parse_spec(apply_params(base, arm.changes), f"{args.spec}: ablation arm {arm.label}")
    out: Path = args.out or default_out(f"{spec.name}-ablate")
    prepare_out_dir(out)
    config = executor_config(args)
    require_backends(spec)
    results = []
    with open_executor(config) as executor, progress_bar(console, unit="") as bar:
        job = bar.add_task("arms", total=len(plan))
        evaluate = executor_evaluate(base, executor, config.parallelism, parse_spec)
        for arm in plan:
            rows = evaluate(arm.changes, args.episodes, args.seed)
            results.append((arm, gains_of(base["controller"]["params"], arm, defaults), rows))
            bar.advance(job)
    scored = score_arms(results, objective, args.seed)
    elapsed = time.perf_counter() - started
    out.mkdir(parents=True, exist_ok=True)
    summary = ablation_json(scored, args.episodes, args.seed, objective)
    summary["wall_seconds"] = elapsed
    write_json(out / "ablation.json", summary)
    console.print(ablation_table(scored, args.episodes, args.seed).to_rich())
    console.print(f"wall time: {elapsed:.0f} s")
    console.print(f"ablation directory: [green]{escape(str(out))}[/]")
    return 0


def ablation_table(results: Sequence[ArmResult], episodes: int, seed: int) -> TextTable:
    """Each arm's success and tokens, paired against the full law."""
    columns = [
        "arm",
        "kp",
        "ki",
        "kd",
        "success (95% CI)",
        "Δ success pts",
        "b/c",
        "McNemar p",
        "Holm p",
        "tokens",
        "Δ tokens (95% CI)",
    ]
    rows = []
    for k, r in enumerate(results):
        lo, hi = r.success_ci95
        ref = k == 0
        d = r.tokens_diff
        rows.append(
            [
                r.arm.label + (" (reference)" if ref else ""),
                f"{r.gains['kp']:g}",
                f"{r.gains['ki']:g}",
                f"{r.gains['kd']:g}",
                f"{r.success:.1%} [{lo:.1%}, {hi:.1%}]",
                "" if ref else f"{100 * r.success_diff:+.1f}",
                "" if ref else f"{r.discordant[0]}/{r.discordant[1]}",
                "" if ref else f"{r.p_mcnemar:.3g}",
                "" if ref else f"{r.p_holm:.3g}",
                f"{r.mean_tokens:.0f}",
                "" if ref else f"{d.mean:+.0f} [{d.low:+.0f}, {d.high:+.0f}]",
            ]
        )
    notes = [
        f"{episodes} held-out episodes (seed {seed}), the same for every arm; Δ = arm − reference",
        "b/c = episodes only the arm / only the reference solved; exact McNemar p, "
        "Holm-adjusted over the arms; token interval: paired bootstrap 95 %",
        "settle = consecutive readings inside the settle band before TERMINATE "
        "(1: no confirmation)",
    ]
    return TextTable("PID ablation", columns, rows, notes, left=1, bold=False)
