"""Open loop: no Reflect at all — plan once and follow the plan to its end.

The spring without a damper: nothing measures the error, so nothing corrects
a bad plan or notices an early finish.  The run stops when the plan's steps
are used up (``ReflectContext.plan_exhausted``), whatever the task's state.
It is the baseline every closed-loop law must beat.
"""

from __future__ import annotations

from typing import ClassVar

from opar_sim.core.controller import ReflectContext
from opar_sim.core.types import ControlSignal, Decision, Evaluation


class OpenLoop:
    """Follow the first plan; TERMINATE when it is exhausted; never REPLAN."""

    name = "open_loop"

    # nothing to tune: the law has no parameter (``opar-sim shootout`` searches only
    # the shared stop confirmation for it)
    SPACE: ClassVar[dict[str, tuple[float, float]]] = {}

    def reset(self) -> None:
        """Stateless: nothing to forget."""

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """CONTINUE while the plan has steps left, TERMINATE once it is exhausted.

        Args:
            evaluation: Ignored: an open loop measures nothing.
            ctx: The loop's context; ``plan_exhausted`` ends the run.

        Returns:
            The decision, with the term ``plan_age``.
        """
        terms = {"plan_age": float(ctx.plan_age)}
        if ctx.plan_exhausted:
            return Decision(ControlSignal.TERMINATE, "plan exhausted", terms)
        return Decision(ControlSignal.CONTINUE, "following the plan", terms)
