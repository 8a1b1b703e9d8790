"""The engine's own arithmetic of each phase of a step, as row loops compiled by Numba.

``engine._Engine._step`` calls the task twin, the law and the draws between
these loops; each loop runs one stretch of Algorithm 1 for every row, each
row's arithmetic in the order the SimPy engine's agent does it (the exactness
test replays its draws through both).  The noisy expert's rules are not
restated here: the loops call ``agents.expert_model``'s float functions
(``step_token_bound``, ``call_seconds``, ``context_quality``, ``sense`` ...),
compiled from the same source (``register_jitable``), with the agent's knobs
in a named tuple (``Knobs``) in place of the pydantic model.

Every clock moves through ``_advance``: past the time budget it stops there and
ends its episode (status ``TIME``).  The rows outside a phase's mask are left alone.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit
from numba.extending import register_jitable

from controllers.batch import REPLAN, TERMINATE
from opar_sim.agents.expert_model import (
    PRODUCTIVE_MARGIN,
    WORLD_CHANGE_DRIFT,
    SimulatedAgentParams,
    call_seconds,
    clip_quality,
    context_quality,
    drift_after,
    result_tokens,
    sense,
    step_completions,
    step_token_bound,
)

# the float rules the loops call (and those they call), compiled from expert_model's source
for _rule in (
    call_seconds,
    step_completions,
    step_token_bound,
    result_tokens,
    clip_quality,
    context_quality,
    drift_after,
    sense,
):
    register_jitable(_rule)

Array = np.ndarray
Rows = tuple[np.ndarray, ...]  # ``engine._State.loop()``: the loop's arrays, in its order

# episode status codes (``engine.ENDINGS`` names the ending each stands for)
RUNNING, TERMINATED, INVALID, TOKENS, TIME, MAX_STEPS = range(6)


class Knobs(NamedTuple):
    """The agent's knobs the float rules read (``SimulatedAgentParams``'s), as Numba takes them."""

    bias: float
    noise: float
    context_knee: int
    context_decay: float
    quality_floor: float
    plan_tokens: int
    continue_tokens: int
    act_tokens: int
    eval_tokens: int
    tokens_per_second: float
    prompt_tokens_per_second: float
    context_max: int | None
    memory_tokens: int

    @classmethod
    def of(cls, p: SimulatedAgentParams) -> Knobs:
        """The knobs of ``p``."""
        return cls(*(getattr(p, name) for name in cls._fields))


@register_jitable
def _advance(
    i: int, seconds: float, budget: float, now: Array, status: Array, alive: Array
) -> bool:
    """Row ``i``'s clock moves ``seconds``: whether the row still runs.

    A clock past the time budget stops at it and ends the episode (``TIME``).  Branch-free.
    """
    now[i] += seconds
    cut = now[i] > budget
    now[i] = budget if cut else now[i]
    status[i] = TIME if cut else status[i]
    alive[i] = alive[i] and not cut
    return not cut


@register_jitable
def _spend(
    i: int,
    m: bool,
    tokens: int,
    p: Any,  # Knobs
    budget: float,
    now: Array,
    context: Array,
    prompt: Array,
    completion: Array,
    calls: Array,
    status: Array,
    alive: Array,
) -> bool:
    """A model call of row ``i`` if ``m`` (``SimulatedAgent._llm_call``): whether it completed.

    The call's tokens are spent when it starts; its duration may cross the time budget
    (``_advance``).  Branch-free (``m`` multiplies, as the array passes did), so the loop
    keeps no unpredictable jump.
    """
    read = context[i]
    prompt[i] += m * read
    completion[i] += m * tokens
    calls[i] += m
    done: bool = _advance(i, m * call_seconds(read, tokens, p), budget, now, status, alive)
    return m and done


@njit(cache=True, nogil=True)
def observe(
    s: Rows,
    p: Any,  # Knobs
    changed: Array,
    observation_tokens: int,
    token_budget: int,
    observe_seconds: float,
    budget: float,
) -> tuple[Array, Array, Array]:
    """The token check, Observe and the head of Plan: (observing, fresh plan, kept plan) rows.

    ``s`` is ``_State.loop()``; ``changed``: whether each row's world visibly changed.
    """
    (alive, status, now, context, prompt, completion, _calls, fresh, has_plan, drift) = s[:10]
    replans = s[10]
    n = alive.size
    a = np.zeros(n, np.bool_)
    new = np.zeros(n, np.bool_)
    keep = np.zeros(n, np.bool_)
    for i in range(n):
        if not alive[i]:
            continue
        # the hard token limit: the step's worst case must fit (max_step_tokens)
        bound = step_token_bound(context[i], fresh[i], p)
        if np.int64(prompt[i]) + completion[i] + bound > token_budget:
            status[i] = TOKENS
            alive[i] = False
            continue
        if not _advance(i, observe_seconds, budget, now, status, alive):
            continue
        a[i] = True
        if changed[i]:
            drift[i] = max(drift[i], WORLD_CHANGE_DRIFT)
        context[i] += observation_tokens
        if has_plan[i] and fresh[i]:
            replans[i] += 1
        new[i] = fresh[i] or not has_plan[i]
        keep[i] = not new[i]
    return a, new, keep


@njit(cache=True, nogil=True)
def plan_act(
    s: Rows,
    p: Any,  # Knobs
    quality: Array,
    new: Array,
    keep: Array,
    u: Array,
    critique_gain: float,
    invalid_rate: float,
    budget: float,
) -> tuple[Array, Array, Array, Array]:
    """The rest of Plan, and Act with its one retry: (acting, expert, valid output, wrong) rows.

    ``quality``: each row's drawn plan quality (fresh plans' only); ``u``: the step's
    uniforms (retry, invalid output, expert, ...).  Every row's expert flag is drawn
    against its effective quality, as the array passes did.
    """
    (alive, status, now, context, prompt, completion, calls, _fresh, has_plan, drift) = s[:10]
    (quality_now, cursor, plan_age, critique_right, invalid_run, tool_calls) = s[11:17]
    n = alive.size
    acting = np.zeros(n, np.bool_)
    expert = np.zeros(n, np.bool_)
    valid = np.zeros(n, np.bool_)
    wrong = np.zeros(n, np.bool_)
    for i in range(n):
        fresh_plan, kept = new[i], keep[i]
        gain = critique_gain * (has_plan[i] & critique_right[i])
        q = clip_quality(quality[i] + gain)
        tokens = p.continue_tokens + (p.plan_tokens - p.continue_tokens) * fresh_plan
        done = _spend(
            i,
            fresh_plan | kept,
            tokens,
            p,
            budget,
            now,
            context,
            prompt,
            completion,
            calls,
            status,
            alive,
        )
        fresh_plan &= done
        kept &= done
        context[i] += p.plan_tokens * fresh_plan + p.continue_tokens * kept
        has_plan[i] |= fresh_plan
        old = not fresh_plan
        drift[i] *= old
        quality_now[i] = q if fresh_plan else quality_now[i]
        cursor[i] *= old
        plan_age[i] *= old
        act = p.act_tokens
        a = _spend(
            i, alive[i], act, p, budget, now, context, prompt, completion, calls, status, alive
        )
        context[i] += act * a
        cursor[i] += a
        retry = a & (u[0, i] < invalid_rate)  # the output failed validation: one retry
        r = _spend(i, retry, act, p, budget, now, context, prompt, completion, calls, status, alive)
        context[i] += act * r
        a &= alive[i]
        invalid = r & (u[1, i] < invalid_rate)
        e = u[2, i] < context_quality(quality_now[i], context[i], p)
        expert[i] = e
        acting[i] = a
        wrong[i] = a and not e
        v = a and not invalid
        valid[i] = v
        invalid_run[i] = (invalid_run[i] + 1) * invalid if a else invalid_run[i]
        tool_calls[i] += v
    return acting, expert, valid, wrong


@njit(cache=True, nogil=True)
def arrive(s: Rows, valid: Array, seconds: Array, budget: float) -> Array:
    """The tool calls of the rows of ``valid`` take ``seconds``: the rows whose call arrived."""
    alive, status, now = s[0], s[1], s[2]
    arrived = np.zeros(alive.size, np.bool_)
    for i in range(alive.size):
        if valid[i]:
            arrived[i] = _advance(i, seconds[i], budget, now, status, alive)
    return arrived


@njit(cache=True, nogil=True)
def evaluate(s: Rows, p: Any, acting: Array, tokens: Array, budget: float) -> Array:
    """The result enters the context, and the evaluation's call: the rows that Reflect."""
    (alive, status, now, context, prompt, completion, calls) = s[:7]
    a = np.zeros(alive.size, np.bool_)
    for i in range(alive.size):
        if acting[i] and alive[i]:  # nearly every row: a jump the predictor gets right
            context[i] += result_tokens(tokens[i])
            ev = p.eval_tokens
            if _spend(
                i, True, ev, p, budget, now, context, prompt, completion, calls, status, alive
            ):
                context[i] += ev
                a[i] = True
    return a


