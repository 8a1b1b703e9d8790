"""A batch of episodes as ``episodes.jsonl`` lines, built column by column.

Each line is ``rundir.to_line`` of the ``EpisodeRow`` the SimPy engine writes for the same
episode (``rundir.episode_row``), byte for byte: the fields that are the same on every line
of a run (its seed, task, agent and controller, the sub-agents' tokens, the attempt) are
written once into a line template (``_line_template``), and each episode's values fill its
holes.  No episode is a Python object: each column is converted at once (texts and
booleans: each distinct value encoded once, then codes; floats: orjson's shortest
round-trip form, one call per column) and a compiled loop (``line_kernel``) writes the
lines, integers in decimal, a block of episodes at a time into one buffer.  Filling a
``%`` template per episode cost about twice as much (docs/batch.md, Speed).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson

from opar_sim.core.seeding import episode_seed
from opar_sim.core.types import Outcome
from opar_sim.engines.batch.coding import Coded, answer_codes, outcome_codes
from opar_sim.engines.batch.engine import BatchEpisodes
from opar_sim.engines.batch.line_kernel import INT, NULL, TEXT, write_lines
from opar_sim.rundir import EpisodeRow, to_line
from opar_sim.spec.schema import ExperimentSpec

_ROWS = 8192  # the lines of a block (a few MiB)
_HOLE = "\x00"  # marks a hole of the line template (orjson writes it as an escape)
# the template's holes, in the order of the line: (field, how its values are written)
_HOLES = (
    *(("episode", "int"), ("outcome", "text"), ("success", "bool"), ("steps", "int")),
    *(("answer", "text"), ("best_step", "int"), ("final_progress", "float")),
    *(("complete", "bool"), ("feasible", "bool"), ("prompt_tokens", "int")),
    *(("completion_tokens", "int"), ("tokens", "int"), ("llm_calls", "int")),
    *(("sim_seconds", "float"), ("tool_calls", "int"), ("replans", "int")),
)
_INT_WIDTH = 20  # the most bytes of an int64 in decimal ("-9223372036854775808")
_ESCAPED = re.compile('["\\\\\x00-\x1f]')  # what orjson writes other than itself in a string


def run_seed(spec: ExperimentSpec) -> int:
    """The ``seed`` field of a batch run's rows (the run seed's entropy)."""
    entropy = episode_seed(spec.seed, 0).entropy
    return entropy if isinstance(entropy, int) else 0


def episode_lines(
    spec: ExperimentSpec,
    controller: int,
    start: int,
    result: BatchEpisodes,
    made: tuple[Coded, Coded] | None = None,
) -> bytes:
    """The episodes.jsonl lines of a batch of episodes (``line_blocks``, joined)."""
    return b"".join(bytes(block) for block in line_blocks(spec, controller, start, result, made))


def line_blocks(
    spec: ExperimentSpec,
    controller: int,
    start: int,
    result: BatchEpisodes,
    made: tuple[Coded, Coded] | None = None,
) -> Iterator[memoryview]:
    """The episodes.jsonl lines of a batch of episodes, in the SimPy engine's row format.

    The lines come in blocks of ``_ROWS`` episodes, each made in the memory of the last
    (a block is good until the next is asked for): the lines of a large run are never
    all in memory, nor is memory touched for the first time for each.

    Args:
        spec: The spec they ran from.
        controller: The controller's index in ``spec.controller_list()``.
        start: The first episode's number.
        result: What ``run_batch`` returned.
        made: Its outcomes and answers as codes, if already made (``rows.episode_rows``).

    Yields:
        Blocks of JSON lines, one per episode, UTF-8.
    """
    outcomes, answers = made if made is not None else (outcome_codes(result), answer_codes(result))
    success = np.array([o == Outcome.SUCCESS.value for o in outcomes[1]], bool)[outcomes[0]]
    n = len(result.steps)
    steps = np.asarray(result.steps, np.int64)
    best = np.asarray(result.best_step, np.int64).copy()
    best[steps == 0] = NULL
    values: dict[str, Any] = {
        "episode": np.arange(start, start + n, dtype=np.int64),
        "outcome": outcomes,
        "success": success,
        "steps": steps,
        "answer": answers,
        "best_step": best,
        "final_progress": result.progress,
        "complete": result.complete,
        "feasible": result.feasible,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "tokens": result.tokens,
        "llm_calls": result.llm_calls,
        "sim_seconds": result.sim_seconds,
        "tool_calls": result.tool_calls,
        "replans": result.replans,
    }
    holes = [(kind, values[name]) for name, kind in _HOLES]
    yield from join_blocks(_line_template(spec, controller), holes)


def join_lines(pieces: list[bytes], holes: list[tuple[str, Any]]) -> bytes:
    """``join_blocks`` (the same arguments), joined."""
    return b"".join(bytes(block) for block in join_blocks(pieces, holes))


def join_blocks(
    pieces: list[bytes], holes: list[tuple[str, Any]], rows: int = _ROWS
) -> Iterator[memoryview]:
    """Lines ``pieces[0] + hole_0 + pieces[1] + ... + hole_last + pieces[-1]``, one per row.

    Args:
        pieces: The literal texts around the holes (one more than ``holes``).
        holes: Each hole's kind and values, one per row: ``int`` (integers, ``NULL``
            for null), ``float`` (floats, as orjson writes them: NaN as null), ``bool``
            (``true``, ``false``) or ``text`` (a pair: codes into distinct texts).
        rows: The lines of a block, at most.

    Yields:
        The lines' bytes, UTF-8, a block of ``rows`` lines at a time (in one buffer: a block
        is good until the next is asked for).
    """
    n = len(holes[0][1][0] if holes[0][0] == "text" else holes[0][1])
    kinds = np.array([INT if kind == "int" else TEXT for kind, _ in holes], np.int8)
    ints = np.array([np.asarray(v, np.int64) for kind, v in holes if kind == "int"], np.int64)
    texts: list[np.ndarray] = []
    words: list[np.ndarray] = []
    ends: list[np.ndarray] = []  # each text hole's entries' lengths
    base = 0
    lengths: Any
    for kind, value in holes:
        if kind == "int":
            continue
        if kind == "float":
            codes, data, lengths = np.arange(n, dtype=np.int64), *_floats(value)
        elif kind == "bool":
            codes, data, lengths = np.asarray(value, np.int64), b"falsetrue", [5, 4]
        else:
            codes, data, lengths = value[0], *_texts(value[1])
        texts.append(codes + base)
        words.append(np.frombuffer(data, np.uint8))
        ends.append(np.asarray(lengths, np.int64))
        base += len(ends[-1])
    joined = np.concatenate(words) if words else np.zeros(0, np.uint8)
    word_ends = np.cumsum(np.concatenate(ends)) if ends else np.zeros(0, np.int64)
    # room for the longest line there can be: no line is written past its row's share
    width = sum(map(len, pieces)) + _INT_WIDTH * len(ints)
    width += sum(int(e.max(initial=0)) for e in ends)
    out = np.empty(min(n, rows) * width, np.uint8)
    template = np.frombuffer(b"".join(pieces), np.uint8)
    piece_ends = np.cumsum([len(p) for p in pieces])
    numbers = ints.reshape(len(ints), n)
    text_codes = np.array(texts, np.int64).reshape(len(texts), n)
    inputs = (template, piece_ends, kinds, numbers, text_codes, joined, word_ends)
    for a in range(0, n, rows):
        yield out.data[: write_lines(out, *inputs, a, min(n, a + rows))]


def _floats(values: Any) -> tuple[bytes, np.ndarray]:
    """Floats as ``to_line`` writes them (orjson's form), one after another, and lengths."""
    text = orjson.dumps(np.asarray(values, np.float64).tolist())[1:-1]  # no form has a comma
    data = np.frombuffer(text, np.uint8)
    ends = np.append(np.flatnonzero(data == ord(",")), len(data))
    lengths = np.diff(ends, prepend=-1) - 1
    return text.replace(b",", b""), lengths


def _texts(values: list[str]) -> tuple[bytes, list[int]]:
    """Texts as ``to_line`` writes them (JSON strings), one after another, and lengths."""
    joined = "".join(values)
    if _ESCAPED.search(joined) is None and joined.isascii():  # each is itself, quoted
        return "".join([f'"{v}"' for v in values]).encode(), [len(v) + 2 for v in values]
    encoded = [orjson.dumps(v) for v in values]
    return b"".join(encoded), [len(e) for e in encoded]


def _line_template(spec: ExperimentSpec, controller: int) -> list[bytes]:
    """An episodes.jsonl line of ``spec``'s batch runs, cut at each of ``_HOLES``.

    The line is ``to_line`` of an ``EpisodeRow`` (the schema's fields, in its order) whose
    holes hold a mark; the fixed fields are written as ``to_line`` writes them.

    Returns:
        The texts before, between and after the holes (one more than ``_HOLES``).
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
    rest = to_line(row).encode()
    pieces = []
    for name, _ in _HOLES:
        mark = to_line({"": _HOLE + name})[len('{"":') : -2].encode()  # the mark as JSON
        before, rest = rest.split(mark, 1)
        pieces.append(before)
    return [*pieces, rest]
