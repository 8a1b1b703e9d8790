"""The record a heterogeneous model is fitted to: repeated trials, task by task."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from opar_sim.rundir import iter_episodes
from opar_sim.spec.schema import SpecError

Key = float | tuple[float, float]
"""A table cell's task: its feature value, or (feature, length) when the table has a shape."""


@dataclass
class TaskRuns:
    """The recorded runs of one task: its feature, outcomes and tool calls (and its length)."""

    task: int
    feature: float
    success: np.ndarray
    tool_calls: np.ndarray
    length: float | None = None  # the record's shape feature (e.g. ground-truth actions)

    @property
    def key(self) -> Key:
        """The table cell this task is predicted from: its feature, and its length if any."""
        return self.feature if self.length is None else (self.feature, self.length)


@dataclass
class Record:
    """A record of repeated trials, task by task (see the package docstring)."""

    source: str
    controller: str
    feature: str
    tasks: list[TaskRuns]
    shape: str | None = None  # the feature the model's task length is matched to, if any

    @property
    def runs(self) -> int:
        """How many runs the record holds."""
        return sum(len(t.success) for t in self.tasks)

    def subset(self, ids: Sequence[int]) -> list[TaskRuns]:
        """The tasks at positions ``ids``."""
        return [self.tasks[i] for i in ids]


def load_record(
    path: str | Path, feature: str = "write_actions", shape: str | None = None
) -> Record:
    """Read a run directory's episodes as a record of repeated trials.

    Args:
        path: The run directory (its ``episodes.jsonl``).
        feature: The task feature the model's mean shift depends on (0 when a row has none).
        shape: A task feature the model's task length is matched to, task by task
            (e.g. ``actions``; 0 when a row has none), or None.

    Returns:
        The first controller's runs grouped by task, tasks in id order.

    Raises:
        SpecError: when the directory has no episodes (the CLI exits with 2).
    """
    p = Path(path)
    if not (p / "episodes.jsonl").is_file():
        raise SpecError(f"{p}: not a run directory (no episodes.jsonl)")
    rows = list(iter_episodes(p))  # a damaged line: RunDirError naming file, line and field
    if not rows:
        raise SpecError(f"{p}: no finished episodes in episodes.jsonl")
    controller = str(rows[0]["controller"])
    grouped: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        if row["controller"] == controller:
            grouped.setdefault(int(row["episode"]), []).append(row)
    tasks = []
    for task, runs in sorted(grouped.items()):
        features = runs[0].get("task_features") or {}
        tasks.append(
            TaskRuns(
                task,
                float(features.get(feature, 0.0)),
                np.array([bool(r["success"]) for r in runs]),
                np.array([int(r["tool_calls"]) for r in runs]),
                None if shape is None else float(features.get(shape, 0.0)),
            )
        )
    return Record(str(p), controller, feature, tasks, shape)
