"""The lockstep engine proper: the state of N episodes and one step of Algorithm 1 on it.

``_Engine.run`` advances the episodes of one controller, all at once, to their
ends; ``BatchEpisodes`` holds their results in episode order.  See the
package's docstring and docs/batch.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from controllers.batch import CONTINUE, REPLAN, TERMINATE, BatchLaw, Reading
from environments.flight_booking_batch import PAY_CASH, PAY_POINTS, FlightBookingBatch, take_rows
from opar_sim.agents.simulated import RESULT_TOKEN_CAP, SimulatedAgentParams
from opar_sim.core import outcome
from opar_sim.core.limits import Limits
from opar_sim.core.outcome import Ending, judge_array
from opar_sim.core.types import Outcome

COMPACT = 0.8  # drop the finished rows once fewer than this share of the rows is live
PLAN_STEPS = 5  # len(FlightBooking.plan_template())

# episode status codes, and the ending each stands for (the kernel's judge reads them)
RUNNING, TERMINATED, INVALID, TOKENS, TIME, MAX_STEPS = range(6)
ENDINGS: tuple[Ending | None, ...] = (
    None,  # RUNNING: no episode is judged while it runs
    outcome.TERMINATED,
    outcome.INVALID_FORMAT,
    Ending(truncated="tokens"),
    Ending(truncated="time"),
    outcome.MAX_STEPS,
)


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
    booked: np.ndarray  # the final booking's flight (-1: none), departure, fare and payment
    hour: np.ndarray
    price: np.ndarray
    pay: np.ndarray

    def answers(self) -> list[str]:
        """Each episode's final answer, as ``FlightBooking.answer`` words it."""
        return [
            "no booking"
            if fid < 0
            else f"flight #{fid} at {hour:02d}:00 for {price:.0f}, paid by "
            + ("points" if pay == PAY_POINTS else "cash")
            for fid, hour, price, pay in zip(
                self.booked.tolist(),
                self.hour.tolist(),
                self.price.tolist(),
                self.pay.tolist(),
                strict=True,
            )
        ]

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


