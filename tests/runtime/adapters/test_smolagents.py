"""The smolagents adapter against the real package and a scripted Model (no network)."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "smolagents", reason="smolagents is not installed: pip install 'opar-sim[agents]'"
)

from smolagents import ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)
from smolagents.monitoring import TokenUsage

from opar_sim.runtime.adapters.smolagents import GateCallbacks
from tests.runtime.scripted import C, R, T, scripted_gate


@tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: The city.
    """
    if city == "nowhere":
        raise ValueError("no such city")
    return f"{city}: sunny"


class Scripted(Model):
    """Replies from a script: ("call", city), ("final", text) or ("text", text)."""

    def __init__(self, script):
        super().__init__(model_id="scripted")
        self.script = script
        self.seen = []

    def generate(self, messages, stop_sequences=None, response_format=None, **kwargs):
        self.seen.append(list(messages))
        n = len(self.seen)
        usage = TokenUsage(input_tokens=10, output_tokens=n)
        if n > len(self.script):  # smolagents' own final-answer call after a TERMINATE
            return ChatMessage(MessageRole.ASSISTANT, "the written answer", token_usage=usage)
        kind, value = self.script[n - 1]
        name, args = (
            ("lookup", {"city": value}) if kind == "call" else ("final_answer", {"answer": value})
        )
        call = ChatMessageToolCall(ChatMessageToolCallFunction(args, name), f"c{n}", "function")
        return ChatMessage(MessageRole.ASSISTANT, f"turn {n}", [call], token_usage=usage)


def _run(gate, script, max_steps=8):
    model = Scripted(script)
    hooks = GateCallbacks(gate)
    agent = ToolCallingAgent(
        tools=[lookup],
        model=model,
        max_steps=max_steps,
        step_callbacks=[hooks.step],
        final_answer_checks=[hooks.check],
        verbosity_level=0,
    )
    gate.begin()
    return agent.run("Weather in Paris?"), model


def _texts(messages):
    return [c.get("text", "") for m in messages for c in (m.content or []) if isinstance(c, dict)]


def test_continue_then_terminate_ends_with_a_written_final_answer():
    gate = scripted_gate(C, C, T)
    answer, model = _run(gate, [("call", "paris")] * 3)
    assert answer == "the written answer" and len(model.seen) == 4  # 3 steps, 1 final call
    assert "turn 3" in _texts(model.seen[3])[1:]  # the final call read the steps from memory
    call = gate.seen_steps[0].calls[0]
    assert (call.name, call.args, call.result) == ("lookup", {"city": "paris"}, "paris: sunny")
    assert [s.tokens for s in gate.seen_steps] == [11, 12, 13]


def test_a_tool_error_reaches_the_gate():
    gate = scripted_gate(T)
    _run(gate, [("call", "nowhere")])
    assert "no such city" in gate.seen_steps[0].calls[0].error


def test_replan_fresh_keeps_only_the_task_and_the_instruction():
    gate = scripted_gate(R, T)
    _, model = _run(gate, [("call", "paris")] * 4)
    texts = " | ".join(_texts(model.seen[1]))
    assert "Weather in Paris?" in texts and "Your approach is not reaching the goal" in texts
    assert "turn 1" not in texts and "paris: sunny" not in texts


def test_replan_nudge_keeps_the_failed_context():
    gate = scripted_gate(R, T, replan="nudge")
    _, model = _run(gate, [("call", "paris")] * 4)
    texts = " | ".join(_texts(model.seen[1]))
    assert "turn 1" in texts and "paris: sunny" in texts and "Your approach" in texts


def test_continue_vetoes_a_final_answer_and_terminate_keeps_the_next():
    gate = scripted_gate(C, T)
    answer, model = _run(gate, [("final", "done already"), ("final", "the real answer")])
    assert answer == "the real answer" and len(model.seen) == 2
    assert [s.answer for s in gate.seen_steps] == ["done already", "the real answer"]
