"""The checked readers of a run's row files: each line parsed and its fields typed.

``rows`` reads any run file through ``files.read_jsonl``; the lines of
``episodes.jsonl``, ``steps.jsonl`` and ``calls.jsonl`` are checked for the
fields their readers rely on, so a damaged line is a ``RunDirError`` naming the
file, the line and the field, never a KeyError deep in an analysis.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from opar_sim.rundir.files import EPISODES_FILE, STEPS_FILE, RunDirError, read_jsonl

# the fields readers rely on: name -> (type, required); types: int, num, str, bool, any;
# a trailing "?" allows null
_EPISODE_FIELDS = {
    "episode": ("int", True),
    "controller": ("str", False),
    "success": ("bool", True),
    "steps": ("int", True),
    "outcome": ("str", False),
    "seed": ("int", False),
    "task": ("str?", False),
    "agent": ("str?", False),
    "best_step": ("int?", False),
    "final_progress": ("num?", False),
    "complete": ("bool?", False),
    "feasible": ("bool?", False),
    "prompt_tokens": ("int", False),
    "completion_tokens": ("int", False),
    "tokens": ("num", False),
    "llm_calls": ("int", False),
    "sim_seconds": ("num", False),
    "tool_calls": ("int", False),
    "replans": ("num", False),
    "sub_tokens": ("num", False),
    "attempt": ("int?", False),
    "trial": ("int?", False),
}
_STEP_FIELDS = {
    "episode": ("int", True),
    "step": ("int", True),
    "time": ("num", False),  # absent from an imported record (no clock, no hidden truth)
    "progress": ("num", False),
    "controller": ("str", False),
    "agent": ("str?", False),
    "delta_task": ("num?", False),
    "delta_act": ("num?", False),
    "delta_plan": ("num?", False),
    "confidence": ("num?", False),
    "plan_quality": ("num?", False),
    "effective_quality": ("num?", False),
    "terms": ("dict?", False),
    "signal": ("str?", False),
    "action": ("str?", False),
    "tool": ("str?", False),
    "ok": ("bool?", False),
    "tokens": ("num?", False),
    "replans": ("num?", False),
    "attempt": ("int?", False),
    "trial": ("int?", False),
    "parent": ("str?", False),
}
_CALL_FIELDS = {
    "episode": ("int", False),
    "phase": ("str", True),
    "steps": ("int", False),
    "wall_seconds": ("num?", False),
    "sim_seconds": ("num?", False),
    "model_seconds": ("num?", False),
    "attempts": ("int?", False),
    "prompt_tokens": ("int?", False),
    "completion_tokens": ("int?", False),
    "cache_hit": ("bool?", False),
    "error": ("str?", False),
}
_WORDS = {"int": "a whole number", "num": "a number", "str": "text", "bool": "true or false"}


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "num":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "dict":
        return isinstance(value, dict) and all(
            _type_ok(v, "num") or v is None for v in value.values()
        )
    return True


def check_row(row: dict[str, Any], fields: dict[str, tuple[str, bool]], where: str) -> None:
    """Check the fields readers rely on; RunDirError names the line and the field.

    Args:
        row: A parsed line.
        fields: Name -> (type, required) (``_EPISODE_FIELDS`` and its kin).
        where: ``file:line`` for the message.
    """
    for name, (kind, required) in fields.items():
        if name not in row:
            if required:
                raise RunDirError(f"{where}: field {name!r} is missing")
            continue
        value = row[name]
        base = kind.rstrip("?")
        if value is None and kind.endswith("?"):
            continue
        if not _type_ok(value, base):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            word = _WORDS.get(base, "a table of numbers")
            raise RunDirError(f"{where}: field {name!r}: expected {word}, got {shown}")
        if base in ("int", "num") and isinstance(value, float) and value != value:
            raise RunDirError(f"{where}: field {name!r}: expected a number, got NaN")


_FIELDS = {
    "episodes.jsonl": _EPISODE_FIELDS,
    "steps.jsonl": _STEP_FIELDS,
    "calls.jsonl": _CALL_FIELDS,
}


def rows(file: Path) -> Iterator[dict[str, Any]]:
    """The complete lines of a run file, typed: RunDirError names the file, line and field.

    ``episodes.jsonl``, ``steps.jsonl`` and ``calls.jsonl`` rows are checked for
    the fields their readers use; any other file's lines only for being objects.
    """
    fields = _FIELDS.get(file.name, {})
    for number, row in enumerate(read_jsonl(file), 1):
        if fields:
            check_row(row, fields, f"{file}:{number}")
        yield row


def iter_episodes(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of episodes.jsonl, in file order."""
    yield from rows(path / EPISODES_FILE)


def iter_steps(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of steps.jsonl, in file order."""
    yield from rows(path / STEPS_FILE)
