"""The run directory's manifest: what is on disk, chunk by chunk, and its repair on resume.

``manifest.jsonl`` starts with a header naming the checksum of ``spec.json``;
after every chunk the writer has flushed and fsynced, it appends one line:
the episodes done so far (``units``, counted over the controllers in file
order) and, per file, its size after the chunk and the SHA-256 of the
chunk's bytes.  ``repair`` checks the files against it before a run goes on:
it keeps the leading chunks whose bytes match, cuts everything after them
(a torn line, a garbage line, a deleted or shortened file), rewrites a
damaged ``spec.json`` when the given spec matches the header, and says what
it did (``files.resume_run`` checks ``spec.json`` first and raises what it
cannot repair).

Readers check too: ``FileCheck`` follows a chunk file as it is read and refuses
one that is shorter than the manifest records (emptied, cut), whose chunk
checksums differ (edited), or that goes on past the recorded end once the run
is finished (appended to, concatenated twice).  A run directory written whole
(``opar-sim traces import``) has a manifest of one chunk (``whole_manifest``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opar_sim.spec.schema import ExperimentSpec, SpecError

MANIFEST_FILE = "manifest.jsonl"
MANIFEST_VERSION = 1
CHUNK_FILES = ("steps.jsonl", "episodes.jsonl", "calls.jsonl")  # the order a chunk is written


def spec_bytes(spec: ExperimentSpec) -> bytes:
    """The exact bytes of ``spec.json`` for ``spec``."""
    return (spec.model_dump_json(indent=2) + "\n").encode()


def sha256(data: bytes | bytearray) -> str:
    """The hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def fsync_dir(path: Path) -> None:
    """Make a directory's new entries durable (best effort: not every system allows it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):  # some file systems refuse to fsync a directory
            os.fsync(fd)
    finally:
        os.close(fd)


def header_line(spec: ExperimentSpec, engine: str = "simpy") -> bytes:
    """The manifest's first line; a run of another engine than SimPy's names it (``engine``)."""
    head: dict[str, Any] = {"manifest": MANIFEST_VERSION, "spec_sha256": sha256(spec_bytes(spec))}
    if engine != "simpy":
        head["engine"] = engine
    return (json.dumps(head) + "\n").encode()


def run_engine(out: Path) -> str:
    """The engine that wrote the run in ``out`` (``simpy`` when its manifest names none)."""
    head = read_header(out)
    engine = head.get("engine", "simpy") if head else "simpy"
    return str(engine)


def chunk_line(units: tuple[int, int], files: dict[str, tuple[int, str]]) -> bytes:
    """One chunk's line: the units it adds and each file's size and chunk checksum."""
    row = {"units": list(units), "files": {k: list(v) for k, v in files.items()}}
    return (json.dumps(row) + "\n").encode()


def whole_line(files: dict[str, tuple[int, str]]) -> bytes:
    """The line recording files written whole at the end of a run (a batch run's Parquet).

    Args:
        files: Each file's size and SHA-256.

    Returns:
        ``{"whole": {name: [size, sha256]}}`` and a newline; chunk readers skip it.
    """
    return (json.dumps({"whole": {k: list(v) for k, v in files.items()}}) + "\n").encode()


def read_whole(data: bytes, where: Path) -> dict[str, tuple[int, str]]:
    """The files a manifest records whole (``whole_line``): name -> (size, SHA-256).

    Args:
        data: The manifest's bytes.
        where: The manifest, for messages.

    Raises:
        ManifestError: for a damaged ``whole`` line.
    """
    found: dict[str, tuple[int, str]] = {}
    for number, raw in enumerate(data.split(b"\n")[1:-1], 2):
        if not raw.startswith(b'{"whole"'):
            continue
        try:
            row = json.loads(raw)
            found.update({str(k): (int(v[0]), str(v[1])) for k, v in row["whole"].items()})
        except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError):
            raise ManifestError(
                f"{where}:{number}: damaged: the run's files cannot be checked"
            ) from None
    return found


def check_whole(path: Path, whole: dict[str, tuple[int, str]]) -> None:
    """The sizes of the files a manifest records whole (``read_whole``), quickly, by size.

    Raises:
        ManifestError: naming a file that is missing or not of its recorded size (their
            checksums are checked when they are read: ``columnar.read_table``).
    """
    for name, (end, _) in whole.items():
        file = path / name
        size = file.stat().st_size if file.is_file() else None
        if size != end:
            what = "missing" if size is None else f"{size:,} bytes"
            raise ManifestError(
                f"{file}: {what}, its manifest records {end:,} bytes: changed after the run "
                "was written"
            )


def whole_manifest(head: dict[str, Any], units: int, files: dict[str, bytes]) -> bytes:
    """The manifest of a run directory written whole: its header and one chunk of everything.

    Args:
        head: What the header says besides its version (an import: ``{"import": ...}``).
        units: The runs (episodes) the files hold.
        files: Each chunk file's whole content.

    Returns:
        The bytes of ``manifest.jsonl``.
    """
    header = {"manifest": MANIFEST_VERSION, **head}
    sums = {name: (len(data), sha256(data)) for name, data in files.items()}
    return (json.dumps(header) + "\n").encode() + chunk_line((0, units), sums)


class ManifestError(SpecError):
    """A run's file differs from what its manifest records (or the manifest is damaged)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk of one file, as the manifest records it."""

    start: int
    end: int
    digest: str
    units: tuple[int, int]


def read_chunks(data: bytes, name: str, where: Path) -> list[Chunk]:
    """The chunks of file ``name`` that a manifest records (its torn last line skipped).

    Args:
        data: The manifest's bytes.
        name: The chunk file (``steps.jsonl``, ...).
        where: The manifest, for messages.

    Raises:
        ManifestError: for a manifest that cannot be read (a damaged line or header).
    """
    lines = data.split(b"\n")[:-1]  # what follows the last newline is a torn line
    try:
        head = json.loads(lines[0]) if lines else None
    except (ValueError, RecursionError):
        head = None
    if not isinstance(head, dict) or head.get("manifest") != MANIFEST_VERSION:
        raise ManifestError(f"{where}:1: not a manifest header: the run's files cannot be checked")
    chunks: list[Chunk] = []
    end = 0
    for number, raw in enumerate(lines[1:], 2):
        if raw.startswith(b'{"whole"'):  # files written whole (``whole_line``), not chunks
            continue
        try:
            row = json.loads(raw)
            lo, hi = (int(u) for u in row["units"])
            size, digest = row["files"].get(name, (end, sha256(b"")))
            size, digest = int(size), str(digest)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            raise ManifestError(
                f"{where}:{number}: damaged: the run's files cannot be checked"
            ) from None
        if size < end:
            raise ManifestError(f"{where}:{number}: {name} shrinks: the manifest is damaged")
        if size > end:
            chunks.append(Chunk(end, size, digest, (lo, hi)))
        end = size
    return chunks


@dataclass
class FileCheck:
    """A chunk file checked against its manifest while it is read, byte for byte."""

    path: Path
    chunks: list[Chunk]
    size: int  # the file's size when it was opened
    finished: bool  # the run is finished: nothing may follow the last chunk
    pos: int = 0
    index: int = 0
    hasher: Any = field(default_factory=hashlib.sha256)

    @property
    def end(self) -> int:
        """Where the manifest's last chunk of the file ends."""
        return self.chunks[-1].end if self.chunks else 0

    @classmethod
    def start(cls, path: Path, chunks: list[Chunk], size: int, finished: bool) -> FileCheck:
        """The check of a file about to be read from its start (``size``: its size now)."""
        return cls(path, chunks, size, finished)

    def past(self) -> str:
        """The message for bytes past the recorded end of a finished run's file."""
        return (
            f"{self.path}: {max(self.size - self.end, 1):,} bytes past the end its manifest "
            f"records ({self.end:,} bytes): appended to, or concatenated, after the run was "
            "written"
        )

    def _past(self) -> ManifestError:
        return ManifestError(self.past())

    def before(self, line: bytes) -> None:
        """Before ``line`` is parsed: a finished run's file may not go on past its end.

        A torn last line (no newline: a write that was cut) is never parsed, so never
        refused.
        """
        if line.endswith(b"\n") and self.finished and self.pos >= self.end:
            raise self._past()

    def feed(self, data: bytes) -> None:
        """The next bytes read; a chunk is checked as soon as its last byte is in.

        Raises:
            ManifestError: for a chunk whose checksum differs, or bytes past the end of a
                finished run's file.
        """
        while data:
            if self.index >= len(self.chunks):
                if self.finished:
                    raise self._past()
                self.pos += len(data)  # an unfinished chunk of a run still being written
                return
            chunk = self.chunks[self.index]
            take = min(len(data), chunk.end - self.pos)
            self.hasher.update(data[:take])
            self.pos += take
            data = data[take:]
            if self.pos == chunk.end:
                if self.hasher.hexdigest() != chunk.digest:
                    raise ManifestError(
                        f"{self.path}: does not match its manifest (bytes {chunk.start:,} to "
                        f"{chunk.end:,}, units {chunk.units[0]}-{chunk.units[1] - 1}): edited "
                        "after the run was written"
                    )
                self.hasher = hashlib.sha256()
                self.index += 1

    def close(self) -> None:
        """At the end of the file (or at a torn last line): every recorded byte was read.

        A file shorter than its manifest records is refused here, at its end, so that a
        damaged line before it is named first (by the line reader).
        """
        if self.pos < self.end:
            raise ManifestError(
                f"{self.path}: {self.pos:,} bytes, shorter than its manifest records "
                f"({self.end:,} bytes): emptied or cut after the run was written"
            )


@dataclass
class Repair:
    """What ``repair`` found: the units kept, each file's verified size, what it did."""

    done: int = 0
    ends: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CHUNK_FILES, 0))
    notes: list[str] = field(default_factory=list)
    manifest_end: int = 0


