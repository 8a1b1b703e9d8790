"""A vectorised model of ``research_qa`` (and its shipped wrappers) for the batch engine.

N corpora live in arrays (episodes × documents); the tools, the expert, the
wrong actions, the ground truth and the visible progress mirror
``environments.research_qa`` rule by rule (the scalar task stays the reference).
A search ranks afresh with new noise, as the scalar task's new query does (its
noise is seeded by the world and the query, so a fresh query is a fresh draw);
a repeated search (the wrong action) reuses the last query's scores, as the
scalar task's cache does.  The twin's draws are its own, so it agrees with the
scalar task in distribution; given the same corpus and rankings it takes the
same steps (``tests/environments/test_research_qa_batch.py``).

The wrappers the shipped specs use, innermost first in this order (any of them
may be left out): ``delay`` (the observation ``steps`` calls late), ``noise``
(Gaussian noise on visible progress, drawn again after every call), ``latency``
(a Lomax delay before the call and a timeout; an abandoned call still lands
later, as in ``timed_call``), ``disturbance`` (a Poisson process of vanishing
documents).  Landings and disturbances are applied in time order whenever a
row's world is read (``sync``).  See docs/batch.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from environments.research_qa import TOPICS, ResearchQA, ResearchQAParams
from environments.research_qa_steps import ANSWER, FETCH, REPEAT, SEARCH, ResearchQANames
from opar_sim.core.twin import (
    Action,
    SimTaskTwin,
    TwinUnsupported,
    first_match,
    take_rows,
    wrapper_stack,
)

UNSEEN = np.iinfo(np.int32).max  # the rank of a document no search has shown
ORDER = ("delay", "noise", "latency", "disturbance")  # the wrappers modelled, innermost first
SLOTS = 4  # abandoned calls a row may have in flight at once


class ResearchQABatch(ResearchQANames, SimTaskTwin):
    """N research_qa corpora advancing together; every field an array over episodes."""

    plan_steps = 3  # len(ResearchQA.plan_template())

    def __init__(self, params: ResearchQAParams, wrappers: dict[str, Any] | None = None) -> None:
        """Hold the task's and the wrappers' parameters; ``reset`` draws the worlds.

        Args:
            params: The scalar task's validated parameters.
            wrappers: The modelled wrappers' parameters by name (see the module docstring).
        """
        self.params = params
        self.tools = params.tools
        self.k = params.n_facts
        self.d = max(params.n_docs, self.k)
        self.observation_tokens = 12 + 6 * self.k
        w = wrappers or {}
        self.delay = int(w["delay"].steps) if "delay" in w else 0
        self.sigma = float(w["noise"].sigma) if "noise" in w else 0.0
        self.latency = w.get("latency")
        self.rate = float(w["disturbance"].rate) if "disturbance" in w else 0.0
        self.n = 0

    @classmethod
    def from_task(cls, task: Any) -> ResearchQABatch:
        """The twin of a built ``ResearchQA``, wrapped by a subsequence of ``ORDER``.

        Args:
            task: The built task.

        Returns:
            Its twin.

        Raises:
            TwinUnsupported: Naming a wrapper (or an order of them) the twin does not model.
        """
        stack, inner = wrapper_stack(task)
        if type(inner) is not ResearchQA:
            raise TwinUnsupported(f"no vectorised model of {type(inner).__name__}")
        names = [name for name, _ in stack]
        missing = [name for name in names if name not in ORDER]
        if missing:
            modelled = ", ".join(ORDER)
            raise TwinUnsupported(
                f"research_qa's twin does not model the wrapper {missing[0]!r} (it models "
                f"{modelled})"
            )
        if names != sorted(names, key=ORDER.index) or len(set(names)) < len(names):
            raise TwinUnsupported(
                f"research_qa's twin models its wrappers once each in the order {', '.join(ORDER)}"
            )
        return cls(inner.params, dict(stack))

    # -- world -------------------------------------------------------------------
    def reset(self, n: int, rng: np.random.Generator) -> None:
        """Draw ``n`` corpora as ``ResearchQA._reset_world`` does, one per row.

        Args:
            n: Episodes.
            rng: The batch's generator.
        """
        p, k, d = self.params, self.k, self.d
        self.n = n
        self._rng = rng  # a fresh search's noise
        topic = rng.integers(0, k, (n, d)).astype(np.int8)
        topic[:, :k] = np.arange(k)
        off = rng.random((n, d)) < p.irrelevant_rate
        off[:, :k] = False
        contra = rng.random((n, d)) < p.contradiction_rate
        contra[:, :k] = False
        topic[off] = -1
        supports = ~contra
        for t in range(k):  # more supporting than contradicting documents per topic
            on = topic == t
            while True:
                short = (supports & on).sum(axis=1) <= (~supports & on).sum(axis=1)
                if not short.any():
                    break
                rows = np.flatnonzero(short)
                first = np.argmax(on[rows] & ~supports[rows], axis=1)  # the first contradicting
                supports[rows, first] = True
        order = np.argsort(rng.random((n, d)), axis=1)  # a permutation per row
        self.topic = np.take_along_axis(topic, order, axis=1)
        self.supports = np.take_along_axis(supports, order, axis=1)
        self.vanished = np.zeros((n, d), bool)
        self.fetched = np.zeros((n, d), bool)
        self.rank = np.full((n, d), UNSEEN, np.int32)
        # the expert's fetch order: rank · d + id of a readable supporting document (a search
        # showed it, not fetched, not gone), else UNSEEN; kept up to date by the tools
        self.key = np.full((n, d), UNSEEN, np.int32)
        self._derive()
        self.useless_first = np.full(n, -1, np.int32)  # the first seen useless document
        self.support = np.zeros((n, k), np.int16)
        self.contra = np.zeros((n, k), np.int16)
        self.last_score = np.zeros((n, d))
        self.searched = np.zeros(n, bool)  # a last query exists
        # the step rows' names of a search: fresh queries run per topic (the scalar task's
        # "topic", "topic 2", ...), and the last query's topic (-1: "go gc") and number
        self.queries = np.zeros((n, self.k), np.int16)
        self.last_topic = np.full(n, -1, np.int16)
        self.last_number = np.zeros(n, np.int16)
        self.answered = np.full(n, -1, np.int8)  # -1: no answer; else whether it was right
        self.answered_held = np.zeros(n, bool)
        self.held_n = np.zeros(n, np.int16)  # topics held (support ≠ contra), kept up to date
        self.right_n = np.zeros(n, np.int16)  # topics right (support > contra)
        self._reset_wrappers(n, rng)

    def _derive(self) -> None:
        """What the corpus fixes: the documents that are no use (off the question, disputing)."""
        self.useless_doc = (self.topic < 0) | ~self.supports

    def _reset_wrappers(self, n: int, rng: np.random.Generator) -> None:
        inner = self._inner_visible()
        self.queue = np.repeat(inner[:, None], self.delay + 1, axis=1)  # delay's observations
        self.queued = np.ones(n, np.int32)
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

    # -- what the agent can see, and the truth ---------------------------------------
    def _right(self) -> np.ndarray:
        return self.right_n

    def _inner_visible(self, rows: np.ndarray | None = None) -> np.ndarray:
        """``ResearchQA.observe``'s visible progress (no wrapper), of ``rows`` or all."""
        if rows is None:
            return np.where(self.answered_held, 1.0, 0.9 * self.held_n / self.k)
        return np.where(self.answered_held[rows], 1.0, 0.9 * self.held_n[rows] / self.k)

    def visible_progress(self) -> np.ndarray:
        """What each row's agent sees (a new array): ``delay`` calls late, with the noise added."""
        seen = self.queue[:, 0].copy() if self.delay else self._inner_visible()
        if self.sigma:
            return np.asarray(np.clip(seen + self.offset, 0.0, 1.0))
        return np.asarray(seen)

    def progress(self) -> np.ndarray:
        """Ground-truth progress: 0.9 × the share of facts right, 1.0 once answered right."""
        return np.where(self.answered == 1, 1.0, 0.9 * self._right() / self.k)

    def complete(self) -> np.ndarray:
        """Whether an answer was given with all K facts right."""
        return np.asarray(self.answered == 1)

    def feasible(self) -> np.ndarray:
        """Always: every topic has more supporting than contradicting documents."""
        return np.ones(self.n, bool)

    def world_changed(self) -> np.ndarray:
        """``research_qa``'s observation never reports a world change."""
        return np.zeros(self.n, bool)

    # -- the expert and the wrong moves -------------------------------------------
    def expert(self) -> Action:
        """``ResearchQA.expert_action`` of every row: (tool, topic or document).

        Returns:
            Tool codes and their argument: a fresh search's topic or the document to fetch.
        """
        first = np.argmax(self.support <= self.contra, axis=1)
        key = np.where(self.topic == first[:, None].astype(np.int8), self.key, UNSEEN)
        doc = np.argmin(key, axis=1)
        has = key[np.arange(self.n), doc] < UNSEEN
        done = np.asarray(self.right_n == self.k)
        tool = first_match([done, has], [ANSWER, FETCH], SEARCH)
        return tool, np.where(tool == FETCH, doc, first).astype(np.int32)

    def wrong(self, pick: np.ndarray, need: np.ndarray) -> Action:
        """One of ``ResearchQA.wrong_actions`` per row, by ``pick``.

        Args:
            pick: A uniform per row: action ``int(pick * k)`` of the k in the scalar list.
            need: The rows that take the wrong action.

        Returns:
            Tool codes and their argument.
        """
        has_useless = self.useless_first >= 0
        early = (self.answered != 1) & (self._right() < self.k)
        count = 1 + has_useless + early
        index = (pick * count).astype(np.int8)
        # the list: repeat the last search ("go gc" before any), [fetch useless], [answer]
        repeat = np.where(self.searched, REPEAT, SEARCH)
        tool = first_match([index == 0, has_useless & (index == 1)], [repeat, FETCH], ANSWER)
        arg = np.where(tool == FETCH, self.useless_first, -1)  # "go gc": no topic
        return tool, arg.astype(np.int32)

    # -- tools -------------------------------------------------------------------
    def apply(self, mask: np.ndarray, action: Action) -> tuple[np.ndarray, np.ndarray]:
        """Run the delivered calls of the rows of ``mask`` (``ResearchQA._apply``).

        Args:
            mask: The rows whose call arrived (no failure, no timeout).
            action: Tool codes and their argument.

        Returns:
            (ok, result tokens) per row (zero outside ``mask``).
        """
        tool, arg = action
        ok = mask.copy()
        tokens = np.zeros(self.n, np.int64)
        rows = np.flatnonzero(mask)
        self._apply_rows(rows, tool[rows], arg[rows], ok, tokens)
        return ok, tokens

    def _apply_rows(
        self,
        rows: np.ndarray,
        tool: np.ndarray,
        arg: np.ndarray,
        ok: np.ndarray,
        tokens: np.ndarray,
    ) -> None:
        """``apply`` on the rows ``rows`` (their codes and arguments); writes ok and tokens."""
        search = (tool == SEARCH) | (tool == REPEAT)
        if search.any():
            self._search(rows[search], tool[search] == SEARCH, arg[search], tokens)
        fetch = tool == FETCH
        if fetch.any():
            self._fetch(rows[fetch], arg[fetch], ok, tokens)
        answer = rows[tool == ANSWER]
        if answer.size:
            self.answered[answer] = self.right_n[answer] == self.k
            self.answered_held[answer] = self.held_n[answer] == self.k
            tokens[answer] = 20

    def _search(
        self, rows: np.ndarray, fresh: np.ndarray, topic: np.ndarray, tokens: np.ndarray
    ) -> None:
        """A fresh query ranks with new noise; a repeat reuses the last query's scores."""
        p = self.params
        new = rows[fresh]
        if new.size:
            noise = self._noise(new)
            on = (self.topic[new] == topic[fresh, None]) & (topic[fresh, None] >= 0)
            self.last_score[new] = on + p.rank_noise * noise
            self.searched[new] = True
            t = topic[fresh]
            named = new[t >= 0]
            self.last_topic[new] = t
            self.last_number[new] = 0
            self.last_number[named] = self.queries[named, t[t >= 0]]
            self.queries[named, t[t >= 0]] += 1
        gone = self.vanished[rows]
        score = np.where(gone, -np.inf, self.last_score[rows])
        order = np.argsort(-score, axis=1, kind="stable")[:, : p.results_per_search]
        # the shown places as flat cells of the (rows × documents) arrays: one take each
        cells = (rows * self.d)[:, None] + order
        shown = ~gone.reshape(-1).take((np.arange(rows.size) * self.d)[:, None] + order)
        places = np.arange(order.shape[1], dtype=np.int32)[None, :]
        rank = self.rank.reshape(-1)
        best = np.where(shown, np.minimum(rank.take(cells), places), rank.take(cells))
        rank.put(cells, best)
        tokens[rows] = 12 + 14 * shown.sum(axis=1)
        readable = shown & self.supports.reshape(-1).take(cells)
        readable &= self.topic.reshape(-1).take(cells) >= 0
        readable &= ~self.fetched.reshape(-1).take(cells)
        self.key.reshape(-1).put(cells, np.where(readable, best * self.d + order, UNSEEN))
        fresh_useless = shown & self.useless_doc.reshape(-1).take(cells)
        if fresh_useless.any():  # the first seen useless document: the least id seen so far
            ids = np.where(fresh_useless, order, self.d).min(axis=1)
            was = self.useless_first[rows]
            self.useless_first[rows] = np.where(
                ids < self.d, np.where(was >= 0, np.minimum(was, ids), ids), was
            )

    def _noise(self, rows: np.ndarray) -> np.ndarray:
        """The ranking noise of a fresh query in each of ``rows`` (standard normals per doc)."""
        return self._rng.standard_normal((rows.size, self.d))

    def _fetch(self, rows: np.ndarray, doc: np.ndarray, ok: np.ndarray, tokens: np.ndarray) -> None:
        """Read a document a search showed: a fact on its topic, or nothing, or a 404."""
        known = (doc < self.d) & (self.rank[rows, np.minimum(doc, self.d - 1)] != UNSEEN)
        ok[rows[~known]] = False
        rows, doc = rows[known], doc[known]
        gone = self.vanished[rows, doc]
        ok[rows[gone]] = False
        tokens[rows[gone]] = 6
        rows, doc = rows[~gone], doc[~gone]
        tokens[rows] = self.params.doc_tokens
        topic = self.topic[rows, doc]
        first = (topic >= 0) & ~self.fetched[rows, doc]
        rows, doc, topic = rows[first], doc[first], topic[first]
        self.fetched[rows, doc] = True
        self.key[rows, doc] = UNSEEN
        supports = self.supports[rows, doc]
        self.support[rows[supports], topic[supports]] += 1  # one fetch per row: no repeats
        self.contra[rows[~supports], topic[~supports]] += 1
        self.held_n[rows] = (self.support[rows] != self.contra[rows]).sum(axis=1)
        self.right_n[rows] = (self.support[rows] > self.contra[rows]).sum(axis=1)

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
        extra = lp.scale * rng.pareto(lp.shape, self.n)
        done = extra + inner
        self._now = done <= lp.timeout  # returns within the wrapper's timeout
        late = np.flatnonzero(mask & ~self._now)
        if late.size:  # abandoned: lands later, in a free slot (the earliest is forced out)
            slot = np.argmax(np.isinf(self.pending[late]), axis=1)
            full = ~np.isinf(self.pending[late, slot])
            if full.any():
                self._land_now(late[full], slot[full], rng)
            tool, arg = action
            self.pending[late, slot] = now[late] + done[late]
            self.next_event[late] = np.minimum(self.next_event[late], now[late] + done[late])
            self.pending_tool[late, slot] = tool[late]
            self.pending_arg[late, slot] = arg[late]
            self.pending_deliver[late, slot] = self._deliver[late]
        return np.asarray(np.where(self._now, done, lp.timeout))

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
            inner = self._inner_visible(rows)
            queued = self.queued[rows]
            room = queued <= self.delay
            full = rows[~room]
            self.queue[full, :-1] = self.queue[full, 1:]
            self.queue[full, -1] = inner[~room]
            self.queue[rows[room], queued[room]] = inner[room]
            self.queued[rows[room]] += 1
        if self.sigma:
            self.offset[rows] = self.sigma * rng.standard_normal(rows.size)

    def _land_now(self, rows: np.ndarray, slot: np.ndarray, rng: np.random.Generator) -> None:
        """Land the abandoned calls in ``slot`` of ``rows`` (their effect, then the hooks)."""
        deliver = self.pending_deliver[rows, slot]
        tool, arg = self.pending_tool[rows, slot], self.pending_arg[rows, slot]
        self.pending[rows, slot] = np.inf
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
            pending = self.pending[due]
            slot = np.argmin(pending, axis=1)
            landing = pending[np.arange(due.size), slot]
            change = self.next_change[due]
            lands = landing <= change
            if lands.any():
                self._land_now(due[lands], slot[lands], rng)
            turns = due[~lands]
            if turns.size:
                self._disturb(turns, rng)
                self.next_change[turns] += rng.exponential(1.0 / self.rate, turns.size)
            self.next_event[due] = np.minimum(self.pending[due].min(axis=1), self.next_change[due])
            due = due[self.next_event[due] <= now[due]]

    def _disturb(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        """``ResearchQA.disturb``: a document vanishes, unless a topic would lose its answer."""
        doc = rng.integers(0, self.d, rows.size)
        topic = self.topic[rows, doc]
        free = ~self.vanished[rows, doc] & ~self.fetched[rows, doc]
        guarded = free & (topic >= 0) & self.supports[rows, doc]
        if guarded.any():
            same = self.topic[rows] == topic[:, None]
            alive = same & self.supports[rows] & (~self.vanished[rows] | self.fetched[rows])
            against = same & ~self.supports[rows]
            keep = alive.sum(axis=1) - 1 <= against.sum(axis=1)
            free &= ~(guarded & keep)
        self.vanished[rows[free], doc[free]] = True
        self.key[rows[free], doc[free]] = UNSEEN

    def take(self, keep: np.ndarray) -> None:
        """Keep only the rows ``keep`` (the engine drops finished episodes).

        Args:
            keep: Row indices to keep, in order.
        """
        take_rows(self, keep, self.n)
        self.n = len(keep)

    # -- answers -----------------------------------------------------------------------
    def answer_fields(self) -> dict[str, np.ndarray]:
        """Whether each row answered, and the topics it holds (a bit per topic)."""
        held = (self.support != self.contra).astype(np.int64)
        bits = (held << np.arange(self.k, dtype=np.int64)).sum(axis=1)
        return {"answered": self.answered.copy(), "held": bits}

    def answers(self, fields: dict[str, np.ndarray]) -> list[str]:
        """Each ended row's final answer, as ``ResearchQA.answer`` words it."""
        topics = TOPICS[: self.k]
        out = []
        for answered, bits in zip(
            fields["answered"].tolist(), fields["held"].tolist(), strict=True
        ):
            if answered < 0:
                out.append("no answer yet")
                continue
            held = [t for i, t in enumerate(topics) if bits >> i & 1]
            out.append("covers: " + (", ".join(held) if held else "nothing"))
        return out
