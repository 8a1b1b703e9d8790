"""The Reflect decision as a Gymnasium environment (the ``gym`` extra).

``ReflectEnv`` hands the Reflect phase of the OPAR loop to a policy: each
``step`` takes one decision, each observation is the agent's ``Evaluation``
after an Act (with what a controller is told besides it), and each ``reset``
starts one episode of a shipped task under a spec's agent, limits and guards.

- **action** (``Discrete(4)``): 0 CONTINUE, 1 REPLAN, 2 TERMINATE (claims the
  goal is reached), 3 TERMINATE giving up (claims it cannot be done).
- **observation** (``Dict``): ``evaluation`` = [δ_task, δ_act, δ_plan,
  confidence] in [0, 1]; ``context`` = [step, now, dt, plan age, REPLANs so far]
  (simulated seconds, never wall-clock); ``plan_exhausted`` (0 or 1).  The
  hidden state is not in it.
- **reward**: 0 on every step but the last, which gets minus the tuner's
  per-episode objective (``[tune.objective]`` of the spec, else its default:
  ``failure·(1 − success) + tokens·n_tokens + replan_rate·REPLANs/steps``).
- **terminated** when the episode ends with an outcome judged from the truth;
  **truncated** when a hard limit or guard cut it (``truncated:<reason>``).
  ``info`` holds the ``outcome``, ``episode`` and the episode's row.

The episode runs in the ordinary loop (``opar_sim.core.loop.run_episode``):
each step replays the decisions so far on the episode's seed, which the
simulator makes exact, and pauses at the next Reflect.  Same seed, same
episode: ``reset(seed=s)`` starts episode 0 of seed ``s``; each later
``reset()`` the next episode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from opar_sim.api import SpecLike, spec_of
from opar_sim.core.controller import ReflectContext
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed
from opar_sim.core.types import ControlSignal, Decision, EpisodeResult, Evaluation
from opar_sim.extras import install_hint
from opar_sim.rundir import episode_row
from opar_sim.spec.build import build
from opar_sim.spec.schema import ExperimentSpec, Objective

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as exc:  # the optional extra
    raise ImportError(f"opar_sim.gym needs gymnasium: {install_hint('gym')}") from exc

ENV_ID = "opar_sim/Reflect-v0"
ACTIONS: tuple[tuple[ControlSignal, bool], ...] = (
    (ControlSignal.CONTINUE, False),
    (ControlSignal.REPLAN, False),
    (ControlSignal.TERMINATE, False),
    (ControlSignal.TERMINATE, True),
)
Observation = dict[str, Any]


class _Pause(Exception):
    """Raised at the first Reflect the policy has not decided yet."""

    def __init__(self, evaluation: Evaluation, ctx: ReflectContext) -> None:
        super().__init__("the policy's decision is needed")
        self.evaluation = evaluation
        self.ctx = ctx


class _PolicyDecisions:
    """A controller that replays the policy's decisions, then pauses the episode."""

    name = "gym"

    def __init__(self) -> None:
        self.actions: list[int] = []
        self._next = 0

    def reset(self) -> None:
        self._next = 0

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        if self._next >= len(self.actions):
            raise _Pause(evaluation, ctx)
        signal, give_up = ACTIONS[self.actions[self._next]]
        self._next += 1
        return Decision(signal, "gym policy", {}, give_up=give_up)


