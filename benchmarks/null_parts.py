"""The SimPy engine's own cost: ``run_episode`` with a task and an agent that do almost nothing.

What a loop step of the reference engine costs before any task or agent logic runs:
one SimPy process per episode, each phase a ``yield from`` (time passing by ``advance``,
as the simulated agent and ``SimTask.execute`` do), the episode's four streams, the
records of a step (``Evaluation``, ``ReflectContext``, ``StepRecord``, the law's
``Decision``), the cognitive PID with its defaults, and the episode's JSON rows.  The
task is a ``SimTask`` with one tool (the real ``execute``: a log-normal latency and a
failure draw) whose progress rises by a tenth a call; the agent spends a fixed number of
tokens a call and reads its progress back with noise, so the PID stops after about as
many steps as on flight_booking.  Set beside the bare SimPy floor in ``make bench``: the
share of the floor's multiple that the design itself takes.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import numpy as np
import simpy

import controllers
from environments.base import NoArgs, SimTask
from opar_sim.agents.context import Context
from opar_sim.core.agent import ActChoice
from opar_sim.core.clock import advance
from opar_sim.core.controller import ReflectContext
from opar_sim.core.limits import Limits
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed, streams
from opar_sim.core.task import Task, ToolSpec
from opar_sim.core.types import (
    Action,
    ActionResult,
    Cost,
    Evaluation,
    Observation,
    Plan,
    PlanStep,
)
from opar_sim.experiment.rundir import episode_lines

TICK = Action.of("tick")
TEMPLATE = (PlanStep("tick", "move the task on"),)
LIMITS = Limits(max_steps=20, time_budget=600.0, token_budget=200_000)


class NullTask(SimTask):
    """One tool, ``tick``, that moves progress on by 0.1; the observation is cached."""

    name = "null"
    goal = "tick ten times"
    TOOLS = (ToolSpec("tick", "move the task on", NoArgs),)
    Params = NoArgs

    def _reset_world(self) -> None:
        self.ticks = 0
        self._obs = Observation("ticks:0", 0.0, False, tokens=10)

    def _apply(self, action: Action) -> ActionResult:
        self.ticks += 1
        self._obs = Observation(f"ticks:{self.ticks}", self.progress, False, tokens=10)
        return ActionResult(True, "ticked", 0.0, tokens=4)

    def observe(self) -> Observation:
        """The ticks so far."""
        return self._obs

    @property
    def progress(self) -> float:
        """A tenth per tick."""
        return min(1.0, 0.1 * self.ticks)

    @property
    def complete(self) -> bool:
        """Ten ticks."""
        return self.ticks >= 10

    def expert_action(self) -> Action:
        """Tick."""
        return TICK

    def plan_template(self) -> tuple[PlanStep, ...]:
        """Tick."""
        return TEMPLATE

    def answer(self) -> str:
        """The ticks so far."""
        return f"{self.ticks} ticks"


class NullAgent:
    """Each phase one model call of fixed size, time passing by ``advance``; δ_task is noisy."""

    name = "null"

    def __init__(self) -> None:
        self.context = Context()
        self.cost = Cost()
        self.rng = np.random.default_rng(0)
        self._plan: Plan | None = None
        self._plans = 0

    def reset(self, task: Task, rng: np.random.Generator, cost: Cost) -> None:
        """A fresh context and ledger; ``rng`` draws the evaluation's noise."""
        self.context, self.cost, self.rng = Context(), cost, rng
        self._plan, self._plans = None, 0

    @property
    def context_tokens(self) -> int:
        """The tokens in the context."""
        return self.context.tokens

    def max_step_tokens(self, fresh_plan: bool) -> int:
        """Four calls at the current context size."""
        return 4 * (self.context.tokens + 200)

    def _spend(self, completion: int) -> float:
        """One model call's tokens; its simulated seconds."""
        self.cost.prompt_tokens += self.context.tokens
        self.cost.completion_tokens += completion
        self.cost.llm_calls += 1
        self.context.append("plan", completion)
        return 0.5 + completion / 50.0

    def observe(
        self, env: simpy.Environment, task: Task
    ) -> Generator[simpy.Event, Any, Observation]:
        """Read the observation."""
        if not advance(env, 0.1):
            yield env.timeout(0.1)
        obs = task.observe()
        self.context.append("observation", obs.tokens)
        return obs

    def plan(
        self, env: simpy.Environment, step: int, fresh: bool, critique: str
    ) -> Generator[simpy.Event, Any, Plan]:
        """Keep the plan, or make one of quality 1."""
        delay = self._spend(20)
        if not advance(env, delay):
            yield env.timeout(delay)
        if fresh or self._plan is None:
            self._plans += 1
            self._plan = Plan(self._plans, TEMPLATE, 1.0, step, critique)
        return self._plan

    def act(self, env: simpy.Environment, plan: Plan) -> Generator[simpy.Event, Any, ActChoice]:
        """Tick."""
        delay = self._spend(30)
        if not advance(env, delay):
            yield env.timeout(delay)
        plan.cursor += 1
        return ActChoice(TICK, True)

    def absorb(self, result: ActionResult) -> None:
        """The result's tokens."""
        self.context.append("result", result.tokens)

    def evaluate(
        self, env: simpy.Environment, task: Task, action: Action | None, result: ActionResult
    ) -> Generator[simpy.Event, Any, Evaluation]:
        """The visible progress with a little noise."""
        delay = self._spend(40)
        if not advance(env, delay):
            yield env.timeout(delay)
        seen = task.observe().visible_progress
        delta = min(1.0, max(0.0, seen + 0.05 * float(self.rng.standard_normal())))
        return Evaluation(delta, 1.0 if result.ok else 0.1, 0.0, delta, "progress", ())


