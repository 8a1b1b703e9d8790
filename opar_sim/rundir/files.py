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
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from opar_sim.rundir.manifest import (
    CHUNK_FILES,
    MANIFEST_FILE,
    FileCheck,
    ManifestError,
    check_whole,
    fsync_dir,
    header_line,
    read_chunks,
    read_whole,
    spec_bytes,
)
from opar_sim.rundir.rows import to_line
from opar_sim.spec.schema import ExperimentSpec, SpecError

SPEC_FILE = "spec.json"
EPISODES_FILE = "episodes.jsonl"
STEPS_FILE = "steps.jsonl"
SUMMARY_FILE = "summary.json"
CALLS_FILE = "calls.jsonl"
LLM_SUMMARY_FILE = "llm.json"
RUN_FILES = (SPEC_FILE, EPISODES_FILE, STEPS_FILE, SUMMARY_FILE, MANIFEST_FILE)
STEPS_PARQUET = "steps.parquet"  # a batch run's steps as columns (``columnar``)
UNFINISHED_FILE = "unfinished.json"  # in a run being written whole: the command writing it
UNFINISHED_SUFFIX = ".unfinished"


class RunDirError(SpecError):
    """The path is not a readable run directory."""


MAX_INPUT_ENV = "OPAR_SIM_MAX_INPUT_MB"  # the ceiling on a file read, in MB (10^6 bytes)
DEFAULT_MAX_INPUT_MB = 4096
_NOT_REGULAR = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def input_ceiling() -> int:
    """The largest file the toolkit reads, in bytes: ``OPAR_SIM_MAX_INPUT_MB`` (default 4096)."""
    text = os.environ.get(MAX_INPUT_ENV, "")
    try:
        mb = float(text) if text.strip() else DEFAULT_MAX_INPUT_MB
    except ValueError:
        raise RunDirError(f"{MAX_INPUT_ENV}={text!r}: expected a number of MB") from None
    if not mb > 0:
        raise RunDirError(f"{MAX_INPUT_ENV}={text!r}: expected a number of MB above 0")
    return int(min(mb, 1e12) * 1_000_000)


def _mb(size: float) -> str:
    return f"{size / 1e6:,.3g} MB" if size < 1e9 else f"{size / 1e6:,.0f} MB"


def open_input(path: Path) -> IO[bytes]:
    """Open a file the user gave (a trace, a run's file) to read: a regular file, not too big.

    A FIFO, a device (a link to ``/dev/zero``), a socket or a directory is refused before
    a byte is read (the FIFO is opened without waiting for a writer), and so is a file
    over the ceiling (``input_ceiling``).  Every reader of a user's file opens it here.

    Args:
        path: The file.

    Returns:
        The file, open for binary reading.

    Raises:
        RunDirError: one line naming the file and what is wrong with it.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise RunDirError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        for test, kind in _NOT_REGULAR:
            if test(info.st_mode):
                raise RunDirError(
                    f"{path}: not a regular file ({kind}); opar-sim reads only regular files"
                )
        ceiling = input_ceiling()
        if info.st_size > ceiling:
            raise RunDirError(
                f"{path}: {_mb(info.st_size)}, over the {ceiling / 1e6:,.6g} MB ceiling of a "
                f"file read; set {MAX_INPUT_ENV} to raise it"
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: Path) -> bytes:
    """The bytes of a file the user gave, checked as ``open_input`` checks it.

    Raises:
        RunDirError: naming the file: not a regular file, over the ceiling, unreadable.
    """
    with open_input(path) as f:
        ceiling = input_ceiling()
        try:
            data = f.read(ceiling + 1)
        except OSError as exc:
            raise RunDirError(f"{path}: cannot read ({exc.strerror})") from None
    if len(data) > ceiling:  # it grew while it was read
        raise RunDirError(
            f"{path}: over the {ceiling / 1e6:,.6g} MB ceiling of a file read; "
            f"set {MAX_INPUT_ENV} to raise it"
        )
    return data


def run_file_check(path: Path, f: IO[bytes]) -> FileCheck | None:
    """The manifest's check of a run's chunk file about to be read, or None when it has none.

    The returned check is fed the file's bytes as they are read (``FileCheck``) and
    refuses a chunk whose checksum differs (an edit), bytes past the recorded end once
    the run is finished (``summary.json`` written: a file appended to or concatenated),
    and, at the end, a file shorter than recorded (emptied, cut).

    Args:
        path: The file (``steps.jsonl``, ``episodes.jsonl`` or ``calls.jsonl``).
        f: It, open for reading at its start.

    Raises:
        RunDirError: naming the file and what its manifest says.
    """
    manifest = path.parent / MANIFEST_FILE
    if path.name not in CHUNK_FILES or not (manifest.exists() or manifest.is_symlink()):
        return None
    try:
        chunks = read_chunks(read_input(manifest), path.name, manifest)
        finished = (path.parent / SUMMARY_FILE).is_file()
        return FileCheck.start(path, chunks, os.fstat(f.fileno()).st_size, finished)
    except ManifestError as exc:
        raise RunDirError(str(exc)) from None


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

    The file is opened by ``open_input`` (a regular file under the size ceiling); a run's
    chunk file is checked against the run's manifest as it is read (``run_file_check``).

    Raises:
        RunDirError: naming the file and line of the first line that is not a JSON
            object (a torn last line, without its newline, is skipped), or what the
            manifest finds changed in the file.
    """
    f = open_input(path)
    with f:
        check = run_file_check(path, f)
        try:
            for number, raw in enumerate(f, 1):
                if check is not None:
                    check.before(raw)
                if not raw.endswith(b"\n"):  # a torn last line: an unfinished write
                    break
                try:
                    row = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    raise RunDirError(f"{path}:{number}: not JSON ({exc})") from None
                if not isinstance(row, dict):
                    raise RunDirError(f"{path}:{number}: not a JSON object")
                yield row  # its fields are checked (``readers.rows``) before its chunk's sum
                if check is not None:
                    check.feed(raw)
            if check is not None:
                check.close()
        except ManifestError as exc:
            raise RunDirError(str(exc)) from None


