"""The cognitive PID of the OPAR document (§6.2) as a Reflect decision law.

The error is e = 1 − δ_task (set-point: task complete).  The PID turns it into
an effort u = P + I + D, with

* P = kp·e — how far from the goal now;
* I = Σ ki·e·dt — error accumulated over the history (repeated failure);
* D = kd·(e − e_prev)/dt — the error's trend (approaching or drifting away),
  0 on the first update and when dt = 0;

dt being the simulated seconds between Reflect phases.  Built with no options
this is exactly the textbook discrete PID (DESIGN.md §6).  The effort is then
mapped to a signal: REPLAN when u reaches ``replan_threshold`` (the plan is not
closing the error fast enough), TERMINATE when the error has settled inside
``settle_band`` for ``settle_count`` consecutive Reflects with enough
confidence, CONTINUE otherwise.
"""

from __future__ import annotations

import math

from controllers.base import ReflectContext, require_non_negative, require_unit
from opar_sim.models import ControlSignal, Decision, Evaluation


class CognitivePID:
    """A PID on the task error with an effort → CONTINUE/REPLAN/TERMINATE map."""

    name = "pid"

    def __init__(
        self,
        kp: float = 1.0,
        ki: float = 0.03,
        kd: float = 6.0,
        *,
        replan_threshold: float = 1.1,
        settle_band: float = 0.1,
        settle_count: int = 2,
        confidence_floor: float = 0.0,
        min_dwell: int = 1,
        integral_on_replan: str = "reset",
    ) -> None:
        require_non_negative(
            kp=kp, ki=ki, kd=kd, replan_threshold=replan_threshold, min_dwell=min_dwell
        )
        require_unit(settle_band=settle_band, confidence_floor=confidence_floor)
        if settle_count < 1:
            raise ValueError(f"settle_count must be >= 1, got {settle_count}")
        if integral_on_replan not in ("reset", "keep"):
            raise ValueError(
                f"integral_on_replan must be 'reset' or 'keep', got {integral_on_replan!r}"
            )
        self.kp = kp
        self.ki = ki
        self.kd = kd
        self.replan_threshold = replan_threshold
        self.settle_band = settle_band
        self.settle_count = settle_count
        self.confidence_floor = confidence_floor
        self.min_dwell = min_dwell
        self.integral_on_replan = integral_on_replan
        self.reset()

    # -- the PID itself ----------------------------------------------------------
    def reset(self) -> None:
        """Clear the integral, the derivative memory and the settling counter."""
        self._p = 0.0
        self._i = 0.0
        self._d = 0.0
        self._previous: float | None = None
        self._settled = 0

    def update(self, error: float, dt: float) -> float:
        """Advance the PID by one sample of ``error`` after ``dt`` seconds; return the effort."""
        if not math.isfinite(error):
            raise ValueError(f"error must be finite, got {error}")
        if dt < 0 or not math.isfinite(dt):
            raise ValueError(f"dt must be finite and >= 0, got {dt}")
        self._p = self.kp * error
        self._i += self.ki * error * dt
        if self._previous is None or dt == 0:
            self._d = 0.0
        else:
            self._d = self.kd * (error - self._previous) / dt
        self._previous = error
        return self._p + self._i + self._d

    @property
    def components(self) -> tuple[float, float, float]:
        """The last (P, I, D) terms."""
        return (self._p, self._i, self._d)

    # -- the effort → signal map -----------------------------------------------
    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        error = 1.0 - evaluation.delta_task
        effort = self.update(error, ctx.dt)
        p, i, d = self.components
        terms = {"error": error, "p": p, "i": i, "d": d, "effort": effort}
        if error <= self.settle_band:
            self._settled += 1
        else:
            self._settled = 0
        if self._settled >= self.settle_count and evaluation.confidence >= self.confidence_floor:
            return Decision(ControlSignal.TERMINATE, "settled: error inside band", terms)
        if effort >= self.replan_threshold and ctx.plan_age >= self.min_dwell:
            if self.integral_on_replan == "reset":
                self._i = 0.0
            return Decision(ControlSignal.REPLAN, "effort above replan threshold", terms)
        return Decision(ControlSignal.CONTINUE, "effort below replan threshold", terms)
