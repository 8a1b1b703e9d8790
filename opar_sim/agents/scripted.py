"""A scripted agent for tests: fixed actions and fixed evaluations, no randomness."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import numpy as np
import simpy

from opar_sim.agents.context import Context
from opar_sim.core.agent import ActChoice
from opar_sim.core.clock import advance
from opar_sim.core.task import Task
from opar_sim.core.types import Action, ActionResult, Cost, Evaluation, Observation, Plan


class ScriptedAgent:
    """Plays back ``actions`` and ``evaluations`` in order, repeating the last of each.

    An action of None stands for an output that failed format validation.
    Each phase takes ``phase_seconds`` of simulated time and each model call
    costs ``tokens_per_call`` completion tokens (prompt tokens are the context).
    """

    name = "scripted"

    def __init__(
        self,
        actions: Sequence[Action | None],
        evaluations: Sequence[Evaluation],
        phase_seconds: float = 1.0,
        tokens_per_call: int = 10,
    ) -> None:
        """Build the agent.

        Args:
            actions: The actions to play back in order (None: an invalid output).
            evaluations: The evaluations to return in order.
            phase_seconds: Simulated seconds each phase takes.
            tokens_per_call: Completion tokens each (pretend) model call costs.

        Raises:
            ValueError: If ``actions`` or ``evaluations`` is empty.
        """
        if not actions or not evaluations:
            raise ValueError("a scripted agent needs at least one action and one evaluation")
        self.actions = list(actions)
        self.evaluations = list(evaluations)
        self.phase_seconds = phase_seconds
        self.tokens_per_call = tokens_per_call
        self.context = Context()
        self.cost = Cost()
        self._step = 0
        self._plans = 0
        self._plan: Plan | None = None

    def reset(self, task: Task, rng: np.random.Generator, cost: Cost) -> None:
        """Start the scripts from the beginning on ``task``; ``rng`` is not used."""
        self.context = Context()
        self.cost = cost
        self._step = 0
        self._plans = 0
        self._task = task

    @property
    def context_tokens(self) -> int:
        """The tokens appended to the context this episode."""
        return self.context.tokens

    def max_step_tokens(self, fresh_plan: bool) -> int:
        """A generous bound on a step's three calls at the current context size."""
        return 3 * (self.context.tokens + 4 * self.tokens_per_call + 200) + 3 * self.tokens_per_call

    def _call(self) -> None:
        self.cost.prompt_tokens += self.context.tokens
        self.cost.completion_tokens += self.tokens_per_call
        self.cost.llm_calls += 1
        self.context.append("action", self.tokens_per_call)

    def observe(
        self, env: simpy.Environment, task: Task
    ) -> Generator[simpy.Event, Any, Observation]:
        """Read the task's observation into the context; ``phase_seconds`` long."""
        if not advance(env, self.phase_seconds):
            yield env.timeout(self.phase_seconds)
        obs = task.observe()
        self.context.append("observation", obs.tokens)
        return obs

    def plan(
        self, env: simpy.Environment, step: int, fresh: bool, critique: str
    ) -> Generator[simpy.Event, Any, Plan]:
        """Make a plan from the task's template (quality 1.0) when fresh; else keep it."""
        if not advance(env, self.phase_seconds):
            yield env.timeout(self.phase_seconds)
        self._call()
        if fresh or self._plan is None:
            self._plans += 1
            self._plan = Plan(self._plans, self._task.plan_template(), 1.0, step, critique)
        return self._plan

    def act(self, env: simpy.Environment, plan: Plan) -> Generator[simpy.Event, Any, ActChoice]:
        """Play back the next scripted action (the last one once the script runs out)."""
        if not advance(env, self.phase_seconds):
            yield env.timeout(self.phase_seconds)
        self._call()
        action = self.actions[min(self._step, len(self.actions) - 1)]
        plan.cursor += 1
        if action is None:
            return ActChoice(None, False, "invalid_format")
        return ActChoice(action, action == self._task.expert_action())

    def absorb(self, result: ActionResult) -> None:
        """Add the result's tokens to the context."""
        self.context.append("result", result.tokens)

    def evaluate(
        self, env: simpy.Environment, task: Task, action: Action | None, result: ActionResult
    ) -> Generator[simpy.Event, Any, Evaluation]:
        """Play back the next scripted evaluation (the last one once the script runs out)."""
        if not advance(env, self.phase_seconds):
            yield env.timeout(self.phase_seconds)
        self._call()
        evaluation = self.assess(task, result)
        self._step += 1
        return evaluation

    def assess(self, task: Task, result: ActionResult) -> Evaluation:
        """This step's evaluation: the next scripted one (a subclass may read the task instead).

        Args:
            task: The task, as the evaluate phase sees it.
            result: The step's tool result.

        Returns:
            The evaluation the phase returns.
        """
        return self.evaluations[min(self._step, len(self.evaluations) - 1)]
