"""The convergence guards of the ReAct document, registered by their ``[guards]`` key.

The document's table (maximum iterations, no improvement for N = 3 rounds,
confidence ≥ 0.8, time budget, token budget) and its anti-loop techniques
(a step spending 3× the running mean of tokens, the same action with the same
result as in the previous two steps, a human-in-the-loop gate), each a small
``Guard``, and a stop confirmation any controller may be given (k consecutive
TERMINATE claims, the PID's ``settle_count`` on equal terms).  Guards that
stop a run never override a TERMINATE the controller already chose: stopping
is what it asked for, and its outcome (success, premature, gave_up,
abandoned) says more than a truncation would.  Only the stop confirmation and
the human gate review TERMINATE.  The spec's ``[guards]`` table that turns
them on is ``opar_sim.spec.guards.GuardsSpec``.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from opar_sim.core.controller import TruthProbe
from opar_sim.core.detectors import DETECTORS
from opar_sim.core.registry import Registry
from opar_sim.core.supervisor import Guard, GuardAction
from opar_sim.core.types import ControlSignal, Decision, StepRecord

TERMINATE = ControlSignal.TERMINATE


def _stop(reason: str) -> GuardAction:
    return GuardAction(TERMINATE, reason, truncate=True)


class ConfirmStop:
    """Hold a completion claim until the controller has made it ``k`` Reflects in a row.

    The stop confirmation the cognitive PID has built in (``settle_count``),
    given to any controller on equal terms: a TERMINATE that claims completion
    becomes CONTINUE (reason ``confirm: j/k``) until it is the ``k``-th
    consecutive TERMINATE; any CONTINUE or REPLAN resets the count.  A give-up
    (``Decision.give_up``) is not delayed: confirmation guards against a noisy
    reading of progress, and a give-up rule has its own window.  It must read
    the controller's own decision, so ``spec.guards.GuardsSpec.enabled`` puts it before
    every other guard; a TERMINATE another guard makes later (``confidence``)
    is not held.  ``k = 1`` lets every TERMINATE through.
    """

    name = "confirm"

    def __init__(self, k: int) -> None:
        if k < 1:
            raise ValueError(f"confirm needs k >= 1, got {k}")
        self.k = k
        self._run = 0

    def reset(self, rng: np.random.Generator) -> None:
        """Forget the count of consecutive TERMINATEs."""
        self._run = 0

    def check(self, record: StepRecord, decision: Decision) -> GuardAction | None:
        """CONTINUE on the 1st … (k−1)-th consecutive completion claim; let the k-th through."""
        if decision.signal is not TERMINATE or decision.give_up:
            self._run = 0
            return None
        self._run += 1
        if self._run < self.k:
            return GuardAction(ControlSignal.CONTINUE, f"confirm: {self._run}/{self.k}")
        return None


class MaxIterations:
    """Stop after ``limit`` Reflects (the document suggests 5-10; errors rebound past ~8)."""

    name = "max_iterations"

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def reset(self, rng: np.random.Generator) -> None:
        """Stateless: the step number is on the record."""

    def check(self, record: StepRecord, decision: Decision) -> GuardAction | None:
        """Truncate as ``max_steps`` once the step number reaches the limit."""
        if record.step >= self.limit and decision.signal is not TERMINATE:
            return _stop("max_steps")
        return None


class TimeBudget:
    """Stop once ``seconds`` of simulated time have passed at a Reflect."""

    name = "time_budget"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def reset(self, rng: np.random.Generator) -> None:
        """Stateless: the time is on the record."""

    def check(self, record: StepRecord, decision: Decision) -> GuardAction | None:
        """Truncate as ``time`` once the step ended past the simulated-time budget."""
        if record.time >= self.seconds and decision.signal is not TERMINATE:
            return _stop("time")
        return None


class TokenBudget:
    """Stop once the episode has spent ``tokens`` (prompt + completion)."""

    name = "token_budget"

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens

    def reset(self, rng: np.random.Generator) -> None:
        """Stateless: the cumulative tokens are on the record."""

    def check(self, record: StepRecord, decision: Decision) -> GuardAction | None:
        """Truncate as ``tokens`` once the cumulative spend reaches the budget."""
        if record.tokens >= self.tokens and decision.signal is not TERMINATE:
            return _stop("tokens")
        return None


class TokenSpike:
    """Stop when one step spends more than ``factor`` × the running mean of the steps before.

    A sudden jump in a round's tokens means the model may be stuck in a
    verbose loop (the document's first anti-loop technique).
    """

    name = "token_spike"

    def __init__(self, factor: float = 3.0) -> None:
        self.factor = factor

    def reset(self, rng: np.random.Generator) -> None:
        """Forget the previous steps' spending."""
        self._total = 0
        self._steps = 0

    def check(self, record: StepRecord, decision: Decision) -> GuardAction | None:
        """Truncate as ``token_spike`` when this step spends over ``factor`` × the running mean."""
        spent = record.tokens - self._total
        spike = self._steps > 0 and spent > self.factor * self._total / self._steps
        self._total = record.tokens
        self._steps += 1
        if spike and decision.signal is not TERMINATE:
            return _stop("token_spike")
        return None


class NoImprovement:
    """Stop when δ_task has not beaten its best for ``patience`` Reflects in a row (N = 3)."""

    name = "no_improvement"

    def __init__(self, patience: int = 3) -> None:
        self.patience = patience

    def reset(self, rng: np.random.Generator) -> None:
        """Forget the best estimate and the count."""
        self._best = -1.0
        self._without = 0

    def check(self, record: StepRecord, decision: Decision) -> GuardAction | None:
        """Truncate as ``no_progress`` after ``patience`` Reflects without a better δ_task."""
        estimate = record.evaluation.delta_task if record.evaluation else 0.0
        if estimate > self._best:
            self._best = estimate
            self._without = 0
        else:
            self._without += 1
        if self._without >= self.patience and decision.signal is not TERMINATE:
            return _stop("no_progress")
        return None


class ConfidenceStop:
    """TERMINATE as soon as the agent's confidence reaches ``threshold`` (0.8)."""

    name = "confidence"

    def __init__(self, threshold: float = 0.8) -> None:
        self.threshold = threshold

    def reset(self, rng: np.random.Generator) -> None:
        """Stateless."""

    def check(self, record: StepRecord, decision: Decision) -> GuardAction | None:
        """TERMINATE (without truncating) once the agent's confidence reaches the threshold."""
        evaluation = record.evaluation
        if evaluation is None or decision.signal is TERMINATE:
            return None
        if evaluation.confidence >= self.threshold:
            return GuardAction(TERMINATE, "confidence")
        return None


class RepeatedAction:
    """The same action with the same result as in the previous two steps: the loop is stuck.

    The first time, force a REPLAN ("stuck: change tool"); if the same pair
    comes back ``persist`` more times in a row, stop the run as ``stuck``.
    """

    name = "repeat"

    def __init__(self, persist: int = 1) -> None:
        self.persist = persist

    def reset(self, rng: np.random.Generator) -> None:
        """Forget the last action and result."""
        self._last: Hashable = None
        self._streak = 0

    def check(self, record: StepRecord, decision: Decision) -> GuardAction | None:
        """Force a REPLAN on the third identical action+result, then truncate as ``stuck``."""
        result = record.result
        # latency differs from call to call; what the agent sees is the text
        key = (record.action, result.ok, result.text, result.error) if result else None
        self._streak = self._streak + 1 if key == self._last else 1
        self._last = key
        if self._streak < 3 or decision.signal is TERMINATE:
            return None
        if self._streak - 3 >= self.persist:
            return _stop("stuck")
        if self._streak == 3 and decision.signal is ControlSignal.CONTINUE:
            return GuardAction(ControlSignal.REPLAN, "stuck: change tool")
        return None


class HumanGate:
    """A human approver on every TERMINATE and REPLAN: ``latency`` seconds, wrong at ``error_rate``.

    The human knows what the agent cannot: a TERMINATE is right when the task
    is complete or infeasible, a REPLAN when the plan is bad (its hidden
    effective quality — context decay and memory loss included, as the oracle
    reads it — below ``bad_plan``).  With probability ``error_rate`` the verdict
    is the wrong one.  A rejected decision becomes CONTINUE.  Each review
    makes the loop wait ``latency`` simulated seconds.
    """

    name = "human"

    def __init__(
        self, latency: float = 30.0, error_rate: float = 0.05, bad_plan: float = 0.5
    ) -> None:
        self.latency = latency
        self.error_rate = error_rate
        self.bad_plan = bad_plan
        self._rng = np.random.default_rng(0)
        self._truth: TruthProbe | None = None

    def reset(self, rng: np.random.Generator) -> None:
        """Take the episode's guard stream (a child of its ``controller`` stream)."""
        self._rng = rng

    def bind_truth(self, probe: TruthProbe) -> None:
        """The human sees the hidden state: the episode's truth probe."""
        self._truth = probe

    def check(self, record: StepRecord, decision: Decision) -> GuardAction | None:
        """Approve or reject a TERMINATE or REPLAN after ``latency`` seconds; CONTINUE passes."""
        signal = decision.signal
        if signal is ControlSignal.CONTINUE:
            return None
        if self._truth is None:
            raise RuntimeError("HumanGate needs the episode's truth probe (bind_truth)")
        truth = self._truth()
        if signal is TERMINATE:
            right = truth.complete or not truth.feasible
        else:
            right = truth.quality < self.bad_plan
        approve = right != (self._rng.random() < self.error_rate)
        word = signal.value
        if approve:
            return GuardAction(signal, f"human: approved {word}", delay=self.latency)
        return GuardAction(ControlSignal.CONTINUE, f"human: rejected {word}", delay=self.latency)


GUARDS: Registry[Guard] = Registry("guard")
"""The guards by the name of their ``[guards]`` key."""
_GUARD_TYPES: tuple[type[Guard], ...] = (
    ConfirmStop,
    MaxIterations,
    TimeBudget,
    TokenBudget,
    TokenSpike,
    NoImprovement,
    RepeatedAction,
    ConfidenceStop,
    HumanGate,
    *DETECTORS,
)
for _guard in _GUARD_TYPES:
    GUARDS.register(_guard.name, _guard)
