"""A first-order plant with dead time and a load disturbance: a clean subject for control analysis.

Goal
    Bring the plant output y to the set-point r = 1.0 (within ``band``).
Tools
    ``actuate(u)`` applies the input u ∈ [``u_min``, ``u_max``] for one sample
    and advances the plant by one sample; ``measure()`` reads the sensor
    without advancing it.
Observation
    The last measurement m_k = y_k + v_k, v_k ~ N(0, ``noise``²) (drawn once
    per sample), and the visible progress 1 − |r − m_k| clipped to [0, 1].
Progress
    One sample per ``actuate`` call (k counts samples, not seconds)::

        y_{k+1} = a·y_k + b·(u_{k−d} + w_k),   a = exp(−1/τ),  b = K·(1 − a)

    with gain K (``gain``), time constant τ (``tau``, in samples), dead time d
    (``dead_time`` samples: an input acts d samples later), y_0 = 0 and
    u_k = 0 before the first call.  w_k is the load disturbance: 0 until
    sample ``disturbance_at`` (drawn uniformly from ``disturbance_window``),
    then ``disturbance`` (in input units).  Progress is 1 − |r − y_k|,
    clipped to [0, 1], so an overshoot costs as much as a shortfall.
    For analysis: the open-loop step response to u ≡ 1 is
    y_k = K·(1 − a^{k−d}) for k > d; a proportional law u = K_c·(r − y)
    closes the loop with characteristic polynomial z^{d+1} − a·z^d + K_c·b,
    whose ultimate gain ``ultimate_gain()`` returns (a relay test on the
    same plant should find it).
How actions map to the input
    The expert's call is the dead-time compensating (deadbeat) input: the
    u that puts y_{k+d+1} on r given the inputs still in the pipeline and the
    current disturbance, clipped to the input range.  The simulated agent
    takes it with its plan quality q and otherwise one of the wrong calls,
    uniformly: ``actuate(0)`` (idle), ``actuate(u_max)`` (overdo it) or
    ``measure()`` (a sample lost: the plant does not advance).  So a plan of
    quality q drives the plant with u*_k with probability q: plan quality is
    the loop's actuator gain, and context degradation or a bad plan shows up
    as a noisy, biased input.
Termination
    Complete while |r − y_k| ≤ ``band``; always feasible (the input range
    covers the set-point and the disturbance).
Faults
    Tool latency, failures and timeouts from ``tools``; measurement noise;
    the load step; under the ``disturbance`` wrapper more load steps of
    ±``disturbance``/2 at random simulated times.
Version history
    v0: first version.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from environments.base import NoArgs, SimTask, ToolParams
from opar_sim.core.task import ToolSpec
from opar_sim.core.types import Action, ActionResult, Observation, PlanStep

SET_POINT = 1.0


class PlantParams(BaseModel):
    """Parameters of ``plant``: the first-order dynamics, dead time, load step and noise."""

    model_config = ConfigDict(extra="forbid")

    gain: float = Field(1.0, gt=0, description="K: steady-state output per unit input")
    tau: float = Field(3.0, gt=0, description="time constant τ, in samples")
    dead_time: int = Field(2, ge=0, le=50, description="d: samples before an input acts")
    u_min: float = Field(-1.0, description="lowest input")
    u_max: float = Field(2.0, description="highest input")
    disturbance: float = Field(-0.3, description="load step w (input units)")
    disturbance_window: tuple[int, int] = Field((5, 15), description="samples the step falls in")
    noise: float = Field(0.02, ge=0, description="σ of the measurement noise")
    band: float = Field(0.05, gt=0, lt=1, description="|r − y| counted as on the set-point")
    tools: ToolParams = ToolParams(latency_median=0.2, latency_sigma=0.3, failure_rate=0.02)


# Tool argument schemas carry no docstring: pydantic would put it in the JSON schema
# sent to the LLM (its "description"), changing the constrained output format.
class ActuateArgs(BaseModel):  # noqa: D101
    model_config = ConfigDict(extra="forbid")
    u: float = Field(ge=-100.0, le=100.0)


class Plant(SimTask):
    """First-order plant with dead time and a load step: hold y on the set-point 1.0."""

    name = "plant"
    Params = PlantParams
    TOOLS = (
        ToolSpec("actuate", "Apply input u for one sample", ActuateArgs),
        ToolSpec("measure", "Read the sensor", NoArgs),
    )
    params: PlantParams

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        p = self.params
        if not p.u_min < p.u_max:
            raise ValueError("u_min must be below u_max")
        self.a = math.exp(-1.0 / p.tau)
        self.b = p.gain * (1.0 - self.a)
        self.goal = f"Bring the plant output to {SET_POINT} and hold it within ±{p.band}."
        self._clear()

    def _clear(self) -> None:
        self.k = 0
        self.y = 0.0
        self.measured = 0.0
        self.w = 0.0
        self.step_at = 0
        self.pipeline: deque[float] = deque([0.0] * self.params.dead_time)
        self.outputs: list[float] = [0.0]

    def _reset_world(self) -> None:
        self._clear()
        lo, hi = self.params.disturbance_window
        self.step_at = int(self.rng.integers(min(lo, hi), max(lo, hi) + 1))
        self.measured = self._measure()

    def _measure(self) -> float:
        return self.y + self.params.noise * float(self.rng.standard_normal())

    # -- tools ---------------------------------------------------------------
    def _apply(self, action: Action) -> ActionResult:
        if action.tool == "measure":
            return ActionResult(True, f"y = {self.measured:.3f}", 0.0, tokens=8)
        p = self.params
        u = min(p.u_max, max(p.u_min, float(action.arg("u"))))
        self.pipeline.append(u)
        acting = self.pipeline.popleft()
        if self.k + 1 == self.step_at:
            self.w += p.disturbance
        self.y = self.a * self.y + self.b * (acting + self.w)
        self.k += 1
        self.outputs.append(self.y)
        self.measured = self._measure()
        return ActionResult(True, f"k={self.k} u={u:.3f} y = {self.measured:.3f}", 0.0, tokens=12)

    def disturb(self, rng: np.random.Generator) -> str | None:
        """A load step of ±disturbance/2."""
        step = 0.5 * self.params.disturbance * (1.0 if rng.random() < 0.5 else -1.0)
        self.w += step
        return f"load changed by {step:+.3f}"

    # -- ground truth and what the agent sees ----------------------------------
    @property
    def progress(self) -> float:
        """Ground-truth progress 1 − |r − y_k| on the true output, clipped to [0, 1]."""
        return min(1.0, max(0.0, 1.0 - abs(SET_POINT - self.y)))

    @property
    def complete(self) -> bool:
        """Whether the true output is within ``band`` of the set-point now."""
        return abs(SET_POINT - self.y) <= self.params.band

    def observe(self) -> Observation:
        """The sample count and the noisy measurement m_k; progress as seen through the noise."""
        seen = min(1.0, max(0.0, 1.0 - abs(SET_POINT - self.measured)))
        return Observation(f"k={self.k} y={self.measured:.3f}", seen, tokens=10)

    # -- the expert ------------------------------------------------------------
    def deadbeat_input(self) -> float:
        """The input that puts y_{k+d+1} on the set-point, given the pipeline and w."""
        y = self.y
        for u in self.pipeline:
            y = self.a * y + self.b * (u + self.w)
        u_star = (SET_POINT - self.a * y) / self.b - self.w
        return round(min(self.params.u_max, max(self.params.u_min, u_star)), 6)

    def expert_action(self) -> Action:
        """``actuate`` with the deadbeat input (see ``deadbeat_input``)."""
        return Action.of("actuate", u=self.deadbeat_input())

    def wrong_actions(self) -> Sequence[Action]:
        """Idle (u = 0), overdo it (u = u_max), or measure and lose the sample."""
        return (
            Action.of("actuate", u=0.0),
            Action.of("actuate", u=self.params.u_max),
            Action.of("measure"),
        )

    def plan_template(self) -> tuple[PlanStep, ...]:
        """Measure, then actuate toward the set-point, correcting for the load if it drifts."""
        return (
            PlanStep("measure", "read the output"),
            PlanStep(
                "actuate",
                "apply the input that reaches the set-point after the dead time",
                condition="the output drifts",
                fallback="correct for the load",
            ),
        )

    def answer(self) -> str:
        """The true output and the number of samples taken."""
        return f"y = {self.y:.3f} after {self.k} samples"

    # -- classic analysis ------------------------------------------------------
    def step(self, u: float) -> float:
        """Apply input ``u`` for one sample, with no tool latency or failure; return m_{k+1}.

        For classic control analysis (relay tests, closed loops driven by a PID),
        which drives the plant directly rather than through an agent's tools.
        """
        self._apply(Action.of("actuate", u=u))
        return self.measured

    def ultimate_gain(self, tol: float = 1e-6) -> float:
        """K_u: the proportional gain at which the closed loop reaches the stability limit."""
        d = self.params.dead_time

        def unstable(kc: float) -> bool:
            poly = np.zeros(d + 2)
            poly[0] = 1.0
            poly[1] = -self.a
            poly[-1] += kc * self.b
            return bool(np.max(np.abs(np.roots(poly))) >= 1.0)

        lo, hi = 0.0, 1.0
        while not unstable(hi):
            hi *= 2.0
        while hi - lo > tol:
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if unstable(mid) else (mid, hi)
        return hi
