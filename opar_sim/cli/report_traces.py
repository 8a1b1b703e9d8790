"""The report's episode traces: every episode, and the steps of the first of each controller.

``trace_data`` embeds, once, every episode (key, outcome, cost) and the steps the trace
viewer shows as compact columns with one shared string table.  The steps of the first
``TRACE_EPISODES`` episodes of each controller are embedded (the episodes the progress
figure draws): a 100,000-episode run would otherwise make a page of hundreds of MB.  Steps
are read through ``rundir.iter_steps`` (steps.jsonl, or a batch run's steps.parquet).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from opar_sim.figures.run import FIGURE_EPISODES
from opar_sim.rundir import episode_key, iter_episodes, iter_steps

TRACE_EPISODES = FIGURE_EPISODES
"""Episodes per controller whose steps the report embeds (the progress figure's)."""

# a step row's fields the trace viewer shows, as (short key, row field, kind)
_STEP_COLUMNS = (
    ("st", "step", "int"),
    ("t", "time", "num"),
    ("p", "progress", "num"),
    ("d", "delta_task", "num"),
    ("sig", "signal", "str"),
    ("rsn", "reason", "str"),
    ("act", "action", "str"),
    ("obs", "observation", "str"),
    ("res", "result", "str"),
    ("err", "tool_error", "str"),
    ("tok", "tokens", "int"),
    ("ag", "agent", "str"),
)


class _Strings:
    """An interned string table: each distinct text is stored once, steps hold its index."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: object) -> int | None:
        if text is None:
            return None
        s = str(text)
        if s not in self._index:
            self._index[s] = len(self.items)
            self.items.append(s)
        return self._index[s]


def num(value: object, digits: int = 3) -> float | None:
    """``value`` rounded to ``digits`` when it is a finite number, else None (shown empty)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    if math.isnan(value) or math.isinf(value):
        return None
    return round(float(value), digits)


def _key(row: dict[str, Any]) -> str:
    c, e, t, a = episode_key(row)
    return f"{c}|{e}|{t}|{a}"


def trace_data(path: Path, limit: int = TRACE_EPISODES) -> dict[str, Any]:
    """Every episode, and the steps of the first ``limit`` of each controller, as columns.

    Args:
        path: The run directory.
        limit: Episodes (worlds, with their trials and attempts) per controller whose
            steps are embedded.

    Returns:
        ``strings`` (the table), ``episodes`` (one list per episode: key, outcome
        index, success, steps, tokens, simulated seconds), ``traces`` (per episode key
        of the embedded episodes, one list per ``_STEP_COLUMNS`` key, and ``terms`` per
        name) and ``trace_limit`` (``limit``).
    """
    strings = _Strings()
    episodes = []
    for row in iter_episodes(path):
        episodes.append(
            [
                _key(row),
                strings(row.get("outcome")),
                1 if row.get("success") else 0,
                row.get("steps"),
                row.get("tokens"),
                num(row.get("sim_seconds"), 1),
            ]
        )
    traces: dict[str, dict[str, Any]] = {}
    worlds: dict[str, set[int]] = {}  # per controller, the episodes whose steps are embedded
    # the analysis has checked the fields it computes with; the viewer only shows them
    # (a number that is not one shows as empty), so the rows are read unchecked
    for row in iter_steps(path, checked=False, first=limit):
        key = _key(row)
        trace = traces.get(key)
        if trace is None:
            seen = worlds.setdefault(key.split("|", 1)[0], set())
            world = row.get("episode")
            if world not in seen and len(seen) >= limit:
                continue
            seen.add(world if isinstance(world, int) else -1)
            trace = traces[key] = {k: [] for k, _, _ in _STEP_COLUMNS} | {"terms": {}}
        n = len(trace["st"])
        for short, name, kind in _STEP_COLUMNS:
            value = row.get(name)
            if kind == "str":
                trace[short].append(strings(value))
            elif kind == "num":
                trace[short].append(num(value))
            else:
                trace[short].append(value)
        for name, value in (row.get("terms") or {}).items():
            column = trace["terms"].setdefault(name, [None] * n)
            column.append(num(value))
        for column in trace["terms"].values():
            column.extend([None] * (n + 1 - len(column)))
    return {"strings": strings.items, "episodes": episodes, "traces": traces, "trace_limit": limit}
