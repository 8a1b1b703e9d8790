"""The one writer of a run's chunk lines: whole lines, fsynced, each chunk in the manifest."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from opar_sim.rundir.files import CALLS_FILE, _named, open_append
from opar_sim.rundir.manifest import CHUNK_FILES, MANIFEST_FILE, Repair, chunk_line, sha256
from opar_sim.spec.schema import ExperimentSpec


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
