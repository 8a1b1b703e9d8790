"""Span trees (OpenTelemetry GenAI, OpenInference, Langfuse) reassembled into turns.

A trace is one run.  Its spans are sorted by start time; each model-call span (``chat``,
``text_completion``, ``generate_content``; OpenInference ``LLM``; Langfuse ``GENERATION``) is
one assistant turn, with the tool calls its output requested (``gen_ai.output.messages``,
``llm.output_messages.*.tool_calls``) and the tool spans (``execute_tool``, ``TOOL``) that
ran after it and before the next model call: a tool span is matched to a requested call by
call id, else by name, else added as a call of its own.  Tool spans before any model call
form a turn of their own.  A ``plan`` span's tokens are added to the next turn.

The file may be OTLP/JSON (``resourceSpans``), a list of spans, or one span's attribute
map (as OpenInference's test fixtures are).  Tokens are per turn from
``gen_ai.usage.input_tokens``/``output_tokens`` (``llm.token_count.prompt``/``completion``);
the outcome is ``error:<error.type>`` when the trace's root span failed, opar-sim's own
``opar_sim.outcome`` when it carries one, a score's verdict with ``--success-score``, else
``unknown``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import orjson

from opar_sim.traces.runs import (
    Call,
    Pending,
    TraceFormatError,
    TraceRun,
    Turn,
    count,
    items,
    obj,
    text_chars,
)

LLM_OPERATIONS = ("chat", "text_completion", "generate_content")
_NS = 1e9


@dataclass(slots=True)
class Span:
    """One span, as the turn builder needs it."""

    trace: str
    span_id: str
    parent: str | None
    name: str
    start: int | None  # nanoseconds since the epoch
    end: int | None
    attrs: dict[str, Any]
    error: str | None = None  # the span failed: its error type or status message
    order: int = 0  # its place in the file (breaks ties of start time)
    kind: str = "other"  # llm, tool, plan, agent or other
    scores: dict[str, float] = field(default_factory=dict)


def _any_value(value: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` as a Python value."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return None
    if "arrayValue" in value:
        values = items(obj(value["arrayValue"]).get("values"))
        return [_any_value(v) for v in values]
    return None


def _attributes(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    out: dict[str, Any] = {}
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, dict) and isinstance(item.get("key"), str):
                out[item["key"]] = _any_value(item.get("value"))
    return out


def _nanos(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if 0 < number < 2**63 else None


def _status_error(span: dict[str, Any], attrs: dict[str, Any]) -> str | None:
    status = obj(span.get("status"))
    if status.get("code") in (2, "STATUS_CODE_ERROR", "ERROR"):
        kind = attrs.get("error.type") or status.get("message") or "error"
        return str(kind)[:200]
    return None


def _evaluation_scores(span: dict[str, Any]) -> dict[str, float]:
    """``gen_ai.evaluation.result`` events: name -> score value."""
    out: dict[str, float] = {}
    events = span.get("events")
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, dict) or event.get("name") != "gen_ai.evaluation.result":
            continue
        attrs = _attributes(event.get("attributes"))
        name, value = (
            attrs.get("gen_ai.evaluation.name"),
            attrs.get("gen_ai.evaluation.score.value"),
        )
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if isinstance(name, str) and math.isfinite(value):
            out[name] = float(value)
    return out


def _span(raw: dict[str, Any], order: int) -> Span:
    attrs = _attributes(raw.get("attributes"))
    trace = raw.get("traceId", raw.get("trace_id"))
    span_id = raw.get("spanId", raw.get("span_id"))
    parent = raw.get("parentSpanId", raw.get("parent_span_id")) or None
    return Span(
        str(trace) if trace is not None else "trace",
        str(span_id) if span_id is not None else f"span{order}",
        str(parent) if parent is not None else None,
        str(raw.get("name") or ""),
        _nanos(raw.get("startTimeUnixNano")),
        _nanos(raw.get("endTimeUnixNano")),
        attrs,
        _status_error(raw, attrs),
        order,
        scores=_evaluation_scores(raw),
    )


def read_spans(doc: Any) -> list[Span]:
    """Every span of an OTLP/JSON request, a list of spans or one span's attribute map.

    Raises:
        TraceFormatError: when the document holds no span.
    """
    raws: list[dict[str, Any]] = []
    docs = doc if isinstance(doc, list) else [doc]
    for item in docs:
        if not isinstance(item, dict):
            continue
        if "resourceSpans" in item:
            for resource in _list(item.get("resourceSpans")):
                scopes = _list(
                    resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans")
                )
                for scope in scopes:
                    raws += [s for s in _list(scope.get("spans")) if isinstance(s, dict)]
        elif "attributes" in item or "spanId" in item or "span_id" in item:
            raws.append(item)
        else:  # one span's attribute map
            raws.append({"attributes": item})
    if not raws:
        raise TraceFormatError("no spans found (expected OTLP/JSON resourceSpans or spans)")
    return [_span(raw, k) for k, raw in enumerate(raws)]


def _list(value: Any) -> list[Any]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
    return value


def classify(span: Span, fmt: str) -> str:
    """llm, tool, plan, agent or other, by the format's own names."""
    if fmt == "openinference":
        kind = str(span.attrs.get("openinference.span.kind", "")).upper()
        return {"LLM": "llm", "TOOL": "tool", "AGENT": "agent"}.get(kind, "other")
    operation = span.attrs.get("gen_ai.operation.name")
    if operation in LLM_OPERATIONS:
        return "llm"
    if operation == "execute_tool":
        return "tool"
    if operation == "plan":
        return "plan"
    if operation in ("invoke_agent", "create_agent", "invoke_workflow"):
        return "agent"
    return "other"


