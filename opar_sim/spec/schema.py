"""Experiment specs: the schema, validated by pydantic, with errors that name the key.

A spec names a task, an agent, a controller and the hard limits, plus the
number of episodes and the seed, and optionally a sweep grid and a tuning
space.  This module is schema only: ``opar_sim.spec.build`` reads a
file and makes the components (so a bad gain or an unknown task is reported
before anything is written), and ``opar_sim.spec.edit`` applies
dotted-path changes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from opar_sim.core.errors import InputError, describe_problem, did_you_mean, keys_at
from opar_sim.llm.config import BackendSpec
from opar_sim.spec.grid import SweepAxis
from opar_sim.spec.guards import GuardsSpec
from opar_sim.studies.seeds import RELEASE_HOLDOUT_SEED


class SpecError(InputError):
    """A spec is missing, malformed or names something that does not exist."""


class _Strict(BaseModel):
    # ±inf is a meaningful parameter (an open output limit, a rule switched off): keep it
    # through the JSON round trip to workers and spec.json instead of turning it into null
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class TaskSpec(_Strict):
    """The ``[task]`` table: an environment by name, its parameters and its wrappers."""

    name: str = "flight_booking"
    params: dict[str, Any] = Field(default_factory=dict)
    # `[[task.wrappers]]` tables, each `name = "delay"` plus the wrapper's keys;
    # applied in order, the first innermost (environments.wrappers)
    wrappers: list[dict[str, Any]] = Field(default_factory=list)


class AgentSpec(_Strict):
    """The ``[agent]`` table: the simulated noisy expert or an LLM agent, and its parameters."""

    kind: Literal["simulated", "llm"] = "simulated"
    params: dict[str, Any] = Field(default_factory=dict)
    # LLM agents: `backend` plans and acts, `evaluator` (default: backend) reflects
    backend: BackendSpec | None = None
    evaluator: BackendSpec | None = None


class ControllerSpec(_Strict):
    """A controller by registered name (``pid``, ``oracle``, ...) with its parameters."""

    name: str = "pid"
    params: dict[str, Any] = Field(default_factory=dict)


class LimitsSpec(_Strict):
    """The ``[limits]`` table: the hard caps on steps, simulated time and tokens."""

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


class ParamRange(BaseModel):
    """A gain's search interval."""

    model_config = ConfigDict(extra="forbid")

    low: float = Field(allow_inf_nan=False)
    high: float = Field(allow_inf_nan=False)
    log: bool = False
    integer: bool = False  # search whole numbers only (e.g. settle_count)

    @model_validator(mode="after")
    def _ordered(self) -> ParamRange:
        if not self.low < self.high:
            raise ValueError("needs low < high")
        if self.log and self.low <= 0:
            raise ValueError("a log range needs low > 0")
        if self.integer and math.ceil(self.low) > math.floor(self.high):
            raise ValueError(f"an integer range needs a whole number in [{self.low}, {self.high}]")
        return self


class Objective(BaseModel):
    """Weights of the per-episode objective (minimised)."""

    model_config = ConfigDict(extra="forbid")

    failure: float = Field(1.0, ge=0, description="weight of 1 - success")
    tokens: float = Field(0.0, ge=0, description="weight per token spent")
    replan_rate: float = Field(0.0, ge=0, description="weight of REPLANs per step")

    def episode_score(self, row: Mapping[str, Any]) -> float:
        """The weighted score of one episodes.jsonl row (lower is better)."""
        steps = max(1, int(row["steps"]))
        return (
            self.failure * (0.0 if row["success"] else 1.0)
            + self.tokens * float(row["tokens"])
            + self.replan_rate * float(row["replans"]) / steps
        )


class TuneSpec(BaseModel):
    """The ``[tune]`` table of a spec."""

    model_config = ConfigDict(extra="forbid")

    trials: int = Field(40, ge=1, le=100_000)
    sampler: Literal["tpe", "cmaes"] = "tpe"
    train_episodes: int = Field(150, ge=1)
    holdout_episodes: int = Field(300, ge=1)
    holdout_seed: int = Field(
        RELEASE_HOLDOUT_SEED,
        ge=0,
        le=2**63 - 1,
        description="seed of the held-out episodes (default: this release's hold-out seed)",
    )
    objective: Objective = Field(default_factory=Objective)
    space: dict[str, ParamRange] = Field(min_length=1)


