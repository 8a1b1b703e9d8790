"""The ReAct document's example: answer a research question that needs K distinct facts.

Goal
    Answer "What changed in the Go garbage collector?" with ``n_facts`` (K)
    distinct facts, each one right.
Tools
    ``search(query)`` returns a ranked subset of ``results_per_search``
    documents: relevance to the query's topic plus ranking noise
    (``rank_noise``), the same results for the same query (a loop that repeats
    a search is visibly stuck; a reformulated query such as "pacer 2" ranks
    afresh).  ``fetch(doc)`` reads a document that appeared in a search and
    yields its fact: supporting, contradicting (``contradiction_rate``) or
    irrelevant (``irrelevant_rate``).  ``answer()`` gives the answer from the
    facts gathered so far.
Observation
    Per topic, what the agent holds: nothing, a fact, or a conflict (as many
    contradicting as supporting documents read).  The agent cannot tell a
    right fact from a contradicting one read alone: its visible progress
    counts held facts, so it overrates a contradicted one.
Progress
    0.9·(facts held right)/K, where a fact is right when more supporting than
    contradicting documents on it were read; 1.0 once answered with all K
    right.  Answering with a fact missing or wrong leaves progress where it
    was: stopping then is premature.
Termination
    Complete when an answer was given with all K facts right.  Always
    feasible: every topic has more supporting than contradicting documents.
Faults
    Tool latency, failures and timeouts from ``tools``; noisy ranking;
    contradicting and irrelevant documents; under the ``disturbance``
    wrapper a document disappears (never one that would make a topic
    unanswerable), and fetching it fails with "404".
Version history
    v0: first version.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from environments.base import NoArgs, SimTask, ToolParams
from opar_sim.core.task import ToolSpec
from opar_sim.core.types import Action, ActionResult, Observation, PlanStep

TOPICS = (
    "tricolor marking",
    "write barrier",
    "pacer",
    "stack scanning",
    "memory limit",
    "sweep",
    "mark assist",
    "heap goal",
)


class ResearchQAParams(BaseModel):
    """Parameters of ``research_qa``: K, the corpus, the ranking noise and the bad documents."""

    model_config = ConfigDict(extra="forbid")

    n_facts: int = Field(3, ge=1, le=len(TOPICS), description="K: distinct facts needed")
    n_docs: int = Field(16, ge=1, le=500, description="documents in the corpus")
    results_per_search: int = Field(4, ge=1, description="documents a search returns")
    rank_noise: float = Field(0.6, ge=0, description="σ of the ranking noise (relevance is 1)")
    contradiction_rate: float = Field(0.25, ge=0, lt=1)
    irrelevant_rate: float = Field(0.3, ge=0, lt=1)
    doc_tokens: int = Field(120, ge=1, description="tokens of a fetched document")
    tools: ToolParams = ToolParams(latency_median=0.4, timeout=2.0, failure_rate=0.03)


# Tool argument schemas carry no docstring: pydantic would put it in the JSON schema
# sent to the LLM (its "description"), changing the constrained output format.
class SearchArgs(BaseModel):  # noqa: D101
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=200)


class FetchArgs(BaseModel):  # noqa: D101
    model_config = ConfigDict(extra="forbid")
    doc: int = Field(ge=0)


@dataclass(slots=True)
class Document:
    """One document of the hidden corpus: its topic, whether it supports the fact, if gone."""

    doc_id: int
    topic: int  # -1: irrelevant to the question
    supports: bool  # False: contradicts the fact of its topic
    vanished: bool = False


class ResearchQA(SimTask):
    """Search, read and answer: K facts from noisy, contradicting documents."""

    name = "research_qa"
    Params = ResearchQAParams
    TOOLS = (
        ToolSpec("search", "Search the corpus; ranked results", SearchArgs),
        ToolSpec("fetch", "Read a document found by a search", FetchArgs),
        ToolSpec("answer", "Answer the question with the facts gathered", NoArgs),
    )
    params: ResearchQAParams

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.topics = TOPICS[: self.params.n_facts]
        self.goal = (
            "What changed in the Go garbage collector? Cover: " + ", ".join(self.topics) + "."
        )
        self._clear()

    def _clear(self) -> None:
        self.docs: list[Document] = []
        self.salt = 0
        self.searches: dict[str, list[int]] = {}
        self.rank: dict[int, int] = {}  # best rank a document was seen at
        self.fetched: set[int] = set()
        self.support = [0] * len(self.topics)
        self.contra = [0] * len(self.topics)
        self.last_query: str | None = None
        self.answered_right: bool | None = None  # None: no answer given yet
        self.answered_held = False

    def _reset_world(self) -> None:
        self._clear()
        p, rng, k = self.params, self.rng, len(self.topics)
        n = max(p.n_docs, k)
        topic = rng.integers(0, k, n)
        topic[:k] = np.arange(k)  # every topic has a document
        off = rng.random(n) < p.irrelevant_rate
        off[:k] = False
        contra = rng.random(n) < p.contradiction_rate
        contra[:k] = False
        docs = [Document(i, -1 if off[i] else int(topic[i]), not contra[i]) for i in range(n)]
        for t in range(k):  # more supporting than contradicting documents per topic
            on_topic = [d for d in docs if d.topic == t]
            while sum(d.supports for d in on_topic) <= sum(not d.supports for d in on_topic):
                next(d for d in on_topic if not d.supports).supports = True
        order = rng.permutation(n)
        self.docs = [docs[int(i)] for i in order]
        for new_id, d in enumerate(self.docs):
            d.doc_id = new_id
        self.salt = int(rng.integers(2**31))

    # -- tools ---------------------------------------------------------------
    def _apply(self, action: Action) -> ActionResult:
        if action.tool == "search":
            return self._search(str(action.arg("query")))
        if action.tool == "fetch":
            return self._fetch(int(action.arg("doc")))
        right = all(s > c for s, c in zip(self.support, self.contra, strict=True))
        self.answered_right = right
        self.answered_held = self._held() == len(self.topics)
        return ActionResult(True, f"answered: {self.answer()}", 0.0, tokens=20)

    def _topic_of(self, query: str) -> int:
        q = query.lower()
        return next((i for i, t in enumerate(self.topics) if t in q), -1)

    def _search(self, query: str) -> ActionResult:
        self.last_query = query
        ranked = self.searches.get(query)
        if ranked is None:
            # the same query always ranks the same way: noise seeded by (world, query)
            seq = np.random.SeedSequence([self.salt, zlib.crc32(query.encode())])
            noise = np.random.Generator(np.random.PCG64(seq)).standard_normal(len(self.docs))
            topic = self._topic_of(query)
            score = [
                (1.0 if d.topic == topic and topic >= 0 else 0.0) + self.params.rank_noise * z
                for d, z in zip(self.docs, noise, strict=True)
            ]
            ranked = sorted(range(len(self.docs)), key=lambda i: (-score[i], i))
            self.searches[query] = ranked
        shown = [i for i in ranked if not self.docs[i].vanished][: self.params.results_per_search]
        for r, i in enumerate(shown):
            self.rank[i] = min(r, self.rank.get(i, r))
        rows = "; ".join(f"[{i}] {self._title(i)}" for i in shown)
        return ActionResult(
            True, f"results for {query!r}: {rows}", 0.0, tokens=12 + 14 * len(shown)
        )

    def _title(self, i: int) -> str:
        t = self.docs[i].topic
        return f"notes on {self.topics[t]}" if t >= 0 else "Go release notes"

    def _fetch(self, i: int) -> ActionResult:
        if i >= len(self.docs) or i not in self.rank:
            return ActionResult(False, f"unknown document {i}: search first", 0.0, "rejected")
        d = self.docs[i]
        if d.vanished:
            return ActionResult(False, f"document {i}: 404 not found", 0.0, "rejected", 6)
        tokens = self.params.doc_tokens
        if d.topic < 0:
            return ActionResult(True, f"document {i}: nothing on the question", 0.0, tokens=tokens)
        if i not in self.fetched:
            self.fetched.add(i)
            if d.supports:
                self.support[d.topic] += 1
            else:
                self.contra[d.topic] += 1
        claim = "claims" if d.supports else "disputes"
        text = f"document {i}: {claim} a change in {self.topics[d.topic]}"
        return ActionResult(True, text, 0.0, tokens=tokens)

    # -- the world changes -------------------------------------------------------
    def disturb(self, rng: np.random.Generator) -> str | None:
        """A document disappears, unless that would leave a topic unanswerable."""
        d = self.docs[int(rng.integers(len(self.docs)))]
        if d.vanished or d.doc_id in self.fetched:
            return None
        if d.topic >= 0 and d.supports:
            alive = sum(
                1
                for x in self.docs
                if x.topic == d.topic
                and x.supports
                and (not x.vanished or x.doc_id in self.fetched)
            )
            if alive - 1 <= sum(1 for x in self.docs if x.topic == d.topic and not x.supports):
                return None
        d.vanished = True
        return f"document {d.doc_id} disappeared"

    # -- ground truth and what the agent sees ----------------------------------
    def _right(self) -> int:
        return sum(s > c for s, c in zip(self.support, self.contra, strict=True))

    def _held(self) -> int:
        return sum(s != c for s, c in zip(self.support, self.contra, strict=True))

    @property
    def progress(self) -> float:
        """Ground-truth progress: 0.9 × the share of facts right, 1.0 once answered right."""
        if self.answered_right:
            return 1.0
        return 0.9 * self._right() / len(self.topics)

    @property
    def complete(self) -> bool:
        """Whether an answer was given with all K facts right."""
        return bool(self.answered_right)

    def observe(self) -> Observation:
        """Per topic: held, conflict or unknown; visible progress counts facts held, even wrong."""
        held = self._held()
        visible = 1.0 if self.answered_held else 0.9 * held / len(self.topics)
        parts = []
        for t, s, c in zip(self.topics, self.support, self.contra, strict=True):
            parts.append(f"{t}={'conflict' if s == c and s else ('held' if s != c else '?')}")
        return Observation("facts: " + ", ".join(parts), visible, tokens=12 + 6 * len(parts))

    # -- the expert ------------------------------------------------------------
    def expert_action(self) -> Action:
        """Fetch a supporting document of the first topic not yet right, else search it afresh.

        With every fact right, answer.
        """
        missing = [t for t in range(len(self.topics)) if self.support[t] <= self.contra[t]]
        if not missing:
            return Action.of("answer")
        t = missing[0]
        found = [
            i
            for i in self.rank
            if i not in self.fetched
            and not self.docs[i].vanished
            and self.docs[i].topic == t
            and self.docs[i].supports
        ]
        if found:
            return Action.of("fetch", doc=min(found, key=lambda i: (self.rank[i], i)))
        query = self.topics[t]
        n = 2
        while query in self.searches:
            query = f"{self.topics[t]} {n}"
            n += 1
        return Action.of("search", query=query)

    def wrong_actions(self) -> Sequence[Action]:
        """Repeat the last search, read a useless or contradicting document, answer too early."""
        wrong = [Action.of("search", query=self.last_query or "go gc")]
        useless = [
            i for i in sorted(self.rank) if self.docs[i].topic < 0 or not self.docs[i].supports
        ]
        if useless:
            wrong.append(Action.of("fetch", doc=useless[0]))
        if not self.complete and self._right() < len(self.topics):
            wrong.append(Action.of("answer"))
        return wrong

    def plan_template(self) -> tuple[PlanStep, ...]:
        """Search each topic (reformulating on repeats), read sources, answer."""
        return (
            PlanStep(
                "search",
                "search each topic of the question",
                condition="the results repeat",
                fallback="reformulate the query",
            ),
            PlanStep(
                "fetch",
                "read the top relevant documents",
                condition="documents disagree",
                fallback="read one more source",
            ),
            PlanStep("answer", "answer with every fact covered"),
        )

    def answer(self) -> str:
        """The topics the answer covers, or "no answer yet" before ``answer()`` is called."""
        held = [t for t, s, c in zip(self.topics, self.support, self.contra, strict=True) if s != c]
        if self.answered_right is None:
            return "no answer yet"
        return "covers: " + (", ".join(held) if held else "nothing")
