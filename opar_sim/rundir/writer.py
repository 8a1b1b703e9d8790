"""The writers of a run's files: chunk lines as a run goes, or a whole run at once.

``RunWriter`` appends whole lines, fsynced, each chunk recorded in the manifest.
``write_whole_run`` writes a run that exists all at once (an import) into a
sibling directory and renames it into place at the end, so a killed write
leaves no half run at ``--out``: its leftover (``files.unfinished_dir``) is
removed by the next attempt (``claim_whole_run``) and named by the readers.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from opar_sim.rundir.columnar import write_table
from opar_sim.rundir.files import (
    CALLS_FILE,
    RUN_FILES,
    STEPS_FILE,
    SUMMARY_FILE,
    UNFINISHED_FILE,
    RunDirError,
    _named,
    open_append,
    unfinished_dir,
    write_bytes,
)
from opar_sim.rundir.manifest import (
    CHUNK_FILES,
    MANIFEST_FILE,
    Repair,
    chunk_line,
    fsync_dir,
    whole_line,
    whole_manifest,
)
from opar_sim.spec.schema import ExperimentSpec

Bytes = bytes | bytearray | memoryview  # UTF-8 text, written as it is


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
        *,
        columnar: bool = False,
    ) -> None:
        self.runs = runs
        self.columnar = columnar  # steps go to steps.parquet (``write_whole``), not steps.jsonl
        self.on_run = on_run
        self.index: int | None = None
        self.starts = list(starts) if starts is not None else [Repair() for _ in runs]
        self.files: dict[str, IO[bytes]] = {}

    def write(
        self,
        index: int,
        units: tuple[int, int],
        episodes: str | Bytes | Iterable[Bytes],
        steps: str,
        calls: str = "",
    ) -> None:
        """Append one chunk to run ``index`` (steps, episodes, calls) and record it.

        Args:
            index: The run, in ``runs``.
            units: The chunk's episodes counted over the controllers in file order.
            episodes: Its episodes.jsonl lines (or already UTF-8: written as they are; or
                UTF-8 blocks, each written and hashed before the next is asked for).
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
                blocks = [text.encode()] if isinstance(text, str) else _blocks(text)
                skip = CALLS_FILE if not self.columnar else (CALLS_FILE, STEPS_FILE)
                f = None if name in skip and not (out / name).exists() else self._file(out, name)
                hasher, size = hashlib.sha256(), 0
                for data in blocks:  # each block written before the next is made
                    if f is None and len(data):
                        f = self._file(out, name)
                    if f is not None:
                        f.write(data)
                    hasher.update(data)
                    size += len(data)
                if f is not None:
                    f.flush()
                    os.fsync(f.fileno())
                entry[name] = (state.ends[name] + size, hasher.hexdigest())
            name = MANIFEST_FILE
            with open_append(out / MANIFEST_FILE) as m:
                m.write(chunk_line(units, entry))
                m.flush()
                os.fsync(m.fileno())
        except OSError as exc:
            self._cut_back(out, state)
            raise _named(exc, out / name) from None
        for name, (end, _) in entry.items():
            state.ends[name] = end
        state.done = units[1]

    def write_whole(self, index: int, tables: Mapping[str, Sequence[Any]]) -> None:
        """Write run ``index``'s Parquet files whole and record them in its manifest.

        Args:
            index: The run, in ``runs``.
            tables: File name (``columnar.PARQUET_FILES``) -> its pyarrow tables.
        """
        out = self.runs[index][1]
        self.close()
        recorded = {name: write_table(out, name, parts) for name, parts in tables.items()}
        try:
            with open_append(out / MANIFEST_FILE) as m:
                m.write(whole_line(recorded))
                m.flush()
                os.fsync(m.fileno())
        except OSError as exc:
            raise _named(exc, out / MANIFEST_FILE) from None

    def _file(self, out: Path, name: str) -> IO[bytes]:
        f = self.files.get(name)
        if f is None:
            f = self.files[name] = open_append(out / name)
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


_TEMP = re.compile(r"\..+\.[0-9a-f]{12}\.tmp")  # write_bytes' temporary files


