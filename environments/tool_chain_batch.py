"""A vectorised model of ``tool_chain`` (τ-bench-shaped) for the batch engine.

N worlds in arrays; every rule mirrors ``environments.tool_chain`` (the scalar
task stays the reference).  A world is its required sequence's length and shape:
``reads`` first lookups, then per write ``reads_per_write`` lookups and the write.
Actions are a code and an argument: ``STEP`` (the next required step, which moves
the task on), ``CONFIRM`` (the expert's harmless lookup once all is done),
``WRONG_WRITE`` (argument: its number among the wrong writes) and ``WRONG_LOOKUP``.
The world's latent extra lookups (``extra_reads_*``) are drawn per world as the
scalar task draws them; ``features`` gives the world's known features (the
agent's task heterogeneity reads them).  No wrapper is modelled.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from environments.tool_chain import WRONG_CHOICES, ToolChain, ToolChainParams
from opar_sim.core.twin import Action, SimTaskTwin, take_rows, unwrapped
from opar_sim.core.types import Action as Action_

STEP, CONFIRM, WRONG_WRITE, WRONG_LOOKUP = range(4)
WRITE_TOKENS = 10  # a write's result
# the kinds of call a step row names (``action_key``): a required step's three, then the codes
# CONFIRM, WRONG_WRITE, WRONG_LOOKUP in order
RECORD, DETAIL, CHANGE, CONFIRM_KIND = range(4)
KINDS = 6


class ToolChainBatch(SimTaskTwin):
    """N tool_chain worlds advancing together."""

    observation_tokens = 16

    def __init__(self, params: ToolChainParams) -> None:
        """Hold the task's parameters; ``reset`` draws the worlds.

        Args:
            params: The scalar task's validated parameters.
        """
        self.params = params
        self.tools = params.tools
        self.bad = round(params.wrong_write_share * WRONG_CHOICES)  # wrong writes offered
        share = params.wrong_write_done_share
        self.final = round(share * self.bad) if share > 0 else 0  # those that look final
        self.n = 0

    @classmethod
    def from_task(cls, task: Any) -> ToolChainBatch:
        """The twin of a built, unwrapped ``ToolChain``.

        Args:
            task: The built task.

        Returns:
            Its twin.

        Raises:
            TwinUnsupported: If the task is wrapped or is not exactly ``ToolChain``.
        """
        inner = unwrapped(task, "tool_chain", ToolChain)
        return cls(inner.params)

    def reset(self, n: int, rng: np.random.Generator) -> None:
        """Draw ``n`` worlds as ``ToolChain._reset_world`` does.

        Args:
            n: Episodes.
            rng: The batch's generator.
        """
        p = self.params
        self.n = n
        weights = np.array(p.write_weights, float)
        self.writes = rng.choice(len(weights), size=n, p=weights / weights.sum())
        reads = np.full(n, p.reads, np.int64)
        if p.reads_max is not None and p.reads_max > p.reads:
            reads = rng.integers(p.reads, p.reads_max + 1, n)
        if p.actions is not None:
            reads += np.maximum(0, p.actions - self.writes * (p.reads_per_write + 1))
        if p.extra_reads is not None:
            reads += p.extra_reads
        elif p.extra_reads_mean > 0:
            size = p.extra_reads_size
            mean = p.extra_reads_mean * np.exp(p.extra_reads_slope * self.writes)
            reads += rng.negative_binomial(size, size / (size + mean))
        self.reads = reads
        self.length = reads + self.writes * (p.reads_per_write + 1)
        self.plan_steps = np.maximum(self.length, 1)  # the plan template: one step each
        self.done = np.zeros(n, np.int64)
        self.seen = np.zeros(n, np.int64)
        self.broken = np.zeros(n, bool)

    def features(self) -> dict[str, np.ndarray]:
        """Each world's known features: its writes and the expert's sequence length."""
        return {"write_actions": self.writes.astype(float), "actions": self.length.astype(float)}

    def world_changed(self) -> np.ndarray:
        """The task's observation never reports a world change."""
        return np.zeros(self.n, bool)

    def progress(self) -> np.ndarray:
        """Required steps done / all; a corrupted database caps it below 1."""
        value = np.where(self.length > 0, self.done / np.maximum(self.length, 1), 1.0)
        return np.where(self.broken, np.minimum(value, 0.99), value)

    def complete(self) -> np.ndarray:
        """Every required step done, no wrong write."""
        return np.asarray((self.done == self.length) & ~self.broken)

    def feasible(self) -> np.ndarray:
        """A wrong write can never be undone."""
        return ~self.broken

    def visible_progress(self) -> np.ndarray:
        """The required steps the agent believes done (a wrong write looks right)."""
        return np.where(self.length > 0, self.seen / np.maximum(self.length, 1), 1.0)

    def expert(self) -> Action:
        """The next required step; once all are done, a harmless lookup."""
        tool = np.where(self.done < self.length, STEP, CONFIRM).astype(np.int8)
        return tool, np.zeros(self.n, np.int32)

    def wrong(self, pick: np.ndarray, need: np.ndarray) -> Action:
        """One of ``ToolChain.wrong_actions`` (``WRONG_CHOICES`` of them) by ``pick``."""
        index = (pick * WRONG_CHOICES).astype(np.int32)
        tool = np.where(index < self.bad, WRONG_WRITE, WRONG_LOOKUP).astype(np.int8)
        return tool, index

    def action_key(self, action: Action) -> np.ndarray:
        """Each row's call as ``number × KINDS + kind`` (``label`` reads it).

        A required step is named by its place in the row's sequence (``ToolChain``'s
        ``record i``, ``detail w.i``, ``change w``), read before the call moves it on.
        """
        tool, arg = action
        span = self.params.reads_per_write + 1
        after = self.done - self.reads
        w, i = np.divmod(np.maximum(after, 0), span)
        step_kind = np.where(after < 0, RECORD, np.where(i == span - 1, CHANGE, DETAIL))
        number = np.where(after < 0, self.done, np.where(i == span - 1, w, w * span + i))
        kind = np.where(tool == STEP, step_kind, tool - CONFIRM + CONFIRM_KIND)
        number = np.where(tool == STEP, number, np.where(tool == WRONG_LOOKUP, arg - self.bad, arg))
        return np.asarray(number.astype(np.int64) * KINDS + kind)

    def label(self, key: int) -> tuple[str, str]:
        """The label and tool of ``ToolChain``'s call ``key`` names (``action_key``)."""
        number, kind = divmod(key, KINDS)
        w, i = divmod(number, self.params.reads_per_write + 1)
        tool, text = {
            RECORD: ("lookup", f"record {number}"),
            DETAIL: ("lookup", f"detail {w}.{i}"),
            CHANGE: ("write", f"change {number}"),
            CONFIRM_KIND: ("lookup", "confirmation"),
            CONFIRM_KIND + 1: ("write", f"wrong {number}"),
            CONFIRM_KIND + 2: ("lookup", f"irrelevant {number}"),
        }[kind]
        action = Action_.of(tool, key=text)
        return action.label(), action.tool

    def _is_write(self, position: np.ndarray) -> np.ndarray:
        """Whether required step number ``position`` (0-based) of each row is a write."""
        span = self.params.reads_per_write + 1
        after = position - self.reads
        return np.asarray((after >= 0) & (after % span == span - 1))

    def apply(self, mask: np.ndarray, action: Action) -> tuple[np.ndarray, np.ndarray]:
        """Run the delivered calls of the rows of ``mask`` (``ToolChain._apply``).

        Args:
            mask: The rows whose call arrived.
            action: Tool codes and their argument.

        Returns:
            (ok, result tokens) per row (zero outside ``mask``).
        """
        tool, arg = action
        step = mask & (tool == STEP) & (self.done < self.length)
        writes = (step & self._is_write(self.done)) | (mask & (tool == WRONG_WRITE))
        self.done += step
        np.maximum(self.seen, self.done, out=self.seen, where=step)
        wrong = mask & (tool == WRONG_WRITE)
        self.broken |= wrong
        looked = np.minimum(self.length, self.seen + 1)
        looked = np.where(arg < self.final, self.length, looked)
        np.copyto(self.seen, looked, where=wrong)
        tokens = np.where(writes, WRITE_TOKENS, self.params.result_tokens) * mask
        return mask.copy(), tokens.astype(np.int64)

    def take(self, keep: np.ndarray) -> None:
        """Keep only the rows ``keep``, in order."""
        take_rows(self, keep, self.n)
        self.n = len(keep)

    def answer_fields(self) -> dict[str, np.ndarray]:
        """Each row's steps done, its length and whether the database is corrupted."""
        return {
            "done": self.done.copy(),
            "length": self.length.copy(),
            "broken": self.broken.copy(),
        }

    def answers(self, fields: dict[str, np.ndarray]) -> list[str]:
        """``ToolChain.answer`` of each ended row."""
        columns = zip(
            fields["done"].tolist(),
            fields["length"].tolist(),
            fields["broken"].tolist(),
            strict=True,
        )
        return [
            f"{d} of {n} steps done" + (" (database corrupted)" if b else "") for d, n, b in columns
        ]
