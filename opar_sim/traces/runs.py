"""One recorded run of any format, and its rows in the one row schema.

The parsers of the span and log formats (``spans``, ``agent_logs``, ``inspect_log``) turn a
file into ``TraceRun`` records: the run's assistant turns (``Turn``, each with its tool calls,
``Call``), its tokens per turn where the format records them, its wall time and its outcome
already mapped onto the taxonomy of docs/design.md §2 (``success``, ``failure``,
``truncated:<reason>``, ``error:<reason>``, ``unknown``).  ``run_rows`` writes a run as an
``episodes.jsonl`` row and its ``steps.jsonl`` rows, fields in the schema's order.

A format's own run id (a text, a trace id) is not an episode number: ``number_runs`` numbers
the distinct ids 0, 1, ... in file order and counts the trials of each, and the import keeps
the id beside its number in ``source.json``.
"""

from __future__ import annotations

import hashlib
import json
import math
import operator
import re
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opar_sim.rundir import EpisodeRow, RunDirError, StepRow, read_json
from opar_sim.spec.schema import SpecError

CONTROLLER = "recorded"
UNKNOWN = "unknown"
MAX_TOKENS = 2**53


class TraceFormatError(SpecError):
    """A recorded run that does not fit its format (the CLI exits 2 with the message)."""


@dataclass(slots=True)
class Call:
    """One tool call of a turn."""

    name: str
    arguments: Any = None  # a JSON string, an object, or None
    error: str | None = None  # the error's kind, None when the call succeeded (or is unknown)
    seconds: float | None = None  # the tool's wall seconds, when recorded


@dataclass(slots=True)
class Turn:
    """One assistant turn: one step."""

    calls: list[Call] = field(default_factory=list)
    prompt_tokens: int | None = None  # the turn's model call(s), when recorded
    completion_tokens: int | None = None
    chars: int = 0  # text of the conversation since the previous turn, this turn's included
    user_turns: int = 0  # user messages before this turn
    error: str | None = None  # a step-level error (the model call failed)


@dataclass(slots=True)
class TraceRun:
    """One recorded run: one episode."""

    run_id: str  # the format's own id of the task (or trace), kept in source.json
    turns: list[Turn]
    outcome: str = UNKNOWN
    stop: str | None = None  # the format's own stop reason, as recorded
    reward: float | None = None
    scores: dict[str, float] = field(default_factory=dict)
    wall_seconds: float | None = None
    prompt_tokens: int | None = None  # per-run totals, when the format has them
    completion_tokens: int | None = None
    agent: str | None = None
    task: str | None = None
    trial: int | None = None  # the format's own trial or epoch (1-based), when it has one
    steps_override: list[StepRow] | None = None  # opar-sim's own export: its rows, exactly
    episode_override: EpisodeRow | None = None


def args_hash(arguments: Any) -> str:
    """A short hash of a tool call's arguments, equal for equal arguments in any key order.

    Args:
        arguments: The call's ``function.arguments`` (a JSON string or an object).

    Returns:
        16 hex digits of SHA-256 of the canonical JSON (the raw string when it is not JSON).
    """
    value = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):  # not JSON, too deep, or a number too long
            value = arguments
    if value is None:
        value = {}
    try:
        canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (ValueError, RecursionError, TypeError):
        canonical = repr(value)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _id_key(value: Any) -> Any:
    """A call id as a dict key (a list or object id too, by its text)."""
    try:
        hash(value)
    except TypeError:
        return ("unhashable", repr(value))
    return value


