"""A recorded run read back whole, for calibrate and replay (LLM runs are small).

``opar_sim.rundir`` streams large runs for the analysis commands; this module
holds a run's rows in memory (read through it), with its model calls, which calibration
needs together.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opar_sim.rundir import (
    CALLS_FILE,
    EPISODES_FILE,
    STEPS_FILE,
    STEPS_PARQUET,
    EpisodeKey,
    RunDirError,
    episode_key,
    iter_steps,
    read_input,
    rows,
)
from opar_sim.rundir.columnar import has_parquet
from opar_sim.spec.build import parse_spec
from opar_sim.spec.schema import ExperimentSpec, SpecError


@dataclass
class RecordedRun:
    """The rows of a run directory, as written by the runner."""

    path: Path
    spec: ExperimentSpec
    episodes: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    calls: list[dict[str, Any]] = field(default_factory=list)

    def episode_steps(self) -> dict[EpisodeKey, list[dict[str, Any]]]:
        """The top-level agent's steps grouped by episode (``episode_key``), in step order."""
        grouped: dict[EpisodeKey, list[dict[str, Any]]] = {}
        for row in self.steps:
            if row.get("parent") is None:  # a sub-agent's steps stay with their own agent
                grouped.setdefault(episode_key(row), []).append(row)
        for episode_rows in grouped.values():
            episode_rows.sort(key=lambda r: int(r["step"]))
        return grouped


def _rows(path: Path) -> list[dict[str, Any]]:
    if not (path.exists() or path.is_symlink()):  # a FIFO or a device: refused by ``rows``
        return []
    try:
        return list(rows(path))
    except RunDirError as exc:
        raise SpecError(str(exc)) from None


def load_run(path: str | Path, *, need_steps: bool = False) -> RecordedRun:
    """Read a run directory whole: its spec, episodes, steps and model calls.

    Args:
        path: The run directory (with spec.json and episodes.jsonl).
        need_steps: Refuse a run without steps (calibrate and replay read them).

    Returns:
        The recorded run; steps and calls are empty when their files are absent.

    Raises:
        SpecError: when ``path`` is not a run directory or has no finished episode
            (the CLI exits with 2).
    """
    p = Path(path)
    spec_file = p / "spec.json"
    if not (spec_file.exists() or spec_file.is_symlink()):
        raise SpecError(f"{p}: not a run directory (no spec.json)")
    try:
        data = json.loads(read_input(spec_file))
    except (ValueError, RecursionError):  # not JSON, not UTF-8, a number too long
        raise SpecError(f"{spec_file}: not valid JSON") from None
    if not isinstance(data, dict):
        raise SpecError(f"{spec_file}: not a JSON object")
    spec = parse_spec(data, str(spec_file))
    episodes = _rows(p / EPISODES_FILE)
    if not episodes:
        raise SpecError(f"{p}: no finished episodes in episodes.jsonl")
    if has_parquet(p, STEPS_PARQUET):  # a batch run's steps, as columns
        try:
            steps = list(iter_steps(p))
        except RunDirError as exc:
            raise SpecError(str(exc)) from None
    else:
        steps = _rows(p / STEPS_FILE)
    if need_steps and not steps:
        raise SpecError(f"{p}: no steps in steps.jsonl (missing or empty): nothing to read")
    return RecordedRun(p, spec, episodes, steps, _rows(p / CALLS_FILE))
