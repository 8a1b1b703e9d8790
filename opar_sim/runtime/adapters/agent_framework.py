"""Microsoft Agent Framework: the gate in ``AgentLoopMiddleware`` and in a Magentic manager.

``GateLoop`` drives ``AgentLoopMiddleware``: each iteration is one agent run (its model
turns and function calls); ``should_continue`` reads the run's function calls and
arguments, their results and exceptions, and its ``usage_details``, and answers:

- CONTINUE: ``True`` with a "continue" message: also the veto of a run that stopped early;
- REPLAN: ``True`` with the instruction to make a new plan as the next message; the
  middleware's ``fresh_context`` is set from the gate's ``replan``: ``"fresh"`` restarts
  every iteration from the task (and MAF's progress log), ``"nudge"`` keeps the session;
- TERMINATE: ``False``: the loop ends with the last run's answer.

``GateMagenticManager`` wraps a Magentic manager (``StandardMagenticManager``, or any
``MagenticManagerBase``) and lets the gate, typically on ``stall_counter``, decide on each
progress ledger: the ledger is the self-evaluation (request satisfied → δ_task 1, progress
made and not looping → δ_act 1, looping → δ_plan 1).  TERMINATE marks the request
satisfied (Magentic then writes its final answer); REPLAN makes the orchestrator reset and
replan now; CONTINUE keeps it from replanning on its own count.  Magentic replans when its
stall count *exceeds* ``max_stall_count`` (3): ``stall_counter`` replans when it *reaches*
``max_stalls``, so Magentic's default is ``max_stalls = 4``.

Cannot: give up natively (a give-up ends as a final answer, the claim kept in the record);
REPLAN and CONTINUE share the middleware's ``fresh_context`` setting within one loop.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from agent_framework import AgentLoopMiddleware
from agent_framework_orchestrations import MagenticManagerBase

from opar_sim.core.types import ControlSignal, Evaluation
from opar_sim.runtime.gate import Gate, HostStep
from opar_sim.runtime.laws import ToolCall

REPLAN_PROMPT = (
    "Your approach is not reaching the goal ({reason}). Make a new plan and try a different way."
)
CONTINUE_PROMPT = "The task is not done yet: continue working on it with the tools."
MAGENTIC_STALLS = 4  # stall_counter's max_stalls for Magentic's max_stall_count = 3


def host_step(result: Any) -> HostStep:
    """What the gate sees of one agent run: its function calls, results and usage."""
    calls, results = [], {}
    for message in result.messages:
        for content in message.contents:
            if content.type == "function_result":
                results[content.call_id] = content
    for message in result.messages:
        for content in message.contents:
            if content.type != "function_call":
                continue
            args = content.parse_arguments() or {}
            reply = results.get(content.call_id)
            error = None
            if reply is not None and reply.exception is not None:
                error = str(reply.exception) or type(reply.exception).__name__
            text = None if reply is None else str(reply.result)
            calls.append(ToolCall(content.name, args, error, text))
    usage = result.usage_details or {}
    tokens = int(usage.get("total_token_count") or 0)
    return HostStep(calls=calls, tokens=tokens, answer=result.text, text=result.text)


class GateLoop:
    """``AgentLoopMiddleware``'s ``should_continue`` and ``next_message`` from a gate."""

    def __init__(
        self, gate: Gate, observe: Callable[[Any, HostStep], HostStep] | None = None
    ) -> None:
        """Build it.

        Args:
            gate: The gate (the caller calls ``gate.begin()`` for each run).
            observe: Adds what the host step lacks (a harness's ground truth), or None.
        """
        self.gate = gate
        self.observe = observe

    def should_continue(self, *, last_result: Any, **kwargs: Any) -> tuple[bool, str | None]:
        """Decide after one agent run: go on (with the next message) or stop."""
        host = host_step(last_result)
        if self.observe is not None:
            host = self.observe(last_result, host)
        verdict = self.gate.step(host)
        if verdict.signal is ControlSignal.TERMINATE:
            return False, None
        if verdict.signal is ControlSignal.REPLAN:
            return True, REPLAN_PROMPT.format(reason=verdict.reason)
        return True, CONTINUE_PROMPT

    def next_message(self, *, feedback: str | None = None, **kwargs: Any) -> str:
        """The next run's input: the instruction ``should_continue`` chose."""
        return feedback or CONTINUE_PROMPT

    def middleware(self, max_iterations: int | None = None) -> AgentLoopMiddleware:
        """The loop middleware (``max_iterations``: the host's own cap, None: the gate's)."""
        return AgentLoopMiddleware(
            self.should_continue,
            next_message=self.next_message,
            max_iterations=max_iterations,
            fresh_context=self.gate.replan == "fresh",
            inject_progress=False,
        )


def ledger_evaluation(ledger: Any) -> Evaluation:
    """A Magentic progress ledger as the evaluation a law reads (module docstring)."""
    satisfied = bool(ledger.is_request_satisfied.answer)
    looping = bool(ledger.is_in_loop.answer)
    progress = bool(ledger.is_progress_being_made.answer) and not looping
    return Evaluation(
        delta_task=1.0 if satisfied else 0.0,
        delta_act=1.0 if progress else 0.0,
        delta_plan=1.0 if looping else 0.0,
        confidence=1.0,
        critique=str(ledger.is_progress_being_made.reason),
    )


class GateMagenticManager(MagenticManagerBase):  # type: ignore[misc,unused-ignore]
    """A Magentic manager whose replans and stops the gate decides (module docstring)."""

    def __init__(self, gate: Gate, inner: Any) -> None:
        """Wrap ``inner`` (it plans, replans, writes the ledger and the final answer).

        Args:
            gate: The gate, typically on ``stall_counter``.
            inner: The manager doing the model work (``StandardMagenticManager``).
        """
        super().__init__(
            max_stall_count=sys.maxsize,
            max_reset_count=inner.max_reset_count,
            max_round_count=inner.max_round_count,
        )
        self.gate = gate
        self.inner = inner

    async def plan(self, magentic_context: Any) -> Any:
        """The inner manager's plan."""
        return await self.inner.plan(magentic_context)

    async def replan(self, magentic_context: Any) -> Any:
        """The inner manager's new plan."""
        return await self.inner.replan(magentic_context)

    async def prepare_final_answer(self, magentic_context: Any) -> Any:
        """The inner manager's final answer."""
        return await self.inner.prepare_final_answer(magentic_context)

    async def create_progress_ledger(self, magentic_context: Any) -> Any:
        """The inner ledger, with the gate's decision written into what Magentic reads."""
        ledger = await self.inner.create_progress_ledger(magentic_context)
        verdict = self.gate.step(HostStep(evaluation=ledger_evaluation(ledger)))
        self.max_stall_count = sys.maxsize  # CONTINUE: Magentic does not replan on its own
        if verdict.signal is ControlSignal.TERMINATE:
            ledger.is_request_satisfied.answer = True
            ledger.is_request_satisfied.reason = f"opar-sim gate: {verdict.reason}"
        elif verdict.signal is ControlSignal.REPLAN:
            ledger.is_progress_being_made.answer = False
            self.max_stall_count = -1  # any stall count exceeds it: reset and replan now
        return ledger
