"""The simulated agent: a seeded noisy expert (docs/design.md §3).

Each plan has a hidden quality q ~ Beta(α, β): the chance that a step of the
plan is the task's expert action (otherwise a plausible wrong one).  A REPLAN
draws a new q, shifted up by ``critique_gain`` only when the evaluation behind
the critique was right, and it pays a full plan's tokens and time; continuing
pays a short prompt.  Quality falls as the context grows past
``context_knee`` tokens.  The agent's self-assessment of progress is the
progress it can infer from its observations, plus a bias (over-confidence)
and Gaussian noise.

Memory: past ``context_max`` tokens (C_max) the Reflect phase
summarises all but the last ``keep_steps`` steps into one memory entry of
``memory_tokens`` (Algorithm 2, step 2.5).  The summary loses detail: from
the first one on, plan quality is scaled by 1 − ``memory_quality_loss`` and
self-assessment noise grows by ``memory_noise``.  Across episodes,
``remember`` carries critiques of failed attempts (Reflexion): each raises
fresh plans' quality by ``reflexion_gain``.

Task heterogeneity (opt-in, off by default): tasks differ in difficulty.  A
world gets a latent shift u = ``task_effect_mean`` + ``task_effect_slope`` · x
+ ``task_effect_sd`` · z on the logit of every plan's quality, where x is the
world's known feature ``task_feature`` (e.g. its number of write actions, from
the task's ``features``) and z ~ N(0, 1) is drawn from a stream derived from
the world's task stream: every trial of a world shares u, as every attempt of
one real task shares its difficulty.  With the three knobs at 0 the agent
draws nothing more and behaves exactly as without them.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from opar_sim.agents.context import Context
from opar_sim.agents.expert_model import (
    DONE_CLAIM,
    PRODUCTIVE_MARGIN,
    RESULT_TOKEN_CAP,
    WORLD_CHANGE_DRIFT,
    SimulatedAgentParams,
    call_seconds,
    clip_quality,
    context_quality,
    drift_after,
    result_tokens,
    sense,
    shifted,
    step_token_bound,
)
from opar_sim.core.agent import ActChoice
from opar_sim.core.clock import advance
from opar_sim.core.seeding import derived
from opar_sim.core.task import Task, innermost, task_features
from opar_sim.core.types import Action, ActionResult, Cost, Evaluation, Observation, Plan

ATTEMPT_STREAM = 0x41  # the key tag of a Reflexion attempt's agent stream ("A")
DIFFICULTY_STREAM = 0x44  # the key tag of a world's difficulty, derived from its task stream ("D")

__all__ = [
    "RESULT_TOKEN_CAP",
    "SimulatedAgent",
    "SimulatedAgentParams",
    "shifted",
    "world_shift",
]


class SimulatedAgent:
    """A noisy expert: follows the task's expert with the current plan's quality."""

    name = "simulated"

    def __init__(self, params: SimulatedAgentParams | None = None, **overrides: Any) -> None:
        """Build the agent.

        Args:
            params: The agent's knobs; defaults to ``SimulatedAgentParams()``.
            **overrides: Knobs replacing those of ``params``; their values are validated.

        Raises:
            pydantic.ValidationError: If an override's value is out of range.
        """
        base = params or SimulatedAgentParams()
        self.params = base.model_copy(update=overrides) if overrides else base
        if overrides:
            self.params = SimulatedAgentParams.model_validate(self.params.model_dump())
        self.context = Context()
        self.cost = Cost()
        self.rng = np.random.default_rng(0)
        self._task: Task | None = None
        self._plans = 0
        self._visible = 0.0
        self._drift = 0.0
        self._critique_right = False
        self._current: Plan | None = None
        self._compressions = 0
        self._lessons: tuple[str, ...] = ()
        self._attempt = 1
        self._shift = 0.0

    # -- long-term memory (Reflexion) ----------------------------------------------
    def remember(self, critiques: tuple[str, ...], attempt: int) -> None:
        """Carry critiques of failed attempts into the next episodes (Reflexion).

        Every fresh plan's quality rises by ``reflexion_gain`` per critique.
        ``attempt`` > 1 gives the agent a stream of its own for that attempt
        (derived, so the task's streams stay those of the seeded task).
        """
        self._lessons = tuple(critiques)
        self._attempt = attempt

    # -- bookkeeping -------------------------------------------------------------
    def reset(self, task: Task, rng: np.random.Generator, cost: Cost) -> None:
        """Start an episode: context of system prompt and goal, no plan, no summaries.

        A Reflexion attempt after the first draws from a stream derived from
        ``rng``; the remembered critiques are kept.
        """
        self._task = task
        self.rng = rng if self._attempt <= 1 else derived(rng, ATTEMPT_STREAM, self._attempt)
        self.cost = cost
        self.context = Context()
        self.context.append("system", self.params.system_tokens)
        self.context.append("goal", max(1, len(task.goal) // 4))
        self._plans = 0
        self._visible = 0.0
        self._drift = 0.0
        self._critique_right = False
        self._current = None
        self._compressions = 0
        self._shift = world_shift(self.params, task) if self.params.heterogeneous else 0.0

    @property
    def context_tokens(self) -> int:
        """The tokens in the simulated context window (after any compression)."""
        return self.context.tokens

    def _llm_call(self, completion: int) -> float:
        """Spend one model call; return its simulated duration in seconds."""
        prompt = self.context.tokens
        self.cost.prompt_tokens += prompt
        self.cost.completion_tokens += completion
        self.cost.llm_calls += 1
        return call_seconds(prompt, completion, self.params)

    def max_step_tokens(self, fresh_plan: bool) -> int:
        """Worst case of a step's calls (plan, act with a retry, evaluate, a summary if on)."""
        return step_token_bound(self.context.tokens, fresh_plan, self.params)

    def effective_quality(self, plan: Plan) -> float:
        """The chance the next step under ``plan`` is the expert's, with the context as it is now.

        The plan's drawn quality, scaled by 1 − ``memory_quality_loss`` once memory
        was summarised, then by 1 − ``context_decay`` · (tokens − knee) / knee past
        ``context_knee`` tokens, floored at ``quality_floor`` (the truth probe reads it).

        Args:
            plan: The plan in force.

        Returns:
            The effective quality in [0, 1].
        """
        return self._quality(plan)

    def _quality(self, plan: Plan) -> float:
        p = self.params
        quality = plan.quality
        if self._compressions:  # details lost to the summary (re-summarising does not compound)
            quality *= 1.0 - p.memory_quality_loss
        return context_quality(quality, self.context.tokens, p)

    # -- the four phases -----------------------------------------------------------
    def observe(
        self, env: simpy.Environment, task: Task
    ) -> Generator[simpy.Event, Any, Observation]:
        """Read the task's observation into the context; a visible world change raises drift."""
        delay = self.params.observe_seconds
        if not advance(env, delay):
            yield env.timeout(delay)
        self.context.begin_step()
        obs = task.observe()
        self.context.append("observation", obs.tokens)
        if obs.world_changed:
            self._drift = max(self._drift, WORLD_CHANGE_DRIFT)
        return obs

    def plan(
        self, env: simpy.Environment, step: int, fresh: bool, critique: str
    ) -> Generator[simpy.Event, Any, Plan]:
        """Continue the plan for a short prompt, or draw a fresh one's quality q ~ Beta(α, β).

        A fresh plan's q rises by ``critique_gain`` when the last evaluation was
        right and by ``reflexion_gain`` per remembered critique; it pays a full plan.
        """
        p = self.params
        assert self._task is not None, "reset() first"
        if not fresh and self._current is not None:
            delay = self._llm_call(p.continue_tokens)
            if not advance(env, delay):
                yield env.timeout(delay)
            self.context.append("plan", p.continue_tokens)
            return self._current
        quality = float(self.rng.beta(p.plan_alpha, p.plan_beta))
        if self._shift:
            quality = shifted(quality, self._shift)
        if self._plans > 0 and self._critique_right:
            quality += p.critique_gain
        if self._lessons:
            quality += p.reflexion_gain * len(self._lessons)
        quality = clip_quality(quality)
        delay = self._llm_call(p.plan_tokens)
        if not advance(env, delay):
            yield env.timeout(delay)
        self.context.append("plan", p.plan_tokens)
        self._plans += 1
        self._drift = 0.0
        self._current = Plan(self._plans, self._task.plan_template(), quality, step, critique)
        return self._current

    def act(self, env: simpy.Environment, plan: Plan) -> Generator[simpy.Event, Any, ActChoice]:
        """Take the expert's action with the plan's effective quality, else a wrong one.

        Output fails format validation at ``invalid_format_rate``, with one retry.
        """
        p = self.params
        task = self._task
        assert task is not None, "reset() first"
        delay = self._llm_call(p.act_tokens)
        if not advance(env, delay):
            yield env.timeout(delay)
        self.context.append("action", p.act_tokens)
        plan.cursor += 1
        rng = self.rng
        if rng.random() < p.invalid_format_rate:
            # one retry with the validation error in the prompt, as with a real model
            delay = self._llm_call(p.act_tokens)
            if not advance(env, delay):
                yield env.timeout(delay)
            self.context.append("action", p.act_tokens)
            if rng.random() < p.invalid_format_rate:
                return ActChoice(None, False, "invalid_format")
        if rng.random() < self._quality(plan):
            return ActChoice(task.expert_action(), True)
        wrong = task.wrong_actions()
        if not wrong:
            return ActChoice(task.expert_action(), True)
        return ActChoice(wrong[int(rng.integers(len(wrong)))], False)

    def absorb(self, result: ActionResult) -> None:
        """Add the result to the context, truncated to ``RESULT_TOKEN_CAP`` tokens."""
        self.context.append("result", result_tokens(result.tokens))

    def evaluate(
        self, env: simpy.Environment, task: Task, action: Action | None, result: ActionResult
    ) -> Generator[simpy.Event, Any, Evaluation]:
        """Assess from what is visible: δ_task with bias and noise, δ_act, drift, confidence.

        Past ``context_max`` tokens it also compresses the older steps (step 2.5).
        """
        p = self.params
        rng = self.rng
        delay = self._llm_call(p.eval_tokens)
        if not advance(env, delay):
            yield env.timeout(delay)
        self.context.append("reflection", p.eval_tokens)
        visible = task.observe().visible_progress
        productive = visible > self._visible + PRODUCTIVE_MARGIN
        self._visible = visible
        self._drift = drift_after(self._drift, productive)
        noises = rng.standard_normal(3).tolist()
        sigma = p.noise + (p.memory_noise if self._compressions else 0.0)
        delta_task, delta_act, delta_plan, confidence = sense(
            visible, self._drift, result.ok, productive, noises, sigma, p
        )
        self._critique_right = abs(delta_task - task.progress) <= p.critique_tolerance
        if result.ok:
            critique = "progress" if productive else "no progress"
        else:
            critique = f"failed: {result.error}"
        missing = () if delta_task >= DONE_CLAIM else ("remaining goal",)
        memory = None
        if p.context_max is not None and self.context.tokens > p.context_max:
            memory = yield from self._compress(env)
        return Evaluation(delta_task, delta_act, delta_plan, confidence, critique, missing, memory)

    def _compress(self, env: simpy.Environment) -> Generator[simpy.Event, Any, str | None]:
        """Algorithm 2, step 2.5: summarise the older steps into one memory entry."""
        p = self.params
        delay = self._llm_call(p.memory_tokens)
        if not advance(env, delay):
            yield env.timeout(delay)
        before, after, folded = self.context.compress(p.keep_steps, p.memory_tokens)
        if not folded:
            return None
        self._compressions += 1
        return f"summarised {folded} steps: {before}->{after} tokens"


def _world_stream(task: Task) -> np.random.Generator:
    rng = getattr(innermost(task), "rng", None)
    if not isinstance(rng, np.random.Generator):
        raise ValueError("task heterogeneity needs a task with a world stream (a SimTask's rng)")
    return rng


def world_shift(params: SimulatedAgentParams, task: Task) -> float:
    """The world's latent shift u of the logit of plan quality (see the module docstring).

    Args:
        params: The agent's knobs (``task_effect_*`` and ``task_feature``).
        task: The task, already reset to the episode's world.

    Returns:
        ``task_effect_mean`` + ``task_effect_slope`` · feature + ``task_effect_sd`` · z, with z
        drawn from a stream derived from the world's task stream (the same in every trial).
    """
    x = float((task_features(task) or {}).get(params.task_feature, 0.0))
    shift = params.task_effect_mean + params.task_effect_slope * x
    if params.task_effect_sd:
        z = float(derived(_world_stream(task), DIFFICULTY_STREAM).standard_normal())
        shift += params.task_effect_sd * z
    return shift
