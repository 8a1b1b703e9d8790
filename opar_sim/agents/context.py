"""The context window C_t as a token ledger, with Algorithm 2's memory compression.

Every element appended to C_t (goal, observation, plan, action, result,
reflection) has a token count; the simulated agent's plan quality degrades as
the total grows past a knee (docs/design.md §3).  ``begin_step`` opens the slice of
one loop iteration, so ``compress`` (step 2.5) can fold the older iterations
into a single memory entry that costs fewer tokens.
"""

from __future__ import annotations

KINDS = ("system", "goal", "observation", "plan", "action", "result", "reflection", "memory")


class Context:
    """Token counts of the elements of C_t, by kind, in append order.

    ``by_kind`` counts tokens as appended (a compression does not rewrite it);
    ``tokens`` is what C_t holds now.
    """

    __slots__ = ("by_kind", "elements", "memory", "step_tokens", "tokens")

    def __init__(self) -> None:
        self.tokens = 0
        self.elements = 0
        self.by_kind: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.step_tokens: list[int] = []  # tokens of each iteration still held verbatim
        self.memory = 0  # tokens of the memory entry (the summary of older iterations)

    def append(self, kind: str, tokens: int) -> None:
        """C ← C ⊕ element, an element of ``kind`` costing ``tokens``."""
        if tokens < 0:
            raise ValueError("tokens must be >= 0")
        self.tokens += tokens
        self.elements += 1
        self.by_kind[kind] += tokens
        step_tokens = self.step_tokens  # five appends a step: one attribute read saved each
        if step_tokens:
            step_tokens[-1] += tokens

    def begin_step(self) -> None:
        """Open the slice of a new loop iteration (before its observation)."""
        self.step_tokens.append(0)

    def compress(self, keep_steps: int, memory_tokens: int) -> tuple[int, int, int]:
        """Fold all but the last ``keep_steps`` iterations into one memory entry.

        The entry replaces the previous one and costs ``memory_tokens``.
        Returns (tokens before, tokens after, iterations folded).
        """
        if keep_steps < 0 or memory_tokens < 0:
            raise ValueError("keep_steps and memory_tokens must be >= 0")
        folded = len(self.step_tokens) - keep_steps
        before = self.tokens
        if folded <= 0:
            return before, before, 0
        old = sum(self.step_tokens[:folded])
        del self.step_tokens[:folded]
        self.tokens += memory_tokens - old - self.memory
        self.memory = memory_tokens
        self.by_kind["memory"] += memory_tokens
        self.elements += 1
        return before, self.tokens, folded
