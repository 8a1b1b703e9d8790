"""The kernel: domain types, the protocols of every pluggable part, seeding, the loop, supervision.

It imports nothing else of the project; everything else builds on it.
"""

from opar_sim.core.types import (
    Action,
    ActionResult,
    ControlSignal,
    Cost,
    Decision,
    EpisodeResult,
    Evaluation,
    Observation,
    Outcome,
    Plan,
    PlanStep,
    StepRecord,
)

__all__ = [
    "Action",
    "ActionResult",
    "ControlSignal",
    "Cost",
    "Decision",
    "EpisodeResult",
    "Evaluation",
    "Observation",
    "Outcome",
    "Plan",
    "PlanStep",
    "StepRecord",
]
