"""Scripted model replies for LLM-agent tests: one responder answers every phase."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from opar_sim.core.llm import JsonSchema, Message


def plan_reply(*tools: str) -> str:
    steps = [{"tool": t, "description": t, "condition": "", "fallback": ""} for t in tools]
    return json.dumps({"steps": steps})


def action_reply(tool: str, **args: Any) -> str:
    return json.dumps({"tool": tool, "args": args})


def evaluation_reply(delta_task: float, confidence: float | None = None, **extra: Any) -> str:
    body = {
        "critique": "ok",
        "delta_task": delta_task,
        "delta_act": 1.0,
        "delta_plan": 0.0,
        "confidence": delta_task if confidence is None else confidence,
        "sufficient": delta_task >= 1.0,
        "missing": [],
        "next_action": "stop",
    }
    return json.dumps(body | extra)


def phase_of(schema: JsonSchema) -> str:
    """Which phase a request is for, from the schema it sends."""
    if "anyOf" in schema:
        return "act"
    if "steps" in schema.get("properties", {}):
        return "plan"
    return "evaluate"


class Responder:
    """Replies per phase, in order (the last repeats): plans, actions, evaluations."""

    def __init__(
        self, plans: Sequence[str], actions: Sequence[str], evaluations: Sequence[str]
    ) -> None:
        self.replies = {"plan": list(plans), "act": list(actions), "evaluate": list(evaluations)}
        self.used = {"plan": 0, "act": 0, "evaluate": 0}
        self.phases: list[str] = []

    def __call__(self, messages: Sequence[Message], schema: JsonSchema) -> str:
        phase = phase_of(schema)
        self.phases.append(phase)
        replies = self.replies[phase]
        reply = replies[min(self.used[phase], len(replies) - 1)]
        self.used[phase] += 1
        return reply
