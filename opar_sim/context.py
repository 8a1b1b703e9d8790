"""The context window C_t as a token ledger.

Every element appended to C_t (goal, observation, plan, action, result,
reflection) has a token count; the simulated agent's plan quality degrades as
the total grows past a knee (DESIGN.md §3).
"""

from __future__ import annotations

KINDS = ("system", "goal", "observation", "plan", "action", "result", "reflection", "memory")


class Context:
    """Token counts of the elements of C_t, by kind, in append order."""

    __slots__ = ("by_kind", "elements", "tokens")

    def __init__(self) -> None:
        self.tokens = 0
        self.elements = 0
        self.by_kind: dict[str, int] = dict.fromkeys(KINDS, 0)

    def append(self, kind: str, tokens: int) -> None:
        """C ← C ⊕ element, an element of ``kind`` costing ``tokens``."""
        if tokens < 0:
            raise ValueError("tokens must be >= 0")
        self.tokens += tokens
        self.elements += 1
        self.by_kind[kind] += tokens
