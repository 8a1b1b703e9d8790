"""The Controller protocol: a Reflect decision law, one instance per episode.

A controller reads the agent's evaluation and what the loop tells it
(``ReflectContext``: simulated time, plan age, replans) and emits a
``Decision``.  The hidden ground truth is not in the context: a law that is
declared to need it (the oracle) implements ``TruthReader`` and is handed a
``TruthProbe`` by the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from opar_sim.core.types import Decision, Evaluation


@dataclass(slots=True, frozen=True)
class Truth:
    """Hidden ground truth; only the oracle controller may read it.

    ``plan_quality`` is the plan's drawn quality; ``effective_quality`` the chance
    the agent's next step is the expert's action given what it has lost since
    (context decay, memory summaries), as the agent reports it
    (``ReportsEffectiveQuality``).  ``None`` when it was not read (a truth built
    by hand, a replay of a run recorded before the field): read ``quality``.
    """

    progress: float
    complete: bool
    feasible: bool
    plan_quality: float
    effective_quality: float | None = None

    @property
    def quality(self) -> float:
        """The effective quality when it was read, else the plan's drawn quality."""
        return self.plan_quality if self.effective_quality is None else self.effective_quality


@dataclass(slots=True, frozen=True)
class ReflectContext:
    """What a controller is told besides the evaluation.

    ``now`` and ``dt`` are simulated seconds (never wall-clock); ``dt`` is the
    time since the previous Reflect (0 on the first).
    """

    step: int
    now: float
    dt: float
    plan_age: int  # steps taken under the current plan, this one included (>= 1)
    plan_exhausted: bool
    replans: int


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


TruthProbe = Callable[[], "Truth"]
"""Reads the hidden ground truth now; handed only to what declares it needs it."""


@runtime_checkable
class TruthReader(Protocol):
    """A part that is declared to read the hidden state (the oracle, a human approver)."""

    def bind_truth(self, probe: TruthProbe) -> None:
        """Receive the probe of the episode about to run."""
        ...