def read_header(out: Path) -> dict[str, Any] | None:
    """The manifest's header, or None when there is no readable one."""
    path = out / MANIFEST_FILE
    try:
        with open(path, "rb") as f:
            first = f.readline()
        head = json.loads(first)
    except (OSError, ValueError):
        return None
    return head if isinstance(head, dict) and head.get("manifest") == MANIFEST_VERSION else None


def repair(spec: ExperimentSpec, out: Path) -> Repair:
    """Check ``out`` against its manifest; cut what does not match; return what is kept.

    Args:
        spec: The spec of the run being resumed.
        out: The run directory (it holds a manifest).

    Returns:
        The units (episodes over controllers) kept, the files' sizes, and notes.
    """
    result = Repair()
    path = out / MANIFEST_FILE
    data = path.read_bytes()
    lines = data.split(b"\n")
    offset = len(lines[0]) + 1 if len(lines) > 1 else 0
    if read_header(out) is None:
        result.notes.append("manifest.jsonl header damaged: every chunk is re-run")
        offset = 0
    total = spec.episodes * len(spec.controller_list())
    cache: dict[str, bytes | None] = {}

    def content(name: str) -> bytes | None:
        if name not in cache:
            try:
                cache[name] = (out / name).read_bytes()
            except FileNotFoundError:
                cache[name] = None
        return cache[name]

    problem = ""
    chunks = 0
    for raw in lines[1:-1] if offset else []:
        try:
            row = json.loads(raw)
            lo, hi = (int(u) for u in row["units"])
            files = {str(k): (int(v[0]), str(v[1])) for k, v in row["files"].items()}
        except (ValueError, KeyError, TypeError):
            problem = f"manifest line {chunks + 2} is damaged"
            break
        if lo != result.done or not lo < hi <= total:
            problem = f"manifest line {chunks + 2} does not follow on"
            break
        for name in CHUNK_FILES:
            end, digest = files.get(name, (result.ends[name], sha256(b"")))
            body = content(name)
            start = result.ends[name]
            if body is None and end > 0:
                problem = f"{name} is missing"
            elif body is not None and len(body) < end:
                problem = f"{name} is shorter than the manifest says ({len(body)} < {end} bytes)"
            elif end < start or sha256((body or b"")[start:end]) != digest:
                problem = f"{name} does not match its checksum"
            if problem:
                problem += f" at episodes {lo}-{hi - 1} (of {total})"
                break
        if problem:
            break
        for name in CHUNK_FILES:
            result.ends[name] = files.get(name, (result.ends[name], ""))[0]
        result.done = hi
        chunks += 1
        offset += len(raw) + 1
    result.manifest_end = offset
    cut = []
    for name in CHUNK_FILES:
        body = content(name)
        if body is not None and len(body) > result.ends[name]:
            cut.append(f"{name} {len(body) - result.ends[name]} bytes")
    if problem:
        result.notes.append(
            f"{problem}: kept {result.done} of {total} episodes, re-running the rest"
        )
    elif cut:
        result.notes.append(
            f"cut an unfinished chunk ({', '.join(cut)}): kept {result.done} of {total} episodes"
        )
    elif result.done:
        result.notes.append(f"checked {chunks} chunk(s): {result.done} of {total} episodes kept")
    return result


def cut_to(out: Path, found: Repair, spec: ExperimentSpec) -> None:
    """Truncate the chunk files and the manifest to what ``repair`` kept."""
    for name in CHUNK_FILES:
        file = out / name
        if file.exists():
            with open(file, "r+b") as f:
                f.truncate(found.ends[name])
        elif found.ends[name] == 0 and name != "calls.jsonl":
            file.touch()
    manifest = out / MANIFEST_FILE
    with open(manifest, "r+b") as f:
        f.truncate(found.manifest_end)
        if found.manifest_end == 0:
            f.write(header_line(spec))
        f.flush()
        os.fsync(f.fileno())
