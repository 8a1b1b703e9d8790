"""``opar-sim detectors SPEC``: stall and loop detectors scored against the truth of being stuck.

The spec's controller runs the episodes; every detector of
``opar_sim.core.detectors`` watches them passively at every threshold of
``opar_sim.studies.detectors.THRESHOLDS``.  Each detector's best threshold
(highest F1) is chosen on as many tuning episodes (seed 100) and scored,
like the default, on the evaluation episodes (the spec's seed, or
``--seed``): no number of the table comes from the episodes that chose it.
The closing note names the best detector and threshold.  Writes
``detectors.json`` and ``precision_recall.png`` (evaluation episodes).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from opar_sim.cli.commands.common import UsageError, default_out, int_at_least
from opar_sim.cli.tables import TextTable
from opar_sim.core.detectors import DETECTORS
from opar_sim.rundir import prepare_out_dir, write_json
from opar_sim.running.runner import simulate
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import with_overrides
from opar_sim.studies.detectors import STUCK_K, Score, best, score_detectors
from opar_sim.studies.seeds import TUNING_SEED

NAME = "detectors"
HELP = "score the stall and loop detectors (precision, recall, delay) against the stuck truth"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The spec, ``--episodes``, ``--seed``, the stuck window ``--k`` and ``--out``."""
    parser.add_argument("spec", help="experiment spec (TOML)")
    parser.add_argument("--episodes", type=int_at_least(1), help="override the episode count")
    parser.add_argument("--seed", type=int_at_least(0), help="override the spec's seed")
    parser.add_argument(
        "--k", type=int_at_least(1), default=STUCK_K, help="stuck: no hidden progress for k steps"
    )
    parser.add_argument("--out", type=Path, help="output directory (default: runs/NAME/TIMESTAMP)")


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the episodes, score every detector, print the table, write JSON and the figure.

    Returns:
        0.
    """
    started = time.perf_counter()
    spec = with_overrides(load_spec(args.spec), episodes=args.episodes, seed=args.seed)
    out: Path = args.out or default_out(f"{spec.name}-detectors")
    prepare_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    if spec.seed == TUNING_SEED:
        raise UsageError(
            f"detectors: seed {TUNING_SEED} chooses the thresholds; evaluate on another"
        )
    tuning = score_detectors(list(simulate(spec, spec.episodes, TUNING_SEED)), args.k)
    scored = score_detectors(list(simulate(spec, spec.episodes, spec.seed)), args.k)
    chosen = {name: max(rows, key=lambda s: s.f1).threshold for name, rows in tuning.items()}
    top_tuning = best(tuning)
    top = next(s for s in scored[top_tuning.detector] if s.threshold == top_tuning.threshold)
    elapsed = time.perf_counter() - started
    summary: dict[str, Any] = {
        "spec": args.spec,
        "episodes": spec.episodes,
        "seed": spec.seed,
        "k": args.k,
        "controller": spec.controller_list()[0].name,
        "tuning_seed": TUNING_SEED,
        "detectors": {name: [s.as_dict() for s in rows] for name, rows in scored.items()},
        "chosen_on_tuning": chosen,
        "best": top.as_dict(),
        "wall_seconds": elapsed,
    }
    write_json(out / "detectors.json", summary)
    points = {
        name: [(s.recall, s.precision) for s in rows if not math.isnan(s.precision)]
        for name, rows in scored.items()
    }
    title = f"{spec.name}: stall detectors, {spec.episodes} episodes (stuck: k = {args.k})"
    from opar_sim.figures.stopping import precision_recall_figure  # matplotlib only to draw
    from opar_sim.figures.style import save

    paths = save(precision_recall_figure(points, title), str(out / "precision_recall"))
    console.print(detectors_table(scored, chosen, top, summary).to_rich())
    console.print(f"wall time: {elapsed:.0f} s; figure: [green]{paths[0]}[/]")
    return 0


def _row(s: Score, label: str) -> list[str]:
    d = s.as_dict()
    p, r = d["precision_ci95"], d["recall_ci95"]
    lo, hi = d["median_delay_ci95"]
    return [
        s.detector,
        f"{s.threshold:g}",
        label,
        str(s.alarms),
        f"{s.precision:.1%} [{p[0]:.1%}, {p[1]:.1%}]" if p else "–",
        f"{s.recall:.1%} [{r[0]:.1%}, {r[1]:.1%}]" if r else "–",
        f"{s.median_delay:g} [{lo:g}, {hi:g}]" if s.delays else "–",
        f"{s.f1:.3f}",
    ]


def detectors_table(
    scored: dict[str, list[Score]],
    chosen: dict[str, float],
    top: Score,
    summary: dict[str, Any],
) -> TextTable:
    """Each detector at its default threshold and at the one chosen on tuning episodes."""
    rows = []
    for cls in DETECTORS:
        row = scored[cls.name]
        default = next((s for s in row if s.threshold == cls.default), None)
        tuned = next(s for s in row if s.threshold == chosen[cls.name])
        if default is not None:
            rows.append(_row(default, "default" + (", tuned" if default is tuned else "")))
        if tuned is not default:
            rows.append(_row(tuned, "tuned"))
    spells = top.spells
    notes = [
        f"{summary['episodes']} episodes (seed {summary['seed']}) of {summary['controller']}; "
        f"the detectors watch passively; stuck = no hidden progress for k = {summary['k']} "
        f"steps ({spells} stuck spells)",
        "precision: alarms (rising edges) raised at a stuck step; recall: stuck spells with the "
        "score at the threshold; Wilson 95 %; delay: steps from a spell's onset, median "
        "with its order-statistic 95 % interval",
        f"tuned: the threshold of highest F1 on {summary['episodes']} tuning episodes "
        f"(seed {summary['tuning_seed']}), scored here",
        f"best (F1 on tuning): {top.detector} at {top.threshold:g}: precision "
        f"{top.precision:.1%}, recall {top.recall:.1%}, F1 {top.f1:.3f} (evaluation)",
    ]
    columns = [
        "detector",
        "threshold",
        "",
        "alarms",
        "precision (95% CI)",
        "recall (95% CI)",
        "median delay",
        "F1",
    ]
    return TextTable("stall and loop detectors", columns, rows, notes, left=3, bold=False)
