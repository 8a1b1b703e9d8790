"""Algorithm 1 of the OPAR document as one SimPy process per episode.

Each iteration runs Observe → Plan → Act → Reflect, every phase a
``yield from`` that lets simulated time pass.  The hard limits hold whatever
the controller says: at most ``max_steps`` iterations; the simulated clock
never passes ``time_budget`` (the episode is cut at the deadline); a step is
never started when its worst-case token spend would break ``token_budget``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import simpy

from opar_sim.core.agent import Agent, AgentAbort, ReportsEffectiveQuality
from opar_sim.core.controller import Controller, ReflectContext, Truth, TruthReader
from opar_sim.core.guardrail import Guardrail
from opar_sim.core.limits import Limits
from opar_sim.core.outcome import INVALID_FORMAT, MAX_STEPS, TERMINATED, Ending, judge
from opar_sim.core.seeding import Streams, streams
from opar_sim.core.supervisor import Supervisor
from opar_sim.core.task import Task, task_features
from opar_sim.core.types import (
    ActionResult,
    ControlSignal,
    Cost,
    Decision,
    EpisodeResult,
    Plan,
    StepRecord,
)

MAX_INVALID_IN_A_ROW = 3


def _drawn_quality(plan: Plan) -> float:
    """A plan's drawn quality (for agents that report no effective quality)."""
    return plan.quality


@dataclass(slots=True)
class _Run:
    steps: list[StepRecord]
    plan: Plan | None = None  # the plan in force (the truth probe reads its hidden quality)
    # the agent's report of a plan's effective quality, resolved once per episode (not per step)
    quality_of: Callable[[Plan], float] = _drawn_quality
    stop: str | None = None  # truncation reason
    error: str | None = None
    terminated: bool = False


def run_episode(
    task: Task,
    agent: Agent,
    controller: Controller,
    limits: Limits,
    seed: np.random.SeedSequence,
    *,
    episode: int = 0,
    supervisor: Supervisor | None = None,
    guardrail: Guardrail | None = None,
    trial: int = 1,
) -> EpisodeResult:
    """Run one episode to its outcome; never raises for anything the episode does.

    The episode runs in a fresh SimPy environment, cut at ``limits.time_budget``
    simulated seconds; an ``AgentAbort`` ends it as ``error:<reason>``.

    Args:
        task: The task, reset from the episode's ``task`` and ``tools`` streams.
        agent: The agent, reset from the ``agent`` stream.
        controller: The Reflect law deciding CONTINUE/REPLAN/TERMINATE; handed the
            truth probe if it is a ``TruthReader``.
        limits: The hard limits (steps, simulated time, tokens).
        seed: The episode's SeedSequence (see ``episode_seed``).
        episode: The episode number recorded on the result.
        supervisor: Convergence guards reviewing each decision, or None.
        guardrail: Reviews high-risk calls before they run, or None.
        trial: The repeated trial of this world (see ``seeding.streams``): the
            task stream is the same for every trial, the others fresh per trial.

    Returns:
        The outcome (judged from the ground truth), answer, cost and trajectory.
    """
    env = simpy.Environment()
    rngs, cost, run, probe = _start(env, task, agent, controller, seed, trial)
    if supervisor is not None:
        # guards draw (a human approver's errors) from a child of the controller stream
        supervisor.reset(rngs.controller.spawn(1)[0])
        supervisor.bind_truth(probe)
    proc = env.process(
        _opar(env, task, agent, controller, limits, cost, run, supervisor, guardrail)
    )
    try:
        env.run(until=proc | env.timeout(limits.time_budget))
    except AgentAbort as exc:  # e.g. an unreachable LLM backend: error:<reason>, no crash
        run.error = exc.reason
    if not proc.triggered:
        run.stop = "time"
    cost.sim_seconds = env.now
    return _finish(task, agent, controller, run, cost, episode, _entropy(seed))


def sub_episode(
    env: simpy.Environment,
    task: Task,
    agent: Agent,
    controller: Controller,
    limits: Limits,
    seed: np.random.SeedSequence,
    *,
    episode: int,
    name: str,
) -> Generator[simpy.Event, Any, EpisodeResult]:
    """Algorithm 3, line 11: a sub-agent's full OPAR episode inside the caller's world.

    A SimPy process in the same environment (same simulated clock); the caller
    blocks on it, or waits on several with ``AllOf`` when delegation is
    parallel.  Bounded by ``limits.max_steps`` and ``limits.token_budget``;
    the caller's own time budget bounds the whole.

    Args:
        env: The caller's environment, whose clock the sub-episode shares.
        task: The sub-task, reset from the ``task`` and ``tools`` streams of ``seed``.
        agent: The sub-agent, reset from the ``agent`` stream.
        controller: The sub-agent's Reflect law.
        limits: The sub-episode's step and token limits.
        seed: The sub-episode's SeedSequence.
        episode: The episode number recorded on the result.
        name: Recorded as the result's ``agent`` (which sub-agent this was).

    Returns:
        A SimPy process body whose value is the sub-episode's result; its
        ``cost.sim_seconds`` is the simulated time it took.
    """
    _, cost, run, _ = _start(env, task, agent, controller, seed)
    start = env.now
    yield env.process(_opar(env, task, agent, controller, limits, cost, run, None))
    cost.sim_seconds = env.now - start
    result = _finish(task, agent, controller, run, cost, episode, _entropy(seed))
    result.agent = name
    return result


