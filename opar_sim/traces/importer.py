"""Recorded conversations -> an ordinary run directory (episodes.jsonl, steps.jsonl, summary).

One episode per recorded run, one step per assistant turn, with what a Reflect law
could observe at that turn (docs/traces.md has the field list):

- ``tool``, ``args_hash``: the turn's (first) tool call and a hash of its arguments
  (SHA-256 of the canonical JSON, 16 hex digits); ``tool_calls`` counts the turn's calls
  and ``calls`` lists them all when there are several;
- ``tool_error``: ``"error"`` when a tool answered one of the turn's calls with an error
  (its reply starts with ``Error``, as τ-bench's tools answer, or the message carries
  ``"error": true``), else null (a simulated step's ``tool_error`` is its error's kind);
- ``user_turns``: user messages so far (before this turn);
- ``tokens``: a text-length estimate (characters / 4, rounded up) of the conversation so
  far without the system prompt, up to and including this turn (cumulative, as the
  simulator's step ``tokens``);
- ``repeat``: how many times the turn's call, same tool and same arguments, has been
  made in the run, this one included (0 for a turn without a tool call).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opar_sim.measure.stats import Summary
from opar_sim.rundir import (
    EPISODES_FILE,
    STEPS_FILE,
    SUMMARY_FILE,
    EpisodeRow,
    StepRow,
    prepare_out_dir,
    write_json,
    write_jsonl,
)
from opar_sim.traces.formats import Conversation, parse_file

CONTROLLER = "recorded"
TOOL_ERROR = "error"  # a step's ``tool_error`` when a tool answered one of its calls with an error
SOURCE_FILE = "source.json"  # what was imported, from where
READ_ONLY = ("calculate", "think", "transfer_to_human_agents")
READ_PREFIXES = ("get_", "search_", "list_")


def is_write_action(name: str) -> bool:
    """Whether a ground-truth tool call changes the database (τ-bench's airline tools).

    Args:
        name: The tool's name.

    Returns:
        False for look-ups (``get_``, ``search_``, ``list_``) and for ``calculate``,
        ``think`` and ``transfer_to_human_agents``; True otherwise.
    """
    return not name.startswith(READ_PREFIXES) and name not in READ_ONLY


def args_hash(arguments: Any) -> str:
    """A short hash of a tool call's arguments, equal for equal arguments in any key order.

    Args:
        arguments: The call's ``function.arguments`` (a JSON string or an object).

    Returns:
        16 hex digits of SHA-256 of the canonical JSON (the raw string when it is not JSON).
    """
    value = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            value = arguments
    if value is None:
        value = {}
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def _text(message: dict[str, Any]) -> int:
    """Characters of a message: its content and its tool calls' names and arguments."""
    chars = len(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        function = call["function"]
        arguments = function.get("arguments") or ""
        chars += len(function["name"]) + len(
            arguments if isinstance(arguments, str) else json.dumps(arguments)
        )
    return chars


def _is_error(message: dict[str, Any]) -> bool:
    if message.get("error") is True:
        return True
    return (message.get("content") or "").lstrip().lower().startswith("error")


def _answers(messages: list[dict[str, Any]]) -> dict[tuple[int, int], dict[str, Any]]:
    """(assistant message index, call index) -> the tool message answering that call.

    A call's answer is among the tool messages that follow its assistant message (up to
    the next assistant message): the one with its ``tool_call_id`` if there is one, else
    the next unmatched one in order.  Ids alone are not trusted: recorded runs reuse them.
    """
    out: dict[tuple[int, int], dict[str, Any]] = {}
    for i, message in enumerate(messages):
        calls = message.get("tool_calls") or []
        if not calls:
            continue
        replies = []
        for later in messages[i + 1 :]:
            if later["role"] == "assistant":
                break
            if later["role"] == "tool":
                replies.append(later)
        free = list(range(len(replies)))
        for j, call in enumerate(calls):
            wanted = call.get("id")
            pick = next((k for k in free if replies[k].get("tool_call_id") == wanted), None)
            if pick is None and free:
                pick = free[0]
            if pick is not None:
                free.remove(pick)
                out[(i, j)] = replies[pick]
    return out


def conversation_rows(
    conv: Conversation, agent: str, task: str
) -> tuple[EpisodeRow, list[StepRow]]:
    """The episodes.jsonl row and the steps.jsonl rows of one recorded run.

    Both are rows of the one schema (``rundir.schema``), in its field order; a recorded
    run has no clock, no hidden truth and no Reflect law, so those fields are left out
    and ``signal`` is null.

    Args:
        conv: The checked record.
        agent: The model's name (the record's own ``model`` wins).
        task: The task family, e.g. ``tau-bench/airline`` (the record's own ``task`` wins).

    Returns:
        (the episode row, one step row per assistant turn).
    """
    agent = conv.agent or agent
    task = conv.task or task
    trial = conv.trial + 1
    answers = _answers(conv.messages)
    seen: Counter[tuple[str, str]] = Counter()
    steps: list[StepRow] = []
    chars = 0
    user_turns = 0
    calls_total = 0
    for i, message in enumerate(conv.messages):
        if message["role"] == "system":
            continue
        chars += _text(message)
        if message["role"] == "user":
            user_turns += 1
        if message["role"] != "assistant":
            continue
        calls = []
        for j, call in enumerate(message.get("tool_calls") or []):
            name = call["function"]["name"]
            digest = args_hash(call["function"].get("arguments"))
            seen[(name, digest)] += 1
            answer = answers.get((i, j))
            error = answer is not None and _is_error(answer)
            calls.append(
                {"tool": name, "args_hash": digest, "error": error, "repeat": seen[(name, digest)]}
            )
        calls_total += len(calls)
        first = calls[0] if calls else None
        row: StepRow = {
            "episode": conv.task_id,
            "agent": agent,
            "controller": CONTROLLER,
            "step": len(steps) + 1,
            "user_turns": user_turns,
            "tool": first["tool"] if first else None,
            "args_hash": first["args_hash"] if first else None,
            "tool_calls": len(calls),
            "repeat": max((c["repeat"] for c in calls), default=0),
            "tool_error": TOOL_ERROR if any(c["error"] for c in calls) else None,
            "signal": None,
            "tokens": math.ceil(chars / 4),
            "trial": trial,
        }
        if len(calls) > 1:
            row["calls"] = calls
        steps.append(row)
    actions = conv.actions
    features: dict[str, float] | None = None
    if actions is not None:
        features = {
            "actions": len(actions),
            "write_actions": sum(is_write_action(name) for name in actions),
        }
    episode: EpisodeRow = {
        "episode": conv.task_id,
        "task": task,
        "agent": agent,
        "controller": CONTROLLER,
        "outcome": "success" if conv.success else "failure",
        "success": conv.success,
        "reward": conv.reward,
        "steps": len(steps),
        "user_turns": user_turns,
        "feasible": None,
        "tokens": steps[-1]["tokens"] if steps else 0,
        "sim_seconds": 0.0,
        "tool_calls": calls_total,
        "replans": 0,
        "attempt": 1,
        "trial": trial,
        "task_features": features,
    }
    return episode, steps


def default_names(path: Path, fmt: str) -> tuple[str, str]:
    """(agent, task) guessed from a file name such as ``gpt-4o-airline.train.json``.

    τ-bench names its trajectory files ``MODEL-DOMAIN.json``; otherwise the agent is
    ``unknown`` and the task the file's stem (under the format's name).

    Args:
        path: The imported file.
        fmt: Its format.

    Returns:
        The agent's and the task's names.
    """
    stem = path.name.split(".")[0]
    model, _, domain = stem.rpartition("-")
    if fmt == "tau-bench" and model and domain in ("airline", "retail"):
        return model, f"tau-bench/{domain}"
    return "unknown", f"{fmt}/{stem}"


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import wrote."""

    out: Path
    runs: int
    tasks: int
    trials: int
    summary: dict[str, Any]


def import_traces(
    path: str | Path,
    fmt: str,
    out: str | Path,
    *,
    agent: str | None = None,
    task: str | None = None,
) -> ImportResult:
    """Import a file of recorded runs into a new run directory.

    Args:
        path: The file of recorded runs.
        fmt: ``tau-bench`` or ``openai-chat``.
        out: The run directory to create (it must not hold a run already).
        agent: The model's name (default: from a τ-bench file name, else ``unknown``).
        task: The task family (default: ``tau-bench/DOMAIN`` from the file name).

    Returns:
        The directory, the counts of runs, tasks and trials per task, and the summary.

    Raises:
        TraceFormatError: when a record does not fit its format.
        SpecError: when ``out`` already holds a run.
    """
    source = Path(path)
    runs = sorted(parse_file(source, fmt), key=lambda c: (c.task_id, c.trial))
    default_agent, default_task = default_names(source, fmt)
    target = Path(out)
    prepare_out_dir(target)
    episodes, steps = [], []
    for conv in runs:
        episode, rows = conversation_rows(conv, agent or default_agent, task or default_task)
        episodes.append(episode)
        steps.extend(rows)
    trials = Counter(c.task_id for c in runs)
    summary = Summary(trials=max(trials.values()))
    for row in episodes:
        summary.add_row(row)
    table = summary.as_dict()
    target.mkdir(parents=True, exist_ok=True)
    write_jsonl(target / STEPS_FILE, steps)
    write_jsonl(target / EPISODES_FILE, episodes)
    write_json(target / SUMMARY_FILE, table)
    write_json(
        target / SOURCE_FILE,
        {"format": fmt, "file": str(source.resolve()), "runs": len(runs), "tasks": len(trials)},
    )
    return ImportResult(target, len(runs), len(trials), max(trials.values()), table)
