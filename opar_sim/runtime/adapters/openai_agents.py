"""OpenAI Agents SDK: the gate as ``tool_use_behavior``, agent hooks and an input filter.

``GateHooks.on_llm_end`` keeps each model response (its function calls with their
arguments, its text, its usage); ``tool_use_behavior`` then decides on the turn once its
tools have run (their outputs; an output the SDK's tool-error function wrote counts as the
tool's error); ``call_model_input_filter`` rewrites the next input on a REPLAN.  Answers:

- CONTINUE: ``ToolsToFinalOutputResult(is_final_output=False)``: the loop goes on;
- REPLAN: the same, and the next model input gets the instruction: ``"nudge"`` appends it,
  ``"fresh"`` keeps only the first input item (the task) before it;
- TERMINATE: ``ToolsToFinalOutputResult(is_final_output=True)`` with the answer so far
  (the turn's text, else the last tool output) as the final output.

Cannot: veto a premature stop (a turn without tool calls ends the run before any hook
decides), or give up natively; ``tool_use_behavior`` runs only on turns that called tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agents import AgentHooks, RunConfig, ToolsToFinalOutputResult
from agents.run import CallModelData, ModelInputData

from opar_sim.core.types import ControlSignal
from opar_sim.runtime.gate import Gate, HostStep, Verdict
from opar_sim.runtime.laws import ToolCall

REPLAN_PROMPT = (
    "Your approach is not reaching the goal ({reason}). Make a new plan and try a different way."
)
TOOL_ERROR = "An error occurred while running the tool"  # the SDK's default error text


def _args(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {"input": text}
    return value if isinstance(value, dict) else {"input": value}


class GateHooks(AgentHooks[Any]):  # type: ignore[misc,unused-ignore]
    """The agent hooks, the tool-use behaviour and the input filter of one gate."""

    def __init__(
        self,
        gate: Gate,
        observe: Callable[[Any, HostStep], HostStep] | None = None,
        is_error: Callable[[str], bool] = lambda text: text.startswith(TOOL_ERROR),
    ) -> None:
        """Build them.

        Args:
            gate: The gate (the caller calls ``gate.begin()`` for each run).
            observe: Adds what the host step lacks (a harness's ground truth), or None.
            is_error: Whether a tool's output is an error (the default error function's).
        """
        self.gate = gate
        self.observe = observe
        self.is_error = is_error
        self.response: Any = None
        self.pending: Verdict | None = None

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        """Keep the model's response: its calls, text and usage."""
        self.response = response

    def host_step(self, results: list[Any]) -> HostStep:
        """What the gate sees of the turn: the response's calls and their outputs."""
        outputs = {}
        for r in results:
            raw = getattr(r.run_item, "raw_item", None)
            call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
            outputs[call_id] = str(r.output)
        calls, texts = [], []
        response = self.response
        for item in response.output if response is not None else []:
            if getattr(item, "type", None) == "function_call":
                out = outputs.get(item.call_id)
                error = out if out is not None and self.is_error(out) else None
                calls.append(ToolCall(item.name, _args(item.arguments), error, out))
            elif getattr(item, "type", None) == "message":
                texts += [c.text for c in item.content if getattr(c, "text", None)]
        usage = response.usage if response is not None else None
        tokens = int(usage.input_tokens + usage.output_tokens) if usage is not None else 0
        last = str(results[-1].output) if results else ""
        answer = " ".join(texts) or last
        return HostStep(calls=calls, tokens=tokens, answer=answer, text=last)

    def tool_use_behavior(self, context: Any, results: list[Any]) -> ToolsToFinalOutputResult:
        """Decide on the turn whose tools just ran (``Agent(tool_use_behavior=...)``)."""
        host = self.host_step(results)
        if self.observe is not None:
            host = self.observe(context, host)
        verdict = self.gate.step(host)
        if verdict.signal is ControlSignal.TERMINATE:
            return ToolsToFinalOutputResult(is_final_output=True, final_output=host.answer)
        self.pending = verdict if verdict.signal is ControlSignal.REPLAN else None
        return ToolsToFinalOutputResult(is_final_output=False)

    def input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """``RunConfig(call_model_input_filter=...)``: the instruction after a REPLAN."""
        verdict, self.pending = self.pending, None
        model_data = data.model_data
        if verdict is None:
            return model_data
        prompt: Any = {"role": "user", "content": REPLAN_PROMPT.format(reason=verdict.reason)}
        kept = model_data.input[:1] if verdict.fresh_context else model_data.input
        return ModelInputData(input=[*kept, prompt], instructions=model_data.instructions)

    def run_config(self, **options: Any) -> RunConfig:
        """A ``RunConfig`` with the input filter (``options``: its other settings)."""
        return RunConfig(call_model_input_filter=self.input_filter, **options)
