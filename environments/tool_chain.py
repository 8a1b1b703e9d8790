"""A customer-service task shaped like τ-bench's airline: look things up, then change the database.

Goal
    Serve a customer's request: read what is needed (``lookup``), then make the
    world's required changes (``write``), each write preceded by the lookups it
    needs.  How many writes a world needs is drawn per world (``write_weights``:
    relative weights of 0, 1, 2, … writes) and is known before running it: it is
    the world's feature ``write_actions`` (with ``actions``, the length of the
    expert's sequence), recorded with each episode as an imported run records it.
    The first lookups number ``reads``, or are drawn per world in
    ``reads``..``reads_max``; with ``actions`` set (a recorded task's ground-truth
    action count), they also make up what the writes and their lookups lack of it.
    With ``extra_reads_mean`` set, every world also needs a latent number r of
    further lookups, drawn per world from a negative binomial (mean
    ``extra_reads_mean`` · exp(``extra_reads_slope`` · writes), size
    ``extra_reads_size``; size 1 is a geometric) on a
    stream derived from the world's stream, so all the trials of a world share
    it and no other draw moves; r is independent of the writes (but for its mean's
    ``extra_reads_slope``) and not among
    the world's known features (``actions`` counts it, as the expert's sequence
    does).  ``extra_reads`` fixes r instead (a calibration table's cell).
Tools
    ``lookup(key)`` reads a record: the next required one moves the task on,
    any other is a harmless wasted call.  ``write(key)`` changes the database:
    the next required write moves the task on; any other write corrupts the
    database for good (a real agent's wrong cancellation or booking).
Observation
    How many of the expert's steps the agent believes done.  A wrong write
    looks like a required step done right (a real agent's booking with the
    wrong fare believes itself done): the agent cannot tell the database is
    corrupted, and its visible progress counts one step more.
Progress
    Required steps done / ``actions``; 1.0 once every one is done (a world
    with nothing to do, no lookup and no write, is done from the start).
Termination
    Complete when every required step is done and no wrong write happened.
    Infeasible from the first wrong write on: stopping after it is premature.
Faults
    Tool latency, failures and timeouts from ``tools``; the agent's wrong
    actions are ``wrong_write_share`` wrong writes, the rest wasted lookups.
Version history
    v0: first version.
    v1: ``actions`` (opt-in, default unset: v0's worlds unchanged).
    v2: ``extra_reads_mean``, ``extra_reads_size``, ``extra_reads``: a per-world latent
        length; ``wrong_write_done_share``: wrong writes that look like the last step (both
        opt-in, default off: v1's worlds unchanged).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from environments.base import SimTask, ToolParams
from opar_sim.core.seeding import derived
from opar_sim.core.task import ToolSpec
from opar_sim.core.types import Action, ActionResult, Observation, PlanStep

WRONG_CHOICES = 20  # wrong actions offered: the share of wrong writes has a 1/20 resolution
LENGTH_STREAM = 0x4C  # the key tag of a world's latent length, derived from its stream ("L")


class ToolChainParams(BaseModel):
    """Parameters of ``tool_chain``: the writes per world, the lookups, the wrong writes."""

    model_config = ConfigDict(extra="forbid")

    write_weights: list[float] = Field(
        default_factory=lambda: [4.0, 3.0, 2.0, 1.0],
        min_length=1,
        description="relative weights of 0, 1, 2, ... required writes per world",
    )
    reads: int = Field(2, ge=0, le=50, description="lookups before anything else")
    reads_max: int | None = Field(
        None,
        ge=0,
        le=50,
        description="if set, each world's lookups are uniform in reads..reads_max",
    )
    reads_per_write: int = Field(2, ge=0, le=50, description="lookups each write needs first")
    actions: int | None = Field(
        None,
        ge=0,
        le=200,
        description="if set, a ground-truth action count the world is stretched to: the first "
        "lookups make up what the writes and their lookups lack of it, and reads..reads_max "
        "come on top (the lookups an agent makes that a ground truth leaves out)",
    )
    extra_reads_mean: float = Field(
        0.0,
        ge=0,
        le=50,
        description="mean of a world's latent extra lookups r (negative binomial; 0: none)",
    )
    extra_reads_size: float = Field(
        1.0,
        gt=0,
        le=1000,
        description="size (dispersion) of r's negative binomial: 1 is a geometric, large a Poisson",
    )
    extra_reads_slope: float = Field(
        0.0,
        ge=-5,
        le=5,
        description="r's mean is extra_reads_mean * exp(extra_reads_slope * writes)",
    )
    extra_reads: int | None = Field(
        None, ge=0, le=100, description="if set, every world's r (the draw is skipped)"
    )
    wrong_write_share: float = Field(
        0.3, ge=0, le=1, description="share of the agent's wrong actions that are wrong writes"
    )
    wrong_write_done_share: float = Field(
        0.0,
        ge=0,
        le=1,
        description="share of the wrong writes that look like the last step (the agent "
        "believes the task done: a real agent's wrong booking that ends its conversation)",
    )
    result_tokens: int = Field(80, ge=1, description="tokens of a lookup's result")
    tools: ToolParams = ToolParams(latency_median=0.5, timeout=5.0, failure_rate=0.01)


class KeyArgs(BaseModel):  # noqa: D101
    model_config = ConfigDict(extra="forbid")
    key: str


class ToolChain(SimTask):
    """Look records up, then make the required writes; a wrong write is fatal (τ-bench-like)."""

    name = "tool_chain"
    Params = ToolChainParams
    TOOLS = (
        ToolSpec("lookup", "Read a record (user, reservation, flights)", KeyArgs),
        ToolSpec("write", "Change the database (book, cancel, update)", KeyArgs),
    )
    params: ToolChainParams

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        if sum(self.params.write_weights) <= 0 or min(self.params.write_weights) < 0:
            raise ValueError("write_weights must be non-negative with a positive sum")
        self.goal = "Serve the customer's request: look up what is needed, then make the changes"
        self.writes = 0
        self._sequence: tuple[Action, ...] = ()
        self.done = 0
        self.seen = 0  # the required steps the agent believes done
        self.broken = False

    @property
    def features(self) -> dict[str, float]:
        """The world's known features: its required writes and the expert's sequence length."""
        return {"write_actions": self.writes, "actions": len(self._sequence)}

    def _reset_world(self) -> None:
        weights = [float(w) for w in self.params.write_weights]
        total = sum(weights)
        self.writes = int(self.rng.choice(len(weights), p=[w / total for w in weights]))
        p = self.params
        reads = p.reads
        if p.reads_max is not None and p.reads_max > p.reads:
            reads = int(self.rng.integers(p.reads, p.reads_max + 1))
        if p.actions is not None:  # opt-in: no draw changes without it
            reads += max(0, p.actions - self.writes * (p.reads_per_write + 1))
        reads += self.extra_reads()
        steps = [Action.of("lookup", key=f"record {i}") for i in range(reads)]
        for w in range(self.writes):
            steps += [Action.of("lookup", key=f"detail {w}.{i}") for i in range(p.reads_per_write)]
            steps.append(Action.of("write", key=f"change {w}"))
        self._sequence = tuple(steps)
        self.done = 0
        self.seen = 0
        self.broken = False

    def extra_reads(self) -> int:
        """The world's latent extra lookups r (0 unless ``extra_reads*`` is set).

        Drawn from a stream derived from the world's (``LENGTH_STREAM``): the world's
        other draws, and every trial's, are those of a world without it.
        """
        p = self.params
        if p.extra_reads is not None:
            return p.extra_reads
        if p.extra_reads_mean <= 0:
            return 0
        size = p.extra_reads_size
        mean = p.extra_reads_mean * math.exp(p.extra_reads_slope * self.writes)
        rng = derived(self.rng, LENGTH_STREAM)
        return int(rng.negative_binomial(size, size / (size + mean)))

    def _looks_done(self, action: Action) -> bool:
        """Whether a wrong write is one of the ``wrong_write_done_share`` that look final."""
        share = self.params.wrong_write_done_share
        if share <= 0:
            return False
        bad = round(self.params.wrong_write_share * WRONG_CHOICES)
        key = str(action.arg("key"))
        if not key.startswith("wrong "):
            return False
        return int(key.split()[1]) < round(share * bad)

    def _apply(self, action: Action) -> ActionResult:
        nxt = self._sequence[self.done] if self.done < len(self._sequence) else None
        if nxt is not None and action == nxt:
            self.done += 1
            self.seen = max(self.seen, self.done)
        elif action.tool == "write":
            self.broken = True
            self.seen = min(len(self._sequence), self.seen + 1)  # it looks like a step done
            if self._looks_done(action):
                self.seen = len(self._sequence)
        if action.tool == "write":
            return ActionResult(True, "done", 0.0, tokens=10)
        tokens = self.params.result_tokens
        return ActionResult(True, f"{action.arg('key')}: ...", 0.0, tokens=tokens)

    def observe(self) -> Observation:
        """The required steps the agent believes done (a wrong write looks right)."""
        n = len(self._sequence)
        text = f"{self.seen} of {n} required steps done"
        return Observation(text, self.seen / n if n else 1.0, tokens=16)

    @property
    def progress(self) -> float:
        """Required steps done / all; a corrupted database caps it below 1."""
        n = len(self._sequence)
        value = self.done / n if n else 1.0
        return min(value, 0.99) if self.broken else value

    @property
    def complete(self) -> bool:
        """Every required step done, no wrong write."""
        return self.done == len(self._sequence) and not self.broken

    @property
    def feasible(self) -> bool:
        """A wrong write can never be undone."""
        return not self.broken

    def expert_action(self) -> Action:
        """The next required step; once all are done, a harmless confirming lookup."""
        if self.done < len(self._sequence):
            return self._sequence[self.done]
        return Action.of("lookup", key="confirmation")

    def wrong_actions(self) -> Sequence[Action]:
        """``WRONG_CHOICES`` calls: ``wrong_write_share`` of them wrong writes, the rest lookups."""
        bad = round(self.params.wrong_write_share * WRONG_CHOICES)
        writes = [Action.of("write", key=f"wrong {i}") for i in range(bad)]
        reads = [Action.of("lookup", key=f"irrelevant {i}") for i in range(WRONG_CHOICES - bad)]
        return tuple(writes + reads)

    def plan_template(self) -> tuple[PlanStep, ...]:
        """Look up, then write, as the world requires."""
        return tuple(PlanStep(a.tool, f"{a.tool} {a.arg('key')}") for a in self._sequence) or (
            PlanStep("lookup", "look up the request"),
        )

    def answer(self) -> str:
        """What was done."""
        return f"{self.done} of {len(self._sequence)} steps done" + (
            " (database corrupted)" if self.broken else ""
        )
