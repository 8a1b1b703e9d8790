"""The orchestrator's side of nested OPAR (Algorithm 3 of the OPAR document, §7).

An orchestrator manages sub-agents: each is a simulated noisy expert with its
own Reflect law, running the same OPAR loop (``opar_sim.core.loop``) as a
SimPy process in the orchestrator's world, so one simulated clock covers
them all.  A task that delegates (``DelegatingTask``, e.g. ``team``) is bound
to an ``Orchestrator`` before its episode runs; its tools then start
sub-agents through it, blocking on one or waiting on several with ``AllOf``.
"""

from __future__ import annotations

import numpy as np
import simpy

import controllers
from opar_sim.agents.simulated import SimulatedAgent
from opar_sim.core.limits import Limits
from opar_sim.core.loop import sub_episode
from opar_sim.core.task import DelegatingTask, SubEpisode, Task


class Orchestrator:
    """Runs sub-agents' episodes in the caller's SimPy world (a ``SubAgentRunner``)."""

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
        """A sub-agent's whole episode on ``task``, as a SimPy process body.

        Args:
            env: The caller's environment (its clock).
            task: The subtask, freshly made.
            controller: The registered name of the sub-agent's Reflect law.
            max_steps: The sub-agent's step limit.
            token_budget: The sub-agent's token budget.
            seed: The sub-agent's own seed.
            episode: Which sub-agent of the caller's episode this is (1, 2, ...).
            name: The sub-agent's name in ``steps.jsonl`` (``sub:<subtask>``).

        Returns:
            The sub-agent's episode result (when the process ends).
        """
        limits = Limits(max_steps=max_steps, token_budget=token_budget)
        result = yield from sub_episode(
            env,
            task,
            SimulatedAgent(),
            controllers.make(controller),
            limits,
            seed,
            episode=episode,
            name=name,
        )
        return result


def bind_sub_agents(task: Task) -> Task:
    """Give ``task`` an orchestrator when it delegates to sub-agents; return it.

    Args:
        task: A freshly made (possibly wrapped) task.

    Returns:
        The same task.
    """
    if isinstance(task, DelegatingTask):
        task.bind_sub_agents(Orchestrator())
    return task
