"""Langfuse trace exports: a trace with its observations, reassembled as a span tree.

A file holds one trace (``{"trace": ..., "observations": [...]}``, as Langfuse's own test
fixtures are, or the public API's trace object with ``observations`` inside) or a list of
them (a JSON array or JSON Lines).  Observations become spans (``spans.Span``): a
``GENERATION`` is a model call (its ``usageDetails`` ``input``/``output`` tokens), a ``TOOL``
a tool call (its ``input`` the arguments), a ``level`` of ``ERROR`` a failure (its
``statusMessage``); the turns are then built as for OpenTelemetry spans.  Langfuse records
no success: the trace's numeric ``scores`` are kept, and ``--success-score NAME>=X`` names
the one that means success (else the outcome is ``unknown``).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from opar_sim.traces.runs import TraceFormatError, TraceRun, count, obj, seconds
from opar_sim.traces.spans import Span, span_runs

KINDS = {"GENERATION": "llm", "TOOL": "tool", "AGENT": "agent"}


def _time(value: Any) -> int | None:
    """An ISO time as nanoseconds since the epoch (whole microseconds, exactly)."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    nanos = (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    return nanos if nanos > 0 else None


def _usage(observation: dict[str, Any]) -> tuple[int | None, int | None]:
    details = observation.get("usageDetails")
    if isinstance(details, dict) and ("input" in details or "output" in details):
        return count(details.get("input")), count(details.get("output"))
    usage = observation.get("usage")
    if isinstance(usage, dict) and ("input" in usage or "output" in usage):
        return count(usage.get("input")), count(usage.get("output"))
    if "inputUsage" in observation or "outputUsage" in observation:
        return count(observation.get("inputUsage")), count(observation.get("outputUsage"))
    return count(observation.get("promptTokens")), count(observation.get("completionTokens"))


def _observation_span(trace: str, observation: dict[str, Any], order: int) -> Span:
    kind = KINDS.get(str(observation.get("type", "")).upper(), "other")
    attrs: dict[str, Any] = {}
    if kind == "llm":
        prompt, completion = _usage(observation)
        if prompt is not None:
            attrs["gen_ai.usage.input_tokens"] = prompt
        if completion is not None:
            attrs["gen_ai.usage.output_tokens"] = completion
        if isinstance(observation.get("model"), str):
            attrs["gen_ai.response.model"] = observation["model"]
    elif kind == "tool":
        attrs["gen_ai.tool.name"] = str(observation.get("name") or "unknown")
        attrs["gen_ai.tool.call.arguments"] = observation.get("input")
    error = None
    if str(observation.get("level", "")).upper() == "ERROR":
        error = str(observation.get("statusMessage") or "error")[:200]
    parent = observation.get("parentObservationId")
    span = Span(
        trace,
        str(observation.get("id", f"obs{order}")),
        str(parent) if parent is not None else None,
        str(observation.get("name") or ""),
        _time(observation.get("startTime")),
        _time(observation.get("endTime")),
        attrs,
        error,
        order,
    )
    span.kind = kind
    return span


def _scores(trace: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    scores = trace.get("scores")
    for score in scores if isinstance(scores, list) else []:
        if not isinstance(score, dict) or not isinstance(score.get("name"), str):
            continue
        value = score.get("value")
        if isinstance(value, bool):
            value = float(value)
        if isinstance(value, int | float) and math.isfinite(value):
            out[score["name"]] = float(value)
    return out


def langfuse_runs(doc: Any) -> list[TraceRun]:
    """One run per Langfuse trace in the file.

    Raises:
        TraceFormatError: for a record that is not a trace with observations.
    """
    records = doc if isinstance(doc, list) else [doc]
    runs: list[TraceRun] = []
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise TraceFormatError(f"trace {index}: must be a JSON object")
        trace = obj(record.get("trace")) or record
        observations = record.get("observations", trace.get("observations"))
        if not isinstance(observations, list):
            raise TraceFormatError(f"trace {index}: observations: missing (a list)")
        trace_id = str(trace.get("id", f"trace{index}"))
        spans = [
            _observation_span(trace_id, o, k)
            for k, o in enumerate(observations)
            if isinstance(o, dict)
        ]
        (run,) = span_runs(spans, "langfuse") or [TraceRun(trace_id, [])]
        run.scores = _scores(trace)
        latency = seconds(trace.get("latency"))
        if latency is not None:
            run.wall_seconds = latency
        if isinstance(trace.get("name"), str):
            run.task = f"langfuse/{trace['name']}"
        runs.append(run)
    if not runs:
        raise TraceFormatError("no traces")
    return runs
