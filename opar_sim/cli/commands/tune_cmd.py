"""``opar-sim tune SPEC``: search controller gains with Optuna, scored on held-out seeds."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from rich.console import Console
from rich.markup import escape

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
from opar_sim.engines.batch import check_batch
from opar_sim.extras import install_hint
from opar_sim.rundir import (
    prepare_out_dir,
    read_json,
    write_bytes,
    write_json,
    write_jsonl,
)
from opar_sim.running.executors import open_executor
from opar_sim.running.search import (
    JOURNAL_FILE,
    TuneResult,
    apply_params,
    batch_evaluate,
    executor_evaluate,
    journal_storage,
    toml_snippet,
    tune,
)
from opar_sim.spec.build import load_spec, parse_spec
from opar_sim.spec.edit import with_overrides
from opar_sim.spec.schema import SpecError

NAME = "tune"
HELP = "tune controller gains with Optuna; report train and held-out scores"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """A spec with a ``[tune]`` table, overrides of its trials and sampler, seed, ``--out``.

    Also the executor flags: the trials' episodes run there.
    """
    parser.add_argument("spec", help="experiment spec (TOML) with a [tune] table")
    parser.add_argument("--trials", type=int_at_least(1), help="override [tune] trials")
    parser.add_argument("--sampler", choices=("tpe", "cmaes"), help="override [tune] sampler")
    parser.add_argument("--seed", type=int_at_least(0), help="training seed (default: the spec's)")
    parser.add_argument("--out", type=Path, help="output directory (default: runs/NAME/TIMESTAMP)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="finish an interrupted tuning in --out (its Optuna journal, optuna.journal)",
    )
    parser.add_argument(
        "--engine",
        choices=("simpy", "batch"),
        default="simpy",
        help="simpy: every trial on the reference engine (default); batch: screen the trials "
        "on the lockstep batch engine, then re-score the --finalists best on the SimPy engine "
        "(same training seed) and score the held-out seeds there (see docs/batch.md)",
    )
    parser.add_argument(
        "--finalists",
        type=int_at_least(1),
        default=5,
        help="with --engine batch: how many screened trials the SimPy engine re-scores (5)",
    )
    add_executor_flags(parser)


def run(args: argparse.Namespace, console: Console) -> int:
    """Tune the gains and report the best against the spec's own on held-out seeds.

    Writes ``trials.jsonl``, ``best.toml``, ``tune.json`` and the history (and,
    with two or more gains, landscape) figures; prints the result table and the
    best gains as TOML.

    Returns:
        0; a missing optuna or ``[tune]`` table is a usage error (exit 2).
    """
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise UsageError(f"optuna is not installed: {install_hint('tune')}") from None
    spec = with_overrides(load_spec(args.spec), seed=args.seed)
    if spec.tune is None:
        raise UsageError(f"{args.spec}: no [tune] table: nothing to tune")
    settings = spec.tune.model_copy(
        update={k: v for k, v in (("trials", args.trials), ("sampler", args.sampler)) if v}
    )
    data = spec.model_dump(exclude={"tune", "sweep"})
    if args.resume and args.out is None:
        raise UsageError("--resume needs --out DIR: the tuning directory to finish")
    out: Path = args.out or default_out(f"{spec.name}-tune")
    config = executor_config(args)
    require_backends(spec)
    # every trial must be a valid spec: check the corners of the space first
    for corner in ("low", "high"):
        params = {
            p: (math.ceil(r.low) if corner == "low" else math.floor(r.high))
            if r.integer
            else getattr(r, corner)
            for p, r in settings.space.items()
        }
        checked = parse_spec(apply_params(data, params), f"{args.spec} [tune.space] at {corner}")
        if args.engine == "batch":
            check_batch(checked)
    batch = args.engine == "batch"
    console.print(
        f"[bold]{spec.name}[/]: {settings.trials} trials ({settings.sampler}) × "
        f"{settings.train_episodes} training episodes, held out: {settings.holdout_episodes}"
        + (
            f"; trials screened on the batch engine, the {args.finalists} best re-scored "
            "on the SimPy engine"
            if batch
            else ""
        )
    )
    setup: dict[str, object] = {"spec": data, "tune": settings.model_dump(mode="json")}
    if batch:  # a batch tuning resumes only as one (a SimPy one's setup is unchanged)
        setup["engine"] = {"screen": "batch", "finalists": args.finalists}
    resume = _start(out, setup, args.resume)
    storage = journal_storage(out / JOURNAL_FILE, resume=resume)
    with open_executor(config) as executor, progress_bar(console, unit="") as bar:
        job = bar.add_task("trials", total=settings.trials)
        # after the trials: the defaults and the best gains on the held-out seeds
        held = 2 * settings.holdout_episodes * len(spec.controller_list())
        scoring = bar.add_task("held-out scoring", total=held, visible=False)

        def on_chunk(episodes: int) -> None:
            if bar.tasks[job].finished:
                bar.update(scoring, advance=episodes, visible=True)

        reference = executor_evaluate(data, executor, config.parallelism, parse_spec, on_chunk)
        result = tune(
            settings,
            batch_evaluate(data, parse_spec) if batch else reference,
            spec.seed,
            on_trial=lambda _t: bar.advance(job),
            storage=storage,
            resume=resume,
            confirm=reference if batch else None,
            finalists=args.finalists,
        )
    out.mkdir(parents=True, exist_ok=True)
    figures = _write(out, spec.name, settings.space, result)
    if result.finalists:
        console.print(finalist_table(result).to_rich())
    console.print(result_table(result).to_rich())
    console.print(holdout_verdict(result), highlight=False)
    console.print(toml_snippet(result.best_params), markup=False)
    console.print(f"tune directory: [green]{escape(str(out))}[/]")
    for figure in figures:
        console.print(f"figure: [green]{escape(str(figure))}[/]")
    return 0


def _start(out: Path, setup: dict[str, object], resume: bool) -> bool:
    """Make the tuning directory; True when there is a tuning in it to resume.

    ``tune_setup.json`` keeps what the tuning was started with; resuming
    checks it, so a changed spec or ``--trials`` is refused instead of mixed in.
    """
    setup_file = out / "tune_setup.json"
    wanted = json.loads(json.dumps(setup))
    if resume and setup_file.is_file():
        if read_json(setup_file) != wanted:
            raise SpecError(f"--resume: the spec differs from the one that started {out}")
        return (out / JOURNAL_FILE).is_file()
    if out.exists() and not out.is_dir():
        raise SpecError(f"--out {out} exists and is not a directory")
    if not resume and (setup_file.exists() or (out / JOURNAL_FILE).exists()):
        raise SpecError(
            f"--out {out} already holds a tuning; use --resume to finish it, or another directory"
        )
    if not resume:
        prepare_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    if (out / JOURNAL_FILE).exists():  # a journal without its setup: not ours to continue
        raise SpecError(f"--resume: {out / JOURNAL_FILE} has no tune_setup.json beside it")
    write_json(setup_file, wanted)
    return False


def _write(out: Path, name: str, space: Mapping[str, object], result: TuneResult) -> list[str]:
    write_jsonl(out / "trials.jsonl", (asdict(t) for t in result.trials))
    write_bytes(out / "best.toml", toml_snippet(result.best_params).encode())
    summary = {
        "best_params": result.best_params,
        "best_train_score": result.best_train_score,
        "holdout": asdict(result.holdout),
        "importances": result.importances,
    }
    if result.finalists:
        summary["engines"] = {"trials": "batch", "finalists": "simpy", "holdout": "simpy"}
        summary["finalists"] = [asdict(f) for f in result.finalists]
    write_json(out / "tune.json", summary)
    numbers = [t.number for t in result.trials]
    scores = [t.score for t in result.trials]
    from opar_sim.figures import tuning  # matplotlib only when drawing
    from opar_sim.figures.style import save  # matplotlib only when drawing

    figures = save(
        tuning.tune_history(numbers, scores, f"{name}: optimisation history"), str(out / "history")
    )
    ranked = sorted(space, key=lambda p: -result.importances.get(p, 0.0))
    if len(ranked) >= 2:
        a, b = ranked[0], ranked[1]
        fig = tuning.tune_landscape(
            [t.params[a] for t in result.trials],
            [t.params[b] for t in result.trials],
            scores,
            (a, b),
            (result.best_params[a], result.best_params[b]),
            f"{name}: objective over the two most important gains",
        )
        figures += save(fig, str(out / "landscape"))
    return figures


def result_table(result: TuneResult) -> TextTable:
    """Training and held-out scores of the best gains against the spec's own."""
    h = result.holdout
    lo, hi = h.improvement_ci95
    columns = ["gains", "train objective", "held-out objective", "held-out success"]
    rows = [
        ["spec defaults", "", f"{h.default_score:.4f}", f"{h.default_success:.1%}"],
        [
            "tuned (best)",
            f"{result.best_train_score:.4f}",
            f"{h.best_score:.4f}",
            f"{h.best_success:.1%}",
        ],
    ]
    notes = [
        f"held-out improvement {h.improvement:+.4f} (95% CI {lo:+.4f} to {hi:+.4f}, "
        "paired bootstrap over episodes)"
    ]
    if result.finalists:
        notes.append(
            "train objective of the best: its SimPy-engine re-score; held-out scores: SimPy engine"
        )
    title = "tuning result (objective: lower is better)"
    return TextTable(title, columns, rows, notes, left=0, bold=False)


