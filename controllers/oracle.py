"""The oracle: a decision law that reads the task's hidden state.

No real controller can see the hidden state; this one is declared to read it
(``TruthReader``: the loop hands it the episode's truth probe), to give the upper
bound every other law's regret is measured against.  It stops exactly when
the task is complete, gives up exactly when the task is infeasible, and
replans exactly when the current plan is bad: its hidden quality (the chance a
step is the expert's action) is below ``plan_quality``.  It is blind only to
what no controller can change: the luck of the next plan's draw and of the
tools.

The default bound 0.7 was measured, not guessed: on flight_booking (seed 0,
300 episodes) bounds 0.3, 0.5, 0.7, 0.9 give 82 %, 91 %, 95 %, 89 % success —
replanning too little keeps bad plans, too much pays for plans and context.
"""

from __future__ import annotations

from typing import ClassVar

from controllers.base import require_unit
from opar_sim.core.controller import ReflectContext, Truth, TruthProbe
from opar_sim.core.types import ControlSignal, Decision, Evaluation


class Oracle:
    """Truth: complete → TERMINATE, infeasible → give up, plan quality < bound → REPLAN."""

    name = "oracle"

    # the tunable space: the hidden plan quality below which a plan is bad
    SPACE: ClassVar[dict[str, tuple[float, float]]] = {"plan_quality": (0.3, 0.95)}

    def __init__(self, plan_quality: float = 0.7) -> None:
        """Build the law; it must be handed a truth probe before its first decision.

        Args:
            plan_quality: The hidden plan quality below which a plan is bad (REPLAN).
        """
        require_unit(plan_quality=plan_quality)
        self.plan_quality = plan_quality
        self._truth: TruthProbe | None = None

    def reset(self) -> None:
        """Stateless: the truth is read afresh every step."""

    def bind_truth(self, probe: TruthProbe) -> None:
        """Receive the probe of the episode about to run."""
        self._truth = probe

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """Decide from the hidden state, read through the probe.

        Args:
            evaluation: Ignored: the oracle reads the truth instead.
            ctx: Ignored.

        Returns:
            The decision, with terms ``progress`` and ``plan_quality`` (both hidden truth).

        Raises:
            RuntimeError: If no truth probe was bound (``bind_truth``).
        """
        if self._truth is None:
            raise RuntimeError("the oracle needs the episode's truth probe (bind_truth)")
        truth: Truth = self._truth()
        terms = {"progress": truth.progress, "plan_quality": truth.plan_quality}
        if truth.complete:
            return Decision(ControlSignal.TERMINATE, "task complete (truth)", terms)
        if not truth.feasible:
            return Decision(
                ControlSignal.TERMINATE, "give up: task infeasible (truth)", terms, give_up=True
            )
        if truth.plan_quality < self.plan_quality:
            return Decision(ControlSignal.REPLAN, "plan is bad (truth)", terms)
        return Decision(ControlSignal.CONTINUE, "plan is good (truth)", terms)
