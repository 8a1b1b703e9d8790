"""Steps grouped per episode: each agent's trajectory as arrays, streamed.

``steps.jsonl`` can be large, so it is streamed: an episode's steps are
written together (sub-agents' after the parent's), and ``iter_traces``
groups them in one pass, yielding each episode's trajectory as a few compact
arrays before reading the next.  Only one episode's rows are held as dicts at
a time.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from opar_sim.core.types import EpisodeResult
from opar_sim.rundir.columnar import has_parquet, step_arrays
from opar_sim.rundir.files import STEPS_PARQUET, RunDirError
from opar_sim.rundir.frames import to_frame
from opar_sim.rundir.readers import iter_steps
from opar_sim.rundir.rows import EpisodeKey, episode_key

FloatArray = npt.NDArray[np.float64]


@dataclass(slots=True)
class EpisodeTrace:
    """One agent's trajectory in one episode, as arrays over its steps."""

    controller: str
    episode: int
    agent: str
    step: npt.NDArray[np.int64]
    time: FloatArray  # simulated seconds at the end of each step
    progress: FloatArray  # true hidden progress
    estimate: FloatArray  # the agent's δ_task (NaN where it made no evaluation)
    signals: list[str | None]
    actions: list[str | None]
    terms: dict[str, FloatArray] = field(default_factory=dict)
    attempt: int = 1  # Reflexion attempt at this episode seed
    trial: int = 1  # repeated trial of the episode's world (spec ``trials``)

    def __len__(self) -> int:
        return len(self.step)

    def to_frame(self) -> Any:
        """One row per step (needs pandas)."""
        rows = []
        for k in range(len(self)):
            row: dict[str, Any] = {
                "step": int(self.step[k]),
                "time": float(self.time[k]),
                "progress": float(self.progress[k]),
                "delta_task": float(self.estimate[k]),
                "signal": self.signals[k],
                "action": self.actions[k],
            }
            row.update({name: float(v[k]) for name, v in self.terms.items()})
            rows.append(row)
        return to_frame(rows)


def _trace(rows: list[dict[str, Any]]) -> EpisodeTrace:
    first = rows[0]
    if "time" not in first or "progress" not in first:  # a recorded trace has neither
        raise RunDirError(
            f"steps.jsonl: episode {first['episode']} has no simulated time or hidden progress "
            "(an imported record): this needs a run opar-sim simulated"
        )
    names = sorted({name for r in rows for name in (r.get("terms") or {})})
    terms = {
        name: np.array([(r.get("terms") or {}).get(name, math.nan) for r in rows], float)
        for name in names
    }
    return EpisodeTrace(
        controller=str(first.get("controller", "")),
        episode=int(first["episode"]),
        agent=str(first.get("agent", "")),
        step=np.array([int(r["step"]) for r in rows], dtype=np.int64),
        time=np.array([float(r["time"]) for r in rows], float),
        progress=np.array([float(r["progress"]) for r in rows], float),
        estimate=np.array(
            [math.nan if r.get("delta_task") is None else float(r["delta_task"]) for r in rows],
            float,
        ),
        signals=[r.get("signal") for r in rows],
        actions=[r.get("action") for r in rows],
        terms=terms,
        attempt=int(first.get("attempt") or 1),
        trial=int(first.get("trial") or 1),
    )


class UnusualTrace(ValueError):
    """An episode whose trajectory the files would not give back as it is in memory."""


