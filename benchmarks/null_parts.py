"""The SimPy engine's own cost: ``run_episode`` with a task and an agent that do almost nothing.

What a loop step of the reference engine costs before any task or agent logic runs:
one SimPy process per episode, each phase a ``yield from`` (time passing by ``advance``,
as the simulated agent and ``SimTask.execute`` do), the episode's four streams, the
records of a step (``Evaluation``, ``ReflectContext``, ``StepRecord``, the law's
``Decision``), the cognitive PID with its defaults, and the episode's JSON rows.  The
task is a ``SimTask`` with one tool (the real ``execute``: a log-normal latency and a
failure draw) whose progress rises by a tenth a call; the agent is the scripted agent,
always ticking, with its evaluation read from the task's progress with noise, so the
PID stops after about as many steps as on flight_booking.  Set beside the bare SimPy
floor in ``make bench``: the share of the floor's multiple that the design itself takes.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import controllers
from environments.base import NoArgs, SimTask
from opar_sim.agents.scripted import ScriptedAgent
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
    PlanStep,
)
from opar_sim.rundir import episode_lines

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


class NullAgent(ScriptedAgent):
    """The scripted agent, always ticking, whose evaluation reads progress with a little noise.

    Each phase is one model call of ``tokens_per_call`` tokens and ``phase_seconds`` long
    (time passing by ``advance``, as the simulated agent's does).
    """

    name = "null"

    def __init__(self) -> None:
        super().__init__([TICK], [Evaluation(0.0, 1.0, 0.0, 0.0)], 0.5, 30)
        self.rng = np.random.default_rng(0)

    def reset(self, task: Task, rng: np.random.Generator, cost: Cost) -> None:
        """As the scripted agent; ``rng`` draws the evaluation's noise."""
        super().reset(task, rng, cost)
        self.rng = rng

    def assess(self, task: Task, result: ActionResult) -> Evaluation:
        """The visible progress with a little noise."""
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


def main(argv: list[str] | None = None) -> int:
    """Print the null parts' breakdown beside the floor, measured in this process."""
    import argparse

    from suite import floor

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("episodes", nargs="?", type=int, default=5000, help="default: 5000")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error("episodes must be at least 1")
    breakdown(min(200, args.episodes))  # warm up
    parts = breakdown(args.episodes)
    base = floor(50_000) * 1e6
    print(f"floor {base:.2f} µs/step; {parts.pop('steps_per_episode'):.1f} steps/episode")
    for name, us in parts.items():
        print(f"{name:8s} {us:6.1f} µs/step  {us / base:4.1f}× the floor")
    return 0


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
