"""ReAct self-reflection as a decision law (the ReAct document, "Self-Reflection").

After each observation the agent rates its confidence and lists what it still
misses (the reflection template: confidence, sufficient, missing,
next_action).  The law:

* TERMINATE when confidence ≥ ``threshold`` (the document's typical value is 0.8;
  the default, 0.82, is re-fitted on tuning seeds like every default: ``opar-sim refit``);
* REPLAN ("diagnose the cause, change strategy: another query, another tool")
  when the evaluation names missing information **and** the last step made no
  progress (δ_act < ``progress_act``) — missing information alone is the normal
  state of an unfinished task and is no reason to throw the plan away; a step
  that moved forward says the strategy works.  A plan must have run more than
  ``min_dwell`` steps first (``plan_age`` counts the step just taken, 1 at a
  plan's first Reflect: the default 0 is no dwell, and 1 lets no plan be
  discarded after one unlucky step);
* CONTINUE otherwise ("not confident yet: next round").
"""

from __future__ import annotations

from typing import ClassVar

from controllers.base import made_progress, require_unit
from opar_sim.core.controller import ReflectContext
from opar_sim.core.types import ControlSignal, Decision, Evaluation


class ConfidenceReflector:
    """confidence ≥ threshold → TERMINATE; information missing and no progress → REPLAN."""

    name = "confidence"

    # the tunable space (searched by ``opar-sim shootout``)
    SPACE: ClassVar[dict[str, tuple[float, float]]] = {
        "threshold": (0.5, 0.99),
        "progress_act": (0.1, 0.95),
        "min_dwell": (0, 3),
    }

    def __init__(
        self, threshold: float = 0.82, progress_act: float = 0.94, min_dwell: int = 3
    ) -> None:
        """Build the law.

        Args:
            threshold: The confidence at which to TERMINATE, in [0, 1].
            progress_act: δ_act at or above which the last step counts as progress.
            min_dwell: Steps a plan must have run before the one just taken for
                this law to REPLAN it (>= 0; 0 is no dwell).
        """
        require_unit(threshold=threshold, progress_act=progress_act)
        if min_dwell < 0:
            raise ValueError(f"min_dwell must be >= 0, got {min_dwell}")
        self.threshold = threshold
        self.progress_act = progress_act
        self.min_dwell = min_dwell

    def reset(self) -> None:
        """Stateless: nothing to forget."""

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """TERMINATE when confident; REPLAN when information is missing and the step stalled.

        Args:
            evaluation: The agent's self-assessment: its confidence, δ_act and what it misses.
            ctx: The loop's context; only ``plan_age`` is read (for ``min_dwell``).

        Returns:
            The decision, with terms ``confidence``, ``delta_act`` and ``missing`` (a count).
        """
        terms = {
            "confidence": evaluation.confidence,
            "delta_act": evaluation.delta_act,
            "missing": float(len(evaluation.missing)),
        }
        if evaluation.confidence >= self.threshold:
            return Decision(ControlSignal.TERMINATE, "confident: confidence ≥ threshold", terms)
        stalled = not made_progress(evaluation, self.progress_act)
        if evaluation.missing and stalled and ctx.plan_age > self.min_dwell:
            return Decision(
                ControlSignal.REPLAN, "information missing and no progress: change strategy", terms
            )
        return Decision(ControlSignal.CONTINUE, "not confident yet", terms)