@njit(cache=True, nogil=True)
def reflect(
    s: Rows,
    p: Any,  # Knobs
    a: Array,
    ok: Array,
    visible: Array,
    truth: Array,
    z: Array,
    tolerance: float,
) -> tuple[Array, Array]:
    """The evaluation from what is visible, every row: (δ_task, δ_act, δ_plan, confidence, dt).

    Also each row's productive flag; the drift, the critique's rightness, the plan's
    age and the clock of the last Reflect move as the array passes moved them.
    """
    now, drift = s[2], s[9]
    plan_age, critique_right = s[13], s[14]
    seen, last_reflect, steps = s[17], s[18], s[19]
    n = now.size
    out = np.empty((5, n))
    productive = np.empty(n, np.bool_)
    for i in range(n):
        up = visible[i] > seen[i] + PRODUCTIVE_MARGIN
        productive[i] = up
        seen[i] = visible[i]
        drift[i] = drift_after(drift[i], up)
        noises = (z[0, i], z[1, i], z[2, i])
        task, act, plan, confidence = sense(visible[i], drift[i], ok[i], up, noises, p.noise, p)
        critique_right[i] = abs(task - truth[i]) <= tolerance
        plan_age[i] += a[i]
        out[0, i], out[1, i], out[2, i], out[3, i] = task, act, plan, confidence
        out[4, i] = (now[i] - last_reflect[i]) * (steps[i] > 0)  # dt: 0 at the first Reflect
        last_reflect[i] = now[i]
    return out, productive


