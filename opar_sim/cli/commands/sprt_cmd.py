"""``opar-sim sprt SPEC``: calibrate ``sprt`` on tuning episodes, then measure its error rates.

Calibration: ``--calibrate`` episodes of the spec's task and agent on the
tuning seed (``TUNING_SEED``).  Measurement: ``--episodes`` evaluation episodes (seed
``HOLDOUT_SEED``) for the calibrated agent and for agents whose bias is ``--shift``
below and above it; the false-abandon curve of each with its Clopper–Pearson
band, and the token saving against ``threshold`` on the episodes
``threshold`` fails (paired bootstrap).  Writes ``sprt.json`` and
``false_abandons.png``.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console

from opar_sim.agents.simulated import SimulatedAgentParams
from opar_sim.cli.commands.common import UsageError, default_out, int_at_least
from opar_sim.cli.tables import TextTable
from opar_sim.rundir import prepare_out_dir, write_json
from opar_sim.spec.build import load_spec
from opar_sim.studies.sprt import (
    EVALUATION_SEED,
    TUNING_SEED,
    Calibration,
    abandon_curve,
    calibrate,
    run_arm,
    token_saving,
    with_controller,
)

NAME = "sprt"
HELP = "calibrate the sprt stop on tuning seeds; measure its false-abandon curve and token saving"


def _rate(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The spec, the calibration and evaluation sizes, the rates, the bias shift and ``--out``."""
    parser.add_argument("spec", help="experiment spec (TOML) with a simulated agent")
    parser.add_argument(
        "--episodes", type=int_at_least(1), default=20000, help="evaluation episodes per agent"
    )
    parser.add_argument(
        "--calibrate", type=int_at_least(100), default=5000, help="tuning episodes (seed 100)"
    )
    parser.add_argument("--alpha", type=_rate, default=0.05, help="false-completion rate")
    parser.add_argument("--beta", type=_rate, default=0.05, help="false-abandon rate")
    parser.add_argument("--shift", type=float, default=0.2, help="bias shift of the other agents")
    parser.add_argument("--out", type=Path, help="output directory (default: runs/NAME/TIMESTAMP)")
    parser.add_argument(
        "--workers", type=int_at_least(1), default=1, help="processes for the four arms"
    )
    parser.add_argument(
        "--params", type=Path, help="skip the calibration: a sprt.json or calibration JSON"
    )


