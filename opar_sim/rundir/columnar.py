"""A batch run's rows in Apache Parquet: ``steps.parquet`` and ``episodes.parquet``.

A large batch-engine run writes its steps as columns (docs/design.md §6: the same
field names as ``steps.jsonl``), which pandas, polars and DuckDB read directly;
its episodes are in ``episodes.jsonl`` (the contract) and, as columns, in
``episodes.parquet``.  Each file is written whole, once the run's engine is done
(``write_table``), through ``files.write_bytes``, and the manifest records its size and
SHA-256 (``manifest.whole_line``); ``read_table`` checks both before a byte is parsed,
so a damaged, cut or appended file is named, never read.

Readers never open these files themselves: ``readers``, ``columns`` and ``traces``
choose between the JSONL and the Parquet form of a run (``has_parquet``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from opar_sim.rundir.files import STEPS_PARQUET, RunDirError, read_input, write_stream
from opar_sim.rundir.manifest import MANIFEST_FILE, ManifestError, read_whole, sha256
from opar_sim.rundir.schema import value_range

EPISODES_PARQUET = "episodes.parquet"
PARQUET_FILES = (STEPS_PARQUET, EPISODES_PARQUET)
# measured on 1.1 M flight_booking steps (docs/benchmarks.md): snappy with the integers
# delta-encoded writes the smallest file of the cheap ones (68 MB, 0.30 µs/step); no
# compression costs 0.05 µs/step less for a file 43 % larger, zstd twice as much for 61 MB
_COMPRESSION = "snappy"
# ... but not on the columns it shrinks by less than a fifth (a draw per step, the tokens,
# the texts' dictionary codes): 0.05 µs/step less for a steps.parquet 6 % larger
_UNCOMPRESSED = (
    *("time", "latency", "delta_task", "delta_act", "delta_plan", "confidence"),
    *("tokens", "context_tokens", "prompt_tokens", "completion_tokens", "sim_seconds"),
    *("action", "tool", "critique", "signal", "tool_error"),
)
_INTEGER_ENCODING = "DELTA_BINARY_PACKED"  # episode, step, counters: small differences
_BATCH = 1 << 16  # values handed to an encoder at a time (1,024 by default: a call each)


def has_parquet(path: Path, name: str) -> bool:
    """Whether the run in ``path`` holds ``name`` (a Parquet file of ``PARQUET_FILES``)."""
    file = path / name
    return file.exists() or file.is_symlink()


class _Hashed:
    """A binary file that hashes what is written to it (SHA-256), for the manifest."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f, self.hasher, self.size = f, hashlib.sha256(), 0

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self.hasher.update(view)
        self.size += view.nbytes
        return self.f.write(view)

    def flush(self) -> None:
        self.f.flush()

    @property
    def closed(self) -> bool:
        return self.f.closed


def encode(tables: Sequence[pa.Table], sink: Any) -> None:
    """Write ``tables`` (one row group each, one schema) as Parquet to ``sink``.

    Args:
        tables: Tables of one schema (one per controller of a run).
        sink: A binary file (or a pyarrow output stream).
    """
    schema = tables[0].schema
    with pq.ParquetWriter(
        sink,
        schema,
        compression={name: _compression(name) for name in _leaf_columns(schema)},
        use_dictionary=_dictionary_columns(schema),
        column_encoding=dict.fromkeys(
            [f.name for f in schema if pa.types.is_integer(f.type)], _INTEGER_ENCODING
        )
        or None,
        write_statistics=False,
        write_batch_size=_BATCH,
        store_schema=True,
    ) as writer:
        for table in tables:
            writer.write_table(table.cast(schema), row_group_size=max(1, table.num_rows))


def required(table: pa.Table, nullable: Sequence[str] = ()) -> pa.Table:
    """``table`` with every field but ``nullable`` declared never null (Parquet ``required``).

    A required column is written with no definition levels: about a sixth less CPU for
    ``steps.parquet`` (0.26 -> 0.22 µs a step, docs/batch.md), and readers see the same values.

    Args:
        table: Columns (a list's values are declared never null too).
        nullable: The fields that may hold nulls (the rest must not: the cast checks).

    Returns:
        The same columns under that schema (no value is copied).
    """
    fields = []
    for f in table.schema:
        kind = f.type
        if pa.types.is_list(kind):
            kind = pa.list_(pa.field(kind.value_field.name, kind.value_type, nullable=False))
        fields.append(pa.field(f.name, kind, nullable=f.name in nullable))
    return table.cast(pa.schema(fields))


def _compression(column: str) -> str:
    """The codec of a Parquet column (``_UNCOMPRESSED``: none)."""
    return "none" if column in _UNCOMPRESSED else _COMPRESSION


