"""What the Reflect decision laws share: parameter checks and the progress verdict."""

from __future__ import annotations

from opar_sim.core.types import Evaluation


def require_non_negative(**values: float) -> None:
    """Reject negative gains and thresholds with a message naming the parameter."""
    for name, value in values.items():
        if not value >= 0:  # also rejects NaN
            raise ValueError(f"{name} must be >= 0, got {value}")


def require_unit(**values: float) -> None:
    """Reject values outside [0, 1] with a message naming the parameter."""
    for name, value in values.items():
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value}")


PROGRESS_ACT = 0.8


def made_progress(evaluation: Evaluation, threshold: float = PROGRESS_ACT) -> bool:
    """The agent's own verdict that its last step moved it forward: δ_act ≥ threshold.

    δ_act ("did the last action do what was expected") is the evaluation's
    judgement of the last step, like Magentic-One's "is progress being made";
    it is a cleaner signal than a rise of δ_task, whose step-to-step noise is
    as large as one step's progress.
    """
    return evaluation.delta_act >= threshold
