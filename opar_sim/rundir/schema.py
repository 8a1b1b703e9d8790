"""The one row schema of a run directory: an ``episodes.jsonl`` row and a ``steps.jsonl`` row.

``EpisodeRow`` and ``StepRow`` name every field a row may hold, its type, and
its place in the line (fields are written in declaration order; a field a row
does not have is left out, never written as null unless its type allows null).
``Required`` marks what every writer writes: the SimPy runner
(``rows.episode_lines``), the batch engine (``engines.batch.rows``) and the
trace importer (``traces.importer``) all build these typed dicts, so a type
checker holds each of them to the schema, and ``tests/rundir/test_row_schema.py``
checks the rows each one writes against it, field for field.  The contract
fields of docs/design.md §6 (``episode``, ``agent``, ``step``, ``signal``,
``outcome``, ``success``) are required.

The rest is optional because some writer cannot know it: a recorded run has
no simulated clock, no hidden truth and no Reflect law's terms; the batch
engine keeps no answers of truncated episodes' steps; ``trial`` is written only
when a spec repeats worlds (``trials`` > 1) and always by the importer;
``parent``, ``sub_controller`` and ``sub_run`` only on a sub-agent's steps.

``fields_of`` turns a row type into ``Field`` records at run time (name, kind,
null allowed, required); ``problems`` checks a row against the whole schema (the
tests); ``EPISODE_CHECKS`` and ``STEP_CHECKS`` are the fields readers rely on,
typed as the schema types them, which ``files.rows`` checks on every line read.
Every number is range-checked too (``RANGES``: counts from 0, steps, trials and
attempts from 1, seconds from 0, progress and reward within [0, 1], anything else
within ±10^15), so a negative count or ``1e308`` is named, never computed with.
"""

# No ``from __future__ import annotations`` here: Python 3.11's TypedDict reads
# Required[...] only from evaluated annotations.

import functools
import types
import typing
from dataclasses import dataclass
from typing import Any, Required, TypedDict

SCHEMA_VERSION = 3
# 2: outcomes split by the claim (abandoned); feasible, give_up
# 3: one schema for every writer; an imported step's ``tool_error`` is text or null, as a
#    simulated step's (it was true/false), and imported rows follow the schema's field order


class EpisodeRow(TypedDict, total=False):
    """One line of ``episodes.jsonl``: an episode's outcome, answer and cost."""

    episode: Required[int]  # the episode (the world's seed index; an imported run's task id)
    seed: int  # the run seed
    task: Required[str]
    agent: Required[str]
    controller: Required[str]  # the Reflect law (``recorded`` for an imported run)
    outcome: Required[str]  # docs/design.md §2 (``failure``: an imported run's reward below 1)
    success: Required[bool]
    reward: float  # an imported run's recorded reward
    steps: Required[int]  # the episode's own steps (assistant turns of an imported run)
    user_turns: int  # an imported run's user messages
    answer: str  # the answer handed over (best-of-history on a truncation)
    best_step: int | None  # the step whose answer it is
    final_progress: float  # ground truth at the end
    complete: bool
    feasible: Required[bool | None]  # null: unknown (an imported run)
    prompt_tokens: int
    completion_tokens: int
    tokens: Required[int]
    llm_calls: int
    sim_seconds: Required[float]  # simulated seconds (0 for an imported run)
    tool_calls: Required[int]
    replans: Required[int]
    sub_tokens: int  # a nested run's sub-agents' tokens, on top of ``tokens``
    attempt: Required[int]  # Reflexion: which attempt at the same seeded task
    trial: int  # which repeated trial of the world (a spec with trials > 1; imports)
    wall_seconds: float  # LLM agents: the measured wall seconds of the model calls
    task_features: dict[str, float] | None  # the world's known features, if the task has


