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
from pathlib import Path

from rich.console import Console

from opar_sim.cli.commands.common import default_out, int_at_least
from opar_sim.rundir import prepare_out_dir, write_json
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import with_overrides
from opar_sim.studies.detectors import STUCK_K, DetectorsBudget, detectors

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
        0; evaluating on the tuning seed is a usage error (exit 2).
    """
    spec = with_overrides(load_spec(args.spec), episodes=args.episodes, seed=args.seed)
    out: Path = args.out or default_out(f"{spec.name}-detectors")
    prepare_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    result = detectors(spec, DetectorsBudget(spec.episodes), k=args.k, source=args.spec)
    write_json(out / "detectors.json", result.to_dict())
    title = f"{spec.name}: stall detectors, {spec.episodes} episodes (stuck: k = {args.k})"
    from opar_sim.figures.stopping import precision_recall_figure  # matplotlib only to draw
    from opar_sim.figures.style import save

    paths = save(precision_recall_figure(result.points(), title), str(out / "precision_recall"))
    console.print(result.table())
    console.print(f"wall time: {result.wall_seconds:.0f} s; figure: [green]{paths[0]}[/]")
    return 0
