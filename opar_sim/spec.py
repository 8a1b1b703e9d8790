"""Experiment specs: TOML files validated by pydantic, with errors that name the key.

A spec names a task, an agent, a controller and the hard limits, plus the
number of episodes and the seed.  ``load_spec`` reads and validates a file;
``build`` makes the components once, so a bad gain or an unknown task is
reported before anything is written.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

import controllers
import environments
from controllers.base import Controller
from environments.base import Task
from opar_sim.agents.base import Agent
from opar_sim.agents.simulated import SimulatedAgent, SimulatedAgentParams
from opar_sim.guardrails import Guardrail
from opar_sim.guards import GuardsSpec
from opar_sim.llm.config import BackendSpec
from opar_sim.loop import Limits
from opar_sim.supervisor import Supervisor
from opar_sim.sweep import SweepAxis, SweepPoint, grid
from opar_sim.tuning import TuneSpec


class SpecError(ValueError):
    """A spec is missing, malformed or names something that does not exist."""


class _Strict(BaseModel):
    # ±inf is a meaningful parameter (an open output limit, a rule switched off): keep it
    # through the JSON round trip to workers and spec.json instead of turning it into null
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class TaskSpec(_Strict):
    name: str = "flight_booking"
    params: dict[str, Any] = Field(default_factory=dict)
    # issue 6: `[[task.wrappers]]` tables, each `name = "delay"` plus the wrapper's keys;
    # applied in order, the first innermost (environments.wrappers)
    wrappers: list[dict[str, Any]] = Field(default_factory=list)


class AgentSpec(_Strict):
    kind: Literal["simulated", "llm"] = "simulated"
    params: dict[str, Any] = Field(default_factory=dict)
    # LLM agents (issue 7): `backend` plans and acts, `evaluator` (default: backend) reflects
    backend: BackendSpec | None = None
    evaluator: BackendSpec | None = None


class ControllerSpec(_Strict):
    name: str = "pid"
    params: dict[str, Any] = Field(default_factory=dict)


class LimitsSpec(_Strict):
    max_steps: int = Field(20, ge=1, description="T_max: iterations of the loop")
    time_budget: float = Field(600.0, gt=0, description="simulated seconds")
    token_budget: int = Field(200_000, ge=1, description="prompt + completion tokens")


class GuardrailSpec(_Strict):
    """Intercept high-risk calls made with low confidence or against a constraint."""

    min_confidence: float = Field(0.5, ge=0, le=1)
    constraints: bool = True


class ReflexionSpec(_Strict):
    """Long-term memory: rerun each episode seed, carrying critiques of failed attempts."""

    attempts: int = Field(1, ge=1, le=50, description="attempts per episode seed")
    keep: int = Field(3, ge=0, le=10, description="critiques remembered (Reflexion keeps 1-3)")


class ExperimentSpec(_Strict):
    """One experiment: what runs, how often, and under which limits."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    episodes: int = Field(100, ge=1, le=10_000_000)
    seed: int = Field(0, ge=0)
    task: TaskSpec = Field(default_factory=TaskSpec)
    agent: AgentSpec = Field(default_factory=AgentSpec)
    controller: ControllerSpec = Field(default_factory=ControllerSpec)
    compare: list[ControllerSpec] = Field(
        default_factory=list,
        description="controllers run on the same seeds; when empty only `controller` runs",
    )
    limits: LimitsSpec = Field(default_factory=LimitsSpec)
    guards: GuardsSpec = Field(default_factory=GuardsSpec, description="convergence guards")
    guardrail: GuardrailSpec | None = None  # issue 6: off unless the table is given
    reflexion: ReflexionSpec = Field(default_factory=ReflexionSpec)  # issue 6
    sweep: dict[str, SweepAxis] = Field(
        default_factory=dict, description="dotted spec path -> values, for `opar-sim sweep`"
    )
    tune: TuneSpec | None = Field(
        None, description="search space and objective, for `opar-sim tune`"
    )

    def controller_list(self) -> list[ControllerSpec]:
        """The controllers this experiment runs, in order."""
        return list(self.compare) if self.compare else [self.controller]


def _first_error(exc: ValidationError, prefix: str = "") -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return f"{prefix}{where}: unknown key"
    return f"{prefix}{where}: {err['msg']}"


def parse_spec(data: dict[str, Any], source: str = "spec") -> ExperimentSpec:
    """Validate a spec from a mapping; raise SpecError naming the offending key."""
    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"{source}: {_first_error(exc)}") from None
    build(spec, source)  # validate the components' own parameters
    return spec


def sweep_points(
    spec: ExperimentSpec, source: str = "spec"
) -> list[tuple[SweepPoint, ExperimentSpec]]:
    """The sweep grid of ``spec``, each point validated; errors name the sweep path."""
    if not spec.sweep:
        raise SpecError(f"{source}: no [sweep] table: nothing to sweep")
    try:
        points = grid(spec.model_dump(), spec.sweep)
    except ValueError as exc:
        raise SpecError(f"{source}: sweep: {exc}") from None
    out = []
    for point in points:
        where = ", ".join(f"{k} = {v!r}" for k, v in point.assignment.items())
        try:
            out.append((point, parse_spec(point.data, f"sweep point {where}")))
        except SpecError as exc:
            raise SpecError(f"{source}: {exc}") from None
    return out


def load_spec(path: str | Path) -> ExperimentSpec:
    """Read and validate a TOML spec file."""
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"spec not found: {p}")
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
    """Make each component once (so errors surface now) and return factories."""
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
        make_task=lambda: environments.wrap(environments.make(t.name, **t.params), t.wrappers),
        make_agent=make_agent,
        controllers=made,
        limits=limits,
        make_supervisor=spec.guards.supervisor,
        guardrail=Guardrail(g.min_confidence, g.constraints) if g is not None else None,
    )


def _agent_factory(a: AgentSpec, source: str) -> Callable[[], Agent]:
    if a.kind == "llm":  # imported here: the simulated path never loads the LLM agent
        from opar_sim.agents.llm import LLMAgent, LLMAgentParams
        from opar_sim.llm.config import make_backend

        try:
            llm_params = LLMAgentParams.model_validate(a.params)
        except ValidationError as exc:
            raise SpecError(f"{source}: {_first_error(exc, 'agent.params.')}") from None
        backend = make_backend(a.backend or BackendSpec())
        evaluator = make_backend(a.evaluator) if a.evaluator is not None else backend
        return lambda: LLMAgent(backend, evaluator, llm_params)
    try:
        agent_params = SimulatedAgentParams.model_validate(a.params)
    except ValidationError as exc:
        raise SpecError(f"{source}: {_first_error(exc, 'agent.params.')}") from None
    return lambda: SimulatedAgent(agent_params)


def _controller_factory(c: ControllerSpec) -> Callable[[], Controller]:
    return lambda: controllers.make(c.name, **c.params)


def with_overrides(
    spec: ExperimentSpec,
    *,
    episodes: int | None = None,
    seed: int | None = None,
    controller: str | None = None,
    agent: str | None = None,
) -> ExperimentSpec:
    """Apply command-line overrides; a new controller or agent kind keeps no old parameters."""
    data = spec.model_dump()
    if agent is not None and agent != spec.agent.kind:
        data["agent"] = data["agent"] | {"kind": agent, "params": {}}
    if episodes is not None:
        data["episodes"] = episodes
    if seed is not None:
        data["seed"] = seed
    if controller is not None and controller != spec.controller.name:
        data["controller"] = {"name": controller, "params": {}}
        data["compare"] = []
    return parse_spec(data, "command line")