def breakdown(episodes: int) -> dict[str, float]:
    """Where a null-parts step goes, µs per loop step: the parts timed one by one.

    ``engine`` is ``run_episode`` itself (its seeding and its law included, the rows
    not); ``seeding`` is the episode's SeedSequence and its four streams; ``law`` the PID
    deciding on the recorded readings again; ``rows`` is ``episode_lines`` on the
    finished episodes; ``rest`` is the engine less its seeding and its law (the loop,
    SimPy, the records, and the null task and agent).

    Args:
        episodes: How many null-parts episodes to time.

    Returns:
        The parts' costs in µs per loop step, ``total`` (engine and rows: what the
        in-process SimPy engine row of ``make bench`` times), and ``steps_per_episode``.
    """
    task, agent, law = NullTask(), NullAgent(), controllers.CognitivePID()
    engine = rows = 0.0
    steps = 0
    readings = []  # the law's inputs, kept (the results are not: as in a run's chunks)
    for i in range(episodes):
        start = time.process_time()
        result = run_episode(task, agent, law, LIMITS, episode_seed(0, i), episode=i)
        ran = time.process_time()
        episode_lines(result)
        rows += time.process_time() - ran
        engine += ran - start
        steps += len(result.steps)
        last = 0.0
        for rec in result.steps:
            assert rec.evaluation is not None
            dt = rec.time - last if rec.step > 1 else 0.0
            ctx = ReflectContext(
                rec.step, rec.time, dt, rec.plan_age, rec.plan_exhausted, rec.replans
            )
            readings.append((rec.step == 1, rec.evaluation, ctx))
            last = rec.time
    start = time.process_time()
    for i in range(episodes):
        streams(episode_seed(0, i))
    seeding = time.process_time() - start
    start = time.process_time()
    for first, evaluation, ctx in readings:
        if first:
            law.reset()
        law.decide(evaluation, ctx)
    decide = time.process_time() - start
    per = 1e6 / steps
    return {
        "engine": engine * per,
        "seeding": seeding * per,
        "law": decide * per,
        "rest": (engine - seeding - decide) * per,
        "rows": rows * per,
        "total": (engine + rows) * per,
        "steps_per_episode": steps / episodes,
    }


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from suite import floor

    breakdown(200)
    parts = breakdown(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
    base = floor(50_000) * 1e6
    print(f"floor {base:.2f} µs/step; {parts.pop('steps_per_episode'):.1f} steps/episode")
    for name, us in parts.items():
        print(f"{name:8s} {us:6.1f} µs/step  {us / base:4.1f}× the floor")
