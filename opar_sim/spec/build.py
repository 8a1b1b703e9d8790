"""Build an experiment's parts from its spec: once per spec and process, with clear errors.

``build`` makes each component once (so a bad gain or an unknown task is
reported before anything is written) and returns factories for one
episode's parts.  Builds are cached per process by the spec's JSON, so the
parent of a run builds each spec once and each worker once more; ``BUILDS``
counts the builds this process made.  ``parse_spec`` and ``load_spec`` are
the whole pipeline: schema, then components.
"""

from __future__ import annotations

import math
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
from opar_sim.core.controller import Cautious, Controller, ModelInfo, ModelReader
from opar_sim.core.guardrail import Guardrail
from opar_sim.core.limits import Limits
from opar_sim.core.registry import ParameterError
from opar_sim.core.supervisor import Supervisor
from opar_sim.core.task import Task
from opar_sim.spec.plugins import is_file_ref, load_controller, load_task
from opar_sim.spec.schema import (
    AgentSpec,
    ControllerSpec,
    ExperimentSpec,
    Objective,
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
    except RecursionError:
        raise SpecError(f"{p}: tables nested too deeply") from None
    except OSError as exc:
        raise SpecError(f"{p}: cannot read: {exc.strerror}") from None
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
    cautions: tuple[str, ...] = ()  # "law: why its numbers may not hold here", one per line


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
    _refuse_nan(spec, source)
    if is_file_ref(t.name):  # a user's task from a file: loaded and registered here
        try:
            load_task(t.name)
        except SpecError as exc:
            raise SpecError(f"{source}: {exc}") from None
    try:
        environments.make(t.name, **t.params)
    except ParameterError as exc:
        raise SpecError(f"{source}: task.params.{exc.loc}: {exc.problem}{exc.hint}") from None
    except ValueError as exc:
        raise SpecError(f"{source}: task: {exc}") from None
    try:
        environments.wrap(environments.make(t.name, **t.params), t.wrappers)
    except ValueError as exc:
        raise SpecError(f"{source}: task: {exc}") from None
    make_agent = _agent_factory(a, source)
    model = _LazyModel(spec)
    made: list[tuple[str, Callable[[], Controller]]] = []
    cautions: list[str] = []
    for i, c in enumerate(spec.controller_list()):
        if is_file_ref(c.name):  # a user's law from a file: loaded and registered here
            try:
                load_controller(c.name)
            except SpecError as exc:
                raise SpecError(f"{source}: {exc}") from None
        try:
            law = controllers.make(c.name, **c.params)
            if isinstance(law, ModelReader):  # a model-based law says here what it cannot model
                law.bind_model(model())
            if isinstance(law, Cautious):  # a fitted law says where it runs outside its fit
                cautions += [f"{c.name}: {line}" for line in law.cautions(model())]
        except ParameterError as exc:
            table = f"compare.{i}" if spec.compare else "controller"
            raise SpecError(
                f"{source}: {table}.params.{exc.loc}: {exc.problem}{exc.hint}"
            ) from None
        except ValueError as exc:
            raise SpecError(f"{source}: controller: {exc}") from None
        if any(name == c.name for name, _ in made):
            raise SpecError(f"{source}: compare: controller {c.name!r} listed twice")
        made.append((c.name, _controller_factory(c, model)))
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
        cautions=tuple(cautions),
    )


def _agent_factory(a: AgentSpec, source: str) -> Callable[[], Agent]:
    try:
        return AGENTS.make(a.kind, params=a.params, backend=a.backend, evaluator=a.evaluator)
    except ParameterError as exc:
        problem = "unknown key" if exc.error_type == "extra_forbidden" else exc.problem
        raise SpecError(f"{source}: agent.params.{exc.loc}: {problem}{exc.hint}") from None


def _refuse_nan(spec: ExperimentSpec, source: str) -> None:
    """NaN is no parameter value: name the first key holding one."""

    def walk(node: Any, path: str) -> None:
        if isinstance(node, float) and math.isnan(node):
            raise SpecError(f"{source}: {path}: must be a number, got nan")
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{path}.{key}" if path else str(key))
        elif isinstance(node, list):
            for k, value in enumerate(node):
                walk(value, f"{path}.{k}")

    walk(spec.model_dump(include={"task", "agent", "controller", "compare"}), "")


class _LazyModel:
    """The spec's ``ModelInfo``, made on first use (only a ``ModelReader`` needs it)."""

    def __init__(self, spec: ExperimentSpec) -> None:
        self.spec = spec
        self._info: ModelInfo | None = None

    def __call__(self) -> ModelInfo:
        if self._info is None:
            self._info = model_info(self.spec)
        return self._info


def _controller_factory(c: ControllerSpec, model: _LazyModel) -> Callable[[], Controller]:
    def make() -> Controller:
        made = controllers.make(c.name, **c.params)
        if isinstance(made, ModelReader):  # a law that plans with the spec's generative model
            made.bind_model(model())
        return made

    return make


def model_info(spec: ExperimentSpec) -> ModelInfo:
    """The spec's generative model as a ``ModelInfo``: parameters only, defaults filled in.

    Args:
        spec: A validated spec whose components build.

    Returns:
        The limits, the agent's and task's full parameters and the tuner's objective
        (the ``[tune.objective]`` weights, or failure alone without a ``[tune]`` table).
    """
    t = spec.task
    task = environments.make(t.name, **t.params)
    agent = _agent_factory(spec.agent, "spec")()
    agent_params: Any = getattr(agent, "params", None)
    task_params: Any = getattr(task, "params", None)
    objective = spec.tune.objective if spec.tune is not None else Objective()
    return ModelInfo(
        task=t.name,
        agent_kind=spec.agent.kind,
        max_steps=spec.limits.max_steps,
        token_budget=spec.limits.token_budget,
        time_budget=spec.limits.time_budget,
        agent=agent_params.model_dump() if hasattr(agent_params, "model_dump") else {},
        task_params=task_params.model_dump() if hasattr(task_params, "model_dump") else {},
        objective=objective.model_dump(),
    )
