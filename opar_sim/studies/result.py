"""What every study returns, and what every study takes.

A study is one protocol as a function ``study(spec, budget, executor) -> Result``: ``spec``
the experiment spec (or specs) it runs, ``budget`` a frozen dataclass of the episodes and
trials it may spend (each study names its own, with defaults), ``executor`` where its
episodes run (an ``ExecutorConfig``: serial, a process pool or Dask).  Its result answers
``table()`` (a ``TextTable``: the command line renders it, a notebook prints it) and
``to_dict()`` (plain JSON-able data: what the command writes to disk).  ``opar_sim.api``
re-exports every study, so a notebook runs one as the command line does.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from opar_sim.measure.table import TextTable
from opar_sim.running.executors import ExecutorConfig

IN_PROCESS = ExecutorConfig("serial", 1)
"""A study's default executor: every episode in this process, one after another."""


@runtime_checkable
class StudyResult(Protocol):
    """The result of a study: one table to show, one dict to write."""

    def table(self) -> TextTable:
        """The study's main table."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """The study's numbers as JSON-able data."""
        ...