def _opar(
    env: simpy.Environment,
    task: Task,
    agent: Agent,
    controller: Controller,
    limits: Limits,
    cost: Cost,
    run: _Run,
    supervisor: Supervisor | None,
    guardrail: Guardrail | None = None,
) -> Generator[simpy.Event, Any, None]:
    plan: Plan | None = None
    fresh = True
    critique = ""
    last_reflect: float | None = None
    plan_age = 0
    invalid_in_a_row = 0
    confidence = 0.0  # the agent's confidence at its last Reflect (guardrails read it)
    for t in range(1, limits.max_steps + 1):
        if cost.tokens + agent.max_step_tokens(fresh) > limits.token_budget:
            run.stop = "tokens"
            return
        # Observe
        obs = yield from agent.observe(env, task)
        # Plan: keep the plan on CONTINUE, make a new one (using the critique) on REPLAN
        if plan is not None and fresh:
            cost.replans += 1
        plan = yield from agent.plan(env, t, fresh, critique)
        run.plan = plan
        if fresh:
            plan_age = 0
        # Act
        choice = yield from agent.act(env, plan)
        # guardrails: a high-risk call is reviewed before it runs
        intercepted = None
        if guardrail is not None and choice.action is not None:
            intercepted = guardrail.review(task, choice.action, confidence)
        if choice.action is None:
            result = ActionResult(False, "output failed validation", 0.0, choice.error)
            invalid_in_a_row += 1
        elif intercepted is not None:
            invalid_in_a_row = 0
            result = ActionResult(False, f"intercepted: {intercepted}", 0.0, "intercepted")
        else:
            invalid_in_a_row = 0
            cost.tool_calls += 1
            result = yield from task.execute(choice.action)
        agent.absorb(result)
        # Reflect
        evaluation = yield from agent.evaluate(env, task, choice.action, result)
        confidence = evaluation.confidence
        plan_age += 1
        now = env.now
        ctx = ReflectContext(
            step=t,
            now=now,
            dt=0.0 if last_reflect is None else now - last_reflect,
            plan_age=plan_age,
            plan_exhausted=plan.exhausted,
            replans=cost.replans,
        )
        last_reflect = now
        effective = run.quality_of(plan)  # what the probe reads at this Reflect
        decision = controller.decide(evaluation, ctx)
        record = StepRecord(
            step=t,
            time=now,
            observation=obs,
            plan_id=plan.plan_id,
            plan_quality=plan.quality,
            action=choice.action,
            expert=choice.expert,
            result=result,
            evaluation=evaluation,
            decision=decision,
            progress=task.progress,
            tokens=cost.tokens,
            context_tokens=agent.context_tokens,
            answer=task.answer(),
            error=choice.error,
            memory=evaluation.memory_update,
            intercepted=intercepted,
            plan_age=ctx.plan_age,
            plan_exhausted=ctx.plan_exhausted,
            replans=ctx.replans,
            complete=task.complete,
            feasible=task.feasible,
            effective_quality=effective,
        )
        run.steps.append(record)
        if supervisor is not None:
            override = supervisor.review(record, decision)
            if override is not None:
                record.guard = override.reason
                if override.delay > 0:  # a human approver's review takes simulated time
                    yield env.timeout(override.delay)
                if override.truncate:
                    run.stop = override.reason
                    return
                if override.signal is not decision.signal:
                    decision = Decision(
                        override.signal, f"guard: {override.reason}", decision.terms
                    )  # a signal turned into TERMINATE by a guard claims completion
                    record.decision = decision
        if invalid_in_a_row >= MAX_INVALID_IN_A_ROW:
            run.error = INVALID_FORMAT.error
            return
        if decision.signal is ControlSignal.TERMINATE:
            run.terminated = True
            return
        fresh = decision.signal is ControlSignal.REPLAN
        critique = evaluation.critique
    run.stop = "max_steps"


