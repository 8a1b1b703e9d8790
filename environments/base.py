"""The Task protocol and the shared machinery of simulated tools.

A task holds the hidden world state and the ground-truth progress p ∈ [0, 1].
It exposes typed tools, runs them in simulated time (latency, failures,
timeouts), and yields partial observations.  The simulated agent additionally
asks it for the expert's next action and a few plausible wrong ones.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import simpy
from pydantic import BaseModel, ConfigDict, Field

from opar_sim.core.clock import advance
from opar_sim.core.task import TaskEvent, ToolSpec
from opar_sim.core.types import Action, ActionResult, EpisodeResult, Observation, PlanStep


class NoArgs(BaseModel):
    """Argument schema of a tool that takes none."""

    model_config = ConfigDict(extra="forbid")


class ToolParams(BaseModel):
    """Latency, failure and timeout of a task's tools (simulated seconds)."""

    model_config = ConfigDict(extra="forbid")

    latency_median: float = Field(0.3, gt=0, description="median tool latency, seconds")
    latency_sigma: float = Field(0.6, ge=0, description="log-normal spread of the latency")
    timeout: float = Field(2.0, gt=0, description="per-call timeout, seconds")
    failure_rate: float = Field(0.05, ge=0, le=1, description="chance a call fails")


class SimTask(ABC):
    """Base class for simulated tasks: tool timing, validation and failure.

    Subclasses define ``name``, ``goal``, ``TOOLS``, ``Params`` and the
    abstract methods; ``execute`` here handles what every tool call shares.
    """

    name: ClassVar[str]
    goal: str
    TOOLS: ClassVar[tuple[ToolSpec, ...]]
    Params: ClassVar[type[BaseModel]]

    def __init__(self, **params: Any) -> None:
        self.params = self.Params.model_validate(params)
        self.tools: Mapping[str, ToolSpec] = {t.name: t for t in self.TOOLS}
        tool_params = getattr(self.params, "tools", None)
        self.tool_params: ToolParams = (
            tool_params if isinstance(tool_params, ToolParams) else ToolParams()
        )
        self.env: simpy.Environment = simpy.Environment()
        self.rng = np.random.default_rng(0)
        self.tool_rng = np.random.default_rng(0)

    def reset(
        self, env: simpy.Environment, rng: np.random.Generator, tool_rng: np.random.Generator
    ) -> Observation:
        """Take the episode's clock and streams, draw a fresh hidden world, and observe it."""
        self.env = env
        self.rng = rng
        self.tool_rng = tool_rng
        self._reset_world()
        return self.observe()

    @abstractmethod
    def _reset_world(self) -> None:
        """Draw the hidden world from ``self.rng``."""

    @abstractmethod
    def _apply(self, action: Action) -> ActionResult:
        """Apply a validated, successfully-delivered tool call to the world."""

    def execute(self, action: Action) -> TaskEvent:
        """Run a tool call in simulated time: latency, timeout, failure, effect."""
        spec = self.tools.get(action.tool)
        if spec is None:
            return ActionResult(False, f"unknown tool {action.tool!r}", 0.0, "invalid_action")
        problem = spec.validate(action)
        if problem is not None:
            return ActionResult(False, problem, 0.0, "invalid_action")
        tp = self.tool_params
        rng = self.tool_rng
        # math.exp: numpy's exp of a scalar, without the ufunc call (the same float)
        latency = tp.latency_median * math.exp(tp.latency_sigma * rng.standard_normal())
        env = self.env
        if latency > tp.timeout:
            if not advance(env, tp.timeout):
                yield env.timeout(tp.timeout)
            return ActionResult(False, f"{action.tool} timed out", tp.timeout, "timeout")
        if not advance(env, latency):
            yield env.timeout(latency)
        if rng.random() < tp.failure_rate:
            return ActionResult(False, f"{action.tool} failed: service error", latency, "failure")
        result = self._apply(action)
        return ActionResult(result.ok, result.text, latency, result.error, result.tokens)

    @abstractmethod
    def observe(self) -> Observation:
        """What the agent can perceive now (partial: it never includes the hidden progress)."""

    @property
    @abstractmethod
    def progress(self) -> float:
        """Ground-truth progress p ∈ [0, 1]."""

    @property
    @abstractmethod
    def complete(self) -> bool:
        """True when the goal is met."""

    @abstractmethod
    def expert_action(self) -> Action:
        """The action an expert would take now, from the hidden state."""

    @abstractmethod
    def plan_template(self) -> tuple[PlanStep, ...]:
        """The skeleton of a good plan (with its conditional branches)."""

    @abstractmethod
    def answer(self) -> str:
        """EXTRACT_ANSWER: the task's current answer, as text."""

    def wrong_actions(self) -> Sequence[Action]:
        """Plausible calls that would not move the task on now; none by default."""
        return ()

    def disturb(self, rng: np.random.Generator) -> str | None:
        """Change the hidden world at random; say what changed, or None if nothing did.

        The hook of the ``disturbance`` wrapper: a world that changes under the
        agent.  The default world never changes.
        """
        return None

    def violates(self, action: Action) -> str | None:
        """The constraint of the goal that ``action`` visibly breaks, if any.

        Guardrails read it before a high-risk call runs; it may use only what
        the agent has seen.  The default knows of no constraint.
        """
        return None

    @property
    def feasible(self) -> bool:
        """Whether the goal can still be met; a task that cannot fail is always feasible."""
        return True

    @property
    def sub_episodes(self) -> Sequence[EpisodeResult]:
        """The sub-agents' episodes (Algorithm 3); a task that delegates none has none."""
        return ()
