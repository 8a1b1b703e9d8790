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

from opar_sim.rundir.columnar import (
    EPISODES_PARQUET,
    first_episodes,
    has_parquet,
    iter_table_rows,
    read_table,
)
from opar_sim.rundir.files import (
    EPISODES_FILE,
    STEPS_FILE,
    STEPS_PARQUET,
    RunDirError,
    check_run_files,
    open_input,
    read_jsonl,
    stopped_write,
)
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
    """The rows of episodes.jsonl, in file order (a batch run's: of episodes.parquet).

    A batch run writes its episodes in both forms from the same arrays; the columns are
    read (typed, checked whole against the manifest), not the lines.
    """
    if has_parquet(path, EPISODES_PARQUET):
        yield from iter_table_rows(read_table(path, EPISODES_PARQUET))
        return
    yield from rows(path / EPISODES_FILE)


def iter_steps(
    path: Path, *, checked: bool = True, first: int | None = None
) -> Iterator[dict[str, Any]]:
    """The rows of steps.jsonl, in file order (a batch run's: of steps.parquet, as dicts).

    Args:
        path: The run directory.
        checked: Check the fields readers rely on (``rows``); without, only that each
            line is an object (a viewer that shows what it finds).
        first: A hint: only the steps of each controller's first ``first`` episodes are
            wanted.  A Parquet file is cut to them before its rows become dicts; the
            lines of steps.jsonl all come (the caller keeps what it wants).
    """
    if has_parquet(path, STEPS_PARQUET):
        table = read_table(path, STEPS_PARQUET)
        yield from iter_table_rows(table if first is None else first_episodes(table, first))
        return
    yield from rows(path / STEPS_FILE) if checked else read_jsonl(path / STEPS_FILE)


def check_run_dir(path: Path) -> Path:
    """``path`` if it holds a run (episodes.jsonl and steps.jsonl or .parquet), else RunDirError.

    Its chunk files are checked against its manifest too (``check_run_files``).
    """
    if not path.is_dir():
        raise RunDirError(stopped_write(path) or f"run directory not found: {path}")
    if (path / "sweep.json").is_file():
        raise RunDirError(f"{path} is a sweep: give one of its point directories")
    steps = STEPS_PARQUET if has_parquet(path, STEPS_PARQUET) else STEPS_FILE
    for name in (EPISODES_FILE, steps):
        file = path / name
        if not (file.exists() or file.is_symlink()):
            raise RunDirError(f"{path} is not a run directory: {name} is missing")
        open_input(file).close()  # a FIFO, a device, a file over the ceiling: refused here
    check_run_files(path)
    return path