class Pending:
    """A turn's calls not yet answered, found by id, by name or in order in O(1) each.

    Answers (tool replies, tool spans) are matched to a turn's requested calls; a turn may
    hold thousands of calls, so each lookup pops from a queue (skipping calls answered
    another way) instead of scanning the turn: the whole matching is linear.
    """

    def __init__(self, turn: Turn, ids: list[Any]) -> None:
        """Index ``turn``'s calls, whose ids are ``ids`` (None: no id recorded)."""
        self.turn = turn
        self.taken = [False] * len(ids)
        self.by_id: dict[Any, deque[int]] = {}
        self.by_name: dict[str, deque[int]] = {}
        for k, (call_id, call) in enumerate(zip(ids, turn.calls, strict=True)):
            if call_id is not None:
                self.by_id.setdefault(_id_key(call_id), deque()).append(k)
            self.by_name.setdefault(call.name, deque()).append(k)
        self.order = deque(range(len(ids)))

    def _pop(self, queue: deque[int] | None) -> int | None:
        while queue:
            k = queue.popleft()
            if not self.taken[k]:
                return k
        return None

    def take(self, call_id: Any, name: str | None) -> Call | None:
        """The unanswered call with this id, else (``name`` given) this name, else the first.

        Returns:
            The call, now marked answered; None when every call is answered.
        """
        k = None
        if call_id is not None:
            k = self._pop(self.by_id.get(_id_key(call_id)))
        if k is None and name is not None:
            k = self._pop(self.by_name.get(name))
        if k is None and name is None:
            k = self._pop(self.order)
        if k is None:
            return None
        self.taken[k] = True
        return self.turn.calls[k]

    def add(self, call: Call) -> None:
        """A call answered with no request in view: the turn's call, already answered."""
        self.turn.calls.append(call)
        self.taken.append(True)


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a file's optional object)."""
    return value if isinstance(value, dict) else {}


