"""The PydanticAI adapter against the real package and its FunctionModel (no network)."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "pydantic_ai", reason="PydanticAI is not installed: pip install 'opar-sim[agents]'"
)

from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.usage import RequestUsage

from opar_sim.runtime.adapters.pydantic_ai import GateCapability
from tests.runtime.scripted import C, R, T, scripted_gate


def _model(script):
    """Answers from ``script`` in turn, keeping every message list it was sent."""
    seen = []

    def reply(messages, info):
        seen.append(list(messages))
        kind, value = script[min(len(seen) - 1, len(script) - 1)]
        usage = RequestUsage(input_tokens=10, output_tokens=len(seen))
        if kind == "call":
            part = ToolCallPart("lookup", {"city": value}, tool_call_id=f"c{len(seen)}")
            return ModelResponse(parts=[TextPart(f"turn {len(seen)}"), part], usage=usage)
        return ModelResponse(parts=[TextPart(value)], usage=usage)

    return FunctionModel(reply), seen


def _agent(gate, script):
    model, seen = _model(script)
    agent = Agent(model, capabilities=[GateCapability(gate)])

    @agent.tool_plain
    def lookup(city: str) -> str:
        """Look a city up."""
        if city == "nowhere":
            raise ModelRetry("no such city")
        return f"{city}: sunny"

    gate.begin()
    return agent, seen


def _users(messages):
    return [
        p.content
        for m in messages
        if m.kind == "request"
        for p in m.parts
        if p.part_kind == "user-prompt"
    ]


def test_continue_then_terminate_ends_the_run_with_the_answer():
    gate = scripted_gate(C, C, T)
    agent, seen = _agent(gate, [("call", "paris")] * 6)
    result = agent.run_sync("Weather in Paris?")
    assert len(seen) == 3 and result.output == "turn 3"
    step = gate.seen_steps[0]
    assert (step.calls[0].name, step.calls[0].args, step.calls[0].result) == (
        "lookup",
        {"city": "paris"},
        "paris: sunny",
    )
    assert [s.tokens for s in gate.seen_steps] == [11, 12, 13]


def test_a_tool_error_reaches_the_gate():
    gate = scripted_gate(T)
    agent, _ = _agent(gate, [("call", "nowhere")])
    agent.run_sync("Weather nowhere?")
    assert "no such city" in gate.seen_steps[0].calls[0].error


def test_replan_fresh_sends_only_the_task_and_the_instruction():
    gate = scripted_gate(R, T)
    agent, seen = _agent(gate, [("call", "paris")] * 4)
    agent.run_sync("Weather in Paris?")
    second = seen[1]
    assert not any(m.kind == "response" for m in second)  # the first turn was dropped
    users = _users(second)
    assert users[0] == "Weather in Paris?" and users[1].startswith("Your approach")


def test_replan_nudge_keeps_the_failed_context():
    gate = scripted_gate(R, T, replan="nudge")
    agent, seen = _agent(gate, [("call", "paris")] * 4)
    agent.run_sync("Weather in Paris?")
    assert sum(m.kind == "response" for m in seen[1]) == 1
    assert _users(seen[1])[-1].startswith("Your approach")


def test_continue_vetoes_a_final_answer_and_terminate_keeps_the_next():
    gate = scripted_gate(C, T)
    agent, seen = _agent(gate, [("text", "done already"), ("text", "the real answer")])
    result = agent.run_sync("Weather in Paris?")
    assert len(seen) == 2 and result.output == "the real answer"
    assert _users(seen[1])[-1].startswith("The task is not done yet")
