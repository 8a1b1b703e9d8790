"""The batch engine's rows: episodes as ``episodes.jsonl`` lines and as columns, steps as columns.

``episode_text`` is the lines of ``lines.episode_lines`` (the SimPy engine's rows,
``rundir.episode_row``, field for field and byte for byte); ``episode_table`` is the same
rows as a pyarrow table (``episodes.parquet``).

``StepRecorder`` is the engine's per-step hook (``_Engine(record=...)``): at the end of each
step the engine hands it the step number, the rows that made the Reflect and its full-width
state arrays; the recorder keeps those rows' values (one gather per column), and
``step_table`` turns them into ``StepRow`` columns (``steps.parquet``) in the SimPy file's
order, episode by episode, step by step.  What a batch step row leaves out (the observation
and result texts, the law's terms and reason, the answer so far) is in docs/batch.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from opar_sim.core.types import Outcome
from opar_sim.engines.batch.coding import Coded, answer_codes, outcome_codes
from opar_sim.engines.batch.engine import BatchEpisodes
from opar_sim.engines.batch.lines import episode_lines, line_blocks, run_seed
from opar_sim.rundir.columnar import required
from opar_sim.spec.schema import ExperimentSpec

ActionLabel = Callable[[int], "tuple[str, str]"]
"""An action's key -> (its label, its tool), as the scalar task names them (``TaskTwin.label``)."""

SIGNALS = ("continue", "replan", "terminate")  # ControlSignal values, by the laws' codes
MISSING = "remaining goal"  # SimulatedAgent.evaluate: what is missing below δ_task 0.999
# the engine's arrays the recorder keeps as they are (the others are packed: ``_FLAGS``; or
# derived when the table is made)
_KEPT = (
    "episode",
    "time",
    "visible_progress",
    "plan_quality",
    "effective_quality",
    "latency",
    "delta_task",
    "delta_act",
    "delta_plan",
    "confidence",
    "signal",
    "progress",
    "plan_age",
    "replans",
    "tokens",
    "context_tokens",
    "key",
)
# the columns a batch run's rows may leave null (the others are Parquet ``required``)
_EPISODE_NULLS = ("best_step",)  # an episode of no step
_STEP_NULLS = ("action", "tool", "tool_error", "error")  # an invalid output; no error
_BLOCK = 1 << 20  # rows of a block of kept values, at most (8 MiB of a float column)
_EMPTY = {"flags": np.uint16, "key": np.int64, "signal": np.int8}  # dtypes with no steps kept
# the engine's masks, kept as the bits of one integer per row (one gather instead of nine)
_FLAGS = (
    "valid",
    "timeout",
    "delivered",
    "ok",
    "productive",
    "expert",
    "give_up",
    "feasible",
    "exhausted",
)


def episode_rows(
    spec: ExperimentSpec, controller: int, start: int, result: BatchEpisodes
) -> tuple[Iterator[memoryview], pa.Table]:
    """``episode_text`` and ``episode_table`` at once (the outcomes and answers made once).

    Args:
        spec: The spec they ran from.
        controller: The controller's index in ``spec.controller_list()``.
        start: The first episode's number.
        result: What ``run_batch`` returned.

    Returns:
        The episodes.jsonl lines (UTF-8 blocks, ``line_blocks``) and the episodes.parquet rows.
    """
    made = (outcome_codes(result), answer_codes(result))
    return (
        line_blocks(spec, controller, start, result, made),
        episode_table(spec, controller, start, result, made),
    )


def episode_text(
    spec: ExperimentSpec,
    controller: int,
    start: int,
    result: BatchEpisodes,
    made: tuple[Coded, Coded] | None = None,
) -> str:
    """``lines.episode_lines`` (the same arguments) as text: one JSON line per episode."""
    return str(episode_lines(spec, controller, start, result, made), "utf-8")


def _text(values: list[str], n: int) -> pa.DictionaryArray:
    """A column of one text repeated ``n`` times (dictionary-encoded: one copy)."""
    return _one(np.zeros(n, np.int32), *values)


def _one(zeros: np.ndarray, text: str) -> pa.DictionaryArray:
    """``text`` at every row of ``zeros`` (their codes: int32 zeros, shared between columns)."""
    return pa.DictionaryArray.from_arrays(pa.array(zeros), pa.array([text]))


