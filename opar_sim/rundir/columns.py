"""steps.jsonl and episodes.jsonl read once into columns, for the array analysis.

``iter_traces`` streams one episode at a time as a few arrays; the run
analysis and the figures instead want every episode side by side.
``read_step_columns`` parses steps.jsonl once (one ``orjson.loads`` per line,
the per-step fields the analysis uses gathered into flat columns) and groups
the rows into the same agent blocks as ``iter_traces``: block ``b`` holds rows
``offsets[b]:offsets[b + 1]``.  Text columns (signal, action) are stored as
integer codes into a vocabulary, so a 100,000-episode run costs numbers, not
strings; the controller's ``terms`` are not kept (they are dicts of floats,
the largest part of a row), but re-read for the few blocks that need them
(the traces a figure draws), from the byte offset of each row's line.

The columns are checked like ``rows`` checks the fields they come from; a
file that fails the check (or holds anything unusual: a line that is not an
object, an imported record without simulated time) is read again through
``iter_traces``, which raises the ``RunDirError`` naming the file, line and
field, or builds the same columns the slow way.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from opar_sim.rundir.columnar import (
    EPISODES_PARQUET,
    has_parquet,
    iter_table_rows,
    read_table,
    step_arrays,
)
from opar_sim.rundir.files import EPISODES_FILE, STEPS_FILE, STEPS_PARQUET, RunDirError, read_blocks
from opar_sim.rundir.readers import iter_episodes
from opar_sim.rundir.schema import EPISODE_CHECKS, range_problem, value_range
from opar_sim.rundir.schema import type_ok as _type_ok
from opar_sim.rundir.traces import EpisodeTrace, iter_traces

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

_MISSING = object()  # a field absent from a row (distinct from an explicit null)
_CHUNK = 4096  # rows parsed before their fields are gathered (the dicts stay in cache)
_BLOCK_BYTES = 1 << 24  # steps.jsonl is read about 16 MB of whole lines at a time
_FLOAT_COLUMNS = ("time", "progress", "delta_task")  # the others are integers (or codes)
_INT: set[type] = {int}
_NUM: set[type] = {int, float}
_STR: set[type] = {str}
_NONE: set[type] = {type(None)}
_ABSENT: set[type] = {type(_MISSING)}


@dataclass(slots=True)
class StepColumns:
    """The agent blocks of steps.jsonl as flat columns.

    Per block (an episode's own agent, and with ``sub_agents`` its sub-agents):
    ``controller`` (codes into ``controllers``), ``agent`` (its name),
    ``episode``, ``trial``, ``attempt`` and ``offsets`` (rows
    ``offsets[b]:offsets[b + 1]``).  Per row: ``step``, ``time``,
    ``progress``, ``estimate`` (``delta_task``, NaN where the agent made no
    evaluation), ``signal`` and ``action`` (codes into ``signals`` and
    ``actions``; code 0 is None in both) and ``line`` (the byte offset of the
    row's line in steps.jsonl, for ``terms``).
    """

    path: Path
    controllers: list[str]
    controller: IntArray
    agent: list[str]
    episode: IntArray
    trial: IntArray
    attempt: IntArray
    offsets: IntArray
    step: IntArray
    time: FloatArray
    progress: FloatArray
    estimate: FloatArray
    signals: list[str | None]
    signal: IntArray
    actions: list[str | None]
    action: IntArray
    line: IntArray
    block_terms: list[dict[str, FloatArray]] | None = None  # the checked path keeps them

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def key(self, block: int) -> tuple[str, int, int, int]:
        """The episode key (controller, episode, trial, attempt) of ``block``."""
        return (
            self.controllers[int(self.controller[block])],
            int(self.episode[block]),
            int(self.trial[block]),
            int(self.attempt[block]),
        )

    def terms(self, block: int) -> list[dict[str, Any]]:
        """The ``terms`` of each row of ``block``, read again from steps.jsonl.

        A batch run's steps (``steps.parquet``) record no terms: each row's are empty.
        """
        start, stop = int(self.offsets[block]), int(self.offsets[block + 1])
        out: list[dict[str, Any]] = []
        if start < stop and self.line[start] < 0:  # no line to read: a Parquet run's row
            return [{} for _ in range(stop - start)]
        with open(self.path / STEPS_FILE, "rb") as f:
            for at in self.line[start:stop].tolist():
                f.seek(at)
                terms = orjson.loads(f.readline()).get("terms") or {}
                if not _type_ok(terms, "dict"):
                    shown = repr(terms) if len(repr(terms)) <= 40 else repr(terms)[:37] + "..."
                    raise RunDirError(
                        f"{self.path / STEPS_FILE}: the line at byte {at}: field 'terms': "
                        f"expected a table of numbers, got {shown}"
                    )
                out.append(terms)
        return out

    def trace(self, block: int, *, terms: bool = True) -> EpisodeTrace:
        """``block`` as the ``EpisodeTrace`` ``iter_traces`` yields for it.

        Args:
            block: The block.
            terms: Read the controller's terms too (without: ``terms`` is empty,
                and steps.jsonl is not opened).

        Returns:
            The trajectory.
        """
        start, stop = int(self.offsets[block]), int(self.offsets[block + 1])
        if not terms:
            arrays: dict[str, FloatArray] = {}
        elif self.block_terms is not None:
            arrays = {n: v.copy() for n, v in self.block_terms[block].items()}
        else:
            rows = self.terms(block)
            names = sorted({name for t in rows for name in t})
            arrays = {n: np.array([t.get(n, math.nan) for t in rows], float) for n in names}
        controller, episode, trial, attempt = self.key(block)
        return EpisodeTrace(
            controller=controller,
            episode=episode,
            agent=self.agent[block],
            step=self.step[start:stop].copy(),
            time=self.time[start:stop].copy(),
            progress=self.progress[start:stop].copy(),
            estimate=self.estimate[start:stop].copy(),
            signals=[self.signals[c] for c in self.signal[start:stop].tolist()],
            actions=[self.actions[c] for c in self.action[start:stop].tolist()],
            terms=arrays,
            attempt=attempt,
            trial=trial,
        )


class _Unusual(Exception):
    """The fast path met a row it does not vouch for; read the file the checked way."""


_cache: dict[tuple[str, bool], tuple[tuple[int, int, int], StepColumns]] = {}


def read_step_columns(path: Path, *, sub_agents: bool = False) -> StepColumns:
    """steps.jsonl of the run in ``path``, parsed once into columns.

    The last file read is remembered (by its size, modification time and
    inode): a command that draws the run's figures and then analyses it reads
    the file once.

    Args:
        path: The run directory.
        sub_agents: Keep the blocks of sub-agents (a nested run) too, as
            ``iter_traces(path, sub_agents=True)`` does.

    Returns:
        The blocks of ``iter_traces`` as flat columns.

    Raises:
        RunDirError: naming the file, line and field of a malformed row.
    """
    parquet = has_parquet(path, STEPS_PARQUET)
    file = path / (STEPS_PARQUET if parquet else STEPS_FILE)
    try:
        st = file.stat()
    except OSError as exc:
        raise RunDirError(f"{file}: cannot read ({exc.strerror})") from None
    stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
    ident = (str(file.resolve()), sub_agents)
    hit = _cache.get(ident)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    if parquet:  # a batch run: one agent per episode, no terms
        columns = StepColumns(path=path, **step_arrays(path))
    else:
        try:
            columns = _fast(path, sub_agents)
        except _Unusual:
            columns = _from_traces(path, sub_agents)
    _cache.clear()
    _cache[ident] = (stamp, columns)
    return columns


def forget_step_columns() -> None:
    """Drop the remembered step columns (the next ``read_step_columns`` parses the file)."""
    _cache.clear()


def _check(values: list[Any], allowed: set[type]) -> None:
    if not set(map(type, values)) <= allowed:
        raise _Unusual


def _codes(values: list[Any], vocabulary: dict[Any, int]) -> list[int]:
    """The code of each value, new values added to ``vocabulary`` in order of appearance."""
    for v in dict.fromkeys(values):
        vocabulary.setdefault(v, len(vocabulary))
    return list(map(vocabulary.__getitem__, values))


_FIELDS = (
    "episode",
    "step",
    "time",
    "progress",
    "delta_task",
    "attempt",
    "controller",
    "agent",
    "signal",
    "action",
    "trial",
)
_DEFAULTS = {"controller": "", "agent": "", "attempt": None, "delta_task": None, "trial": None}


def _take(row: dict[str, Any]) -> tuple[Any, ...]:
    """A row's fields in ``_FIELDS`` order, absent ones as their defaults (or ``_MISSING``)."""
    return tuple(row.get(k, _DEFAULTS.get(k, _MISSING)) for k in _FIELDS)


def _gather(
    raw_lines: list[bytes],
    pieces: dict[str, list[Any]],
    vocabularies: tuple[dict[Any, int], ...],
) -> None:
    """Parse one block of lines and append its fields to ``pieces`` as arrays (checked)."""
    ctrl, agents, signals, actions = vocabularies
    # rows carry "trial" only when the spec repeats worlds: then one lookup fewer per row
    has_trial = any(b'"trial":' in raw for raw in raw_lines)
    names = _FIELDS if has_trial else _FIELDS[:-1]
    take = operator.itemgetter(*names)
    loads = orjson.loads
    taken: list[tuple[Any, ...]] = []
    try:
        for start in range(0, len(raw_lines), _CHUNK):
            lines_in = raw_lines[start : start + _CHUNK]
            try:  # each row's fields taken while its dict is fresh in the cache
                taken += [take(loads(raw)) for raw in lines_in]
            except KeyError:
                taken += [_take(loads(raw))[: len(names)] for raw in lines_in]
    except (orjson.JSONDecodeError, AttributeError, TypeError):
        raise _Unusual from None
    cols = dict(zip(names, map(list, zip(*taken, strict=True)), strict=True))
    cols.setdefault("trial", [None] * len(raw_lines))
    _check(cols["controller"], _STR)
    for name in ("agent", "signal", "action"):
        _check(cols[name], _STR | _NONE)
    _check(cols["episode"], _INT)
    _check(cols["step"], _INT)
    _check(cols["time"], _NUM)  # an imported record has no time: the checked path says so
    _check(cols["progress"], _NUM)
    _check(cols["delta_task"], _NUM | _NONE)
    _check(cols["attempt"], _INT | _NONE)
    _check(cols["trial"], _INT | _NONE)
    ints = {
        "controller": _codes(cols["controller"], ctrl),
        "agent": _codes([str(v) for v in cols["agent"]], agents),
        "signal": _codes(cols["signal"], signals),
        "action": _codes(cols["action"], actions),
        "episode": cols["episode"],
        "step": cols["step"],
        "trial": [v if isinstance(v, int) and v else 1 for v in cols["trial"]],
        "attempt": [v if isinstance(v, int) and v else 1 for v in cols["attempt"]],
        "length": list(map(len, raw_lines)),
    }
    try:
        for name, values in ints.items():
            pieces[name].append(np.array(values, np.int64))
    except OverflowError:  # a whole number past 64 bits: the checked path names it
        raise _Unusual from None
    pieces["time"].append(np.array(cols["time"], float))
    pieces["progress"].append(np.array(cols["progress"], float))
    pieces["delta_task"].append(
        np.array([math.nan if v is None or v is _MISSING else v for v in cols["delta_task"]], float)
    )


def _fast(path: Path, sub_agents: bool) -> StepColumns:
    # the file is read a block of lines at a time and each block's fields turned into
    # arrays before the next is read: the peak memory is the columns (numbers), not the
    # file's text and a list of its lines (about twice the file: 1 GB for 440,000 steps)
    ctrl: dict[str, int] = {}
    agents: dict[str, int] = {}
    signals: dict[str | None, int] = {None: 0}
    actions: dict[str | None, int] = {None: 0}
    # each column starts with an empty array of its type, so an empty file keeps the types
    pieces: dict[str, list[Any]] = {
        name: [np.zeros(0, float if name in _FLOAT_COLUMNS else np.int64)]
        for name in (*_FIELDS, "length")
    }
    try:  # a torn last line (an interrupted write) is skipped; the manifest checks the rest
        for raw_lines in read_blocks(path / STEPS_FILE, _BLOCK_BYTES):
            _gather(raw_lines, pieces, (ctrl, agents, signals, actions))
    except RunDirError:
        raise _Unusual from None  # the checked path names what is wrong
    cols = {name: np.concatenate(part) for name, part in pieces.items()}
    _in_range(cols)
    lengths = cols["length"]
    lines = np.zeros(len(lengths), np.int64)
    np.cumsum(lengths[:-1], out=lines[1:])
    n = len(lengths)
    episode, trial, attempt = cols["episode"], cols["trial"], cols["attempt"]
    controller, agent = cols["controller"], cols["agent"]
    # a block: a run of rows of one episode key and agent (iter_traces' grouping)
    if n:
        change = np.ones(n, bool)
        change[1:] = (
            (np.diff(controller) != 0)
            | (np.diff(episode) != 0)
            | (np.diff(trial) != 0)
            | (np.diff(attempt) != 0)
            | (np.diff(agent) != 0)
        )
        starts = np.flatnonzero(change)
    else:
        starts = np.zeros(0, np.int64)
    offsets = np.append(starts, n).astype(np.int64)
    if not sub_agents and len(starts) > 1:
        # the first block of an episode key is its own agent; the blocks after it are sub-agents
        s0 = starts
        own = np.ones(len(s0), bool)
        own[1:] = (
            (controller[s0[1:]] != controller[s0[:-1]])
            | (episode[s0[1:]] != episode[s0[:-1]])
            | (trial[s0[1:]] != trial[s0[:-1]])
            | (attempt[s0[1:]] != attempt[s0[:-1]])
        )
        keep_rows = np.repeat(own, np.diff(offsets))
        kept = np.flatnonzero(own)
        lengths = np.diff(offsets)[kept]
        offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        block_rows = starts[kept]
        row_index = np.flatnonzero(keep_rows)
    else:
        block_rows = starts
        row_index = np.arange(n)
    agent_names = list(agents)
    return StepColumns(
        path=path,
        controllers=list(ctrl),
        controller=controller[block_rows],
        agent=[agent_names[int(c)] for c in agent[block_rows].tolist()],
        episode=episode[block_rows],
        trial=trial[block_rows],
        attempt=attempt[block_rows],
        offsets=offsets,
        step=cols["step"][row_index],
        time=cols["time"][row_index],
        progress=cols["progress"][row_index],
        estimate=cols["delta_task"][row_index],
        signals=list(signals),
        signal=cols["signal"][row_index],
        actions=list(actions),
        action=cols["action"][row_index],
        line=lines[row_index],
    )


def _in_range(cols: dict[str, Any]) -> None:
    """The step columns' numbers within their fields' ranges (else the checked path names one)."""
    for name in ("episode", "step", "time", "progress", "trial", "attempt", "delta_task"):
        values = cols[name][~np.isnan(cols[name])] if name == "delta_task" else cols[name]
        lo, hi = value_range(name, "num" if name in _FLOAT_COLUMNS else "int")
        if len(values) and not (lo <= values.min() and values.max() <= hi):  # NaN: refused
            raise _Unusual


def _from_traces(path: Path, sub_agents: bool) -> StepColumns:
    """The same columns built from ``iter_traces`` (the checked path: it raises on bad rows)."""
    traces = list(iter_traces(path, sub_agents=sub_agents))
    ctrl: dict[str, int] = {}
    signals: dict[str | None, int] = {None: 0}
    actions: dict[str | None, int] = {None: 0}
    controller = _codes([t.controller for t in traces], ctrl)
    signal = _codes([s for t in traces for s in t.signals], signals)
    action = _codes([a for t in traces for a in t.actions], actions)
    offsets = np.concatenate(([0], np.cumsum([len(t) for t in traces]))).astype(np.int64)

    def cat(arrays: list[Any], dtype: Any) -> Any:
        return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype)

    return StepColumns(
        path=path,
        controllers=list(ctrl),
        controller=np.array(controller, np.int64),
        agent=[t.agent for t in traces],
        episode=np.array([t.episode for t in traces], np.int64),
        trial=np.array([t.trial for t in traces], np.int64),
        attempt=np.array([t.attempt for t in traces], np.int64),
        offsets=offsets,
        step=cat([t.step for t in traces], np.int64),
        time=cat([t.time for t in traces], float),
        progress=cat([t.progress for t in traces], float),
        estimate=cat([t.estimate for t in traces], float),
        signals=list(signals),
        signal=np.array(signal, np.int64),
        actions=list(actions),
        action=np.array(action, np.int64),
        line=np.full(int(offsets[-1]), -1, np.int64),
        block_terms=[t.terms for t in traces],
    )


