"""The Supervisor: convergence guards wrapped around any controller.

A guard reads each finished step, the decision so far and the hidden truth
(only a simulated human approver may use it), and may override the decision:
force a REPLAN ("stuck: change tool"), force or veto a TERMINATE, or stop the
run, which is then *truncated* with the guard's reason.  A guard may also ask
the loop to wait (a human approver's latency, in simulated seconds).  The hard
limits (steps, simulated time, tokens) live in the loop itself and hold
whatever any guard says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from opar_sim.core.controller import TruthProbe, TruthReader
from opar_sim.core.types import ControlSignal, Decision, StepRecord


@dataclass(frozen=True, slots=True)
class GuardAction:
    """A guard's verdict: the signal, why, whether it stops the run, and a wait.

    ``truncate`` stops the run with outcome ``truncated:<reason>``; ``delay``
    is simulated seconds the loop waits before acting (a human's review).
    """

    signal: ControlSignal
    reason: str
    truncate: bool = False
    delay: float = 0.0


class Guard(Protocol):
    """One convergence criterion of the ReAct document."""

    name: str

    def reset(self, rng: np.random.Generator) -> None:
        """Forget the last episode; ``rng`` is the only randomness a guard may use."""
        ...

    def check(self, record: StepRecord, decision: Decision) -> GuardAction | None:
        """Return an override of ``decision``, or None to let it stand."""
        ...


class Supervisor:
    """Applies guards in order, each seeing the decision as earlier guards left it.

    A guard that truncates ends the review.  Otherwise overrides compose: the
    final signal is the last guard's, the reasons are joined with "; ", and
    the delays add up — so a human gate placed last reviews the decision the
    other guards produced.
    """

    def __init__(self, guards: Sequence[Guard] = ()) -> None:
        self.guards = list(guards)

    def reset(self, rng: np.random.Generator) -> None:
        """Reset every guard for a new episode, handing each the episode's guard stream."""
        for guard in self.guards:
            guard.reset(rng)

    def bind_truth(self, probe: TruthProbe) -> None:
        """Hand the episode's truth probe to the guards declared to read it (``TruthReader``)."""
        for guard in self.guards:
            if isinstance(guard, TruthReader):
                guard.bind_truth(probe)

    def review(self, record: StepRecord, decision: Decision) -> GuardAction | None:
        """The combined override of the guards that fired, or None if none did.

        Args:
            record: The step just finished, with its evaluation and cost.
            decision: The controller's decision for that step.

        Returns:
            The first truncating guard's action (with the delays so far), else the
            composed override (last signal, reasons joined, delays summed), or
            None when no guard fired.
        """
        reasons: list[str] = []
        delay = 0.0
        signal = decision.signal
        current = decision
        for guard in self.guards:
            action = guard.check(record, current)
            if action is None:
                continue
            delay += action.delay
            if action.truncate:
                return GuardAction(action.signal, action.reason, True, delay)
            reasons.append(action.reason)
            if action.signal is not signal:
                signal = action.signal
                current = Decision(signal, f"guard: {action.reason}", decision.terms)
        if not reasons:
            return None
        return GuardAction(signal, "; ".join(reasons), False, delay)
