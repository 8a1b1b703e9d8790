"""Inspect AI eval logs (the JSON form of a ``.eval`` log) as recorded runs.

Each sample (``samples[]``) is a run: its id the task, its ``epoch`` the trial.  Its
``messages`` give the turns (assistant ``tool_calls`` as ``{id, function, arguments}``; a
tool message's ``error.type`` the kind of a failed call).  Tokens per turn come from the
sample's ``model`` events (``output.usage``) when there is one per assistant turn; else
the turns' tokens are a text estimate and the sample's ``model_usage`` gives the run's
total.  The outcome: ``error:sample_error`` for a sample that failed (``error``),
``truncated:<reason>`` for one stopped by a limit (``limit.type``, mapped as
``INSPECT_LIMITS`` says), else its scores: every score reading as correct (``C``, 1, true)
is a success, anything else a failure, none ``unknown``.  ``--success-score NAME>=X``
judges by one named score instead (``C`` reads 1, ``P`` 0.5, ``I`` and ``N`` 0).
"""

from __future__ import annotations

import math
from typing import Any

from opar_sim.traces.chat import Msg, turns_of
from opar_sim.traces.runs import (
    Call,
    TraceFormatError,
    TraceRun,
    count,
    items,
    obj,
    seconds,
    text_chars,
    trial_number,
)

INSPECT_LIMITS = {
    "context": "truncated:context",
    "time": "truncated:time",
    "working": "truncated:time",
    "message": "truncated:max_steps",
    "turn": "truncated:max_steps",
    "token": "truncated:tokens",
    "cost": "truncated:cost",
    "operator": "truncated:operator",
    "custom": "truncated:custom",
}
_LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}


def score_value(value: Any) -> float | None:
    """An Inspect score's value as a number (``C`` 1, ``P`` 0.5, ``I``/``N`` 0), or None."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip()
        if text.upper() in _LETTERS:
            return _LETTERS[text.upper()]
        if text.lower() in ("yes", "true", "correct"):
            return 1.0
        if text.lower() in ("no", "false", "incorrect"):
            return 0.0
    return None


def _message(message: Any) -> Msg:
    if not isinstance(message, dict):
        return Msg("other")
    role = str(message.get("role"))
    chars = text_chars(message.get("content"))
    if role == "tool":
        error = message.get("error")
        kind = None
        if isinstance(error, dict):
            kind = str(error.get("type") or "error")[:80]
        elif error:
            kind = "error"
        name = message.get("function")
        return Msg(
            "tool",
            chars,
            reply_to=message.get("tool_call_id"),
            name=name if isinstance(name, str) else None,
            error=kind,
        )
    msg = Msg(role, chars)
    for call in items(message.get("tool_calls")) if role == "assistant" else []:
        name = call.get("function") if isinstance(call, dict) else None
        if not isinstance(name, str) or not name:
            raise TraceFormatError("tool_calls: a call without a function name")
        msg.calls.append((call.get("id"), Call(name, call.get("arguments"))))
        msg.chars += len(name) + len(str(call.get("arguments") or ""))
    return msg


def _model_usages(sample: dict[str, Any]) -> list[tuple[int | None, int | None]]:
    out = []
    events = sample.get("events")
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, dict) or event.get("event") != "model":
            continue
        output = obj(event.get("output"))
        usage = obj(output.get("usage"))
        out.append((count(usage.get("input_tokens")), count(usage.get("output_tokens"))))
    return out


def _outcome(sample: dict[str, Any]) -> tuple[str, str | None, dict[str, float]]:
    scores: dict[str, float] = {}
    raw = sample.get("scores")
    for name, score in raw.items() if isinstance(raw, dict) else []:
        value = score_value(score.get("value") if isinstance(score, dict) else None)
        if value is not None:
            scores[str(name)] = value
    if sample.get("error"):
        return "error:sample_error", "error", scores
    limit = sample.get("limit")
    if isinstance(limit, dict) and isinstance(limit.get("type"), str):
        kind = limit["type"]
        clean = "".join(ch for ch in kind[:40] if ch.isalnum() or ch == "_")
        return INSPECT_LIMITS.get(kind, f"truncated:{clean}"), kind, scores
    if not scores:
        return "unknown", None, scores
    return ("success" if all(v >= 1.0 for v in scores.values()) else "failure"), None, scores


def inspect_runs(doc: Any) -> list[TraceRun]:
    """The samples of an Inspect eval log.

    Raises:
        TraceFormatError: for a log without samples, or a sample that does not fit.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("samples"), list):
        raise TraceFormatError("samples: missing (a log header without samples has no runs)")
    evaluation = obj(doc.get("eval"))
    model = evaluation.get("model") if isinstance(evaluation.get("model"), str) else None
    task = evaluation.get("task") if isinstance(evaluation.get("task"), str) else None
    runs = []
    for index, sample in enumerate(doc["samples"]):
        if not isinstance(sample, dict):
            raise TraceFormatError(f"sample {index}: must be a JSON object")
        sample_id = sample.get("id", index)
        messages = sample.get("messages")
        if not isinstance(messages, list):
            raise TraceFormatError(f"sample {index} (id {sample_id!r}): messages: missing")
        try:
            turns = turns_of([_message(m) for m in messages])
        except TraceFormatError as exc:
            raise TraceFormatError(f"sample {index} (id {sample_id!r}): {exc}") from None
        usages = _model_usages(sample)
        if len(usages) == len(turns) and all(p is not None for p, _ in usages):
            for turn, (prompt, completion) in zip(turns, usages, strict=True):
                turn.prompt_tokens, turn.completion_tokens = prompt, completion
        total_prompt = total_completion = None
        usage = sample.get("model_usage")
        if isinstance(usage, dict) and usage:
            per_model = [u for u in usage.values() if isinstance(u, dict)]
            total_prompt = sum(count(u.get("input_tokens")) or 0 for u in per_model)
            total_completion = sum(count(u.get("output_tokens")) or 0 for u in per_model)
        outcome, stop, scores = _outcome(sample)
        epoch = sample.get("epoch")
        runs.append(
            TraceRun(
                str(sample_id),
                turns,
                outcome,
                stop,
                scores=scores,
                wall_seconds=seconds(sample.get("total_time")),
                prompt_tokens=total_prompt,
                completion_tokens=total_completion,
                agent=model,
                task=f"inspect/{task}" if task else None,
                trial=trial_number(epoch),
            )
        )
    if not runs:
        raise TraceFormatError("samples: empty")
    return runs
