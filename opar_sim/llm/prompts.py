"""The prompts of the LLM agent, built from the task's goal, its tools and the context.

One system message states the role, the goal and the tools (with their
argument schemas); each phase adds one user message holding the recent
trajectory and the phase's instruction with an example of the JSON expected.
Prompts stay short: small local models lose the thread in long contexts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from opar_sim.core.llm import JsonSchema, Message
from opar_sim.core.task import ToolSpec
from opar_sim.core.types import Observation, Plan
from opar_sim.llm.schemas import args_schema


def describe_type(schema: JsonSchema) -> str:
    """A compact type for one argument: "next_week"|"widened", int 0..23, number, ..."""
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    kind = {"integer": "int", "number": "number", "boolean": "true|false", "string": "string"}.get(
        str(schema.get("type")), str(schema.get("type", "any"))
    )
    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    hi = schema.get("maximum", schema.get("exclusiveMaximum"))
    if lo is not None or hi is not None:
        kind += f" {'' if lo is None else lo}..{'' if hi is None else hi}"
    return kind


def describe_tool(tool: ToolSpec) -> str:
    """One line per tool: ``name(arg: type, ...) - description [high risk]``."""
    props: dict[str, Any] = args_schema(tool)["properties"]
    args = ", ".join(f"{name}: {describe_type(s)}" for name, s in props.items())
    risk = " [high risk: irreversible]" if tool.risk == "high" else ""
    return f"- {tool.name}({args}): {tool.description}{risk}"


def system_prompt(goal: str, tools: Mapping[str, ToolSpec]) -> Message:
    """The system message: the OPAR loop's role, JSON-only replies, the goal and the tools."""
    lines = "\n".join(describe_tool(t) for t in tools.values())
    return {
        "role": "system",
        "content": (
            "You are an agent working in a loop: observe, plan, act with one tool call, "
            "then evaluate your progress honestly. Reply with JSON only.\n"
            f"Goal: {goal}\nTools:\n{lines}"
        ),
    }


def _history(history: Sequence[str], obs: Observation) -> str:
    past = "\n".join(history) if history else "(nothing yet)"
    return f"What happened so far:\n{past}\nCurrent observation: {obs.text}"


def plan_messages(
    system: Message,
    history: Sequence[str],
    obs: Observation,
    critique: str,
    max_steps: int,
    previous: Plan | None = None,
) -> list[Message]:
    """Ask for a conditional plan of at most ``max_steps`` steps, showing the critique if any.

    With ``previous`` (a REPLAN) the request shows the plan being replaced and
    asks for a different one.
    """
    hint = f"\nCritique of the previous attempt: {critique}" if critique else ""
    if previous is not None:
        old = ", ".join(s.tool for s in previous.steps) or "(no steps)"
        hint += (
            f"\nThe controller rejected the current plan ({old}): it is not reaching the goal. "
            "Make a NEW plan that addresses the critique; do not repeat the rejected one."
        )
    example = '{"steps": [{"tool": "TOOL", "description": "why", "condition": "", "fallback": ""}]}'
    ask = (
        f"{_history(history, obs)}{hint}\n"
        f"Make a plan of at most {max_steps} tool steps to reach the goal from here. "
        "Give a condition and fallback when a step may fail (else empty strings). "
        f"JSON like {example}"
    )
    return [system, {"role": "user", "content": ask}]


def act_messages(
    system: Message, history: Sequence[str], obs: Observation, plan: Plan
) -> list[Message]:
    """Ask for the next tool call, with the plan shown and its next step marked."""
    steps = "\n".join(
        f"{'->' if i == plan.cursor else '  '} {i + 1}. {s.tool}: {s.description}"
        + (f" (if {s.condition}: {s.fallback})" if s.condition else "")
        for i, s in enumerate(plan.steps)
    )
    ask = (
        f"{_history(history, obs)}\nPlan (-> marks the next step):\n{steps}\n"
        'Choose the next tool call. JSON like {"tool": "TOOL", "args": {...}}'
    )
    return [system, {"role": "user", "content": ask}]


def evaluate_messages(
    system: Message, history: Sequence[str], obs: Observation, last: str
) -> list[Message]:
    """Ask for the self-reflection on ``last`` step: critique, the δ signals, confidence."""
    ask = (
        f"{_history(history, obs)}\nLast step: {last}\n"
        "Evaluate: critique (one sentence), delta_task (progress toward the goal, 0 to 1), "
        "delta_act (did the last action work, 0 to 1), delta_plan (how much the world "
        "drifted from the plan, 0 to 1), confidence (0 to 1), sufficient (is the goal met), "
        "missing (information still missing), next_action (a tool name, or stop). "
        "Numbers are your own estimates, not copied from anywhere. JSON with exactly these "
        "keys: critique, delta_task, delta_act, delta_plan, confidence, sufficient, missing, "
        "next_action."
    )
    return [system, {"role": "user", "content": ask}]


def estimate_tokens(messages: Sequence[Message]) -> int:
    """A rough token count (4 characters a token) for budgeting before a call."""
    return sum(len(m["content"]) for m in messages) // 4 + 4 * len(messages)
