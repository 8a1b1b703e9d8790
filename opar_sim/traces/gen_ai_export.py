"""A run as OpenTelemetry GenAI spans (``gen_ai.*``), in OTLP/JSON, with opar-sim's decisions.

Every episode is one trace: an ``invoke_agent`` span for the episode, and under it, per
loop iteration (a step), a ``plan`` span when the step works on a new plan, a ``chat``
span for the iteration's model call, and an ``execute_tool`` span for its tool call, with
the attributes of the GenAI semantic conventions (``gen_ai.operation.name``,
``gen_ai.agent.name``, ``gen_ai.conversation.id``, ``gen_ai.request.model``,
``gen_ai.usage.*`` for an LLM run's recorded calls, ``gen_ai.output.messages`` with the
requested ``tool_call``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
``gen_ai.tool.call.arguments``, ``error.type``).  The conventions have no place for a
loop's control decisions, so each ``chat`` span carries them under ``opar_sim.*``: the
Reflect signal, its reason, the controller's terms (``opar_sim.terms.p`` ...), the
evaluation, the cumulative simulated tokens; and ``opar_sim.step_row`` /
``opar_sim.episode_row`` hold the rows as JSON, so that importing the export gives the
same run back (``gen_ai_import``).  Sub-agents of a nested run are not exported.

Times are simulated seconds from the run's ``spec.json`` modification time, ids derived
from the run's name and the episode key: the same run exports the same bytes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

import opar_sim
from opar_sim.rundir import SPEC_FILE, episode_key, iter_episodes, iter_steps, read_spec
from opar_sim.traces.otlp import _attributes, _calls_by_step, _id, _span

SPAN_KIND_CLIENT = 3
SPAN_KIND_INTERNAL = 1


def _row_json(row: dict[str, Any]) -> str:
    return orjson.dumps(row).decode()


def _iteration_attrs(step: dict[str, Any], agent: str, tokens: int) -> dict[str, Any]:
    terms = {
        f"opar_sim.terms.{k}": float(v)
        for k, v in (step.get("terms") or {}).items()
        if isinstance(v, int | float) and math.isfinite(v)
    }
    tool = step.get("tool")
    output = None
    if tool:
        part = {
            "type": "tool_call",
            "id": f"call_{step['step']}",
            "name": tool,
            "arguments": step.get("action"),
        }
        output = _row_json({"role": "assistant", "parts": [part]})
        output = f"[{output}]"
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "opar_sim",  # a simulated agent; an LLM run's backend wins
        "gen_ai.request.model": agent,
        "gen_ai.output.messages": output,
        "opar_sim.step": int(step["step"]),
        "opar_sim.signal": step.get("signal"),
        "opar_sim.reason": step.get("reason"),
        "opar_sim.guard": step.get("guard"),
        "opar_sim.delta_task": step.get("delta_task"),
        "opar_sim.confidence": step.get("confidence"),
        "opar_sim.plan_id": step.get("plan_id"),
        "opar_sim.tokens": int(step.get("tokens") or 0),
        "opar_sim.step_tokens": tokens,
        **terms,
        "opar_sim.step_row": _row_json(step),
    }


def _usage(calls: list[dict[str, Any]]) -> dict[str, Any]:
    prompt = [int(c["prompt_tokens"]) for c in calls if c.get("prompt_tokens") is not None]
    completion = [
        int(c["completion_tokens"]) for c in calls if c.get("completion_tokens") is not None
    ]
    out: dict[str, Any] = {
        "gen_ai.usage.input_tokens": sum(prompt) if prompt else None,
        "gen_ai.usage.output_tokens": sum(completion) if completion else None,
    }
    backend = next((c.get("backend") for c in calls if c.get("backend")), None)
    if backend is not None:
        out["gen_ai.provider.name"] = backend
    return out


def _episode_spans(
    run: str,
    episode: dict[str, Any],
    steps: list[dict[str, Any]],
    calls: dict[tuple[str, int, int], list[dict[str, Any]]],
    base_ns: int,
) -> list[dict[str, Any]]:
    controller, number, trial, attempt = episode_key(episode)
    trace_id = _id(f"gen_ai|{run}|{controller}|{number}|{trial}|{attempt}", 32)
    root = _id(trace_id + "invoke_agent", 16)
    agent = str(episode.get("agent") or "agent")
    sim = float(episode.get("sim_seconds") or 0.0)
    outcome = str(episode.get("outcome"))
    error = outcome.partition(":")[2] if outcome.startswith("error:") else None
    attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        "gen_ai.conversation.id": f"{run}/{controller}/{number}/{trial}/{attempt}",
        "error.type": error,
        "opar_sim.controller": controller,
        "opar_sim.episode": number,
        "opar_sim.trial": trial,
        "opar_sim.attempt": attempt,
        "opar_sim.outcome": outcome,
        "opar_sim.success": bool(episode.get("success")),
        "opar_sim.episode_row": _row_json(episode),
    }
    spans = [_span(trace_id, root, None, f"invoke_agent {agent}", 0.0, sim, base_ns, attrs, error)]
    spans[0]["kind"] = SPAN_KIND_INTERNAL
    previous_time, previous_tokens, plan = 0.0, 0, None
    for step in steps:
        k = int(step["step"])
        end = max(float(step.get("time") or previous_time), previous_time)
        tokens = int(step.get("tokens") or 0)
        latency = float(step.get("latency") or 0.0) if step.get("tool") else 0.0
        tool_start = max(previous_time, end - latency)
        model_calls = calls.get((controller, number, k), [])
        if step.get("plan_id") is not None and step.get("plan_id") != plan:
            plan = step.get("plan_id")
            plan_attrs = {
                "gen_ai.operation.name": "plan",
                "gen_ai.agent.name": agent,
                "opar_sim.plan_id": plan,
            }
            planned = [c for c in model_calls if c.get("phase") == "plan"]
            plan_attrs.update(_usage(planned) if planned else {})
            spans.append(
                _span(
                    trace_id,
                    _id(f"{trace_id}plan{k}", 16),
                    root,
                    f"plan {agent}",
                    previous_time,
                    previous_time,
                    base_ns,
                    plan_attrs,
                )
            )
            model_calls = [c for c in model_calls if c.get("phase") != "plan"]
        chat = _iteration_attrs(step, agent, tokens - previous_tokens)
        chat.update(_usage(model_calls) if model_calls else {})
        chat_id = _id(f"{trace_id}chat{k}", 16)
        spans.append(
            _span(
                trace_id,
                chat_id,
                root,
                f"chat {agent}",
                previous_time,
                tool_start,
                base_ns,
                chat,
                step.get("error"),
            )
        )
        spans[-1]["kind"] = SPAN_KIND_CLIENT
        if step.get("tool"):
            tool_error = step.get("tool_error")
            tool_attrs = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": step["tool"],
                "gen_ai.tool.type": "function",
                "gen_ai.tool.call.id": f"call_{k}",
                "gen_ai.tool.call.arguments": step.get("action"),
                "gen_ai.tool.call.result": step.get("result"),
                "error.type": tool_error,
            }
            spans.append(
                _span(
                    trace_id,
                    _id(f"{trace_id}tool{k}", 16),
                    root,
                    f"execute_tool {step['tool']}",
                    tool_start,
                    end,
                    base_ns,
                    tool_attrs,
                    tool_error,
                )
            )
        previous_time, previous_tokens = end, tokens
    return spans


def gen_ai_spans(path: Path) -> dict[str, Any]:
    """The run directory as one OTLP ``ExportTraceServiceRequest`` with GenAI spans (JSON form).

    Args:
        path: The run directory.

    Returns:
        ``{"resourceSpans": [...]}``: one resource (opar-sim, the run), one scope, every
        episode's spans.
    """
    spec = read_spec(path)
    run = spec.name if spec is not None else path.name
    spec_file = path / SPEC_FILE
    base_ns = spec_file.stat().st_mtime_ns if spec_file.is_file() else 0
    calls = _calls_by_step(path)
    steps_of: dict[tuple[str, int, int, int], list[dict[str, Any]]] = defaultdict(list)
    for row in iter_steps(path):
        if row.get("parent") is None:
            steps_of[episode_key(row)].append(row)
    spans: list[dict[str, Any]] = []
    for episode in iter_episodes(path):
        spans += _episode_spans(
            run, episode, steps_of.get(episode_key(episode), []), calls, base_ns
        )
    resource = {
        "service.name": "opar-sim",
        "service.version": opar_sim.__version__,
        "opar_sim.run": run,
    }
    scope = {"name": "opar-sim", "version": opar_sim.__version__}
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(resource)},
                "scopeSpans": [{"scope": scope, "spans": spans}],
            }
        ]
    }
