"""The lockstep engine proper: the state of N episodes and one step of Algorithm 1 on it.

``_Engine.run`` advances the episodes of one controller, all at once, to their
ends; ``BatchEpisodes`` holds their results in episode order.  See the
package's docstring and docs/batch.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from controllers.batch import CONTINUE, TERMINATE, BatchLaw, Reading
from opar_sim.agents.expert_model import (
    DONE_CLAIM,
    SimulatedAgentParams,
    shifted_array,
    world_shift_array,
)
from opar_sim.core import outcome
from opar_sim.core.limits import Limits
from opar_sim.core.outcome import Ending, judge_array
from opar_sim.core.twin import TaskTwin, take_rows
from opar_sim.core.types import Outcome
from opar_sim.engines.batch import phases
from opar_sim.engines.batch.phases import MAX_STEPS, RUNNING

COMPACT = 0.8  # drop the finished rows once fewer than this share of the rows is live

# the ending each status code stands for (the kernel's judge reads them)
ENDINGS: tuple[Ending | None, ...] = (
    None,  # RUNNING: no episode is judged while it runs
    outcome.TERMINATED,
    outcome.INVALID_FORMAT,
    Ending(truncated="tokens"),
    Ending(truncated="time"),
    outcome.MAX_STEPS,
)


class _Words(Protocol):
    def answers(self, fields: dict[str, np.ndarray]) -> list[str]: ...


@dataclass
class BatchEpisodes:
    """Per-episode results of one controller, as arrays in episode order."""

    status: np.ndarray
    give_up: np.ndarray
    complete: np.ndarray
    feasible: np.ndarray
    progress: np.ndarray
    steps: np.ndarray
    best_step: np.ndarray
    prompt_tokens: np.ndarray
    completion_tokens: np.ndarray
    llm_calls: np.ndarray
    sim_seconds: np.ndarray
    tool_calls: np.ndarray
    replans: np.ndarray
    # what each final answer is made of (the twin's ``answer_fields``) and who words it
    answer_fields: dict[str, np.ndarray] = field(default_factory=dict)
    words: _Words | None = None

    def answers(self) -> list[str]:
        """Each episode's final answer, as the task's ``answer`` words it."""
        if self.words is None:
            return [""] * len(self.status)
        return self.words.answers(self.answer_fields)

    @property
    def success(self) -> np.ndarray:
        """Whether each episode's outcome is ``success`` (TERMINATE with the task complete)."""
        return np.asarray(self.judged() == Outcome.SUCCESS.value)

    @property
    def tokens(self) -> np.ndarray:
        """Prompt plus completion tokens of each episode."""
        return np.asarray(self.prompt_tokens + self.completion_tokens)

    def judged(self) -> np.ndarray:
        """The outcome label of each episode (an object array), from the kernel's judge."""
        return judge_array(self.status, ENDINGS, self.complete, self.give_up, self.feasible)

    def outcomes(self) -> list[str]:
        """The outcome label of each episode, as ``loop._finish`` judges it (``judge``)."""
        labels: list[str] = self.judged().tolist()
        return labels


class Draws:
    """The engine's own draws (the agent's and the tool timing's), from one generator.

    Each step takes four uniforms per row (act retry, invalid output, expert, tool
    failure) and four normals (the evaluation's three noises, the tool latency), a
    Beta draw per fresh plan and a uniform per row picking a wrong action; with task
    heterogeneity, a normal per world first (its difficulty z).  A test replays recorded
    draws through a subclass (keyed by episode and step); the world's draws
    (``TaskTwin.reset``, ``sync``) stay with the generator.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        """Draw from ``rng``.

        Args:
            rng: The batch's generator.
        """
        self.rng = rng
        self._buffers = np.empty((2, 0))  # the step's draws, refilled in place (no page faults)

    def difficulty(self, ids: np.ndarray) -> np.ndarray:
        """Each world's difficulty z ~ N(0, 1) (``simulated.world_shift``'s), for ``ids``."""
        return self.rng.standard_normal(len(ids))

    def step(self, ids: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Step ``t``'s uniforms and normals, each of shape (4, rows)."""
        n = len(ids)
        if self._buffers.shape[1] < 4 * n:  # rows only shrink within a run: sized once
            self._buffers = np.empty((2, 4 * n))
        u = self._buffers[0, : 4 * n].reshape(4, n)
        z = self._buffers[1, : 4 * n].reshape(4, n)
        return self.rng.random(out=u), self.rng.standard_normal(out=z)

    def beta(self, ids: np.ndarray, t: int, p: SimulatedAgentParams) -> np.ndarray:
        """Fresh plans' quality draws for the episodes ``ids``."""
        return self.rng.beta(p.plan_alpha, p.plan_beta, len(ids))

    def pick(self, ids: np.ndarray, t: int) -> np.ndarray:
        """A uniform per row choosing a wrong action."""
        return self.rng.random(len(ids))


