"""The cognitive PID of the OPAR document (§6.2) as a Reflect decision law.

The error is e = setpoint − δ_task (set-point 1: task complete).  A
``DiscretePID`` turns it into an effort u = P + I + D, with

* P = kp·e — how far from the goal now;
* I = Σ ki·e·dt — error accumulated over the history (repeated failure);
* D = kd·de/dt — the error's trend (approaching or drifting away),

dt being the simulated seconds between Reflect phases.  Built with no options
``update`` is exactly the textbook discrete PID (docs/design.md §6).  The set-point
is constant during an episode, so e − e_prev = −(δ_task − δ_task,prev): with
``derivative_on = "measurement"`` the D term equals the one on the error,
step for step (up to float rounding in the subtraction); the option only
matters when the set-point is changed mid-run (no derivative kick).

The effort → signal map is where agent thrash comes from: a bare three-level
relay on a noisy effort makes limit cycles (REPLAN, CONTINUE, REPLAN, ...),
each REPLAN paying a full plan.  So the map has, in this order:

1. **settling** — TERMINATE when the error has stayed inside ``settle_band``
   for ``settle_count`` consecutive Reflects and the confidence is at least
   ``confidence_floor``;
2. **give-up** — TERMINATE (reason "give up") when the error accumulated over
   the episode, Σ e·dt in error·seconds, has passed ``give_up_after`` and the
   error has made no new low (by more than ``give_up_margin``) for
   ``give_up_window`` Reflects: no trend toward the goal.  Off by default
   (``give_up_after = inf``): on a feasible task giving up is a premature stop;
3. **REPLAN relay** — REPLAN when u ≥ ``replan_threshold``, the plan has run
   at least ``min_dwell`` steps (the step just taken included: ``plan_age`` is
   1 at a plan's first Reflect, so ``min_dwell = 1``, the default, is no dwell
   and ``min_dwell = n`` keeps every plan for n steps), and the relay is armed.  With ``hysteresis``
   h > 0 a REPLAN disarms the relay until u falls to ``replan_threshold − h``
   (a Schmitt trigger: noise around the threshold cannot fire twice);
   ``integral_on_replan`` then resets the integral, keeps it, or scales it by
   ``integral_scale`` (bumpless transfer: the new plan inherits part of the
   blame of the old one);
4. CONTINUE otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from controllers.base import require_non_negative, require_unit
from controllers.discrete_pid import DiscretePID
from opar_sim.core.controller import ReflectContext
from opar_sim.core.types import ControlSignal, Decision, Evaluation

INTEGRAL_POLICIES = ("reset", "keep", "scale")


class CognitivePID(DiscretePID):
    """PID on e = 1 − δ_task: settled → TERMINATE, stalled → give up, u ≥ threshold → REPLAN."""

    name = "pid"

    # the tunable space (searched by ``opar-sim shootout``): gains, relay and settling
    SPACE: ClassVar[dict[str, tuple[float, float]]] = {
        "kp": (0.2, 3.0),
        "ki": (0.0, 0.2),
        "kd": (0.0, 12.0),
        "replan_threshold": (0.5, 2.5),
        "settle_band": (0.02, 0.3),
        "settle_count": (1, 3),
    }

    def __init__(
        self,
        kp: float = 1.0,
        ki: float = 0.03,
        kd: float = 6.0,
        *,
        replan_threshold: float = 1.1,
        hysteresis: float = 0.0,
        min_dwell: int = 1,
        integral_on_replan: str = "reset",
        integral_scale: float = 0.5,
        settle_band: float = 0.1,
        settle_count: int = 2,
        confidence_floor: float = 0.0,
        give_up_after: float = math.inf,
        give_up_window: int = 4,
        give_up_margin: float = 0.05,
        output_limits: Sequence[float | None] | None = None,
        integral_limits: Sequence[float | None] | None = None,
        integral_leak: float = 0.0,
        back_calculation: float = 0.0,
        derivative_on: str = "error",
        tau: float = 0.0,
        setpoint: float = 1.0,
    ) -> None:
        """Build the law; the effort → signal map is described in the module docstring.

        Args:
            kp: Proportional gain on e = setpoint − δ_task.
            ki: Integral gain, per simulated second.
            kd: Derivative gain, in simulated seconds.
            replan_threshold: The effort u at or above which to REPLAN.
            hysteresis: Width h of the relay: after a REPLAN it re-arms once u falls
                to ``replan_threshold − h`` (0: always armed).
            min_dwell: Steps a plan must have run, the current one included, before
                it may be replanned (>= 1; 1 is no dwell).
            integral_on_replan: ``"reset"``, ``"keep"`` or ``"scale"`` the integral on REPLAN.
            integral_scale: The factor for ``integral_on_replan="scale"``, in [0, 1].
            settle_band: The error inside which the loop counts as settled, in [0, 1].
            settle_count: Consecutive settled Reflects needed to TERMINATE (>= 1).
            confidence_floor: The confidence a settled TERMINATE also needs, in [0, 1].
            give_up_after: Σ e·dt (error·seconds) past which giving up is allowed (inf: never).
            give_up_window: Reflects without a new error low before giving up (>= 1).
            give_up_margin: How much lower an error must be to count as a new low.
            output_limits: (low, high) clamp of the effort; None leaves it open.
            integral_limits: (low, high) clamp of the I term; defaults to ``output_limits``.
            integral_leak: Decay rate λ of the integral, in 1/s.
            back_calculation: Anti-windup tracking gain kt, in 1/s.
            derivative_on: ``"error"`` or ``"measurement"``.
            tau: Time constant of the derivative filter, in s.
            setpoint: The target of δ_task (1: task complete).
        """
        require_non_negative(
            replan_threshold=replan_threshold,
            hysteresis=hysteresis,
            min_dwell=min_dwell,
            give_up_after=give_up_after,
            give_up_margin=give_up_margin,
        )
        require_unit(
            settle_band=settle_band,
            confidence_floor=confidence_floor,
            integral_scale=integral_scale,
        )
        counts = (
            ("settle_count", settle_count),
            ("give_up_window", give_up_window),
            ("min_dwell", min_dwell),
        )
        for name, count in counts:
            if count < 1:
                raise ValueError(f"{name} must be >= 1, got {count}")
        if integral_on_replan not in INTEGRAL_POLICIES:
            raise ValueError(
                f"integral_on_replan must be 'reset', 'keep' or 'scale', got {integral_on_replan!r}"
            )
        self.replan_threshold = replan_threshold
        self.hysteresis = hysteresis
        self.min_dwell = min_dwell
        self.integral_on_replan = integral_on_replan
        self.integral_scale = integral_scale
        self.settle_band = settle_band
        self.settle_count = settle_count
        self.confidence_floor = confidence_floor
        self.give_up_after = give_up_after
        self.give_up_window = give_up_window
        self.give_up_margin = give_up_margin
        super().__init__(
            kp,
            ki,
            kd,
            output_limits=output_limits,
            integral_limits=integral_limits,
            integral_leak=integral_leak,
            back_calculation=back_calculation,
            derivative_on=derivative_on,
            tau=tau,
            setpoint=setpoint,
        )
        self.reset()

    def reset(self) -> None:
        """Clear the PID, the settling and give-up memories, and re-arm the relay."""
        super().reset()
        self._settled = 0
        self._armed = True
        self._accumulated = 0.0  # Σ e·dt over the episode; unlike I, never reset by a REPLAN
        self._best_error = math.inf
        self._since_best = 0

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """Update the PID on e = setpoint − δ_task, then settle, give up, REPLAN or CONTINUE.

        Args:
            evaluation: The agent's self-assessment; δ_task and confidence are read.
            ctx: The loop's context: ``dt`` clocks the PID, ``plan_age`` the dwell.

        Returns:
            The decision, with terms ``error``, ``p``, ``i``, ``d``, ``effort`` and
            ``accumulated`` (Σ e·dt over the episode).
        """
        measurement = evaluation.delta_task
        error = self.setpoint - measurement
        effort = self.update(error, ctx.dt, measurement=measurement)
        self._accumulated += error * ctx.dt
        if error < self._best_error - self.give_up_margin:
            self._best_error = error
            self._since_best = 0
        else:
            self._since_best += 1
        terms = {
            "error": error,
            "p": self._p,
            "i": self._i,
            "d": self._d,
            "effort": effort,
            "accumulated": self._accumulated,
        }
        self._settled = self._settled + 1 if error <= self.settle_band else 0
        if self._settled >= self.settle_count and evaluation.confidence >= self.confidence_floor:
            return Decision(ControlSignal.TERMINATE, "settled: error inside band", terms)
        if self._accumulated >= self.give_up_after and self._since_best >= self.give_up_window:
            return Decision(
                ControlSignal.TERMINATE,
                "give up: error accumulated with no trend to goal",
                terms,
                give_up=True,
            )
        threshold = self.replan_threshold
        if not self._armed and effort <= threshold - self.hysteresis:
            self._armed = True
        if effort < threshold:
            return Decision(ControlSignal.CONTINUE, "effort below replan threshold", terms)
        if ctx.plan_age < self.min_dwell:
            return Decision(ControlSignal.CONTINUE, "replan held: minimum dwell", terms)
        if not self._armed:
            return Decision(ControlSignal.CONTINUE, "replan held: relay not re-armed", terms)
        if self.integral_on_replan == "reset":
            self.integral = 0.0
        elif self.integral_on_replan == "scale":
            self.integral = self._i * self.integral_scale
        self._armed = self.hysteresis == 0.0
        return Decision(ControlSignal.REPLAN, "effort above replan threshold", terms)
