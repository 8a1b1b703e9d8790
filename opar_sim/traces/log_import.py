"""The span and log formats: parse a file into runs, and the rows of every run.

``PARSERS`` names each format's parser (a parsed JSON document -> ``TraceRun`` records);
``log_rows`` numbers the runs (``runs.number_runs``), judges unknown outcomes by the named
score (``--success-score``), and returns the rows and what ``source.json`` records of the
import: each episode's own id, whether the steps' tokens were recorded or estimated, and
what the format could not give.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opar_sim.rundir import EpisodeRow, StepRow
from opar_sim.traces.agent_logs import swe_agent_runs, tau2_runs
from opar_sim.traces.detect import detect, load_document
from opar_sim.traces.gen_ai_import import gen_ai_runs
from opar_sim.traces.inspect_log import inspect_runs
from opar_sim.traces.langfuse import langfuse_runs
from opar_sim.traces.runs import (
    UNKNOWN,
    SuccessRule,
    TraceFormatError,
    TraceRun,
    apply_success_rule,
    number_runs,
    recorded_tokens,
    run_rows,
)
from opar_sim.traces.spans import read_spans, span_runs

PARSERS: dict[str, Callable[[Any], list[TraceRun]]] = {
    "otel-genai": gen_ai_runs,
    "openinference": lambda doc: span_runs(read_spans(doc), "openinference"),
    "langfuse": langfuse_runs,
    "inspect": inspect_runs,
    "swe-agent": swe_agent_runs,
    "tau2": tau2_runs,
}
LEGACY = ("tau-bench", "openai-chat")
ALL_FORMATS = (*LEGACY, *PARSERS)


def resolve_format(path: Path, fmt: str | None) -> tuple[str, Any]:
    """The format (named, or detected) and, for a span or log format, the parsed file.

    Raises:
        TraceFormatError: for an unknown format, an unreadable file, or one whose format
            cannot be told (naming the candidates).
    """
    if fmt is not None and fmt not in ALL_FORMATS:
        raise TraceFormatError(f"unknown format {fmt!r}; choose one of {', '.join(ALL_FORMATS)}")
    if fmt in LEGACY:
        return fmt, None
    doc = load_document(path)
    if fmt is None:
        fmt = detect(doc, path)
        if fmt in LEGACY:
            return fmt, None
    return fmt, doc


def parse_runs(doc: Any, fmt: str, path: Path) -> list[TraceRun]:
    """The runs of a parsed file of a span or log format.

    Raises:
        TraceFormatError: naming the file, for a record that does not fit or no runs.
    """
    try:
        runs = PARSERS[fmt](doc)
    except TraceFormatError as exc:
        raise TraceFormatError(f"{path}: {exc}") from None
    except RecursionError:
        raise TraceFormatError(f"{path}: nested too deeply") from None
    if not runs:
        raise TraceFormatError(f"{path}: no runs")
    return runs


def log_rows(
    runs: list[TraceRun], rule: SuccessRule | None, agent: str, task: str
) -> tuple[list[EpisodeRow], list[StepRow], dict[str, Any]]:
    """The episode and step rows of every run, sorted by episode and trial, and the notes.

    Returns:
        (episode rows, step rows, what source.json records of the import).
    """
    for run in runs:
        apply_success_rule(run, rule)
    numbered = sorted(number_runs(runs), key=lambda t: (t[0], t[1]))
    episodes: list[EpisodeRow] = []
    steps: list[StepRow] = []
    for episode, trial, run in numbered:
        row, rows = run_rows(run, episode, trial, agent, task)
        episodes.append(row)
        steps += rows
    exact = sum(recorded_tokens(run) for run in runs)
    outcomes = Counter(e["outcome"] for e in episodes)
    notes: dict[str, Any] = {
        "ids": {str(e): r.run_id for e, _, r in numbered if r.steps_override is None},
        "stops": {f"{e}/{t}": run.stop for e, t, run in numbered if run.stop is not None},
        "step_tokens": "recorded" if exact == len(runs) else "estimated" if not exact else "mixed",
        "runs_with_recorded_step_tokens": exact,
        "outcomes": dict(sorted(outcomes.items())),
    }
    own = sum(run.steps_override is not None for run in runs)
    if own:  # opar-sim's own export: its rows taken as they were, episode numbers too
        notes["opar_sim_rows"] = own
    if rule is not None:
        notes["success_score"] = str(rule)
    if outcomes.get(UNKNOWN):
        notes["unknown"] = (
            f"{outcomes[UNKNOWN]} runs record no success signal (outcome unknown, counted "
            "as no success); name the score that means success with --success-score NAME>=X"
        )
    return episodes, steps, notes
