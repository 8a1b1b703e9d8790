"""Guardrails in Reflect (the OPAR document, §8.2): intercept high-risk actions.

A high-risk call (booking, paying, cancelling: ``ToolSpec.risk == "high"``)
is reviewed before it runs, against the agent's confidence at its last
Reflect and against the constraints of the goal the task can check from what
the agent has seen (``task.violates(action)``).  An intercepted call never
reaches the tool: the agent gets a failed result (error ``intercepted``), the
step records why, and the episode goes on; outcomes are still judged from the
ground truth only.
"""

from __future__ import annotations

from dataclasses import dataclass

from opar_sim.core.task import Task
from opar_sim.core.types import Action


@dataclass(frozen=True, slots=True)
class Guardrail:
    """Intercept a high-risk call made with low confidence or against a constraint."""

    min_confidence: float = 0.5
    constraints: bool = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ValueError(f"min_confidence must be in [0, 1], got {self.min_confidence}")

    def review(self, task: Task, action: Action, confidence: float) -> str | None:
        """Why ``action`` must not run now, or None to let it through.

        Only high-risk tools are reviewed; any other call passes.

        Args:
            task: The task whose tools and checkable constraints apply.
            action: The call the agent chose this step.
            confidence: The agent's confidence at its last Reflect (0 before the first).

        Returns:
            The interception reason (low confidence, or the constraint broken), or None.
        """
        spec = task.tools.get(action.tool)
        if spec is None or spec.risk != "high":
            return None
        if confidence < self.min_confidence:
            return f"low confidence {confidence:.2f} < {self.min_confidence:.2f}"
        if self.constraints:
            why = task.violates(action)
            if why:
                return why
        return None