class _Engine:
    """The state of N episodes of one controller; ``run`` advances them to their ends."""

    def __init__(
        self,
        world: TaskTwin,
        law: BatchLaw,
        agent: SimulatedAgentParams,
        limits: Limits,
        goal_tokens: int,
        rng: np.random.Generator,
        confirm: int = 1,
        draws: Draws | None = None,
        record: Callable[[int, np.ndarray, dict[str, np.ndarray]], None] | None = None,
    ) -> None:
        self.world, self.law, self.p, self.limits, self.rng = world, law, agent, limits, rng
        self.draws = draws or Draws(rng)
        self.goal_tokens = goal_tokens
        self.knobs = phases.Knobs.of(agent)  # the float rules' knobs, as the row loops take them
        self.confirm = confirm  # the [guards] stop confirmation's k (1: every TERMINATE passes)
        # the step rows' hook (engines.batch.rows.StepRecorder.record): called at the end of
        # every step with the step number, the rows that made the Reflect and the state
        self.record = record
        self.controller_steps = 0  # Reflects run, over all episodes

    def run(self, n: int, reset: bool = True) -> BatchEpisodes:
        """Run ``n`` episodes to their ends (``reset=False``: on worlds already drawn)."""
        world, law, p, rng = self.world, self.law, self.p, self.rng
        if reset:
            world.reset(n, rng)
        law.reset(n)
        self.n = n
        s = self.state = _State(n, p.system_tokens + self.goal_tokens)
        if p.heterogeneous:  # each world's shift of the logit of plan quality
            feature = world.features().get(p.task_feature)
            x = np.zeros(n) if feature is None else feature
            normals = self.draws.difficulty(s.ids) if p.task_effect_sd else np.zeros(n)
            s.shift = world_shift_array(p, x, normals)
        out = _Out(n, world)
        for t in range(1, self.limits.max_steps + 1):
            self._step(t)
            live = np.count_nonzero(s.alive)
            if live == 0:
                break
            if live < COMPACT * self.n:  # finished rows cost as much as live ones
                # a finished row's state is frozen (every update is masked by ``alive``),
                # so it is judged only now, when it is dropped
                self._record(~s.alive, out)
                self._compact()
        np.copyto(s.status, MAX_STEPS, where=s.alive)
        self._record(np.ones(self.n, bool), out)
        return out.episodes()

    # -- one iteration of Algorithm 1 for every live episode ---------------------------
    # The engine's own arithmetic runs in ``phases``' row loops; the twin, the law and the
    # draws are called between them, in the order of Algorithm 1.
    def _step(self, t: int) -> None:
        s, p, world, rng, limits = self.state, self.p, self.world, self.rng, self.limits
        k, budget = self.knobs, limits.time_budget
        # this step's uniforms (retry, invalid output, expert, tool failure) and normals
        # (the three evaluation noises, the tool latency), drawn in two blocks
        u, z = self.draws.step(s.ids, t)
        rows = s.loop()
        # the token check, Observe, and which rows draw a fresh plan
        changed = world.world_changed()
        a, new, keep = phases.observe(
            rows,
            k,
            changed,
            world.observation_tokens,
            limits.token_budget,
            p.observe_seconds,
            budget,
        )
        quality = np.zeros(self.n)
        drawn = np.flatnonzero(new)  # Beta draws are dear: only the fresh plans'
        quality[drawn] = self.draws.beta(s.ids[drawn], t, p)
        if p.heterogeneous:
            quality[drawn] = shifted_array(quality[drawn], s.shift[drawn])
        # Plan, and Act with one retry after an output that fails validation
        a, expert, valid, wrong = phases.plan_act(
            rows, k, quality, new, keep, u, p.critique_gain, p.invalid_format_rate, budget
        )
        world.sync(s.now, a, rng)
        action = world.act(expert, self.draws.pick(s.ids, t), wrong)
        # the action's name for the step rows, read before the call changes the world
        key = world.action_key(action) if self.record is not None else s.ids
        # the tool call (SimTask.execute): latency, timeout, failure, effect
        seconds = world.start_call(valid, action, z[3], u[3], s.now, rng)
        arrived = phases.arrive(rows, valid, seconds, budget)
        ok, tokens = world.finish_call(arrived, action, s.now, rng)  # zero outside arrived
        # Reflect: the evaluation from what is visible, then the law
        a = phases.evaluate(rows, k, a, tokens, budget)
        world.sync(s.now, a, rng)
        visible = world.visible_progress()
        truth = world.progress()
        sensed, productive = phases.reflect(rows, k, a, ok, visible, truth, z, p.critique_tolerance)
        delta_task, delta_act, delta_plan, confidence, dt = sensed
        reading = Reading(
            delta_task,
            delta_act,
            delta_plan,
            confidence,
            dt,
            s.plan_age,
            s.cursor >= world.plan_steps,
            s.replans,
        )
        needs = getattr(self.law, "needs", ())
        if "missing" in needs:  # SimulatedAgent.evaluate: missing unless δ_task >= DONE_CLAIM
            reading.missing = delta_task < DONE_CLAIM
        if "context" in needs:  # ReflectContext.step and .now, for a law run row by row
            reading.step = t
            reading.now = s.now
        if "truth" in needs:  # the truth probe (loop._Probe), read at the Reflect
            reading.complete = truth >= 1.0
            reading.feasible = world.feasible()
            reading.quality = self._effective_quality()
        signal, give_up = self.law.decide(a, reading)
        if self.confirm > 1:
            # the stop confirmation (guards.ConfirmStop): a completion claim becomes CONTINUE
            # until it is the k-th in a row; any other decision, or a give-up, resets the count
            claim = a & (signal == TERMINATE) & ~give_up
            s.claims = np.where(claim, s.claims + 1, np.where(a, 0, s.claims))
            signal = np.where(claim & (s.claims < self.confirm), CONTINUE, signal)
        self.controller_steps += phases.conclude(rows, a, signal, give_up, delta_task, t)
        self.signals = signal  # the last step's signals (tests compare them with SimPy's)
        if self.record is not None:  # full-width arrays: the recorder keeps the rows of ``a``
            timeout, delivered = world.call_state()
            self.record(
                t,
                a,
                {
                    "episode": s.ids,
                    "time": s.now,
                    "visible_progress": visible,
                    "plan_quality": s.quality,
                    "effective_quality": self._effective_quality(),
                    "key": key,
                    "expert": expert,
                    "valid": valid,
                    "timeout": timeout,
                    "delivered": delivered,
                    "ok": ok,
                    "productive": productive,
                    "latency": seconds,
                    "delta_task": delta_task,
                    "delta_act": delta_act,
                    "delta_plan": delta_plan,
                    "confidence": confidence,
                    "signal": signal,
                    "give_up": give_up,
                    "progress": truth,
                    "feasible": world.feasible(),
                    "plan_age": s.plan_age,
                    "exhausted": s.cursor >= world.plan_steps,
                    "replans": s.replans,
                    "tokens": s.prompt + s.completion,
                    "context_tokens": s.context,
                },
            )

    def _effective_quality(self) -> np.ndarray:
        """``SimulatedAgent.effective_quality``: the plan's quality decayed past the knee."""
        return np.asarray(
            phases.effective_quality(self.state.quality, self.state.context, self.knobs)
        )

    def _record(self, ended: np.ndarray, out: _Out) -> None:
        """Judge the episodes that just ended from their world, at their own clock."""
        s, world = self.state, self.world
        world.sync(s.now, ended, self.rng)
        rows = np.flatnonzero(ended)
        progress = world.progress()
        ids = s.ids[rows]
        out.status[ids] = s.status[rows]
        out.give_up[ids] = s.give_up[rows]
        out.progress[ids] = progress[rows]
        out.complete[ids] = world.complete()[rows]
        out.feasible[ids] = world.feasible()[rows]
        out.steps[ids] = s.steps[rows]
        out.best_step[ids] = s.best_step[rows]
        out.prompt[ids] = s.prompt[rows]
        out.completion[ids] = s.completion[rows]
        out.calls[ids] = s.calls[rows]
        out.seconds[ids] = s.now[rows]
        out.tool_calls[ids] = s.tool_calls[rows]
        out.replans[ids] = s.replans[rows]
        for name, values in world.answer_fields().items():
            if name not in out.answers:
                out.answers[name] = np.zeros(out.status.shape, values.dtype)
            out.answers[name][ids] = values[rows]

    def _compact(self) -> None:
        """Drop the finished rows from every array (the live ones keep their order)."""
        s = self.state
        keep = np.flatnonzero(s.alive)
        n = self.n
        take_rows(s, keep, n)
        take_rows(self.law, keep, n)
        self.world.take(keep)
        self.n = len(keep)


