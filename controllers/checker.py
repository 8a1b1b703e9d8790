"""A shipped conformance checker for controllers, in the spirit of Gymnasium's ``check_env``.

It drives a controller the way the loop does — episodes of Reflects with a
seeded mix of evaluations (progress that climbs, stalls and falls back; failed
and productive actions; zero and irregular dt; feasible and infeasible truth),
``plan_age`` restarting after each REPLAN, ``reset()`` between episodes — and
checks the contract the loop and the run files rely on.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from opar_sim.core.controller import Controller, ReflectContext, Truth, TruthReader
from opar_sim.core.types import ControlSignal, Decision, Evaluation

Trace = list[tuple[str, str, tuple[tuple[str, float], ...]]]


class ControllerCheckError(AssertionError):
    """A controller broke its contract; the message says how."""


def _evaluation(rng: np.random.Generator, progress: float) -> Evaluation:
    """A noisy, sometimes wrong self-assessment of ``progress``, like the simulated agent's."""
    delta_task = float(np.clip(progress + rng.normal(0.03, 0.12), 0.0, 1.0))
    if rng.random() < 0.05:
        delta_task = float(rng.choice([0.0, 1.0]))  # the extremes happen
    delta_act = float(np.clip(rng.choice([0.1, 0.6, 1.0]) + rng.normal(0.0, 0.05), 0.0, 1.0))
    delta_plan = float(rng.random())
    confidence = float(np.clip(delta_task * (1.0 - 0.3 * delta_plan), 0.0, 1.0))
    missing = () if delta_task >= 0.999 else ("remaining goal",)
    return Evaluation(delta_task, delta_act, delta_plan, confidence, "critique", missing)


def _episode(controller: Controller, rng: np.random.Generator, steps: int) -> Trace:
    """One episode of Reflects; returns (signal, reason, terms) per step."""
    feasible = rng.random() > 0.2
    quality = float(rng.random())
    progress, now, plan_age, replans = 0.0, 0.0, 0, 0
    trace: Trace = []
    state: dict[str, Truth] = {}
    if isinstance(controller, TruthReader):  # a law declared to read the hidden state
        controller.bind_truth(lambda: state["truth"])
    for step in range(1, steps + 1):
        dt = 0.0 if step == 1 or rng.random() < 0.1 else float(rng.exponential(10.0))
        now += dt
        if feasible:
            move = 0.1 if rng.random() < quality else -0.05 * float(rng.random() < 0.3)
            progress = min(1.0, max(0.0, progress + move))
        else:
            progress = min(0.3, progress + 0.1 * float(rng.random() < 0.5))
        plan_age += 1
        state["truth"] = Truth(progress, progress >= 1.0, feasible, quality)
        ctx = ReflectContext(step, now, dt, plan_age, plan_age >= 5, replans)
        decision = controller.decide(_evaluation(rng, progress), ctx)
        _check_decision(controller, decision, step)
        trace.append((decision.signal.value, decision.reason, tuple(decision.terms.items())))
        if decision.signal is ControlSignal.TERMINATE:
            break
        if decision.signal is ControlSignal.REPLAN:
            plan_age, replans, quality = 0, replans + 1, float(rng.random())
    return trace


def _check_decision(controller: Controller, decision: object, step: int) -> None:
    who = f"{controller.name} at step {step}"
    if not isinstance(decision, Decision):
        raise ControllerCheckError(f"{who}: decide must return a Decision, got {decision!r}")
    if not isinstance(decision.signal, ControlSignal):
        raise ControllerCheckError(f"{who}: signal {decision.signal!r} is not a ControlSignal")
    if not isinstance(decision.reason, str) or not decision.reason.strip():
        raise ControllerCheckError(f"{who}: every decision needs a reason")
    if not isinstance(decision.give_up, bool):
        raise ControllerCheckError(f"{who}: give_up must be a bool, got {decision.give_up!r}")
    if decision.give_up and decision.signal is not ControlSignal.TERMINATE:
        raise ControllerCheckError(f"{who}: only a TERMINATE can give up")
    if not isinstance(decision.terms, dict):
        raise ControllerCheckError(f"{who}: terms must be a dict of name → number")
    for key, value in decision.terms.items():
        if not isinstance(key, str) or not isinstance(value, int | float):
            raise ControllerCheckError(f"{who}: term {key!r} = {value!r} is not a named number")
        if not math.isfinite(value):
            raise ControllerCheckError(f"{who}: term {key!r} = {value} is not finite")


def _run(controller: Controller, seed: int, episodes: int, steps: int, reset_first: bool) -> Trace:
    rng = np.random.default_rng(seed)
    trace: Trace = []
    for episode in range(episodes):
        if reset_first or episode > 0:
            controller.reset()
        trace.extend(_episode(controller, rng, steps))
        trace.append(("end", "", ()))
    return trace


def check_controller(
    factory: Callable[[], Controller],
    name: str | None = None,
    *,
    seed: int = 0,
    episodes: int = 12,
    steps: int = 25,
) -> None:
    """Check a controller's contract; raise ControllerCheckError naming the first breach.

    Checks: it has a ``name`` (equal to ``name`` when given), ``reset`` and
    ``decide``; every decision is a ``Decision`` with a ``ControlSignal``, a
    non-empty reason and finite named terms; ``reset()`` restores the
    behaviour of a freshly built controller; and the same inputs give the
    same outputs, on the same instance and on a new one.
    """
    controller = factory()
    if not isinstance(controller, Controller):
        raise ControllerCheckError(f"{controller!r} lacks name, reset() or decide()")
    if not isinstance(controller.name, str) or not controller.name:
        raise ControllerCheckError(f"{controller!r}: name must be a non-empty string")
    if name is not None and controller.name != name:
        raise ControllerCheckError(f"registered as {name!r} but named {controller.name!r}")
    fresh = _run(controller, seed, episodes, steps, reset_first=False)
    again = _run(controller, seed, episodes, steps, reset_first=True)
    if fresh != again:
        at = next(i for i, (a, b) in enumerate(zip(fresh, again, strict=False)) if a != b)
        raise ControllerCheckError(
            f"{controller.name}: reset() does not restore the initial behaviour (Reflect {at})"
        )
    other = _run(factory(), seed, episodes, steps, reset_first=False)
    if fresh != other:
        raise ControllerCheckError(f"{controller.name}: same inputs, different decisions")
    signals = {signal for signal, _, _ in fresh}
    if not signals & {s.value for s in ControlSignal}:
        raise ControllerCheckError(f"{controller.name}: made no decisions")
