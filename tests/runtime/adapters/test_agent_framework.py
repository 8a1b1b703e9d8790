"""The Microsoft Agent Framework adapters against the real packages (no network).

The agent's model is a ``BaseChatClient`` subclass with function invocation (the way the
package's own docs write a custom client), answering from a script; Magentic runs with a
scripted manager behind ``GateMagenticManager``.
"""

from __future__ import annotations

import asyncio
import warnings

import pytest

pytest.importorskip(
    "agent_framework", reason="agent-framework is not installed: pip install 'opar-sim[agents]'"
)
pytest.importorskip(
    "agent_framework_orchestrations",
    reason="agent-framework-orchestrations is not installed: pip install 'opar-sim[agents]'",
)

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
    tool,
)
from agent_framework_orchestrations import (
    MagenticBuilder,
    MagenticManagerBase,
    MagenticProgressLedger,
    MagenticProgressLedgerItem,
)

from opar_sim.runtime import Gate
from opar_sim.runtime.adapters.agent_framework import MAGENTIC_STALLS, GateLoop, GateMagenticManager
from tests.runtime.scripted import C, R, T, scripted_gate

warnings.filterwarnings("ignore", message=".*experimental.*")


class Scripted(FunctionInvocationLayer, BaseChatClient):
    """Replies from a script: ("call", city) then its text, or ("text", text)."""

    def __init__(self, script, **kwargs):
        super().__init__(**kwargs)
        self.script = script
        self.seen = []

    def _inner_get_response(self, *, messages, stream, options, **kwargs):
        self.seen.append([(m.role, m.text) for m in messages])
        n = len(self.seen)
        kind, value = self.script[min(n, len(self.script)) - 1]

        async def reply():
            usage = {"input_token_count": 10, "output_token_count": n, "total_token_count": 10 + n}
            if kind == "call":
                call = Content.from_function_call(
                    call_id=f"c{n}", name="lookup", arguments={"city": value}
                )
                return ChatResponse(messages=[Message("assistant", [call])], usage_details=usage)
            return ChatResponse(messages=[Message("assistant", [value])], usage_details=usage)

        return reply()


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    if city == "nowhere":
        raise ValueError("no such city")
    return f"{city}: sunny"


def _run(gate, script):
    client = Scripted(script)
    agent = Agent(client=client, tools=[lookup], middleware=[GateLoop(gate).middleware(8)])
    gate.begin()
    session = agent.create_session()
    result = asyncio.run(agent.run("Weather in Paris?", session=session))
    return result, client


def _round(city):  # one agent run: a call, then an answer
    return [("call", city), ("text", f"answer about {city}")]


def test_continue_then_terminate_ends_with_the_last_answer():
    gate = scripted_gate(C, C, T)
    result, client = _run(gate, _round("paris") * 6)
    assert len(client.seen) == 6 and result.messages[-1].text == "answer about paris"
    call = gate.seen_steps[0].calls[0]
    assert (call.name, call.args, call.result) == ("lookup", {"city": "paris"}, "paris: sunny")
    assert [s.tokens for s in gate.seen_steps] == [11 + 12, 13 + 14, 15 + 16]


def test_a_tool_error_reaches_the_gate():
    gate = scripted_gate(T)
    _run(gate, _round("nowhere"))
    assert "no such city" in gate.seen_steps[0].calls[0].error


def test_replan_fresh_restarts_from_the_task():
    gate = scripted_gate(R, T)
    _, client = _run(gate, _round("paris") * 2)
    third = client.seen[2]  # the second run's first model call
    assert ("user", "Weather in Paris?") in third
    assert not any(role == "tool" for role, _ in third)
    assert third[-1][1].startswith("Your approach")


def test_replan_nudge_keeps_the_session():
    gate = scripted_gate(R, T, replan="nudge")
    _, client = _run(gate, _round("paris") * 2)
    third = client.seen[2]
    assert any(role == "tool" for role, _ in third) and third[-1][1].startswith("Your approach")


def test_continue_vetoes_a_run_that_stopped():
    gate = scripted_gate(C, T)
    result, client = _run(gate, [("text", "done already"), ("text", "the real answer")])
    assert len(client.seen) == 2 and result.messages[-1].text == "the real answer"
    assert client.seen[1][-1][1].startswith("The task is not done yet")


# -- Magentic: stall_counter decides the replans ------------------------------------------


def _item(answer):
    return MagenticProgressLedgerItem(reason="scripted", answer=answer)


class Ledgers(MagenticManagerBase):
    """A manager answering scripted ledgers: "stall", "progress" or "done"."""

    def __init__(self, script):
        super().__init__(max_round_count=12)
        self.script = list(script)
        self.calls = []

    async def plan(self, magentic_context):
        self.calls.append("plan")
        return Message("assistant", ["plan"])

    async def replan(self, magentic_context):
        self.calls.append("replan")
        return Message("assistant", ["new plan"])

    async def prepare_final_answer(self, magentic_context):
        self.calls.append("final")
        return Message("assistant", ["the final answer"])

    async def create_progress_ledger(self, magentic_context):
        state = self.script.pop(0) if self.script else "done"
        self.calls.append(state)
        return MagenticProgressLedger(
            is_request_satisfied=_item(state == "done"),
            is_in_loop=_item(False),
            is_progress_being_made=_item(state == "progress"),
            next_speaker=_item("worker"),
            instruction_or_question=_item("go on"),
        )


def _magentic(gate, script):
    worker = Agent(client=Scripted([("text", "worked")]), name="worker", description="works")
    inner = Ledgers(script)
    workflow = MagenticBuilder(
        participants=[worker], manager=GateMagenticManager(gate, inner)
    ).build()
    gate.begin()
    outputs = asyncio.run(workflow.run("Do the task")).get_outputs()
    return outputs, inner.calls


def test_magentic_replans_when_stall_counter_says_so():
    gate = Gate("stall_counter", {"max_stalls": 2, "max_replans": 1})
    outputs, calls = _magentic(gate, ["stall", "stall", "progress", "done"])
    assert calls == ["plan", "stall", "stall", "replan", "progress", "done", "final"]
    assert [d.signal for d in gate.decisions] == [C, R, C, T]
    assert "the final answer" in str(outputs[-1])


def test_magentic_gives_up_after_the_replans_with_a_final_answer():
    gate = Gate("stall_counter", {"max_stalls": 1, "max_replans": 1})
    outputs, calls = _magentic(gate, ["stall", "stall", "progress"])
    assert calls == ["plan", "stall", "replan", "stall", "final"]
    assert gate.last.signal is T and gate.last.give_up
    assert "the final answer" in str(outputs[-1])


def test_stall_counter_at_four_replans_where_magentic_at_three_does():
    script = ["stall"] * 5 + ["done"]
    worker = Agent(client=Scripted([("text", "worked")]), name="worker", description="works")
    native = Ledgers(script)  # Magentic's own count: max_stall_count = 3
    asyncio.run(MagenticBuilder(participants=[worker], manager=native).build().run("Do it"))
    gate = Gate("stall_counter", {"max_stalls": MAGENTIC_STALLS, "max_replans": 3})
    _, calls = _magentic(gate, script)
    assert native.calls == calls == ["plan", *["stall"] * 4, "replan", "stall", "done", "final"]
