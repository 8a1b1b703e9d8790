"""Stall and loop detectors as guards: the hand-made rules of agent frameworks, two from control.

Each detector keeps a *score* that it updates from every finished step
(``score``) and fires when the score reaches its ``threshold``; as a guard it
then turns a CONTINUE into a REPLAN ("stall: <name>"), never a TERMINATE.
All are off by default (the spec's ``[guards] detectors``,
``opar_sim.spec.guards.DetectorsSpec``).  ``opar-sim detectors`` scores each
against the simulator's truth of being stuck (``opar_sim.studies.detectors``).

================  ===========================================================  =========
name              score                                                        threshold
================  ===========================================================  =========
``same_call``     consecutive identical calls (tool and arguments)             3
``pattern``       length of the trailing alternation a→b→a→b… (a ≠ b)          4
``stall``         Magentic-One's stall counter: +1 on a step without progress  3
                  (δ_act < 0.8), −1 (not below 0) on one with progress
``near_identical`` consecutive rounds whose response (call and result text) is 3
                  at least ``similarity`` (0.9) alike to the round before
                  (difflib ratio), counting the first: AgentBench's check
``cusum``         Page's lower CUSUM of the δ_task increments Δ:               0.3
                  S = max(0, S + k − Δ), allowance k = 0.05
``integral``      the PID's integral Σ (1 − δ_task)·dt over the current plan   20
                  (error·simulated seconds; reset by a new plan)
================  ===========================================================  =========
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from difflib import SequenceMatcher
from typing import ClassVar

import numpy as np

from opar_sim.core.supervisor import GuardAction
from opar_sim.core.types import ControlSignal, Decision, StepRecord

PROGRESS_ACT = 0.8  # δ_act at or above which a step made progress (controllers.base's)


def _call(record: StepRecord) -> str:
    return record.action.label() if record.action is not None else ""


class Detector(ABC):
    """A score over the steps and a threshold; a REPLAN when the score reaches it."""

    name: str = "detector"
    default: ClassVar[float] = 1.0

    def __init__(self, threshold: float | None = None) -> None:
        self.threshold = self.default if threshold is None else float(threshold)
        self.reset(np.random.default_rng(0))

    def reset(self, rng: np.random.Generator) -> None:  # noqa: B027 (stateless detectors keep it)
        """Forget the last episode (a detector with memory overrides it)."""

    @abstractmethod
    def score(self, record: StepRecord) -> float:
        """Update the detector from a finished step; return its score now."""

    def check(self, record: StepRecord, decision: Decision) -> GuardAction | None:
        """REPLAN instead of a CONTINUE once the score reaches the threshold."""
        fired = self.score(record) >= self.threshold
        if fired and decision.signal is ControlSignal.CONTINUE:
            return GuardAction(ControlSignal.REPLAN, f"stall: {self.name}")
        return None


class SameCall(Detector):
    """The same call (tool and arguments) several times in a row (3)."""

    name = "same_call"
    default = 3.0

    def reset(self, rng: np.random.Generator) -> None:
        """Forget the last call."""
        self._last: str | None = None
        self._run = 0

    def score(self, record: StepRecord) -> float:
        """The number of consecutive identical calls ending with this step's."""
        call = _call(record)
        self._run = self._run + 1 if call == self._last else 1
        self._last = call
        return float(self._run)


class Pattern(Detector):
    """A repeating pattern of two calls, a→b→a→b (4)."""

    name = "pattern"
    default = 4.0

    def reset(self, rng: np.random.Generator) -> None:
        """Forget the calls."""
        self._calls: list[str] = []
        self._run = 0

    def score(self, record: StepRecord) -> float:
        """The length of the trailing run with period 2 between two different calls (0 if < 2)."""
        calls = self._calls
        calls.append(_call(record))
        if len(calls) > 3:
            del calls[0]
        n = len(calls)
        if n >= 3 and calls[-1] == calls[-3] and calls[-1] != calls[-2]:
            self._run += 1
        elif n >= 2 and calls[-1] != calls[-2]:
            self._run = 2
        else:
            self._run = 0
        return float(self._run if self._run >= 2 else 0)


class StallCount(Detector):
    """A stall counter: +1 on a step without progress, −1 (not below 0) with it (3).

    Magentic-One's progress ledger counts stalls this way and replans at 3.
    """

    name = "stall"
    default = 3.0

    def reset(self, rng: np.random.Generator) -> None:
        """The counter back to 0."""
        self._count = 0

    def score(self, record: StepRecord) -> float:
        """The counter after this step (progress: δ_act ≥ 0.8)."""
        e = record.evaluation
        progress = e is not None and e.delta_act >= PROGRESS_ACT
        self._count = max(0, self._count - 1) if progress else self._count + 1
        return float(self._count)


class NearIdentical(Detector):
    """AgentBench's check: near-identical responses in the last rounds (3)."""

    name = "near_identical"
    default = 3.0

    def __init__(self, threshold: float | None = None, similarity: float = 0.9) -> None:
        if not 0.0 <= similarity <= 1.0:
            raise ValueError(f"similarity must be in [0, 1], got {similarity}")
        self.similarity = similarity
        super().__init__(threshold)

    def reset(self, rng: np.random.Generator) -> None:
        """Forget the last response."""
        self._last: str | None = None
        self._run = 0

    def score(self, record: StepRecord) -> float:
        """Consecutive rounds (this one included) each ≥ ``similarity`` alike to the one before."""
        text = _call(record) + " -> " + (record.result.text if record.result else "")
        alike = (
            self._last is not None
            and SequenceMatcher(None, self._last, text, autojunk=False).ratio() >= self.similarity
        )
        self._run = self._run + 1 if alike else 1
        self._last = text
        return float(self._run)


class Cusum(Detector):
    """Page's lower CUSUM on the δ_task increments: progress slower than the allowance (0.3)."""

    name = "cusum"
    default = 0.3

    def __init__(self, threshold: float | None = None, allowance: float = 0.05) -> None:
        self.allowance = allowance
        super().__init__(threshold)

    def reset(self, rng: np.random.Generator) -> None:
        """The sum back to 0, no previous reading."""
        self._sum = 0.0
        self._previous = 0.0

    def score(self, record: StepRecord) -> float:
        """S = max(0, S + allowance − Δ), Δ the rise of δ_task since the previous reading."""
        e = record.evaluation
        reading = e.delta_task if e is not None else self._previous
        self._sum = max(0.0, self._sum + self.allowance - (reading - self._previous))
        self._previous = reading
        return self._sum


class Integral(Detector):
    """The PID's integral Σ (1 − δ_task)·dt over the current plan (20 error·s)."""

    name = "integral"
    default = 20.0

    def reset(self, rng: np.random.Generator) -> None:
        """The integral back to 0."""
        self._sum = 0.0
        self._plan = -1
        self._time = 0.0

    def score(self, record: StepRecord) -> float:
        """Add (1 − δ_task)·dt for this step; a new plan restarts the sum (the PID's reset)."""
        if record.plan_id != self._plan:
            self._plan = record.plan_id
            self._sum = 0.0
        e = record.evaluation
        error = 1.0 - e.delta_task if e is not None else 1.0
        self._sum += error * (record.time - self._time)
        self._time = record.time
        return self._sum


DETECTORS: tuple[type[Detector], ...] = (
    SameCall,
    Pattern,
    StallCount,
    NearIdentical,
    Cusum,
    Integral,
)
