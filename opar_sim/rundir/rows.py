"""The SimPy engine's episodes and steps as rows of the one schema, one JSON object per line.

``episode_row`` and ``step_row`` build the ``EpisodeRow`` and ``StepRow`` of
``rundir.schema`` (its field names, types and order are the file format every
reader relies on; ``SCHEMA_VERSION`` there names it).  ``episode_key`` is the
one key of an episode (and of each of its steps) across every reader.

``trial``: a spec with ``trials`` > 1 runs each episode's world several times;
then every episodes.jsonl and steps.jsonl row carries ``trial`` (1, 2, ...).
With ``trials`` = 1 (the default) the field is left out, so such runs keep
the bytes they had before trials existed; a reader takes a missing ``trial``
as 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from opar_sim.core.types import EpisodeResult, StepRecord
from opar_sim.rundir.schema import EpisodeRow, StepRow

EpisodeKey = tuple[str, int, int, int]


def episode_key(row: dict[str, Any]) -> EpisodeKey:
    """(controller, episode, trial, attempt) of an episodes.jsonl or steps.jsonl row.

    A spec with ``trials`` > 1 runs each episode's world several times
    (``trial`` 1, 2, ...); Reflexion attempts an episode seed several times
    (``attempt`` 1, 2, ...); each is a unit of its own.  ``key[:3]`` names one
    trial of one world, ``key[:2]`` the world.  A sub-agent's steps carry the
    key of the episode they belong to.

    Args:
        row: A parsed line of ``episodes.jsonl`` or ``steps.jsonl``.

    Returns:
        The key, equal for an episode's row and all of its steps' rows.
    """
    return (
        str(row.get("controller", "")),
        int(row["episode"]),
        int(row.get("trial") or 1),
        int(row.get("attempt") or 1),
    )


def step_row(result: EpisodeResult, rec: StepRecord) -> StepRow:
    """The steps.jsonl row of one step of an episode."""
    action, res, ev, dec = rec.action, rec.result, rec.evaluation, rec.decision
    row: StepRow = {
        "episode": result.episode,
        "agent": result.agent,
        "controller": result.controller,
        "step": rec.step,
        "time": rec.time,
        "observation": rec.observation.text,
        "visible_progress": rec.observation.visible_progress,
        "world_changed": rec.observation.world_changed,
        "plan_id": rec.plan_id,
        "plan_quality": rec.plan_quality,
        "effective_quality": rec.effective_quality,
        "action": action.label() if action else None,
        "tool": action.tool if action else None,
        "expert": rec.expert,
        "ok": res.ok if res else None,
        "result": res.text if res else None,
        "latency": res.latency if res else None,
        "tool_error": res.error if res else None,
        "delta_task": ev.delta_task if ev else None,
        "delta_act": ev.delta_act if ev else None,
        "delta_plan": ev.delta_plan if ev else None,
        "confidence": ev.confidence if ev else None,
        "missing": list(ev.missing) if ev else None,
        "critique": ev.critique if ev else None,
        "signal": dec.signal.value if dec else None,
        "reason": dec.reason if dec else None,
        "give_up": dec.give_up if dec else None,
        "terms": dec.terms if dec else {},
        "progress": rec.progress,
        "complete": rec.complete,
        "feasible": rec.feasible,
        "plan_age": rec.plan_age,
        "plan_exhausted": rec.plan_exhausted,
        "replans": rec.replans,
        "tokens": rec.tokens,
        "context_tokens": rec.context_tokens,
        "answer": rec.answer,
        "error": rec.error,
        "guard": rec.guard,
        "memory": rec.memory,
        "intercepted": rec.intercepted,
        "attempt": result.attempt,
    }
    if result.trial is not None:  # as ``_trial``, set in place: no copy of the row per step
        row["trial"] = result.trial
    return row


def episode_row(result: EpisodeResult) -> EpisodeRow:
    """The episodes.jsonl row of an episode."""
    c = result.cost
    row: EpisodeRow = {
        "episode": result.episode,
        "seed": result.seed,
        "task": result.task,
        "agent": result.agent,
        "controller": result.controller,
        "outcome": result.outcome,
        "success": result.success,
        "steps": len(result.steps),
        "answer": result.answer,
        "best_step": result.best_step,
        "final_progress": result.final_progress,
        "complete": result.complete,
        "feasible": result.feasible,
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
        "tokens": c.tokens,
        "llm_calls": c.llm_calls,
        "sim_seconds": c.sim_seconds,
        "tool_calls": c.tool_calls,
        "replans": c.replans,
        # a nested run's sub-agents spend on top of the orchestrator's own tokens
        "sub_tokens": sum(sub.cost.tokens for sub in result.sub_episodes),
        "attempt": result.attempt,
    }
    if result.trial is not None:  # only for a spec with ``trials`` > 1 (module docstring)
        row["trial"] = result.trial
    if c.wall_seconds is not None:  # LLM episodes: the measured model wall seconds
        row["wall_seconds"] = c.wall_seconds
    if result.task_features is not None:  # a task that has features (as an imported run)
        row["task_features"] = result.task_features
    return row


def to_line(row: Mapping[str, Any]) -> str:
    """One JSON line, deterministic for the same row (orjson: compact, UTF-8)."""
    return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE).decode()


def episode_lines(result: EpisodeResult, steps: bool = True) -> tuple[str, str]:
    """(the episode's line, all its step lines), sub-agents' steps included.

    Args:
        result: The episode.
        steps: False: the step lines are not made (an empty string instead).
    """
    if not steps:
        return to_line(episode_row(result)), ""
    # the lines of to_line, joined as bytes and decoded once
    dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    lines = b"".join(
        [dumps(step_row(result, rec), option=newline) for rec in result.steps]
    ).decode()
    for sub in result.sub_episodes:
        for rec in sub.steps:
            # a sub-agent's step belongs to the parent's episode: same controller and
            # episode keys, its own agent name, the parent named, its own Reflect law kept
            row = step_row(sub, rec)
            row["controller"] = result.controller
            row["episode"] = result.episode
            row["parent"] = result.agent
            row["sub_controller"] = sub.controller
            row["sub_run"] = sub.episode  # the n-th sub-agent this episode launched
            lines += to_line(row)
    return to_line(episode_row(result)), lines
