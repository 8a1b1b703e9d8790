"""How ``research_qa``'s array twin names its calls for the batch engine's step rows.

``ResearchQANames`` gives the twin (``environments.research_qa_batch``) the
protocol's ``action_key``, ``label`` and ``call_state``: the label is
``ResearchQA``'s own (``search(query=...)``, ``fetch(doc=...)``, ``answer``),
a fresh search's query numbered as the scalar expert numbers it ("pacer",
"pacer 2", ...) and a repeat named by the last query.
"""

from __future__ import annotations

import numpy as np

from environments.research_qa import TOPICS
from opar_sim.core.types import Action as Call

SEARCH, REPEAT, FETCH, ANSWER = range(4)  # a fresh search (arg: its topic), the last again


class ResearchQANames:
    """The step rows' names of ``ResearchQABatch``'s calls (a base class of the twin)."""

    n: int
    k: int
    queries: np.ndarray  # fresh queries run per (row, topic)
    last_topic: np.ndarray  # the last query's topic (-1: "go gc")
    last_number: np.ndarray  # and its number among its topic's queries (0: the first)
    _timeout: np.ndarray
    _deliver: np.ndarray
    _now: np.ndarray

    def call_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The last call's (timed out, delivered) per row; an abandoned call timed out."""
        return self._timeout | ~self._now, self._deliver & self._now

    def action_key(self, action: tuple[np.ndarray, ...]) -> np.ndarray:
        """Each row's call as ``number × 3 + kind`` (0 search, 1 fetch, 2 answer).

        A search's number is ``(query's number) × (k + 1) + topic + 1`` (topic -1: "go gc"),
        read before the call: a fresh one the next of its topic, a repeat the last query.

        Args:
            action: Tool codes and their argument (a fresh search's topic, a document).

        Returns:
            One small integer per row.
        """
        tool, arg = action
        count = self.queries[np.arange(self.n), np.clip(arg, 0, self.k - 1)]
        topic = np.where(tool == REPEAT, self.last_topic, arg).astype(np.int64)
        count = np.where(tool == REPEAT, self.last_number, np.where(arg >= 0, count, 0))
        search = count.astype(np.int64) * (self.k + 1) + topic + 1
        number = np.where(tool == FETCH, arg, np.where(tool == ANSWER, 0, search))
        kind = np.where(tool == FETCH, 1, np.where(tool == ANSWER, 2, 0))
        return np.asarray(number.astype(np.int64) * 3 + kind)

    def label(self, key: int) -> tuple[str, str]:
        """The label and tool of ``ResearchQA``'s call ``key`` names (``action_key``).

        Args:
            key: One of ``action_key``'s integers.

        Returns:
            (``Action.label()``, the tool's name).
        """
        number, kind = divmod(key, 3)
        if kind == 1:
            action = Call.of("fetch", doc=number)
        elif kind == 2:
            action = Call.of("answer")
        else:
            count, topic = divmod(number, self.k + 1)
            name = TOPICS[topic - 1] if topic else "go gc"
            action = Call.of("search", query=f"{name} {count + 1}" if count else name)
        return action.label(), action.tool
