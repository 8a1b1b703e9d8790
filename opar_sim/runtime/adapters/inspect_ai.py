"""Inspect AI: the gate as ``react(on_continue=...)``.

Inspect's ``react`` agent calls ``on_continue(state)`` after every turn that did not
submit.  The adapter reads the turn (``state.output``: the assistant message's tool calls,
its token usage; the tool messages after it: their errors) and answers:

- CONTINUE: ``True`` (after a turn without tool calls Inspect then asks the model to go
  on: the veto of a premature stop);
- REPLAN: with ``replan="fresh"`` a new ``AgentState`` holding the system and first user
  messages (the task) and the instruction to make a new plan; with ``"nudge"`` the
  instruction as a string, the failed context kept;
- TERMINATE: ``False``: the loop ends and ``state.output`` keeps the last answer.

Cannot: veto a ``submit()`` (the loop ends on it before ``on_continue`` is called), or
give up natively (``give_up`` stays on the gate's verdict and in the record).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from inspect_ai.agent import AgentState
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser

from opar_sim.core.types import ControlSignal
from opar_sim.runtime.gate import Gate, HostStep, Verdict
from opar_sim.runtime.laws import ToolCall

REPLAN_PROMPT = (
    "Your approach is not reaching the goal ({reason}). Make a new plan and try a different way."
)

OnContinue = Callable[[AgentState], Awaitable[bool | str | AgentState]]


def host_step(state: AgentState) -> HostStep:
    """What the gate sees of the turn just taken: calls, tool errors, tokens, the answer."""
    messages = state.messages
    last = max(
        (i for i, m in enumerate(messages) if isinstance(m, ChatMessageAssistant)), default=-1
    )
    replies = {m.tool_call_id: m for m in messages[last + 1 :] if isinstance(m, ChatMessageTool)}
    calls = []
    for call in state.output.message.tool_calls or []:
        reply = replies.get(call.id)
        error = reply.error.message if reply is not None and reply.error is not None else None
        result = reply.text if reply is not None else None
        calls.append(ToolCall(call.function, dict(call.arguments), error, result))
    usage = state.output.usage
    tokens = int(usage.total_tokens) if usage is not None else 0
    text = messages[-1].text if messages else ""
    return HostStep(calls=calls, tokens=tokens, answer=state.output.completion, text=text)


def on_continue(
    gate: Gate, observe: Callable[[AgentState, HostStep], HostStep] | None = None
) -> OnContinue:
    """The ``on_continue`` hook of ``react`` deciding with ``gate``.

    Args:
        gate: The gate (``gate.begin()`` is called by the caller for each sample).
        observe: Adds what the host step lacks (a harness's ground truth), or None.

    Returns:
        The async hook.
    """

    async def decide(state: AgentState) -> bool | str | AgentState:
        host = host_step(state)
        if observe is not None:
            host = observe(state, host)
        verdict = gate.step(host)
        return carry_out(verdict, state)

    return decide


def carry_out(verdict: Verdict, state: AgentState) -> bool | str | AgentState:
    """The verdict as ``on_continue``'s answer (module docstring)."""
    if verdict.signal is ControlSignal.CONTINUE:
        return True
    if verdict.signal is ControlSignal.TERMINATE:
        return False
    prompt = REPLAN_PROMPT.format(reason=verdict.reason)
    if not verdict.fresh_context:
        return prompt
    first_user = next(i for i, m in enumerate(state.messages) if isinstance(m, ChatMessageUser))
    kept: list[Any] = list(state.messages[: first_user + 1])
    fresh = AgentState(messages=[*kept, ChatMessageUser(content=prompt)])
    fresh.output = state.output
    return fresh