def _start(
    env: simpy.Environment,
    task: Task,
    agent: Agent,
    controller: Controller,
    seed: np.random.SeedSequence,
    trial: int = 1,
) -> tuple[Streams, Cost, _Run, _Probe]:
    """Reset the episode's parts from its streams, in a fixed order; bind the truth probe."""
    rngs = streams(seed, trial)
    task.reset(env, rngs.task, rngs.tools)
    cost = Cost()
    agent.reset(task, rngs.agent, cost)
    controller.reset()
    run = _Run([], quality_of=_quality_reader(agent))
    probe = _Probe(task, run, agent)
    if implements(controller, TruthReader):  # only a law declared to read the hidden state
        cast(TruthReader, controller).bind_truth(probe)
    return rngs, cost, run, probe


class _Probe:
    """The truth probe of one episode: the hidden state now, for what declares it needs it."""

    __slots__ = ("agent", "run", "task")

    def __init__(self, task: Task, run: _Run, agent: Agent) -> None:
        self.task = task
        self.run = run
        self.agent = agent

    def __call__(self) -> Truth:
        task, plan = self.task, self.run.plan
        if plan is None:
            return Truth(task.progress, task.complete, task.feasible, 0.0, 0.0)
        quality = self.run.quality_of(plan)
        return Truth(task.progress, task.complete, task.feasible, plan.quality, quality)


def _effective_quality(agent: Agent, plan: Plan) -> float:
    """The plan's effective quality as the agent reports it; its drawn quality if it cannot."""
    return _quality_reader(agent)(plan)


def _quality_reader(agent: Agent) -> Callable[[Plan], float]:
    """How to read a plan's effective quality from ``agent`` (checked once per episode)."""
    if implements(agent, ReportsEffectiveQuality):
        return cast(ReportsEffectiveQuality, agent).effective_quality
    return _drawn_quality


_IMPLEMENTS: dict[tuple[type, type], bool] = {}


def implements(part: object, protocol: Any) -> bool:
    """``isinstance(part, protocol)`` for a runtime protocol, answered once per class.

    A protocol check walks the protocol's members (about 10 µs); the episode's parts
    are checked every episode, and their classes do not change.  The answer is kept
    only when the class alone gives it (not members set on the instance).

    Args:
        part: The episode's agent, controller or task.
        protocol: A ``runtime_checkable`` protocol.

    Returns:
        Whether ``part`` implements ``protocol``.
    """
    key = (type(part), protocol)
    known = _IMPLEMENTS.get(key)
    if known is None:
        known = isinstance(part, protocol)
        with contextlib.suppress(TypeError):  # a protocol with data members: not cached
            if known == issubclass(type(part), protocol):
                _IMPLEMENTS[key] = known
    return known


def _finish(
    task: Task,
    agent: Agent,
    controller: Controller,
    run: _Run,
    cost: Cost,
    episode: int,
    seed: int,
) -> EpisodeResult:
    final = run.steps[-1].decision if run.steps else None
    outcome = judge(_ending(run), task.complete, final is not None and final.give_up, task.feasible)
    best = _best_step(run)
    answer = run.steps[best - 1].answer if best is not None else task.answer()
    # a nested task (Algorithm 3) hands over its sub-agents' episodes
    subs: list[EpisodeResult] = list(task.sub_episodes)
    return EpisodeResult(
        episode=episode,
        seed=seed,
        task=task.name,
        agent=agent.name,
        controller=controller.name,
        outcome=outcome,
        answer=answer,
        final_progress=task.progress,
        complete=task.complete,
        cost=cost,
        steps=run.steps,
        best_step=best,
        sub_episodes=subs,
        feasible=task.feasible,
        task_features=task_features(task),
    )


def _ending(run: _Run) -> Ending:
    """How the episode stopped: TERMINATE, an error, or a truncation (``max_steps`` if unsaid)."""
    if run.terminated:
        return TERMINATED
    if run.error is not None:
        return Ending(error=run.error)
    return Ending(truncated=run.stop or MAX_STEPS.truncated)


def _best_step(run: _Run) -> int | None:
    """The step whose answer is returned: the last on TERMINATE, else best-of-history.

    Best-of-history ranks steps by the agent's own estimate δ_task (it cannot
    see the truth), the later step winning ties.
    """
    if not run.steps:
        return None
    if run.terminated:
        return run.steps[-1].step
    best = max(
        run.steps,
        key=lambda r: (r.evaluation.delta_task if r.evaluation else -1.0, r.step),
    )
    return best.step


def _entropy(seed: np.random.SeedSequence) -> int:
    """The run seed an episode's SeedSequence was made from."""
    entropy = seed.entropy
    return entropy if isinstance(entropy, int) else 0
