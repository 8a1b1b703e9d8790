"""``opar-sim traces import FILE --format tau-bench|openai-chat --out RUNDIR``.

Turns recorded agent conversations into an ordinary run directory (see
``opar_sim.traces`` and docs/traces.md), which ``replay --laws``, ``advise`` and
``calibrate`` read.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from opar_sim.traces import FORMATS, import_traces

NAME = "traces"
HELP = "import recorded agent runs (tau-bench, OpenAI chat) into a run directory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``import`` action: the file, ``--format``, ``--out``, ``--agent``, ``--task``."""
    sub = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    imp = sub.add_parser("import", help="import a file of recorded runs")
    imp.add_argument("file", type=Path, help="the recorded runs (JSON array or JSON Lines)")
    imp.add_argument("--format", required=True, choices=sorted(FORMATS), dest="fmt")
    imp.add_argument("--out", required=True, type=Path, help="the run directory to create")
    imp.add_argument("--agent", help="the model's name (default: from a tau-bench file name)")
    imp.add_argument("--task", help="the task family (default: tau-bench/DOMAIN from the name)")


def run(args: argparse.Namespace, console: Console) -> int:
    """Import the file and print what was written.

    Returns:
        0; a record that does not fit its format exits 2 with one line naming it.
    """
    result = import_traces(args.file, args.fmt, args.out, agent=args.agent, task=args.task)
    stats = next(iter(result.summary.values()))
    console.print(
        f"imported {result.runs} runs ({result.tasks} tasks, up to {result.trials} trials each): "
        f"success {stats['success_rate']:.3f}, mean turns {stats['mean_steps']:.2f}, "
        f"mean tool calls {stats['mean_tool_calls']:.2f}",
        highlight=False,
    )
    if "pass_hat_k" in stats:
        ks = ", ".join(f"pass^{k} {v:.3f}" for k, v in stats["pass_hat_k"].items())
        console.print(ks, highlight=False)
    console.print(f"wrote {result.out}", highlight=False)
    return 0
