"""The model-call log of an LLM run: ``calls.jsonl`` and the cost summary ``llm.json``.

``calls.jsonl`` has one line per model call (or plan-cache hit) with its
episode, step, phase, tokens, durations and errors.  ``llm.json`` sums it:
tokens and seconds per step, plan-cache hits, invalid outputs per phase, and
the share of wall time spent outside the model (the loop's own overhead).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Protocol, TextIO

from opar_sim.models import EpisodeResult
from opar_sim.records import to_line

CALLS_FILE = "calls.jsonl"
SUMMARY_FILE = "llm.json"


class TracedAgent(Protocol):
    def drain_calls(self) -> list[dict[str, Any]]: ...


class CallLog:
    """Streams an LLM agent's calls to ``calls.jsonl`` and writes ``llm.json`` at close."""

    def __init__(self, agent: TracedAgent, out: Path) -> None:
        self.agent = agent
        self.out = out
        self._file: TextIO = open(out / CALLS_FILE, "w", encoding="utf-8")  # noqa: SIM115
        self.episodes = 0
        self.steps = 0
        self.sim_seconds = 0.0
        self.wall_seconds = 0.0
        self.totals: Counter[str] = Counter()
        self.model_seconds = 0.0
        self.call_wall_seconds = 0.0
        self.invalid: Counter[str] = Counter()
        self.phase_calls: Counter[str] = Counter()
        self.backend_failure: str | None = None  # the first, with what to do about it

    def add(self, result: EpisodeResult, wall_seconds: float) -> None:
        """Log the calls of a finished episode that took ``wall_seconds`` to run."""
        self.episodes += 1
        self.steps += len(result.steps)
        self.sim_seconds += result.cost.sim_seconds
        self.wall_seconds += wall_seconds
        lines = []
        for call in self.agent.drain_calls():
            row = {"episode": result.episode, "controller": result.controller, **call}
            lines.append(to_line(row))
            phase = str(call.get("phase"))
            if call.get("cache_hit"):
                self.totals["cache_hits"] += 1
                continue
            self.phase_calls[phase] += 1
            self.totals["calls"] += 1
            self.totals["attempts"] += int(call.get("attempts") or 0)
            self.totals["prompt_tokens"] += int(call.get("prompt_tokens") or 0)
            self.totals["completion_tokens"] += int(call.get("completion_tokens") or 0)
            self.model_seconds += float(call.get("model_seconds") or 0.0)
            self.call_wall_seconds += float(call.get("wall_seconds") or 0.0)
            if call.get("error"):
                self.invalid[f"{phase}:{call['error']}"] += 1
            if call.get("message") and self.backend_failure is None:
                self.backend_failure = str(call["message"])
        self._file.write("".join(lines))
        self._file.flush()

    def summary(self) -> dict[str, Any]:
        steps = max(self.steps, 1)
        wall = self.wall_seconds
        t = self.totals
        return {
            "episodes": self.episodes,
            "steps": self.steps,
            "model_calls": t["calls"],
            "attempts": t["attempts"],
            "plan_cache_hits": t["cache_hits"],
            "calls_per_phase": dict(sorted(self.phase_calls.items())),
            "errors": dict(sorted(self.invalid.items())),
            "backend_failure": self.backend_failure,
            "prompt_tokens_per_step": t["prompt_tokens"] / steps,
            "completion_tokens_per_step": t["completion_tokens"] / steps,
            "tokens_per_step": (t["prompt_tokens"] + t["completion_tokens"]) / steps,
            "wall_seconds_per_step": wall / steps,
            "model_seconds_per_step": self.model_seconds / steps,
            "sim_seconds_per_step": self.sim_seconds / steps,
            "wall_seconds": wall,
            "model_call_wall_seconds": self.call_wall_seconds,
            # the loop's own share: wall time outside backend calls (prompting, validation,
            # simulation, files); and outside the model's reported time (adds HTTP and JSON)
            "overhead_share": max(0.0, 1.0 - self.call_wall_seconds / wall) if wall else 0.0,
            "outside_model_share": max(0.0, 1.0 - self.model_seconds / wall) if wall else 0.0,
        }

    def close(self) -> dict[str, Any]:
        """Close ``calls.jsonl``, write ``llm.json`` and return its content."""
        self._file.close()
        table = self.summary()
        (self.out / SUMMARY_FILE).write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
        return table


def open_call_log(agent: object, out: Path) -> CallLog | None:
    """A call log for agents that keep one (LLM agents); None for the others."""
    if not callable(getattr(agent, "drain_calls", None)):
        return None
    return CallLog(agent, out)  # type: ignore[arg-type]