def finalist_table(result: TuneResult) -> TextTable:
    """The screened trials the SimPy engine re-scored: both engines' training objectives."""
    columns = ["trial", "batch objective (screen)", "SimPy objective", "SimPy success"]
    best = min(result.finalists, key=lambda f: (f.score, f.number))
    rows = [
        [
            f"#{f.number}" + (" (best)" if f is best else ""),
            f"{f.screen_score:.4f}",
            f"{f.score:.4f}",
            f"{f.success_rate:.1%}",
        ]
        for f in result.finalists
    ]
    note = (
        f"{len(result.trials)} trials screened on the batch engine; the {len(rows)} best "
        "re-scored on the SimPy engine, same training seed; the lowest SimPy objective wins"
    )
    return TextTable("finalists", columns, rows, [note], left=1, bold=False)


def holdout_verdict(result: TuneResult) -> str:
    """What the held-out seeds say about the tuned gains, above the gains themselves.

    "Paste these" only when the tuned gains beat the spec's defaults on the
    held-out seeds with a 95 % interval above zero; otherwise what happened.
    """
    h = result.holdout
    lo, hi = h.improvement_ci95
    scores = (
        f"held-out objective {h.best_score:.4f} tuned against {h.default_score:.4f} for the "
        f"spec's defaults (lower is better; improvement {h.improvement:+.4f}, "
        f"95% CI {lo:+.4f} to {hi:+.4f})"
    )
    if lo > 0:
        return (
            f"best gains: better than the defaults on held-out seeds, {scores}; paste into a spec:"
        )
    if hi < 0:
        return (
            f"best gains: WORSE than the spec's defaults on held-out seeds, {scores}: they fit "
            "the training seeds only; keep the defaults (more training episodes or trials may "
            "help). The tuned gains, for reference only:"
        )
    side = "better" if h.improvement > 0 else "worse"
    return (
        f"best gains: not distinguishable from the spec's defaults on held-out seeds (the mean "
        f"is {side}), {scores}; keep the defaults unless more held-out episodes show a gain. "
        "The tuned gains, for reference only:"
    )
