"""The one catalogue of every pluggable kind, for the command line.

``catalogue()`` lists ``(name, description)`` pairs for each kind a spec or a
command can name: controllers, tasks, task wrappers, agents, LLM backends,
guards and studies, each read from its ``Registry``.  The modules behind
them are imported when the catalogue is built, not when this module is.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from opar_sim.core.registry import Registry

Entry = tuple[str, str]

KINDS = ("controllers", "tasks", "wrappers", "agents", "backends", "guards", "studies")


def _first_line(obj: Any) -> str:
    """The first line of ``obj``'s docstring, or ``""``."""
    doc = inspect.getdoc(obj) or ""
    return doc.splitlines()[0] if doc else ""


def _entries(named: Mapping[str, Callable[..., Any]]) -> list[Entry]:
    return [(name, _first_line(named[name])) for name in sorted(named)]


def catalogue() -> dict[str, list[Entry]]:
    """Every pluggable kind with its names and one-line descriptions.

    Returns:
        ``{kind: [(name, description), ...]}`` for the kinds in ``KINDS``
        (in that order), each list sorted by name.
    """
    import controllers
    import environments
    from environments.wrappers import WRAPPER_REGISTRY
    from opar_sim.agents.registry import AGENTS
    from opar_sim.core.guards import GUARDS
    from opar_sim.llm.config import BACKENDS
    from opar_sim.studies.memory import STUDIES

    registries: dict[str, Registry[Any]] = {
        "agents": AGENTS,
        "backends": BACKENDS,
        "guards": GUARDS,
        "studies": STUDIES,
    }
    return {
        "controllers": [(n, controllers.describe(n)) for n in controllers.names()],
        "tasks": [(n, environments.describe(n)) for n in environments.names()],
        "wrappers": [(n, WRAPPER_REGISTRY.describe(n)) for n in WRAPPER_REGISTRY.names()],
        **{kind: [(n, r.describe(n)) for n in r.names()] for kind, r in registries.items()},
    }


def plugin_failures() -> list[tuple[str, str, str]]:
    """The plugins that failed to load (and were skipped), after ``catalogue`` read them.

    Returns:
        ``(kind, plugin name, reason)`` for each, sorted.
    """
    from controllers.registry import CONTROLLERS
    from environments.registry import TASKS
    from environments.wrappers import WRAPPER_REGISTRY
    from opar_sim.agents.registry import AGENTS
    from opar_sim.core.guards import GUARDS
    from opar_sim.llm.config import BACKENDS
    from opar_sim.studies.memory import STUDIES

    found: list[tuple[str, str, str]] = []
    for registry in (CONTROLLERS, TASKS, WRAPPER_REGISTRY, AGENTS, BACKENDS, GUARDS, STUDIES):
        registry.names()  # reads the entry-point group once
        found += [(registry.kind, n, why) for n, why in registry.plugin_errors.items()]
    return sorted(found)


__all__ = ["KINDS", "Entry", "catalogue", "plugin_failures"]
