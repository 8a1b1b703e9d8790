"""``opar-sim refit``: re-fit every controller's defaults on the tuning seed, check held out.

The protocol is ``opar_sim.studies.refit``': the two shoot-out tasks, the
tuning seed 100, the same Optuna budget for every controller, the previous
defaults as the first trial, the best rounded to two significant digits and
compared with the previous defaults on held-out seeds.  ``--write`` stores
the record (``docs/defaults-fit.json``) that the shipped signatures must match.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console

from controllers.registry import CONTROLLERS
from opar_sim.cli.commands.common import (
    UsageError,
    add_executor_flags,
    executor_config,
    int_at_least,
)
from opar_sim.cli.render import progress_bar
from opar_sim.cli.tables import TextTable
from opar_sim.rundir import write_json
from opar_sim.running.executors import open_executor
from opar_sim.running.search import executor_evaluate
from opar_sim.spec.build import load_spec, parse_spec
from opar_sim.studies.contender import EXCLUDED, contender_data
from opar_sim.studies.refit import (
    OBJECTIVE,
    RECORD,
    SPECS,
    TUNING_SEED,
    Refit,
    pooled,
    refit,
)
from opar_sim.studies.seeds import HOLDOUT_SEED

NAME = "refit"
HELP = "re-fit every controller's defaults on the tuning seed and check them on held-out seeds"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Controllers, budget, ``--write`` and the executor."""
    parser.add_argument(
        "--controllers",
        help="comma-separated controllers (default: every one with a SPACE, but the oracle)",
    )
    parser.add_argument("--trials", type=int_at_least(1), default=40, help="trials (default 40)")
    parser.add_argument(
        "--train-episodes",
        type=int_at_least(1),
        default=300,
        help=f"episodes per task and trial, seed {TUNING_SEED} (default 300)",
    )
    parser.add_argument(
        "--holdout-episodes",
        type=int_at_least(1),
        default=1000,
        help=f"held-out episodes per task, seed {HOLDOUT_SEED} (default 1000)",
    )
    parser.add_argument("--write", type=Path, help=f"write the record here (e.g. {RECORD})")
    add_executor_flags(parser)


def _names(text: str | None) -> list[str]:
    fitted = [
        n
        for n in CONTROLLERS.names()
        if n not in EXCLUDED and getattr(CONTROLLERS.factories[n], "SPACE", None)
    ]
    if text is None:
        return fitted
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in fitted]
    if unknown or not names:
        raise UsageError(f"--controllers: choose among {', '.join(fitted)}")
    return names


def run(args: argparse.Namespace, console: Console) -> int:
    """Re-fit, print the previous and fitted defaults with the held-out check.

    Returns:
        0; a missing optuna or an unknown controller is a usage error (exit 2).
    """
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise UsageError("optuna is not installed: pip install -e '.[tune]'") from None
    names = _names(args.controllers)
    specs = [load_spec(path) for path in SPECS]
    started = time.perf_counter()
    config = executor_config(args)
    results: list[Refit] = []
    console.print(
        f"{len(names)} controllers × {args.trials} trials × {len(specs)} tasks × "
        f"{args.train_episodes} episodes (seed {TUNING_SEED}); held out: "
        f"{args.holdout_episodes} per task (seed {HOLDOUT_SEED})"
    )
    with open_executor(config) as executor, progress_bar(console, unit="") as bar:
        job = bar.add_task("trials", total=args.trials * len(names))
        for name in names:
            evaluate = pooled(
                [
                    executor_evaluate(
                        contender_data(s.model_dump(), name) | {"controller": {"name": name}},
                        executor,
                        config.parallelism,
                        parse_spec,
                    )
                    for s in specs
                ]
            )
            results.append(
                refit(
                    name,
                    CONTROLLERS.factories[name],
                    evaluate,
                    args.trials,
                    args.train_episodes,
                    args.holdout_episodes,
                    lambda: bar.advance(job),
                )
            )
    console.print(table(results).to_rich())
    if args.write is not None:
        write_json(
            args.write,
            {
                "protocol": {
                    "specs": list(SPECS),
                    "tuning_seed": TUNING_SEED,
                    "holdout_seed": HOLDOUT_SEED,
                    "trials": args.trials,
                    "sampler": "tpe",
                    "train_episodes_per_task": args.train_episodes,
                    "holdout_episodes_per_task": args.holdout_episodes,
                    "objective": OBJECTIVE.model_dump(),
                    "rounding": "two significant digits; integers stay integers",
                },
                "controllers": [r.to_dict() for r in results],
            },
        )
        console.print(f"record: [green]{args.write}[/]")
    console.print(f"wall time: {time.perf_counter() - started:.0f} s")
    return 0


def _params(params: dict[str, float]) -> str:
    return " ".join(f"{k.rsplit('.', 1)[1]}={v:g}" for k, v in params.items())


def table(results: list[Refit]) -> TextTable:
    """Previous and fitted defaults, training objectives and the paired held-out check."""
    rows = []
    for r in results:
        e = r.objective_diff
        rows.append(
            [
                r.name,
                _params(r.previous),
                _params(r.fitted),
                f"{r.train_previous:.4f} → {r.train_fitted:.4f}",
                f"{100 * r.success_previous:.1f} → {100 * r.success_fitted:.1f}",
                f"{r.discordant[0]}/{r.discordant[1]}",
                f"{r.p_mcnemar:.3f}",
                f"{e.mean:+.4f} [{e.low:+.4f}, {e.high:+.4f}]",
            ]
        )
    return TextTable(
        "defaults re-fitted on the tuning seed",
        [
            "controller",
            "previous",
            "fitted (ships)",
            "train objective",
            "held-out success %",
            "b/c",
            "McNemar p",
            "Δ objective held out (95% CI)",
        ],
        rows,
        [
            "objective: 1 − success + 3e-6·tokens, pooled over flight_booking and "
            "research_qa_faults; b/c: held-out episodes only the fit / only the previous "
            "defaults solved; Δ < 0: the fit is better"
        ],
        left=3,
    )