class _State:
    """The loop's and the agent's per-episode state (``loop._opar``, ``SimulatedAgent``)."""

    def __init__(self, n: int, context: int) -> None:
        self.ids = np.arange(n)
        self.alive = np.ones(n, bool)
        self.status = np.full(n, RUNNING, np.int8)
        self.give_up = np.zeros(n, bool)
        self.now = np.zeros(n)
        self.context = np.full(n, context, np.int32)
        self.prompt = np.zeros(n, np.int32)
        self.completion = np.zeros(n, np.int32)
        self.calls = np.zeros(n, np.int32)
        self.tool_calls = np.zeros(n, np.int32)
        self.replans = np.zeros(n, np.int32)
        self.has_plan = np.zeros(n, bool)
        self.fresh = np.ones(n, bool)
        self.quality = np.zeros(n)
        self.cursor = np.zeros(n, np.int32)
        self.plan_age = np.zeros(n, np.int32)
        self.visible = np.zeros(n)
        self.drift = np.zeros(n)
        self.critique_right = np.zeros(n, bool)
        self.invalid_run = np.zeros(n, np.int32)
        self.last_reflect = np.zeros(n)
        self.steps = np.zeros(n, np.int32)
        self.best_delta = np.full(n, -np.inf)
        self.best_step = np.zeros(n, np.int32)
        self.claims = np.zeros(n, np.int32)  # consecutive completion claims (the confirmation)
        self.shift = np.zeros(n)  # the world's logit shift of plan quality (heterogeneity)

    def loop(self) -> tuple[np.ndarray, ...]:
        """The arrays the row loops read and change, in ``phases``' order."""
        return (
            self.alive,
            self.status,
            self.now,
            self.context,
            self.prompt,
            self.completion,
            self.calls,
            self.fresh,
            self.has_plan,
            self.drift,
            self.replans,
            self.quality,
            self.cursor,
            self.plan_age,
            self.critique_right,
            self.invalid_run,
            self.tool_calls,
            self.visible,
            self.last_reflect,
            self.steps,
            self.best_delta,
            self.best_step,
            self.give_up,
        )


class _Out:
    """Per-episode results, indexed by the episode's row at the start."""

    def __init__(self, n: int, world: TaskTwin) -> None:
        self.world = world
        self.status = np.zeros(n, np.int8)
        self.give_up = np.zeros(n, bool)
        self.complete = np.zeros(n, bool)
        self.feasible = np.zeros(n, bool)
        self.progress = np.zeros(n)
        self.steps = np.zeros(n, np.int64)
        self.best_step = np.zeros(n, np.int64)
        self.prompt = np.zeros(n, np.int64)
        self.completion = np.zeros(n, np.int64)
        self.calls = np.zeros(n, np.int64)
        self.seconds = np.zeros(n)
        self.tool_calls = np.zeros(n, np.int64)
        self.replans = np.zeros(n, np.int64)
        self.answers: dict[str, np.ndarray] = {}

    def episodes(self) -> BatchEpisodes:
        return BatchEpisodes(
            self.status,
            self.give_up,
            self.complete,
            self.feasible,
            self.progress,
            self.steps,
            self.best_step,
            self.prompt,
            self.completion,
            self.calls,
            self.seconds,
            self.tool_calls,
            self.replans,
            self.answers,
            self.world,
        )
