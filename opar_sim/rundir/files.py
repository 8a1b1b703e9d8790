"""The run directory's files: their names, the one JSON-lines reader and writer, resume.

A run directory holds the resolved spec (``spec.json``), ``episodes.jsonl``
(one line per episode), ``steps.jsonl`` (one line per step), ``summary.json``,
``calls.jsonl`` and ``llm.json`` for LLM runs, and figures.  Every line is
appended whole and flushed; readers skip a half-written last line, and
``resume_point`` cuts such a tail before a run goes on.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from opar_sim.rundir.manifest import (
    CHUNK_FILES,
    MANIFEST_FILE,
    Repair,
    chunk_line,
    cut_to,
    fsync_dir,
    header_line,
    read_header,
    repair,
    sha256,
    spec_bytes,
)
from opar_sim.rundir.rows import episode_key, to_line
from opar_sim.rundir.schema import CALL_CHECKS, EPISODE_CHECKS, STEP_CHECKS, row_problem
from opar_sim.spec.schema import ExperimentSpec, SpecError

SPEC_FILE = "spec.json"
EPISODES_FILE = "episodes.jsonl"
STEPS_FILE = "steps.jsonl"
SUMMARY_FILE = "summary.json"
CALLS_FILE = "calls.jsonl"
LLM_SUMMARY_FILE = "llm.json"
RUN_FILES = (SPEC_FILE, EPISODES_FILE, STEPS_FILE, SUMMARY_FILE, MANIFEST_FILE)


class RunDirError(SpecError):
    """The path is not a readable run directory."""


def default_run_dir(name: str) -> Path:
    """A fresh run directory for ``name``: ``runs/NAME/TIMESTAMP`` under the working directory.

    Args:
        name: The spec's (or command's) name.

    Returns:
        The path, not created.
    """
    return Path("runs") / name / time.strftime("%Y%m%d-%H%M%S")


def prepare_out_dir(out: Path) -> None:
    """Refuse to overwrite a run: an existing directory must hold no run files."""
    if out.exists() and not out.is_dir():
        raise SpecError(f"--out {out} exists and is not a directory")
    if out.is_dir() and any((out / name).exists() for name in RUN_FILES):
        raise SpecError(
            f"--out {out} already holds a run; use --resume to finish it, or another directory"
        )


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Stream the complete lines of a JSON-lines file, each checked to be a JSON object.

    Raises:
        RunDirError: naming the file and line of the first line that is not a JSON
            object (a torn last line, without its newline, is skipped).
    """
    try:
        f = open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise RunDirError(f"{path}: cannot read ({exc.strerror})") from None
    with f:
        for number, raw in enumerate(f, 1):
            if not raw.endswith(b"\n"):
                return
            try:
                row = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise RunDirError(f"{path}:{number}: not JSON ({exc})") from None
            if not isinstance(row, dict):
                raise RunDirError(f"{path}:{number}: not a JSON object")
            yield row


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


def write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: a temporary file, fsynced, then renamed.

    A full disk or a kill leaves the old file (or none), never a torn one.

    Args:
        path: The file.
        data: Its new content.
    """
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise _named(exc, path) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)


def _named(exc: OSError, path: Path) -> OSError:
    """``exc`` with the file it concerns (a failed write on an open file names none)."""
    if exc.filename is not None:
        return exc
    return type(exc)(exc.errno, exc.strerror, str(path))


def write_json(path: Path, data: Any) -> None:
    """Write one JSON document (summary.json, llm.json), indented, with a final newline."""
    write_bytes(path, (json.dumps(data, indent=2) + "\n").encode())


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
    write_bytes(path, "".join(to_line(row) for row in rows).encode())


def write_spec(out: Path, spec: ExperimentSpec) -> None:
    """Write the resolved spec a run was started with, and the manifest's header."""
    write_bytes(out / SPEC_FILE, spec_bytes(spec))
    write_bytes(out / MANIFEST_FILE, header_line(spec))


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


