"""The noisy expert's model, once: its knobs, its constants, its cost and its sensor.

Both engines run this model: ``SimulatedAgent`` (the SimPy engine, one episode,
floats) and the lockstep batch engine (``opar_sim.engines.batch``, N episodes).
Every constant of the model is named here and nowhere else; every rule is a
function here.  The batch engine's row loops (``engines.batch.phases``) call
these same float functions, compiled by Numba from this source, so there is
one text of each rule; ``tests/agents/test_expert_model.py`` proves with
hypothesis that the compiled rule gives the bits of the interpreted one.
The task-heterogeneity rules run on arrays in the batch engine (numpy's
``log`` and ``exp``, which a compiled loop might round differently): their
array twins sit beside them, written in the same operations in the same order,
and are proved equal the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar, overload

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

# -- the constants of the model (docs/design.md §3) -----------------------------------
RESULT_TOKEN_CAP = 200  # results are truncated to this many tokens in the context
RESULT_OVERHEAD = 4  # tokens a result adds beyond its own (its framing)
OBSERVATION_HEADROOM = 64  # tokens the worst-case bound allows the step's observation
BOUND_CALLS = 4  # calls of a step whose prompt the bound counts (plan, act, retry, evaluate)
WORLD_CHANGE_DRIFT = 0.8  # δ_plan's drift at least this once the world visibly changed
DRIFT_KEEP = 0.5  # drift ← DRIFT_KEEP · drift + DRIFT_STALL · (no visible progress)
DRIFT_STALL = 0.5
PRODUCTIVE_MARGIN = 1e-9  # visible progress must rise by more than this to count
ACT_PRODUCTIVE = 1.0  # δ_act's level: the call succeeded and visible progress rose
ACT_UNPRODUCTIVE = 0.6  # the call succeeded, nothing visible changed
ACT_FAILED = 0.1  # the call failed
ACT_NOISE = 0.5  # δ_act's noise σ is ACT_NOISE · noise
PLAN_NOISE = 0.5  # δ_plan's noise σ is PLAN_NOISE · noise
CONFIDENCE_DRIFT = 0.3  # confidence = δ_task · (1 − CONFIDENCE_DRIFT · drift)
QUALITY_MIN = 0.02  # a fresh plan's quality is clipped to [QUALITY_MIN, QUALITY_MAX]
QUALITY_MAX = 0.98
DONE_CLAIM = 0.999  # the evaluation names nothing missing once δ_task reaches this


class SimulatedAgentParams(BaseModel):
    """Every knob of the noisy-expert agent, with defaults that behave like a small LLM."""

    model_config = ConfigDict(extra="forbid")

    plan_alpha: float = Field(1.2, gt=0, description="Beta prior α of plan quality")
    plan_beta: float = Field(1.2, gt=0, description="Beta prior β of plan quality")
    critique_gain: float = Field(0.2, ge=0, le=1, description="quality added by a right critique")
    critique_tolerance: float = Field(
        0.15, ge=0, le=1, description="|δ_task − p| under which an evaluation counts as right"
    )
    bias: float = Field(0.05, ge=-1, le=1, description="self-assessment bias (>0: over-confident)")
    noise: float = Field(0.1, ge=0, le=1, description="self-assessment noise σ on δ_task")
    context_knee: int = Field(2500, gt=0, description="context tokens past which quality falls")
    context_decay: float = Field(
        0.5, ge=0, description="fraction of quality lost per knee of context beyond the knee"
    )
    quality_floor: float = Field(0.05, ge=0, le=1)
    system_tokens: int = Field(300, ge=0)
    plan_tokens: int = Field(250, ge=1, description="completion tokens of a fresh plan")
    continue_tokens: int = Field(30, ge=1, description="completion tokens to continue a plan")
    act_tokens: int = Field(40, ge=1)
    eval_tokens: int = Field(90, ge=1)
    tokens_per_second: float = Field(50.0, gt=0, description="generation speed")
    prompt_tokens_per_second: float = Field(1000.0, gt=0, description="prompt processing speed")
    observe_seconds: float = Field(0.1, ge=0)
    invalid_format_rate: float = Field(0.01, ge=0, le=1)
    # -- memory: compression (Algorithm 2, step 2.5) and Reflexion --------------------
    context_max: int | None = Field(
        None, gt=0, description="C_max: compress older steps past this many tokens (None: never)"
    )
    memory_tokens: int = Field(200, ge=1, description="tokens of the memory entry (the summary)")
    keep_steps: int = Field(2, ge=0, description="recent steps kept verbatim by a compression")
    memory_quality_loss: float = Field(
        0.05, ge=0, le=1, description="share of plan quality lost once memory is summarised"
    )
    memory_noise: float = Field(
        0.03, ge=0, le=1, description="self-assessment noise σ added once memory is summarised"
    )
    reflexion_gain: float = Field(
        0.12, ge=0, le=1, description="plan quality added per remembered critique (Reflexion)"
    )
    # -- task heterogeneity: a per-world random effect on the logit of plan quality ----
    task_effect_mean: float = Field(
        0.0, ge=-20, le=20, description="mean shift of the logit of plan quality per world"
    )
    task_effect_slope: float = Field(
        0.0, ge=-20, le=20, description="shift per unit of the world's feature `task_feature`"
    )
    task_effect_sd: float = Field(
        0.0, ge=0, le=20, description="spread σ of the world's shift (shared by its trials)"
    )
    task_feature: str = Field(
        "write_actions", description="the task feature the mean shift depends on"
    )

    @property
    def heterogeneous(self) -> bool:
        """Whether plan quality carries a per-world shift (any task-effect knob non-zero)."""
        return bool(self.task_effect_mean or self.task_effect_slope or self.task_effect_sd)


Number = TypeVar("Number", int, float, np.ndarray)


# -- the cost model: what a call spends, what a step may spend -----------------------
@overload
def call_seconds(prompt: int, completion: int, p: SimulatedAgentParams) -> float: ...


@overload
def call_seconds(
    prompt: np.ndarray, completion: np.ndarray | int, p: SimulatedAgentParams
) -> np.ndarray: ...


def call_seconds(prompt: Any, completion: Any, p: SimulatedAgentParams) -> Any:
    """The simulated duration of one model call (floats or arrays alike).

    Args:
        prompt: Prompt tokens (the context).
        completion: Completion tokens.
        p: The agent's knobs (prompt and generation speeds).

    Returns:
        prompt / prompt speed + completion / generation speed, in seconds.
    """
    return prompt / p.prompt_tokens_per_second + completion / p.tokens_per_second


def step_completions(fresh: Number, p: SimulatedAgentParams) -> Number:
    """Completion tokens of a step's calls at worst: plan, an act and its retry, evaluate.

    Args:
        fresh: Whether the step draws a fresh plan (a bool, or a bool array).
        p: The agent's knobs.

    Returns:
        The completions (integers, or an integer array).
    """
    plan = p.continue_tokens + (p.plan_tokens - p.continue_tokens) * fresh
    return plan + 2 * p.act_tokens + p.eval_tokens


def step_token_bound(context: Number, fresh: Number, p: SimulatedAgentParams) -> Number:
    """The worst case of a step's tokens (``SimulatedAgent.max_step_tokens``).

    Each of ``BOUND_CALLS`` calls reads at most the context grown by the step's
    completions, a capped result and the observation; a summary (memory
    compression on) is a fifth call.

    Args:
        context: The context's tokens now.
        fresh: Whether the step draws a fresh plan.
        p: The agent's knobs.

    Returns:
        The bound, in tokens (integers, or an integer array).
    """
    completions = step_completions(fresh, p)
    growth = completions + RESULT_TOKEN_CAP + OBSERVATION_HEADROOM
    bound = BOUND_CALLS * (context + growth) + completions
    if p.context_max is not None:  # a fifth call: the summary of step 2.5
        bound += context + growth + 2 * p.memory_tokens
    return bound  # type: ignore[no-any-return]


def result_tokens(tokens: int) -> int:
    """The tokens a tool result adds to the context: its own plus framing, capped.

    Args:
        tokens: The result's tokens.

    Returns:
        min(``RESULT_TOKEN_CAP``, tokens + ``RESULT_OVERHEAD``).
    """
    return min(RESULT_TOKEN_CAP, tokens + RESULT_OVERHEAD)


# -- plan quality -------------------------------------------------------------------
def clip_quality(quality: float) -> float:
    """A fresh plan's quality held inside [``QUALITY_MIN``, ``QUALITY_MAX``].

    Args:
        quality: The drawn quality with its raises.

    Returns:
        The clipped quality.
    """
    return min(QUALITY_MAX, max(QUALITY_MIN, quality))


def context_quality(quality: float, context: int, p: SimulatedAgentParams) -> float:
    """The plan's quality decayed past ``context_knee`` tokens of context, floored.

    Args:
        quality: The plan's quality (after any memory loss).
        context: The context's tokens now.
        p: The agent's knobs.

    Returns:
        The effective quality: unchanged up to the knee, then scaled by
        1 − decay · (context − knee) / knee and floored at ``quality_floor``.
    """
    excess = context - p.context_knee
    if excess <= 0:
        return quality
    factor = 1.0 - p.context_decay * excess / p.context_knee
    return max(p.quality_floor, quality * factor)


# -- the sensor: the evaluation from what is visible ---------------------------------
def drift_after(drift: float, productive: bool) -> float:
    """The drift after a Reflect: it decays, and grows when nothing visible moved.

    Args:
        drift: The drift before.
        productive: Whether visible progress rose.

    Returns:
        ``DRIFT_KEEP`` · drift + ``DRIFT_STALL`` · (not productive).
    """
    return DRIFT_KEEP * drift + (0.0 if productive else DRIFT_STALL)


def sense(
    visible: float,
    drift: float,
    ok: bool,
    productive: bool,
    noises: Sequence[float],
    sigma: float,
    p: SimulatedAgentParams,
) -> tuple[float, float, float, float]:
    """The evaluation's four numbers from what is visible, with the agent's noise.

    Args:
        visible: The visible progress now.
        drift: The drift after this Reflect (``drift_after``).
        ok: Whether the step's tool call succeeded.
        productive: Whether visible progress rose.
        noises: Three standard normals: δ_task's, δ_act's and δ_plan's.
        sigma: δ_task's noise σ (``noise``, more once memory was summarised).
        p: The agent's knobs.

    Returns:
        (δ_task, δ_act, δ_plan, confidence), each in [0, 1].
    """
    noise_task, noise_act, noise_plan = noises
    delta_task = min(1.0, max(0.0, visible + p.bias + sigma * noise_task))
    if not ok:
        act = ACT_FAILED
    elif productive:
        act = ACT_PRODUCTIVE
    else:
        act = ACT_UNPRODUCTIVE
    delta_act = min(1.0, max(0.0, act + ACT_NOISE * p.noise * noise_act))
    delta_plan = min(1.0, max(0.0, drift + PLAN_NOISE * p.noise * noise_plan))
    confidence = min(1.0, max(0.0, delta_task * (1.0 - CONFIDENCE_DRIFT * drift)))
    return delta_task, delta_act, delta_plan, confidence


# -- task heterogeneity: a world's shift of the logit of plan quality ---------------------
LOGIT_EDGE = 1e-6  # quality is held inside [LOGIT_EDGE, 1 − LOGIT_EDGE] before its logit


def shifted(quality: float, shift: float) -> float:
    """``quality`` moved by ``shift`` on the logit scale (kept inside (0, 1)).

    Args:
        quality: A probability.
        shift: The logit shift.

    Returns:
        sigmoid(logit(quality) + shift), with ``quality`` first clipped to
        [``LOGIT_EDGE``, 1 − ``LOGIT_EDGE``].
    """
    q = min(1.0 - LOGIT_EDGE, max(LOGIT_EDGE, quality))
    logit = float(np.log(q / (1.0 - q))) + shift
    return float(1.0 / (1.0 + np.exp(-logit)))


def shifted_array(quality: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``shifted`` of every row.

    Args:
        quality: Each row's probability.
        shift: Each row's logit shift.

    Returns:
        Each row's shifted quality.
    """
    q = np.clip(quality, LOGIT_EDGE, 1.0 - LOGIT_EDGE)
    logit = np.log(q / (1.0 - q)) + shift
    return np.asarray(1.0 / (1.0 + np.exp(-logit)))


def world_shift_array(
    p: SimulatedAgentParams, feature: np.ndarray, normals: np.ndarray
) -> np.ndarray:
    """Each world's shift u = mean + slope · feature + sd · z (``simulated.world_shift``).

    Args:
        p: The agent's knobs (``task_effect_*``).
        feature: Each world's ``task_feature``.
        normals: A standard normal per world (its z).

    Returns:
        Each world's shift.
    """
    shift = p.task_effect_mean + p.task_effect_slope * feature
    if p.task_effect_sd:
        shift = shift + p.task_effect_sd * normals
    return np.asarray(shift)
