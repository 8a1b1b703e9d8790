"""The task registry: ``make(name, **params)`` and what is registered.

A thin layer over ``opar_sim.core.registry.Registry``; ``TASKS`` holds the
factories.  A parameter a task's pydantic model rejects is reported as
``task 'x' parameter <loc>: <msg>``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opar_sim.core.registry import Registry
from opar_sim.core.task import Task

TaskFactory = Callable[..., Task]

TASKS: Registry[Task] = Registry("task")


def register(name: str, factory: TaskFactory) -> None:
    """Register a task factory under ``name`` (re-registering replaces it)."""
    TASKS.register(name, factory)


def names() -> list[str]:
    """The registered task names, sorted."""
    return TASKS.names()


def describe(name: str) -> str:
    """The first line of a task's docstring."""
    return TASKS.describe(name)


def make(name: str, **params: Any) -> Task:
    """Build a registered task; unknown names and bad parameters raise ValueError."""
    return TASKS.make(name, **params)