class RunWriter:
    """The one writer of chunk lines: one run at a time, in order, whole lines, fsynced.

    Each chunk's steps, episodes and model calls are appended and fsynced, then
    one manifest line records the files' sizes and the chunk's checksums.  When
    a write fails (a full disk) every file is cut back to the last chunk
    boundary before the error goes on, so no torn line is left behind.
    """

    def __init__(
        self,
        runs: Sequence[tuple[ExperimentSpec, Path]],
        on_run: Callable[[int], None] | None,
        starts: Sequence[Repair] | None = None,
    ) -> None:
        self.runs = runs
        self.on_run = on_run
        self.index: int | None = None
        self.starts = list(starts) if starts is not None else [Repair() for _ in runs]
        self.files: dict[str, IO[bytes]] = {}

    def write(
        self, index: int, units: tuple[int, int], episodes: str, steps: str, calls: str = ""
    ) -> None:
        """Append one chunk to run ``index`` (steps, episodes, calls) and record it.

        Args:
            index: The run, in ``runs``.
            units: The chunk's episodes counted over the controllers in file order.
            episodes: Its episodes.jsonl lines.
            steps: Its steps.jsonl lines.
            calls: Its calls.jsonl lines (LLM agents).
        """
        out = self.runs[index][1]
        if index != self.index:
            self.close()
            self.index = index
            if self.on_run is not None:
                self.on_run(index)
        state = self.starts[index]
        texts = dict(zip(CHUNK_FILES, (steps, episodes, calls), strict=True))
        entry: dict[str, tuple[int, str]] = {}
        name = MANIFEST_FILE
        try:
            for name, text in texts.items():
                data = text.encode()
                if data or name != CALLS_FILE or (out / name).exists():
                    f = self._file(out, name)
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                entry[name] = (state.ends[name] + len(data), sha256(data))
            name = MANIFEST_FILE
            with open(out / MANIFEST_FILE, "ab") as m:
                m.write(chunk_line(units, entry))
                m.flush()
                os.fsync(m.fileno())
        except OSError as exc:
            self._cut_back(out, state)
            raise _named(exc, out / name) from None
        for name, (end, _) in entry.items():
            state.ends[name] = end
        state.done = units[1]

    def _file(self, out: Path, name: str) -> IO[bytes]:
        f = self.files.get(name)
        if f is None:
            f = self.files[name] = open(out / name, "ab")  # noqa: SIM115
        return f

    def _cut_back(self, out: Path, state: Repair) -> None:
        """After a failed write: every file back to the last chunk boundary (best effort)."""
        self.close()
        for name in CHUNK_FILES:
            with contextlib.suppress(OSError):
                if (out / name).exists():
                    os.truncate(out / name, state.ends[name])

    def close(self) -> None:
        """Close the current run's files, if any are open."""
        for f in self.files.values():
            with contextlib.suppress(OSError):
                f.close()
        self.files = {}


def check_spec_file(spec: ExperimentSpec, out: Path, notes: list[str]) -> None:
    """``spec.json`` must be ``spec``'s; a damaged one is rewritten when the manifest vouches.

    Raises:
        RunDirError: when spec.json is another spec's, or damaged with nothing to check it by.
    """
    file = out / SPEC_FILE
    wanted = spec_bytes(spec)
    try:
        found: bytes | None = file.read_bytes()
    except FileNotFoundError:
        found = None
    if found == wanted:
        return
    if found is not None:
        try:
            on_disk = ExperimentSpec.model_validate_json(found)
        except ValueError:
            on_disk = None
        if on_disk is not None:
            if on_disk != spec:
                raise RunDirError(f"--resume: the spec differs from the one that started {out}")
            return  # the same spec, written by another version's formatting
    head = read_header(out)
    what = "missing" if found is None else "damaged"
    if head is None or head.get("spec_sha256") != sha256(wanted):
        raise RunDirError(
            f"--resume: {file} is {what} and no manifest confirms the spec: cannot repair; "
            "start the run again in another directory"
        )
    write_bytes(file, wanted)
    notes.append(f"spec.json was {what}: rewritten from the spec (the manifest's checksum matches)")


def resume_run(spec: ExperimentSpec, out: Path) -> Repair:
    """Check ``out`` holds this spec's run, repair it, and return what is kept.

    With a manifest every chunk is checked against its checksums and sizes and
    everything from the first damaged one on is cut (to be run again); without
    one (a run written before manifests) the episode keys decide, as they did.
    ``notes`` says what was done.

    Args:
        spec: The spec of the run being resumed.
        out: The run directory.

    Returns:
        The episodes done (counted over the controllers in file order), each
        file's size, and the notes.

    Raises:
        RunDirError: when ``out`` holds another spec's run, or one that cannot be
            repaired (a SpecError: exit 2).
    """
    if spec.reflexion.attempts > 1:
        raise SpecError("--resume: runs with [reflexion] attempts > 1 cannot be resumed yet")
    notes: list[str] = []
    check_spec_file(spec, out, notes)
    if (out / MANIFEST_FILE).is_file():
        found = repair(spec, out)
        cut_to(out, found, spec)
        found.notes[:0] = notes
        return found
    done = resume_point(spec, out)
    found = Repair(done=done * 1, notes=notes)
    for name in CHUNK_FILES:
        file = out / name
        found.ends[name] = file.stat().st_size if file.exists() else 0
    head = header_line(spec)
    if done:
        files = {n: (found.ends[n], sha256(_read(out / n))) for n in CHUNK_FILES}
        head += chunk_line((0, done), files)
    write_bytes(out / MANIFEST_FILE, head)
    found.notes.append(
        f"no manifest (an older run): resumed by episode keys, {done} episodes kept; "
        "a manifest is kept from now on"
    )
    return found


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


def resume_point(spec: ExperimentSpec, out: Path) -> int:
    """Cut any half-written tail of a run without a manifest; return the episodes done.

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
    try:
        on_disk = ExperimentSpec.model_validate_json(spec_file.read_text(encoding="utf-8"))
    except ValueError:
        raise RunDirError(f"--resume: {spec_file} is not a valid spec") from None
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
                if not isinstance(row, dict) or not keep(kept, row):
                    break
            except (ValueError, KeyError, TypeError):
                break
            kept += 1
            offset += len(raw)
    with open(path, "r+b") as f:
        f.truncate(offset)
    return kept
