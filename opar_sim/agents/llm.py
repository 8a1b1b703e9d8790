"""The LLM agent: Plan, Act and Evaluate are prompts to a language model.

Observe reads the task's observation into the prompt (no model call).  Plan
asks for a conditional plan (steps with conditions and fallbacks), Act for
one tool call validated against the task's tools (an unknown tool or bad
arguments is an invalid action and is never executed), Evaluate for the
ReAct self-reflection (confidence, sufficient, missing, next action) plus
δ_task, δ_act, δ_plan and a critique.  Simulated time advances by each
call's token counts at the backend's configured speed (``GenerationSpeed``),
so the same seed gives the same simulated seconds on any machine; the
measured wall time is recorded beside it (``clock = "measured"`` uses the
backend's reported durations instead).

On REPLAN the model is asked for a new plan, shown the plan it replaces and
the critique.  Cost management follows the OPAR document (§8.2): a light
``backend`` plans and acts, a stronger ``evaluator`` reflects, and an
episode's first plan is cached on (goal, observation, recent history), so an
identical situation with no critique does not pay twice; a REPLAN never reads
the cache.  Every model call is logged (``drain_calls``) for the run's
``calls.jsonl``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import simpy
from pydantic import BaseModel, ConfigDict, Field

from opar_sim.agents.context import Context
from opar_sim.core.agent import ActChoice, AgentAbort
from opar_sim.core.llm import JsonSchema, LLMBackend, LLMError, Message, Reply, T
from opar_sim.core.task import Task
from opar_sim.core.types import Action, ActionResult, Cost, Evaluation, Observation, Plan, PlanStep
from opar_sim.llm import prompts
from opar_sim.llm.config import GenerationSpeed
from opar_sim.llm.schemas import (
    EvaluationOut,
    PlanOut,
    ToolCallOut,
    action_schema,
    evaluation_schema,
    plan_schema,
)

RESULT_CHARS = 240  # tool results are cut to this many characters in the prompt


@dataclass(frozen=True, slots=True)
class LLMProgress:
    """Where an LLM episode is, after each phase: for a live progress line."""

    episode_step: int
    phase: str  # plan, act or evaluate
    tokens: int  # spent in the episode so far
    last: str  # the last action and its result (or why it was invalid)
    cache_hit: bool = False


ProgressListener = Callable[[LLMProgress], None]
_LISTENERS: list[ProgressListener] = []


@contextmanager
def progress_listener(listener: ProgressListener) -> Iterator[None]:
    """Call ``listener`` after every phase of every LLM agent in this process, while open.

    Episodes run in worker processes report nothing here: a live view needs
    the serial executor (``--workers 1``, the default for LLM runs).
    """
    _LISTENERS.append(listener)
    try:
        yield
    finally:
        _LISTENERS.remove(listener)


class LLMAgentParams(BaseModel):
    """Knobs of the LLM agent (``[agent.params]`` of a spec with ``kind = "llm"``)."""

    model_config = ConfigDict(extra="forbid")

    history_steps: int = Field(6, ge=0, description="past steps shown in each prompt")
    max_plan_steps: int = Field(5, ge=1, le=12)
    plan_cache: bool = Field(
        True, description="reuse the first plan of an identical situation (never on REPLAN)"
    )
    observe_seconds: float = Field(0.0, ge=0, description="simulated seconds to observe")
    clock: Literal["tokens", "measured"] = Field(
        "tokens",
        description="simulated time of a model call: from its tokens at the backend's "
        "tokens_per_second (deterministic), or the backend's measured duration",
    )


class LLMAgent:
    """An agent whose decisions come from LLM backends (Ollama or embedded llama.cpp)."""

    name = "llm"

    def __init__(
        self,
        backend: LLMBackend,
        evaluator: LLMBackend | None = None,
        params: LLMAgentParams | None = None,
        speed: GenerationSpeed | None = None,
        evaluator_speed: GenerationSpeed | None = None,
    ) -> None:
        """Build the agent.

        Args:
            backend: The model that plans and acts (the light one, OPAR §8.2).
            evaluator: The model that reflects; defaults to ``backend``.
            params: The agent's knobs; defaults to ``LLMAgentParams()``.
            speed: The simulated speed of ``backend``; defaults to ``GenerationSpeed()``.
            evaluator_speed: The simulated speed of ``evaluator``; defaults to ``speed``.
        """
        self.backend = backend
        self.evaluator = evaluator or backend
        self.params = params or LLMAgentParams()
        self.speed = speed or GenerationSpeed()
        self.evaluator_speed = evaluator_speed or self.speed
        self.context = Context()
        self.cost = Cost()
        self.plan_cache: dict[tuple[str, ...], tuple[PlanStep, ...]] = {}
        self.cache_hits = 0
        self._calls: list[dict[str, Any]] = []
        self._reset_episode()

    def _reset_episode(self) -> None:
        self._history: list[str] = []
        self._plan: Plan | None = None
        self._plans = 0
        self._obs = Observation("", 0.0)
        self._step = 0
        self._seed = 0
        self._n_calls = 0
        self._prompt_tokens = 0
        self._last_eval: Evaluation | None = None
        self._last_step = ""
        self._cached = False
        self._expert_hits: dict[int, tuple[int, int]] = {}

    # -- bookkeeping ---------------------------------------------------------------
    def reset(self, task: Task, rng: np.random.Generator, cost: Cost) -> None:
        """Start an episode: a fresh context with the system prompt, the task's output schemas.

        The model calls' seeds derive from one draw of ``rng``; the plan cache and
        the call log survive across episodes.
        """
        self._task = task
        self.cost = cost
        cost.wall_seconds = 0.0  # the measured model time, recorded beside the simulated
        self._reset_episode()
        self._seed = int(rng.integers(0, 2**31 - 1))
        self._system = prompts.system_prompt(task.goal, task.tools)
        self.context = Context()
        self.context.append("system", prompts.estimate_tokens([self._system]))
        self._schemas = (
            plan_schema(task.tools, self.params.max_plan_steps),
            action_schema(task.tools),
            evaluation_schema(task.tools),
        )

    @property
    def context_tokens(self) -> int:
        """The prompt size of the last model call (the context the model really read)."""
        return self._prompt_tokens or self.context.tokens

    def max_step_tokens(self, fresh_plan: bool) -> int:
        """Worst case of a step: 2 or 3 calls (with a plan), each retried once, at full length."""
        calls = 3 if fresh_plan else 2
        prompt = max(self._prompt_tokens, self.context.tokens) + 400
        completion = max(_limit(self.backend), _limit(self.evaluator))
        return 2 * calls * (prompt + completion)  # each call may be retried once

    def drain_calls(self) -> list[dict[str, Any]]:
        """The model calls logged since the last drain (one dict per call)."""
        calls, self._calls = self._calls, []
        return calls

    def _call(
        self,
        env: simpy.Environment,
        backend: LLMBackend,
        phase: str,
        messages: Sequence[Message],
        schema: type[T],
        json_schema: JsonSchema,
    ) -> Generator[simpy.Event, Any, Reply[T]]:
        speed = self.evaluator_speed if phase == "evaluate" else self.speed
        seed = self._seed + 2 * self._n_calls
        self._n_calls += 1
        row: dict[str, Any] = {"step": self._step, "phase": phase, "backend": backend.name}
        row["model"] = backend.model
        try:
            reply = backend.chat(messages, schema, json_schema=json_schema, seed=seed)
        except LLMError as exc:
            self._calls.append(row | {"error": exc.reason, "message": str(exc), "attempts": 0})
            raise AgentAbort(exc.reason, str(exc)) from None
        c = self.cost
        c.prompt_tokens += reply.prompt_tokens
        c.completion_tokens += reply.completion_tokens
        c.llm_calls += len(reply.attempts)
        c.wall_seconds = (c.wall_seconds or 0.0) + reply.wall_seconds
        if self.params.clock == "tokens":
            seconds = speed.seconds(reply.prompt_tokens, reply.completion_tokens)
        else:
            seconds = reply.model_seconds
        if reply.attempts:
            self._prompt_tokens = reply.attempts[-1].prompt_tokens
        row |= {
            "attempts": len(reply.attempts),
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "sim_seconds": seconds,
            "model_seconds": reply.model_seconds,
            "wall_seconds": reply.wall_seconds,
            "done_reason": reply.attempts[-1].done_reason if reply.attempts else None,
            "error": None if reply.value is not None else "invalid_format",
            "problem": reply.error,
        }
        self._calls.append(row)
        yield env.timeout(seconds)
        return reply

    # -- the four phases -----------------------------------------------------------
    def observe(
        self, env: simpy.Environment, task: Task
    ) -> Generator[simpy.Event, Any, Observation]:
        """Read the task's observation into the prompt; no model call, ``observe_seconds`` long."""
        yield env.timeout(self.params.observe_seconds)
        self._step += 1
        obs = task.observe()
        self._obs = obs
        self.context.append("observation", obs.tokens or len(obs.text) // 4)
        return obs

    def plan(
        self, env: simpy.Environment, step: int, fresh: bool, critique: str
    ) -> Generator[simpy.Event, Any, Plan]:
        """Keep the plan on CONTINUE; on REPLAN ask the model for a new one, with the critique.

        The cache serves only the episode's first plan in an identical situation
        (goal, observation and recent history) with no critique: a REPLAN always
        asks the model, showing it the plan it replaces.  An invalid reply keeps
        acting on the old plan's steps rather than stopping.
        """
        if not fresh and self._plan is not None:
            return self._plan  # CONTINUE keeps the plan and costs nothing
        previous = self._plan
        cacheable = self.params.plan_cache and previous is None and not critique
        key = (self._task.goal, self._obs.text, *self._recent())
        steps = self.plan_cache.get(key) if cacheable else None
        self._cached = steps is not None
        if steps is not None:
            self.cache_hits += 1
            self._calls.append({"step": self._step, "phase": "plan", "cache_hit": True})
        else:
            msgs = prompts.plan_messages(
                self._system,
                self._recent(),
                self._obs,
                critique,
                self.params.max_plan_steps,
                previous=previous,
            )
            reply = yield from self._call(
                env, self.backend, "plan", msgs, PlanOut, self._schemas[0]
            )
            if reply.value is not None:
                steps = tuple(
                    PlanStep(s.tool, s.description, s.condition or None, s.fallback or None)
                    for s in reply.value.steps[: self.params.max_plan_steps]
                )
                if cacheable:
                    self.plan_cache[key] = steps
                self.context.append("plan", reply.completion_tokens)
            else:  # keep acting on the old plan (or none) rather than stopping
                steps = self._plan.steps if self._plan is not None else ()
        self._plans += 1
        self._plan = Plan(self._plans, steps, 0.5, step, critique)
        self._progress("plan", cache_hit=self._cached)
        return self._plan

    def act(self, env: simpy.Environment, plan: Plan) -> Generator[simpy.Event, Any, ActChoice]:
        """Ask the model for one tool call and validate it against the task's tools.

        An unknown tool or bad arguments is an invalid action, never executed.  The
        plan's hidden quality is updated to its share of expert actions so far.
        """
        task = self._task
        msgs = prompts.act_messages(self._system, self._recent(), self._obs, plan)
        reply = yield from self._call(env, self.backend, "act", msgs, ToolCallOut, self._schemas[1])
        plan.cursor += 1
        self.context.append("action", reply.completion_tokens)
        if reply.value is None:
            self._last_step = f"invalid output: {reply.error}"
            self._progress("act")
            return ActChoice(None, False, "invalid_format")
        call = reply.value
        spec = task.tools.get(call.tool)
        problem = f"unknown tool {call.tool!r}" if spec is None else None
        action = Action.of(call.tool, **call.args)
        if spec is not None:
            problem = spec.validate(action)
        if spec is None or problem is not None:
            self._last_step = f"invalid action {action.label()}: {problem}"
            self._calls[-1]["error"] = "invalid_action"
            self._progress("act")
            return ActChoice(None, False, "invalid_action")
        action = Action.of(call.tool, **spec.args.model_validate(call.args).model_dump())
        expert = action == task.expert_action()
        hits, n = self._expert_hits.get(plan.plan_id, (0, 0))
        hits, n = hits + expert, n + 1
        self._expert_hits[plan.plan_id] = (hits, n)
        plan.quality = (hits + 1) / (n + 2)  # the share of expert actions, Laplace-smoothed
        self._last_step = action.label()
        self._progress("act")
        return ActChoice(action, expert)

    def absorb(self, result: ActionResult) -> None:
        """Add the tool result, cut to ``RESULT_CHARS``, to the history the prompts show."""
        text = result.text if len(result.text) <= RESULT_CHARS else result.text[:RESULT_CHARS]
        status = "ok" if result.ok else f"failed ({result.error})"
        self._last_step = f"{self._last_step} -> {status}: {text}"
        self._history.append(f"step {self._step}: {self._last_step}")
        self.context.append("result", result.tokens or len(text) // 4)

    def evaluate(
        self, env: simpy.Environment, task: Task, action: Action | None, result: ActionResult
    ) -> Generator[simpy.Event, Any, Evaluation]:
        """Ask the evaluator for the ReAct self-reflection and the δ signals.

        An invalid reply is a sensor dropout: the last reading is held and the
        critique says the evaluation failed.
        """
        obs = task.observe()
        msgs = prompts.evaluate_messages(self._system, self._recent(), obs, self._last_step)
        reply = yield from self._call(
            env, self.evaluator, "evaluate", msgs, EvaluationOut, self._schemas[2]
        )
        self.context.append("reflection", reply.completion_tokens)
        out = reply.value
        if out is None:
            # a sensor dropout: hold the last reading, and say so in the critique
            last = self._last_eval or Evaluation(0.0, 0.0, 0.0, 0.0)
            evaluation = Evaluation(
                last.delta_task,
                last.delta_act,
                last.delta_plan,
                last.confidence,
                f"evaluation failed: {reply.error}",
                last.missing,
            )
        else:
            evaluation = Evaluation(
                out.delta_task,
                out.delta_act,
                out.delta_plan,
                out.confidence,
                out.critique,
                tuple(out.missing),
            )
            self._calls[-1] |= {"sufficient": out.sufficient, "next_action": out.next_action}
        self._calls[-1]["delta_task"] = evaluation.delta_task
        self._last_eval = evaluation
        self._history[-1] += f" | reflection: {evaluation.critique}"
        self._progress("evaluate")
        return evaluation

    def _progress(self, phase: str, cache_hit: bool = False) -> None:
        if _LISTENERS:
            event = LLMProgress(self._step, phase, self.cost.tokens, self._last_step, cache_hit)
            for listener in list(_LISTENERS):
                listener(event)

    def _recent(self) -> list[str]:
        n = self.params.history_steps
        return self._history[-n:] if n else []


def _limit(backend: LLMBackend) -> int:
    limit = getattr(backend, "num_predict", 256)
    return int(limit) if isinstance(limit, int) else 256
