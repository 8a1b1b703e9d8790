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
row's world is read (``sync``); the wrappers live in ``research_qa_timing``.
See docs/batch.md.

The hot paths avoid a pass over every document of every row where a few cells
do: the expert reads each topic's best readable document from ``topic_key``
(kept up to date as documents are shown, fetched or vanish), and a search ranks
with one float sort that carries the document ids in the scores' low bits
(``least_columns``), not a stable argsort.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from environments.research_qa import TOPICS, ResearchQA, ResearchQAParams
from environments.research_qa_steps import ANSWER, FETCH, REPEAT, SEARCH, ResearchQANames
from environments.research_qa_timing import ResearchQAWrappers, first_column, row_min, row_sum
from opar_sim.core.twin import (
    Action,
    TwinUnsupported,
    first_match,
    take_rows,
    wrapper_stack,
)

UNSEEN = np.iinfo(np.int32).max  # the rank of a document no search has shown
ORDER = ("delay", "noise", "latency", "disturbance")  # the wrappers modelled, innermost first
assert (SEARCH, REPEAT) == (0, 1)  # a row's repeat code is its ``searched`` flag
GONE = 1e300  # a vanished document's sort key in a search: after every shown one


def least_columns(
    keys: np.ndarray, count: int, same: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The columns of each row's ``count`` least keys, least first, by one float sort.

    Each key's low mantissa bits give way to its column, so ``np.sort`` (several times
    cheaper than a stable argsort) carries the columns along.  Keys equal to ``same``
    come out in column order; other keys that tie once truncated may not: such rows
    are returned too, for the caller to sort again.

    Args:
        keys: Finite floats, no -0.0, one row per episode; overwritten.
        count: How many columns to return per row.
        same: A positive key whose ties stand in column order (None: no such key).

    Returns:
        (columns (int64), the rows where two of the first ``count + 1`` keys tie).
    """
    low = (1 << max(1, (keys.shape[1] - 1).bit_length())) - 1
    bits = keys.view(np.int64)
    bits &= ~low
    bits |= np.arange(keys.shape[1])
    keys.sort(axis=1)
    head = bits[:, : count + 1]
    # neighbours tie once truncated where their bits differ in the low ones only
    tie = (head[:, 1:] ^ head[:, :-1]).view(np.uint64) <= low
    if same is not None:
        tie &= (head[:, :-1] & ~low) != (np.array(same).view(np.int64) & ~low)
    bad = np.flatnonzero(tie.any(axis=1)) if tie.any() else np.zeros(0, np.intp)
    return head[:, :count] & low, bad


def stable_columns(keys: np.ndarray, gone: np.ndarray, count: int) -> np.ndarray:
    """The columns of each row's ``count`` least ``keys``, ``gone`` ones last, ties in order."""
    keys[gone] = np.inf
    return np.argsort(keys, axis=1, kind="stable")[:, :count]


