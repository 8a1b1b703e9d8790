"""The checked readers of a run's row files: each line parsed and its fields typed.

``rows`` reads any run file through ``files.read_jsonl``; the lines of
``episodes.jsonl``, ``steps.jsonl``, ``calls.jsonl`` and a replay's
``replay_*.jsonl`` are checked for the fields their readers rely on, so a
damaged line is a ``RunDirError`` naming the file, the line and the field,
never a KeyError deep in an analysis.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from opar_sim.rundir.files import EPISODES_FILE, STEPS_FILE, RunDirError, read_jsonl
from opar_sim.rundir.schema import (
    CALL_CHECKS,
    EPISODE_CHECKS,
    REPLAY_CHECKS,
    STEP_CHECKS,
    row_problem,
)


def check_row(row: dict[str, Any], fields: dict[str, tuple[str, bool]], where: str) -> None:
    """Check the fields readers rely on; RunDirError names the line and the field.

    Args:
        row: A parsed line.
        fields: Name -> (type, required) (``schema.EPISODE_CHECKS`` and its kin).
        where: ``file:line`` for the message.
    """
    problem = row_problem(row, fields)
    if problem is not None:
        raise RunDirError(f"{where}: {problem}")


_FIELDS = {
    "episodes.jsonl": EPISODE_CHECKS,
    "steps.jsonl": STEP_CHECKS,
    "calls.jsonl": CALL_CHECKS,
}


def rows(file: Path) -> Iterator[dict[str, Any]]:
    """The complete lines of a run file, typed: RunDirError names the file, line and field.

    ``episodes.jsonl``, ``steps.jsonl``, ``calls.jsonl`` and ``replay_*.jsonl`` rows
    are checked for the fields their readers use; any other file's lines only for being
    objects.
    """
    fields = _FIELDS.get(file.name, {})
    if file.name.startswith("replay_") and file.name.endswith(".jsonl"):
        fields = REPLAY_CHECKS
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
