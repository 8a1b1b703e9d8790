"""The LangChain adapter against the real package and a fake chat model (no network)."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "langchain", reason="LangChain is not installed: pip install 'opar-sim[agents]'"
)

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import ToolException, tool

from opar_sim.runtime.adapters.langchain import GateMiddleware
from tests.runtime.scripted import C, R, T, scripted_gate


class FakeModel(GenericFakeChatModel):
    """langchain_core's fake model, which also binds tools and keeps what it was sent."""

    seen: list

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    if city == "nowhere":
        raise ToolException("no such city")
    return f"{city}: sunny"


lookup.handle_tool_error = True


def _call(i, city="paris"):
    usage = {"input_tokens": 10, "output_tokens": i, "total_tokens": 10 + i}
    return AIMessage(
        f"turn {i}",
        tool_calls=[{"name": "lookup", "args": {"city": city}, "id": f"c{i}"}],
        usage_metadata=usage,
    )


def _run(gate, replies):
    model = FakeModel(messages=iter(replies), seen=[])
    agent = create_agent(model, [lookup], middleware=[GateMiddleware(gate)])
    gate.begin()
    state = agent.invoke({"messages": [{"role": "user", "content": "Weather in Paris?"}]})
    return state["messages"], model.seen


def _ai_texts(messages):
    return [m.text for m in messages if m.type == "ai"]


def test_continue_then_terminate_ends_the_run_and_keeps_the_answer():
    gate = scripted_gate(C, C, T)
    messages, seen = _run(gate, [_call(i) for i in range(1, 7)])
    assert len(seen) == 3 and _ai_texts(messages)[-1] == "turn 3"
    step = gate.seen_steps[0]
    assert (step.calls[0].args, step.calls[0].result) == ({"city": "paris"}, "paris: sunny")
    assert [s.tokens for s in gate.seen_steps] == [11, 12, 13]


def test_a_tool_error_reaches_the_gate():
    gate = scripted_gate(T)
    _run(gate, [_call(1, "nowhere")])
    assert gate.seen_steps[0].calls[0].error == "no such city"


def test_replan_fresh_sends_only_the_task_and_the_instruction():
    gate = scripted_gate(R, T)
    _, seen = _run(gate, [_call(i) for i in range(1, 5)])
    assert [m.type for m in seen[1]] == ["human", "human"]
    assert seen[1][1].text.startswith("Your approach")


def test_replan_nudge_keeps_the_failed_context():
    gate = scripted_gate(R, T, replan="nudge")
    _, seen = _run(gate, [_call(i) for i in range(1, 5)])
    assert [m.type for m in seen[1]] == ["human", "ai", "tool", "human"]


def test_continue_vetoes_a_stop_and_terminate_keeps_the_next_answer():
    gate = scripted_gate(C, T)
    replies = [AIMessage("done already"), AIMessage("the real answer")]
    messages, seen = _run(gate, replies)
    assert len(seen) == 2 and messages[-1].text == "the real answer"
    assert seen[1][-1].text.startswith("The task is not done yet")
