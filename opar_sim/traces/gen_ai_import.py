"""OpenTelemetry GenAI spans in: any instrumented agent's, and opar-sim's own export exactly.

Spans are reassembled into turns by ``spans.span_runs``.  A trace that opar-sim exported
(``gen_ai_export``) carries its rows: ``opar_sim.episode_row`` on the ``invoke_agent`` span
and ``opar_sim.step_row`` on each iteration's ``chat`` span; those rows are taken as they
are (checked against the row schema), so export then import gives the same run.  The
reassembled turns must agree with them (one ``chat`` span per step row), else the file was
edited and the import refuses it.
"""

from __future__ import annotations

from typing import Any, cast

import orjson

from opar_sim.rundir import EpisodeRow, StepRow
from opar_sim.rundir.schema import problems
from opar_sim.traces.runs import TraceFormatError, TraceRun
from opar_sim.traces.spans import Span, read_spans, span_runs


def _row(text: Any, row_type: type, where: str) -> dict[str, Any]:
    try:
        row = orjson.loads(text) if isinstance(text, str) else None
    except orjson.JSONDecodeError:
        row = None
    if not isinstance(row, dict):
        raise TraceFormatError(f"{where}: not a JSON object")
    found = problems(row, row_type)
    if found:
        raise TraceFormatError(f"{where}: {found[0]}")
    return row


def _own_rows(run: TraceRun, spans: list[Span]) -> None:
    """Take the rows opar-sim's export carries, when the trace has them."""
    roots = [s for s in spans if "opar_sim.episode_row" in s.attrs]
    if not roots:
        return
    where = f"trace {run.run_id}"
    episode = _row(roots[0].attrs["opar_sim.episode_row"], EpisodeRow, f"{where}: episode row")
    chats = sorted(
        (s for s in spans if s.kind == "llm" and "opar_sim.step_row" in s.attrs),
        key=lambda s: (s.start or 0, s.order),
    )
    steps = [_row(s.attrs["opar_sim.step_row"], StepRow, f"{where}: step row") for s in chats]
    if len(steps) != len(run.turns) or len(steps) != episode.get("steps", len(steps)):
        raise TraceFormatError(
            f"{where}: {len(run.turns)} chat spans but {len(steps)} step rows: the file was edited"
        )
    run.episode_override = cast(EpisodeRow, episode)
    run.steps_override = [cast(StepRow, s) for s in steps]


def gen_ai_runs(doc: Any) -> list[TraceRun]:
    """One run per trace of a file of OpenTelemetry GenAI spans."""
    spans = read_spans(doc)
    runs = span_runs(spans, "otel-genai")
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace, []).append(span)
    for run in runs:
        _own_rows(run, by_trace[run.run_id])
    return runs
