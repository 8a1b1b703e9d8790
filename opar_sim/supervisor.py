"""The Supervisor: convergence guards wrapped around any controller.

A guard reads each finished step and the controller's decision, and may
override it: force a REPLAN ("stuck: change tool") or stop the run, which is
then *truncated* with the guard's reason.  The hard limits (steps, simulated
time, tokens) live in the loop itself and hold whatever any guard says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from opar_sim.models import ControlSignal, Decision, StepRecord


@dataclass(frozen=True, slots=True)
class GuardAction:
    """A guard's override: REPLAN, or stop with ``truncate`` (outcome truncated:reason)."""

    signal: ControlSignal
    reason: str
    truncate: bool = False


class Guard(Protocol):
    """One convergence criterion of the ReAct document."""

    name: str

    def reset(self) -> None: ...

    def check(self, record: StepRecord, decision: Decision) -> GuardAction | None: ...


class Supervisor:
    """Applies guards in order; the first that fires decides."""

    def __init__(self, guards: Sequence[Guard] = ()) -> None:
        self.guards = list(guards)

    def reset(self) -> None:
        for guard in self.guards:
            guard.reset()

    def review(self, record: StepRecord, decision: Decision) -> GuardAction | None:
        """Return the override of the first guard that fires, or None."""
        for guard in self.guards:
            action = guard.check(record, decision)
            if action is not None:
                return action
        return None
