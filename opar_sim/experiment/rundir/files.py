"""The run directory's files: their names, the one JSON-lines reader and writer, resume.

A run directory holds the resolved spec (``spec.json``), ``episodes.jsonl``
(one line per episode), ``steps.jsonl`` (one line per step), ``summary.json``,
``calls.jsonl`` and ``llm.json`` for LLM runs, and figures.  Every line is
appended whole and flushed; readers skip a half-written last line, and
``resume_point`` cuts such a tail before a run goes on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from opar_sim.experiment.rundir.rows import episode_key, to_line
from opar_sim.experiment.spec import ExperimentSpec, SpecError

SPEC_FILE = "spec.json"
EPISODES_FILE = "episodes.jsonl"
STEPS_FILE = "steps.jsonl"
SUMMARY_FILE = "summary.json"
CALLS_FILE = "calls.jsonl"
LLM_SUMMARY_FILE = "llm.json"
RUN_FILES = (SPEC_FILE, EPISODES_FILE, STEPS_FILE, SUMMARY_FILE)


class RunDirError(SpecError):
    """The path is not a readable run directory."""


def prepare_out_dir(out: Path) -> None:
    """Refuse to overwrite a run: an existing directory must hold no run files."""
    if out.exists() and not out.is_dir():
        raise SpecError(f"--out {out} exists and is not a directory")
    if out.is_dir() and any((out / name).exists() for name in RUN_FILES):
        raise SpecError(
            f"--out {out} already holds a run; use --resume to finish it, or another directory"
        )


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Stream the complete lines of a JSON-lines file."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.endswith("\n"):
                yield orjson.loads(line)


def write_json(path: Path, data: Any) -> None:
    """Write one JSON document (summary.json, llm.json), indented, with a final newline."""
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def read_json(path: Path) -> Any:
    """Read one JSON document of a run (summary.json, llm.json, sweep.json).

    Args:
        path: The file.

    Returns:
        The parsed document, or None when the file does not exist.

    Raises:
        RunDirError: when the file is not valid JSON.
    """
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{path}: not valid JSON ({exc})") from None


def write_jsonl(path: Path, rows: Iterable[Any]) -> None:
    """Write rows as a new JSON-lines file (one ``to_line`` per row).

    Args:
        path: The file, replaced if it exists.
        rows: JSON-serialisable rows.
    """
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(to_line(row))


def write_spec(out: Path, spec: ExperimentSpec) -> None:
    """Write the resolved spec a run was started with."""
    (out / SPEC_FILE).write_text(spec.model_dump_json(indent=2) + "\n", encoding="utf-8")


def check_run_dir(path: Path) -> Path:
    """``path`` if it holds a run (episodes.jsonl and steps.jsonl), else RunDirError."""
    if not path.is_dir():
        raise RunDirError(f"run directory not found: {path}")
    if (path / "sweep.json").is_file():
        raise RunDirError(f"{path} is a sweep: give one of its point directories")
    for name in (EPISODES_FILE, STEPS_FILE):
        if not (path / name).is_file():
            raise RunDirError(f"{path} is not a run directory: {name} is missing")
    return path


def read_spec(path: Path) -> ExperimentSpec | None:
    """The run's resolved spec, or None when spec.json is missing or from another version."""
    file = path / SPEC_FILE
    if not file.is_file():
        return None
    try:
        return ExperimentSpec.model_validate_json(file.read_text(encoding="utf-8"))
    except ValueError:
        return None


def rows(file: Path) -> Iterator[dict[str, Any]]:
    """The complete lines of a run file; RunDirError when a line is not JSON."""
    try:
        yield from read_jsonl(file)
    except orjson.JSONDecodeError as exc:
        raise RunDirError(f"{file}: not JSON lines ({exc})") from None


def iter_episodes(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of episodes.jsonl, in file order."""
    yield from rows(path / EPISODES_FILE)


def iter_steps(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of steps.jsonl, in file order."""
    yield from rows(path / STEPS_FILE)


class RunWriter:
    """Appends chunk lines to the runs being written: one run at a time, in order, flushed."""

    def __init__(
        self, runs: Sequence[tuple[ExperimentSpec, Path]], on_run: Callable[[int], None] | None
    ) -> None:
        self.runs = runs
        self.on_run = on_run
        self.index: int | None = None
        self.files: tuple[IO[str], IO[str]] | None = None

    def write(self, index: int, episodes: str, steps: str, calls: str = "") -> None:
        """Append one chunk's lines to run ``index``: its steps first, then its episodes."""
        if index != self.index:
            self.close()
            out = self.runs[index][1]
            self.files = (
                open(out / EPISODES_FILE, "a", encoding="utf-8"),  # noqa: SIM115
                open(out / STEPS_FILE, "a", encoding="utf-8"),  # noqa: SIM115
            )
            self.index = index
            if self.on_run is not None:
                self.on_run(index)
        assert self.files is not None
        episodes_file, steps_file = self.files
        steps_file.write(steps)
        steps_file.flush()
        episodes_file.write(episodes)
        episodes_file.flush()
        if calls:  # LLM agents: their model calls
            with open(self.runs[index][1] / CALLS_FILE, "a", encoding="utf-8") as calls_file:
                calls_file.write(calls)

    def close(self) -> None:
        """Close the current run's episodes.jsonl and steps.jsonl, if one is open."""
        if self.files is not None:
            for f in self.files:
                f.close()
        self.files = None


def resume_point(spec: ExperimentSpec, out: Path) -> int:
    """Check ``out`` holds this spec's run, cut any half-written tail, return episodes done.

    An episode is done when all its ``trials`` rows are on disk; the rows of an
    episode whose trials were not all written are cut, and it runs again whole.

    Args:
        spec: The spec of the run being resumed.
        out: The run directory.

    Returns:
        The episodes done, counted over the controllers in file order.

    Raises:
        SpecError: when ``out`` holds no run, another spec's run, or a Reflexion run.
    """
    if spec.reflexion.attempts > 1:
        raise SpecError("--resume: runs with [reflexion] attempts > 1 cannot be resumed yet")
    spec_file = out / SPEC_FILE
    if not spec_file.is_file():
        raise SpecError(f"--resume: {out} holds no run to resume")
    on_disk = ExperimentSpec.model_validate_json(spec_file.read_text(encoding="utf-8"))
    if on_disk != spec:
        raise SpecError(f"--resume: the spec differs from the one that started {out}")
    names = [c.name for c in spec.controller_list()]
    trials = range(1, spec.trials + 1)
    expected = [(n, i, t, 1) for n in names for i in range(spec.episodes) for t in trials]
    rows_done = _cut_after(
        out / EPISODES_FILE, lambda k, row: expected[k] == episode_key(row), len(expected)
    )
    done = rows_done // spec.trials
    if done * spec.trials < rows_done:  # an episode cut between its trials
        _cut_after(out / EPISODES_FILE, lambda _k, _row: True, done * spec.trials)
    finished = set(expected[: done * spec.trials])
    _cut_after(out / STEPS_FILE, lambda _k, row: episode_key(row) in finished, None)
    return done


def _cut_after(path: Path, keep: Callable[[int, dict[str, Any]], bool], limit: int | None) -> int:
    """Keep the leading complete lines that ``keep`` accepts; truncate the rest; count them."""
    if not path.exists():
        path.touch()
        return 0
    kept = 0
    offset = 0
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n") or (limit is not None and kept >= limit):
                break
            try:
                row = json.loads(raw)
            except ValueError:
                break
            if not keep(kept, row):
                break
            kept += 1
            offset += len(raw)
    with open(path, "r+b") as f:
        f.truncate(offset)
    return kept