def result_trace(result: EpisodeResult, *, labels: bool = True) -> EpisodeTrace | None:
    """The trace ``iter_traces`` reads back for ``result``'s own steps, built from memory.

    The same arrays as its rows parsed from steps.jsonl (JSON keeps a float exactly),
    so ``run`` can draw its figure without reading the file again.

    Args:
        result: A finished episode (its trial already set, as its rows carry it).
        labels: Fill ``signals`` and ``actions`` too; without, they are empty, as
            ``terms`` always is (the progress figure draws none of them, and the
            action labels are most of the cost).

    Returns:
        The trajectory, or None for an episode without steps (it has no rows).

    Raises:
        UnusualTrace: a time or progress that is not a finite number (JSON writes it
            as null), or a parent without steps whose sub-agents have some (the file
            would give the sub-agent's block as the episode's own); read the file.
    """
    steps = result.steps
    if not steps:
        if any(sub.steps for sub in result.sub_episodes):
            raise UnusualTrace("a sub-agent's block would stand for the episode")
        return None
    nan = math.nan
    time = [rec.time for rec in steps]
    progress = [rec.progress for rec in steps]
    # a NaN or an infinity makes the sum non-finite (a huge finite sum only costs a re-read)
    if not math.isfinite(sum(time) + sum(progress)):
        raise UnusualTrace("a time or progress that JSON writes as null")
    estimate = [
        nan
        if rec.evaluation is None or rec.evaluation.delta_task is None
        else rec.evaluation.delta_task
        for rec in steps
    ]
    signals: list[str | None] = []
    actions: list[str | None] = []
    if labels:
        signals = [None if rec.decision is None else rec.decision.signal.value for rec in steps]
        actions = [None if rec.action is None else rec.action.label() for rec in steps]
    return EpisodeTrace(
        controller=result.controller,
        episode=result.episode,
        agent=result.agent,
        step=np.array([rec.step for rec in steps], dtype=np.int64),
        time=np.array(time, float),
        progress=np.array(progress, float),
        estimate=np.array(estimate, float),
        signals=signals,
        actions=actions,
        attempt=result.attempt or 1,
        trial=result.trial or 1,
    )


def iter_traces(path: Path, *, sub_agents: bool = False) -> Iterator[EpisodeTrace]:
    """Each episode's trajectory, streamed from steps.jsonl in one pass.

    The first agent block of an episode is the episode's own agent; the
    blocks that follow it (sub-agents of a nested run) are skipped unless
    ``sub_agents``.  A batch run's steps (``steps.parquet``) are read as columns.
    """
    if has_parquet(path, STEPS_PARQUET):
        yield from _parquet_traces(path)
        return
    block: list[dict[str, Any]] = []
    key: tuple[EpisodeKey, str] | None = None
    last_episode: EpisodeKey | None = None
    for row in iter_steps(path):
        row_key = (episode_key(row), str(row.get("agent", "")))
        if row_key != key and block:
            if sub_agents or key is None or key[0] != last_episode:
                yield _trace(block)
            last_episode = key[0] if key is not None else None
            block = []
        key = row_key
        block.append(row)
    if block and (sub_agents or key is None or key[0] != last_episode):
        yield _trace(block)


def _parquet_traces(path: Path) -> Iterator[EpisodeTrace]:
    """Each episode's trajectory from a batch run's ``steps.parquet`` (no terms recorded)."""
    yield from array_traces(step_arrays(path))


def array_traces(cols: dict[str, Any]) -> Iterator[EpisodeTrace]:
    """Each block of ``columnar.table_step_arrays`` as the trajectory ``iter_traces`` yields."""
    signals, actions, offsets = cols["signals"], cols["actions"], cols["offsets"].tolist()
    for block, (start, stop) in enumerate(itertools.pairwise(offsets)):
        yield EpisodeTrace(
            controller=cols["controllers"][int(cols["controller"][block])],
            episode=int(cols["episode"][block]),
            agent=cols["agent"][block],
            step=cols["step"][start:stop].copy(),
            time=cols["time"][start:stop].copy(),
            progress=cols["progress"][start:stop].copy(),
            estimate=cols["estimate"][start:stop].copy(),
            signals=[signals[c] for c in cols["signal"][start:stop].tolist()],
            actions=[actions[c] for c in cols["action"][start:stop].tolist()],
        )


def find_trace(path: Path, controller: str, episode: int) -> EpisodeTrace | None:
    """The trajectory of one episode of one controller, or None."""
    for trace in iter_traces(path):
        if trace.controller == controller and trace.episode == episode:
            return trace
    return None
