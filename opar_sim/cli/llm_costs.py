"""Printing an LLM run's costs (``llm.json``) after the run's tables."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from opar_sim.rundir import LLM_SUMMARY_FILE, read_json


def print_llm_costs(out: Path, console: Console) -> None:
    """Print tokens and seconds per step, cache hits and loop overhead, if the run had an LLM."""
    s = read_json(out / LLM_SUMMARY_FILE)
    if s is None:
        return
    console.print(
        f"LLM: {s['model_calls']} calls ({s['attempts']} attempts) over {s['steps']} steps; "
        f"{s['tokens_per_step']:.0f} tokens/step "
        f"({s['completion_tokens_per_step']:.0f} generated), "
        f"{s['wall_seconds_per_step']:.2f} s/step wall "
        f"({s['model_seconds_per_step']:.2f} s in the model), "
        f"{100 * s['overhead_share']:.2f}% of wall time outside model calls "
        f"({100 * s['outside_model_share']:.2f}% outside the model's own time); "
        f"plan cache hits {s['plan_cache_hits']}; errors {s['errors'] or 'none'}"
    )
    if s.get("backend_failure"):
        console.print(
            f"[red]backend failure[/]: {escape(str(s['backend_failure']))}", highlight=False
        )
