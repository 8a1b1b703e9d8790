"""A shipped conformance checker for tasks, in the spirit of Gymnasium's ``check_env``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import simpy
from pydantic import BaseModel

from opar_sim.core.seeding import episode_seed, streams
from opar_sim.core.task import Task
from opar_sim.core.types import Action, ActionResult, Observation


class TaskCheckError(AssertionError):
    """A task broke its contract; the message says how."""


def _rollout(
    factory: Callable[[], Task], seed: int, steps: int, skill: float
) -> tuple[list[str], Task]:
    """Run a seeded mixed expert/wrong policy and return a signature per step."""
    task = factory()
    env = simpy.Environment()
    s = streams(episode_seed(seed, 0))
    obs = task.reset(env, s.task, s.tools)
    _check_observation(task, obs)
    policy = np.random.default_rng(seed)
    trace: list[str] = []
    for step in range(steps):
        expert = task.expert_action()
        wrong = list(task.wrong_actions())
        for action in [expert, *wrong]:
            _check_action(task, action)
        action = expert
        if wrong and policy.random() > skill:
            action = wrong[int(policy.integers(len(wrong)))]
        proc = env.process(task.execute(action))
        env.run(until=proc)
        result = proc.value
        if not isinstance(result, ActionResult):
            raise TaskCheckError(f"{task.name}: execute must return an ActionResult")
        if result.latency < 0:
            raise TaskCheckError(f"{task.name}: negative latency")
        obs = task.observe()
        _check_observation(task, obs)
        p = task.progress
        if not 0.0 <= p <= 1.0:
            raise TaskCheckError(f"{task.name}: progress {p} outside [0, 1] at step {step}")
        trace.append(f"{env.now:.9f}|{action.label()}|{result.ok}|{result.text}|{p:.9f}")
        if task.complete and skill >= 1.0:
            trace.append("complete")
            break
    return trace, task


def _check_observation(task: Task, obs: Observation) -> None:
    if not isinstance(obs, Observation):
        raise TaskCheckError(f"{task.name}: observe must return an Observation")
    if not 0.0 <= obs.visible_progress <= 1.0:
        raise TaskCheckError(f"{task.name}: visible progress {obs.visible_progress} not in [0, 1]")


def _check_action(task: Task, action: Action) -> None:
    spec = task.tools.get(action.tool)
    if spec is None:
        raise TaskCheckError(f"{task.name}: suggested action uses unknown tool {action.tool!r}")
    problem = spec.validate(action)
    if problem is not None:
        raise TaskCheckError(f"{task.name}: suggested action is invalid: {problem}")


def check_task(factory: Callable[[], Task], seed: int = 0, steps: int = 40) -> None:
    """Check a task's contract; raise TaskCheckError naming the first breach.

    Checks: typed tools with pydantic argument schemas, observations and
    progress in range, expert and wrong actions valid against the schemas, the
    expert alone completes a feasible task, and the same seed gives the same
    rollout, step for step.
    """
    task = factory()
    if not task.goal:
        raise TaskCheckError(f"{task.name}: empty goal")
    if not task.tools:
        raise TaskCheckError(f"{task.name}: no tools")
    for name, spec in task.tools.items():
        if spec.name != name or not issubclass(spec.args, BaseModel):
            raise TaskCheckError(f"{task.name}: tool {name!r} needs a pydantic argument schema")
    if not task.plan_template():
        raise TaskCheckError(f"{task.name}: empty plan template")
    for seed_i in range(seed, seed + 5):
        trace, done = _rollout(factory, seed_i, steps, skill=1.0)
        if done.feasible and trace[-1] != "complete":
            raise TaskCheckError(f"{task.name}: the expert did not complete seed {seed_i}")
    first, _ = _rollout(factory, seed, steps, skill=0.6)
    second, _ = _rollout(factory, seed, steps, skill=0.6)
    if first != second:
        at = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
        raise TaskCheckError(f"{task.name}: same seed, different rollout at step {at}")
