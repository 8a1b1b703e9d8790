"""The laws a gate can run: a registered Reflect law, or a trace law on what a host shows.

A registered law (``pid``, ``threshold``, ``stall_counter``, ...) reads the agent's
self-evaluation (δ_task, δ_act, δ_plan, confidence): a host produces none, so the gate
needs one extra self-evaluation call per step (``opar_sim.runtime.selfeval``).  A trace
law (``calls:10``, ``repeat:3+errors:2``: ``opar_sim.traces.stopping``) reads only the
running counts a host shows (tool calls, identical calls, tool errors, tokens, transfers)
and needs no evaluation.  A law declared to read the hidden state (the oracle) cannot run
in a real agent and is refused, as is one that plans with the simulator's own model
(``bayes``) unless that model is handed over.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import controllers  # noqa: F401  (registers the shipped laws)
from controllers.registry import CONTROLLERS
from opar_sim.core.controller import Controller, ModelInfo, ModelReader, TruthReader
from opar_sim.core.errors import InputError
from opar_sim.core.types import ControlSignal, Decision
from opar_sim.traces.runs import args_hash
from opar_sim.traces.stopping import SIGNALS, TRANSFER, Law, parse_law


class LawError(InputError):
    """A law the gate cannot run (unknown, reads the hidden state, bad parameters)."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call a host made in a step: its name, arguments, and how the tool answered.

    Attributes:
        name: The tool's name.
        args: Its arguments (any JSON-able mapping; hashed for the ``repeat`` count).
        error: The tool's error text (None: it answered without one).
        result: The tool's answer, for the record.
    """

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    result: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        """The call's identity: same tool, same arguments (in any key order)."""
        return (self.name, args_hash(dict(self.args)))


class TraceCounts:
    """The running counts of ``traces.stopping.SIGNALS`` over a live run, step by step."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, str]] = Counter()
        self.counts = dict.fromkeys(SIGNALS, 0)

    def add(self, calls: Sequence[ToolCall], tokens: int) -> dict[str, int]:
        """Count one step: its calls, whether any erred, and the tokens so far (cumulative).

        Args:
            calls: The step's tool calls.
            tokens: The run's tokens after the step.

        Returns:
            The counts after the step (a copy).
        """
        c = self.counts
        c["steps"] += 1
        c["calls"] += len(calls)
        c["errors"] += int(any(call.error for call in calls))
        c["transfer"] += sum(call.name == TRANSFER for call in calls)
        c["tokens"] = max(c["tokens"], tokens)
        for call in calls:
            self.seen[call.key] += 1
            c["repeat"] = max(c["repeat"], self.seen[call.key])
        return dict(c)

    def repeat_of(self, call: ToolCall) -> int:
        """How many times ``call`` has been made so far, this one included."""
        return self.seen[call.key]


class TraceLaw:
    """A trace law as a gate's law: TERMINATE after the first step a signal reaches its k.

    It gives up (``give_up``): a count reaching its cap says the run is stuck or too
    costly, not that the goal is met; the host keeps its answer so far.
    """

    def __init__(self, law: Law) -> None:
        self.law = law
        self.name = law.name

    def decide(self, counts: Mapping[str, int]) -> Decision:
        """The decision after a step, from the running counts (``TraceCounts.add``).

        Args:
            counts: Each signal's running count after the step.

        Returns:
            TERMINATE (give up) naming the first part that fired, else CONTINUE.
        """
        terms = {signal: float(counts[signal]) for signal, _ in self.law.parts}
        for signal, k in self.law.parts:
            if counts[signal] >= k:
                reason = f"{signal} reached {k} ({SIGNALS[signal]})"
                return Decision(ControlSignal.TERMINATE, reason, terms, give_up=True)
        return Decision(ControlSignal.CONTINUE, "no count at its limit", terms)


def is_trace_law(name: str) -> bool:
    """Whether ``name`` is written as a trace law (``SIGNAL:K`` parts joined by ``+``)."""
    head = name.strip().split("+")[0].partition(":")[0]
    return head in SIGNALS and (":" in name or head == "transfer")


def build_law(
    name: str, params: Mapping[str, Any] | None = None, model: ModelInfo | None = None
) -> Controller | TraceLaw:
    """A registered law built with ``params``, or a trace law parsed from ``name``.

    Args:
        name: A registered controller (``opar-sim list``) or a trace law (``calls:10``).
        params: The law's parameters (gains); none for a trace law.
        model: The spec's model, for a law that plans with it (``bayes``).

    Returns:
        The law, fresh.

    Raises:
        LawError: unknown name, bad parameters, a law that reads the hidden state, or a
            model-reading law without its model.
    """
    if is_trace_law(name):
        if params:
            raise LawError(f"trace law {name!r} takes no parameters (its thresholds are in it)")
        return TraceLaw(parse_law(name))
    try:
        factory = CONTROLLERS.factory(name)
    except ValueError as exc:
        raise LawError(f"{exc}; or write a trace law such as calls:10") from None
    if isinstance(factory, type) and issubclass(factory, TruthReader):
        raise LawError(f"law {name!r} reads the hidden state (ground truth): no real agent has it")
    try:
        law = CONTROLLERS.make(name, **dict(params or {}))
    except (ValueError, TypeError) as exc:
        raise LawError(f"law {name!r}: {exc}") from None
    if isinstance(law, TruthReader):
        raise LawError(f"law {name!r} reads the hidden state (ground truth): no real agent has it")
    if isinstance(law, ModelReader):
        if model is None:
            raise LawError(f"law {name!r} plans with the simulator's model: give the gate a spec")
        law.bind_model(model)
    return law
