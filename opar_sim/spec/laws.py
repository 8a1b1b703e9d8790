"""A Reflect law as a spec configures it, read without building it.

The spec names each law and the parameters it changes; the law's declared
signature (its registered factory's) gives the rest.  ``law_settings`` joins
the two, and says whether the law reads the hidden state (its class is a
``TruthReader``), so that the figures and the report can draw a law's REPLAN
threshold and settle band, and set the oracle apart, without constructing a
controller.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import controllers  # noqa: F401  (registers the shipped laws)
from controllers.registry import CONTROLLERS
from opar_sim.core.controller import TruthReader
from opar_sim.spec.schema import ExperimentSpec

_OPEN = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)


@dataclass(frozen=True, slots=True)
class LawSettings:
    """One law of a spec: its parameters (the spec's over the declared defaults)."""

    name: str
    params: dict[str, Any]
    reads_truth: bool  # declared to read the hidden state (the oracle)

    def number(self, key: str) -> float | None:
        """Parameter ``key`` as a float, or None when the law has no such numeric parameter."""
        value = self.params.get(key)
        return float(value) if isinstance(value, int | float) else None


def configured_params(spec: ExperimentSpec | None, name: str) -> dict[str, Any]:
    """The parameters the spec gives controller ``name`` (empty: none, or no spec)."""
    if spec is not None:
        for c in spec.controller_list():
            if c.name == name:
                return dict(c.params)
    return {}


def law_settings(spec: ExperimentSpec | None, name: str) -> LawSettings | None:
    """Controller ``name`` as ``spec`` configures it, from its factory's signature.

    Args:
        spec: The run's spec (None: the law's defaults).
        name: A controller name.

    Returns:
        The settings; None when no registered law has that name (a law loaded
        from a file, a misspelling) or the spec gives it a keyword its factory
        does not take.
    """
    try:
        factory = CONTROLLERS.factory(name)
    except ValueError:
        return None
    params = configured_params(spec, name)
    try:
        declared = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):  # no signature to read: the spec's parameters alone
        declared = []
    named = {p.name: p for p in declared if p.kind not in _OPEN}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in declared)
    if declared and not takes_any and set(params) - set(named):
        return None
    defaults = {k: p.default for k, p in named.items() if p.default is not p.empty}
    reads_truth = isinstance(factory, type) and issubclass(factory, TruthReader)
    return LawSettings(name, defaults | params, reads_truth)