def _leaf_columns(schema: pa.Schema) -> list[str]:
    """The Parquet columns of ``schema``'s fields (a list's values: ``name.list.element``)."""
    return [f"{f.name}.list.element" if pa.types.is_list(f.type) else f.name for f in schema]


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """The Parquet columns written with dictionary pages: the texts (already encoded).

    A list's values are the column ``name.list.element`` (its name alone matches nothing:
    ``missing``'s texts were written plain, one copy of each a row).  Tried on a column of
    numbers, a dictionary costs its hashing and is then given up.
    """
    found = [f.name for f in schema if pa.types.is_dictionary(f.type)]
    return found + [f"{f.name}.list.element" for f in schema if pa.types.is_list(f.type)]


def write_table(out: Path, name: str, tables: Sequence[pa.Table]) -> tuple[int, str]:
    """Write ``tables`` as the Parquet file ``name`` of the run in ``out``.

    Written straight to the file (``files.write_stream``), hashed as it goes.

    Args:
        out: The run directory.
        name: One of ``PARQUET_FILES``.
        tables: Its rows, a table per controller.

    Returns:
        The file's size and SHA-256 (the manifest's record of it).
    """
    found: list[_Hashed] = []

    def write(f: IO[bytes]) -> None:
        found.append(_Hashed(f))
        encode(tables, found[0])

    write_stream(out / name, write, inside=out)
    return found[0].size, found[0].hasher.hexdigest()


def read_table(path: Path, name: str, columns: Sequence[str] | None = None) -> pa.Table:
    """The Parquet file ``name`` of the run in ``path``, checked against its manifest.

    Args:
        path: The run directory.
        name: One of ``PARQUET_FILES``.
        columns: The columns to read (None: every one).

    Returns:
        The table (dictionary-encoded texts stay encoded).

    Raises:
        RunDirError: naming the file: missing from the manifest, a size or checksum that
            differs from what it records, or not a Parquet file.
    """
    file = path / name
    data = read_input(file)
    manifest = path / MANIFEST_FILE
    if manifest.exists() or manifest.is_symlink():
        try:
            recorded = read_whole(read_input(manifest), manifest).get(name)
        except ManifestError as exc:
            raise RunDirError(str(exc)) from None
        if recorded is None:
            raise RunDirError(f"{file}: its manifest does not record it: not written by this run")
        size, digest = recorded
        if len(data) != size:
            what = "cut after the run was written" if len(data) < size else "appended to"
            raise RunDirError(f"{file}: {len(data):,} bytes, its manifest records {size:,}: {what}")
        if sha256(data) != digest:
            raise RunDirError(f"{file}: does not match its manifest: edited after the run")
    try:
        return pq.read_table(pa.BufferReader(data), columns=list(columns) if columns else None)
    except (pa.ArrowException, OSError, ValueError, KeyError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RunDirError(f"{file}: not a readable Parquet file ({first[:160]})") from None


def iter_table_rows(table: pa.Table, batch: int = 65_536) -> Iterator[dict[str, Any]]:
    """The rows of ``table`` as the dicts a JSON line parses to (nulls kept, order kept).

    Args:
        table: A table ``read_table`` returned.
        batch: Rows converted at a time (the memory of one batch of dicts).

    Returns:
        An iterator over the rows, in file order.
    """
    names = table.column_names
    for piece in table.to_batches(max_chunksize=batch):
        columns = [python_list(column) for column in piece.columns]  # column by column
        yield from (dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True))


