"""Long-term memory across episodes, as Reflexion does it (the slowest feedback of OPAR §5.2).

The same seeded task is attempted up to ``attempts`` times.  After a failed
attempt the agent writes a critique of it (what went wrong, from the outcome
and its own trajectory); the last ``keep`` critiques (Reflexion keeps 1–3)
are carried into the next attempt, where each raises the quality of the
agent's fresh plans (``SimulatedAgentParams.reflexion_gain``).  A success ends
the attempts.  The task and its tools see the same random numbers every
attempt (the same seeded task); the agent draws from a stream of its own per
attempt, so retrying without memory is a fair baseline (pass@k), not a replay.

With it all three feedback time scales of the OPAR document are present:
immediate (the tool result), short-term (δ_task across Reflects) and
long-term (critiques across episodes).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from typing import cast

import numpy as np

from opar_sim.core.agent import Agent, RemembersCritiques
from opar_sim.core.controller import Controller
from opar_sim.core.guardrail import Guardrail
from opar_sim.core.limits import Limits
from opar_sim.core.loop import implements, run_episode
from opar_sim.core.supervisor import Supervisor
from opar_sim.core.task import Task
from opar_sim.core.types import EpisodeResult


class LongTermMemory:
    """The critiques of failed attempts, the oldest forgotten first."""

    def __init__(self, keep: int) -> None:
        if keep < 0:
            raise ValueError(f"keep must be >= 0, got {keep}")
        self.critiques: deque[str] = deque(maxlen=keep)

    def add(self, critique: str) -> None:
        """Remember the critique of a failed attempt, forgetting the oldest past ``keep``."""
        self.critiques.append(critique)

    def recall(self) -> tuple[str, ...]:
        """The critiques kept, oldest first, to carry into the next attempt."""
        return tuple(self.critiques)


def critique_of(result: EpisodeResult) -> str:
    """The self-critique of a failed attempt (Reflexion's verbal reinforcement)."""
    steps = len(result.steps)
    wrong = sum(1 for r in result.steps if r.action is not None and not r.expert)
    kind, _, reason = result.outcome.partition(":")
    if kind == "premature":
        lead = f"I stopped after {steps} steps believing the goal was met; it was not"
    elif kind == "truncated":
        lead = f"I ran out of {reason} after {steps} steps"
    elif kind == "error":
        lead = f"my output broke ({reason}) after {steps} steps"
    else:
        lead = f"the attempt ended as {result.outcome} after {steps} steps"
    return f"{lead}; {wrong} of my actions did not move the task on."


def run_attempts(
    task: Task,
    agent: Agent,
    controller: Controller,
    limits: Limits,
    seed: np.random.SeedSequence,
    *,
    attempts: int,
    keep: int,
    episode: int = 0,
    guardrail: Guardrail | None = None,
    supervisor: Supervisor | None = None,
    trial: int = 1,
) -> list[EpisodeResult]:
    """Attempt one seeded task until success or ``attempts``; return every attempt.

    Between attempts the agent (if it ``RemembersCritiques``) is handed the last
    ``keep`` critiques of its failures; its memory is cleared again at the end.

    Args:
        task: The task, reset from the same ``seed`` on every attempt.
        agent: The agent making the attempts.
        controller: The Reflect controller, reset at the start of each attempt.
        limits: The hard limits of each attempt.
        seed: The episode's SeedSequence, the same for every attempt.
        attempts: The most attempts to make (Reflexion's k).
        keep: How many critiques of failed attempts to carry forward.
        episode: The episode number recorded on each result.
        guardrail: Reviews high-risk calls before they run, or None.
        supervisor: Convergence guards around the controller, or None.
        trial: The repeated trial of the world (``run_episode``'s ``trial``).

    Returns:
        One result per attempt made, in order, each with its ``attempt`` number;
        the last is the first success, or attempt ``attempts``.
    """
    memory = LongTermMemory(keep)
    # the protocol check answered once per class (``implements``), not walked every episode
    remember = (
        cast(RemembersCritiques, agent).remember if implements(agent, RemembersCritiques) else None
    )
    results: list[EpisodeResult] = []
    try:
        for attempt in range(1, attempts + 1):
            if remember is not None:
                remember(memory.recall(), attempt)
            result = run_episode(
                task,
                agent,
                controller,
                limits,
                seed,
                episode=episode,
                supervisor=supervisor,
                guardrail=guardrail,
                trial=trial,
            )
            result.attempt = attempt
            results.append(result)
            if result.success:
                break
            memory.add(critique_of(result))
    finally:
        if remember is not None:
            remember((), 1)  # the next episode seed starts without memory
    return results


def success_by_attempt(rows: Iterable[tuple[int, int, bool]], attempts: int) -> list[float]:
    """Share of episode seeds solved by attempt a = 1..attempts.

    ``rows`` are (episode, attempt, success), one per attempt run.
    """
    first: dict[int, int] = {}
    seeds: set[int] = set()
    for episode, attempt, success in rows:
        seeds.add(episode)
        if success:
            first[episode] = min(attempt, first.get(episode, attempt))
    n = max(len(seeds), 1)
    solved: Sequence[int] = list(first.values())
    return [sum(1 for f in solved if f <= a) / n for a in range(1, attempts + 1)]
