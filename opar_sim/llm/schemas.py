"""The structured outputs of the LLM agent and the JSON schemas sent for them.

Pydantic models validate what comes back; the schema sent to the model is
built from the task's tools, so that a grammar-constrained backend can only
name a real tool with arguments of the right shape.  Validation still runs on
every reply: a backend without constrained decoding may send anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from opar_sim.core.llm import JsonSchema
from opar_sim.core.task import ToolSpec

DESCRIPTION_CHARS = 60
CRITIQUE_CHARS = 100


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class PlanStepOut(_Out):
    """One plan step: a tool, why, and an optional branch ("if empty, widen the range")."""

    tool: str
    description: str = ""
    condition: str = ""
    fallback: str = ""


class PlanOut(_Out):
    """A plan π: an ordered list of steps."""

    steps: list[PlanStepOut] = Field(min_length=1)


class ToolCallOut(_Out):
    """An action a_t: which tool, with which arguments (validated against the tool later)."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class EvaluationOut(_Out):
    """The ReAct self-reflection template plus the OPAR document's δ signals."""

    critique: str = ""
    delta_task: float = Field(ge=0, le=1, description="progress toward the goal")
    delta_act: float = Field(ge=0, le=1, description="did the last action do what was expected")
    delta_plan: float = Field(ge=0, le=1, description="how far the world drifted from the plan")
    confidence: float = Field(ge=0, le=1)
    sufficient: bool = False
    missing: list[str] = Field(default_factory=list)
    next_action: str = ""


def _text(max_chars: int) -> JsonSchema:
    return {"type": "string", "maxLength": max_chars}


def _unit() -> JsonSchema:
    return {"type": "number", "minimum": 0, "maximum": 1}


def args_schema(tool: ToolSpec) -> JsonSchema:
    """A tool's argument schema, inlined (no $ref) and without titles."""
    return _strip(tool.args.model_json_schema())


def _strip(schema: JsonSchema) -> JsonSchema:
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {k: walk(v) for k, v in node.items() if k not in ("title", "$defs")}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out: JsonSchema = walk(schema)
    out.setdefault("properties", {})
    return out


def plan_schema(tools: Mapping[str, ToolSpec], max_steps: int) -> JsonSchema:
    """A plan of 1 to ``max_steps`` steps, each naming one of ``tools``, with short texts."""
    step = {
        "type": "object",
        "properties": {
            "tool": {"type": "string", "enum": list(tools)},
            "description": _text(DESCRIPTION_CHARS),
            "condition": _text(DESCRIPTION_CHARS),
            "fallback": _text(DESCRIPTION_CHARS),
        },
        "required": ["tool", "description", "condition", "fallback"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "steps": {"type": "array", "items": step, "minItems": 1, "maxItems": max_steps}
        },
        "required": ["steps"],
        "additionalProperties": False,
    }


def action_schema(tools: Mapping[str, ToolSpec]) -> JsonSchema:
    """One alternative per tool: {"tool": NAME, "args": that tool's argument schema}."""
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {"tool": {"const": name}, "args": args_schema(spec)},
                "required": ["tool", "args"],
                "additionalProperties": False,
            }
            for name, spec in tools.items()
        ]
    }


def evaluation_schema(tools: Mapping[str, ToolSpec]) -> JsonSchema:
    """The self-reflection: δ signals and confidence in [0, 1], ``next_action`` a tool or stop."""
    return {
        "type": "object",
        "properties": {
            "critique": _text(CRITIQUE_CHARS),
            "delta_task": _unit(),
            "delta_act": _unit(),
            "delta_plan": _unit(),
            "confidence": _unit(),
            "sufficient": {"type": "boolean"},
            "missing": {"type": "array", "items": _text(60), "maxItems": 3},
            "next_action": {"type": "string", "enum": [*tools, "stop"]},
        },
        "required": list(EvaluationOut.model_fields),
        "additionalProperties": False,
    }
