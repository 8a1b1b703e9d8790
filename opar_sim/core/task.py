"""The Task protocol: what the loop and the agents need from a task, and its tools.

A task holds the hidden world state and the ground-truth progress p ∈ [0, 1].
It exposes typed tools, runs them in simulated time and yields partial
observations.  Optional hooks (``disturb``, ``violates``, ``sub_episodes``)
are declared members with neutral defaults in ``environments.base.SimTask``.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import simpy
from pydantic import BaseModel, ValidationError

from opar_sim.core.types import Action, ActionResult, EpisodeResult, Observation, PlanStep

Risk = Literal["low", "high"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the agent may call: its name, argument schema and risk level."""

    name: str
    description: str
    args: type[BaseModel]
    risk: Risk = "low"
    # waits on other agents (a team's delegation): per-call API timeouts do not apply
    blocking: bool = False

    def validate(self, action: Action) -> str | None:
        """Return why ``action`` does not fit this tool's schema, or None if it does."""
        key = (self.args, action)
        try:
            known = _VALIDATED.get(key, _UNSEEN)  # one lookup: hashing an Action is not free
        except TypeError:  # unhashable argument values: validate every time
            return self._validate(action)
        if known is not _UNSEEN:
            return known
        problem = self._validate(action)
        if len(_VALIDATED) < 4096:
            _VALIDATED[key] = problem
        return problem

    def _validate(self, action: Action) -> str | None:
        try:
            self.args.model_validate(dict(action.args))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "args"
            return f"{self.name}: {where}: {first['msg']}"
        return None


# Validation verdicts of recently seen actions: the simulated agent proposes the same
# few actions over and over, and pydantic validation would dominate a step's cost.
_VALIDATED: dict[tuple[type[BaseModel], Action], str | None] = {}
_UNSEEN = "\0unseen"  # not a verdict: an action not validated yet


TaskEvent = Generator[simpy.Event, Any, ActionResult]


@runtime_checkable
class Task(Protocol):
    """What the loop and the agents need from a task."""

    @property
    def name(self) -> str:
        """The task's registered name, as recorded on each episode."""
        ...

    @property
    def goal(self) -> str:
        """The goal in words, as the agent is told it."""
        ...

    @property
    def tools(self) -> Mapping[str, ToolSpec]:
        """The tools the agent may call, by name."""
        ...

    def reset(
        self, env: simpy.Environment, rng: np.random.Generator, tool_rng: np.random.Generator
    ) -> Observation:
        """Draw a fresh hidden world from ``rng`` (tool noise from ``tool_rng``) in ``env``.

        Returns:
            The first observation o_0.
        """
        ...

    def observe(self) -> Observation:
        """The agent's partial view of the world now (o_t), never the hidden state."""
        ...

    def execute(self, action: Action) -> TaskEvent:
        """Run ``action`` in simulated time; the process returns its result r_t."""
        ...

    @property
    def progress(self) -> float:
        """Ground-truth progress p in [0, 1], hidden from the agent."""
        ...

    @property
    def complete(self) -> bool:
        """Whether the goal is met in the hidden world state."""
        ...

    @property
    def feasible(self) -> bool:
        """Whether the goal can still be met (giving up is right when not)."""
        ...

    def expert_action(self) -> Action:
        """The action an expert would take now, given the hidden state."""
        ...

    def wrong_actions(self) -> Sequence[Action]:
        """Plausible actions that would not move the task on now."""
        ...

    def plan_template(self) -> tuple[PlanStep, ...]:
        """The skeleton of a good plan, from which agents draw theirs."""
        ...

    def answer(self) -> str:
        """The answer the episode would return if it ended now."""
        ...

    def disturb(self, rng: np.random.Generator) -> str | None:
        """Change the hidden world at random; say what changed, or None (the default)."""
        ...

    def violates(self, action: Action) -> str | None:
        """The goal's constraint that ``action`` visibly breaks, or None (the default)."""
        ...

    @property
    def sub_episodes(self) -> Sequence[EpisodeResult]:
        """The episodes of the sub-agents this task ran (Algorithm 3); empty by default."""
        ...


SubEpisode = Generator[simpy.Event, Any, EpisodeResult]


class SubAgentRunner(Protocol):
    """Runs a sub-agent's full OPAR episode inside the caller's world (Algorithm 3, line 11).

    Implemented on the agent side (``opar_sim.agents.orchestrator``); a task
    that delegates (``DelegatingTask``) is handed one before its episode runs.
    """

    def run(
        self,
        env: simpy.Environment,
        task: Task,
        *,
        controller: str,
        max_steps: int,
        token_budget: int,
        seed: np.random.SeedSequence,
        episode: int,
        name: str,
    ) -> SubEpisode:
        """A SimPy process body: the sub-agent's episode on ``task``, in ``env``'s clock."""
        ...


@runtime_checkable
class DelegatingTask(Protocol):
    """A task whose tools delegate work to sub-agents (the ``team`` task)."""

    def bind_sub_agents(self, runner: SubAgentRunner) -> None:
        """Receive the runner of the sub-agents' episodes."""
        ...


def innermost(task: Task) -> Any:
    """The task beneath any wrappers (a wrapper keeps the task it wraps as ``task``)."""
    inner: Any = task
    while getattr(inner, "task", None) is not None:
        inner = inner.task
    return inner


def task_features(task: Task) -> dict[str, float] | None:
    """What is known about the current world before running it (``features``), if the task says.

    A task may expose ``features``: a mapping of numbers fixed by its world
    (e.g. how many write actions it needs), recorded with each episode and read
    by a heterogeneous simulated agent.  Wrappers are looked through.

    Args:
        task: The task, reset to the episode's world.

    Returns:
        A copy of the features, or None when the task has none.
    """
    features = getattr(innermost(task), "features", None)
    return dict(features) if isinstance(features, Mapping) else None