class ExperimentSpec(_Strict):
    """One experiment: what runs, how often, and under which limits."""

    name: str = Field(min_length=1, max_length=120, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    episodes: int = Field(100, ge=1, le=10_000_000)

    @field_validator("name")
    @classmethod
    def _one_path_component(cls, name: str) -> str:
        # the name becomes a directory (runs/NAME/...): "." or ".." would leave runs/
        if set(name) == {"."}:
            raise ValueError(f"{name!r} is not a usable name (it names a directory above)")
        return name

    trials: int = Field(
        1,
        ge=1,
        le=100,
        description="runs of each episode's world: the task stream shared, the agent's, "
        "tools' and controller's fresh per trial (pass^k needs trials >= k)",
    )
    seed: int = Field(0, ge=0, le=2**63 - 1)
    task: TaskSpec = Field(default_factory=TaskSpec)
    agent: AgentSpec = Field(default_factory=AgentSpec)
    controller: ControllerSpec = Field(default_factory=ControllerSpec)
    compare: list[ControllerSpec] = Field(
        default_factory=list,
        description="controllers run on the same seeds; when empty only `controller` runs",
    )
    limits: LimitsSpec = Field(default_factory=LimitsSpec)
    guards: GuardsSpec = Field(default_factory=GuardsSpec, description="convergence guards")
    guardrail: GuardrailSpec | None = None  # off unless the table is given
    reflexion: ReflexionSpec = Field(default_factory=ReflexionSpec)
    sweep: dict[str, SweepAxis] = Field(
        default_factory=dict, description="dotted spec path -> values, for `opar-sim sweep`"
    )
    tune: TuneSpec | None = Field(
        None, description="search space and objective, for `opar-sim tune`"
    )

    @model_validator(mode="after")
    def _trials_or_attempts(self) -> ExperimentSpec:
        if self.trials > 1 and self.reflexion.attempts > 1:
            raise ValueError(
                "trials > 1 and reflexion.attempts > 1 cannot be combined: repeat the "
                "world (trials) or retry it with memory (reflexion), not both"
            )
        return self

    def controller_list(self) -> list[ControllerSpec]:
        """The controllers this experiment runs, in order."""
        return list(self.compare) if self.compare else [self.controller]


def first_error(
    exc: ValidationError, prefix: str = "", model: type[BaseModel] | None = None
) -> str:
    """The first validation error as ``dotted.path: message``, in the spec's own words.

    An unknown key names the nearest valid key of its table (``did you mean``)
    when ``model`` (default ``ExperimentSpec``) knows the table.

    Args:
        exc: Pydantic's error.
        prefix: Put before the path (e.g. ``"agent.params."``).
        model: The model the data was validated against.

    Returns:
        One line.
    """
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    where = ".".join(str(p) for p in loc)
    if err["type"] == "extra_forbidden":
        keys = keys_at(model or ExperimentSpec, loc[:-1])
        return f"{prefix}{where}: unknown key{did_you_mean(str(loc[-1]), keys)}"
    if not where:  # a check across keys (a model validator) names its keys itself
        return f"{prefix}{err['msg'].removeprefix('Value error, ')}"
    return f"{prefix}{where}: {describe_problem(err)}"


def validate_spec(data: dict[str, Any], source: str = "spec") -> ExperimentSpec:
    """Check a mapping against the schema (not the components' own parameters).

    Args:
        data: The spec as a mapping (a parsed TOML file, or an edited dump).
        source: Where it came from, for the error message.

    Returns:
        The validated spec.

    Raises:
        SpecError: naming the offending key.
    """
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"{source}: {first_error(exc)}") from None
    except RecursionError:
        raise SpecError(f"{source}: tables nested too deeply") from None