def claim_whole_run(out: Path, names: Sequence[str], rerun: Callable[[str], str]) -> list[str]:
    """Make ready to write a run whole into ``out``; remove what a stopped attempt left.

    Args:
        out: The run directory to create (absent, or an empty directory).
        names: The files the run is made of (what a stopped attempt may have left).
        rerun: The command that writes the run, given its ``--out`` (for messages).

    Returns:
        What was done (the removal of a stopped attempt's directory), one line each.

    Raises:
        RunDirError: when ``out`` is not a directory to create, or holds something.
    """
    if Path(os.path.abspath(out)).name in ("", ".", ".."):
        raise RunDirError(f"--out {out}: give the name of a directory to create")
    if out.is_symlink():
        raise RunDirError(f"--out {out} is a symbolic link; refusing to write through it")
    if out.exists() and not out.is_dir():
        raise RunDirError(f"--out {out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        what = (
            "already holds an imported run"
            if any((out / n).exists() for n in (*RUN_FILES, *names))
            else "is not empty"
        )
        named = Path(os.path.abspath(out)) if out.name in ("", ".", "..") else out
        raise RunDirError(
            f"--out {out} {what}: write into a new directory, `{rerun(f'{named}-2')}`, "
            f"or remove {out} and run this command again"
        )
    notes = []
    left = unfinished_dir(out)
    if left.is_symlink() or left.exists():
        allowed = set(names) | {MANIFEST_FILE, UNFINISHED_FILE}
        entries = list(left.iterdir()) if left.is_dir() and not left.is_symlink() else None
        if entries is None or any(
            p.is_symlink()
            or not p.is_file()
            or (p.name not in allowed and not _TEMP.fullmatch(p.name))
            for p in entries
        ):
            raise RunDirError(
                f"{left} is in the way (it is not what a stopped `{rerun(str(out))}` leaves): "
                "remove it and run this command again"
            )
        shutil.rmtree(left)
        notes.append(f"removed {left}, left by an earlier attempt stopped before it finished")
    return notes


def write_whole_run(
    out: Path, files: Mapping[str, bytes], *, head: dict[str, Any], units: int, command: str
) -> None:
    """Write a whole run directory: its files and manifest in a sibling, then renamed to ``out``.

    ``unfinished.json`` goes first, naming the command (what a reader that finds the
    sibling tells the user to run again), and is removed before the rename; the files
    follow in order, the manifest, one chunk of the chunk files
    (``manifest.whole_manifest``), before ``summary.json``.  A kill leaves only the
    sibling (``unfinished_dir``), which ``claim_whole_run`` removes next time.

    Args:
        out: The run directory (``claim_whole_run`` made it ready).
        files: File name -> content.
        head: What the manifest's header says of the run (an import: ``{"import": ...}``).
        units: The runs (episodes) the chunk files hold.
        command: The command that writes it (to run again if it is stopped).
    """
    target = Path(os.path.abspath(out))
    build = unfinished_dir(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    build.mkdir()
    try:
        marker = (json.dumps({"command": command}) + "\n").encode()
        write_bytes(build / UNFINISHED_FILE, marker, inside=build)
        manifest = whole_manifest(
            head, units, {n: data for n, data in files.items() if n in CHUNK_FILES}
        )
        for name, data in files.items():
            if name == SUMMARY_FILE:
                write_bytes(build / MANIFEST_FILE, manifest, inside=build)
            write_bytes(build / name, data, inside=build)
        if SUMMARY_FILE not in files:
            write_bytes(build / MANIFEST_FILE, manifest, inside=build)
        (build / UNFINISHED_FILE).unlink()
        if target.is_dir() and not target.is_symlink():
            target.rmdir()  # an empty directory the user made: the run takes its place
        os.rename(build, target)
        fsync_dir(target.parent)
    except Exception:
        shutil.rmtree(build, ignore_errors=True)
        raise


def _blocks(text: Bytes | Iterable[Bytes]) -> Iterable[Bytes]:
    """A chunk's text as blocks of bytes (one block, or the blocks it is)."""
    return [text] if isinstance(text, bytes | bytearray | memoryview) else text
