"""Bang-bang: a Reflect law with no damping at all, to test the undamped-spring claim.

The OPAR document says a loop without Reflect oscillates like an undamped
spring; ``open_loop`` cannot show it (it measures nothing, so it never
corrects, it only stops).  This law is the other reading: a Reflect that
measures the error and corrects it, with nothing that damps the correction.
The error is e = 1 − δ_task; the law REPLANs whenever the error read
``delay`` Reflects ago is above ``threshold`` and CONTINUEs otherwise — a
pure two-level relay: no integral, no derivative, no hysteresis, no dwell,
no confirmation.  It never TERMINATEs until δ_task ≥ ``complete`` (the
current reading), and never gives up.

With ``delay = 0`` it is the bare relay; ``delay = d`` > 0 is the relay with
a dead time of d Reflects (until d readings exist it reads the oldest one),
the classic recipe for a limit cycle in a relay loop.
"""

from __future__ import annotations

from collections import deque
from typing import ClassVar

from controllers.base import require_unit
from opar_sim.core.controller import ReflectContext
from opar_sim.core.types import ControlSignal, Decision, Evaluation


class BangBang:
    """δ_task ≥ complete → TERMINATE; delayed e = 1 − δ_task > threshold → REPLAN; else CONTINUE."""

    name = "bang_bang"

    # the tunable space (searched by ``opar-sim shootout``)
    SPACE: ClassVar[dict[str, tuple[float, float]]] = {
        "threshold": (0.05, 0.95),
        "complete": (0.5, 0.99),
        "delay": (0, 3),
    }

    def __init__(self, threshold: float = 0.95, complete: float = 0.95, delay: int = 0) -> None:
        """Build the relay.

        Args:
            threshold: The error e = 1 − δ_task above which to REPLAN.
            complete: δ_task at or above which to TERMINATE.
            delay: How many Reflects old the error the relay reads is (0: the current one).

        Raises:
            ValueError: If a threshold is outside [0, 1] or ``delay`` is not a
                non-negative integer.
        """
        require_unit(threshold=threshold, complete=complete)
        if isinstance(delay, bool) or not isinstance(delay, int) or delay < 0:
            raise ValueError(f"delay must be a non-negative integer, got {delay!r}")
        self.threshold = threshold
        self.complete = complete
        self.delay = delay
        self._errors: deque[float] = deque(maxlen=delay + 1)

    def reset(self) -> None:
        """Forget the delayed errors."""
        self._errors.clear()

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """Switch on the delayed error; stop only on a completion reading.

        Args:
            evaluation: The agent's self-assessment; only δ_task is read.
            ctx: Ignored: the relay counts Reflects, not seconds.

        Returns:
            The decision, with terms ``error`` (now) and ``delayed_error`` (the one switched on).
        """
        error = 1.0 - evaluation.delta_task
        self._errors.append(error)
        delayed = self._errors[0]  # the oldest kept: ``delay`` Reflects ago once full
        terms = {"error": error, "delayed_error": delayed}
        if evaluation.delta_task >= self.complete:
            return Decision(ControlSignal.TERMINATE, "δ_task reached complete", terms)
        if delayed > self.threshold:
            return Decision(ControlSignal.REPLAN, "error above the threshold", terms)
        return Decision(ControlSignal.CONTINUE, "error at or below the threshold", terms)