class StepRow(TypedDict, total=False):
    """One line of ``steps.jsonl``: one Reflect of one agent, ⟨o, π, a, r, ρ⟩ and the truth."""

    episode: Required[int]  # the episode it belongs to (a sub-agent's: its parent's)
    agent: Required[str]
    controller: Required[str]  # the episode's Reflect law (a sub-agent's: its parent's)
    step: Required[int]  # 1-based
    time: float  # simulated seconds at the Reflect (none in an imported record)
    observation: str
    visible_progress: float
    world_changed: bool
    user_turns: int  # imported: user messages so far
    plan_id: int
    plan_quality: float  # the plan's drawn quality (hidden)
    effective_quality: float  # its quality after context decay, as the truth probe read it
    action: str | None  # the action's label
    tool: Required[str | None]  # the tool called (imported: the turn's first call)
    args_hash: str | None  # imported: 16 hex digits of SHA-256 of the call's arguments
    tool_calls: int  # imported: the turn's calls
    repeat: int  # imported: times this exact call has been made, this one included
    expert: bool  # whether the action was the expert's (hidden)
    ok: bool | None
    result: str | None
    latency: float | None
    tool_error: Required[str | None]  # the tool's error kind, null when none
    delta_task: float | None  # the Evaluation (Algorithm 2)
    delta_act: float | None
    delta_plan: float | None
    confidence: float | None
    missing: list[str] | None
    critique: str | None
    signal: Required[str | None]  # CONTINUE, REPLAN or TERMINATE (null: none recorded)
    reason: str | None
    give_up: bool | None
    terms: dict[str, float]  # the controller's terms (the PID's p, i, d, effort, ...)
    progress: float  # the hidden truth at the Reflect
    complete: bool
    feasible: bool
    plan_age: int  # the ReflectContext besides the evaluation
    plan_exhausted: bool
    replans: int
    tokens: Required[int]  # cumulative tokens at the end of the step
    context_tokens: int
    answer: str
    error: str | None  # a step-level error such as ``invalid_format``
    guard: str | None  # the guard that overrode the controller
    memory: str | None  # memory compression at this Reflect
    intercepted: str | None  # why a guardrail stopped this step's call
    attempt: int
    trial: int
    parent: str  # a sub-agent's step: the orchestrator's agent name
    sub_controller: str  # the sub-agent's own Reflect law
    sub_run: int  # the n-th sub-agent the episode launched
    calls: list[dict[str, Any]]  # imported: every call of a turn with several


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a row type, as its readers check it."""

    name: str
    kind: str  # int, num, str, bool, dict (of numbers), list or any
    nullable: bool
    required: bool


_KINDS: dict[Any, str] = {
    int: "int",
    float: "num",
    str: "str",
    bool: "bool",
    dict: "dict",
    list: "list",
}


def _field(name: str, hint: Any, required: bool) -> Field:
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    nullable = type(None) in args
    (base,) = [a for a in args if a is not type(None)]
    kind = _KINDS.get(typing.get_origin(base) or base, "any")
    if kind == "list":  # a list of objects (an import's calls) or of texts (missing)
        (item,) = typing.get_args(base) or (Any,)
        item = typing.get_origin(item) or item
        kind = {dict: "objects", str: "strs"}.get(item, "list")
    return Field(name, kind, nullable, required)


@functools.cache
def fields_of(row_type: type) -> tuple[Field, ...]:
    """The fields of ``EpisodeRow`` or ``StepRow``, in the order they are written.

    Args:
        row_type: The row's TypedDict.

    Returns:
        One ``Field`` per key: its kind, whether it may be null, whether it is required.
    """
    hints = typing.get_type_hints(row_type)
    required: frozenset[str] = row_type.__required_keys__  # type: ignore[attr-defined]
    return tuple(_field(name, hint, name in required) for name, hint in hints.items())


def type_ok(value: Any, kind: str) -> bool:
    """Whether ``value`` (not null) is of ``kind`` (``dict``: a table of numbers or nulls)."""
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "num":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "dict":
        return isinstance(value, dict) and all(
            type_ok(v, "num") or v is None for v in value.values()
        )
    if kind == "list":
        return isinstance(value, list)
    if kind == "objects":
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)
    if kind == "strs":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return True


MAX_COUNT = 2**53  # the largest whole number a row holds (a float holds it exactly)
MAX_NUMBER = 1e15  # the largest magnitude of any other number (seconds: 31 million years)
_COUNTS = (
    "steps",
    "tokens",
    "prompt_tokens",
    "completion_tokens",
    "llm_calls",
    "tool_calls",
    "replans",
    "sub_tokens",
    "user_turns",
    "repeat",
    "plan_age",
    "context_tokens",
    "plan_id",
    "best_step",
    "episode",
    "sub_run",
)
_SECONDS = ("sim_seconds", "time", "latency", "wall_seconds")
_SHARES = ("progress", "final_progress", "reward", "plan_quality", "effective_quality")
RANGES: dict[str, tuple[float, float]] = {
    **dict.fromkeys(_COUNTS, (0, MAX_COUNT)),
    **dict.fromkeys(("step", "attempt", "trial"), (1, MAX_COUNT)),
    "seed": (0, 2**64),
    **dict.fromkeys(_SECONDS, (0, MAX_NUMBER)),
    **dict.fromkeys(_SHARES, (0, 1)),
}
"""The range of each numeric field; any other whole number within ±MAX_COUNT, number ±MAX_NUMBER."""


def value_range(name: str, kind: str) -> tuple[float, float]:
    """The smallest and largest value field ``name`` of ``kind`` (``int`` or ``num``) may hold."""
    default = (-MAX_COUNT, MAX_COUNT) if kind == "int" else (-MAX_NUMBER, MAX_NUMBER)
    return RANGES.get(name, default)


def _bound(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else repr(x)


def range_problem(name: str, kind: str, value: Any) -> str | None:
    """``field 'x': V is out of range (LO to HI)`` when a number is outside its field's range.

    Args:
        name: The field.
        kind: Its kind (``int`` or ``num``; others have no range).
        value: A value of that kind.
    """
    if kind not in ("int", "num") or not isinstance(value, int | float):
        return None
    lo, hi = value_range(name, kind)
    if lo <= value <= hi:
        return None
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return f"field {name!r}: {shown} is out of range ({_bound(lo)} to {_bound(hi)})"


def read_checks(row_type: type, names: tuple[str, ...], needed: tuple[str, ...]) -> dict[str, Any]:
    """The readers' check of a file: the fields they rely on, typed as the schema types them.

    Args:
        row_type: ``EpisodeRow`` or ``StepRow``.
        names: The fields a reader relies on (their types are checked where present).
        needed: Those a row cannot be read without (older and imported runs lack the others).

    Returns:
        Name -> (kind, with ``?`` when null is allowed; whether the row must have it),
        in the order of ``names``.

    Raises:
        KeyError: for a name the schema does not have.
    """
    known = {f.name: f for f in fields_of(row_type)}
    return {
        name: (known[name].kind + ("?" if known[name].nullable else ""), name in needed)
        for name in names
    }


def problems(row: dict[str, Any], row_type: type) -> list[str]:
    """Every way ``row`` departs from the schema: unknown, missing, out of order, mistyped.

    Args:
        row: A parsed line.
        row_type: ``EpisodeRow`` or ``StepRow``.

    Returns:
        One sentence per problem (empty: the row fits).
    """
    fields = {f.name: f for f in fields_of(row_type)}
    order = list(fields)
    found = [f"unknown field {name!r}" for name in row if name not in fields]
    absent = [f.name for f in fields.values() if f.required and f.name not in row]
    found += [f"missing field {name!r}" for name in absent]
    known = [order.index(name) for name in row if name in fields]
    if known != sorted(known):
        found.append(f"fields out of the schema's order: {list(row)}")
    for name, value in row.items():
        f = fields.get(name)
        if f is None or (value is None and f.nullable):
            continue
        if value is None or not type_ok(value, f.kind):
            found.append(f"field {name!r}: {value!r} is not {f.kind}{'?' * f.nullable}")
        elif (problem := range_problem(name, f.kind, value)) is not None:
            found.append(problem)
    return found


# the fields readers rely on, typed as the row schema types them: name -> (kind, required),
# a trailing "?" allowing null; a row is refused without a required one (older runs and
# imported records lack the others)
EPISODE_CHECKS = read_checks(
    EpisodeRow,
    (
        "episode",
        "controller",
        "success",
        "steps",
        "outcome",
        "seed",
        "task",
        "agent",
        "best_step",
        "final_progress",
        "complete",
        "feasible",
        "prompt_tokens",
        "completion_tokens",
        "tokens",
        "llm_calls",
        "sim_seconds",
        "tool_calls",
        "replans",
        "sub_tokens",
        "attempt",
        "trial",
        "reward",
        "user_turns",
    ),
    needed=("episode", "success", "steps"),
)
STEP_CHECKS = read_checks(
    StepRow,
    (
        "episode",
        "step",
        "time",  # absent from an imported record (no clock, no hidden truth)
        "progress",
        "controller",
        "agent",
        "delta_task",
        "delta_act",
        "delta_plan",
        "confidence",
        "plan_quality",
        "effective_quality",
        "terms",
        "signal",
        "action",
        "tool",
        "ok",
        "tokens",
        "replans",
        "attempt",
        "trial",
        "parent",
        "user_turns",  # an imported record's
        "tool_calls",
        "repeat",
        "args_hash",
        "tool_error",
        "calls",
    ),
    needed=("episode", "step"),
)
CALL_CHECKS = {  # calls.jsonl (LLM runs): its own rows, checked the same way
    "episode": ("int", False),
    "phase": ("str", True),
    "steps": ("int", False),
    "wall_seconds": ("num?", False),
    "sim_seconds": ("num?", False),
    "model_seconds": ("num?", False),
    "attempts": ("int?", False),
    "prompt_tokens": ("int?", False),
    "completion_tokens": ("int?", False),
    "cache_hit": ("bool?", False),
    "error": ("str?", False),
}
REPLAY_CHECKS = {  # replay_<controller>.jsonl: a replay's verdict per recorded episode
    "episode": ("int", True),
    "recorded_controller": ("str", True),
    "recorded_outcome": ("str", False),
    "recorded_steps": ("int", False),
    "verdict": ("str", False),
    "at_step": ("int?", False),
    "outcome": ("str?", False),
}
_WORDS = {
    "int": "a whole number",
    "num": "a number",
    "str": "text",
    "bool": "true or false",
    "list": "a list",
    "objects": "a list of objects",
    "strs": "a list of texts",
}


def row_problem(row: dict[str, Any], checks: dict[str, tuple[str, bool]]) -> str | None:
    """The first field of ``row`` a reader cannot rely on, worded for the reader's error.

    Args:
        row: A parsed line.
        checks: Name -> (kind, required) (``EPISODE_CHECKS`` and its kin).

    Returns:
        ``field 'x' is missing`` or ``field 'x': expected ..., got ...``; None when the
        row is fit to read.
    """
    for name, (kind, required) in checks.items():
        if name not in row:
            if required:
                return f"field {name!r} is missing"
            continue
        value = row[name]
        base = kind.rstrip("?")
        if value is None and kind.endswith("?"):
            continue
        if not type_ok(value, base):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            word = _WORDS.get(base, "a table of numbers")
            return f"field {name!r}: expected {word}, got {shown}"
        if base in ("int", "num") and isinstance(value, float) and value != value:
            return f"field {name!r}: expected a number, got NaN"
        problem = range_problem(name, base, value)
        if problem is not None:
            return problem
    return None
