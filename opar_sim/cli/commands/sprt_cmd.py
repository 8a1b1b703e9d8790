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
from pathlib import Path
from typing import Any

from rich.console import Console

from opar_sim.cli.commands.common import UsageError, default_out, int_at_least
from opar_sim.rundir import prepare_out_dir, read_input, write_json
from opar_sim.running.executors import ExecutorConfig
from opar_sim.spec.build import load_spec
from opar_sim.studies.sprt import SPRTBudget, require_simulated, sprt_study

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
    spec = load_spec(args.spec)
    require_simulated(spec)
    out: Path = args.out or default_out(f"{spec.name}-sprt")
    prepare_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    result = sprt_study(
        spec,
        SPRTBudget(episodes=args.episodes, calibration=args.calibrate),
        ExecutorConfig("serial", 1)
        if args.workers <= 1
        else ExecutorConfig("process", args.workers),
        alpha=args.alpha,
        beta=args.beta,
        shift=args.shift,
        params=_given(args.params),
        source=args.spec,
    )
    write_json(out / "sprt.json", result.to_dict())
    from opar_sim.figures.stopping import abandon_figure  # matplotlib only to draw
    from opar_sim.figures.style import save

    title = f"{spec.name}: sprt false abandons\n({args.episodes:,} episodes per agent)"
    paths = save(
        abandon_figure(result.figure_curves(), args.beta, title), str(out / "false_abandons")
    )
    console.print(result.table())
    console.print(f"wall time: {result.wall_seconds:.0f} s; figure: [green]{paths[0]}[/]")
    return 0


def _given(path: Path | None) -> dict[str, Any] | None:
    """``--params``: the ``params`` of a calibration written before (None: calibrate)."""
    if path is None:
        return None
    try:  # the checked reader: a regular file under the size ceiling
        data = json.loads(read_input(path))
        if isinstance(data, dict) and isinstance(data.get("calibration"), dict):
            data = data["calibration"]  # a whole sprt.json: its calibration
        params = data.get("params") if isinstance(data, dict) else None
    except (OSError, ValueError, KeyError, RecursionError) as exc:
        raise UsageError(f"--params {path}: {exc}") from None
    if not isinstance(params, dict):
        raise UsageError(
            f"--params {path}: no calibration parameters in it (give a sprt.json, or a JSON "
            "object with a 'params' table)"
        )
    return params