def _requested_gen_ai(attrs: dict[str, Any]) -> list[tuple[Any, Call]]:
    out: list[tuple[Any, Call]] = []
    messages = _json(attrs.get("gen_ai.output.messages"))
    for message in messages if isinstance(messages, list) else []:
        parts = message.get("parts") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_call" and part.get("name"):
                out.append((part.get("id"), Call(str(part["name"]), part.get("arguments"))))
    return out


def _requested_openinference(attrs: dict[str, Any]) -> list[tuple[Any, Call]]:
    prefix = "llm.output_messages."
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix) or ".message.tool_calls." not in key:
            continue
        head, _, rest = key[len(prefix) :].partition(".message.tool_calls.")
        number, _, name = rest.partition(".tool_call.")
        if head.isdigit() and number.isdigit():
            found.setdefault((int(head), int(number)), {})[name] = value
    out = []
    for _, call in sorted(found.items()):
        if call.get("function.name"):
            out.append(
                (call.get("id"), Call(str(call["function.name"]), call.get("function.arguments")))
            )
    return out


def _user_turns(attrs: dict[str, Any], fmt: str) -> int:
    if fmt == "openinference":
        return sum(
            1
            for key, value in attrs.items()
            if key.startswith("llm.input_messages.")
            and key.endswith(".message.role")
            and value == "user"
        )
    messages = _json(attrs.get("gen_ai.input.messages"))
    if not isinstance(messages, list):
        return 0
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "user")


def _tokens(attrs: dict[str, Any], fmt: str) -> tuple[int | None, int | None]:
    if fmt == "openinference":
        return count(attrs.get("llm.token_count.prompt")), count(
            attrs.get("llm.token_count.completion")
        )
    prompt = attrs.get("gen_ai.usage.input_tokens", attrs.get("gen_ai.usage.prompt_tokens"))
    completion = attrs.get(
        "gen_ai.usage.output_tokens", attrs.get("gen_ai.usage.completion_tokens")
    )  # the names before v1.27 of the conventions, as a fallback
    return count(prompt), count(completion)


def _tool_call(span: Span, fmt: str) -> tuple[Any, Call]:
    attrs = span.attrs
    if fmt == "openinference":
        name = attrs.get("tool.name") or span.name
        arguments = attrs.get("tool.parameters", attrs.get("input.value"))
        call_id = attrs.get("tool_call.id")
    else:
        name = attrs.get("gen_ai.tool.name") or span.name
        arguments = attrs.get("gen_ai.tool.call.arguments", attrs.get("input"))
        call_id = attrs.get("gen_ai.tool.call.id")
    seconds = None
    if span.start is not None and span.end is not None and span.end >= span.start:
        seconds = (span.end - span.start) / _NS
    return call_id, Call(str(name) or "unknown", arguments, span.error, seconds)


