"""The task registry: ``make(name, **params)`` and what is registered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from opar_sim.core.task import Task

TaskFactory = Callable[..., Task]

_REGISTRY: dict[str, TaskFactory] = {}


def register(name: str, factory: TaskFactory) -> None:
    """Register a task factory under ``name`` (re-registering replaces it)."""
    _REGISTRY[name] = factory


def names() -> list[str]:
    """The registered task names, sorted."""
    return sorted(_REGISTRY)


def describe(name: str) -> str:
    """The first line of a task's docstring."""
    doc = getattr(_REGISTRY[name], "__doc__", None) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def make(name: str, **params: Any) -> Task:
    """Build a registered task; unknown names and bad parameters raise ValueError."""
    factory = _REGISTRY.get(name)
    if factory is None:
        known = ", ".join(names())
        raise ValueError(f"unknown task {name!r} (known: {known})")
    try:
        return factory(**params)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"task {name!r} parameter {where}: {first['msg']}") from None
