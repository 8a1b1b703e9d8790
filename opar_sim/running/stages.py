"""How a long protocol reports its progress without drawing it: stages and notes.

A study (or a fit) that runs for a while takes two optional hooks, and the command line
passes ones that draw:

* ``stage(label, total)``: a context manager around one stage of the work, yielding an
  ``advance(n)`` to call as ``n`` more of its ``total`` units finish (``total`` None: a
  stage of unknown length, e.g. a fit).  The command line shows a progress bar (or a
  spinner); the default, ``no_stage``, shows nothing.
* ``note(line)``: one line of text the protocol reports as it goes (a measured value the
  user wants before the long stage that follows); the default drops it.

Nothing here imports rich: the protocol stays callable from a notebook or a test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

Advance = Callable[[int], None]
"""Called with how many more units of the stage finished."""

Stage = Callable[[str, int | None], AbstractContextManager[Advance]]
"""``stage(label, total)``: a context manager around one stage, yielding its ``Advance``."""

Note = Callable[[str], None]
"""Called with one line the protocol reports as it goes."""


def _ignore(_n: int) -> None:
    return None


@contextmanager
def no_stage(_label: str, _total: int | None) -> Iterator[Advance]:
    """The default stage: shows nothing."""
    yield _ignore


def no_note(_line: str) -> None:
    """The default note: drops the line."""
    return None


__all__ = ["Advance", "Note", "Stage", "no_note", "no_stage"]
