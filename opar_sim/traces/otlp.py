"""A run as OpenTelemetry spans with OpenInference attributes, in OTLP/JSON.

Every episode is one trace: an ``AGENT`` span for the episode, a ``CHAIN``
span per loop iteration (the step: observation in, Reflect decision out, the
controller's terms), and under each step its ``LLM`` calls and its ``TOOL``
call.  An LLM run's model calls come from ``calls.jsonl`` (phase, tokens,
model seconds); a simulated agent makes no calls, so each step gets one
``LLM`` span carrying the step's simulated tokens (``opar.simulated`` true).

Times are simulated seconds laid from one base instant (the run's
``spec.json`` modification time), so the same run exports the same bytes.
Ids are derived from the run's name and the episode key.  The file follows
the OTLP/JSON encoding (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding):
trace and span ids as hex, 64-bit integers as strings, the span kind as its
enum number; attribute names follow OpenInference's semantic conventions
(``openinference.span.kind``, ``input.value``, ``llm.token_count.*``,
``tool.name``).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import opar_sim
from opar_sim.rundir import (
    CALLS_FILE,
    SPEC_FILE,
    episode_key,
    iter_episodes,
    iter_steps,
    read_jsonl,
    read_spec,
)

SPAN_KIND_INTERNAL = 1
STATUS_OK = 1
STATUS_ERROR = 2
_NS = 1_000_000_000


def _id(text: str, n_hex: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n_hex]


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


def _attributes(pairs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in pairs.items() if v is not None]


def _span(
    trace_id: str,
    span_id: str,
    parent: str | None,
    name: str,
    start: float,
    end: float,
    base_ns: int,
    attributes: dict[str, Any],
    error: str | None = None,
) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(base_ns + round(start * _NS)),
        "endTimeUnixNano": str(base_ns + round(max(end, start) * _NS)),
        "attributes": _attributes(attributes),
        "status": {"code": STATUS_ERROR, "message": error} if error else {"code": STATUS_OK},
    }
    if parent is not None:
        span["parentSpanId"] = parent
    return span


def _calls_by_step(path: Path) -> dict[tuple[str, int, int], list[dict[str, Any]]]:
    """An LLM run's model calls per (controller, episode, step); empty for a simulated run."""
    out: dict[tuple[str, int, int], list[dict[str, Any]]] = defaultdict(list)
    if (path / CALLS_FILE).is_file():
        for row in read_jsonl(path / CALLS_FILE):
            if row.get("phase") == "episode" or row.get("step") is None:
                continue
            out[(str(row.get("controller")), int(row["episode"]), int(row["step"]))].append(row)
    return out


def _llm_spans(
    ids: tuple[str, str],
    step: dict[str, Any],
    calls: list[dict[str, Any]],
    window: tuple[float, float],
    base_ns: int,
    tokens: int,
) -> list[dict[str, Any]]:
    trace_id, step_id = ids
    start, end = window
    if not calls:  # a simulated agent: the step's tokens, no real call
        attrs = {
            "openinference.span.kind": "LLM",
            "llm.model_name": str(step.get("agent", "simulated")),
            "llm.token_count.total": tokens,
            "opar.simulated": True,
        }
        return [
            _span(trace_id, _id(step_id + "llm", 16), step_id, "llm", start, end, base_ns, attrs)
        ]
    spans, t = [], start
    for k, call in enumerate(calls):
        seconds = float(call.get("model_seconds") or 0.0)
        prompt = call.get("prompt_tokens")
        completion = call.get("completion_tokens")
        attrs = {
            "openinference.span.kind": "LLM",
            "llm.model_name": call.get("model"),
            "llm.provider": call.get("backend"),
            "llm.token_count.prompt": prompt,
            "llm.token_count.completion": completion,
            "llm.token_count.total": (prompt or 0) + (completion or 0)
            if prompt is not None
            else None,
            "opar.phase": call.get("phase"),
            "opar.attempts": call.get("attempts"),
            "opar.cache_hit": bool(call.get("cache_hit", False)),
            "opar.wall_seconds": call.get("wall_seconds"),
        }
        span_id = _id(f"{step_id}llm{k}", 16)
        name = f"llm {call.get('phase')}"
        spans.append(
            _span(
                trace_id,
                span_id,
                step_id,
                name,
                t,
                min(t + seconds, end),
                base_ns,
                attrs,
                call.get("error"),
            )
        )
        t = min(t + seconds, end)
    return spans