def python_list(column: Any) -> list[Any]:
    """An arrow column's values as Python objects, as ``to_pylist`` gives them, faster.

    Numbers and booleans without nulls go through numpy; texts through their dictionary
    (each text made once); anything else through ``to_pylist``.
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    kind = column.type
    if pa.types.is_dictionary(kind):
        words = [*column.dictionary.to_pylist(), None]  # a null's index, -1, names None
        indices = column.indices.fill_null(-1).to_numpy(zero_copy_only=False)
        return [words[i] for i in indices.tolist()]
    if column.null_count == 0 and (
        pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
    ):
        values: list[Any] = column.to_numpy(zero_copy_only=False).tolist()
        return values
    found: list[Any] = column.to_pylist()
    return found


def first_episodes(table: pa.Table, limit: int) -> pa.Table:
    """The rows of ``table`` of each controller's first ``limit`` episodes, in file order.

    Args:
        table: Step rows (with ``controller`` and ``episode``).
        limit: Episodes kept per controller, by their first appearance.

    Returns:
        The rows kept.
    """
    _, controller = _dictionary(table.unify_dictionaries(), "controller")
    episode = table.column("episode").to_numpy()
    keep = np.zeros(len(episode), bool)
    for code in np.unique(controller).tolist():
        rows = np.flatnonzero(controller == code)
        _, first = np.unique(episode[rows], return_index=True)
        chosen = episode[rows][np.sort(first)[:limit]]
        keep[rows[np.isin(episode[rows], chosen)]] = True
    return table.filter(pa.array(keep))


def _dictionary(table: pa.Table, name: str) -> tuple[list[Any], np.ndarray]:
    """A text column as (its vocabulary, with None first; codes into it, 0 for null)."""
    column = table.column(name).combine_chunks()
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    codes = column.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64) + 1
    return [None, *column.dictionary.to_pylist()], codes


_NUMBERS = {"episode": int, "step": int, "time": float, "progress": float, "delta_task": float}


def step_arrays(path: Path) -> dict[str, Any]:
    """``table_step_arrays`` of the run's ``steps.parquet`` (checked against its manifest).

    Raises:
        RunDirError: naming the file (what ``read_table`` or ``table_step_arrays`` finds).
    """
    texts = ("controller", "agent", "signal", "action")
    table = read_table(path, STEPS_PARQUET, (*_NUMBERS, *texts))
    return table_step_arrays(table, path / STEPS_PARQUET)


def table_step_arrays(table: pa.Table, file: Path) -> dict[str, Any]:
    """What the analysis and the figures read of ``steps.parquet``, as numpy arrays.

    Args:
        table: Step rows (a batch run's, in its file's order).
        file: Where they are from, for messages.

    Returns:
        The fields of ``columns.StepColumns`` but its path: per episode (a block)
        ``controller`` (codes into ``controllers``), ``agent``, ``episode``, ``trial``,
        ``attempt`` and ``offsets``; per row ``step``, ``time``, ``progress``,
        ``estimate`` (NaN where null) and the codes ``signal`` and ``action`` (into
        ``signals`` and ``actions``, whose code 0 is None).

    Raises:
        RunDirError: naming the file: a null or an out-of-range number where the
            readers compute with one (or what ``read_table`` finds).
    """
    texts = ("controller", "agent", "signal", "action")
    table = table.select([*_NUMBERS, *texts]).unify_dictionaries()
    cols: dict[str, Any] = {}
    for name, kind in _NUMBERS.items():
        column = table.column(name)
        if name != "delta_task" and column.null_count:
            raise RunDirError(f"{file}: field {name!r}: null where a number must be")
        values = column.to_numpy().astype(kind)
        finite = values[~np.isnan(values)] if name == "delta_task" else values
        lo, hi = value_range(name, "int" if kind is int else "num")
        if len(finite) and not (lo <= finite.min() and finite.max() <= hi):  # NaN: refused
            raise RunDirError(f"{file}: field {name!r}: a value out of range ({lo} to {hi})")
        cols[name] = values
    for name in texts:
        vocabulary, codes = _dictionary(table, name)
        cols[f"{name}s"], cols[name] = vocabulary, codes
    if cols["controller"].size and cols["controller"].min() == 0:
        raise RunDirError(f"{file}: field 'controller': null where a name must be")
    controller = cols["controller"] - 1  # controllers have no None
    episode, n = cols["episode"], len(cols["step"])
    change = np.ones(n, bool)
    change[1:] = (np.diff(controller) != 0) | (np.diff(episode) != 0)
    starts = np.flatnonzero(change)
    return {  # ``columns.StepColumns``' fields (one block per episode: no sub-agents)
        "controllers": [str(c) for c in cols["controllers"][1:]],
        "controller": controller[starts],
        "agent": [str(cols["agents"][c]) for c in cols["agent"][starts].tolist()],
        "episode": episode[starts],
        "trial": np.ones(len(starts), np.int64),
        "attempt": np.ones(len(starts), np.int64),
        "offsets": np.append(starts, n).astype(np.int64),
        "step": cols["step"],
        "time": cols["time"],
        "progress": cols["progress"],
        "estimate": cols["delta_task"],
        "signals": cols["signals"],
        "signal": cols["signal"],
        "actions": cols["actions"],
        "action": cols["action"],
        "line": np.full(n, -1, np.int64),  # no line to read terms from (none are recorded)
    }


def episode_columns(path: Path, fields: Sequence[str]) -> dict[str, list[Any]]:
    """Columns of a batch run's ``episodes.parquet``, as lists (what a summary adds up).

    Args:
        path: The run directory.
        fields: The columns wanted (those the file lacks are left out).

    Returns:
        Field -> its values in file order.
    """
    return table_columns([read_table(path, EPISODES_PARQUET)], fields)


def table_columns(tables: Sequence[pa.Table], fields: Sequence[str]) -> dict[str, list[Any]]:
    """Columns of tables of one schema, one after another, as lists (``episode_columns``).

    Args:
        tables: The tables, in row order (a batch run's, before they are written).
        fields: The columns wanted (those the tables lack are left out).

    Returns:
        Field -> its values in row order.
    """
    names = tables[0].column_names if tables else []
    columns: dict[str, list[Any]] = {}
    for name in fields:
        if name in names:
            columns[name] = []
            for table in tables:
                columns[name] += python_list(table.column(name))
    return columns