class ReflectEnv(gymnasium.Env[Observation, np.int64]):
    """One episode of a task per reset; the policy makes every Reflect decision.

    Args:
        spec: The spec whose task, agent, limits and guards are used (any form
            ``opar_sim.api.spec_of`` takes); its controllers are ignored.  Default:
            the default spec on ``task``.
        task: The task of the default spec (when ``spec`` is None).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (Gymnasium's class field)

    def __init__(self, spec: SpecLike | None = None, task: str = "flight_booking") -> None:
        # `spec` is Gymnasium's EnvSpec attribute: the experiment spec is `experiment`
        self.experiment: ExperimentSpec = spec_of(
            spec if spec is not None else {"name": "gym", "task": {"name": task}}
        )
        parts = build(self.experiment)
        self._task = parts.make_task()
        self._agent = parts.make_agent()
        self._supervisor = parts.make_supervisor()
        self._guardrail = parts.guardrail
        self._limits = parts.limits
        self._objective = self.experiment.tune.objective if self.experiment.tune else Objective()
        self._policy = _PolicyDecisions()
        self._seed = self.experiment.seed
        self._episode = -1
        self._result: EpisodeResult | None = None
        steps, seconds = float(self._limits.max_steps), float(self._limits.time_budget)
        self._context_high = np.array([steps, seconds, seconds, steps, steps], np.float32)
        self.action_space = spaces.Discrete(len(ACTIONS))
        self.observation_space = spaces.Dict(
            {
                "evaluation": spaces.Box(0.0, 1.0, shape=(4,), dtype=np.float32),
                "context": spaces.Box(0.0, self._context_high, shape=(5,), dtype=np.float32),
                "plan_exhausted": spaces.Discrete(2),
            }
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Start the next episode (episode 0 of ``seed`` when a seed is given).

        Args:
            seed: The run seed of the episodes (default: the spec's, then onwards).
            options: ``{"episode": i}`` starts episode ``i`` of the current seed.

        Returns:
            The first Reflect's observation and ``{"episode": i}``.
        """
        super().reset(seed=seed)
        if seed is not None:
            self._seed, self._episode = seed, -1
        self._episode = int((options or {}).get("episode", self._episode + 1))
        self._policy.actions = []
        obs, _ = self._advance()
        return obs, {"episode": self._episode}

    def step(self, action: np.int64 | int) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Apply one Reflect decision and run the loop to the next Reflect or the end.

        Args:
            action: 0 CONTINUE, 1 REPLAN, 2 TERMINATE, 3 TERMINATE giving up.

        Returns:
            Observation, reward, terminated, truncated and info (``outcome`` at the end).
        """
        if not self.action_space.contains(np.int64(action)):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        if self._result is None:
            self._policy.actions.append(int(action))
        obs, result = self._advance()
        if result is None:
            return obs, 0.0, False, False, {"episode": self._episode}
        row = episode_row(result)
        reward = -self._objective.episode_score(row)
        truncated = result.outcome.startswith("truncated:")
        info = {"episode": self._episode, "outcome": result.outcome, "row": row}
        return obs, reward, not truncated, truncated, info

    def _advance(self) -> tuple[Observation, EpisodeResult | None]:
        """Run the episode with the decisions so far; pause at the next Reflect, or finish."""
        try:
            self._result = run_episode(
                self._task,
                self._agent,
                self._policy,
                self._limits,
                episode_seed(self._seed, self._episode),
                episode=self._episode,
                supervisor=self._supervisor,
                guardrail=self._guardrail,
            )
        except _Pause as pause:
            self._result = None
            return self._observe(pause.evaluation, pause.ctx), None
        last = self._result.steps[-1] if self._result.steps else None
        if last is None or last.evaluation is None:
            return _empty(), self._result
        ctx = ReflectContext(
            last.step, last.time, 0.0, last.plan_age, last.plan_exhausted, last.replans
        )
        return self._observe(last.evaluation, ctx), self._result

    def _observe(self, evaluation: Evaluation, ctx: ReflectContext) -> Observation:
        obs = observation(evaluation, ctx)
        obs["context"] = np.minimum(obs["context"], self._context_high)
        return obs


def observation(evaluation: Evaluation, ctx: ReflectContext) -> Observation:
    """The observation of one Reflect (values clipped to the space's bounds below).

    Args:
        evaluation: The agent's evaluation after the Act.
        ctx: What the controller is told besides it.

    Returns:
        ``evaluation``, ``context`` and ``plan_exhausted`` as in the observation space.
    """
    values: Sequence[float] = (
        evaluation.delta_task,
        evaluation.delta_act,
        evaluation.delta_plan,
        evaluation.confidence,
    )
    context = (ctx.step, ctx.now, ctx.dt, ctx.plan_age, ctx.replans)
    return {
        "evaluation": np.clip(np.asarray(values, np.float32), 0.0, 1.0),
        "context": np.maximum(np.asarray(context, np.float32), 0.0),
        "plan_exhausted": np.int64(ctx.plan_exhausted),
    }


def _empty() -> Observation:
    return {
        "evaluation": np.zeros(4, np.float32),
        "context": np.zeros(5, np.float32),
        "plan_exhausted": np.int64(0),
    }


if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="opar_sim.gym:ReflectEnv")
