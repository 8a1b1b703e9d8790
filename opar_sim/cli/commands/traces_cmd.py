"""``opar-sim traces import FILE [--format NAME] --out RUNDIR``, ``traces compare``.

``import`` turns recorded agent conversations into an ordinary run directory (see
``opar_sim.traces`` and docs/traces.md), which ``replay --laws``, ``advise`` and
``calibrate`` read.  ``compare RUNDIR RUNDIR ...`` prints what the runs of each
look like side by side (``opar_sim.traces.compare``): an imported record next to
a run recorded by opar-sim (e.g. the embedded LLM's), which needs no import.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from rich.console import Console

from opar_sim.cli.tables import TextTable
from opar_sim.traces import import_traces
from opar_sim.traces.compare import profile
from opar_sim.traces.log_import import ALL_FORMATS
from opar_sim.traces.stopping import parse_laws

NAME = "traces"
HELP = "import recorded agent runs (tau-bench, OTel, Langfuse, Inspect, ...) into a run directory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``import`` action: the file, ``--format``, ``--out``, ``--agent``, ``--task``."""
    sub = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    imp = sub.add_parser("import", help="import a file of recorded runs")
    imp.add_argument("file", type=Path, help="the recorded runs (JSON array or JSON Lines)")
    imp.add_argument(
        "--format",
        choices=ALL_FORMATS,
        dest="fmt",
        help="the file's format (default: told from the file; an error names the candidates)",
    )
    imp.add_argument("--out", required=True, type=Path, help="the run directory to create")
    imp.add_argument("--agent", help="the model's name (default: from a tau-bench file name)")
    imp.add_argument("--task", help="the task family (default: tau-bench/DOMAIN from the name)")
    imp.add_argument(
        "--success-score",
        metavar="NAME>=X",
        help="the score that means success, for formats that record no success (Langfuse, "
        "OpenTelemetry, Inspect): e.g. correctness>=1",
    )
    cmp = sub.add_parser("compare", help="compare the runs of several run directories")
    cmp.add_argument("rundirs", nargs="+", type=Path, help="run directories (imported or not)")
    cmp.add_argument(
        "--laws",
        default=COMPARE_LAWS,
        help=f"trace laws to replay on each, as replay --laws takes them (default {COMPARE_LAWS})",
    )


COMPARE_LAWS = "steps:4,steps:6,calls:4,calls:8,calls:12,repeat:2,repeat:3,errors:1"


def run(args: argparse.Namespace, console: Console) -> int:
    """Import the file and print what was written, or compare run directories.

    Returns:
        0; a record that does not fit its format exits 2 with one line naming it.
    """
    if args.action == "compare":
        return _compare(args, console)
    result = import_traces(
        args.file,
        args.fmt,
        args.out,
        agent=args.agent,
        task=args.task,
        success_score=args.success_score,
    )
    for note in result.notes:
        console.print(note, markup=False, highlight=False)
    stats = next(iter(result.summary.values()))
    console.print(
        f"imported {result.runs} runs ({result.fmt}; {result.tasks} tasks, "
        f"up to {result.trials} trials each): "
        f"success {stats['success_rate']:.3f}, mean turns {stats['mean_steps']:.2f}, "
        f"mean tool calls {stats['mean_tool_calls']:.2f}",
        highlight=False,
    )
    if "pass_hat_k" in stats:
        ks = ", ".join(f"pass^{k} {v:.3f}" for k, v in stats["pass_hat_k"].items())
        console.print(ks, highlight=False)
    console.print(f"wrote {result.out}", highlight=False)
    return 0


def _compare(args: argparse.Namespace, console: Console) -> int:
    """Print the comparison table, one column per run directory."""
    laws = parse_laws(args.laws)
    profiles = [profile(path, laws) for path in args.rundirs]
    ks = min(len(p.pass_k) for p in profiles)

    def num(value: float, fmt: str) -> str:
        return "–" if math.isnan(value) else format(value, fmt)

    rows = [
        ["runs (tasks)", *(f"{p.runs} ({p.tasks})" for p in profiles)],
        *([f"pass^{k + 1}", *(num(p.pass_k[k], ".3f") for p in profiles)] for k in range(ks)),
        ["success rate", *(num(p.success_rate, ".3f") for p in profiles)],
        ["turns, successes", *(num(p.turns_success, ".2f") for p in profiles)],
        ["turns, failures", *(num(p.turns_failure, ".2f") for p in profiles)],
        ["tool calls, successes", *(num(p.calls_success, ".2f") for p in profiles)],
        ["tool calls, failures", *(num(p.calls_failure, ".2f") for p in profiles)],
        ["runs repeating an identical call", *(num(p.repeat_share, ".3f") for p in profiles)],
        ["tool errors a run", *(num(p.errors_per_run, ".2f") for p in profiles)],
        ["runs with a tool error", *(num(p.error_share, ".3f") for p in profiles)],
    ]
    for i, law in enumerate(laws):
        cells = []
        for p in profiles:
            r = p.laws[i]
            kept = "–" if not r.successes else f"{r.kept}/{r.successes}"
            cells.append(f"kept {kept}, saves {num(r.calls_saved.mean, '.0%')}")
        rows.append([law.name, *cells])
    columns = ["", *(f"{p.agent} ({Path(p.path).name})" for p in profiles)]
    notes = [
        "runs: " + "; ".join(f"{p.agent} in {p.path}" for p in profiles),
        "pass^k: τ-bench's estimator over the trials of each task; a law keeps a success when "
        "it stops at or after the turn that decided it; saves: share of the failed runs' tool "
        "calls it cuts (replay --laws has the intervals)",
    ]
    console.print(TextTable("recorded runs side by side", columns, rows, notes, left=1))
    return 0
