"""A scripted law for the adapters' tests: it answers a fixed sequence of signals."""

from __future__ import annotations

from opar_sim.core.types import ControlSignal, Decision, Evaluation
from opar_sim.runtime import Gate, HostStep

C, R, T = ControlSignal.CONTINUE, ControlSignal.REPLAN, ControlSignal.TERMINATE
EVALUATION = Evaluation(0.5, 0.5, 0.0, 0.5)


class Script:
    """Signals in order (the last one repeats); records every context it was given."""

    name = "script"

    def __init__(self, *signals: ControlSignal, give_up: bool = False) -> None:
        self.signals = list(signals)
        self.give_up = give_up
        self.seen = []

    def reset(self) -> None:
        self.seen = []

    def decide(self, evaluation, ctx) -> Decision:
        self.seen.append(ctx)
        signal = self.signals[min(ctx.step - 1, len(self.signals) - 1)]
        return Decision(signal, f"scripted {signal.value}", give_up=self.give_up)


def scripted_gate(*signals: ControlSignal, replan: str = "fresh", **kw) -> Gate:
    """A gate on ``Script(*signals)`` whose evaluator returns a fixed evaluation."""
    steps: list[HostStep] = []

    def evaluator(host, history):
        steps.append(host)
        return EVALUATION

    gate = Gate(Script(*signals, **kw), replan=replan, evaluator=evaluator)
    gate.seen_steps = steps
    return gate
