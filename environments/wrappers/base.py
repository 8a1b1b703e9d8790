"""The base of every task wrapper, and the timed call the fault wrappers share.

A wrapper holds an inner task and satisfies the Task protocol itself, so
wrappers stack (Gymnasium's habit: partial observability and faults are added
from outside, never as per-task flags).  Each wrapper draws from its own child
generator, derived at ``reset`` from the tools stream and keyed by its depth in
the stack: it never draws from the streams of the task beneath it, so the same
seed gives the same trajectory with any stack, and removing a wrapper leaves
the randomness of the others untouched.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import simpy
from pydantic import BaseModel, ConfigDict

from opar_sim.core.seeding import derived
from opar_sim.core.task import DelegatingTask, SubAgentRunner, Task, TaskEvent, ToolSpec
from opar_sim.core.types import Action, ActionResult, EpisodeResult, Observation, PlanStep

WRAPPER_STREAM = 0x57  # the key tag of wrapper streams ("W")


class WrapperParams(BaseModel):
    """Parameters of a wrapper without any."""

    model_config = ConfigDict(extra="forbid")


class TaskWrapper:
    """Forward every part of the Task protocol to ``task``; subclasses override some.

    ``name`` is the wrapped task's name (records and summaries stay keyed by
    task); ``unwrapped`` is the innermost task; ``stack`` lists the wrappers
    from the outside in.
    """

    wrapper_name: ClassVar[str] = "wrapper"
    Params: ClassVar[type[BaseModel]] = WrapperParams

    def __init__(self, task: Task, **params: Any) -> None:
        self.task = task
        self.params = self.Params.model_validate(params)
        self.env = simpy.Environment()
        self.rng = np.random.default_rng(0)
        inner_depth = getattr(task, "depth", 0)
        self.depth: int = inner_depth + 1

    # -- the Task protocol, forwarded --------------------------------------------
    @property
    def name(self) -> str:
        """The wrapped task's name: records stay keyed by task, not by stack."""
        return self.task.name

    @property
    def goal(self) -> str:
        """The wrapped task's goal."""
        return self.task.goal

    @property
    def tools(self) -> Mapping[str, ToolSpec]:
        """The wrapped task's tools."""
        return self.task.tools

    def reset(
        self, env: simpy.Environment, rng: np.random.Generator, tool_rng: np.random.Generator
    ) -> Observation:
        """Reset the inner task, take the wrapper's own stream (derived from ``tool_rng``).

        The stream is keyed by the wrapper's depth, so the inner task's draws are
        untouched; the wrapper's state is cleared after the inner reset.
        """
        self.env = env
        self.rng = derived(tool_rng, WRAPPER_STREAM, self.depth)
        self.task.reset(env, rng, tool_rng)
        self._on_reset()
        return self.observe()

    def _on_reset(self) -> None:
        """Clear the wrapper's own state (after the inner task was reset)."""

    def observe(self) -> Observation:
        """What the inner task shows the agent, unchanged."""
        return self.task.observe()

    def execute(self, action: Action) -> TaskEvent:
        """Run the call on the inner task, unchanged."""
        return (yield from self.task.execute(action))

    @property
    def progress(self) -> float:
        """The inner task's ground-truth progress: wrappers never change the truth."""
        return self.task.progress

    @property
    def complete(self) -> bool:
        """Whether the inner task's goal is met."""
        return self.task.complete

    @property
    def feasible(self) -> bool:
        """Whether the inner task's goal can still be met."""
        return self.task.feasible

    def expert_action(self) -> Action:
        """The inner task's expert action."""
        return self.task.expert_action()

    def wrong_actions(self) -> Sequence[Action]:
        """The inner task's plausible wrong actions."""
        return self.task.wrong_actions()

    def plan_template(self) -> tuple[PlanStep, ...]:
        """The inner task's plan skeleton."""
        return self.task.plan_template()

    def answer(self) -> str:
        """The inner task's current answer."""
        return self.task.answer()

    # -- the Task protocol's hooks, forwarded to the inner task ---------------------
    def disturb(self, rng: np.random.Generator) -> str | None:
        """Change the world (see ``environments.base.SimTask.disturb``)."""
        return self.task.disturb(rng)

    def violates(self, action: Action) -> str | None:
        """The visible constraint ``action`` breaks, if any (for guardrails)."""
        return self.task.violates(action)

    @property
    def sub_episodes(self) -> Sequence[EpisodeResult]:
        """The inner task's sub-agents' episodes."""
        return self.task.sub_episodes

    def bind_sub_agents(self, runner: SubAgentRunner) -> None:
        """Hand the sub-agent runner to the inner task, when it delegates."""
        if isinstance(self.task, DelegatingTask):
            self.task.bind_sub_agents(runner)

    @property
    def unwrapped(self) -> Task:
        """The innermost task, beneath every wrapper."""
        inner = self.task
        while isinstance(inner, TaskWrapper):
            inner = inner.task
        return inner

    @property
    def stack(self) -> list[str]:
        """The wrapper names from the outside in (this wrapper first)."""
        inner = self.task.stack if isinstance(self.task, TaskWrapper) else []
        return [self.wrapper_name, *inner]


def timed_call(
    env: simpy.Environment, call: TaskEvent, tool: str, timeout: float, extra: float = 0.0
) -> Generator[simpy.Event, Any, ActionResult]:
    """Run ``call`` after ``extra`` seconds, abandoning it at ``timeout`` seconds.

    A call that times out is abandoned, not cancelled: it keeps running in the
    world and its effect may still land later (as a real booking request
    would), but the agent gets a timeout.
    """
    start = env.now
    proc = env.process(_delayed(env, call, extra))
    if math.isfinite(timeout):
        yield proc | env.timeout(timeout)
    else:  # a blocking call (ToolSpec.blocking) is waited for, however long it takes
        yield proc
    if proc.triggered:
        result = proc.value
        assert isinstance(result, ActionResult)
        return ActionResult(result.ok, result.text, env.now - start, result.error, result.tokens)
    return ActionResult(False, f"{tool} timed out", timeout, "timeout")


def _delayed(
    env: simpy.Environment, call: TaskEvent, extra: float
) -> Generator[simpy.Event, Any, ActionResult]:
    if extra > 0:
        yield env.timeout(extra)
    return (yield from call)
