"""``opar-sim shootout SPEC``: every law tuned R times on equal terms, ranked on unseen seeds.

The protocol is ``opar_sim.studies.shootout``'s: R tuning replicates per law (the same
training and sampler seeds for every law), trials = k × d over the law's documented
``SPACE`` plus the shared stop confirmation, every replicate and every law's defaults on
the same held-out episodes, replicate-level paired comparisons with the leader (t
interval, Holm), ties ranked as ties.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from controllers.registry import CONTROLLERS
from opar_sim.cli.commands.common import (
    MAX_REPLICATES,
    MAX_TRIALS,
    UsageError,
    add_executor_flags,
    default_out,
    executor_config,
    int_at_least,
    int_between,
    require_backends,
)
from opar_sim.cli.render import progress_bar
from opar_sim.extras import install_hint
from opar_sim.rundir import prepare_out_dir, write_json
from opar_sim.spec.build import load_spec
from opar_sim.spec.schema import ExperimentSpec
from opar_sim.studies.contender import default_contenders
from opar_sim.studies.shootout import ShootoutBudget, ShootoutPlan, ShootoutResult, plan_shootout

NAME = "shootout"
HELP = (
    "tune every controller R times on equal terms, rank them on held-out seeds by replicates "
    "(ties as ties)"
)
DEFAULT = ShootoutBudget()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The spec, the contenders, the budget (trials, episodes, sampler), ``--out``, executor."""
    parser.add_argument("spec", help="experiment spec (TOML); its task, agent and limits are used")
    parser.add_argument(
        "--controllers",
        help="comma-separated registered controllers (default: all but the oracle)",
    )
    parser.add_argument(
        "--trials-per-dim",
        type=int_between(1, MAX_TRIALS),
        default=DEFAULT.trials_per_dim,
        help=f"k: each replicate of a law runs k × d trials, d its parameters + the shared "
        f"confirm (default {DEFAULT.trials_per_dim})",
    )
    parser.add_argument(
        "--replicates",
        type=int_between(1, MAX_REPLICATES),
        default=DEFAULT.replicates,
        help=f"tuning replicates per law (default {DEFAULT.replicates})",
    )
    parser.add_argument(
        "--seed",
        type=int_at_least(0),
        default=0,
        help="seed offset S: replicate r trains on the ledger's tuning seed S·R + r with "
        "sampler seed S·R + r (default 0)",
    )
    parser.add_argument(
        "--train-episodes",
        type=int_at_least(1),
        default=DEFAULT.train_episodes,
        help=f"training episodes per trial (default {DEFAULT.train_episodes})",
    )
    parser.add_argument(
        "--holdout-episodes",
        type=int_at_least(1),
        default=DEFAULT.holdout_episodes,
        help=f"held-out episodes, seed {DEFAULT.holdout_seed} (default {DEFAULT.holdout_episodes})",
    )
    parser.add_argument("--sampler", choices=("tpe", "cmaes"), default=DEFAULT.sampler)
    parser.add_argument(
        "--engine",
        choices=("simpy", "batch"),
        default="simpy",
        help="simpy: every trial on the reference engine (default); batch: screen the trials "
        "of each contender on the lockstep batch engine, re-score its --finalists best on "
        "the SimPy engine (same training episodes); a contender the batch engine cannot run "
        "is searched on the SimPy engine; held-out seeds: always SimPy",
    )
    parser.add_argument(
        "--finalists",
        type=int_at_least(1),
        default=5,
        help="with --engine batch: how many screened trials the SimPy engine re-scores (5)",
    )
    parser.add_argument("--out", type=Path, help="output directory (default: runs/NAME/TIMESTAMP)")
    add_executor_flags(parser)


def contenders_of(text: str | None) -> list[str]:
    """The contenders named on the command line (or the default), checked against the registry."""
    known = CONTROLLERS.names()
    if text is None:
        return default_contenders(CONTROLLERS)
    names = [n.strip() for n in text.split(",") if n.strip()]
    if len(names) < 2:
        raise UsageError("--controllers needs at least two controllers, comma-separated")
    if len(set(names)) != len(names):
        raise UsageError(f"--controllers lists a controller twice: {text}")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"unknown controller(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return names


