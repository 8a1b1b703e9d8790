"""The model-call log of an LLM run: ``calls.jsonl`` and the cost summary ``llm.json``.

``calls.jsonl`` has one line per model call (or plan-cache hit) with its
episode, step, phase, tokens, durations and errors, and one ``"phase":
"episode"`` line per episode with its wall-clock seconds.  ``llm.json`` sums
it: tokens and seconds per step, plan-cache hits, invalid outputs per phase,
and the share of wall time spent outside the model (the loop's own overhead).
Workers produce the lines (``call_lines``); the runner appends them and
writes the summary from the file (``write_summary``), so resumed runs count
every episode once.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from opar_sim.core.types import EpisodeResult
from opar_sim.rundir.files import CALLS_FILE, LLM_SUMMARY_FILE, read_jsonl, write_json
from opar_sim.rundir.rows import to_line


def call_lines(
    calls: Iterable[dict[str, Any]], results: list[EpisodeResult], wall_seconds: float
) -> str:
    """The calls.jsonl lines of one episode (its Reflexion attempts share one wall time)."""
    if not results:
        return ""
    first = results[0]
    head = {"episode": first.episode, "controller": first.controller}
    lines = [to_line(head | call) for call in calls]
    steps = sum(len(r.steps) for r in results)
    sim = sum(r.cost.sim_seconds for r in results)
    episode_row = {"phase": "episode", "wall_seconds": wall_seconds, "steps": steps}
    lines.append(to_line(head | episode_row | {"sim_seconds": sim}))
    return "".join(lines)


def summarize(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Totals and per-step means of a run's calls.jsonl rows."""
    t: Counter[str] = Counter()
    phase_calls: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    seconds: defaultdict[str, float] = defaultdict(float)
    failure: str | None = None
    for row in rows:
        phase = str(row.get("phase"))
        if phase == "episode":
            t["episodes"] += 1
            t["steps"] += int(row["steps"])
            seconds["wall"] += float(row["wall_seconds"])
            seconds["sim"] += float(row["sim_seconds"])
            continue
        if row.get("cache_hit"):
            t["cache_hits"] += 1
            continue
        phase_calls[phase] += 1
        t["calls"] += 1
        t["attempts"] += int(row.get("attempts") or 0)
        t["prompt"] += int(row.get("prompt_tokens") or 0)
        t["completion"] += int(row.get("completion_tokens") or 0)
        seconds["model"] += float(row.get("model_seconds") or 0.0)
        seconds["call_wall"] += float(row.get("wall_seconds") or 0.0)
        if row.get("error"):
            errors[f"{phase}:{row['error']}"] += 1
        if row.get("message") and failure is None:
            failure = str(row["message"])
    steps = max(t["steps"], 1)
    wall = seconds["wall"]
    return {
        "episodes": t["episodes"],
        "steps": t["steps"],
        "model_calls": t["calls"],
        "attempts": t["attempts"],
        "plan_cache_hits": t["cache_hits"],
        "calls_per_phase": dict(sorted(phase_calls.items())),
        "errors": dict(sorted(errors.items())),
        "backend_failure": failure,
        "prompt_tokens_per_step": t["prompt"] / steps,
        "completion_tokens_per_step": t["completion"] / steps,
        "tokens_per_step": (t["prompt"] + t["completion"]) / steps,
        "wall_seconds_per_step": wall / steps,
        "model_seconds_per_step": seconds["model"] / steps,
        "sim_seconds_per_step": seconds["sim"] / steps,
        "wall_seconds": wall,
        "model_call_wall_seconds": seconds["call_wall"],
        # the loop's own share: wall time outside backend calls (prompting, validation,
        # simulation, files); and outside the model's reported time (adds HTTP and JSON)
        "overhead_share": max(0.0, 1.0 - seconds["call_wall"] / wall) if wall else 0.0,
        "outside_model_share": max(0.0, 1.0 - seconds["model"] / wall) if wall else 0.0,
    }


def write_summary(out: Path) -> dict[str, Any] | None:
    """Write ``llm.json`` from ``calls.jsonl``; None (nothing written) for non-LLM runs."""
    path = out / CALLS_FILE
    if not path.is_file():
        return None
    table = summarize(read_jsonl(path))
    write_json(out / LLM_SUMMARY_FILE, table)
    return table
