"""The controller registry: ``make(name, **params)``, built-ins and entry points.

A thin layer over ``opar_sim.core.registry.Registry``: ``CONTROLLERS`` holds
the factories; other installed packages add controllers through the
``opar_sim.controllers`` entry-point group, read once on the first lookup.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterable
from importlib.metadata import entry_points
from typing import Any

from opar_sim.core.controller import Controller
from opar_sim.core.registry import EntryPointLike, Registry

ENTRY_POINT_GROUP = "opar_sim.controllers"

ControllerFactory = Callable[..., Controller]


def _entry_points(*, group: str) -> Iterable[EntryPointLike]:
    # Looks ``entry_points`` up in this module on every call, so it can be replaced here.
    found: Iterable[EntryPointLike] = entry_points(group=group)
    return found


CONTROLLERS: Registry[Controller] = Registry(
    "controller", entry_point_group=ENTRY_POINT_GROUP, entry_points=_entry_points
)


def register(name: str, factory: ControllerFactory) -> None:
    """Register a controller factory under ``name`` (re-registering replaces it)."""
    CONTROLLERS.register(name, factory)


def names() -> list[str]:
    """The registered controller names, sorted."""
    return CONTROLLERS.names()


def describe(name: str) -> str:
    """The first line of a controller's docstring."""
    return CONTROLLERS.describe(name)


def make(name: str, **params: Any) -> Controller:
    """Build a registered controller; unknown names and bad parameters raise ValueError."""
    return CONTROLLERS.make(name, **params)


class _RegistryModule(types.ModuleType):
    """This module, with its former globals ``_REGISTRY`` and ``_loaded_plugins`` kept.

    They are live views of ``CONTROLLERS.factories`` and
    ``CONTROLLERS.plugins_loaded``: reading, mutating or replacing them (as
    tests do) reads, mutates or replaces the registry's state.
    """

    @property
    def _REGISTRY(self) -> dict[str, ControllerFactory]:
        return CONTROLLERS.factories

    @_REGISTRY.setter
    def _REGISTRY(self, table: dict[str, ControllerFactory]) -> None:
        CONTROLLERS.factories = table

    @property
    def _loaded_plugins(self) -> bool:
        return CONTROLLERS.plugins_loaded

    @_loaded_plugins.setter
    def _loaded_plugins(self, loaded: bool) -> None:
        CONTROLLERS.plugins_loaded = loaded


sys.modules[__name__].__class__ = _RegistryModule
