"""The formats of recorded runs: τ-bench's trajectories and the generic OpenAI-chat records.

Both hold one run per record: the task id, the trial, the reward and the
conversation in OpenAI chat format (``system``, ``user``, ``assistant`` with
``tool_calls``, ``tool``).  They differ in where things sit:

- ``tau-bench``: a JSON array (τ-bench's ``historical_trajectories``); each element has
  ``task_id``, ``trial``, ``reward``, the conversation in ``traj`` and the task, with its
  ground-truth ``actions``, in ``info.task``;
- ``openai-chat``: JSON Lines (or a JSON array), one object per run with ``task_id``,
  ``trial``, ``reward`` and ``messages``; optional ``model``, ``task`` and ``actions``
  (the ground-truth tool calls, as names or as ``{"name": ...}`` objects).

A record that does not fit raises ``TraceFormatError`` naming the run (its index, task and
trial) and the field.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from opar_sim.rundir import RunDirError, read_input
from opar_sim.traces.runs import TraceFormatError

ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class Conversation:
    """One recorded run, checked: what the importer needs of a record."""

    index: int  # position of the record in the file (0-based)
    task_id: int
    trial: int  # as recorded (0-based)
    reward: float
    messages: list[dict[str, Any]]
    actions: list[str] | None  # names of the ground-truth tool calls, when known
    agent: str | None = None  # the model, when the record names it
    task: str | None = None  # the task family, when the record names it

    @property
    def success(self) -> bool:
        """Reward 1.0 is a success (τ-bench's judgement of the final database state)."""
        return self.reward >= 1.0


def _where(index: int, record: Any) -> str:
    """'run 3 (task 12, trial 0)', with what the record shows of its task and trial."""
    if isinstance(record, dict):
        return f"run {index} (task {record.get('task_id', '?')}, trial {record.get('trial', '?')})"
    return f"run {index}"


def _fail(index: int, record: Any, field: str, problem: str) -> TraceFormatError:
    return TraceFormatError(f"{_where(index, record)}: {field}: {problem}")


MAX_ID = 2**53  # task ids and trials are whole numbers a float holds exactly


def _integer(index: int, record: dict[str, Any], name: str) -> int:
    if name not in record:
        raise _fail(index, record, name, "missing")
    value = record[name]
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ID:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise _fail(index, record, name, f"must be an integer from 0 to {MAX_ID:,}, got {shown}")
    return value


def _reward(index: int, record: dict[str, Any]) -> float:
    if "reward" not in record:
        raise _fail(index, record, "reward", "missing")
    value = record["reward"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _fail(index, record, "reward", f"must be a number, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise _fail(index, record, "reward", f"must lie in [0, 1], got {value!r}")
    return float(value)


def _messages(index: int, record: dict[str, Any], name: str, value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        raise _fail(index, record, name, "must be a non-empty list of chat messages")
    for k, message in enumerate(value):
        where = f"{name}[{k}]"
        if not isinstance(message, dict):
            raise _fail(index, record, where, "must be an object")
        role = message.get("role")
        if role not in ROLES:
            raise _fail(index, record, f"{where}.role", f"must be one of {ROLES}, got {role!r}")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise _fail(index, record, f"{where}.content", "must be a string or null")
        calls = message.get("tool_calls")
        if calls is None:
            continue
        if role != "assistant" or not isinstance(calls, list):
            raise _fail(index, record, f"{where}.tool_calls", "must be a list on an assistant")
        for j, call in enumerate(calls):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                raise _fail(index, record, f"{where}.tool_calls[{j}].function", "missing")
            if not isinstance(function.get("name"), str) or not function["name"]:
                raise _fail(index, record, f"{where}.tool_calls[{j}].function.name", "missing")
            arguments = function.get("arguments")
            if arguments is not None and not isinstance(arguments, str | dict):
                raise _fail(
                    index,
                    record,
                    f"{where}.tool_calls[{j}].function.arguments",
                    "must be a JSON string or an object",
                )
    return value


def _action_names(index: int, record: dict[str, Any], name: str, value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise _fail(index, record, name, "must be a list of tool calls")
    names = []
    for k, action in enumerate(value):
        label = action.get("name") if isinstance(action, dict) else action
        if not isinstance(label, str) or not label:
            raise _fail(index, record, f"{name}[{k}]", "must be a tool name or {'name': ...}")
        names.append(label)
    return names


def _optional_text(index: int, record: dict[str, Any], name: str) -> str | None:
    value = record.get(name)
    if value is not None and not isinstance(value, str):
        raise _fail(index, record, name, f"must be a string, got {value!r}")
    return value


def _tau_bench(index: int, record: dict[str, Any]) -> Conversation:
    info = record.get("info")
    task = info.get("task") if isinstance(info, dict) else None
    actions = task.get("actions") if isinstance(task, dict) else None
    if task is not None and not isinstance(task, dict):
        raise _fail(index, record, "info.task", "must be an object")
    return Conversation(
        index,
        _integer(index, record, "task_id"),
        _integer(index, record, "trial"),
        _reward(index, record),
        _messages(index, record, "traj", record.get("traj")),
        _action_names(index, record, "info.task.actions", actions),
    )


def _openai_chat(index: int, record: dict[str, Any]) -> Conversation:
    return Conversation(
        index,
        _integer(index, record, "task_id"),
        _integer(index, record, "trial"),
        _reward(index, record),
        _messages(index, record, "messages", record.get("messages")),
        _action_names(index, record, "actions", record.get("actions")),
        _optional_text(index, record, "model"),
        _optional_text(index, record, "task"),
    )


FORMATS: dict[str, Callable[[int, dict[str, Any]], Conversation]] = {
    "tau-bench": _tau_bench,
    "openai-chat": _openai_chat,
}


def _records(path: Path, fmt: str) -> list[Any]:
    """The file's records: a JSON array, or (openai-chat) JSON Lines, parsed by orjson.

    The file is read through ``rundir.read_input`` (a regular file under the size
    ceiling); orjson refuses nesting deeper than 1024 and numbers it cannot hold, so
    a hostile file is one ``TraceFormatError`` naming its line, never a crash.
    """
    if not (path.exists() or path.is_symlink()):
        raise TraceFormatError(f"{path}: no such file")
    try:
        data = read_input(path)
    except RunDirError as exc:
        raise TraceFormatError(str(exc)) from None
    if data.lstrip().startswith(b"["):
        try:
            records = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise TraceFormatError(f"{path}: not valid JSON ({exc})") from None
        return list(records)
    if fmt == "tau-bench":
        raise TraceFormatError(f"{path}: a tau-bench file is a JSON array of runs")
    records = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            records.append(orjson.loads(line))
        except orjson.JSONDecodeError as exc:
            raise TraceFormatError(f"{path}: line {number}: not valid JSON ({exc})") from None
    return records


def parse_file(path: str | Path, fmt: str) -> list[Conversation]:
    """Read and check every run of a file of recorded conversations.

    Args:
        path: The file (a JSON array; JSON Lines also for ``openai-chat``).
        fmt: ``tau-bench`` or ``openai-chat``.

    Returns:
        The runs, in file order.

    Raises:
        TraceFormatError: for an unknown format, an unreadable file, a record that does
            not fit (naming the run and the field), or a task and trial recorded twice.
    """
    if fmt not in FORMATS:
        raise TraceFormatError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    parse = FORMATS[fmt]
    records = _records(Path(path), fmt)
    if not records:
        raise TraceFormatError(f"{path}: no runs")
    out = []
    seen: dict[tuple[int, int], int] = {}
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise _fail(index, record, "record", "must be a JSON object")
        conversation = parse(index, record)
        key = (conversation.task_id, conversation.trial)
        if key in seen:
            raise _fail(
                index, record, "trial", f"task and trial already recorded by run {seen[key]}"
            )
        seen[key] = index
        out.append(conversation)
    return out