@njit(cache=True, nogil=True)
def conclude(s: Rows, a: Array, signal: Array, give_up: Array, delta_task: Array, t: int) -> int:
    """The law's decisions take effect (steps, the best step, stops, breaks): Reflects run."""
    alive, status, fresh = s[0], s[1], s[7]
    invalid_run = s[15]
    steps, best_delta, best_step, gave_up = s[19], s[20], s[21], s[22]
    reflects = 0
    for i in range(alive.size):
        fresh[i] = signal[i] == REPLAN
        if not a[i]:
            continue
        reflects += 1
        steps[i] += 1
        if delta_task[i] >= best_delta[i]:
            best_delta[i] = delta_task[i]
            best_step[i] = t
        if invalid_run[i] >= 3:  # three invalid outputs in a row: the episode is broken
            status[i] = INVALID
            alive[i] = False
        elif signal[i] == TERMINATE:
            status[i] = TERMINATED
            gave_up[i] = give_up[i]
            best_step[i] = t
            alive[i] = False
    return reflects


@njit(cache=True, nogil=True)
def effective_quality(quality: Array, context: Array, p: Any) -> Array:
    """``SimulatedAgent.effective_quality`` of every row (``context_quality``)."""
    out = np.empty(quality.size)
    for i in range(quality.size):
        out[i] = context_quality(quality[i], context[i], p)
    return out