def _nullable(values: np.ndarray, null: np.ndarray | None) -> Any:
    """``values`` as an arrow array, null where ``null`` (a validity bitmap, built at once).

    ``pa.array(values, mask=...)`` takes about 0.3 µs a value; the bitmap, a thousandth.
    """
    if null is None or not null.any():
        return pa.array(values)
    values = np.ascontiguousarray(values)
    valid = pa.py_buffer(np.packbits(~null, bitorder="little"))
    kind = pa.from_numpy_dtype(values.dtype)
    count = int(null.sum())
    return pa.Array.from_buffers(kind, len(values), [valid, pa.py_buffer(values)], count)


def _codes(codes: np.ndarray, vocabulary: list[str], null: np.ndarray | None = None) -> Any:
    """A dictionary-encoded text column: ``vocabulary[codes]``, null where ``null``."""
    indices = _nullable(np.asarray(codes, np.int32), null)
    return pa.DictionaryArray.from_arrays(indices, pa.array(vocabulary, pa.string()))


def episode_table(
    spec: ExperimentSpec,
    controller: int,
    start: int,
    result: BatchEpisodes,
    made: tuple[Coded, Coded] | None = None,
) -> pa.Table:
    """The rows ``episode_text`` writes, as a pyarrow table (``episodes.parquet``).

    Args:
        spec: The spec they ran from.
        controller: The controller's index in ``spec.controller_list()``.
        start: The first episode's number.
        result: What ``run_batch`` returned.
        made: Its outcomes and answers as codes, if already made (``episode_rows``).

    Returns:
        One row per episode, the ``EpisodeRow`` fields in the schema's order.
    """
    n = len(result.steps)
    outcomes, answers = made if made is not None else (outcome_codes(result), answer_codes(result))
    success = np.array([o == Outcome.SUCCESS.value for o in outcomes[1]], bool)[outcomes[0]]
    steps = result.steps.astype(np.int64)
    columns: dict[str, Any] = {
        "episode": pa.array(np.arange(start, start + n, dtype=np.int64)),
        "seed": pa.array(np.full(n, run_seed(spec), np.uint64)),
        "task": _text([spec.task.name], n),
        "agent": _text(["simulated"], n),
        "controller": _text([spec.controller_list()[controller].name], n),
        "outcome": _codes(*outcomes),
        "success": pa.array(success),
        "steps": pa.array(steps),
        "answer": _codes(*answers),
        "best_step": _nullable(result.best_step.astype(np.int64), steps == 0),
        "final_progress": pa.array(result.progress.astype(np.float64)),
        "complete": pa.array(result.complete),
        "feasible": pa.array(result.feasible),
        "prompt_tokens": pa.array(result.prompt_tokens.astype(np.int64)),
        "completion_tokens": pa.array(result.completion_tokens.astype(np.int64)),
        "tokens": pa.array(result.tokens.astype(np.int64)),
        "llm_calls": pa.array(result.llm_calls.astype(np.int64)),
        "sim_seconds": pa.array(result.sim_seconds.astype(np.float64)),
        "tool_calls": pa.array(result.tool_calls.astype(np.int64)),
        "replans": pa.array(result.replans.astype(np.int64)),
        "sub_tokens": pa.array(np.zeros(n, np.int64)),
        "attempt": pa.array(np.ones(n, np.int64)),
    }
    return required(pa.table(columns), _EPISODE_NULLS)