def run(args: argparse.Namespace, console: Console) -> int:
    """Calibrate, measure the three agents and ``threshold``; print, write JSON and the figure.

    Returns:
        0; a spec without a simulated agent is a usage error (exit 2).
    """
    started = time.perf_counter()
    spec = load_spec(args.spec)
    if spec.agent.kind != "simulated":
        raise UsageError("sprt: the spec's agent must be the simulated one")
    bias = float(spec.agent.params.get("bias", SimulatedAgentParams.model_fields["bias"].default))
    out: Path = args.out or default_out(f"{spec.name}-sprt")
    prepare_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    if args.params is not None:  # a calibration written before (its "params")
        try:
            given = json.loads(args.params.read_text())["params"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"--params {args.params}: {exc}") from None
        cal = Calibration(given, args.calibrate, TUNING_SEED, 0, [], [])
    else:
        cal = calibrate(spec, args.calibrate, TUNING_SEED, args.alpha, args.beta)
    horizon = spec.limits.max_steps
    agents = {
        f"calibrated (bias {bias:+.2f})": bias,
        f"bias {bias - args.shift:+.2f} (−{args.shift:g})": bias - args.shift,
        f"bias {bias + args.shift:+.2f} (+{args.shift:g})": bias + args.shift,
    }
    arms = [with_controller(spec, "sprt", cal.params, b) for b in agents.values()]
    arms.append(with_controller(spec, "threshold", {}, bias))
    # each arm in `parts` episode ranges, so more workers than arms stay busy
    parts = max(1, min(args.workers // len(arms), args.episodes))
    edges = [args.episodes * k // parts for k in range(parts + 1)]
    jobs = [
        (a.model_dump_json(), edges[k + 1] - edges[k], EVALUATION_SEED, edges[k])
        for a in arms
        for k in range(parts)
    ]
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            pieces = list(pool.map(run_arm, *zip(*jobs, strict=True)))
    else:
        pieces = [run_arm(*job) for job in jobs]
    rows = [
        [x for piece in pieces[i * parts : (i + 1) * parts] for x in piece]
        for i in range(len(arms))
    ]
    curves = [
        abandon_curve(r, horizon, label, b)
        for r, (label, b) in zip(rows, agents.items(), strict=False)
    ]
    success = {
        c.label: sum(x.success for x in r) / len(r) for c, r in zip(curves, rows, strict=False)
    }
    success["threshold"] = sum(x.success for x in rows[-1]) / len(rows[-1])
    saving = token_saving(rows[-1], rows[0])
    elapsed = time.perf_counter() - started
    summary = {
        "spec": args.spec,
        "calibration": {
            "seed": cal.seed,
            "episodes": cal.episodes,
            "feasible_episodes": cal.feasible_episodes,
            "params": cal.params,
            "act_counts": cal.act_counts,
            "done_counts": cal.done_counts,
        },
        "evaluation_seed": EVALUATION_SEED,
        "agents": [c.summary() | {"success": success[c.label]} for c in curves],
        "curves": {c.label: {"share": c.share(), "band": c.band()} for c in curves},
        "token_saving_vs_threshold": saving,
        "threshold_success": success["threshold"],
        "wall_seconds": elapsed,
    }
    write_json(out / "sprt.json", summary)
    from opar_sim.figures.stopping import abandon_figure  # matplotlib only to draw
    from opar_sim.figures.style import save

    fig = abandon_figure(
        {c.label: (c.share(), c.band()) for c in curves},
        args.beta,
        f"{spec.name}: sprt false abandons, {args.episodes} episodes per agent",
    )
    paths = save(fig, str(out / "false_abandons"))
    console.print(sprt_table(summary, args.beta).to_rich())
    console.print(f"wall time: {elapsed:.0f} s; figure: [green]{paths[0]}[/]")
    return 0


def sprt_table(summary: dict[str, Any], beta: float) -> TextTable:
    """Per agent: success, the false-abandon curve's maximum with its band, false completions."""
    rows = []
    for a in summary["agents"]:
        low, high = a["max_band"]
        rows.append(
            [
                a["label"],
                f"{a['success']:.1%}",
                f"{a['feasible']}",
                f"{a['max_share']:.2%} [{low:.2%}, {high:.2%}] at t={a['max_step']}",
                f"{a['max_upper']:.2%}",
                "yes" if a["max_upper"] <= beta else "NO",
                f"{a['false_completion_share']:.2%}",
            ]
        )
    s = summary["token_saving_vs_threshold"]
    notes = [
        f"calibrated on tuning seed {summary['calibration']['seed']}, episodes 0.."
        f"{summary['calibration']['episodes'] - 1}; measured on seed {summary['evaluation_seed']}",
        "false abandon = give-up on a feasible task (outcome abandoned); share of episodes "
        "feasible at their first step; band: 95 % Clopper–Pearson, step by step",
        f"threshold success on the calibrated agent: {summary['threshold_success']:.1%}",
    ]
    if s.get("failing"):
        lo, hi = s["saving_ci95"]
        notes.append(
            f"token saving vs threshold on the {s['failing']} episodes threshold fails: "
            f"{s['saving']:.0f} [{lo:.0f}, {hi:.0f}] tokens per episode "
            f"({s['saving_share']:.1%} of threshold's {s['base_tokens']:.0f}; paired bootstrap)"
        )
    columns = [
        "agent",
        "success",
        "feasible",
        "max false-abandon share (95% CP)",
        "max CP upper",
        f"≤ β={beta:g}",
        "false completions",
    ]
    return TextTable("sprt: false abandons by step", columns, rows, notes, left=1, bold=False)
