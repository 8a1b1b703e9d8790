"""``opar-sim relay SPEC``: relay test on the plant, classic gains, and the tuner against them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.common import default_out, int_at_least
from opar_sim.cli.progress import stages
from opar_sim.rundir import prepare_out_dir
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import with_overrides
from opar_sim.studies.relay import RelayBudget, relay, require_plant

NAME = "relay"
HELP = "relay test on the plant task: K_u, P_u, Ziegler-Nichols and Tyreus-Luyben gains"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """A spec whose task is ``plant``, the Optuna trials, held-out episodes, seed and ``--out``."""
    parser.add_argument("spec", help="a spec whose task is `plant` (its params are used)")
    parser.add_argument("--trials", type=int_at_least(2), default=40, help="Optuna trials")
    parser.add_argument("--holdout", type=int_at_least(1), default=200, help="held-out episodes")
    parser.add_argument("--seed", type=int_at_least(0), help="override the spec's seed")
    parser.add_argument("--out", type=Path, help="output directory (default: runs/NAME/TIMESTAMP)")


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the relay test, derive the classic gains, tune against them and report.

    Prints K_u and P_u (beside the plant's true K_u) and a table of each
    contender's gains and held-out IAE; writes ``relay.json``, ``gains.toml``
    and the relay figure to the output directory.

    Returns:
        0; a spec whose task is not ``plant`` is a usage error (exit 2).
    """
    spec = with_overrides(load_spec(args.spec), seed=args.seed)
    require_plant(spec, source=args.spec)
    out: Path = args.out or default_out(f"{spec.name}-relay")
    prepare_out_dir(out)
    budget = RelayBudget(trials=args.trials, holdout=args.holdout)
    result = relay(
        spec, budget, source=args.spec, note=console.print, stage=stages(console, unit="")
    )
    out.mkdir(parents=True, exist_ok=True)
    report = json.dumps(result.to_dict(), indent=2) + "\n"
    (out / "relay.json").write_text(report, encoding="utf-8")
    (out / "gains.toml").write_text(result.gains_toml(), encoding="utf-8")
    from opar_sim.figures import tuning  # matplotlib only when drawing
    from opar_sim.figures.style import save  # matplotlib only when drawing

    test = result.relay
    figure = tuning.relay_figure(test.outputs, test.inputs, result.responses(), spec.name)
    figures = save(figure, str(out / "relay"))
    console.print(result.table())
    console.print(f"relay directory: [green]{escape(str(out))}[/]")
    for f in figures:
        console.print(f"figure: [green]{escape(str(f))}[/]")
    return 0
