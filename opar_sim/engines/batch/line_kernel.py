"""The row loop that writes a batch of ``episodes.jsonl`` lines, compiled by Numba.

``lines.episode_lines`` turns every field of a block of episodes into one of two kinds
of hole, and this loop writes each line as the template's texts with the holes filled:
an integer hole is written in decimal (``str(int)``; ``NULL`` stands for JSON's
``null``), a text hole is a code into a vocabulary of bytes already written as JSON
(texts, booleans, and floats: orjson's form of each float, a vocabulary of one entry per
row).  Compiled once per machine (``cache=True``), as the twins' kernels.
"""

from __future__ import annotations

import numpy as np
from numba import njit

NULL = np.iinfo(np.int64).min  # an integer hole's value written as ``null``
INT, TEXT = 0, 1  # the kinds of hole


@njit(cache=True, nogil=True)
def write_lines(
    out: np.ndarray,
    pieces: np.ndarray,
    piece_ends: np.ndarray,
    kinds: np.ndarray,
    ints: np.ndarray,
    codes: np.ndarray,
    words: np.ndarray,
    word_ends: np.ndarray,
    first: int,
    last: int,
) -> int:
    """Write the lines of rows ``first``..``last - 1`` from the start of ``out``.

    Args:
        out: Room for the lines (uint8, at least their length).
        pieces: The template's texts, one after another (uint8).
        piece_ends: Where each of them ends in ``pieces`` (one more than the holes).
        kinds: Each hole's kind (``INT``, ``TEXT``), in line order.
        ints: The integer holes' values, a row per hole of ``INT`` kind, in order.
        codes: The text holes' codes into ``words``, a row per hole of ``TEXT`` kind.
        words: Every vocabulary's entries, one after another (uint8).
        word_ends: Where each entry ends in ``words`` (entry k starts at ``word_ends[k-1]``).
        first: The first row.
        last: One past the last row.

    Returns:
        The bytes written.
    """
    digits = np.empty(20, np.uint8)
    ten = np.uint64(10)
    at = 0
    for i in range(first, last):
        start = 0
        next_int = 0
        next_text = 0
        for h in range(piece_ends.size):
            end = piece_ends[h]
            for j in range(start, end):
                out[at] = pieces[j]
                at += 1
            start = end
            if h == kinds.size:
                break
            if kinds[h] == INT:
                v = ints[next_int, i]
                next_int += 1
                if v == NULL:
                    out[at] = 110  # n
                    out[at + 1] = 117  # u
                    out[at + 2] = 108  # l
                    out[at + 3] = 108  # l
                    at += 4
                    continue
                if v < 0:
                    out[at] = 45  # -
                    at += 1
                u = np.uint64(-v if v < 0 else v)
                k = 0
                while True:
                    q = u // ten
                    digits[k] = 48 + (u - q * ten)
                    u = q
                    k += 1
                    if u == 0:
                        break
                for j in range(k - 1, -1, -1):
                    out[at] = digits[j]
                    at += 1
            else:
                c = codes[next_text, i]
                next_text += 1
                first = word_ends[c - 1] if c > 0 else 0
                for j in range(first, word_ends[c]):
                    out[at] = words[j]
                    at += 1
    return at
