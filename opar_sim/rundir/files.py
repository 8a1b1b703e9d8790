"""The run directory's files: their names, the one JSON-lines reader and the atomic writers.

A run directory holds the resolved spec (``spec.json``), ``episodes.jsonl``
(one line per episode), ``steps.jsonl`` (one line per step), ``summary.json``,
``calls.jsonl`` and ``llm.json`` for LLM runs, and figures.  Every line is
appended whole and flushed (``writer.RunWriter``); readers skip a half-written
last line (``readers`` checks each line's fields), and ``resume`` cuts such a
tail before a run goes on.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from opar_sim.rundir.manifest import MANIFEST_FILE, fsync_dir, header_line, spec_bytes
from opar_sim.rundir.rows import to_line
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


# a name that becomes part of a file name (a controller's, a figure's): what is kept as is
_STEM = re.compile(r"[^A-Za-z0-9_.+=-]")


def file_stem(name: str) -> str:
    """``name`` as one safe piece of a file name: every other character written as ``_``.

    Controller names (``path/to/law.py:Class``, or anything a file held) and figure
    names become file names through this once: no separator, no newline, no ``..``.
    """
    stem = _STEM.sub("_", name)[:120]
    return "_" + stem if not stem.strip(".") else stem


def check_destination(path: Path, inside: Path | None = None) -> None:
    """Refuse to write ``path`` through a link: a linked file, a linked directory, or outside.

    Args:
        path: The file about to be written.
        inside: The directory the file must stay in (the run directory), after every link
            is resolved; None checks the file and its own directory only.

    Raises:
        RunDirError: naming the path and what was planted.
    """
    if path.is_symlink():
        raise RunDirError(f"{path} is a symbolic link; refusing to write through it")
    parent = path.parent
    if inside is None:
        if parent.is_symlink():
            raise RunDirError(f"{parent} is a symbolic link; refusing to write through it")
        return
    root, real = inside.resolve(), parent.resolve()
    if real != root and root not in real.parents:
        raise RunDirError(
            f"{path} resolves outside {inside} (a linked directory); refusing to write there"
        )


def write_bytes(path: Path, data: bytes, *, inside: Path | None = None) -> None:
    """Replace ``path`` with ``data`` atomically: a temporary file, fsynced, then renamed.

    A full disk or a kill leaves the old file (or none), never a torn one.  Every file the
    toolkit writes goes through here: the destination is checked (``check_destination``)
    and the temporary file is created fresh (``O_EXCL``, a random name), so a link planted
    in a shared run directory is refused, never followed.

    Args:
        path: The file.
        data: Its new content.
        inside: The directory the file must stay in (see ``check_destination``).
    """
    check_destination(path, inside)
    tmp = path.with_name(f".{path.name[:100]}.{secrets.token_hex(6)}.tmp")
    try:  # created here, never an existing file or link (the mode as umask allows, as open)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    except OSError as exc:
        raise _named(exc, path) from None
    try:
        with os.fdopen(fd, "wb") as f:
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


def open_append(path: Path) -> IO[bytes]:
    """``path`` opened to append, created if missing; a link there is refused (``O_NOFOLLOW``)."""
    check_destination(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RunDirError(f"{path} is a symbolic link; refusing to write through it") from None
        raise
    return os.fdopen(fd, "ab")


def _named(exc: OSError, path: Path) -> OSError:
    """``exc`` with the file it concerns (a failed write on an open file names none)."""
    if exc.filename is not None:
        return exc
    return type(exc)(exc.errno, exc.strerror, str(path))


def write_json(path: Path, data: Any, *, inside: Path | None = None) -> None:
    """Write one JSON document (summary.json, llm.json), indented, with a final newline."""
    write_bytes(path, (json.dumps(data, indent=2) + "\n").encode(), inside=inside)


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


def write_spec(out: Path, spec: ExperimentSpec, engine: str = "simpy") -> None:
    """Write the resolved spec a run was started with, and the manifest's header."""
    write_bytes(out / SPEC_FILE, spec_bytes(spec))
    write_bytes(out / MANIFEST_FILE, header_line(spec, engine))


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
