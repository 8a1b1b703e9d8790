"""A batch's text columns as codes into their distinct texts, in order of first appearance.

The outcome and the final answer of N episodes are made and encoded once per distinct
value, not once per episode: an answer is worded (the twin's ``answers``) once for each
distinct combination of its fields (``BatchEpisodes.answer_fields``), and the codes come
from Arrow's hashing (``dictionary_encode``), whose dictionary keeps first appearances in
order: the order ``list(dict.fromkeys(texts))`` gives, which ``episodes.parquet``'s
dictionaries keep.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from opar_sim.engines.batch.engine import BatchEpisodes

Coded = tuple[np.ndarray, list[Any]]
"""Codes (int64, one per row) into the distinct values, in order of first appearance."""


def coded(values: Sequence[Any] | np.ndarray | pa.Array) -> Coded:
    """``values`` as codes into their distinct values, in order of first appearance.

    Args:
        values: Texts (a list, or an object array), numbers (a numpy array) or an arrow
            array.

    Returns:
        The codes and the distinct values (as Python objects).
    """
    array = values if isinstance(values, pa.Array) else pa.array(values)
    encoded = pc.dictionary_encode(array)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, encoded.dictionary.to_pylist()


def first_rows(codes: np.ndarray) -> np.ndarray:
    """The row where each code first appears (codes numbered in order of first appearance)."""
    if not len(codes):
        return np.zeros(0, np.int64)
    high = np.maximum.accumulate(codes)
    new = np.ones(len(codes), bool)
    new[1:] = high[1:] > high[:-1]
    return np.flatnonzero(new)


def combinations(fields: Sequence[np.ndarray], n: int) -> np.ndarray:
    """Codes of the distinct combinations of ``fields`` (row by row), first appearance first.

    Each row's values are compared by their bytes, side by side (one hashing of n keys; a
    float's -0.0 is not 0.0, as their texts differ).
    """
    columns = [np.ascontiguousarray(values).reshape(n, -1).view(np.uint8) for values in fields]
    width = sum(c.shape[1] for c in columns)
    if not width:
        return np.zeros(n, np.int64)
    keys = np.empty((n, width), np.uint8)
    at = 0
    for column in columns:
        keys[:, at : at + column.shape[1]] = column
        at += column.shape[1]
    array = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), n, [None, pa.py_buffer(keys)])
    return coded(array)[0]


def answer_codes(result: BatchEpisodes) -> Coded:
    """Each episode's final answer (``BatchEpisodes.answers``), as codes into the answers.

    Worded once per distinct combination of its fields (the wording depends on them only).
    """
    n = len(result.status)
    fields = result.answer_fields
    if result.words is None or not n or any(v.dtype == object for v in fields.values()):
        return coded(result.answers())
    combination = combinations(list(fields.values()), n)
    rows = first_rows(combination)
    words = result.words.answers({name: values[rows] for name, values in fields.items()})
    codes, answers = coded(words)
    return codes[combination], answers


def outcome_codes(result: BatchEpisodes) -> Coded:
    """Each episode's outcome label (``BatchEpisodes.judged``), as codes into the labels."""
    return coded(result.judged())