class _Engine:
    """The state of N episodes of one controller; ``run`` advances them to their ends."""

    def __init__(
        self,
        world: FlightBookingBatch,
        law: BatchLaw,
        agent: SimulatedAgentParams,
        limits: Limits,
        goal_tokens: int,
        rng: np.random.Generator,
        confirm: int = 1,
        record: Callable[[int, np.ndarray, dict[str, np.ndarray]], None] | None = None,
    ) -> None:
        self.world, self.law, self.p, self.limits, self.rng = world, law, agent, limits, rng
        self.goal_tokens = goal_tokens
        self.confirm = confirm  # the [guards] stop confirmation's k (1: every TERMINATE passes)
        # the step rows' hook (engines.batch.rows.StepRecorder.record): called at the end of
        # every step with the step number, the rows that made the Reflect and the state
        self.record = record
        self.controller_steps = 0  # Reflects run, over all episodes

    def run(self, n: int) -> BatchEpisodes:
        world, law, p, rng = self.world, self.law, self.p, self.rng
        world.reset(n, rng)
        law.reset(n)
        self.n = n
        s = self.state = _State(n, p.system_tokens + self.goal_tokens)
        out = _Out(n)
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

    # -- the clock and the model calls ----------------------------------------------
    # Updates are branch-free arithmetic on whole arrays (``x += m * v``) rather than
    # ``np.where`` or masked writes: a random mask makes masked writes mispredict, and
    # each ``np.where`` allocates; rare events (cuts, stops) test ``any()`` first.
    def _advance(self, m: np.ndarray, seconds: np.ndarray | float) -> np.ndarray:
        """Let ``seconds`` pass for the rows of ``m``; cut those past the time budget."""
        s, budget = self.state, self.limits.time_budget
        s.now += m * seconds
        # ``m`` lies inside ``alive``, and no other row is past the budget (a cut row's
        # clock stops at it): one reduction tells whether anything was cut
        if s.now.max(initial=0.0) <= budget:
            return m
        cut = s.now > budget
        np.copyto(s.now, budget, where=cut)
        np.copyto(s.status, TIME, where=cut)
        s.alive &= ~cut
        return np.asarray(s.alive & m)

    def _call(self, m: np.ndarray, completion: np.ndarray | int) -> np.ndarray:
        """One model call per row of ``m`` (``SimulatedAgent._llm_call``); the rows still alive."""
        s, p = self.state, self.p
        prompt = s.context
        s.prompt += m * prompt
        s.completion += m * completion
        s.calls += m
        seconds = prompt * (1.0 / p.prompt_tokens_per_second)
        seconds += completion / p.tokens_per_second
        return self._advance(m, seconds)

    def _effective_quality(self) -> np.ndarray:
        """``SimulatedAgent.effective_quality``: the plan's quality decayed past the knee."""
        s, p = self.state, self.p
        excess = s.context - p.context_knee
        factor = 1.0 - (p.context_decay / p.context_knee) * excess
        decayed = np.maximum(p.quality_floor, s.quality * factor)
        return np.where(excess <= 0, s.quality, decayed)

    # -- one iteration of Algorithm 1 for every live episode ---------------------------
    def _step(self, t: int) -> None:
        s, p, world, rng, limits = self.state, self.p, self.world, self.rng, self.limits
        n = self.n
        # this step's uniforms (retry, invalid output, expert, tool failure) and normals
        # (the three evaluation noises, the tool latency), drawn in two blocks
        u = rng.random((4, n))
        z = rng.standard_normal((4, n))
        # the hard token limit: the step's worst case must fit (SimulatedAgent.max_step_tokens)
        # bound = 4 (context + completions + cap + 64) + completions, completions = c0 + fresh dc
        c0 = p.continue_tokens + 2 * p.act_tokens + p.eval_tokens
        dc = p.plan_tokens - p.continue_tokens
        spent = s.prompt + s.completion
        spent += 4 * s.context
        spent += (5 * dc) * s.fresh
        over = s.alive & (spent > limits.token_budget - 5 * c0 - 4 * (RESULT_TOKEN_CAP + 64))
        if over.any():
            np.copyto(s.status, TOKENS, where=over)
            s.alive &= ~over
        # Observe
        a = self._advance(s.alive, p.observe_seconds)
        np.maximum(s.drift, 0.8 * (a & world.fare_changed_seen), out=s.drift)  # drift >= 0
        s.context += 30 * a  # Observation.tokens of the task
        # Plan
        s.replans += a & s.has_plan & s.fresh
        new = a & (s.fresh | ~s.has_plan)
        keep = a & ~new
        quality = np.zeros(n)
        drawn = np.flatnonzero(new)  # Beta draws are dear: only the fresh plans'
        quality[drawn] = rng.beta(p.plan_alpha, p.plan_beta, drawn.size)
        quality += p.critique_gain * (s.has_plan & s.critique_right)
        np.clip(quality, 0.02, 0.98, out=quality)
        done = self._call(a, p.continue_tokens + (p.plan_tokens - p.continue_tokens) * new)
        new &= done
        keep &= done
        s.context += p.plan_tokens * new + p.continue_tokens * keep
        s.has_plan |= new
        old = ~new
        s.drift *= old
        s.quality = np.where(new, quality, s.quality)
        s.cursor *= old
        s.plan_age *= old
        # Act: one retry after an output that fails validation
        a = self._call(s.alive, p.act_tokens)
        s.context += p.act_tokens * a
        s.cursor += a
        retry = a & (u[0] < p.invalid_format_rate)
        if retry.any():
            r = self._call(retry, p.act_tokens)
            s.context += p.act_tokens * r
            a &= s.alive
            invalid = r & (u[1] < p.invalid_format_rate)
        else:
            invalid = np.zeros(n, bool)
        world.disturb_until(s.now, a, rng)
        expert = u[2] < self._effective_quality()
        tool, flight, pay = world.expert(world.complete())
        wrong_tool, wrong_flight, _ = world.wrong(rng, a & ~expert)  # a wrong booking pays cash
        tool = np.where(expert, tool, wrong_tool)
        flight = np.where(expert, flight, wrong_flight)
        pay = np.where(expert, pay, np.int8(PAY_CASH))
        # the tool call (SimTask.execute): latency, timeout, failure, effect
        valid = a & ~invalid
        # invalid outputs in a row (``invalid`` lies inside ``a``): one more, or back to 0
        s.invalid_run = np.where(a, (s.invalid_run + 1) * invalid, s.invalid_run)
        s.tool_calls += valid
        tp = world.params.tools
        latency = tp.latency_median * np.exp(tp.latency_sigma * z[3])
        timeout = latency > tp.timeout
        arrived = self._advance(valid, np.minimum(latency, tp.timeout))
        delivered = arrived & ~timeout & (u[3] >= tp.failure_rate)
        world.disturb_until(s.now, delivered, rng)
        ok, tokens = world.apply(delivered, tool, flight, pay)  # both zero outside delivered
        a &= s.alive  # less those cut during the tool call
        s.context += a * np.minimum(RESULT_TOKEN_CAP, tokens + 4)
        # Reflect: the evaluation from what is visible, then the law
        a = self._call(a, p.eval_tokens)
        s.context += p.eval_tokens * a
        world.disturb_until(s.now, a, rng)
        visible = world.visible_progress()
        productive = visible > s.visible + 1e-9
        # from here on the rows outside ``a`` are finished (``a`` is ``s.alive``): what they
        # never record (visible progress, drift, critique, clock of the last Reflect, the
        # plan's freshness) is written without a mask
        s.visible = visible
        s.drift = 0.5 * s.drift + 0.5 * ~productive
        z *= p.noise
        delta_task = visible + p.bias
        delta_task += z[0]
        np.clip(delta_task, 0.0, 1.0, out=delta_task)
        act = np.where(ok, np.where(productive, 1.0, 0.6), 0.1)
        act += 0.5 * z[1]
        delta_act = np.clip(act, 0.0, 1.0, out=act)
        delta_plan = s.drift + 0.5 * z[2]
        np.clip(delta_plan, 0.0, 1.0, out=delta_plan)
        confidence = delta_task * (1.0 - 0.3 * s.drift)
        np.clip(confidence, 0.0, 1.0, out=confidence)
        truth = world.progress()
        right = np.abs(delta_task - truth) <= p.critique_tolerance
        s.critique_right = right
        s.plan_age += a
        dt = (s.now - s.last_reflect) * (s.steps > 0)  # 0 at the first Reflect
        s.last_reflect = s.now.copy()
        reading = Reading(
            delta_task,
            delta_act,
            delta_plan,
            confidence,
            dt,
            s.plan_age,
            s.cursor >= PLAN_STEPS,
            s.replans,
        )
        needs = getattr(self.law, "needs", ())
        if "missing" in needs:  # SimulatedAgent.evaluate: missing unless δ_task >= 0.999
            reading.missing = delta_task < 0.999
        if "context" in needs:  # ReflectContext.step and .now, for a law run row by row
            reading.step = t
            reading.now = s.now
        if "truth" in needs:  # the truth probe (loop._Probe), read at the Reflect
            reading.complete = truth >= 1.0
            reading.feasible = world.best >= 0
            reading.quality = self._effective_quality()
        signal, give_up = self.law.decide(a, reading)
        if self.confirm > 1:
            # the stop confirmation (guards.ConfirmStop): a completion claim becomes CONTINUE
            # until it is the k-th in a row; any other decision, or a give-up, resets the count
            claim = a & (signal == TERMINATE) & ~give_up
            s.claims = np.where(claim, s.claims + 1, np.where(a, 0, s.claims))
            signal = np.where(claim & (s.claims < self.confirm), CONTINUE, signal)
        s.steps += a
        # ``a`` may be ``s.alive`` itself, which the stops below change: the recorder's copy
        reflected = a.copy() if self.record is not None else a
        self.controller_steps += int(np.count_nonzero(a))
        better = a & (delta_task >= s.best_delta)
        s.best_delta = np.where(better, delta_task, s.best_delta)
        s.best_step = np.where(better, t, s.best_step)
        broken = a & (s.invalid_run >= 3)
        stop = a & ~broken & (signal == TERMINATE)
        if stop.any():
            np.copyto(s.status, TERMINATED, where=stop)
            np.copyto(s.give_up, give_up, where=stop)
            np.copyto(s.best_step, t, where=stop)
            s.alive &= ~stop
        if broken.any():
            np.copyto(s.status, INVALID, where=broken)
            s.alive &= ~broken
        s.fresh = signal == REPLAN
        if self.record is not None:  # full-width arrays: the recorder keeps the rows of ``a``
            self.record(
                t,
                reflected,
                {
                    "episode": s.ids,
                    "time": s.now,
                    "visible_progress": visible,
                    "plan_quality": s.quality,
                    "effective_quality": self._effective_quality(),
                    "tool": tool,
                    "flight": flight,
                    "pay": pay,
                    "expert": expert,
                    "valid": valid,
                    "timeout": timeout,
                    "delivered": delivered,
                    "ok": ok,
                    "productive": productive,
                    "latency": np.minimum(latency, tp.timeout),
                    "delta_task": delta_task,
                    "delta_act": delta_act,
                    "delta_plan": delta_plan,
                    "confidence": confidence,
                    "signal": signal,
                    "give_up": give_up,
                    "progress": truth,
                    "feasible": world.best >= 0,
                    "plan_age": s.plan_age,
                    "cursor": s.cursor,
                    "replans": s.replans,
                    "tokens": s.prompt + s.completion,
                    "context_tokens": s.context,
                },
            )

    def _record(self, ended: np.ndarray, out: _Out) -> None:
        """Judge the episodes that just ended from their world, at their own clock."""
        s, world = self.state, self.world
        world.disturb_until(s.now, ended, self.rng)
        rows = np.flatnonzero(ended)
        progress = world.progress()
        ids = s.ids[rows]
        out.status[ids] = s.status[rows]
        out.give_up[ids] = s.give_up[rows]
        out.progress[ids] = progress[rows]
        out.complete[ids] = progress[rows] >= 1.0
        out.feasible[ids] = world.best[rows] >= 0
        out.steps[ids] = s.steps[rows]
        out.best_step[ids] = s.best_step[rows]
        out.prompt[ids] = s.prompt[rows]
        out.completion[ids] = s.completion[rows]
        out.calls[ids] = s.calls[rows]
        out.seconds[ids] = s.now[rows]
        out.tool_calls[ids] = s.tool_calls[rows]
        out.replans[ids] = s.replans[rows]
        booked = world.booked[rows]
        safe = np.maximum(booked, 0)
        out.booked[ids] = booked
        out.pay[ids] = world.pay[rows]
        out.hour[ids] = world.hour[rows, safe]
        out.price[ids] = world.price[rows, safe]

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


class _Out:
    """Per-episode results, indexed by the episode's row at the start."""

    def __init__(self, n: int) -> None:
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
        self.booked = np.zeros(n, np.int64)
        self.pay = np.zeros(n, np.int8)
        self.hour = np.zeros(n, np.int64)
        self.price = np.zeros(n)

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
            self.booked,
            self.hour,
            self.price,
            self.pay,
        )