def read_blocks(path: Path, size: int) -> Iterator[list[bytes]]:
    """The complete lines of a JSON-lines file, about ``size`` bytes of them at a time.

    Opened and checked against the run's manifest as ``read_jsonl`` does (each block is
    checked before it is handed over); a torn last line is left out.  For the fast
    readers (``columns``), which parse a block at once.

    Raises:
        RunDirError: naming the file and what is wrong with it.
    """
    with open_input(path) as f:
        check = run_file_check(path, f)
        try:
            while raw_lines := f.readlines(size):
                if not raw_lines[-1].endswith(b"\n"):
                    raw_lines.pop()  # only the last line can be torn
                if check is not None:
                    for raw in raw_lines:
                        check.before(raw)
                    check.feed(b"".join(raw_lines))
                if raw_lines:
                    yield raw_lines
            if check is not None:
                check.close()
        except ManifestError as exc:
            raise RunDirError(str(exc)) from None


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
    toolkit writes goes through here (or ``write_stream``): the destination is checked
    (``check_destination``) and the temporary file is created fresh (``O_EXCL``, a random
    name), so a link planted in a shared run directory is refused, never followed.

    Args:
        path: The file.
        data: Its new content.
        inside: The directory the file must stay in (see ``check_destination``).
    """
    write_stream(path, lambda f: f.write(data), inside=inside)


def write_stream(
    path: Path, write: Callable[[IO[bytes]], object], *, inside: Path | None = None
) -> None:
    """Replace ``path`` with what ``write`` writes to it, as ``write_bytes`` replaces it.

    Args:
        path: The file.
        write: Called once with the temporary file, open for binary writing.
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
            write(f)
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
    if not (path.exists() or path.is_symlink()):
        return None
    data = read_input(path)
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise RunDirError(f"{path}: not valid JSON ({_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= 160 else line[:157] + "..."


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


def unfinished_dir(out: Path) -> Path:
    """Where a run written whole is built before it is renamed to ``out``: a hidden sibling."""
    out = Path(os.path.abspath(out))
    return out.parent / f".{out.name}{UNFINISHED_SUFFIX}"


def stopped_write(out: Path) -> str | None:
    """What to say of ``out`` when a write of it (an import) was stopped before it finished.

    Returns:
        The message, naming the command to run again; None when no write was stopped.
    """
    left = unfinished_dir(out)
    if not left.is_dir() or left.is_symlink():
        return None
    command = None
    with contextlib.suppress(RunDirError, ValueError, TypeError, AttributeError):
        command = json.loads(read_input(left / UNFINISHED_FILE)).get("command")
    again = f"`{command}`" if isinstance(command, str) else "the command that writes it"
    return (
        f"{out} is unfinished: its writing was stopped ({left} holds what was written); "
        f"run {again} again"
    )


def check_run_files(path: Path) -> None:
    """When a run is opened: its chunk files' sizes against its manifest (quick, not whole).

    An emptied file, or one that goes on past its recorded end while its recorded part
    is intact (appended to, concatenated twice; a finished run), is named here, before
    any command reads it; any other difference (an edit) is named by the reader that
    reads the file, at its line (``read_jsonl``).  A run without a manifest (written
    before manifests, or by hand) is not checked.

    Raises:
        RunDirError: naming the file and what its manifest records.
    """
    manifest = path / MANIFEST_FILE
    if not (manifest.exists() or manifest.is_symlink()):
        return
    data = read_input(manifest)
    finished = (path / SUMMARY_FILE).is_file()
    try:
        check_whole(path, read_whole(data, manifest))  # a batch run's Parquet files' sizes
    except ManifestError as exc:
        raise RunDirError(str(exc)) from None
    for name in CHUNK_FILES:
        file = path / name
        if not (file.exists() or file.is_symlink()):
            continue
        try:
            chunks = read_chunks(data, name, manifest)
        except ManifestError as exc:
            raise RunDirError(str(exc)) from None
        end = chunks[-1].end if chunks else 0
        with open_input(file) as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0 and end > 0:
                raise RunDirError(
                    f"{file}: 0 bytes, shorter than its manifest records ({end:,} bytes): "
                    "emptied after the run was written"
                )
            if finished and size > end and _intact(FileCheck(file, chunks, size, False), f):
                tail = f.read(1 << 16)
                if b"\n" in tail or size - end > len(tail):  # more than a torn last line
                    raise RunDirError(FileCheck(file, chunks, size, True).past())


def _intact(check: FileCheck, f: IO[bytes]) -> bool:
    """Whether the recorded part of the file (up to its manifest's end) is as recorded."""
    try:
        while check.pos < check.end:
            block = f.read(min(1 << 24, check.end - check.pos))
            if not block:
                return False
            check.feed(block)
    except ManifestError:
        return False
    return True


def read_spec(path: Path) -> ExperimentSpec | None:
    """The run's resolved spec, or None when spec.json is missing or from another version."""
    file = path / SPEC_FILE
    if not (file.exists() or file.is_symlink()):
        return None
    try:
        return ExperimentSpec.model_validate_json(read_input(file))
    except ValueError:
        return None
