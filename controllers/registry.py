"""The controller registry: ``make(name, **params)``, built-ins and entry points."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from opar_sim.core.controller import Controller

ENTRY_POINT_GROUP = "opar_sim.controllers"

ControllerFactory = Callable[..., Controller]

_REGISTRY: dict[str, ControllerFactory] = {}
_loaded_plugins = False


def register(name: str, factory: ControllerFactory) -> None:
    """Register a controller factory under ``name`` (re-registering replaces it)."""
    _REGISTRY[name] = factory


def _load_plugins() -> None:
    """Find controllers that other installed packages declare as entry points."""
    global _loaded_plugins
    if _loaded_plugins:
        return
    _loaded_plugins = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _REGISTRY:
            _REGISTRY[ep.name] = ep.load()


def names() -> list[str]:
    """The registered controller names, sorted."""
    _load_plugins()
    return sorted(_REGISTRY)


def describe(name: str) -> str:
    """The first line of a controller's docstring."""
    doc = inspect.getdoc(_REGISTRY[name]) or ""
    return doc.splitlines()[0] if doc else ""


def make(name: str, **params: Any) -> Controller:
    """Build a registered controller; unknown names and bad parameters raise ValueError."""
    _load_plugins()
    factory = _REGISTRY.get(name)
    if factory is None:
        raise ValueError(f"unknown controller {name!r} (known: {', '.join(names())})")
    try:
        inspect.signature(factory).bind(**params)
    except TypeError as exc:
        raise ValueError(f"controller {name!r}: {exc}") from None
    try:
        return factory(**params)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"controller {name!r}: {exc}") from None
