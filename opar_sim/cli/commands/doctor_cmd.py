"""``opar-sim doctor [SPEC]``: can the LLM agent run here?

With a spec it checks the spec's backends (Ollama: reachable, version, each
model pulled; llama.cpp: installed, model file present).  Without one it
checks the Ollama at ``OLLAMA_HOST`` (or the default address).  It prints what
to fix and exits 1 when something is wrong.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from opar_sim.llm.config import BackendSpec
from opar_sim.llm.health import check_backends, check_ollama
from opar_sim.spec.build import load_spec

NAME = "doctor"
HELP = "check the configured LLM backends (Ollama reachable, models present)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """An optional spec whose backends to check, and ``--timeout`` seconds per request."""
    parser.add_argument("spec", nargs="?", help="experiment spec whose backends to check")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per request")


def run(args: argparse.Namespace, console: Console) -> int:
    """Check the backends and print one ok/FAIL line per check, with the fix for each failure.

    Returns:
        0 when every check passes (or the spec's agent is simulated), else 1.
    """
    if args.spec is None:
        checks = check_ollama(None, [], args.timeout)
    else:
        agent = load_spec(args.spec).agent
        if agent.kind != "llm" and agent.backend is None:
            console.print(f"{args.spec}: simulated agent, no LLM backend to check", markup=False)
            return 0
        specs = [agent.backend or BackendSpec()]
        if agent.evaluator is not None:
            specs.append(agent.evaluator)
        checks = check_backends(specs, args.timeout)
    for c in checks:
        mark = "[green]ok[/]  " if c.ok else "[red]FAIL[/]"
        console.print(f"{mark} {escape(c.what)}: {escape(c.detail)}", highlight=False)
        if c.fix:
            console.print(f"      fix: {c.fix}", highlight=False, markup=False)
    bad = [c for c in checks if not c.ok]
    console.print("all good" if not bad else f"{len(bad)} problem(s)")
    return 1 if bad else 0
