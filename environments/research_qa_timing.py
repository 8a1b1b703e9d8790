"""The wrappers of ``research_qa``'s array twin: delayed and noisy readings, late calls, change.

``ResearchQAWrappers`` is a base class of ``environments.research_qa_batch.ResearchQABatch``:
``delay`` (the observation ``steps`` calls late: a ring of ``steps + 1`` readings per
row, the one shown at ``head``), ``noise`` (Gaussian noise on visible progress, drawn
again after every call), ``latency`` (a Lomax delay before the call and a timeout; an
abandoned call still lands later, in one of ``SLOTS`` per row) and ``disturbance`` (a
Poisson process of vanishing documents, ``_disturb``).  Landings and disturbances are
applied in time order whenever a row's world is read (``sync``).

The per-row minima and first matches over the few slots run column by column: a
reduction along a short last axis costs a call per row, a column operation one per slot.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np

from opar_sim.core.twin import Action, SimTaskTwin

SLOTS = 4  # abandoned calls a row may have in flight at once


def row_min(a: np.ndarray) -> np.ndarray:
    """``a.min(axis=1)`` of a 2-D array with few columns, one column at a time."""
    out = a[:, 0].copy()
    for j in range(1, a.shape[1]):
        np.minimum(out, a[:, j], out=out)
    return out


def row_sum(a: np.ndarray) -> np.ndarray:
    """``a.sum(axis=1)`` of a 2-D boolean array with few columns, one column at a time."""
    out = a[:, 0].astype(np.int64)
    for j in range(1, a.shape[1]):
        out += a[:, j]
    return out


def first_column(hit: np.ndarray) -> np.ndarray:
    """``np.argmax(hit, axis=1)`` of a boolean 2-D array with few columns (0 where none)."""
    out = np.zeros(hit.shape[0], np.intp)
    for j in range(hit.shape[1] - 1, -1, -1):  # the least true column is written last
        np.copyto(out, j, where=hit[:, j])
    return out


class ResearchQAWrappers(SimTaskTwin):
    """The modelled wrappers' state and timing (a base class of ``ResearchQABatch``)."""

    n: int
    k: int
    delay: int
    sigma: float
    latency: Any
    rate: float
    d: int
    topic: np.ndarray
    supports: np.ndarray
    vanished: np.ndarray
    fetched: np.ndarray
    stale: np.ndarray
    listed: np.ndarray
    margin: np.ndarray
    answered_held: np.ndarray
    held_n: np.ndarray
    _rng: np.random.Generator

    @abstractmethod
    def _apply_rows(
        self,
        rows: np.ndarray,
        tool: np.ndarray,
        arg: np.ndarray,
        ok: np.ndarray,
        tokens: np.ndarray,
    ) -> None:
        """``apply`` on the rows ``rows`` (``ResearchQABatch._apply_rows``)."""

    @abstractmethod
    def _drop_keys(self, rows: np.ndarray, cell: np.ndarray) -> None:
        """Forget the fetch keys of vanished documents (``ResearchQABatch._drop_keys``)."""

    def _disturb(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        """``ResearchQA.disturb``: a document vanishes, unless a topic would lose its answer."""
        doc = rng.integers(0, self.d, rows.size)
        cell = rows * self.d + doc
        topic = self.topic.reshape(-1).take(cell)
        free = ~self.vanished.reshape(-1).take(cell) & ~self.fetched.reshape(-1).take(cell)
        guarded = np.flatnonzero(free & (topic >= 0) & self.supports.reshape(-1).take(cell))
        if guarded.size:  # would the topic keep more supporting documents than contradicting?
            at = rows[guarded] * self.k + topic[guarded]
            margin = self.margin.reshape(-1)
            keep = margin.take(at) <= 1
            free[guarded[keep]] = False
            margin[at[~keep]] -= 1  # a supporting document goes
        rows, cell, doc = rows[free], cell[free], doc[free]
        self.vanished.reshape(-1)[cell] = True
        listed = self.listed.take(rows, axis=0)
        went = listed[:, 0] == doc
        for j in range(1, listed.shape[1]):
            went |= listed[:, j] == doc
        self.stale[rows] |= went
        self._drop_keys(rows, cell)

    def _reset_wrappers(self, n: int, rng: np.random.Generator) -> None:
        inner = self._inner_visible()
        self.queue = np.repeat(inner[:, None], self.delay + 1, axis=1)  # delay's readings
        # the ring's slot a row's agent sees; a call's reading overwrites it, then it moves on
        self.head = np.full(n, 1 % (self.delay + 1), np.int8)
        self.offset = self.sigma * rng.standard_normal(n) if self.sigma else np.zeros(n)
        self.pending = np.full((n, SLOTS), np.inf)  # when each abandoned call lands
        self.pending_tool = np.zeros((n, SLOTS), np.int8)
        self.pending_arg = np.zeros((n, SLOTS), np.int32)
        self.pending_deliver = np.zeros((n, SLOTS), bool)
        self.next_change = (
            rng.exponential(1.0 / self.rate, n) if self.rate > 0 else np.full(n, np.inf)
        )
        self.next_event = self.next_change.copy()  # the earliest landing or disturbance
        self._ok, self._tokens = np.zeros(n, bool), np.zeros(n, np.int64)  # landings' scratch

    # -- what the agent can see --------------------------------------------------------
    def _inner_visible(self, rows: np.ndarray | None = None) -> np.ndarray:
        """``ResearchQA.observe``'s visible progress (no wrapper), of ``rows`` or all."""
        if rows is None:
            return np.where(self.answered_held, 1.0, 0.9 * self.held_n / self.k)
        return np.where(self.answered_held[rows], 1.0, 0.9 * self.held_n[rows] / self.k)

    def visible_progress(self) -> np.ndarray:
        """What each row's agent sees (a new array): ``delay`` calls late, with the noise added."""
        if self.delay:
            width = self.delay + 1
            seen = self.queue.reshape(-1).take(np.arange(0, self.n * width, width) + self.head)
        else:
            seen = self._inner_visible()
        if self.sigma:
            seen += self.offset
            np.clip(seen, 0.0, 1.0, out=seen)
        return np.asarray(seen)

    # -- the calls, the wrappers' timing and the world's changes ------------------------
    def start_call(
        self,
        mask: np.ndarray,
        action: Action,
        latency: np.ndarray,
        failure: np.ndarray,
        now: np.ndarray,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """``SimTask.execute``'s wait, or the ``latency`` wrapper's (``timed_call``)."""
        self._rng = rng
        inner = super().start_call(mask, action, latency, failure, now, rng)
        if self.latency is None:
            self._now = np.ones(self.n, bool)
            return inner
        lp = self.latency
        done = lp.scale * rng.pareto(lp.shape, self.n)
        done += inner
        self._now = done <= lp.timeout  # returns within the wrapper's timeout
        late = np.flatnonzero(mask & ~self._now)
        if late.size:  # abandoned: lands later, in a free slot (the earliest is forced out)
            free = np.isinf(self.pending.take(late, axis=0))
            slot = first_column(free)
            full = ~free[np.arange(late.size), slot]
            if full.any():
                self._land_now(late[full], slot[full], rng)
            tool, arg = action
            cells = late * SLOTS + slot
            lands = now[late] + done[late]
            self.pending.reshape(-1)[cells] = lands
            self.next_event[late] = np.minimum(self.next_event[late], lands)
            self.pending_tool.reshape(-1)[cells] = tool[late]
            self.pending_arg.reshape(-1)[cells] = arg[late]
            self.pending_deliver.reshape(-1)[cells] = self._deliver[late]
        return np.asarray(np.minimum(done, lp.timeout))

    def finish_call(
        self, mask: np.ndarray, action: Action, now: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """The calls that returned in time take effect now; an abandoned one is a timeout."""
        self._rng = rng
        back = mask & self._now
        self.sync(now, mask, rng)
        ok, tokens = self.apply(back & self._deliver, action)
        self.after_call(back, now, rng)
        return ok, tokens

    def after_call(self, mask: np.ndarray, now: np.ndarray, rng: np.random.Generator) -> None:
        """The delay queue takes the observation now; the noise is drawn again."""
        self._after_rows(np.flatnonzero(mask), rng)

    def _after_rows(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        if self.delay:
            head = self.head[rows]
            self.queue.reshape(-1)[rows * (self.delay + 1) + head] = self._inner_visible(rows)
            head += 1
            head[head > self.delay] = 0
            self.head[rows] = head
        if self.sigma:
            self.offset[rows] = self.sigma * rng.standard_normal(rows.size)

    def _land_now(self, rows: np.ndarray, slot: np.ndarray, rng: np.random.Generator) -> None:
        """Land the abandoned calls in ``slot`` of ``rows`` (their effect, then the hooks)."""
        cells = rows * SLOTS + slot
        deliver = self.pending_deliver.reshape(-1).take(cells)
        tool = self.pending_tool.reshape(-1).take(cells)
        arg = self.pending_arg.reshape(-1).take(cells)
        self.pending.reshape(-1)[cells] = np.inf
        self._rng = rng
        landed = rows[deliver]
        self._apply_rows(landed, tool[deliver], arg[deliver], self._ok, self._tokens)
        self._after_rows(rows, rng)

    def sync(self, now: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> None:
        """Apply, in time order, the landings and disturbances due by ``now`` in ``mask``."""
        due = np.flatnonzero(mask & (self.next_event <= now))
        if due.size and self._ok.shape[0] != self.n:
            self._ok, self._tokens = np.zeros(self.n, bool), np.zeros(self.n, np.int64)
        while due.size:
            pending = self.pending.take(due, axis=0)
            landing = row_min(pending)
            lands = landing <= self.next_change[due]
            if lands.any():
                where = np.flatnonzero(lands)
                slot = first_column(pending[where] == landing[where, None])
                self._land_now(due[where], slot, rng)
                pending[where, slot] = np.inf
                landing[where] = row_min(pending[where])
            turns = due[~lands]
            if turns.size:
                self._disturb(turns, rng)
                self.next_change[turns] += rng.exponential(1.0 / self.rate, turns.size)
            self.next_event[due] = np.minimum(landing, self.next_change[due])
            due = due[self.next_event[due] <= now[due]]