def otlp_spans(path: Path) -> dict[str, Any]:
    """The run directory as one OTLP ``ExportTraceServiceRequest`` in its JSON form.

    Args:
        path: The run directory.

    Returns:
        ``{"resourceSpans": [...]}``: one resource (opar-sim, the run), one scope,
        every episode's spans.
    """
    spec = read_spec(path)
    run = spec.name if spec is not None else path.name
    spec_file = path / SPEC_FILE
    base_ns = spec_file.stat().st_mtime_ns if spec_file.is_file() else 0
    calls = _calls_by_step(path)
    steps_of: dict[tuple[str, int, int, int], list[dict[str, Any]]] = defaultdict(list)
    for row in iter_steps(path):
        if row.get("parent") is None:  # the episode's own agent (sub-agents ride along below)
            steps_of[episode_key(row)].append(row)
    spans: list[dict[str, Any]] = []
    for episode in iter_episodes(path):
        key = episode_key(episode)
        spans += _episode_spans(run, key, episode, steps_of.get(key, []), calls, base_ns)
    resource = {
        "service.name": "opar-sim",
        "service.version": opar_sim.__version__,
        "openinference.project.name": run,
        "opar.run_dir": str(path.resolve()),
    }
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(resource)},
                "scopeSpans": [
                    {
                        "scope": {"name": "opar-sim", "version": opar_sim.__version__},
                        "spans": spans,
                    }
                ],
            }
        ]
    }


def _episode_spans(
    run: str,
    key: tuple[str, int, int, int],
    episode: dict[str, Any],
    steps: Iterable[dict[str, Any]],
    calls: dict[tuple[str, int, int], list[dict[str, Any]]],
    base_ns: int,
) -> list[dict[str, Any]]:
    controller, number, trial, attempt = key
    trace_id = _id(f"{run}|{controller}|{number}|{trial}|{attempt}", 32)
    root = _id(trace_id + "episode", 16)
    sim = float(episode.get("sim_seconds") or 0.0)
    attrs = {
        "openinference.span.kind": "AGENT",
        "session.id": f"{run}/{controller}",
        "input.value": episode.get("task"),
        "output.value": episode.get("answer"),
        "agent.name": episode.get("agent"),
        "llm.token_count.prompt": episode.get("prompt_tokens"),
        "llm.token_count.completion": episode.get("completion_tokens"),
        "llm.token_count.total": episode.get("tokens"),
        "opar.controller": controller,
        "opar.episode": number,
        "opar.trial": trial,
        "opar.attempt": attempt,
        "opar.outcome": episode.get("outcome"),
        "opar.success": bool(episode.get("success")),
        "opar.replans": episode.get("replans"),
        "opar.sim_seconds": sim,
    }
    failed = None if episode.get("success") else str(episode.get("outcome"))
    name = f"episode {number} ({controller})"
    spans = [_span(trace_id, root, None, name, 0.0, sim, base_ns, attrs, failed)]
    previous_time, previous_tokens = 0.0, 0
    for step in steps:
        end = float(step.get("time") or previous_time)
        tokens = int(step.get("tokens") or 0)  # cumulative over the episode
        step_id = _id(f"{trace_id}step{step['step']}", 16)
        terms = {f"opar.terms.{k}": float(v) for k, v in (step.get("terms") or {}).items()}
        signal = step.get("signal")
        step_attrs = {
            "openinference.span.kind": "CHAIN",
            "input.value": step.get("observation"),
            "output.value": (signal or "").upper() or None,
            "opar.step": int(step["step"]),
            "opar.signal": signal,
            "opar.reason": step.get("reason"),
            "opar.delta_task": step.get("delta_task"),
            "opar.progress": step.get("progress"),
            "opar.confidence": step.get("confidence"),
            "opar.plan_id": step.get("plan_id"),
            "llm.token_count.total": tokens - previous_tokens,
            **terms,
        }
        spans.append(
            _span(
                trace_id,
                step_id,
                root,
                f"step {step['step']}",
                previous_time,
                end,
                base_ns,
                step_attrs,
                step.get("error"),
            )
        )
        latency = float(step.get("latency") or 0.0) if step.get("tool") else 0.0
        tool_start = max(previous_time, end - latency)
        spans += _llm_spans(
            (trace_id, step_id),
            step,
            calls.get((controller, number, int(step["step"])), []),
            (previous_time, tool_start),
            base_ns,
            tokens - previous_tokens,
        )
        if step.get("tool"):
            tool_attrs = {
                "openinference.span.kind": "TOOL",
                "tool.name": step.get("tool"),
                "input.value": step.get("action"),
                "output.value": step.get("result"),
                "opar.ok": step.get("ok"),
            }
            spans.append(
                _span(
                    trace_id,
                    _id(step_id + "tool", 16),
                    step_id,
                    f"tool {step.get('tool')}",
                    tool_start,
                    end,
                    base_ns,
                    tool_attrs,
                    step.get("tool_error"),
                )
            )
        previous_time, previous_tokens = end, tokens
    return spans