class ResearchQABatch(ResearchQANames, ResearchQAWrappers):
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
        np.subtract(topic, (topic + 1) * off, out=topic)  # -1 where off the question
        supports = ~contra
        # +1 supporting, -1 contradicting; summed per row by einsum, in this type
        vote = supports.astype(np.int8 if d < 128 else np.int16) * 2 - 1
        for t in range(k):  # more supporting than contradicting documents per topic
            rows = np.flatnonzero(np.einsum("ij->i", (topic == t) * vote) <= 0)
            while rows.size:  # a short row: its first contradicting document supports
                on = topic[rows] == t
                supports[rows, np.argmax(on & ~supports[rows], axis=1)] = True
                short = (on & supports[rows]).sum(axis=1) <= (on & ~supports[rows]).sum(axis=1)
                rows = rows[short]
        # a permutation per row, as flat cells of the (rows × documents) arrays
        order = np.argsort(rng.random((n, d)), axis=1) + np.arange(0, n * d, d)[:, None]
        self.topic = topic.reshape(-1).take(order)
        self.supports = supports.reshape(-1).take(order)
        self.vanished = np.zeros((n, d), bool)
        self.fetched = np.zeros((n, d), bool)
        self.rank = np.full((n, d), UNSEEN, np.int32)
        # the expert's fetch order: rank · d + id of a readable supporting document (a search
        # showed it, not fetched, not gone), else UNSEEN; kept up to date by the tools, and
        # each topic's least key (the expert's next fetch on it)
        self.key = np.full((n, d), UNSEEN, np.int32)
        self.topic_key = np.full((n, k), UNSEEN, np.int32)
        self._derive()
        self.useless_first = np.full(n, -1, np.int32)  # the first seen useless document
        self.support = np.zeros((n, k), np.int16)
        self.contra = np.zeros((n, k), np.int16)
        self.short = np.zeros(n, np.intp)  # the first topic not held right (0 when none)
        # the last fresh search's whole ranking (vanished documents last) per row
        self.order = np.zeros((n, d), np.int8 if d < 128 else np.int16)
        self.searched = np.zeros(n, bool)  # a last query exists
        # a document the last search listed vanished since (or none ran), and that list
        self.stale = np.ones(n, bool)
        self.listed = np.zeros((n, min(d, p.results_per_search)), self.order.dtype)
        self.last_tokens = np.zeros(n, np.int32)  # the last search's result tokens
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
        """What the corpus fixes: the documents that are no use (off the question, disputing).

        And each topic's margin: its supporting documents not vanished (none has yet)
        less its contradicting ones, vanished or not (``_disturb`` keeps it).
        """
        self.useless_doc = (self.topic < 0) | ~self.supports
        vote = self.supports.astype(np.int16) * 2 - 1
        self.margin = np.stack(
            [np.einsum("ij->i", (self.topic == t) * vote) for t in range(self.k)], axis=1
        )

    def _right(self) -> np.ndarray:
        return self.right_n

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
        first = self.short
        key = self.topic_key.reshape(-1).take(np.arange(0, self.n * self.k, self.k) + first)
        has = key != UNSEEN
        done = np.asarray(self.right_n == self.k)
        tool = first_match([done, has], [ANSWER, FETCH], SEARCH)
        return tool, np.where(tool == FETCH, key % self.d, first).astype(np.int32)

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
        repeat = self.searched.view(np.int8)  # REPEAT (1) once a search ran, else SEARCH (0)
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
        """A fresh query ranks with new noise; a repeat reuses the last query's ranking.

        A repeat in a row where none of the documents its last search listed vanished
        since lists them again: it changes nothing (ranks and keys only fall, and they
        fell then) and returns as many tokens as that search did.
        """
        p = self.params
        new = rows[fresh]
        if new.size:
            score = self._noise(new)
            on = (self.topic.take(new, axis=0) == topic[fresh, None]) & (topic[fresh, None] >= 0)
            score *= p.rank_noise
            score += on  # on + rank_noise × noise
            self.searched[new] = True
            t = topic[fresh]
            named = new[t >= 0]
            self.last_topic[new] = t
            self.last_number[new] = 0
            self.last_number[named] = self.queries[named, t[t >= 0]]
            self.queries[named, t[t >= 0]] += 1
        again = ~fresh & ~self.stale[rows]
        if again.any():
            tokens[rows[again]] = self.last_tokens[rows[again]]
            rows, fresh = rows[~again], fresh[~again]
            if not rows.size:
                return
        if new.size == rows.size:
            order = self._rank(new, score)
        else:
            order = np.empty((rows.size, min(self.d, p.results_per_search)), np.int64)
            if new.size:
                order[fresh] = self._rank(new, score)
            order[~fresh] = self._rerank(rows[~fresh])
        cells = (rows * self.d)[:, None] + order  # flat cells: one take each
        shown = ~self.vanished.reshape(-1).take(cells)
        places = np.arange(cells.shape[1], dtype=np.int32)[None, :]
        rank = self.rank.reshape(-1)
        old = rank.take(cells)
        best = np.where(shown, np.minimum(old, places), old)
        rank[cells.reshape(-1)] = best.reshape(-1)
        result = 12 + 14 * row_sum(shown)  # tokens: 14 per document shown
        tokens[rows] = result
        self.last_tokens[rows] = result
        self.stale[rows] = False
        self.listed[rows] = order
        useless = self.useless_doc.reshape(-1).take(cells)
        readable = shown & ~useless & ~self.fetched.reshape(-1).take(cells)
        key = np.where(readable, best * self.d + order.astype(np.int32), UNSEEN)  # only falls
        self.key.reshape(-1)[cells.reshape(-1)] = key.reshape(-1)
        at = (rows * self.k)[:, None] + np.maximum(self.topic.reshape(-1).take(cells), 0)
        least = self.topic_key.reshape(-1)
        for j in range(cells.shape[1]):  # a row once per column: no clashing writes
            least[at[:, j]] = np.minimum(least.take(at[:, j]), key[:, j])
        fresh_useless = shown & useless
        if fresh_useless.any():  # the first seen useless document: the least id seen so far
            ids = row_min(np.where(fresh_useless, order, self.d))
            was = self.useless_first[rows]
            self.useless_first[rows] = np.where(
                ids < self.d, np.where(was >= 0, np.minimum(was, ids), ids), was
            )

    def _rank(self, rows: np.ndarray, score: np.ndarray) -> np.ndarray:
        """The documents fresh searches in ``rows`` list, by ``score``; keeps the full order.

        ``np.argsort(-score, kind="stable")`` with vanished documents at -inf (by
        ``least_columns`` unless the scores tie by design, with no noise, or could reach
        ``GONE``); each row's whole order is kept for its repeats (``_rerank``).
        """
        d, count = self.d, self.params.results_per_search
        gone = self.vanished.take(rows, axis=0)
        if 0.0 < self.params.rank_noise < 1e250:
            keys = np.subtract(0.0, score)  # -score, and no -0.0
            some = gone.any()
            if some:
                keys[gone] = GONE
            full, bad = least_columns(keys, d, GONE if some else None)
            if bad.size:
                full[bad] = stable_columns(np.negative(score[bad]), gone[bad], d)
        else:
            full = stable_columns(np.negative(score), gone, d)
        self.order[rows] = full
        return full[:, :count]

    def _rerank(self, rows: np.ndarray) -> np.ndarray:
        """What repeats in ``rows`` list: the last fresh order, less the documents now gone.

        The vanished documents come last, in no particular order (a search shows none).
        """
        count = min(self.d, self.params.results_per_search)
        order = self.order.take(rows, axis=0)
        gone = self.vanished.reshape(-1).take((rows * self.d)[:, None] + order)
        listed = order[:, :count].astype(np.int64)
        moved = np.flatnonzero(gone[:, :count].any(axis=1))  # a listed document went
        if moved.size:
            first = np.argsort(gone[moved], axis=1, kind="stable")[:, :count]
            listed[moved] = np.take_along_axis(order[moved], first, axis=1)
        return listed

    def _noise(self, rows: np.ndarray) -> np.ndarray:
        """The ranking noise of a fresh query in each of ``rows`` (standard normals per doc)."""
        return self._rng.standard_normal((rows.size, self.d))

    def _fetch(self, rows: np.ndarray, doc: np.ndarray, ok: np.ndarray, tokens: np.ndarray) -> None:
        """Read a document a search showed: a fact on its topic, or nothing, or a 404."""
        cell = rows * self.d + np.minimum(doc, self.d - 1)
        known = (doc < self.d) & (self.rank.reshape(-1).take(cell) != UNSEEN)
        ok[rows[~known]] = False
        rows, cell = rows[known], cell[known]
        gone = self.vanished.reshape(-1).take(cell)
        ok[rows[gone]] = False
        tokens[rows[gone]] = 6
        rows, cell = rows[~gone], cell[~gone]
        tokens[rows] = self.params.doc_tokens
        topic = self.topic.reshape(-1).take(cell)
        first = (topic >= 0) & ~self.fetched.reshape(-1).take(cell)
        rows, cell, topic = rows[first], cell[first], topic[first]
        self.fetched.reshape(-1)[cell] = True
        self._drop_keys(rows, cell)
        # one fetch per row (no repeats): the counts and the held and right topics change
        # in the fetched topic only
        at = rows * self.k + topic
        support, contra = self.support.reshape(-1), self.contra.reshape(-1)
        s0, c0 = support.take(at), contra.take(at)
        supports = self.supports.reshape(-1).take(cell)
        s1, c1 = s0 + supports, c0 + ~supports
        support[at] = s1
        contra[at] = c1
        self.held_n[rows] += (s1 != c1).astype(np.int16) - (s0 != c0)
        self.right_n[rows] += (s1 > c1).astype(np.int16) - (s0 > c0)
        moved = rows[(s1 <= c1) != (s0 <= c0)]  # the fetched topic's shortness changed
        self.short[moved] = first_column(
            self.support.take(moved, axis=0) <= self.contra.take(moved, axis=0)
        )

    def _drop_keys(self, rows: np.ndarray, cell: np.ndarray) -> None:
        """The documents at flat ``cell`` of ``rows`` are no longer readable: their keys go.

        Where one was its topic's least key, the topic's least key is found again.
        """
        key = self.key.reshape(-1)
        was = key.take(cell)
        key[cell] = UNSEEN
        live = np.flatnonzero(was != UNSEEN)
        if not live.size:
            return
        rows, was, cell = rows[live], was[live], cell[live]
        topic = self.topic.reshape(-1).take(cell)
        at = rows * self.k + topic
        least = self.topic_key.reshape(-1)
        hit = np.flatnonzero(least.take(at) == was)
        if hit.size:
            rows, topic = rows[hit], topic[hit]
            same = self.topic.take(rows, axis=0) == topic[:, None]
            least[at[hit]] = row_min(np.where(same, self.key.take(rows, axis=0), UNSEEN))

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
