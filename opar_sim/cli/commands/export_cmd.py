"""``opar-sim export RUNDIR --format otlp|openinference|otel-genai``: a run as OTel spans."""

from __future__ import annotations

import argparse
from pathlib import Path

import orjson
from rich.console import Console

from opar_sim.cli.commands.common import UsageError
from opar_sim.rundir import RunDirError, check_run_dir, write_bytes
from opar_sim.traces.gen_ai_export import gen_ai_spans
from opar_sim.traces.otlp import otlp_spans

NAME = "export"
HELP = "write a run's episodes as OpenTelemetry/OpenInference spans (OTLP JSON)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run directory, ``--format`` (otlp) and ``--out``."""
    parser.add_argument("rundir", type=Path, help="a run directory written by run or compare")
    parser.add_argument(
        "--format",
        choices=["otlp", "openinference", "otel-genai"],
        default="otlp",
        help="otlp (= openinference): OTLP/JSON spans with OpenInference attributes (episode > "
        "step > LLM, tool); otel-genai: gen_ai.* spans (invoke_agent > plan, chat, execute_tool) "
        "with opar_sim.* decisions",
    )
    parser.add_argument("--out", type=Path, help="the file (default RUNDIR/traces.otlp.json)")


def run(args: argparse.Namespace, console: Console) -> int:
    """Write the spans and print the file's path and the span count.

    Returns:
        0; a path that is not a run directory is a usage error (exit 2).
    """
    try:
        path = check_run_dir(args.rundir)
    except RunDirError as exc:
        raise UsageError(str(exc)) from None
    genai = args.format == "otel-genai"
    data = gen_ai_spans(path) if genai else otlp_spans(path)
    out = args.out or path / ("traces.gen_ai.otlp.json" if genai else "traces.otlp.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(out, orjson.dumps(data), inside=None if args.out else path)
    spans = sum(len(s["spans"]) for r in data["resourceSpans"] for s in r["scopeSpans"])
    console.print(f"{spans} spans: [green]{out}[/]", highlight=False)
    return 0