def refuse_ignored_tables(spec: ExperimentSpec, label: str) -> None:
    """A spec whose ``[sweep]`` or ``[[compare]]`` the shoot-out would not honour is refused.

    The shoot-out tunes the laws of ``--controllers`` on the spec's one task; a sweep over
    tasks, or a list of laws in the spec, would be silently ignored otherwise.

    Raises:
        UsageError: naming the tables and what to run instead.
    """
    tables = (["[sweep]"] if spec.sweep else []) + (["[[compare]]"] if spec.compare else [])
    if tables:
        raise UsageError(
            f"{label}: shootout does not read {' or '.join(tables)} (it tunes the laws of "
            "--controllers on the spec's one task): run `opar-sim sweep` on this spec, or "
            "give shootout a spec without them, e.g. experiments/flight_booking.toml"
        )


def run(args: argparse.Namespace, console: Console) -> int:
    """Tune each contender, score all on the held-out seeds, print and write the ranking.

    Writes ``shootout.json`` and ``shootout.png`` in ``--out``.

    Returns:
        0; a missing optuna, an unknown controller or a bad spec is a usage error (exit 2).
    """
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise UsageError(f"optuna is not installed: {install_hint('tune')}") from None
    spec = load_spec(args.spec)
    refuse_ignored_tables(spec, args.spec)
    plan = _plan(args, spec, console)
    out: Path = args.out or default_out(f"{spec.name}-shootout")
    prepare_out_dir(out)
    console.print(_header(plan))
    config = executor_config(args)
    require_backends(spec)
    with progress_bar(console, unit="") as bar:
        job = bar.add_task("trials", total=plan.total_trials)
        result = plan.run(config, lambda: bar.advance(job))
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "shootout.json", result.to_dict())
    _show(console, out, result, _figure(out, result))
    return 0


def _plan(args: argparse.Namespace, spec: ExperimentSpec, console: Console) -> ShootoutPlan:
    """The plan of the command line's budget; what sits out or is not screened is printed."""
    names = contenders_of(args.controllers)
    budget = ShootoutBudget(
        args.trials_per_dim,
        args.train_episodes,
        args.holdout_episodes,
        args.replicates,
        args.sampler,
        args.seed,
    )
    return plan_shootout(
        spec,
        budget,
        controllers=None if args.controllers is None else names,
        engine=args.engine,
        finalists=args.finalists,
        label=args.spec,
        on_skip=lambda name, why: console.print(
            f"skipped {name}: {why}", markup=False, highlight=False
        ),
        on_unscreened=lambda name, why: console.print(
            f"{name}: trials on the SimPy engine ({why})", markup=False
        ),
    )


def _header(plan: ShootoutPlan) -> str:
    budget, n = plan.budget, len(plan.contenders)
    screened = sum(c.screened for c in plan.contenders)
    seeds = budget.seeds
    return (
        f"[bold]{plan.spec.name}[/]: {n} laws × {budget.replicates} replicates × "
        f"{budget.trials_per_dim}·d trials ({budget.sampler}) × {budget.train_episodes} training "
        f"episodes (tuning seeds {seeds[0][0]}–{seeds[-1][0]}); held out: "
        f"{budget.holdout_episodes} episodes (seed {budget.holdout_seed})"
        + (
            f"; trials screened on the batch engine ({screened} of {n} "
            f"laws), the {plan.finalists} best re-scored on the SimPy engine"
            if plan.engine == "batch"
            else ""
        )
    )


def _figure(out: Path, result: ShootoutResult) -> list[str]:
    from opar_sim.figures import tuning  # matplotlib only when drawing
    from opar_sim.figures.style import save  # matplotlib only when drawing

    ranked = result.standings
    return save(
        tuning.shootout_figure(
            [s.name for s in ranked],
            [s.success.mean for s in ranked],
            [(s.success.low, s.success.high) for s in ranked],
            [s.rank for s in ranked],
            f"{result.name}: {result.budget.replicates} tuning replicates per law, held out",
            interval="mean of the replicates, bars: their min–max",
        ),
        str(out / "shootout"),
    )


def _show(console: Console, out: Path, result: ShootoutResult, figures: list[str]) -> None:
    console.print(result.table())
    console.print(result.comparisons_table())
    console.print(result.defaults_table())
    console.print(result.params_table())
    console.print(f"wall time: {result.wall_seconds:.0f} s")
    console.print(f"shoot-out directory: [green]{escape(str(out))}[/]")
    for figure in figures:
        console.print(f"figure: [green]{escape(str(figure))}[/]")
