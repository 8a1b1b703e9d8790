"""The Agent protocol shared by the simulated, scripted and LLM agents.

Each phase is a SimPy generator: it yields the events that make simulated time
pass (thinking, generating tokens) and returns the phase's product.  Token
spending goes into the episode's ``Cost``.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import simpy

from opar_sim.core.task import Task
from opar_sim.core.types import Action, ActionResult, Cost, Evaluation, Observation, Plan

Phase = Generator[simpy.Event, Any, Any]


class AgentAbort(Exception):
    """The agent cannot go on (e.g. its LLM backend is unreachable).

    The loop ends the episode with outcome ``error:<reason>``; nothing crashes.
    """

    def __init__(self, reason: str, message: str = "") -> None:
        super().__init__(message or reason)
        self.reason = reason


@dataclass(slots=True, unsafe_hash=True)  # unfrozen: one per step (see core/types.py)
class ActChoice:
    """What the Act phase selected: an action, or none with the reason."""

    action: Action | None
    expert: bool
    error: str | None = None


class Agent(Protocol):
    """An agent that plans, acts and evaluates its own progress; it never sees p."""

    name: str

    def reset(self, task: Task, rng: np.random.Generator, cost: Cost) -> None:
        """Start an episode on ``task``: empty context, ``rng`` as the only randomness.

        Token spending of the episode is added to ``cost``.
        """
        ...

    def observe(
        self, env: simpy.Environment, task: Task
    ) -> Generator[simpy.Event, Any, Observation]:
        """Observe phase: read the task's partial observation o_t into the context."""
        ...

    def plan(
        self, env: simpy.Environment, step: int, fresh: bool, critique: str
    ) -> Generator[simpy.Event, Any, Plan]:
        """Plan phase: keep the plan in force, or make a fresh one (using ``critique``)."""
        ...

    def act(self, env: simpy.Environment, plan: Plan) -> Generator[simpy.Event, Any, ActChoice]:
        """Act phase: choose the tool call a_t for the plan's next step."""
        ...

    def absorb(self, result: ActionResult) -> None:
        """Append the tool result r_t to the context."""
        ...

    def evaluate(
        self, env: simpy.Environment, task: Task, action: Action | None, result: ActionResult
    ) -> Generator[simpy.Event, Any, Evaluation]:
        """Reflect phase: the agent's own estimates (δ_task, δ_act, δ_plan, confidence)."""
        ...

    def max_step_tokens(self, fresh_plan: bool) -> int:
        """An upper bound on the tokens the next step can spend (for the token budget)."""
        ...

    @property
    def context_tokens(self) -> int:
        """The tokens currently held in the agent's context window."""
        ...


@runtime_checkable
class RemembersCritiques(Protocol):
    """An agent with Reflexion's long-term memory: critiques of failed attempts."""

    def remember(self, critiques: tuple[str, ...], attempt: int) -> None:
        """Carry ``critiques`` into attempt number ``attempt`` of the same seeded task."""
        ...


@runtime_checkable
class LogsCalls(Protocol):
    """An agent that logs its model calls (the LLM agent), for the run's ``calls.jsonl``."""

    def drain_calls(self) -> list[dict[str, Any]]:
        """The calls made since the last drain, oldest first; the log is emptied."""
        ...


@runtime_checkable
class ReportsEffectiveQuality(Protocol):
    """An agent that can say how good a plan's steps are now (the simulated agent).

    The plan's hidden quality is the chance a step is the expert's action when
    the plan is fresh; the effective quality is that chance as the agent would
    act now, after the losses it knows of (context decay past its knee, details
    lost to a memory summary).  The truth probe reads it; an agent without it
    is taken to act with the plan's quality.
    """

    def effective_quality(self, plan: Plan) -> float:
        """The chance that the agent's next step under ``plan`` is the expert's action.

        Args:
            plan: The plan in force.

        Returns:
            A probability in [0, 1].
        """
        ...
