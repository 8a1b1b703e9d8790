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

import json
import math
import shlex
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from opar_sim.measure.stats import Summary
from opar_sim.rundir import (
    EPISODES_FILE,
    STEPS_FILE,
    SUMMARY_FILE,
    EpisodeRow,
    StepRow,
    claim_whole_run,
    write_whole_run,
)
from opar_sim.traces.formats import Conversation, parse_file
from opar_sim.traces.log_import import log_rows, parse_runs, resolve_format
from opar_sim.traces.runs import args_hash, parse_success_rule

CONTROLLER = "recorded"
TOOL_ERROR = "error"  # a step's ``tool_error`` when a tool answered one of its calls with an error
SOURCE_FILE = "source.json"  # what was imported, from where
IMPORT_FILES = (SOURCE_FILE, STEPS_FILE, EPISODES_FILE, SUMMARY_FILE)  # in the order written
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


def _text(message: dict[str, Any]) -> int:
    """Characters of a message: its content and its tool calls' names and arguments."""
    chars = len(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        function = call["function"]
        arguments = function.get("arguments") or ""
        chars += len(function["name"]) + len(
            arguments if isinstance(arguments, str) else _dumped(arguments)
        )
    return chars


def _dumped(value: Any) -> str:
    try:
        return json.dumps(value)
    except (ValueError, RecursionError, TypeError):
        return repr(value)


def _is_error(message: dict[str, Any]) -> bool:
    if message.get("error") is True:
        return True
    return (message.get("content") or "").lstrip().lower().startswith("error")


def _id_key(value: Any) -> Any:
    """A tool-call id as a dict key, equal where the ids are equal (a list or object too)."""
    try:
        hash(value)
    except TypeError:
        return ("unhashable", repr(value))
    return value


def _answers(messages: list[dict[str, Any]]) -> dict[tuple[int, int], dict[str, Any]]:
    """(assistant message index, call index) -> the tool message answering that call.

    A call's answer is among the tool messages that follow its assistant message (up to
    the next assistant message): the first unmatched one with its ``tool_call_id`` if
    there is one, else the first unmatched one in order.  Ids alone are not trusted:
    recorded runs reuse them.  Linear in the messages and calls: each tool message is
    looked at once, and taken at most once.
    """
    out: dict[tuple[int, int], dict[str, Any]] = {}
    n = len(messages)
    for i, message in enumerate(messages):
        calls = message.get("tool_calls") or []
        if not calls:
            continue
        replies = []
        k = i + 1
        while k < n and messages[k]["role"] != "assistant":
            if messages[k]["role"] == "tool":
                replies.append(messages[k])
            k += 1
        by_id: dict[Any, deque[int]] = {}
        for r, reply in enumerate(replies):
            by_id.setdefault(_id_key(reply.get("tool_call_id")), deque()).append(r)
        used = [False] * len(replies)
        first_free = 0
        for j, call in enumerate(calls):
            pick = None
            same = by_id.get(_id_key(call.get("id")))
            while same:
                r = same.popleft()
                if not used[r]:
                    pick = r
                    break
            if pick is None:
                while first_free < len(replies) and used[first_free]:
                    first_free += 1
                if first_free < len(replies):
                    pick = first_free
            if pick is not None:
                used[pick] = True
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
    notes: list[str] = field(default_factory=list)  # what was done besides (a leftover removed)
    fmt: str = ""  # the format imported (named or detected)


def import_traces(
    path: str | Path,
    fmt: str | None,
    out: str | Path,
    *,
    agent: str | None = None,
    task: str | None = None,
    success_score: str | None = None,
) -> ImportResult:
    """Import a file of recorded runs into a new run directory.

    Args:
        path: The file of recorded runs.
        fmt: One of ``log_import.ALL_FORMATS``, or None to tell it from the file.
        out: The run directory to create (it must not hold a run already).
        agent: The model's name (default: the file's own, a τ-bench file name, ``unknown``).
        task: The task family (default: the file's own, ``tau-bench/DOMAIN`` from the name).
        success_score: ``NAME>=THRESHOLD``: the score that means success, for a format
            that records scores and no success (Langfuse, OpenTelemetry, Inspect).

    Returns:
        The directory, the counts of runs, tasks and trials per task, the summary, and
        notes (a stopped import's leftover removed; runs whose success is unknown).

    The run is written beside ``out`` and renamed into place when it is whole
    (``rundir.write_whole_run``), with a manifest of its files: a killed import leaves
    no half run, and the same command run again finishes it.

    Raises:
        TraceFormatError: when a record does not fit its format, or the format cannot
            be told.
        SpecError: when ``out`` already holds a run, or is not empty.
    """
    source = Path(path)
    target = Path(out)
    rule = parse_success_rule(success_score) if success_score is not None else None
    fmt, doc = resolve_format(source, fmt)
    score = f" --success-score {shlex.quote(str(rule))}" if rule is not None else ""

    def command(where: str) -> str:
        return (
            f"opar-sim traces import {shlex.quote(str(source))} --format {fmt}{score} "
            f"--out {shlex.quote(where)}"
        )

    notes = claim_whole_run(target, IMPORT_FILES, command)
    default_agent, default_task = default_names(source, fmt)
    agent, task = agent or default_agent, task or default_task
    about: dict[str, Any] = {"format": fmt, "file": str(source.resolve())}
    if doc is None:
        episodes, step_rows = _conversation_rows(source, fmt, agent, task)
    else:
        episodes, step_rows, extra = log_rows(parse_runs(doc, fmt, source), rule, agent, task)
        about.update(extra)
        if "unknown" in extra:
            notes.append(extra["unknown"])
    dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    trials = Counter(e["episode"] for e in episodes)
    summary = Summary(trials=max(trials.values()))
    for row in episodes:
        summary.add_row(row)
    table = summary.as_dict()
    about.update(runs=len(episodes), tasks=len(trials))
    files = {
        SOURCE_FILE: _json_bytes(about),
        STEPS_FILE: b"".join(dumps(row, option=newline) for row in step_rows),
        EPISODES_FILE: b"".join(dumps(row, option=newline) for row in episodes),
        SUMMARY_FILE: _json_bytes(table),
    }
    write_whole_run(
        target, files, head={"import": SOURCE_FILE}, units=len(episodes), command=command(str(out))
    )
    return ImportResult(target, len(episodes), len(trials), max(trials.values()), table, notes, fmt)


def _conversation_rows(
    source: Path, fmt: str, agent: str, task: str
) -> tuple[list[EpisodeRow], list[StepRow]]:
    """The rows of a τ-bench or OpenAI-chat file, sorted by task and trial."""
    episodes: list[EpisodeRow] = []
    steps: list[StepRow] = []
    for conv in sorted(parse_file(source, fmt), key=lambda c: (c.task_id, c.trial)):
        episode, rows = conversation_rows(conv, agent, task)
        episodes.append(episode)
        steps += rows
    return episodes, steps


def _json_bytes(data: Any) -> bytes:
    """A JSON document as ``write_json`` writes it: indented, with a final newline."""
    return (json.dumps(data, indent=2) + "\n").encode()
