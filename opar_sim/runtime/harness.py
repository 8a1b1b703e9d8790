"""A simulated task behind a real agent's tools: ground truth for a live run's record.

A user's own task has no hidden truth to record; a task of opar-sim has.  ``TaskHarness``
runs one episode of a registered task (``weather``, ``flight_booking``, ...) in its own
SimPy world, executes the calls a real agent makes through the framework's tools
(``call``), and adds to each host step what only the world knows (``observe``): the
progress, whether the task is complete and still feasible, whether the call was the
expert's, and the progress visible to the agent.  The gate records them (never shows them
to the law), so ``replay`` judges a stop and ``calibrate`` fits the simulated agent on the
live run, as on a simulated one.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import simpy

import environments
from opar_sim.core.controller import Truth
from opar_sim.core.seeding import episode_seed, streams
from opar_sim.core.task import Task
from opar_sim.core.types import Action, ActionResult
from opar_sim.runtime.gate import HostStep


class TaskHarness:
    """One seeded episode of a registered task, driven by a real agent's tool calls."""

    def __init__(self, task: str, seed: int, episode: int, **params: Any) -> None:
        """Draw the episode's world.

        Args:
            task: A registered task's name.
            seed: The run seed.
            episode: The episode (its world is ``episode_seed(seed, episode)``'s).
            **params: The task's parameters.
        """
        self.task: Task = environments.make(task, **params)
        self.env = simpy.Environment()
        rngs = streams(episode_seed(seed, episode))
        self.task.reset(self.env, rngs.task, rngs.tools)
        self.experts: list[bool] = []

    @property
    def goal(self) -> str:
        """The task's goal, as the agent is told it."""
        return str(self.task.goal)

    def call(self, tool: str, **args: Any) -> ActionResult:
        """Execute one call in the simulated world (its simulated latency passes there).

        Args:
            tool: The tool's name.
            **args: Its arguments.

        Returns:
            The tool's result; a call the task refuses comes back with its error.
        """
        action = Action.of(tool, **args)
        spec = self.task.tools.get(tool)
        problem = "unknown tool" if spec is None else spec.validate(action)
        self.experts.append(action == self.task.expert_action())
        if problem is not None:
            return ActionResult(False, f"invalid call: {problem}", 0.0, "invalid_action")
        proc = self.env.process(self.task.execute(action))
        self.env.run(proc)
        return cast(ActionResult, proc.value)

    def truth(self) -> Truth:
        """The world's hidden state now (no plan quality: a real agent's plan has none)."""
        return Truth(self.task.progress, self.task.complete, self.task.feasible, 0.0)

    def observe(self, host: HostStep) -> HostStep:
        """``host`` with the world's truth, the expert check and the visible progress."""
        expert = all(self.experts) if self.experts else False
        self.experts = []
        visible = self.task.observe().visible_progress
        return dataclasses.replace(
            host, truth=self.truth(), expert=expert, visible_progress=visible
        )