def _attach(pending: Pending, call_id: Any, call: Call) -> None:
    """Match an executed tool to a requested call (by id, else name) or add it."""
    requested = pending.take(call_id, call.name)
    if requested is None:
        pending.add(call)
        return
    requested.error = call.error
    requested.seconds = call.seconds
    if requested.arguments is None:
        requested.arguments = call.arguments


def trace_turns(spans: list[Span], fmt: str) -> list[Turn]:
    """The turns of one trace's spans (already classified), in start order."""
    ordered = sorted(spans, key=lambda s: (s.start if s.start is not None else 2**63, s.order))
    turns: list[Turn] = []
    current: Turn | None = None
    pending = Pending(Turn(), [])
    plan_prompt = plan_completion = 0
    planned = False
    for span in ordered:
        if span.kind == "plan":
            p, c = _tokens(span.attrs, fmt)
            plan_prompt += p or 0
            plan_completion += c or 0
            planned = planned or p is not None or c is not None
        elif span.kind == "llm":
            requested = (
                _requested_openinference(span.attrs)
                if fmt == "openinference"
                else _requested_gen_ai(span.attrs)
            )
            prompt, completion = _tokens(span.attrs, fmt)
            if planned:
                prompt = (prompt or 0) + plan_prompt
                completion = (completion or 0) + plan_completion
            plan_prompt = plan_completion = 0
            planned = False
            chars = sum(len(str(c.arguments or "")) + len(c.name) for _, c in requested)
            chars += text_chars(span.attrs.get("output.value") or span.attrs.get("output"))
            current = Turn(
                [c for _, c in requested],
                prompt,
                completion,
                chars,
                _user_turns(span.attrs, fmt),
                span.error,
            )
            pending = Pending(current, [i for i, _ in requested])
            turns.append(current)
        elif span.kind == "tool":
            if current is None:
                current = Turn()
                pending = Pending(current, [])
                turns.append(current)
            call_id, call = _tool_call(span, fmt)
            _attach(pending, call_id, call)
    return turns


def _outcome(spans: list[Span], fmt: str) -> tuple[str, str | None, dict[str, float]]:
    """(outcome, the recorded stop, scores) of one trace."""
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent is None or s.parent not in ids]
    scores: dict[str, float] = {}
    for span in spans:
        scores.update(span.scores)
    for root in roots:
        own = root.attrs.get("opar_sim.outcome")
        if isinstance(own, str) and own:
            return own, own, scores
    for root in roots:
        if root.error is not None:
            return f"error:{root.error}", root.error, scores
    return "unknown", None, scores


def _agent(spans: list[Span], fmt: str) -> str | None:
    for span in spans:
        for key in ("gen_ai.agent.name", "gen_ai.response.model", "gen_ai.request.model"):
            if fmt != "openinference" and isinstance(span.attrs.get(key), str):
                return str(span.attrs[key])
        if fmt == "openinference" and isinstance(span.attrs.get("llm.model_name"), str):
            return str(span.attrs["llm.model_name"])
    return None


def span_runs(spans: list[Span], fmt: str) -> list[TraceRun]:
    """One run per trace, in the order the traces first appear.

    Args:
        spans: Every span of the file.
        fmt: ``otel-genai``, ``openinference`` or ``langfuse`` (its spans already classified).
    """
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        if fmt != "langfuse":
            span.kind = classify(span, fmt)
        by_trace.setdefault(span.trace, []).append(span)
    runs = []
    for trace, members in by_trace.items():
        outcome, stop, scores = _outcome(members, fmt)
        starts = [s.start for s in members if s.start is not None]
        ends = [s.end for s in members if s.end is not None]
        wall = None
        if starts and ends and max(ends) >= min(starts):
            wall = (max(ends) - min(starts)) / _NS
        runs.append(
            TraceRun(
                trace,
                trace_turns(members, fmt),
                outcome,
                stop,
                scores=scores,
                wall_seconds=wall,
                agent=_agent(members, fmt),
            )
        )
    return runs
