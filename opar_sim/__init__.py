"""opar-sim: a control-theory workbench for agent loops.

The loop is Observe → Plan → Act → Reflect; the Reflect phase is a pluggable
controller emitting ``ControlSignal.CONTINUE``, ``REPLAN`` or ``TERMINATE``.
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

__version__ = "0.1.0"

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
    "__version__",
]
