"""Stackable task wrappers: partial observability and faults, configured from specs.

``wrap(task, [{"name": "delay", "steps": 2}, ...])`` applies wrappers in list
order (the first is innermost).  Every wrapper satisfies the Task protocol and
passes ``check_task`` around every registered task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from environments.wrappers.base import TaskWrapper, timed_call
from environments.wrappers.faults import HeavyTailLatency, ToolFailures, WorldDisturbance
from environments.wrappers.observation import DelayedObservation, DroppedResults, ObservationNoise
from environments.wrappers.parallel import ParallelCalls
from opar_sim.core.task import Task

WRAPPERS: dict[str, type[TaskWrapper]] = {
    w.wrapper_name: w
    for w in (
        ObservationNoise,
        DelayedObservation,
        DroppedResults,
        WorldDisturbance,
        ToolFailures,
        HeavyTailLatency,
        ParallelCalls,
    )
}


def wrapper_names() -> list[str]:
    """The registered wrapper names, sorted."""
    return sorted(WRAPPERS)


def wrap(task: Task, specs: Sequence[Mapping[str, Any]]) -> Task:
    """Apply each ``{"name": ..., **params}`` in order; raise ValueError naming a bad key."""
    for index, spec in enumerate(specs):
        params = dict(spec)
        name = params.pop("name", None)
        cls = WRAPPERS.get(str(name))
        if cls is None:
            known = ", ".join(wrapper_names())
            raise ValueError(f"wrappers[{index}].name: unknown wrapper {name!r} (known: {known})")
        try:
            task = cls(task, **params)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
            raise ValueError(f"wrappers[{index}].{where}: {msg}") from None
    return task


__all__ = [
    "WRAPPERS",
    "DelayedObservation",
    "DroppedResults",
    "HeavyTailLatency",
    "ObservationNoise",
    "ParallelCalls",
    "TaskWrapper",
    "ToolFailures",
    "WorldDisturbance",
    "timed_call",
    "wrap",
    "wrapper_names",
]
