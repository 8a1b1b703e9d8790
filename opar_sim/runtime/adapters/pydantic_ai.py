"""PydanticAI: the gate as a capability deciding in ``after_node_run``.

After each ``CallToolsNode`` (one model response and the tools it called) the adapter reads
the response's tool calls and arguments, the tools' returns and retry prompts (their
errors) in the next request, and the response's token usage, and answers by choosing the
next node:

- CONTINUE: the next node as it is; when that is ``End`` (the model answered before the law
  thinks it is done) a new model request asking it to go on: the veto of a premature stop;
- REPLAN: ``"nudge"`` adds the instruction to the next request; ``"fresh"`` also cuts the
  run's history back to its first request (the system prompt and the task);
- TERMINATE: ``End`` with the model's answer (an ``End`` already reached is kept as it is).

Cannot: give up natively (``give_up`` stays on the verdict and in the record); TERMINATE
hands over text, so an agent with a structured ``output_type`` gets the model's last text
only when it is valid output (else keep the ``End`` the model reaches).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic_ai import CallToolsNode, ModelRequestNode, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.result import FinalResult
from pydantic_graph import End

from opar_sim.core.types import ControlSignal
from opar_sim.runtime.gate import Gate, HostStep
from opar_sim.runtime.laws import ToolCall

REPLAN_PROMPT = (
    "Your approach is not reaching the goal ({reason}). Make a new plan and try a different way."
)
CONTINUE_PROMPT = "The task is not done yet: continue working on it with the tools."


def host_step(response: ModelResponse, following: Any) -> HostStep:
    """What the gate sees of one model response and the tools it ran."""
    replies: dict[str, Any] = {}
    if isinstance(following, ModelRequestNode):
        for piece in following.request.parts:
            if isinstance(piece, ToolReturnPart | RetryPromptPart) and piece.tool_call_id:
                replies[piece.tool_call_id] = piece
    calls = []
    for part in response.tool_calls:
        reply = replies.get(str(part.tool_call_id))
        error = result = None
        if isinstance(reply, RetryPromptPart):
            error = reply.model_response()
        elif isinstance(reply, ToolReturnPart):
            result = reply.model_response_str()
            if getattr(reply, "outcome", "success") not in ("success", None):
                error = result  # retried, failed or denied: the tool's error text
        calls.append(ToolCall(str(part.tool_name), part.args_as_dict(), error, result))
    tokens = int(response.usage.input_tokens + response.usage.output_tokens)
    return HostStep(
        calls=calls, tokens=tokens, answer=response.text or "", text=response.text or ""
    )


class GateCapability(AbstractCapability[Any]):  # type: ignore[misc,unused-ignore]
    """A capability that lets a gate choose each step's next node (module docstring)."""

    def __init__(
        self, gate: Gate, observe: Callable[[ModelResponse, HostStep], HostStep] | None = None
    ) -> None:
        """Build it.

        Args:
            gate: The gate (the caller calls ``gate.begin()`` for each run).
            observe: Adds what the host step lacks (a harness's ground truth), or None.
        """
        self.gate = gate
        self.observe = observe

    async def after_node_run(self, ctx: RunContext[Any], *, node: Any, result: Any) -> Any:
        """Decide after each tool-calling step; other nodes pass through."""
        if not isinstance(node, CallToolsNode):
            return result
        host = host_step(node.model_response, result)
        if self.observe is not None:
            host = self.observe(node.model_response, host)
        verdict = self.gate.step(host)
        if verdict.signal is ControlSignal.TERMINATE:
            if isinstance(result, End):
                return result
            return End(FinalResult(node.model_response.text or host.answer))
        if verdict.signal is ControlSignal.CONTINUE:
            if isinstance(result, End):
                return ModelRequestNode(ModelRequest(parts=[UserPromptPart(CONTINUE_PROMPT)]))
            return result
        prompt = UserPromptPart(REPLAN_PROMPT.format(reason=verdict.reason))
        if verdict.fresh_context:
            del ctx.messages[1:]  # the first request: the system prompt and the task
            return ModelRequestNode(ModelRequest(parts=[prompt]))
        if isinstance(result, ModelRequestNode):
            return ModelRequestNode(ModelRequest(parts=[*result.request.parts, prompt]))
        return ModelRequestNode(ModelRequest(parts=[prompt]))
