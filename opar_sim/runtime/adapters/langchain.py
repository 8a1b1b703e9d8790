"""LangChain 1.x: the gate as an ``AgentMiddleware`` of ``create_agent``.

A step is one model turn and the tools it called.  ``before_model`` decides on a finished
step (an AI message with tool calls, its tool messages after it: their ``status`` says an
error); ``after_model`` decides on a turn without tool calls (the model means to stop).
Usage comes from the AI message's ``usage_metadata``.  Answers:

- CONTINUE: nothing; after a turn without tool calls a message asking to go on and
  ``jump_to: "model"``: the veto of a premature stop;
- REPLAN: ``"nudge"`` adds the instruction as a human message; ``"fresh"`` replaces the
  history with the first human message (the task) and the instruction;
- TERMINATE: ``jump_to: "end"``; the last AI message (the answer) stays the last message.

Cannot: give up natively (``give_up`` stays on the verdict and in the record).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, hook_config
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from opar_sim.core.types import ControlSignal
from opar_sim.runtime.gate import Gate, HostStep, Verdict
from opar_sim.runtime.laws import ToolCall

REPLAN_PROMPT = (
    "Your approach is not reaching the goal ({reason}). Make a new plan and try a different way."
)
CONTINUE_PROMPT = "The task is not done yet: continue working on it with the tools."


def host_step(messages: list[Any]) -> HostStep | None:
    """The step that ends the history: its AI message and the tool messages after it."""
    last = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=None)
    if last is None:
        return None
    ai = messages[last]
    replies = {m.tool_call_id: m for m in messages[last + 1 :] if isinstance(m, ToolMessage)}
    calls = []
    for call in ai.tool_calls:
        reply = replies.get(call["id"])
        text = None if reply is None else str(reply.content)
        error = text if reply is not None and reply.status == "error" else None
        calls.append(ToolCall(call["name"], dict(call["args"]), error, text))
    usage = ai.usage_metadata or {}
    tokens = int(usage.get("total_tokens", 0))
    return HostStep(calls=calls, tokens=tokens, answer=ai.text, text=str(messages[-1].content))


class GateMiddleware(AgentMiddleware):  # type: ignore[type-arg,misc,unused-ignore]
    """The middleware that lets a gate steer ``create_agent``'s loop (module docstring)."""

    def __init__(
        self, gate: Gate, observe: Callable[[list[Any], HostStep], HostStep] | None = None
    ) -> None:
        """Build it.

        Args:
            gate: The gate (the caller calls ``gate.begin()`` for each run).
            observe: Adds what the host step lacks (a harness's ground truth), or None.
        """
        super().__init__()
        self.gate = gate
        self.observe = observe

    def _decide(self, messages: list[Any]) -> Verdict | None:
        host = host_step(messages)
        if host is None:
            return None
        if self.observe is not None:
            host = self.observe(messages, host)
        return self.gate.step(host)

    @hook_config(can_jump_to=["end"])  # type: ignore[untyped-decorator,unused-ignore]
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Decide on the step the tools just finished (none before the first model turn)."""
        messages = list(state["messages"])
        if not messages or not isinstance(messages[-1], ToolMessage):
            return None
        verdict = self._decide(messages)
        if verdict is None or verdict.signal is ControlSignal.CONTINUE:
            return None
        if verdict.signal is ControlSignal.TERMINATE:
            return {"jump_to": "end"}
        return {"messages": _replan(verdict, messages)}

    @hook_config(can_jump_to=["model"])  # type: ignore[untyped-decorator,unused-ignore]
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Decide on a turn without tool calls: the model means to stop."""
        messages = list(state["messages"])
        if not messages or not isinstance(messages[-1], AIMessage) or messages[-1].tool_calls:
            return None
        verdict = self._decide(messages)
        if verdict is None or verdict.signal is ControlSignal.TERMINATE:
            return None
        if verdict.signal is ControlSignal.CONTINUE:
            return {"messages": [HumanMessage(CONTINUE_PROMPT)], "jump_to": "model"}
        return {"messages": _replan(verdict, messages), "jump_to": "model"}


def _replan(verdict: Verdict, messages: list[Any]) -> list[Any]:
    """The messages update of a REPLAN: the instruction, after a fresh start or not."""
    prompt = HumanMessage(REPLAN_PROMPT.format(reason=verdict.reason))
    if not verdict.fresh_context:
        return [prompt]
    task = next(m for m in messages if isinstance(m, HumanMessage))
    return [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage(task.content), prompt]
