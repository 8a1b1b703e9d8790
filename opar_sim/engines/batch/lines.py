"""A batch of episodes as ``episodes.jsonl`` lines, built column by column.

Each line is ``rundir.to_line`` of the ``EpisodeRow`` the SimPy engine writes for the same
episode (``rundir.episode_row``), byte for byte: the fields that are the same on every line
of a run (its seed, task, agent and controller, the sub-agents' tokens, the attempt) are
written once into a line template (``_line_template``), and each episode's values fill its
holes, every column converted at once (texts: each distinct one encoded once; floats:
orjson's shortest round-trip form, one call per column).  Building a dict and calling
orjson per episode cost about five times as much.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from opar_sim.core.seeding import episode_seed
from opar_sim.core.types import Outcome
from opar_sim.engines.batch.engine import BatchEpisodes
from opar_sim.rundir import EpisodeRow, to_line
from opar_sim.spec.schema import ExperimentSpec

_ROWS = 8192  # episodes formatted at a time
_HOLE = "\x00"  # marks a hole of the line template (orjson writes it as an escape)
# the template's holes, in the order ``episode_lines`` fills them: integers (``%d``) and
# values already written as JSON (``%s``)
_HOLES = (
    *(("episode", "d"), ("outcome", "s"), ("success", "s"), ("steps", "d"), ("answer", "s")),
    *(("best_step", "s"), ("final_progress", "s"), ("complete", "s"), ("feasible", "s")),
    *(("prompt_tokens", "d"), ("completion_tokens", "d"), ("tokens", "d"), ("llm_calls", "d")),
    *(("sim_seconds", "s"), ("tool_calls", "d"), ("replans", "d")),
)


def run_seed(spec: ExperimentSpec) -> int:
    """The ``seed`` field of a batch run's rows (the run seed's entropy)."""
    entropy = episode_seed(spec.seed, 0).entropy
    return entropy if isinstance(entropy, int) else 0


def episode_lines(
    spec: ExperimentSpec,
    controller: int,
    start: int,
    result: BatchEpisodes,
    made: tuple[np.ndarray, list[str]] | None = None,
) -> bytearray:
    """The episodes.jsonl lines of a batch of episodes, in the SimPy engine's row format.

    Args:
        spec: The spec they ran from.
        controller: The controller's index in ``spec.controller_list()``.
        start: The first episode's number.
        result: What ``run_batch`` returned.
        made: Its outcomes and answers, if already made (``rows.episode_rows``).

    Returns:
        One JSON line per episode, UTF-8.
    """
    judged, answers = made if made is not None else (result.judged(), result.answers())
    template = _line_template(spec, controller).__mod__
    outcomes = judged.tolist()
    success = judged == Outcome.SUCCESS.value
    lines = bytearray()  # grown in place (a large one is remapped, not copied)
    # a block of rows at a time: its objects are made in the memory the last block's left
    for a in range(0, len(result.steps), _ROWS):
        b = min(a + _ROWS, len(result.steps))
        steps = result.steps[a:b].tolist()
        best = result.best_step[a:b].tolist()
        columns = (
            range(start + a, start + b),
            _json_texts(outcomes[a:b]),
            _json_bools(success[a:b]),
            steps,
            _json_texts(answers[a:b]),
            _json_items([b if k else None for b, k in zip(best, steps, strict=True)]),
            _json_items(np.asarray(result.progress[a:b], np.float64).tolist()),
            _json_bools(result.complete[a:b]),
            _json_bools(result.feasible[a:b]),
            result.prompt_tokens[a:b].tolist(),
            result.completion_tokens[a:b].tolist(),
            result.tokens[a:b].tolist(),
            result.llm_calls[a:b].tolist(),
            _json_items(np.asarray(result.sim_seconds[a:b], np.float64).tolist()),
            result.tool_calls[a:b].tolist(),
            result.replans[a:b].tolist(),
        )
        lines += b"".join(map(template, zip(*columns, strict=True)))
    return lines


def _line_template(spec: ExperimentSpec, controller: int) -> bytes:
    """An episodes.jsonl line of ``spec``'s batch runs with a ``%`` hole for each of ``_HOLES``.

    The line is ``to_line`` of an ``EpisodeRow`` (the schema's fields, in its order) whose
    holes hold a mark; the fixed fields are written as ``to_line`` writes them.
    """
    hole: Any = {name: _HOLE + name for name, _ in _HOLES}
    row: EpisodeRow = {
        "episode": hole["episode"],
        "seed": run_seed(spec),
        "task": spec.task.name,
        "agent": "simulated",
        "controller": spec.controller_list()[controller].name,
        "outcome": hole["outcome"],
        "success": hole["success"],
        "steps": hole["steps"],
        "answer": hole["answer"],
        "best_step": hole["best_step"],
        "final_progress": hole["final_progress"],
        "complete": hole["complete"],
        "feasible": hole["feasible"],
        "prompt_tokens": hole["prompt_tokens"],
        "completion_tokens": hole["completion_tokens"],
        "tokens": hole["tokens"],
        "llm_calls": hole["llm_calls"],
        "sim_seconds": hole["sim_seconds"],
        "tool_calls": hole["tool_calls"],
        "replans": hole["replans"],
        "sub_tokens": 0,
        "attempt": 1,
    }
    template = to_line(row).replace("%", "%%")
    for name, kind in _HOLES:
        mark = to_line({"": _HOLE + name})[len('{"":') : -2]  # the mark as JSON, quoted
        template = template.replace(mark, "%" + kind, 1)
    return template.encode()


def _json_texts(values: list[str]) -> list[bytes]:
    """Each text as a JSON string, as ``to_line`` writes it (each distinct text once)."""
    encoded = {v: orjson.dumps(v) for v in dict.fromkeys(values)}
    return list(map(encoded.__getitem__, values))


def _json_bools(values: np.ndarray) -> list[bytes]:
    """Booleans as JSON (``true``, ``false``)."""
    return list(map((b"false", b"true").__getitem__, np.asarray(values, bool).tolist()))


def _json_items(values: list[Any]) -> list[bytes]:
    """Numbers (or None) as ``to_line`` writes them (orjson's forms), in one call."""
    return orjson.dumps(values)[1:-1].split(b",") if values else []