class StepRecorder:
    """The engine's step hook: keeps the rows of each Reflect, turns them into step columns."""

    def __init__(self, label: ActionLabel) -> None:
        """Start empty.

        Args:
            label: The scalar task's label and tool of an action's key (``TaskTwin.label``).
        """
        self.label = label
        self.first = 0
        # the kept values, step after step, in blocks of up to ``_BLOCK`` rows (one array per
        # column); each step's rows are a piece: (its block, first row there, rows, step)
        self.blocks: list[dict[str, np.ndarray]] = []
        self.pieces: list[tuple[int, int, int, int]] = []
        self.used = 0  # rows of the last block in use

    def chunk(self, first: int) -> Callable[[int, np.ndarray, dict[str, np.ndarray]], None]:
        """The hook for one chunk of episodes, whose row ids count from episode ``first``."""
        self.first = first
        return self.record

    def record(self, t: int, mask: np.ndarray, state: dict[str, np.ndarray]) -> None:
        """Keep step ``t`` of the rows of ``mask`` (the engine's hook).

        Args:
            t: The step number (1-based).
            mask: The rows that made this step's Reflect.
            state: Full-width arrays, one per name of ``_KEPT`` (``key``: the action's,
                ``TaskTwin.action_key``) and of ``_FLAGS`` (``exhausted``: the plan's).
        """
        rows = np.flatnonzero(mask)
        k = rows.size
        if not k:
            return
        flags = np.zeros(len(mask), np.uint16)
        for bit, name in enumerate(_FLAGS):
            flags |= np.asarray(state[name], np.uint16) << bit
        values = {name: state[name] for name in _KEPT} | {"flags": flags}
        block = self.blocks[-1] if self.blocks else None
        if (
            block is None
            or self.used + k > len(block["flags"])
            or any(block[name].dtype != v.dtype for name, v in values.items())
        ):
            size = max(k, min(_BLOCK, 8 * k))  # a small run's blocks stay small
            block = {name: np.empty(size, v.dtype) for name, v in values.items()}
            self.blocks.append(block)
            self.used = 0
        at = self.used
        for name, v in values.items():  # gathered straight into the block: no copy between
            np.take(v, rows, out=block[name][at : at + k], mode="clip")
        block["episode"][at : at + k] += self.first
        self.pieces.append((len(self.blocks) - 1, at, k, t))
        self.used += k

    def step_table(self, spec: ExperimentSpec, controller: int) -> pa.Table:
        """The kept steps as ``StepRow`` columns, episode by episode, step by step.

        Args:
            spec: The spec the steps ran from.
            controller: The controller's index in ``spec.controller_list()``.

        Returns:
            One row per recorded step (the fields a batch step has, in the schema's order).
        """
        blocks, pieces = self.blocks, self.pieces
        self.blocks, self.pieces, self.used = [], [], 0
        # the SimPy file's order: each episode's steps 1..k together (a counting sort: the
        # steps were kept step by step, so an episode's k-th row is its step k); each
        # piece is scattered to its rows, never concatenated first, and each column's
        # blocks are let go once scattered (the memory the next column is made in)
        ids = [blocks[b]["episode"][at : at + k] for b, at, k, _ in pieces]
        first = min((int(i.min()) for i in ids), default=0)
        last = max((int(i.max()) for i in ids), default=first - 1)
        counts = np.zeros(last - first + 1, np.int64)
        for i in ids:
            counts += np.bincount(i - first, minlength=len(counts))
        n = int(counts.sum())
        starts = np.zeros(len(counts), np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        where = [starts[i - first] + (t - 1) for i, (_, _, _, t) in zip(ids, pieces, strict=True)]
        del ids
        for block in blocks:
            del block["episode"]
        raw: dict[str, np.ndarray] = {
            "episode": np.repeat(np.arange(first, last + 1, dtype=np.int64), counts),
            "step": (np.arange(n) - np.repeat(starts, counts) + 1).astype(np.int32),
        }
        for name in (*_KEPT[1:], "flags"):  # ``_KEPT[0]``, the episode: ``raw`` has it
            kinds = [block[name].dtype for block in blocks]
            out = np.empty(n, np.result_type(*kinds) if kinds else _EMPTY.get(name, np.float64))
            for (b, at, k, _), rows in zip(pieces, where, strict=True):
                out[rows] = blocks[b][name][at : at + k]
            for block in blocks:
                del block[name]
            raw[name] = out
        return required(pa.table(self._columns(spec, controller, raw, raw["episode"])), _STEP_NULLS)

    def _columns(
        self,
        spec: ExperimentSpec,
        controller: int,
        raw: dict[str, np.ndarray],
        episode: np.ndarray,
    ) -> dict[str, Any]:
        n = len(episode)
        bits = {name: (raw["flags"] & (1 << k)) != 0 for k, name in enumerate(_FLAGS)}
        valid = bits["valid"]
        invalid = ~valid
        ok = bits["ok"] & valid
        # the tool's error kind (SimTask.execute; a delivered call the task refused: rejected),
        # -1 for none: the first that holds of invalid, timeout, not delivered, not ok
        error_code = np.full(n, -1, np.int8)
        np.copyto(error_code, 3, where=~ok)
        np.copyto(error_code, 2, where=~bits["delivered"])
        np.copyto(error_code, 1, where=bits["timeout"])
        np.copyto(error_code, 0, where=invalid)
        # each distinct action key once (small integers: mapped without a sort); an invalid
        # output's key (-1 here) is never read
        key = raw["key"]
        np.copyto(key, -1, where=invalid)  # ``raw`` is this table's own: changed in place
        key += 1
        present = np.flatnonzero(np.bincount(key)) if n else np.zeros(0, np.int64)
        labels = [self.label(k - 1) if k else ("", "") for k in present.tolist()]
        # one dictionary entry per text (two keys may share a label or a tool):
        # Parquet writes a dictionary with repeated entries as plain text
        names = list(dict.fromkeys(label for label, _ in labels))
        tool_names = list(dict.fromkeys(tool for _, tool in labels))
        name_of = np.zeros(int(present[-1]) + 1 if present.size else 1, np.int32)
        tool_of = name_of.copy()
        name_of[present] = [names.index(label) for label, _ in labels]
        tool_of[present] = [tool_names.index(tool) for _, tool in labels]
        productive = bits["productive"]
        critique_code = np.maximum(error_code, 0).astype(np.int32)
        critique_code += 2
        np.copyto(critique_code, 1, where=ok)
        np.copyto(critique_code, 0, where=ok & productive)
        missing = raw["delta_task"] < 0.999
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(missing, out=offsets[1:])
        zeros = np.zeros(max(n, int(offsets[-1])), np.int32)  # the codes of one-text columns
        missing_values = _codes(zeros[: offsets[-1]], [MISSING])
        give_up = bits["give_up"]
        progress = np.asarray(raw["progress"], np.float64)
        latency = raw["latency"]
        np.copyto(latency, 0.0, where=invalid)
        ones = np.ones(n, np.int32)
        plan_id = raw["replans"] + ones  # a new plan with each REPLAN
        return {
            "episode": pa.array(episode),
            "agent": _one(zeros[:n], "simulated"),
            "controller": _one(zeros[:n], spec.controller_list()[controller].name),
            "step": pa.array(raw["step"]),
            "time": pa.array(np.asarray(raw["time"], np.float64)),
            "visible_progress": pa.array(np.asarray(raw["visible_progress"], np.float64)),
            "plan_id": pa.array(plan_id),
            "plan_quality": pa.array(np.asarray(raw["plan_quality"], np.float64)),
            "effective_quality": pa.array(np.asarray(raw["effective_quality"], np.float64)),
            "action": _codes(name_of[key], names, invalid),
            "tool": _codes(tool_of[key], tool_names, invalid),
            "expert": pa.array(bits["expert"] & valid),
            "ok": pa.array(ok),
            "latency": pa.array(np.asarray(latency, np.float64)),
            "tool_error": _codes(
                np.maximum(error_code, 0),
                ["invalid_format", "timeout", "failure", "rejected"],
                error_code < 0,
            ),
            "delta_task": pa.array(np.asarray(raw["delta_task"], np.float64)),
            "delta_act": pa.array(np.asarray(raw["delta_act"], np.float64)),
            "delta_plan": pa.array(np.asarray(raw["delta_plan"], np.float64)),
            "confidence": pa.array(np.asarray(raw["confidence"], np.float64)),
            "missing": pa.ListArray.from_arrays(pa.array(offsets), missing_values),
            "critique": _codes(
                critique_code,
                [
                    "progress",
                    "no progress",
                    "failed: invalid_format",
                    "failed: timeout",
                    "failed: failure",
                    "failed: rejected",
                ],
            ),
            "signal": _codes(raw["signal"], list(SIGNALS)),
            "give_up": pa.array(give_up),
            "progress": pa.array(progress),
            "complete": pa.array(progress >= 1.0),
            "feasible": pa.array(bits["feasible"]),
            "plan_age": pa.array(raw["plan_age"]),
            "plan_exhausted": pa.array(bits["exhausted"]),
            "replans": pa.array(raw["replans"]),
            "tokens": pa.array(raw["tokens"]),
            "context_tokens": pa.array(raw["context_tokens"]),
            "error": _codes(zeros[:n], ["invalid_format"], valid),
            "attempt": pa.array(ones),
        }
