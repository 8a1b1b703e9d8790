"""Reading a trace file as JSON (a document or JSON Lines), and telling its format.

``load_document`` reads the file through ``rundir.read_input`` (a regular file under the
size ceiling) and parses it with orjson, which refuses invalid UTF-8, nesting deeper than
1024 and numbers it cannot hold: a hostile file is one ``TraceFormatError``, never a crash.

``detect`` names the format from the document's shape (the keys each format's files
have, listed in ``SIGNS``); when no format fits, or two do, it raises one line naming the
candidates, to be settled with ``--format``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from opar_sim.rundir import RunDirError, read_input
from opar_sim.traces.runs import TraceFormatError, items, obj

SIGNS = {
    "tau-bench": "a JSON array of runs with task_id, trial, reward and traj",
    "openai-chat": "runs with task_id, trial, reward and messages (JSON Lines or an array)",
    "otel-genai": "OTLP/JSON resourceSpans (or spans, or one span's attributes) with gen_ai.*",
    "openinference": "OTLP/JSON resourceSpans (or spans) with openinference.span.kind",
    "langfuse": "a Langfuse trace with its observations",
    "inspect": "an Inspect AI eval log (eval, samples)",
    "swe-agent": "a SWE-agent .traj (trajectory, info.exit_status)",
    "tau2": "τ²-bench results (simulations with termination_reason)",
}
_SAMPLE = 50  # records looked at to tell a format (the first ones)


def load_document(path: Path) -> Any:
    """The file parsed: one JSON document, else JSON Lines (a list of the lines' values).

    Raises:
        TraceFormatError: for a missing or unreadable file, or text that is neither.
    """
    if not (path.exists() or path.is_symlink()):
        raise TraceFormatError(f"{path}: no such file")
    try:
        data = read_input(path)
    except RunDirError as exc:
        raise TraceFormatError(str(exc)) from None
    if not data.strip():
        raise TraceFormatError(f"{path}: empty file")
    if data.startswith(b"PK\x03\x04"):
        raise TraceFormatError(
            f"{path}: a zip archive (an Inspect .eval log?): convert it to JSON first "
            "(inspect log convert --to json)"
        )
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        whole = exc
    lines = [line for line in data.split(b"\n") if line.strip()]
    if len(lines) < 2:
        raise TraceFormatError(f"{path}: not valid JSON ({_short(whole)})")
    out = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            out.append(orjson.loads(line))
        except orjson.JSONDecodeError as exc:
            raise TraceFormatError(
                f"{path}: not valid JSON, nor JSON Lines (line {number}: {_short(exc)})"
            ) from None
    return out


def _short(exc: Exception) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= 120 else text[:117] + "..."


def _flat_span_format(keys: Any) -> set[str]:
    found = set()
    for key in keys:
        if not isinstance(key, str):
            continue
        if key.startswith("gen_ai."):
            found.add("otel-genai")
        elif key == "openinference.span.kind":  # llm.* alone: OpenLLMetry writes it too
            found.add("openinference")
    return found


def _attribute_keys(span: dict[str, Any]) -> list[Any]:
    attrs = span.get("attributes")
    if isinstance(attrs, dict):
        return list(attrs)
    if isinstance(attrs, list):
        return [a.get("key") for a in attrs[:500] if isinstance(a, dict)]
    return []


def _otlp_format(doc: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for resource in items(doc.get("resourceSpans"))[:_SAMPLE]:
        for scope in items(obj(resource).get("scopeSpans"))[:_SAMPLE]:
            for span in items(obj(scope).get("spans"))[:_SAMPLE]:
                if isinstance(span, dict):
                    found |= _flat_span_format(_attribute_keys(span))
    return found


def _record_formats(record: Any) -> set[str]:
    """The formats one record (an object of the file) fits."""
    if not isinstance(record, dict):
        return set()
    keys = set(record)
    found: set[str] = set()
    if "resourceSpans" in keys:
        found |= _otlp_format(record) or {"otel-genai", "openinference"}
    if {"task_id", "trial", "reward", "traj"} <= keys:
        found.add("tau-bench")
    if {"task_id", "trial", "reward", "messages"} <= keys:
        found.add("openai-chat")
    if "observations" in keys and ("trace" in keys or "id" in keys):
        found.add("langfuse")
    if "eval" in keys and ("samples" in keys or "results" in keys):
        found.add("inspect")
    if "trajectory" in keys and isinstance(record.get("info"), dict):
        found.add("swe-agent")
    if "simulations" in keys or {"termination_reason", "task_id"} <= keys:
        found.add("tau2")
    if not found and ("spanId" in keys or "span_id" in keys) and "attributes" in keys:
        found |= _flat_span_format(_attribute_keys(record))
    if not found:
        found |= _flat_span_format(keys)
    return found


def detect(doc: Any, path: Path) -> str:
    """The format of a parsed trace file.

    Raises:
        TraceFormatError: one line naming the candidates when no format fits or several do.
    """
    records = doc[:_SAMPLE] if isinstance(doc, list) else [doc]
    found: set[str] = set()
    for record in records:
        found |= _record_formats(record)
    if len(found) == 1:
        return found.pop()
    if not found:
        raise TraceFormatError(
            f"{path}: cannot tell the format; name it with --format (one of {', '.join(SIGNS)})"
        )
    raise TraceFormatError(
        f"{path}: cannot tell the format: it could be {' or '.join(sorted(found))}; "
        "name it with --format"
    )
