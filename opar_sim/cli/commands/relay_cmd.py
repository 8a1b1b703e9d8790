"""``opar-sim relay SPEC``: relay test on the plant, classic gains, and the tuner against them."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from opar_sim.cli.commands.common import UsageError, default_out, int_at_least
from opar_sim.cli.render import progress_bar
from opar_sim.cli.tables import TextTable
from opar_sim.rundir import prepare_out_dir
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import with_overrides
from opar_sim.studies.relay import (
    Contender,
    closed_loop,
    relay_test,
    tune_plant,
    tyreus_luyben,
    ziegler_nichols,
)
from opar_sim.studies.seeds import HOLDOUT_SEED

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
    if spec.task.name != "plant":
        raise UsageError(f"{args.spec}: the relay test needs task `plant`, not {spec.task.name!r}")
    params = spec.task.params
    out: Path = args.out or default_out(f"{spec.name}-relay")
    prepare_out_dir(out)
    try:
        relay = relay_test(params, spec.seed)
    except ValueError as exc:
        raise UsageError(f"{args.spec}: {exc}") from None
    baselines = {
        "ziegler_nichols": ziegler_nichols(relay.ultimate_gain, relay.ultimate_period),
        "tyreus_luyben": tyreus_luyben(relay.ultimate_gain, relay.ultimate_period),
    }
    console.print(
        f"relay test: K_u = {relay.ultimate_gain:.3f} "
        f"(the plant's true K_u: {relay.true_ultimate_gain:.3f}), "
        f"P_u = {relay.ultimate_period:.2f} samples, amplitude {relay.amplitude:.3f}"
    )
    with progress_bar(console, unit="") as bar:
        job = bar.add_task("tuning trials", total=args.trials)
        contenders = tune_plant(
            params,
            baselines,
            spec.seed,
            args.trials,
            holdout_episodes=args.holdout,
            on_trial=lambda _t: bar.advance(job),
        )
    out.mkdir(parents=True, exist_ok=True)
    report = {
        "relay": {k: v for k, v in asdict(relay).items() if k not in ("outputs", "inputs")},
        "contenders": [asdict(c) for c in contenders],
    }
    (out / "relay.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "gains.toml").write_text(gains_toml(contenders), encoding="utf-8")
    responses = {c.name: closed_loop(params, c.gains, HOLDOUT_SEED, 0) for c in contenders}
    from opar_sim.figures import tuning  # matplotlib only when drawing
    from opar_sim.figures.style import save  # matplotlib only when drawing

    figure = tuning.relay_figure(relay.outputs, relay.inputs, responses, spec.name)
    figures = save(figure, str(out / "relay"))
    console.print(contender_table(contenders, args.holdout).to_rich())
    console.print(f"relay directory: [green]{escape(str(out))}[/]")
    for f in figures:
        console.print(f"figure: [green]{escape(str(f))}[/]")
    return 0


def contender_table(contenders: list[Contender], holdout: int) -> TextTable:
    """Each contender's gains and held-out IAE, with its margin over the tuned gains."""
    title = f"PID gains on the plant: IAE on {holdout} held-out episodes"
    columns = ["gains", "kp", "ki", "kd", "IAE", "IAE - tuned", "95% CI"]
    rows = []
    for c in contenders:
        margin = interval = ""
        if c.name != "tuned":
            mean, lo, hi = next(x for x in contenders if x.name == "tuned").margin_over[c.name]
            margin, interval = f"{mean:+.3f}", f"{lo:+.3f} to {hi:+.3f}"
        rows.append(
            [
                c.name,
                f"{c.gains.kp:.3f}",
                f"{c.gains.ki:.3f}",
                f"{c.gains.kd:.3f}",
                f"{c.holdout_iae:.3f}",
                margin,
                interval,
            ]
        )
    return TextTable(title, columns, rows, [], left=0, bold=False)


def gains_toml(contenders: list[Contender]) -> str:
    """Valid TOML: the best held-out gains as ``[controller.params]``, the others commented.

    One table can hold only one set of gains, so the contenders that scored
    worse are written as comments below it, each ready to uncomment instead.
    """
    ranked = sorted(contenders, key=lambda c: c.holdout_iae)
    lines = ["# PID gains from `opar-sim relay`, best held-out IAE first (lower is better)"]
    for i, c in enumerate(ranked):
        prefix = "" if i == 0 else "# "
        lines.append("")
        lines.append(f"# {c.name}: held-out IAE {c.holdout_iae:.3f}")
        lines.append(f"{prefix}[controller.params]")
        lines += [f"{prefix}{k} = {v:.6g}" for k, v in c.gains.as_dict().items()]
    return "\n".join(lines) + "\n"