def items(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else an empty one (a file's optional list)."""
    return value if isinstance(value, list) else []


def count(value: Any) -> int | None:
    """A token count from a file: a whole number from 0 to 2^53, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value <= MAX_TOKENS:
        return value
    return None


def trial_number(value: Any, offset: int = 0) -> int | None:
    """A format's trial or epoch as a 1-based trial (``value + offset``), else None."""
    number = count(value)
    if number is None or not 1 <= number + offset <= MAX_TOKENS:
        return None
    return number + offset


def seconds(value: Any) -> float | None:
    """A duration from a file: a finite number of seconds from 0 to 10^15, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or not 0 <= value <= 1e15:
        return None
    return float(value)


def text_chars(value: Any) -> int:
    """Characters of a message's content (a text, or the texts inside a list of parts)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(text_chars(v.get("text") if isinstance(v, dict) else v) for v in value[:10_000])
    return 0


_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
}
_RULE = re.compile(r"^\s*([^<>=!]+?)\s*(>=|<=|==|>|<)\s*([-+0-9.eE]+)\s*$")


@dataclass(frozen=True, slots=True)
class SuccessRule:
    """``--success-score NAME>=THRESHOLD``: the score that means success, and its threshold."""

    name: str
    op: str
    threshold: float

    def judge(self, scores: dict[str, float]) -> bool | None:
        """True or False by the run's score of that name; None when the run has none."""
        if self.name not in scores:
            return None
        return _OPS[self.op](scores[self.name], self.threshold)

    def __str__(self) -> str:
        return f"{self.name}{self.op}{self.threshold:g}"


def parse_success_rule(text: str) -> SuccessRule:
    """Parse ``NAME>=THRESHOLD`` (or ``<=``, ``>``, ``<``, ``==``).

    Raises:
        TraceFormatError: naming the expected form.
    """
    match = _RULE.match(text)
    if match is None:
        raise TraceFormatError(
            f"--success-score {text!r}: expected NAME>=THRESHOLD (or <=, >, <, ==)"
        )
    try:
        threshold = float(match.group(3))
    except ValueError:
        raise TraceFormatError(f"--success-score {text!r}: the threshold is not a number") from None
    if not math.isfinite(threshold):
        raise TraceFormatError(f"--success-score {text!r}: the threshold must be finite")
    return SuccessRule(match.group(1), match.group(2), threshold)


def apply_success_rule(run: TraceRun, rule: SuccessRule | None) -> None:
    """Judge a run whose outcome is ``unknown`` or ``failure`` by the named score.

    A truncated or failed (``error:``) run keeps its outcome: the score does not undo the
    stop.  A run without the score stays as it was.
    """
    if rule is None or run.outcome not in (UNKNOWN, "failure", "success"):
        return
    verdict = rule.judge(run.scores)
    if verdict is not None:
        run.outcome = "success" if verdict else "failure"


def unknown_note(rundir: Path) -> str:
    """``; N of its runs record no success signal ...`` for such an import, else ``""``.

    Read from the import's ``source.json`` (a run opar-sim simulated has none).
    """
    try:
        source = read_json(rundir / "source.json") if (rundir / "source.json").is_file() else None
    except RunDirError:
        return ""
    unknown = obj(obj(source).get("outcomes")).get(UNKNOWN)
    if not isinstance(unknown, int) or not unknown:
        return ""
    return (
        f"; {unknown} of its runs record no success signal (outcome unknown): import again "
        "with --success-score NAME>=X naming the score that means success"
    )


def calibration_limits(rundir: str | Path) -> list[str]:
    """What ``calibrate`` can and cannot fit from an imported record (empty for other runs).

    Args:
        rundir: The run directory.

    Returns:
        Lines naming the format, what the fit reads from it and what it cannot read.
    """
    rundir = Path(rundir)
    path = rundir / "source.json"
    if not path.is_file() or (rundir / "spec.json").is_file():
        return []
    try:
        source = obj(read_json(path))
    except RunDirError:
        return []
    tokens = {
        "recorded": "recorded per step",
        "mixed": "recorded per step for some runs, estimated from text for the others",
    }.get(str(source.get("step_tokens")), "estimated from text (characters / 4), not recorded")
    return [
        f"an imported {source.get('format', 'recorded')} record: calibrate fits the task "
        "heterogeneity from each run's outcome and tool calls (its turns are the steps)",
        "it cannot fit from a record: plan quality, self-assessment bias and noise (no Reflect "
        "evaluations recorded), tokens per phase and generation speed (no model-call log; "
        f"this record's tokens are {tokens})" + unknown_note(rundir),
    ]


def no_success_note(rundir: Path) -> str:
    """Why ``advise`` shows only the caps' savings: no success, and why (``unknown_note``)."""
    return (
        "no recorded success, so no cap can keep one: the caps show only what each saves"
        + unknown_note(rundir)
    )


def number_runs(runs: Iterable[TraceRun]) -> list[tuple[int, int, TraceRun]]:
    """(episode, trial, run) for each run: distinct ids numbered in file order, trials counted.

    A run's own trial (``run.trial``) is used when every run of that id has a distinct one.

    Raises:
        TraceFormatError: for the same id and trial recorded twice.
    """
    numbers: dict[str, int] = {}
    seen: Counter[str] = Counter()
    taken: set[tuple[int, int]] = set()
    out = []
    for run in runs:
        episode = numbers.setdefault(run.run_id, len(numbers))
        seen[run.run_id] += 1
        trial = run.trial if run.trial is not None else seen[run.run_id]
        if (episode, trial) in taken:
            raise TraceFormatError(f"run {run.run_id!r}: trial {trial} recorded twice")
        taken.add((episode, trial))
        out.append((episode, trial, run))
    return out


def recorded_tokens(run: TraceRun) -> bool:
    """Whether every turn of the run has its model call's tokens (then steps carry them)."""
    return bool(run.turns) and all(
        t.prompt_tokens is not None or t.completion_tokens is not None for t in run.turns
    )


def _turn_tokens(turn: Turn) -> int:
    return (turn.prompt_tokens or 0) + (turn.completion_tokens or 0)


def run_rows(
    run: TraceRun, episode: int, trial: int, agent: str, task: str
) -> tuple[EpisodeRow, list[StepRow]]:
    """The episodes.jsonl row and the steps.jsonl rows of one recorded run.

    Step ``tokens`` is cumulative: the recorded tokens of the turns' model calls when every
    turn has them, else a text estimate (characters / 4, rounded up, of the conversation so
    far), as the τ-bench import estimates it.  The episode's ``tokens`` is the recorded
    total when the format has one (per run or per turn), else the estimate.

    Args:
        run: The parsed run.
        episode: Its episode number.
        trial: Its trial (1-based).
        agent: The model's name (the run's own wins).
        task: The task family (the run's own wins).
    """
    agent = run.agent or agent
    task = run.task or task
    if run.steps_override is not None and run.episode_override is not None:
        return run.episode_override, run.steps_override
    exact = recorded_tokens(run)
    seen: Counter[tuple[str, str]] = Counter()
    steps: list[StepRow] = []
    chars = tokens = calls_total = 0
    for turn in run.turns:
        chars += turn.chars
        tokens = tokens + _turn_tokens(turn) if exact else math.ceil(chars / 4)
        calls = []
        for call in turn.calls:
            digest = args_hash(call.arguments)
            seen[(call.name, digest)] += 1
            entry: dict[str, Any] = {
                "tool": call.name,
                "args_hash": digest,
                "error": call.error is not None,
                "repeat": seen[(call.name, digest)],
            }
            calls.append(entry)
        calls_total += len(calls)
        latencies = [c.seconds for c in turn.calls if c.seconds is not None]
        first_error = next((c.error for c in turn.calls if c.error is not None), None)
        row: StepRow = {  # type: ignore[typeddict-item]  # the rest follows, in schema order
            "episode": episode,
            "agent": agent,
            "controller": CONTROLLER,
            "step": len(steps) + 1,
            "user_turns": turn.user_turns,
            "tool": calls[0]["tool"] if calls else None,
            "args_hash": calls[0]["args_hash"] if calls else None,
            "tool_calls": len(calls),
            "repeat": max((c["repeat"] for c in calls), default=0),
        }
        if latencies:
            row["latency"] = sum(latencies)
        row["tool_error"] = first_error
        row["signal"] = None
        row["tokens"] = min(tokens, MAX_TOKENS)
        if turn.error is not None:
            row["error"] = turn.error
        row["trial"] = trial
        if len(calls) > 1:
            row["calls"] = calls
        steps.append(row)
    return _episode_row(run, episode, trial, agent, task, steps, calls_total), steps


def _episode_row(
    run: TraceRun,
    episode: int,
    trial: int,
    agent: str,
    task: str,
    steps: list[StepRow],
    calls_total: int,
) -> EpisodeRow:
    prompt, completion = run.prompt_tokens, run.completion_tokens
    if recorded_tokens(run) and prompt is None and completion is None:
        prompt = sum(t.prompt_tokens or 0 for t in run.turns)
        completion = sum(t.completion_tokens or 0 for t in run.turns)
    if prompt is not None or completion is not None:
        tokens = (prompt or 0) + (completion or 0)
    else:
        tokens = steps[-1]["tokens"] if steps else 0
    row: EpisodeRow = {  # type: ignore[typeddict-item]  # the rest follows, in schema order
        "episode": episode,
        "task": task,
        "agent": agent,
        "controller": CONTROLLER,
        "outcome": run.outcome,
        "success": run.outcome == "success",
    }
    if run.reward is not None:
        row["reward"] = run.reward
    row["steps"] = len(steps)
    row["user_turns"] = run.turns[-1].user_turns if run.turns else 0
    row["feasible"] = None
    if prompt is not None:
        row["prompt_tokens"] = prompt
    if completion is not None:
        row["completion_tokens"] = completion
    row["tokens"] = min(tokens, MAX_TOKENS)
    row["sim_seconds"] = 0.0
    row["tool_calls"] = calls_total
    row["replans"] = 0
    row["attempt"] = 1
    row["trial"] = trial
    if run.wall_seconds is not None:
        row["wall_seconds"] = run.wall_seconds
    row["task_features"] = None
    return row