def read_episode_rows(path: Path, fields: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The rows of episodes.jsonl, in file order, with only ``fields`` (one parse per line).

    The kept fields and the required ones are checked as ``iter_episodes``
    checks them; a file that fails (or is not plainly well-formed) is read
    through ``iter_episodes``, which raises the error naming line and field.

    Args:
        path: The run directory.
        fields: The fields to keep of each row (absent ones stay absent).

    Returns:
        An iterator over the slim rows.
    """
    keep = tuple(fields)
    if has_parquet(path, EPISODES_PARQUET):  # a batch run: its episodes as columns
        table = read_table(path, EPISODES_PARQUET)
        table = table.select([k for k in keep if k in table.column_names])
        return iter_table_rows(table)
    try:
        rows = _fast_episodes(path, keep)
    except _Unusual:
        rows = [{k: r[k] for k in keep if k in r} for r in iter_episodes(path)]
    return iter(rows)


def _fast_episodes(path: Path, keep: tuple[str, ...]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    try:  # a block of lines at a time, slimmed before the next: never all the full rows
        for raw_lines in read_blocks(path / EPISODES_FILE, _BLOCK_BYTES):
            rows += _slim_episodes(raw_lines, keep)
    except (OSError, RunDirError):
        raise _Unusual from None  # iter_episodes names the file
    return rows


def _slim_episodes(raw_lines: list[bytes], keep: tuple[str, ...]) -> list[dict[str, Any]]:
    """One block of episodes.jsonl lines parsed, checked and cut to ``keep``."""
    try:
        parsed = [orjson.loads(raw) for raw in raw_lines]
    except orjson.JSONDecodeError:
        raise _Unusual from None
    if not all(type(r) is dict for r in parsed):
        raise _Unusual
    for name, (kind, required) in EPISODE_CHECKS.items():
        if name not in keep and not required:
            continue
        values = [r.get(name, _MISSING) for r in parsed]
        base = kind.rstrip("?")
        kinds = set(map(type, values))
        if not required:
            kinds -= _ABSENT
        if kind.endswith("?"):
            kinds -= _NONE
        if not all(_type_ok(_sample(values, k), base) for k in kinds):
            raise _Unusual
        if base in ("int", "num") and any(
            range_problem(name, base, v) is not None for v in values if v is not _MISSING
        ):
            raise _Unusual
    return [{k: r[k] for k in keep if k in r} for r in parsed]


def _sample(values: list[Any], kind: type) -> Any:
    return next(v for v in values if type(v) is kind)
