"""The Controller protocol: a Reflect decision law, one instance per episode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from opar_sim.models import Decision, Evaluation


@dataclass(slots=True, frozen=True)
class Truth:
    """Hidden ground truth; only the oracle controller may read it."""

    progress: float
    complete: bool
    feasible: bool
    plan_quality: float


@dataclass(slots=True, frozen=True)
class ReflectContext:
    """What a controller is told besides the evaluation.

    ``now`` and ``dt`` are simulated seconds (never wall-clock); ``dt`` is the
    time since the previous Reflect (0 on the first).
    """

    step: int
    now: float
    dt: float
    plan_age: int  # steps taken under the current plan
    plan_exhausted: bool
    replans: int
    truth: Truth


@runtime_checkable
class Controller(Protocol):
    """A Reflect decision law: evaluations in, CONTINUE/REPLAN/TERMINATE out."""

    name: str

    def reset(self) -> None:
        """Forget everything: back to the state it was built in."""
        ...

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """Turn one evaluation into a decision with its reason and terms."""
        ...


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
