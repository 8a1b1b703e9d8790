"""Stackable task wrappers: partial observability and faults, configured from specs.

``wrap(task, [{"name": "delay", "steps": 2}, ...])`` applies wrappers in list
order (the first is innermost).  Every wrapper satisfies the Task protocol and
passes ``check_task`` around every registered task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from environments.wrappers.base import TaskWrapper, timed_call
from environments.wrappers.faults import HeavyTailLatency, ToolFailures, WorldDisturbance
from environments.wrappers.observation import DelayedObservation, DroppedResults, ObservationNoise
from environments.wrappers.parallel import ParallelCalls
from opar_sim.core.registry import ParameterError, Registry
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


def _registry() -> Registry[TaskWrapper]:
    registry: Registry[TaskWrapper] = Registry("wrapper")
    for name, cls in WRAPPERS.items():
        registry.register(name, cls)
    return registry


WRAPPER_REGISTRY = _registry()  # what ``wrap`` builds from (WRAPPERS is its built-ins)


def wrapper_names() -> list[str]:
    """The registered wrapper names, sorted."""
    return WRAPPER_REGISTRY.names()


def wrap(task: Task, specs: Sequence[Mapping[str, Any]]) -> Task:
    """Apply each ``{"name": ..., **params}`` in order; raise ValueError naming a bad key."""
    for index, spec in enumerate(specs):
        params = dict(spec)
        name = params.pop("name", None)
        if str(name) not in WRAPPER_REGISTRY:
            known = ", ".join(wrapper_names())
            raise ValueError(f"wrappers[{index}].name: unknown wrapper {name!r} (known: {known})")
        try:
            task = WRAPPER_REGISTRY.make(str(name), task=task, **params)
        except ParameterError as exc:
            msg = "unknown key" if exc.error_type == "extra_forbidden" else exc.problem
            raise ValueError(f"wrappers[{index}].{exc.loc}: {msg}") from None
    return task


__all__ = [
    "WRAPPERS",
    "WRAPPER_REGISTRY",
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
