"""The OpenAI Agents SDK adapter against the real package and a scripted Model (no network)."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed: pip install 'opar-sim[agents]'"
)

from agents import Agent, Runner, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from opar_sim.runtime.adapters.openai_agents import GateHooks
from tests.runtime.scripted import C, R, T, scripted_gate


@function_tool
def lookup(city: str) -> str:
    """Look a city up."""
    if city == "nowhere":
        raise ValueError("no such city")
    return f"{city}: sunny"


def _text(value, n):
    content = [ResponseOutputText(annotations=[], text=value, type="output_text")]
    return ResponseOutputMessage(
        id=f"m{n}", content=content, role="assistant", status="completed", type="message"
    )


class Scripted(Model):
    """Replies from a script: ("call", city) or ("text", text); keeps every input."""

    def __init__(self, script):
        self.script = script
        self.seen = []

    async def get_response(self, system_instructions, input, *args, **kwargs):
        self.seen.append(list(input) if isinstance(input, list) else [input])
        n = len(self.seen)
        kind, value = self.script[min(n, len(self.script)) - 1]
        usage = Usage(requests=1, input_tokens=10, output_tokens=n, total_tokens=10 + n)
        if kind == "text":
            return ModelResponse(output=[_text(value, n)], usage=usage, response_id=None)
        call = ResponseFunctionToolCall(
            arguments=f'{{"city": "{value}"}}',
            call_id=f"c{n}",
            name="lookup",
            type="function_call",
            id=f"f{n}",
        )
        return ModelResponse(output=[_text(f"turn {n}", n), call], usage=usage, response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


def _run(gate, script):
    model = Scripted(script)
    hooks = GateHooks(gate)
    agent = Agent(
        name="weather",
        tools=[lookup],
        model=model,
        hooks=hooks,
        tool_use_behavior=hooks.tool_use_behavior,
    )
    gate.begin()
    config = hooks.run_config(tracing_disabled=True)  # nothing is sent anywhere
    result = Runner.run_sync(agent, "Weather in Paris?", run_config=config)
    return result, model


def _contents(items):
    return [i.get("content") for i in items if isinstance(i, dict) and i.get("role") == "user"]


def test_continue_then_terminate_ends_with_the_answer():
    gate = scripted_gate(C, C, T)
    result, model = _run(gate, [("call", "paris")] * 6)
    assert len(model.seen) == 3 and result.final_output == "turn 3"
    call = gate.seen_steps[0].calls[0]
    assert (call.name, call.args, call.result) == ("lookup", {"city": "paris"}, "paris: sunny")
    assert [s.tokens for s in gate.seen_steps] == [11, 12, 13]


def test_a_tool_error_reaches_the_gate():
    gate = scripted_gate(T)
    _run(gate, [("call", "nowhere")])
    assert gate.seen_steps[0].calls[0].error.startswith("An error occurred")


def test_replan_fresh_sends_the_task_and_the_instruction():
    gate = scripted_gate(R, T)
    _, model = _run(gate, [("call", "paris")] * 4)
    second = model.seen[1]
    assert len(second) == 2 and _contents(second)[0] == "Weather in Paris?"
    assert _contents(second)[1].startswith("Your approach")


def test_replan_nudge_keeps_the_failed_context():
    gate = scripted_gate(R, T, replan="nudge")
    _, model = _run(gate, [("call", "paris")] * 4)
    second = model.seen[1]
    assert len(second) > 2 and _contents(second)[-1].startswith("Your approach")


def test_a_turn_without_tools_ends_the_run_undecided():
    gate = scripted_gate(C)
    result, model = _run(gate, [("text", "done already")])
    assert result.final_output == "done already" and len(model.seen) == 1
    assert gate.seen_steps == []  # no veto here
