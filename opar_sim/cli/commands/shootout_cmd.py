"""``opar-sim shootout SPEC``: every controller tuned with the same budget, ranked on unseen seeds.

The protocol is ``opar_sim.studies.shootout``'s: same sampler, trials and
training seeds for every contender, each searched over its documented
``SPACE`` plus the shared stop confirmation; scored on held-out seeds; paired
differences against the best with exact McNemar, Holm and paired bootstrap
intervals; ties ranked as ties.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from controllers.registry import CONTROLLERS
from opar_sim.cli.commands.common import (
    UsageError,
    add_executor_flags,
    default_out,
    executor_config,
    int_at_least,
    require_backends,
)
from opar_sim.cli.render import progress_bar
from opar_sim.cli.tables import TextTable
from opar_sim.engines.batch import batch_unsupported
from opar_sim.extras import install_hint
from opar_sim.measure.stats import Estimate
from opar_sim.rundir import prepare_out_dir, write_json
from opar_sim.running.executors import open_executor
from opar_sim.running.search import apply_params, batch_evaluate, executor_evaluate
from opar_sim.spec.build import load_spec, parse_spec
from opar_sim.spec.schema import Objective, SpecError
from opar_sim.studies.shootout import (
    ALPHA,
    Budget,
    Standing,
    Tuned,
    check_space,
    contender_data,
    contender_space,
    corners,
    default_contenders,
    standings,
    standings_json,
    tune_contender,
)

NAME = "shootout"
HELP = "tune every controller with the same budget, rank them on held-out seeds (ties as ties)"
DEFAULT = Budget()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The spec, the contenders, the budget (trials, episodes, sampler), ``--out``, executor."""
    parser.add_argument("spec", help="experiment spec (TOML); its task, agent and limits are used")
    parser.add_argument(
        "--controllers",
        help="comma-separated registered controllers (default: all but the oracle)",
    )
    parser.add_argument(
        "--trials",
        type=int_at_least(1),
        default=DEFAULT.trials,
        help=f"Optuna trials per contender (default {DEFAULT.trials})",
    )
    parser.add_argument(
        "--train-episodes",
        type=int_at_least(1),
        default=DEFAULT.train_episodes,
        help=f"training episodes per trial, seed {DEFAULT.train_seed} "
        f"(default {DEFAULT.train_episodes})",
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
    started = time.perf_counter()
    spec = load_spec(args.spec)
    names = contenders_of(args.controllers)
    budget = Budget(args.trials, args.train_episodes, args.holdout_episodes, args.sampler)
    objective = spec.tune.objective if spec.tune is not None else Objective()
    data = spec.model_dump()
    bases, spaces = {}, {}
    screened: set[str] = set()  # the contenders whose trials the batch engine scores
    for name in list(names):
        factory = CONTROLLERS.factories[name]
        try:
            check_space(name, factory)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        bases[name] = contender_data(data, name)
        spaces[name] = contender_space(factory)
        try:
            checked = [  # every trial must be a valid spec
                parse_spec(apply_params(bases[name], corner), f"{args.spec}: {name} space corner")
                for corner in corners(spaces[name])
            ]
        except SpecError as exc:
            if args.controllers is not None:  # asked for by name: the user must know
                raise
            names.remove(name)  # by default, a law that cannot run this spec sits out
            console.print(f"skipped {name}: {exc}", markup=False, highlight=False)
            continue
        if args.engine == "batch":
            problem = next(filter(None, map(batch_unsupported, checked)), None)
            if problem is None:
                screened.add(name)
            else:  # searched on the reference engine, with the same trials and episodes
                console.print(f"{name}: trials on the SimPy engine ({problem})", markup=False)
    if len(names) < 2:
        raise UsageError("fewer than two controllers can run this spec")
    out: Path = args.out or default_out(f"{spec.name}-shootout")
    prepare_out_dir(out)
    console.print(
        f"[bold]{spec.name}[/]: {len(names)} contenders × {budget.trials} trials "
        f"({budget.sampler}) × {budget.train_episodes} training episodes (seed "
        f"{budget.train_seed}); held out: {budget.holdout_episodes} episodes "
        f"(seed {budget.holdout_seed})"
        + (
            f"; trials screened on the batch engine ({len(screened)} of {len(names)} "
            f"contenders), the {args.finalists} best re-scored on the SimPy engine"
            if args.engine == "batch"
            else ""
        )
    )
    config = executor_config(args)
    require_backends(spec)
    tuned: list[Tuned] = []
    with open_executor(config) as executor, progress_bar(console, unit="") as bar:
        job = bar.add_task("trials", total=budget.trials * len(names))
        for name in names:
            evaluate = executor_evaluate(bases[name], executor, config.parallelism, parse_spec)
            screen = batch_evaluate(bases[name], parse_spec) if name in screened else None
            tuned.append(
                tune_contender(
                    name,
                    spaces[name],
                    evaluate,
                    objective,
                    budget,
                    lambda: bar.advance(job),
                    screen=screen,
                    finalists=args.finalists,
                )
            )
    ranked, pairs = standings(tuned, objective, budget.holdout_seed)
    elapsed = time.perf_counter() - started
    out.mkdir(parents=True, exist_ok=True)
    summary = standings_json(budget, objective, ranked, pairs)
    summary["protocol"]["engine"] = (
        {"trials": "batch", "finalists": args.finalists, "holdout": "simpy"}
        if args.engine == "batch"
        else {"trials": "simpy", "holdout": "simpy"}
    )
    summary["wall_seconds"] = elapsed
    write_json(out / "shootout.json", summary)
    from opar_sim.figures import tuning  # matplotlib only when drawing
    from opar_sim.figures.style import save  # matplotlib only when drawing

    figures = save(
        tuning.shootout_figure(
            [s.name for s in ranked],
            [s.success for s in ranked],
            [s.success_ci95 for s in ranked],
            [s.rank for s in ranked],
            f"{spec.name}: tuned contenders on held-out seeds",
        ),
        str(out / "shootout"),
    )
    console.print(ranking_table(ranked, budget).to_rich())
    console.print(params_table(ranked).to_rich())
    console.print(f"wall time: {elapsed:.0f} s")
    console.print(f"shoot-out directory: [green]{escape(str(out))}[/]")
    for figure in figures:
        console.print(f"figure: [green]{escape(str(figure))}[/]")
    return 0


def _ci(e: Estimate, scale: float = 1.0, fmt: str = "+.1f") -> str:
    return f"{e.mean * scale:{fmt}} [{e.low * scale:{fmt}}, {e.high * scale:{fmt}}]" if e.n else "–"


def _p(p: float) -> str:
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def ranking_table(ranked: Sequence[Standing], budget: Budget) -> TextTable:
    """The tuned ranking: held-out success and paired differences against the best."""
    columns = [
        "rank",
        "controller",
        "success % (95% CI)",
        "Δ success pts",
        "b/c",
        "McNemar p",
        "Holm p",
        "objective",
        "Δ objective (95% CI)",
        "tokens",
        "Δ tokens (95% CI)",
    ]
    rows = []
    best = ranked[0].name if ranked else ""
    for s in ranked:
        lo, hi = s.success_ci95
        is_best = s.name == best
        rows.append(
            [
                str(s.rank),
                s.name + (" (best)" if is_best else ""),
                f"{100 * s.success:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]",
                "" if is_best else f"{100 * s.success_diff:+.1f}",
                "" if is_best else f"{s.discordant[0]}/{s.discordant[1]}",
                "" if is_best else _p(s.p_mcnemar),
                "" if is_best else _p(s.p_holm),
                f"{s.objective:.4f}",
                "" if is_best else _ci(s.objective_diff, 1.0, "+.3f"),
                f"{s.mean_tokens:.0f}",
                "" if is_best else _ci(s.tokens_diff, 1.0, "+.0f"),
            ]
        )
    notes = [
        f"every contender: {budget.trials} {budget.sampler} trials × {budget.train_episodes} "
        f"training episodes (seed {budget.train_seed}); scored on {budget.holdout_episodes} "
        f"held-out episodes (seed {budget.holdout_seed}), common random numbers",
        "Δ = contender − best, paired by episode; b/c = episodes only it / only the best solved; "
        "exact McNemar p, Holm-adjusted over all pairs; intervals: paired bootstrap",
        f"rank = 1 + contenders with higher success and Holm p < {ALPHA}: equal ranks are ties",
    ]
    return TextTable("shoot-out (tuned, held out)", columns, rows, notes, left=2, bold=False)


def params_table(ranked: Sequence[Standing]) -> TextTable:
    """Each contender's tuned assignment and its training objective."""
    rows = [
        [
            s.name + (" (batch-screened)" if s.screened == "batch" else ""),
            f"{s.train_score:.4f}",
            ", ".join(
                f"{path.rsplit('.', 1)[-1]}={value if isinstance(value, int) else f'{value:.3g}'}"
                for path, value in s.best_params.items()
            ),
        ]
        for s in ranked
    ]
    notes = (
        [
            "batch-screened: trials scored on the batch engine; train objective: the winning "
            "finalist's SimPy re-score on the training episodes"
        ]
        if any(s.screened == "batch" for s in ranked)
        else []
    )
    return TextTable(
        "tuned assignments",
        ["controller", "train objective", "best parameters"],
        rows,
        notes,
        left=3,
    )
