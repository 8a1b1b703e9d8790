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
   more than ``min_dwell`` steps (``plan_age`` counts the step just taken, so it
   is 1 at a plan's first Reflect: ``min_dwell = 0``, the default, is no dwell,
   and ``min_dwell = n`` lets no plan be discarded before its (n + 1)-th step),
   and the relay is armed.  With ``hysteresis``
   h > 0 a REPLAN disarms the relay until u falls to ``replan_threshold − h``
   (a Schmitt trigger: noise around the threshold cannot fire twice);
   ``integral_on_replan`` then resets the integral, keeps it, or scales it by
   ``integral_scale`` (bumpless transfer: the new plan inherits part of the
   blame of the old one);
4. CONTINUE otherwise.

**Pace** (``pace`` > 0; the fitted default 0.17, 0 turns it off): the effort that drives the REPLAN
relay is computed on the plan's shortfall against an expected pace instead of
the task error: e_pace = clip(pace · plan_age − (δ_task − δ_task at the
plan's start), 0, 1), so P is how far the current plan lags behind ``pace``
progress per step, I the lag accumulated under it (reset with the plan) and D
whether it is falling further behind.  Settling and giving up still read the
task error.  A plan that is on pace has no effort however far the goal is,
which the task error cannot express: its P term alone can never REPLAN when
``kp`` · e stays under the threshold.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from controllers.base import require_non_negative, require_unit
from controllers.discrete_pid import DiscretePID
from opar_sim.core.controller import ReflectContext
from opar_sim.core.types import ControlSignal, Decision, Evaluation

INTEGRAL_POLICIES = ("reset", "keep", "scale")


class CognitivePID(DiscretePID):
    """PID on the pace error (pace 0: on e = 1 − δ_task); settle rule → TERMINATE, u → REPLAN.

    The REPLAN effort u acts on the plan's lag behind an expected pace of progress when
    ``pace`` > 0 (the shipped default), on the task error e = 1 − δ_task when ``pace`` is 0;
    the settle rule stops once e stays within ``settle_band`` for ``settle_count`` Reflects,
    and a stall (no new best error for a while) gives up.
    """

    name = "pid"

    # the tunable space (searched by ``opar-sim shootout``): gains, relay and settling
    SPACE: ClassVar[dict[str, tuple[float, float]]] = {
        "kp": (0.2, 3.0),
        "ki": (0.0, 0.2),
        "kd": (0.0, 12.0),
        "replan_threshold": (0.5, 2.5),
        "settle_band": (0.02, 0.3),
        "settle_count": (1, 3),
        "pace": (0.0, 0.3),
    }

    def __init__(
        self,
        kp: float = 2.3,
        ki: float = 0.17,
        kd: float = 1.6,
        *,
        replan_threshold: float = 2.4,
        hysteresis: float = 0.0,
        min_dwell: int = 0,
        integral_on_replan: str = "reset",
        integral_scale: float = 0.5,
        settle_band: float = 0.11,
        settle_count: int = 2,
        confidence_floor: float = 0.0,
        give_up_after: float = math.inf,
        give_up_window: int = 4,
        give_up_margin: float = 0.05,
        pace: float = 0.17,
        **options: Any,
    ) -> None:
        """Build the law; the effort → signal map is described in the module docstring.

        Args:
            kp: Proportional gain on e = setpoint − δ_task.
            ki: Integral gain, per simulated second.
            kd: Derivative gain, in simulated seconds.
            replan_threshold: The effort u at or above which to REPLAN.
            hysteresis: Width h of the relay: after a REPLAN it re-arms once u falls
                to ``replan_threshold − h`` (0: always armed).
            min_dwell: Steps a plan must have run before the one just taken for
                it to be replanned (>= 0; 0 is no dwell).
            integral_on_replan: ``"reset"``, ``"keep"`` or ``"scale"`` the integral on REPLAN.
            integral_scale: The factor for ``integral_on_replan="scale"``, in [0, 1].
            settle_band: The error inside which the loop counts as settled, in [0, 1].
            settle_count: Consecutive settled Reflects needed to TERMINATE (>= 1).
            confidence_floor: The confidence a settled TERMINATE also needs, in [0, 1].
            give_up_after: Σ e·dt (error·seconds) past which giving up is allowed (inf: never).
            give_up_window: Reflects without a new error low before giving up (>= 1).
            give_up_margin: How much lower an error must be to count as a new low.
            pace: Expected δ_task gain per step under a plan; > 0 drives the REPLAN
                relay by the plan's shortfall against it (0: by the task error).
            **options: The PID's options, declared once by ``DiscretePID`` (limits of
                the effort and of the I term, integral leak, back-calculation,
                derivative source and filter, ``setpoint``: the target of δ_task,
                1 = task complete); the signature lists them.

        The defaults are re-fitted on tuning seeds (``opar-sim refit``,
        docs/defaults-fit.json), like every controller's.
        """
        require_unit(pace=pace)
        self.pace = pace
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
        )
        if min_dwell < 0:
            raise ValueError(f"min_dwell must be >= 0, got {min_dwell}")
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
        super().__init__(kp, ki, kd, **options)
        self.reset()

    def reset(self) -> None:
        """Clear the PID, the settling and give-up memories, and re-arm the relay."""
        super().reset()
        self._settled = 0
        self._armed = True
        self._accumulated = 0.0  # Σ e·dt over the episode; unlike I, never reset by a REPLAN
        self._best_error = math.inf
        self._since_best = 0
        self._replans_seen = 0  # pace: REPLANs seen, to spot a new plan's start
        self._baseline = 0.0  # pace: δ_task when the current plan started
        self._last = 0.0  # pace: the previous δ_task

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
        if self.pace:
            if ctx.replans != self._replans_seen:  # a new plan since the last Reflect
                self._replans_seen = ctx.replans
                self._baseline = self._last
            self._last = measurement
            gained = measurement - self._baseline
            lag = min(1.0, max(0.0, self.pace * ctx.plan_age - gained))
            effort = self.update(lag, ctx.dt)
        else:
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
        if self.pace:
            terms["lag"] = lag
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
        if ctx.plan_age <= self.min_dwell:
            return Decision(ControlSignal.CONTINUE, "replan held: minimum dwell", terms)
        if not self._armed:
            return Decision(ControlSignal.CONTINUE, "replan held: relay not re-armed", terms)
        if self.integral_on_replan == "reset":
            self.integral = 0.0
        elif self.integral_on_replan == "scale":
            self.integral = self._i * self.integral_scale
        self._armed = self.hysteresis == 0.0
        return Decision(ControlSignal.REPLAN, "effort above replan threshold", terms)
