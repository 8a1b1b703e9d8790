"""Build an experiment's parts from its spec: once per spec and process, with clear errors.

``build`` makes each component once (so a bad gain or an unknown task is
reported before anything is written) and returns factories for one
episode's parts.  Builds are cached per process by the spec's JSON, so the
parent of a run builds each spec once and each worker once more; ``BUILDS``
counts the builds this process made.  ``parse_spec`` and ``load_spec`` are
the whole pipeline: schema, then components.
"""

from __future__ import annotations

import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import controllers
import environments
from opar_sim.agents.orchestrator import bind_sub_agents
from opar_sim.agents.registry import AGENTS
from opar_sim.core.agent import Agent
from opar_sim.core.controller import Controller
from opar_sim.core.guardrail import Guardrail
from opar_sim.core.limits import Limits
from opar_sim.core.registry import ParameterError
from opar_sim.core.supervisor import Supervisor
from opar_sim.core.task import Task
from opar_sim.experiment.spec import (
    AgentSpec,
    ControllerSpec,
    ExperimentSpec,
    SpecError,
    validate_spec,
)

BUILDS: Counter[str] = Counter()  # spec name -> builds made in this process
_CACHE: dict[str, Components] = {}
_CACHE_SIZE = 512


def parse_spec(data: dict[str, Any], source: str = "spec") -> ExperimentSpec:
    """Validate a spec from a mapping and build its parts; SpecError names the offending key.

    Args:
        data: The spec as a mapping.
        source: Where it came from, for the error message.

    Returns:
        The validated spec, whose components are known to build.

    Raises:
        SpecError: naming the offending key.
    """
    spec = validate_spec(data, source)
    build(spec, source)
    return spec


def load_spec(path: str | Path) -> ExperimentSpec:
    """Read and validate a TOML spec file.

    Args:
        path: The spec file.

    Returns:
        The validated spec, whose components are known to build.

    Raises:
        SpecError: when the file is missing, is not TOML, or fails the schema or a
            component's own checks.
    """
    p = Path(path)
    if p.is_dir():
        specs = sorted(q.name for q in p.glob("*.toml"))
        hint = f" (it holds {', '.join(specs[:3])}{', ...' if len(specs) > 3 else ''})"
        raise SpecError(
            f"{p} is a directory, not a spec file: give a TOML spec"
            + (hint if specs else ", e.g. experiments/flight_booking.toml")
        )
    if not p.is_file():
        raise SpecError(f"spec not found: {p} (no such file)")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{p}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise SpecError(f"{p}: not a text file") from None
    return parse_spec(data, str(p))


@dataclass(frozen=True)
class Components:
    """Factories for one episode's parts, validated once."""

    make_task: Callable[[], Task]
    make_agent: Callable[[], Agent]
    controllers: list[tuple[str, Callable[[], Controller]]]
    limits: Limits
    make_supervisor: Callable[[], Supervisor | None] = lambda: None
    guardrail: Guardrail | None = None


def build(spec: ExperimentSpec, source: str = "spec") -> Components:
    """The parts of ``spec``, made once per process (so errors surface now).

    Args:
        spec: A validated spec.
        source: Where it came from, for the error message.

    Returns:
        Factories for one episode's task, agent, controllers and supervisor.

    Raises:
        SpecError: when a component rejects its parameters.
    """
    key = spec.model_dump_json()
    cached = _CACHE.get(key)
    if cached is None:
        cached = _build(spec, source)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[key] = cached
        BUILDS[spec.name] += 1
    return cached


def _build(spec: ExperimentSpec, source: str) -> Components:
    t, a = spec.task, spec.agent
    try:
        environments.wrap(environments.make(t.name, **t.params), t.wrappers)
    except ValueError as exc:
        raise SpecError(f"{source}: task: {exc}") from None
    make_agent = _agent_factory(a, source)
    made: list[tuple[str, Callable[[], Controller]]] = []
    for c in spec.controller_list():
        try:
            controllers.make(c.name, **c.params)
        except ValueError as exc:
            raise SpecError(f"{source}: controller: {exc}") from None
        if any(name == c.name for name, _ in made):
            raise SpecError(f"{source}: compare: controller {c.name!r} listed twice")
        made.append((c.name, _controller_factory(c)))
    limits = Limits(**spec.limits.model_dump())
    g = spec.guardrail
    return Components(
        make_task=lambda: bind_sub_agents(
            environments.wrap(environments.make(t.name, **t.params), t.wrappers)
        ),
        make_agent=make_agent,
        controllers=made,
        limits=limits,
        make_supervisor=spec.guards.supervisor,
        guardrail=Guardrail(g.min_confidence, g.constraints) if g is not None else None,
    )


def _agent_factory(a: AgentSpec, source: str) -> Callable[[], Agent]:
    try:
        return AGENTS.make(a.kind, params=a.params, backend=a.backend, evaluator=a.evaluator)
    except ParameterError as exc:
        problem = "unknown key" if exc.error_type == "extra_forbidden" else exc.problem
        raise SpecError(f"{source}: agent.params.{exc.loc}: {problem}") from None


def _controller_factory(c: ControllerSpec) -> Callable[[], Controller]:
    return lambda: controllers.make(c.name, **c.params)
