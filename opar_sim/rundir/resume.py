"""Resuming a run: check that a directory holds this spec's run, repair it, say what is kept.

With a manifest every chunk is checked against its checksums and sizes
(``manifest.repair``); a run written before manifests is resumed by its
episode keys, and its half-written tail cut (``resume_point``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from opar_sim.rundir.files import (
    EPISODES_FILE,
    SPEC_FILE,
    STEPS_FILE,
    RunDirError,
    open_input,
    read_input,
    write_bytes,
)
from opar_sim.rundir.manifest import (
    CHUNK_FILES,
    MANIFEST_FILE,
    Repair,
    chunk_line,
    cut_to,
    header_line,
    read_header,
    repair,
    sha256,
    spec_bytes,
)
from opar_sim.rundir.rows import episode_key
from opar_sim.spec.schema import ExperimentSpec, SpecError


def refuse_other_spec(spec: ExperimentSpec, out: Path) -> None:
    """Refuse ``--resume`` into a directory that holds another spec's run, before any output.

    A spec file that is missing or damaged is left to ``check_spec_file``, which repairs
    what the manifest vouches for.

    Raises:
        RunDirError: when ``spec.json`` is a valid spec other than ``spec``.
    """
    try:
        on_disk = ExperimentSpec.model_validate_json(read_input(out / SPEC_FILE), strict=True)
    except (RunDirError, ValidationError):
        return
    if on_disk != spec:
        raise RunDirError(f"--resume: the spec differs from the one that started {out}")


def check_spec_file(spec: ExperimentSpec, out: Path, notes: list[str]) -> None:
    """``spec.json`` must be ``spec``'s; a damaged one is rewritten when the manifest vouches.

    Raises:
        RunDirError: when spec.json is another spec's, or damaged with nothing to check it by.
    """
    file = out / SPEC_FILE
    wanted = spec_bytes(spec)
    found = read_input(file) if file.exists() or file.is_symlink() else None
    if found == wanted:
        return
    problem = "missing"
    if found is not None:
        try:  # strict: a string for a number is damage, not another version's formatting
            on_disk = ExperimentSpec.model_validate_json(found, strict=True)
        except ValidationError as exc:
            on_disk, problem = None, f"damaged ({spec_problem(exc)})"
        if on_disk is not None:
            if on_disk != spec:
                raise RunDirError(f"--resume: the spec differs from the one that started {out}")
            return  # the same spec, written by another version's formatting
    head = read_header(out)
    if head is None or head.get("spec_sha256") != sha256(wanted):
        raise RunDirError(
            f"--resume: {file} is {problem} and no manifest confirms the spec: cannot repair; "
            "start the run again in another directory"
        )
    write_bytes(file, wanted)
    notes.append(
        f"spec.json was {problem}: rewritten from the spec (the manifest's checksum matches)"
    )


def spec_problem(exc: ValidationError) -> str:
    """The first thing wrong with a spec.json, in a few words: where and what."""
    error = exc.errors(include_url=False)[0]
    if error["type"] == "json_invalid":
        return f"not valid JSON: {error['msg'].removeprefix('Invalid JSON: ')}"
    where = ".".join(str(part) for part in error["loc"]) or "the file"
    return f"{where}: {error['msg']}"


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
    for name in (SPEC_FILE, MANIFEST_FILE, *CHUNK_FILES):  # a FIFO or a device is refused
        if (out / name).exists() or (out / name).is_symlink():
            open_input(out / name).close()
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
    return read_input(path) if path.exists() else b""


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
        on_disk = ExperimentSpec.model_validate_json(read_input(spec_file))
    except ValidationError as exc:
        raise RunDirError(
            f"--resume: {spec_file} is not a valid spec ({spec_problem(exc)})"
        ) from None
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
