"""Algorithm 2 of the OPAR document: fixed thresholds on δ_task, δ_plan and δ_act.

TERMINATE when δ_task ≥ ``threshold_complete``; otherwise REPLAN when the
world drifted from the plan (δ_plan > ``threshold_drift``) or the last action
did not do what was expected (δ_act < ``threshold_valid``); otherwise
CONTINUE.  Stateless: a bare three-level relay on noisy readings.
"""

from __future__ import annotations

from typing import ClassVar

from controllers.base import require_unit
from opar_sim.core.controller import ReflectContext
from opar_sim.core.types import ControlSignal, Decision, Evaluation


class ThresholdReflector:
    """δ_task ≥ complete → TERMINATE; δ_plan > drift or δ_act < valid → REPLAN; else CONTINUE."""

    name = "threshold"

    # the tunable space (searched by ``opar-sim shootout``)
    SPACE: ClassVar[dict[str, tuple[float, float]]] = {
        "threshold_complete": (0.5, 0.99),
        "threshold_drift": (0.2, 1.0),
        "threshold_valid": (0.0, 0.7),
    }

    def __init__(
        self,
        threshold_complete: float = 0.99,
        threshold_drift: float = 0.85,
        threshold_valid: float = 0.031,
    ) -> None:
        """Build the law.

        Args:
            threshold_complete: δ_task at or above which to TERMINATE.
            threshold_drift: δ_plan above which the plan has drifted (REPLAN).
            threshold_valid: δ_act below which the last action failed (REPLAN).
        """
        require_unit(
            threshold_complete=threshold_complete,
            threshold_drift=threshold_drift,
            threshold_valid=threshold_valid,
        )
        self.threshold_complete = threshold_complete
        self.threshold_drift = threshold_drift
        self.threshold_valid = threshold_valid

    def reset(self) -> None:
        """Stateless: nothing to forget."""

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """Compare δ_task, δ_plan and δ_act with the fixed thresholds, in that order.

        Args:
            evaluation: The agent's self-assessment (Algorithm 2's sensor reading).
            ctx: Ignored: the law is stateless.

        Returns:
            The decision, with terms ``delta_task``, ``delta_act`` and ``delta_plan``.
        """
        terms = {
            "delta_task": evaluation.delta_task,
            "delta_act": evaluation.delta_act,
            "delta_plan": evaluation.delta_plan,
        }
        if evaluation.delta_task >= self.threshold_complete:
            return Decision(ControlSignal.TERMINATE, "goal reached: δ_task ≥ threshold", terms)
        if evaluation.delta_plan > self.threshold_drift:
            return Decision(ControlSignal.REPLAN, "plan drifted: δ_plan > threshold", terms)
        if evaluation.delta_act < self.threshold_valid:
            return Decision(ControlSignal.REPLAN, "action ineffective: δ_act < threshold", terms)
        return Decision(ControlSignal.CONTINUE, "on track", terms)
