"""Replan on a clock: smolagents' ``planning_interval``.

smolagents runs a planning step every N action steps whatever happened in
between, and the agent ends the run itself by giving its final answer.  Here:
REPLAN once the current plan has run ``interval`` steps; TERMINATE when the
agent's own estimate δ_task reaches ``complete`` (its "final answer");
CONTINUE otherwise.  State-blind replanning pays for fresh plans when the
plan is good and waits out a bad plan until the clock comes round.
"""

from __future__ import annotations

from typing import ClassVar

from controllers.base import require_unit
from opar_sim.core.controller import ReflectContext
from opar_sim.core.types import ControlSignal, Decision, Evaluation


class FixedInterval:
    """δ_task ≥ complete → TERMINATE; every `interval` steps under a plan → REPLAN."""

    name = "fixed_interval"

    # the tunable space (searched by ``opar-sim shootout``)
    SPACE: ClassVar[dict[str, tuple[float, float]]] = {
        "interval": (1, 8),
        "complete": (0.5, 0.99),
    }

    def __init__(self, interval: int = 4, complete: float = 0.99) -> None:
        """Build the law.

        Args:
            interval: Steps under one plan after which to REPLAN (smolagents' N, >= 1).
            complete: δ_task at which the agent gives its final answer (TERMINATE).
        """
        if interval < 1:
            raise ValueError(f"interval must be >= 1, got {interval}")
        require_unit(complete=complete)
        self.interval = interval
        self.complete = complete

    def reset(self) -> None:
        """Stateless: the plan's age comes from the loop."""

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """TERMINATE on the final answer, REPLAN when the plan's age reaches the interval.

        Args:
            evaluation: The agent's self-assessment; only δ_task is read.
            ctx: The loop's context; ``plan_age`` clocks the planning interval.

        Returns:
            The decision, with terms ``delta_task`` and ``plan_age``.
        """
        terms = {"delta_task": evaluation.delta_task, "plan_age": float(ctx.plan_age)}
        if evaluation.delta_task >= self.complete:
            return Decision(ControlSignal.TERMINATE, "final answer: δ_task ≥ complete", terms)
        if ctx.plan_age >= self.interval:
            return Decision(ControlSignal.REPLAN, "planning interval reached", terms)
        return Decision(ControlSignal.CONTINUE, "within planning interval", terms)
