"""The Inspect AI adapter against the real package and its mock model (mockllm)."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "inspect_ai", reason="Inspect AI is not installed: pip install 'opar-sim[agents]'"
)

from inspect_ai import Task, eval
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.tool import ToolError, tool

from opar_sim.runtime.adapters.inspect_ai import on_continue
from tests.runtime.scripted import C, R, T, scripted_gate


@tool
def lookup():
    async def execute(city: str) -> str:
        """Look a city up.

        Args:
            city: The city.
        """
        if city == "nowhere":
            raise ToolError("no such city")
        return f"{city}: sunny"

    return execute


def _used(output, tokens=15):
    # usage given: the mock model would count it with tiktoken's downloaded tables
    output.usage = ModelUsage(input_tokens=tokens - 5, output_tokens=5, total_tokens=tokens)
    return output


def _outputs(n: int, city: str = "paris"):
    return [
        _used(
            ModelOutput.for_tool_call(
                "mockllm/model", "lookup", {"city": city}, content=f"turn {i}"
            ),
            15 + i,
        )
        for i in range(n)
    ]


@pytest.fixture(autouse=True)
def _logs(tmp_path, monkeypatch):
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path))


def _run(gate, outputs):
    model = get_model("mockllm/model", custom_outputs=outputs)
    agent = react(tools=[lookup()], on_continue=on_continue(gate))
    task = Task(dataset=[Sample(input="What is the weather in Paris?")], solver=agent)
    gate.begin()
    (log,) = eval(task, model=model, display="none", log_format="json")
    assert log.status == "success", log.error.traceback if log.error else None
    return log.samples[0]


def _assistant_texts(state):
    return [m.text for m in state.messages if m.role == "assistant"]


def test_continue_then_terminate_ends_the_loop_and_keeps_the_answer():
    gate = scripted_gate(C, C, T)
    state = _run(gate, _outputs(6))
    assert _assistant_texts(state) == ["turn 0", "turn 1", "turn 2"]  # 3 of 6 outputs used
    assert state.output.completion == "turn 2"
    assert [s.calls[0].name for s in gate.seen_steps] == ["lookup"] * 3
    assert gate.seen_steps[0].calls[0].args == {"city": "paris"}
    assert gate.seen_steps[0].calls[0].result == "paris: sunny"
    assert [s.tokens for s in gate.seen_steps] == [15, 16, 17] and gate.tokens == 48


def test_a_tool_error_reaches_the_gate():
    gate = scripted_gate(T)
    _run(gate, _outputs(2, city="nowhere"))
    assert "no such city" in gate.seen_steps[0].calls[0].error


def test_replan_fresh_restarts_the_context_with_the_task():
    gate = scripted_gate(R, T)
    state = _run(gate, _outputs(4))
    assert _assistant_texts(state) == ["turn 1"]  # the first turn's context was dropped
    users = [m.text for m in state.messages if m.role == "user"]
    assert users[0] == "What is the weather in Paris?"
    assert users[1].startswith("Your approach is not reaching the goal (scripted replan)")
    assert [c.replans for c in gate.law.seen] == [0, 1]


def test_replan_nudge_keeps_the_failed_context():
    gate = scripted_gate(R, T, replan="nudge")
    state = _run(gate, _outputs(4))
    assert _assistant_texts(state) == ["turn 0", "turn 1"]
    assert any(m.text.startswith("Your approach") for m in state.messages if m.role == "user")


def test_continue_vetoes_a_turn_that_stops_calling_tools():
    gate = scripted_gate(C, T)
    outputs = [_used(ModelOutput.from_content("mockllm/model", "I am done.")), *_outputs(3)]
    state = _run(gate, outputs)
    assert _assistant_texts(state) == ["I am done.", "turn 0"]  # the model was asked again
    assert gate.seen_steps[0].calls == []
