"""Magentic-One's progress ledger as a decision law.

Magentic-One's orchestrator asks after every turn whether the request is
satisfied and whether progress is being made.  A stall counter rises by one
on a turn without progress and falls by one (not below 0) on a turn with
progress; when it reaches ``max_stalls`` (3 in Magentic-One) the orchestrator
leaves the inner loop, updates its facts and makes a new plan.  Here:

* TERMINATE when δ_task ≥ ``complete`` (the ledger's "request satisfied");
* REPLAN when the counter reaches ``max_stalls`` (the counter restarts at 0);
* TERMINATE with reason "give up" when it reaches ``max_stalls`` again after
  ``max_replans`` replans: new plans did not help;
* CONTINUE otherwise.

Progress is the evaluation's own verdict on the last step (δ_act ≥
``progress_act``, see ``controllers.base.made_progress``).
"""

from __future__ import annotations

from typing import ClassVar

from controllers.base import made_progress, require_unit
from opar_sim.core.controller import ReflectContext
from opar_sim.core.types import ControlSignal, Decision, Evaluation


class StallCounter:
    """N steps without progress → REPLAN; after M replans → give up; δ_task ≥ complete → stop."""

    name = "stall_counter"

    # the tunable space (searched by ``opar-sim shootout``)
    SPACE: ClassVar[dict[str, tuple[float, float]]] = {
        "max_stalls": (1, 6),
        "max_replans": (0, 6),
        "complete": (0.5, 0.99),
        "progress_act": (0.1, 0.95),
    }

    def __init__(
        self,
        max_stalls: int = 3,
        max_replans: int = 3,
        complete: float = 0.98,
        progress_act: float = 0.74,
    ) -> None:
        """Build the law.

        Args:
            max_stalls: Stall count at which to REPLAN (Magentic-One's 3, >= 1).
            max_replans: Replans after which a further stall means give up (>= 0).
            complete: δ_task at which the request counts as satisfied (TERMINATE).
            progress_act: δ_act at or above which the last step counts as progress.
        """
        if max_stalls < 1:
            raise ValueError(f"max_stalls must be >= 1, got {max_stalls}")
        if max_replans < 0:
            raise ValueError(f"max_replans must be >= 0, got {max_replans}")
        require_unit(complete=complete, progress_act=progress_act)
        self.max_stalls = max_stalls
        self.max_replans = max_replans
        self.complete = complete
        self.progress_act = progress_act
        self.reset()

    def reset(self) -> None:
        """Clear the stall counter and the count of replans it asked for."""
        self._stalls = 0
        self._replans = 0

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """Update the stall counter from δ_act, then TERMINATE, REPLAN, give up or CONTINUE.

        Args:
            evaluation: The agent's self-assessment; δ_act and δ_task are read.
            ctx: Ignored: the law keeps its own counts.

        Returns:
            The decision, with terms ``delta_task``, ``stalls`` and ``replans``.
        """
        if made_progress(evaluation, self.progress_act):
            self._stalls = max(0, self._stalls - 1)
        else:
            self._stalls += 1
        terms = {
            "delta_task": evaluation.delta_task,
            "stalls": float(self._stalls),
            "replans": float(self._replans),
        }
        if evaluation.delta_task >= self.complete:
            return Decision(ControlSignal.TERMINATE, "request satisfied: δ_task ≥ complete", terms)
        if self._stalls < self.max_stalls:
            return Decision(ControlSignal.CONTINUE, "stalls below limit", terms)
        if self._replans >= self.max_replans:
            return Decision(
                ControlSignal.TERMINATE, "give up: replans did not help", terms, give_up=True
            )
        self._stalls = 0
        self._replans += 1
        return Decision(ControlSignal.REPLAN, "stalled: max_stalls steps without progress", terms)
